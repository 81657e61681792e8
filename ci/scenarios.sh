#!/usr/bin/env bash
# Every shipped scenario (smoke and all of scenarios/faults/), each run for real on minisno and
# checked against its [expect] section. About 15 runs, two at a time: 20 to 30 minutes under TCG.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-host-deps.sh
export PATH="$HOME/.cargo/bin:$PATH"
cargo run --release --locked -p sno-harness -- fixture build
cargo nextest run --locked -p sno-e2e --test scenarios --profile ci "$@"
