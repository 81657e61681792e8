#!/usr/bin/env bash
# Runs a command next to a private libvirtd, inside network and mount namespaces this script's
# caller made (`unshare --net --mount --propagation private`): libvirt's NAT networks put a
# bridge, dnsmasq and NAT rules in the namespace of libvirtd, and on the harness's machines
# only a namespace a test created may carry such traffic. The host's own libvirtd, its sockets
# and its state are hidden under tmpfs mounts, so nothing here touches them.
#
#   netns-libvirtd.sh STATE_DIR RESOLVER_IP -- COMMAND...
#
# STATE_DIR receives libvirtd's log and, once COMMAND has ended, what remained:
# `networks-after` (every libvirt network), `links-after` (the namespace's links). While COMMAND
# runs, the first `sno-*` network to appear is probed through the system resolver pointed at
# RESOLVER_IP (the network's dnsmasq): `dns` gets one line per name, `NAME ADDRESS`, from
# getent: the name's IPv4 address, or its IPv6 one when RESOLVER_IP is IPv6 (a single-stack
# IPv6 network answers AAAA only). Exits with COMMAND's status.
set -euo pipefail
state=$1
resolver=$2
shift 2
[ "$1" = "--" ] && shift

[ "$(readlink /proc/self/ns/net)" != "$(readlink /proc/1/ns/net)" ] || {
    echo "netns-libvirtd.sh: refusing to run in the host's network namespace" >&2
    exit 2
}

ip link set lo up
# Only the DNS probe below uses the network's dnsmasq as its resolver (in a mount namespace of
# its own): were it everyone's, dnsmasq would forward what it does not know to itself, and the
# guest's lookups (sudo resolves the host name) would hang in that loop.
echo "nameserver $resolver" >"$state/resolv.conf"

stop_daemons() {
    for pidfile in /run/libvirtd.pid /run/virtlogd.pid; do
        [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
    done
}
trap stop_daemons EXIT

. "$(dirname "$0")/private-libvirtd.sh"
start_private_libvirtd "$state"

"$@" &
cmd=$!

# The DNS probe: the names of the run's cluster, as the network's dnsmasq answers them.
(
    while kill -0 "$cmd" 2>/dev/null; do
        net=$(virsh -c qemu:///system net-list --name 2>/dev/null | grep '^sno-' | head -1 || true)
        if [ -n "$net" ]; then
            domain=$(virsh -c qemu:///system net-dumpxml "$net" | sed -n "s/.*<domain name='\([^']*\)'.*/\1/p")
            family=ahostsv4
            case $resolver in *:*) family=ahostsv6 ;; esac
            unshare --mount --propagation private -- bash -c '
                mount --bind "$1/resolv.conf" /etc/resolv.conf
                for name in "api.$2" "api-int.$2" "console-openshift-console.apps.$2" "anything.apps.$2"; do
                    echo "$name $(getent "$3" "$name" | awk "NR==1 {print \$1}")"
                done' probe "$state" "$domain" "$family" >"$state/dns.tmp"
            mv "$state/dns.tmp" "$state/dns"
            # Done once every name has an address. Until then ask again: the network is listed
            # before its dnsmasq answers, and an IPv6 bridge address is tentative until its
            # duplicate address detection ends (seconds, more on a loaded host), during which
            # nothing can reach dnsmasq there. The last answers stay in `dns` for the test.
            if ! awk 'NF < 2 { missing = 1 } END { exit missing }' "$state/dns"; then
                sleep 0.5
                continue
            fi
            exit 0
        fi
        sleep 0.5
    done
) &
probe=$!

set +e
wait "$cmd"
status=$?
set -e
kill "$probe" 2>/dev/null || true
wait "$probe" 2>/dev/null || true
virsh -c qemu:///system net-list --all --name | sed '/^$/d' >"$state/networks-after" || true
ip -br link >"$state/links-after"
exit "$status"
