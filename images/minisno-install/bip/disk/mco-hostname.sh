#!/bin/bash
# The installed system's /usr/local/bin/mco-hostname, as the machine-config operator renders it
# into every node's config (templates/common/_base/files/usr-local-bin-mco-hostname.yaml); only
# its `--wait` mode, which node-valid-hostname.service runs before the kubelet: wait until DHCP
# (or reverse DNS) has given the node a name that is not a localhost one, then make that name
# static, so that NetworkManager cannot take it back. systemd ends the wait after 300 s
# (the unit's TimeoutSec), and the kubelet starts all the same.
set -euo pipefail

case "${1:-}" in
    --wait) ;;
    *) echo "Unhandled arg ${1:-}"; exit 1 ;;
esac

echo "waiting for non-localhost hostname to be assigned"
# The machine-config operator's test, unanchored: any name containing "localhost" waits too.
while name="$(< /proc/sys/kernel/hostname)"; [ -z "$name" ] || [[ "$name" =~ (localhost|localhost.localdomain) ]]; do
    sleep 1
done
# A trailing dot (some DHCP servers send one) is not part of a static hostname.
name="${name%.}"
echo "node identified as $name"
echo "saving hostname to prevent NetworkManager from ever unsetting it"
hostnamectl set-hostname --static --transient "$name"
