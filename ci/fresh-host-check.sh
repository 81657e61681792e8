#!/usr/bin/env bash
# Proves that ci/install-host-deps.sh gives a fresh Debian 12 everything the harness, the
# fixture build, the tests and the CI scripts run, independently of what this machine happens
# to have installed by hand.
#
#   ci/fresh-host-check.sh              the whole check (root; about 5 minutes, network to Debian)
#   ci/fresh-host-check.sh --list-only  only step 1 (no root, a second)
#
# 1. The list (ci/host-programs.txt) is complete: every `Command::new("...")` literal of the
#    Rust code and every tool images/recipe/build.sh checks for is named there.
# 2. A minimal Debian 12 root (mmdebstrap --variant=minbase, as the fixture recipe makes its
#    own) gets ci/install-host-deps.sh run inside it (chroot) with the daemons left unstarted
#    (SNO_HOST_DEPS_NO_DAEMONS=1), then every Debian-provided entry of the list must be there.
#    The Rust toolchain is not a Debian package: the host's (rustup's ~/.cargo and ~/.rustup,
#    and cargo-nextest) is bound read-only into the root, so the script's toolchain check and
#    its `cargo install` steps run as on a fresh host that followed the README, and the
#    cargo-installed programs (coreos-installer) must start there: that also proves the
#    libraries they link are installed. The Redfish emulator's venv (pip, from PyPI) must
#    import its libvirt driver with Debian's python3-libvirt.
# Exits 1 naming everything missing, 0 when nothing is.
set -euo pipefail
cd "$(dirname "$0")/.."
list=${SNO_HOST_PROGRAMS:-ci/host-programs.txt}

# NAME PROVIDER pairs of the list, comments and blank lines dropped.
entries() { sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$list" | awk '{print $1, $2}'; }

check_list_complete() {
    local missing=0 name
    local -A listed=()
    while read -r name _; do listed[$name]=1; done < <(entries)
    # Literal program names the Rust code starts, and the tools build.sh insists on.
    local derived
    derived=$(
        git ls-files -- '*.rs' | xargs grep -ohE 'Command::new\("[^"]+"\)' \
            | sed -E 's/Command::new\("([^"]+)"\)/\1/'
        sed -n '/^for tool in/,/; do$/p' images/recipe/build.sh \
            | sed -e 's/^for tool in//' -e 's/; do$//' -e 's/\\$//' | tr ' ' '\n'
    )
    for name in $(printf '%s\n' "$derived" | sed '/^$/d' | sort -u); do
        if [ -z "${listed[$name]:-}" ] && [ -z "${listed[$(basename "$name")]:-}" ]; then
            echo "not in $list: $name (the code runs it)" >&2
            missing=1
        fi
    done
    return $missing
}

if ! check_list_complete; then
    echo "fresh-host-check: $list is incomplete" >&2
    exit 1
fi
echo "fresh-host-check: $list names every program the code runs ($(entries | wc -l) entries)"
[ "${1:-}" = "--list-only" ] && exit 0

[ "$(id -u)" = 0 ] || { echo "fresh-host-check: must run as root (mmdebstrap, chroot)" >&2; exit 2; }
# shellcheck source=../images/recipe/pins.env
. images/recipe/pins.env
start=$(date +%s)
# The host's /dev/kvm as libvirtd's cached probe saw it: said if the check changed it.
kvm_before=$(stat -c %G:%a /dev/kvm 2>/dev/null || true)
work=$(mktemp -d /var/tmp/sno-fresh-host.XXXXXX)
root=$work/root
mounts=()
cleanup() {
    set +e
    local i
    for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[$i]}"; done
    rm -rf --one-file-system "$work"
}
trap cleanup EXIT
bind() { # bind SRC DEST-IN-ROOT [ro]
    mkdir -p "$root$2"
    mount --bind "$1" "$root$2"
    mounts+=("$root$2")
    [ "${3:-}" = ro ] && mount -o remount,bind,ro "$root$2"
    return 0
}

echo "fresh-host-check: a minimal $MINISNO_SUITE root (mmdebstrap --variant=minbase)"
mmdebstrap --variant=minbase --mode=root --quiet "$MINISNO_SUITE" "$root" "$MINISNO_MIRROR"
# Nothing installed inside may start a daemon of the host (invoke-rc.d asks policy-rc.d).
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 0755 "$root/usr/sbin/policy-rc.d"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# The host's own CAs too (a host that reaches the registries through a TLS-inspecting proxy has
# its CA there): ca-certificates adds them to the root's bundle, which pip is told to trust.
mkdir -p "$root/usr/local/share/ca-certificates"
cp -a /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
bind /proc /proc
# A /dev of the root's own (a tmpfs with the nodes package scripts and pip use), never the
# host's: qemu-system-common's maintainer script runs `chgrp kvm /dev/kvm` with the root's own
# group numbers, and on a bound host /dev that gave the host's /dev/kvm the host's group of
# that number (ssl-cert here). libvirtd then probed QEMU again on every domain definition and
# start, a minute and more each under load: the CI run that followed took 4045 s and its
# Redfish tests timed out on the emulator's defineXML.
mkdir -p "$root/dev"
mount -t tmpfs -o mode=0755,nosuid,size=16m tmpfs "$root/dev"
mounts+=("$root/dev")
for node in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9 tty:5:0; do
    IFS=: read -r name major minor <<<"$node"
    mknod -m 0666 "$root/dev/$name" c "$major" "$minor"
done
mkdir -m 1777 "$root/dev/shm"
ln -s /proc/self/fd "$root/dev/fd"
bind /sys /sys
mkdir -p "$root/src"
cp -a ci "$root/src/ci"
mkdir -p "$root/src/images/recipe"
cp images/recipe/pins.env "$root/src/images/recipe/"
cp Cargo.toml "$root/src/Cargo.toml"
# The host's Rust toolchain, read-only, where rustup puts it.
cargo_home=${CARGO_HOME:-$HOME/.cargo}
rustup_home=${RUSTUP_HOME:-$HOME/.rustup}
bind "$cargo_home" /root/.cargo ro
[ -d "$rustup_home" ] && bind "$rustup_home" /root/.rustup ro
nextest=$(command -v cargo-nextest || true)
if [ -n "$nextest" ] && [ "$nextest" != "$cargo_home/bin/cargo-nextest" ]; then
    touch "$root/usr/local/bin/cargo-nextest"
    mount --bind "$nextest" "$root/usr/local/bin/cargo-nextest"
    mounts+=("$root/usr/local/bin/cargo-nextest")
fi

echo "fresh-host-check: ci/install-host-deps.sh inside it (daemons not started)"
in_root() { chroot "$root" env -i HOME=/root PATH=/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"; }
if ! in_root env SNO_HOST_DEPS_NO_DAEMONS=1 bash /src/ci/install-host-deps.sh >"$work/install.log" 2>&1; then
    tail -40 "$work/install.log" >&2
    echo "fresh-host-check: ci/install-host-deps.sh failed in the fresh root" >&2
    exit 1
fi

missing=()
while read -r name provider; do
    case "$name" in
        /*) in_root test -e "$name" || missing+=("$name ($provider)") ;;
        *) in_root sh -c 'command -v "$1" >/dev/null' probe "$name" || missing+=("$name ($provider)") ;;
    esac
done < <(entries)
# The cargo-installed programs must run: their shared libraries come from Debian packages.
in_root coreos-installer --version >/dev/null 2>&1 || missing+=("a working coreos-installer (its libraries)")
in_root cargo nextest --version >/dev/null 2>&1 || missing+=("a working cargo nextest")
# The Redfish emulator's venv must import its libvirt driver with Debian's bindings.
in_root /opt/sno-harness/sushy-tools/bin/python -c 'import libvirt, sushy_tools.emulator.main' >/dev/null 2>&1 \
    || missing+=("a working sushy-emulator (its venv imports libvirt and sushy_tools)")

kvm_after=$(stat -c %G:%a /dev/kvm 2>/dev/null || true)
[ "$kvm_before" = "$kvm_after" ] || missing+=("the host's /dev/kvm unchanged (was $kvm_before, now $kvm_after)")

took=$(($(date +%s) - start))
if [ ${#missing[@]} -gt 0 ]; then
    printf 'missing after ci/install-host-deps.sh on a fresh %s: %s\n' "$MINISNO_SUITE" "${missing[*]}" >&2
    echo "fresh-host-check: FAILED (${took} s)" >&2
    exit 1
fi
echo "fresh-host-check: every entry of $list is present on a fresh $MINISNO_SUITE after ci/install-host-deps.sh (${took} s)"
