#!/usr/bin/env bash
# Proves the image ci/image/build-oci.sh makes runs as built: builds it, unpacks it with umoci
# as a container engine would, and inside its root (chroot in new mount and PID namespaces,
# /proc mounted, the source tree bound read-only at /src, the image's own environment) runs
#   sno-harness doctor --json   every program the harness runs is there: QEMU, qemu-img,
#                               coreos-installer at the pinned version, OVMF; ready, exit 0
#   sno-harness plan MATRIX     the same output as the host's binary, for shipped matrices
# and checks the image's entry point. Not in CI's default set (some 2 to 4 minutes, most of it
# mmdebstrap and the network): `ci/test.sh --all` runs it, or by itself:
#   ci/image/test-oci.sh [--harness PATH]   (root, mmdebstrap, umoci, jq; default
#                                            target/release/sno-harness)
# DEB_CACHE keeps the downloaded packages between runs (see build-oci.sh).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
harness=$repo/target/release/sno-harness
[ "${1:-}" = --harness ] && harness=$(realpath "${2:?--harness needs a path}")
# shellcheck source=../../images/recipe/pins.env
. "$repo/images/recipe/pins.env"
for tool in umoci jq unshare; do
    command -v "$tool" >/dev/null || { echo "test-oci: $tool is not installed" >&2; exit 3; }
done

start=$(date +%s)
work=$(mktemp -d /var/tmp/sno-oci-test.XXXXXX)
trap 'rm -rf --one-file-system "$work"' EXIT
fail() { echo "test-oci: FAILED: $*" >&2; exit 1; }

bash "$repo/ci/image/build-oci.sh" --harness "$harness" --out "$work/image.oci.tar"
built=$(($(date +%s) - start))
mkdir "$work/layout"
tar -xf "$work/image.oci.tar" -C "$work/layout"
umoci unpack --image "$work/layout:sno-harness-ci" "$work/bundle" >/dev/null
rootfs=$work/bundle/rootfs
config=$work/bundle/config.json
[ "$(jq -r '.process.args[0]' "$config")" = /usr/local/bin/sno-harness ] \
    || fail "the entry point is $(jq -c .process.args "$config"), not /usr/local/bin/sno-harness"

# Runs a command in the image's root, with the image's environment, in /src.
in_image() {
    local env
    mapfile -t env < <(jq -r '.process.env[]' "$config")
    unshare --mount --pid --fork --kill-child -- bash -euc '
        root=$1 repo=$2; shift 2
        mkdir -p "$root/src"
        mount --bind "$repo" "$root/src"
        mount -o remount,bind,ro "$root/src"
        mount -t proc proc "$root/proc"
        exec chroot "$root" "$@"' \
        in-image "$rootfs" "$repo" /usr/bin/env -i HOME=/root "${env[@]}" \
        /bin/sh -c 'cd /src && exec "$@"' sh "$@"
}

code=0
in_image sno-harness doctor --json >"$work/doctor.json" 2>"$work/doctor.err" || code=$?
[ "$code" = 0 ] || fail "doctor exited $code in the image: $(cat "$work/doctor.err" "$work/doctor.json")"
level() { jq -r --arg c "$1" '.host[] | select(.check == $c) | .level' "$work/doctor.json"; }
detail() { jq -r --arg c "$1" '.host[] | select(.check == $c) | .detail' "$work/doctor.json"; }
[ "$(jq -r .ready "$work/doctor.json")" = true ] || fail "doctor says not ready: $(cat "$work/doctor.json")"
for check in qemu-system-x86_64 qemu-img coreos-installer 'OVMF (UEFI)'; do
    [ "$(level "$check")" = ok ] || fail "doctor's $check: $(level "$check"): $(detail "$check")"
done
[[ "$(detail qemu-system-x86_64)" == "QEMU emulator version 7.2."* ]] \
    || fail "the image's QEMU is not bookworm's 7.2: $(detail qemu-system-x86_64)"
[ "$(detail coreos-installer)" = "coreos-installer $MINISNO_COREOS_INSTALLER_VERSION" ] \
    || fail "the image's coreos-installer is not the pin: $(detail coreos-installer)"
echo "test-oci: doctor in the image: ready; $(detail qemu-system-x86_64); $(detail coreos-installer)"

for matrix in scenarios/disks.toml scenarios/boot.toml; do
    (cd "$repo" && "$harness" plan "$matrix") >"$work/plan.host" \
        || fail "plan $matrix on the host exited $?"
    in_image sno-harness plan "$matrix" >"$work/plan.image" || fail "plan $matrix in the image exited $?"
    diff -u "$work/plan.host" "$work/plan.image" >&2 || fail "plan $matrix differs in the image"
    echo "test-oci: plan $matrix in the image equals the host's ($(wc -l <"$work/plan.image") lines)"
done
echo "test-oci: passed; image $(du -m "$work/image.oci.tar" | cut -f1) MiB (root $(du -sm "$rootfs" | cut -f1) MiB unpacked), built in ${built} s, $(($(date +%s) - start)) s in all"
