#!/usr/bin/env bash
# The whole test suite: host setup, lint, unit tests and the VM tests (TCG), as CI runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-host-deps.sh
export PATH="$HOME/.cargo/bin:$PATH"

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# Build the fixture once up front (cached by input hash), so the VM tests find it ready.
cargo run --release --locked -p sno-harness -- fixture build
cargo nextest run --workspace --locked --profile ci
