#!/usr/bin/env bash
# Whether this host has the Rust toolchain the workspace needs: cargo, and a rustc at least as
# new as Cargo.toml's rust-version. Without it, says how to get it and exits 3 (the host is
# not ready). ci/install-host-deps.sh runs this first, so that a host without Rust stops
# before anything is installed, not half-way through a build. Debian 12's rustc is older than
# the workspace needs: the toolchain comes from rustup.
set -euo pipefail

export PATH="$HOME/.cargo/bin:$PATH"
need=$(sed -n 's/^rust-version *= *"\([0-9.]*\)".*/\1/p' "$(dirname "$0")/../Cargo.toml")
have=$(rustc --version 2>/dev/null | awk '{print $2}' || true)
oldest=$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)
if command -v cargo >/dev/null && [ -n "$have" ] && [ "$oldest" = "$need" ]; then
    exit 0
fi
cat >&2 <<MSG
The workspace needs Rust $need or newer (cargo and rustc); this host has ${have:-none}.
Install it with rustup, then run ci/install-host-deps.sh again:
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal -c clippy,rustfmt
    . "\$HOME/.cargo/env"
MSG
exit 3
