#!/usr/bin/env bash
# Every shipped scenario (smoke and all of scenarios/faults/), each run for real on minisno and
# checked against its [expect] section. About 15 runs, two at a time: 20 to 30 minutes under TCG.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-host-deps.sh
export PATH="$HOME/.cargo/bin:$PATH"
# In the dev profile, which the tests build anyway: a release build of the harness would
# add some 3.5 minutes of compiling for a command that mostly waits on the image build.
cargo run --locked -p sno-harness -- fixture build
cargo nextest run --locked -p sno-e2e --test scenarios --profile ci "$@"
