#!/usr/bin/env bash
# One libvirt "host" of the multi-host matrix test: a private libvirtd and virtlogd, and an
# sshd in front of them, run as the first process of new mount and pid namespaces (`unshare
# --mount --propagation private --pid --fork --mount-proc`) inside a network namespace the test
# made. Killing this script's process kills every process of the host at once, its QEMUs
# included: a host that goes away.
#
#   netns-libvirt-host.sh STATE_DIR PORT
#
# STATE_DIR holds sshd_config (written by the test, listening on 127.0.0.1:PORT) and receives
# libvirtd.log, sshd.log and, once sshd accepts connections, `ready`.
set -euo pipefail
state=$1
port=$2

[ "$$" = 1 ] || {
    echo "netns-libvirt-host.sh: run me as the first process of a pid namespace" >&2
    exit 2
}
[ "$(ip -o link show | grep -vc ': lo:')" = 0 ] || {
    echo "netns-libvirt-host.sh: refusing to run in a network namespace with links besides lo" >&2
    exit 2
}

. "$(dirname "$0")/private-libvirtd.sh"
start_private_libvirtd "$state"
mkdir -p /run/sshd

/usr/sbin/sshd -D -e -f "$state/sshd_config" 2>>"$state/sshd.log" &
for _ in $(seq 100); do
    (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
done
touch "$state/ready"
# As pid 1, bash reaps what the daemons leave behind; the test ends the host with SIGKILL.
wait
