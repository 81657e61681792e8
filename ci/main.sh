#!/usr/bin/env bash
# The main job: build minisno (cached) and run its self-test: boot the live ISO, install to disk
# with coreos-installer, boot the installed system. (Until `sno-harness run` lands, this is the
# fixture self-test.)
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-host-deps.sh
export PATH="$HOME/.cargo/bin:$PATH"
cargo run --release --locked -p sno-harness -- fixture build --json
cargo nextest run --locked -p sno-e2e --profile ci -E 'test(install_to_disk_and_boot_seabios_512)'
