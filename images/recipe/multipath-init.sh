# Multipath root for the initramfs's /init (sourced; busybox sh), in disk mode with the kernel
# argument rd.multipath=default: what dracut's 90multipath module and fedora-coreos-config's
# 35coreos-multipath module do on RHCOS's first and every later boot.
#
#   1. multipathd-configure.service (dracut): with rd.multipath=default and no
#      /etc/multipath.conf in the initramfs, `mpathconf --enable` writes the default
#      configuration: user_friendly_names yes (the map is mpatha), find_multipaths yes (a map
#      for a WWID that two paths share).
#   2. udev and multipathd assemble the maps as the paths appear; multipath-tools' udev rules
#      run kpartx for the partitions, the device-mapper rules link them, and CoreOS's
#      90-coreos-device-mapper.rules links each filesystem on a map as
#      /dev/disk/by-label/dm-mpath-<label>. minisno's initramfs has no systemd: it starts
#      systemd-udevd itself with those rules and runs `multipath` whenever udev has settled,
#      until the device the boot waits for is there. Its initramfs does not carry these
#      programs (multipath.sh says why): they are copied first out of the root filesystem's
#      image, read-only, from whichever path the kernel found it on.
#   3. coreos-multipath-wait.target waits for dm-mpath-boot, and the root= argument names
#      dm-mpath-root; a map that never forms (one path left, no WWID on record) times the wait
#      out into the emergency shell, as systemd's device timeout does.
#   4. Before the switch to the real root, udev stops and its database keeps only the device
#      mapper's entries (initrd-udevadm-cleanup-db.service), so that the real root's udev takes
#      the maps over as its own.
#   5. coreos-propagate-multipath-conf: the configuration goes to the real root when Ignition
#      wrote none, so that the installed system's multipathd starts and manages the maps.

# How long the boot waits for the multipath device, as systemd's default device timeout.
MPATH_WAIT_SECONDS=90

# mpathconf_enable: RHEL's `mpathconf --enable` with its defaults, into the initramfs's /etc.
mpathconf_enable() {
    mkdir -p /etc/multipath /run/multipath
    [ -e /etc/multipath.conf ] && return 0
    cat > /etc/multipath.conf <<'EOF'
# device-mapper-multipath configuration file, as `mpathconf --enable` writes it
defaults {
	user_friendly_names yes
	find_multipaths yes
}
EOF
}

# multipath_tools: the programs /lib/minisno/multipath-files lists, from the root filesystem's
# image (the installed system's own) into the initramfs, at the same paths.
multipath_tools() {
    [ -x /sbin/multipath ] && return 0
    part=$(wait_label root) || fatal "multipath: no filesystem labelled root to take multipath's programs from"
    mkdir -p /run/minisno/mp-root /run/minisno/mp-image
    mount -t ext4 -o ro,noload "$part" /run/minisno/mp-root \
        || fatal "multipath: cannot mount $part read-only"
    mount -t squashfs -o ro,loop /run/minisno/mp-root/minisno/rootfs.squashfs /run/minisno/mp-image \
        || fatal "multipath: cannot mount the root filesystem's image on $part"
    missing=""
    while read -r f; do
        mkdir -p "$(dirname "$f")"
        cp -a "/run/minisno/mp-image$f" "$f" 2>/dev/null || missing="$missing $f"
    done < /lib/minisno/multipath-files
    loop=$(awk '$2 == "/run/minisno/mp-image" {print $1}' /proc/mounts)
    umount /run/minisno/mp-image
    [ -n "$loop" ] && losetup -d "$loop" 2>/dev/null
    umount /run/minisno/mp-root
    [ -z "$missing" ] || fatal "multipath: not in the root filesystem's image:$missing"
    say "multipath: took $(wc -l < /lib/minisno/multipath-files) files of multipath-tools and udev from $part"
}

# assemble_multipath WANT...: starts udev, configures multipath and makes maps until every
# device WANT (paths under /dev) exists, for up to 90 s; fails to the emergency shell otherwise.
assemble_multipath() {
    say "multipath: rd.multipath=default: assembling multipath maps, waiting for $*"
    multipath_tools
    mpathconf_enable
    for m in dm_multipath dm_service_time dm_round_robin dm_queue_length \
             scsi_dh_alua scsi_dh_emc scsi_dh_rdac; do
        modprobe -q "$m" 2>/dev/null
    done
    /lib/systemd/systemd-udevd --daemon --resolve-names=never \
        || fatal "multipath: systemd-udevd did not start"
    # Block devices only: their rules are all this udev runs, and under TCG every event of the
    # hundreds of other devices costs a worker's time.
    udevadm trigger --subsystem-match=block --action=add
    udevadm settle --timeout=30
    deadline=$(( $(date +%s) + MPATH_WAIT_SECONDS ))
    while want=$(first_missing "$@"); do
        if [ "$(date +%s)" -ge $deadline ]; then
            # systemd's name of the device unit the boot waited for.
            FAILED_UNIT="$(echo "${want#/}" | sed 's/-/\\x2d/g; s,/,-,g').device"
            FAILED_WHAT="$want"
            fatal "Timed out waiting for device $want." \
                "multipath maps: $(dmsetup ls --target multipath 2>&1 | tr '\n' ' ')" \
                "paths: $(ls /sys/block | tr '\n' ' ')"
        fi
        multipath -v0 >/dev/null 2>&1
        udevadm settle --timeout=10
        first_missing "$@" >/dev/null || break
        sleep 0.5
    done
    for map in $(dmsetup ls --target multipath 2>/dev/null | awk '{print $1}'); do
        say "multipath: map $map, paths: $(ls "/sys/block/$(basename "$(readlink -f "/dev/mapper/$map")")/slaves" | tr '\n' ' ')"
    done
}

# first_missing PATH...: prints the first PATH that does not exist; false when all do.
first_missing() {
    for p in "$@"; do
        [ -e "$p" ] || { echo "$p"; return 0; }
    done
    return 1
}

# stop_initramfs_udev: udev's end in the initramfs (dracut's initrd-udevadm-cleanup-db):
# the device mapper's entries stay in the database for the real root's udev.
stop_initramfs_udev() {
    [ -S /run/udev/control ] || return 0
    udevadm control --exit 2>/dev/null
    udevadm info --cleanup-db 2>/dev/null
}

# propagate_multipath_conf: coreos-propagate-multipath-conf, into /sysroot.
propagate_multipath_conf() {
    [ -f /etc/multipath.conf ] || return 0
    if [ -f /sysroot/etc/multipath.conf ]; then
        say "multipath: the real root has /etc/multipath.conf: not propagating the initramfs's"
        return 0
    fi
    cp /etc/multipath.conf /sysroot/etc/multipath.conf \
        && say "multipath: propagated the initramfs's /etc/multipath.conf to the real root"
}
