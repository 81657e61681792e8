#!/usr/bin/env bash
# The main job: the smoke scenario on the minisno fixture, end to end (building the fixture
# first if it is not cached). The run directory lands in runs/<timestamp>/smoke.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-host-deps.sh
export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release --locked -p sno-harness
target/release/sno-harness fixture build
exec target/release/sno-harness run scenarios/smoke.toml "$@"
