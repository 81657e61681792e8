#!/usr/bin/env bash
# Measures minisno on an idle host (run nothing else meanwhile): fixture build from scratch and
# cached, ISO size, and the timed steps of the VM tests, one VM at a time.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release --locked -p sno-harness -q
cargo nextest run --locked -p sno-e2e --no-run 2>/dev/null
cache=$(mktemp -d /var/tmp/sno-measure.XXXXXX)
trap 'rm -rf "$cache"' EXIT

t0=$(date +%s.%N)
target/release/sno-harness fixture build --out "$cache" --json > "$cache/out.json" 2>/dev/null
t1=$(date +%s.%N)
target/release/sno-harness fixture build --out "$cache" --json > /dev/null 2>&1
t2=$(date +%s.%N)
iso=$(sed -n 's/.*"live_iso": "\(.*\)".*/\1/p' "$cache/out.json")
printf 'MEASURE fixture build from scratch (binaries already compiled): %.1f s\n' "$(echo "$t1 - $t0" | bc)"
printf 'MEASURE fixture build, cached: %.2f s\n' "$(echo "$t2 - $t1" | bc)"
printf 'MEASURE live ISO size: %d MiB\n' "$(( $(stat -c %s "$iso") / 1024 / 1024 ))"

export XDG_CACHE_HOME=$cache
for t in install_to_disk_and_boot_seabios_512 install_to_disk_and_boot_ovmf_512 install_to_disk_and_boot_ovmf_4k \
         bootstrap_in_place_converges_on_seabios_virtio; do
    echo "== $t"
    cargo nextest run --locked -p sno-e2e --test-threads 1 --no-capture -E "test($t)" 2>&1 |
        grep -E 'MEASURE|\[ *[0-9.]+ s\]|PASS|FAIL' || true
done
