# The live rootfs for the initramfs's /init (sourced; busybox sh): mounting it from the ISO,
# checking the one a PXE boot brought, and fetching one from coreos.live.rootfs_url= the way
# CoreOS's coreos-livepxe-rootfs does: wait for the server, ask for the file once more and fail
# on an HTTP error, then take the image only if every chunk has the SHA-256 the initramfs
# carries (/etc/coreos-live-want-rootfs, rdcore stream-hash's format).

# rootfs.img is a newc cpio: a 110-byte header, the name, then root.squashfs's data.
ROOTFS_SQUASHFS_OFFSET=124

# mount_rootfs_img IMG: mounts the squashfs at the start of IMG (the live ISO's rootfs.img).
mount_rootfs_img() {
    name=$(dd if="$1" bs=1 skip=110 count=13 2>/dev/null)
    [ "$name" = root.squashfs ] || fatal "$1 does not start with root.squashfs (found \"$name\")"
    mount -t squashfs -o ro,loop,offset=$ROOTFS_SQUASHFS_OFFSET "$1" /run/minisno/lower \
        || fatal "cannot mount the live rootfs in $1"
}

# same_version FILE: the rootfs's version file must name the initramfs's version.
same_version() {
    want=$(cat /etc/coreos-live-initramfs)
    have=$(cat "$1" 2>/dev/null)
    [ "$have" = "$want" ] || fatal "Found initramfs version $want but rootfs version ${have:-none}." \
        "The rootfs does not belong to this initramfs."
}

# up_network: the first Ethernet interface with a DHCP lease (QEMU's user network or libvirt's).
up_network() {
    modprobe -q virtio_net 2>/dev/null
    ip link set lo up
    i=0
    while [ $i -lt 100 ]; do
        for dev in /sys/class/net/*; do
            n=${dev##*/}
            [ "$n" = lo ] && continue
            NET_IF=$n
            ip link set "$n" up
            udhcpc -i "$n" -s /etc/udhcpc.script -q -n -f -t 10 -T 2 > /run/minisno/udhcpc.log 2>&1 \
                || fatal "no DHCP lease on $n:" "$(tail -n 3 /run/minisno/udhcpc.log)"
            return 0
        done
        i=$((i + 1))
        sleep 0.1
    done
    fatal "no network interface appeared (is virtio_net in the initramfs?)"
}

down_network() {
    [ -n "${NET_IF:-}" ] || return 0
    ip route flush dev "$NET_IF" 2>/dev/null
    ip addr flush dev "$NET_IF" 2>/dev/null
    ip link set "$NET_IF" down 2>/dev/null
}

fetch_failed() {
    fatal "Couldn't fetch, verify, and unpack image specified by:" "coreos.live.rootfs_url=$1" "$2" \
        "Check that the URL is correct and that the rootfs version matches the initramfs." \
        "The version of this initramfs is $(cat /etc/coreos-live-initramfs)."
}

# verify_chunks FILE URL: every chunk of FILE against /etc/coreos-live-want-rootfs.
verify_chunks() {
    want=/etc/coreos-live-want-rootfs
    read -r magic algo chunk < "$want"
    [ "$magic $algo" = "stream-hash sha256" ] || fetch_failed "$2" "couldn't parse hash file header"
    size=$(stat -c %s "$1")
    n=0
    tail -n +2 "$want" > /run/minisno/want-chunks
    while read -r expected; do
        offset=$((n * chunk))
        [ "$offset" -lt "$size" ] || fetch_failed "$2" "premature end of input data at offset $offset"
        found=$(dd if="$1" bs="$chunk" skip="$n" count=1 2>/dev/null | sha256sum | cut -d' ' -f1)
        [ "$found" = "$expected" ] || fetch_failed "$2" \
            "hash mismatch at offset $offset; expected $expected, found $found"
        n=$((n + 1))
    done < /run/minisno/want-chunks
    [ "$size" -le $((n * chunk)) ] || fetch_failed "$2" "found extra input data at offset $((n * chunk))"
}

# fetch_rootfs URL: /root.squashfs and /etc/coreos-live-rootfs from the image at URL.
fetch_rootfs() {
    case "$1" in
        http://*) ;;
        *) fatal "Unsupported scheme for image specified by:" "coreos.live.rootfs_url=$1" \
            "Only HTTP is supported by this fixture (CoreOS also takes HTTPS and TFTP)." ;;
    esac
    up_network
    say "fetching the live rootfs from $1"
    # Until the server answers at all (CoreOS retries forever, as Ignition does)...
    while ! wget -q --spider "$1" 2> /run/minisno/wget.log; do
        grep -q "server returned error" /run/minisno/wget.log && break
        say "couldn't reach the server for coreos.live.rootfs_url=$1; retrying in 5s"
        sleep 5
    done
    # ...then once more, where an HTTP error is the answer.
    wget -q --spider "$1" 2> /run/minisno/wget.log \
        || fatal "Couldn't query the server for the rootfs specified by:" "coreos.live.rootfs_url=$1" \
            "$(tail -n 1 /run/minisno/wget.log)"
    wget -q -O /rootfs.img "$1" 2> /run/minisno/wget.log \
        || fetch_failed "$1" "$(tail -n 1 /run/minisno/wget.log)"
    verify_chunks /rootfs.img "$1"
    (cd / && cpio -i -d -u < /rootfs.img 2> /run/minisno/cpio.log) \
        || fetch_failed "$1" "$(tail -n 1 /run/minisno/cpio.log)"
    rm -f /rootfs.img
    down_network
    say "the live rootfs from $1 is verified and unpacked"
}
