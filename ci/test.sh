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
# Every test, except the fault scenarios that end by a phase timeout (their mechanism is covered
# by bootkube-hang's twin bootkube-fail, and by unit tests of the state machine): those run in
# ci/scenarios.sh, which runs every shipped scenario.
# Matrix permutations are ignored tests (the whole matrices take too long for CI; run them with
# `sno-harness matrix` or `--run-ignored only`); CI runs a representative subset: the AHCI bus
# with two disks named by path, an IPv6 install-config with a proxy, a trust bundle, FIPS and no
# baseline capabilities (checked in the cluster's reported state), and one installer rejection.
long_faults='bootkube-hang|no-reboot|api-never-ready|node-not-ready|operator-unavailable|etcd-member-not-removed|small-disk|operator-degraded'
ci_permutations='test(=disks::sata.512e.bios.by-path.2-second)
  or test(=install-config::ipv6.OVNKubernetes.proxy.bundle.fips.caps-none)
  or test(=install-config::ipv6-first.OVNKubernetes.no-proxy.no-bundle.no-fips.caps-default)'
cargo nextest run --workspace --locked --profile ci --run-ignored all -E "
  not test(/^fault::($long_faults)\$/)
  and (not (binary(scenarios) and test(/^(disks|install-config)::/)) or $ci_permutations)"
