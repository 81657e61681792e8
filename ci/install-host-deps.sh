#!/usr/bin/env bash
# Installs what sno-harness and its tests need on a Debian 12 host, as root. Idempotent.
# ci/host-programs.txt lists every program this provides and who needs it;
# ci/fresh-host-check.sh proves the list complete on a fresh Debian 12 root.
#
# SNO_HOST_DEPS_NO_DAEMONS=1 leaves virtlogd and libvirtd unstarted (the fresh-host check runs
# this in a chroot, where the host's daemons must not be touched).
#
# It stops with exit 3 (the host is not ready), before installing anything, on a host that is
# not Debian 12 (read from /etc/os-release, or OS_RELEASE_FILE), when not run as root, or
# without a new enough Rust toolchain. `--check-only` makes those checks and exits 0.
set -euo pipefail
ci=$(dirname "$0")

# One field of os-release, read as text (never sourced: it is only a file).
os_field() {
    sed -n "s/^$1=//p" "$os_release" | tail -1 | sed -e 's/^"\(.*\)"$/\1/' -e "s/^'\(.*\)'\$/\1/"
}
# os-release(5): /etc/os-release, else /usr/lib/os-release; OS_RELEASE_FILE stands in for both.
os_release=${OS_RELEASE_FILE:-/etc/os-release}
[ -n "${OS_RELEASE_FILE:-}" ] || [ -r "$os_release" ] || os_release=/usr/lib/os-release
os_id=$( { [ -r "$os_release" ] && os_field ID; } || true)
os_version=$( { [ -r "$os_release" ] && os_field VERSION_ID; } || true)
if [ "$os_id" != debian ] || [ "$os_version" != 12 ]; then
    os_name=$( { [ -r "$os_release" ] && os_field PRETTY_NAME; } || true)
    cat >&2 <<MSG
ci/install-host-deps.sh installs Debian 12 (bookworm) packages; this host is ${os_name:-${os_id:-unknown} ${os_version}}.
Nothing was installed. Either:
  - run the harness from the CI image, which has everything it needs (docs/ci.md, "The CI
    image"): podman build -f ci/image/Containerfile -t sno-harness-ci .
  - or install with your distribution's packages what ci/image/packages.txt (the runtime) and
    ci/host-programs.txt (every program the harness, the fixture build and the tests run) list.
MSG
    exit 3
fi
if [ "$(id -u)" != 0 ]; then
    echo "ci/install-host-deps.sh installs packages and starts libvirtd: run it as root (sudo bash $0). Nothing was installed." >&2
    exit 3
fi

# No Rust toolchain, or too old a one: say how to get it before installing anything (exit 3).
bash "$ci/check-rust.sh"
if [ "${1:-}" = --check-only ]; then
    echo "host checks passed: Debian 12, root, Rust (--check-only: nothing installed)"
    exit 0
fi

pins=$ci/../images/recipe/pins.env
# shellcheck source=../images/recipe/pins.env
. "$pins"

export DEBIAN_FRONTEND=noninteractive
packages=(
    # VMs: QEMU 7.2 from bookworm (qemu-utils from the same release: a newer qemu-utils from
    # backports breaks qemu-system-common 7.2), OVMF for UEFI.
    qemu-system-x86 qemu-utils/bookworm ovmf
    # The libvirt backend (9.0): daemon, QEMU driver, clients (virsh for the tests), headers for
    # the virt crate. The domain XML tests run virt-xml-validate, a script around xmllint
    # (libxml2-utils, only a recommendation of libvirt-daemon).
    libvirt-daemon-system libvirt-daemon-driver-qemu libvirt-clients libvirt-dev
    libxml2-utils
    # vm.network = "nat" (and the libvirt_nat tests): libvirt runs the network's DHCP and DNS
    # with dnsmasq, sets its bridge up with ip, and its NAT rules with iptables. dnsmasq-base
    # and iproute2 are only recommendations of libvirt-daemon-system, so
    # --no-install-recommends leaves them out.
    dnsmasq-base iproute2 iptables
    # minisno image build: Debian rootfs, squashfs, partitions, filesystems, GRUB, ISO.
    mmdebstrap squashfs-tools cpio zstd xz-utils kmod fdisk gdisk dosfstools mtools e2fsprogs
    udev xorriso grub-common grub2-common grub-pc-bin grub-efi-amd64-bin
    # Building the workspace (C code in ssh2's libssh2 and in ring) and coreos-installer;
    # cargo fetches crates over HTTPS (ca-certificates). git: minisno-install's build script
    # records the commit it was built from.
    gcc libc6-dev pkg-config libssl-dev libzstd-dev liblzma-dev ca-certificates git
    # libvirt's qemu+ssh transport and the remote-libvirt tests.
    openssh-client
    # pgrep, below (are the daemons running?).
    procps
    # minisno-install's tests run the fixture's BiP shell scripts (bootkube.sh, the
    # post-reboot script) on the host, and those parse JSON with jq as the real ones do.
    jq
    # report.html is checked in headless Chromium (harness/tests/report_html.rs).
    chromium
    # The Redfish emulator's venv (below): Debian's python3 with venv, and the libvirt
    # bindings its libvirt driver imports (the venv sees them: --system-site-packages).
    python3 python3-venv python3-libvirt
    # The CI image's offline build packs its root with umoci (ci/image/build-oci.sh, run by
    # ci/image/test-oci.sh in `ci/test.sh --all`).
    umoci
)
apt-get update -qq
apt-get install -y -qq --no-install-recommends --allow-downgrades "${packages[@]}" >/dev/null
# sshd for the libvirt backend's SSH tunnel tests, which start a private one on 127.0.0.1
# (harness/src/vm/libvirt/tunnel/tests.rs). On a host that had no SSH server, installing one
# must not start (or, with systemd, enable) a system sshd: policy-rc.d holds the start back.
if [ ! -x /usr/sbin/sshd ]; then
    held=0
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
        chmod 0755 /usr/sbin/policy-rc.d
        held=1
    fi
    apt-get install -y -qq --no-install-recommends openssh-server >/dev/null
    [ "$held" = 1 ] && rm -f /usr/sbin/policy-rc.d
    if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
        systemctl disable --quiet ssh.service ssh.socket 2>/dev/null || true
    fi
fi
# kubectl for the API server's compatibility tests: Debian's, unless one is installed already.
if ! command -v kubectl >/dev/null; then
    apt-get install -y -qq --no-install-recommends kubernetes-client >/dev/null
fi

# The Redfish emulator (sushy-tools, its libvirt driver) for harness/tests/redfish_emulator.rs,
# in a venv of Debian's python3 (never a python3 of PATH: pyenv's would not see
# python3-libvirt), every package pinned by ci/sushy-tools-requirements.txt. Left alone when the
# venv already holds the pinned sushy-tools and imports the libvirt bindings.
sushy_venv=${SNO_SUSHY_VENV:-/opt/sno-harness/sushy-tools}
sushy_version=$(sed -n 's/^sushy-tools==//p' "$ci/sushy-tools-requirements.txt")
sushy_have=$("$sushy_venv/bin/python" -c 'import libvirt; from importlib.metadata import version; print(version("sushy-tools"))' 2>/dev/null || true)
if [ "$sushy_have" != "$sushy_version" ]; then
    echo "installing sushy-tools $sushy_version into $sushy_venv (was: ${sushy_have:-none})"
    # Only a venv is replaced: SNO_SUSHY_VENV naming any other directory stops the script.
    if [ -e "$sushy_venv" ] && [ ! -f "$sushy_venv/pyvenv.cfg" ]; then
        echo "$sushy_venv is not a Python venv (no pyvenv.cfg): not replacing it; set SNO_SUSHY_VENV to a new path" >&2
        exit 1
    fi
    rm -rf "$sushy_venv"
    /usr/bin/python3 -m venv --system-site-packages "$sushy_venv"
    # pip of a venv trusts its own CA bundle; this one trusts the system's, as apt and cargo
    # do (a host behind a TLS-inspecting proxy has that proxy's CA there), unless PIP_CERT says.
    PIP_CERT=${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt} "$sushy_venv/bin/pip" install \
        --quiet --disable-pip-version-check --no-input -r "$ci/sushy-tools-requirements.txt"
    "$sushy_venv/bin/python" -c 'import libvirt, sushy_tools.emulator.main'
fi

export PATH="$HOME/.cargo/bin:$PATH"
want=$MINISNO_COREOS_INSTALLER_VERSION
have=$(coreos-installer --version 2>/dev/null | awk '{print $2}' || true)
if [ "$have" != "$want" ]; then
    echo "installing coreos-installer $want (was: ${have:-none})"
    cargo install coreos-installer --version "$want" --locked --quiet
fi
if ! cargo nextest --version >/dev/null 2>&1; then
    cargo install cargo-nextest --locked --quiet
fi
# libvirtd for the libvirt backend's tests, started by hand (no systemd here). /dev/kvm first
# goes to group kvm, mode 0660: until then libvirt re-probes QEMU on every domain start and each
# start takes 60 s (docs/host-facts.md).
if [ "${SNO_HOST_DEPS_NO_DAEMONS:-}" = 1 ]; then
    echo "host packages ready (daemons not started: SNO_HOST_DEPS_NO_DAEMONS=1)"
    exit 0
fi
if [ -e /dev/kvm ]; then
    chgrp kvm /dev/kvm && chmod 0660 /dev/kvm
fi
pgrep -x virtlogd >/dev/null || virtlogd -d
pgrep -x libvirtd >/dev/null || libvirtd -d
for _ in $(seq 1 60); do
    virsh -c qemu:///system version >/dev/null 2>&1 && break
    sleep 0.5
done
virsh -c qemu:///system version >/dev/null

echo "host ready: $(qemu-system-x86_64 --version | head -1); coreos-installer $(coreos-installer --version | awk '{print $2}'); $(libvirtd --version)"
