#!/usr/bin/env bash
# Makes the CI image offline from a locally built harness, as an OCI archive: the runtime of
# ci/image/Containerfile without a container engine. mmdebstrap makes a Debian 12 root with
# ci/image/packages.txt (the list the Containerfile installs), the binaries are copied in, and
# umoci packs it as a one-layer OCI image whose entry point is sno-harness.
#
#   ci/image/build-oci.sh [--harness PATH] [--coreos-installer PATH] [--out FILE] [--root DIR]
#
#   --harness           the sno-harness binary (default target/release/sno-harness). It must be
#                       built on Debian 12 (its glibc and libvirt): the script refuses a binary
#                       whose libraries the root lacks.
#   --coreos-installer  default: the one on PATH (or ~/.cargo/bin); it must be the version
#                       images/recipe/pins.env pins.
#   --out               the archive (default target/sno-harness-ci.oci.tar), its image tagged
#                       sno-harness-ci: `skopeo copy oci-archive:FILE:sno-harness-ci
#                       containers-storage:localhost/sno-harness-ci` gives it to podman.
#   --root              also keep the unpacked root there (the tests chroot into it).
#
# Needs root (mmdebstrap --mode=root, chroot), mmdebstrap, umoci and network to the mirror
# (MIRROR, default images/recipe/pins.env's; a snapshot.debian.org URL pins every package;
# DEB_CACHE, a directory to keep the downloaded packages in between builds).
# SOURCE_DATE_EPOCH (default: the last commit's time) sets every timestamp of the root and the
# image, so the same packages and binaries give the same image digest.
# Exits 2 on bad arguments, 3 when a tool is missing or not root, 1 when the build fails.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../images/recipe/pins.env
. "$repo/images/recipe/pins.env"

harness=$repo/target/release/sno-harness
installer=
out=$repo/target/sno-harness-ci.oci.tar
keep_root=
usage() { sed -n '6,17p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --harness) harness=${2:?--harness needs a path}; shift 2 ;;
        --coreos-installer) installer=${2:?--coreos-installer needs a path}; shift 2 ;;
        --out) out=${2:?--out needs a file}; shift 2 ;;
        --root) keep_root=${2:?--root needs a directory}; shift 2 ;;
        *) echo "build-oci: unknown argument $1" >&2; usage ;;
    esac
done

[ "$(id -u)" = 0 ] || { echo "build-oci: must run as root (mmdebstrap --mode=root, chroot)" >&2; exit 3; }
for tool in mmdebstrap umoci; do
    command -v "$tool" >/dev/null || { echo "build-oci: $tool is not installed (apt-get install $tool)" >&2; exit 3; }
done
[ -x "$harness" ] || { echo "build-oci: --harness $harness: no such executable (cargo build --release -p sno-harness)" >&2; exit 2; }
harness=$(realpath "$harness")
if [ -z "$installer" ]; then
    installer=$(PATH="$PATH:$HOME/.cargo/bin" command -v coreos-installer || true)
    [ -n "$installer" ] || { echo "build-oci: coreos-installer is not on PATH (cargo install coreos-installer --version $MINISNO_COREOS_INSTALLER_VERSION --locked), or give --coreos-installer" >&2; exit 3; }
fi
installer=$(realpath "$installer")
# The paths go into mmdebstrap's hooks inside single quotes.
case "$harness$installer" in *\'*) echo "build-oci: a path with a ' in it: $harness $installer" >&2; exit 2 ;; esac
have=$("$installer" --version 2>/dev/null | head -1 | awk '{print $2}' || true)
if [ "$have" != "$MINISNO_COREOS_INSTALLER_VERSION" ]; then
    echo "build-oci: $installer is coreos-installer ${have:-unknown}, the pin is $MINISNO_COREOS_INSTALLER_VERSION" >&2
    exit 2
fi
[ -z "$keep_root" ] || [ ! -e "$keep_root" ] || { echo "build-oci: --root $keep_root exists" >&2; exit 2; }

export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$repo" log -1 --format=%ct)}
created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
mirror=${MIRROR:-$MINISNO_MIRROR}
packages=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$repo/ci/image/packages.txt" | paste -sd, -)

start=$(date +%s)
work=$(mktemp -d /var/tmp/sno-oci.XXXXXX)
cleanup() { rm -rf --one-file-system "$work"; }
trap cleanup EXIT
root=$work/root

echo "build-oci: a $MINISNO_SUITE root with ci/image/packages.txt (SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH)"
# debian:12-slim's shape: no documentation, no apt lists, no logs.
# DEB_CACHE: a directory that keeps the downloaded packages between builds (the second build
# downloads nothing new; the packages are still checked against the mirror's signed indices).
cache_hooks=()
if [ -n "${DEB_CACHE:-}" ]; then
    mkdir -p "$DEB_CACHE"
    cache_hooks=(--skip=download/empty
        --setup-hook='mkdir -p "$1"/var/cache/apt/archives'
        --setup-hook="sync-in '$DEB_CACHE' /var/cache/apt/archives"
        --customize-hook="sync-out /var/cache/apt/archives '$DEB_CACHE'"
        --customize-hook='rm -f "$1"/var/cache/apt/archives/*.deb')
fi
mmdebstrap --variant=minbase --mode=root --quiet --include="$packages" "${cache_hooks[@]}" \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --aptopt='APT::Install-Recommends "false"' \
    --customize-hook="install -m 0755 '$harness' \"\$1/usr/local/bin/sno-harness\"" \
    --customize-hook="install -m 0755 '$installer' \"\$1/usr/local/bin/coreos-installer\"" \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/var/log/apt "$1"/var/log/dpkg.log "$1"/var/log/alternatives.log "$1"/var/cache/ldconfig/aux-cache' \
    "$MINISNO_SUITE" "$root" "$mirror"

# Every library of the two binaries must be in the root: a binary built elsewhere (a newer
# glibc, no libvirt) is refused here, not when a CI job starts it.
for bin in sno-harness coreos-installer; do
    if chroot "$root" ldd "/usr/local/bin/$bin" | grep -q 'not found'; then
        chroot "$root" ldd "/usr/local/bin/$bin" | grep 'not found' >&2
        echo "build-oci: /usr/local/bin/$bin needs libraries Debian 12 with ci/image/packages.txt lacks; build it on Debian 12 (or use ci/image/Containerfile)" >&2
        exit 1
    fi
done

# Maintainer scripts and the copies above stamp files with the build's time: clamp them all.
find "$root" -newermt "@$SOURCE_DATE_EPOCH" -print0 | xargs -0r touch -h -d "@$SOURCE_DATE_EPOCH"

echo "build-oci: packing it with umoci"
layout=$work/oci
umoci init --layout "$layout"
umoci new --image "$layout:sno-harness-ci"
umoci insert --image "$layout:sno-harness-ci" --history.created "$created" \
    --history.created_by "ci/image/build-oci.sh: $MINISNO_SUITE, ci/image/packages.txt, sno-harness" \
    "$root" /
umoci config --image "$layout:sno-harness-ci" --no-history --created "$created" \
    --config.entrypoint /usr/local/bin/sno-harness --config.cmd --help \
    --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --config.env SNO_HARNESS_PRIVATE_DIR=/var/tmp/sno-harness \
    --config.label org.opencontainers.image.title=sno-harness-ci \
    --config.label "org.opencontainers.image.revision=$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)"
umoci gc --layout "$layout"
mkdir -p "$(dirname "$out")"
tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
    -C "$layout" -cf "$out.partial" .
mv "$out.partial" "$out"
[ -z "$keep_root" ] || mv "$root" "$keep_root"
digest=$(sed -n 's/.*"digest":"\(sha256:[0-9a-f]*\)".*/\1/p' "$layout/index.json" | head -1)
echo "build-oci: $out ($(du -m "$out" | cut -f1) MiB, manifest $digest) in $(($(date +%s) - start)) s"
