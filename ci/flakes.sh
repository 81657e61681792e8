#!/usr/bin/env bash
# Flake count (issue 7): the smoke scenario N times in a row (default 20), then a --jobs 2 matrix
# of six disk permutations; prints the counts and exits 1 if any run did not end as expected.
# Not part of CI (about 45 minutes under TCG).
#   ci/flakes.sh [N] [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20}
out=${2:-runs/flakes-$(date -u +%Y%m%d-%H%M%S)}
export PATH="$HOME/.cargo/bin:$PATH" SNO_HARNESS_PROGRESS=plain
cargo build --release --locked -p sno-harness
bin=target/release/sno-harness
"$bin" fixture build >/dev/null
mkdir -p "$out"
pass=0
for i in $(seq 1 "$n"); do
    if "$bin" run scenarios/smoke.toml --out "$out/smoke-$i" >"$out/smoke-$i.log" 2>&1; then
        pass=$((pass + 1))
        echo "smoke $i/$n: pass ($(grep -o 'pass in [0-9]* s' "$out/smoke-$i.log" | head -1))"
    else
        echo "smoke $i/$n: FAILED, see $out/smoke-$i.log"
    fi
done
# Six permutations: every bus, both firmwares, all three namings and layouts, and a multipath
# disk appear.
filter='virtio.512.bios.by-id.1.one-path,virtio.4k.uefi.by-path.3-last.one-path,scsi.4k.uefi.by-id.2-second.multipath,nvme.512.bios.by-path.2-second.one-path,nvme.4k.uefi.by-name.1.one-path,sata.512e.bios.by-path.2-second.one-path'
matrix_ok=0
set +e
"$bin" matrix scenarios/disks.toml --jobs 2 --out "$out/matrix" --filter "$filter" >"$out/matrix.log" 2>&1
matrix_status=$?
set -e
tail -1 "$out/matrix.log"
[ "$matrix_status" -eq 0 ] && matrix_ok=1
echo "flakes: smoke $pass/$n passed; matrix of 6 with --jobs 2: $([ $matrix_ok = 1 ] && echo 'all as expected' || echo 'NOT all as expected')"
[ "$pass" -eq "$n" ] && [ "$matrix_ok" = 1 ]
