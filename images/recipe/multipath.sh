# Multipath in minisno (sourced by build.sh; bash): device-mapper multipath in the live and
# the installed system, and in the initramfs, as RHCOS has it.
#
# What RHCOS does, and where minisno follows it:
#   - multipath-tools (RHEL's device-mapper-multipath) is in the OS image. Its multipathd.service
#     starts only once /etc/multipath.conf exists (RHEL's unit has ConditionPathExists; Debian's
#     has not, so a drop-in adds it): a live system whose Ignition writes that file, as the
#     assisted installer's discovery Ignition does, has /dev/mapper/mpatha; one without it has
#     the paths alone.
#   - The installed system boots from the multipath device when its kernel arguments say so:
#     `rd.multipath=default root=/dev/disk/by-label/dm-mpath-root rw`, which RHCOS documents
#     for a day-1 install and which `coreos-installer install --append-karg` writes into the boot
#     partition's BLS entry. dracut's 90multipath module then writes the default configuration
#     (`mpathconf --enable`: user_friendly_names yes, find_multipaths yes) and assembles the
#     maps; fedora-coreos-config's 90-coreos-device-mapper.rules links each filesystem on a
#     multipath map as /dev/disk/by-label/dm-mpath-<label>; coreos-boot-mount-generator mounts
#     /boot from dm-mpath-boot; coreos-propagate-multipath-conf copies the configuration into
#     the real root, where multipathd takes the maps over. minisno's init does the same steps
#     (recipe/init, assemble_multipath), with the multipath and kpartx binaries this file puts
#     into the initramfs.
#   - Without those arguments the root is found by its label on whichever path the kernel
#     probed, and the installed system has no multipath.conf: it runs on a single path, as RHCOS
#     does.

# Packages, added to the rootfs's mmdebstrap --include (kpartx makes the partition maps;
# dmsetup comes with lvm2).
MINISNO_MULTIPATH_PACKAGES="multipath-tools,kpartx"

# The modules the initramfs loads for a multipath root: the target, the path selectors of
# multipath-tools' defaults and hwtable, the SCSI device handlers dracut's 90multipath adds.
MINISNO_MULTIPATH_MODULES="dm_multipath dm_service_time dm_round_robin dm_queue_length scsi_dh_alua scsi_dh_emc scsi_dh_rdac"

# multipath_rootfs ROOT: the live and installed system's multipath configuration.
multipath_rootfs() {
    local root=$1 unit
    for unit in multipathd.service multipathd.socket; do
        [ -f "$root/lib/systemd/system/$unit" ] || die "multipath-tools did not install $unit"
        mkdir -p "$root/etc/systemd/system/$unit.d"
        cat > "$root/etc/systemd/system/$unit.d/minisno.conf" <<'EOF'
# As RHEL's device-mapper-multipath: no multipathd until a configuration exists.
[Unit]
ConditionPathExists=/etc/multipath.conf
EOF
    done
    # fedora-coreos-config's 90-coreos-device-mapper.rules, reduced to what it does: a
    # filesystem on a multipath map (or on a partition map of one) gets a label link of its own,
    # dm-mpath-<label>, which the root= and /boot of a multipathed install name.
    mkdir -p "$root/usr/lib/udev/rules.d"
    cat > "$root/usr/lib/udev/rules.d/90-minisno-dm-mpath-labels.rules" <<'EOF'
# As CoreOS's 90-coreos-device-mapper.rules: label and UUID links of filesystems on multipath.
ACTION=="remove", GOTO="minisno_dm_mpath_end"
SUBSYSTEM!="block", GOTO="minisno_dm_mpath_end"
KERNEL!="dm-*", GOTO="minisno_dm_mpath_end"
ENV{DM_SUSPENDED}=="1", GOTO="minisno_dm_mpath_end"
ENV{ID_FS_USAGE}!="filesystem", GOTO="minisno_dm_mpath_end"
ENV{ID_FS_LABEL_ENC}!="?*", GOTO="minisno_dm_mpath_end"
ENV{ID_FS_UUID_ENC}!="?*", GOTO="minisno_dm_mpath_end"
ENV{DM_UUID}=="*mpath*", SYMLINK+="disk/by-label/dm-mpath-$env{ID_FS_LABEL_ENC}", \
  SYMLINK+="disk/by-uuid/dm-mpath-$env{ID_FS_UUID_ENC}"
LABEL="minisno_dm_mpath_end"
EOF
    [ -x "$root/sbin/multipath" ] && [ -x "$root/sbin/kpartx" ] \
        || die "multipath-tools or kpartx did not install /sbin/multipath, /sbin/kpartx"
}

# The udev rules the initramfs's udev runs for a multipath root: the default and storage rules
# (systemd), the device mapper's (dmsetup), multipath's and kpartx's (multipath-tools, kpartx),
# and the dm-mpath label links. 95-dm-notify.rules answers libdevmapper's udev cookies: without
# it, every map multipath makes would wait for udev forever.
MINISNO_MULTIPATH_UDEV_RULES="50-udev-default.rules 55-dm.rules 56-dm-mpath.rules 56-dm-parts.rules 60-block.rules 60-persistent-storage.rules 60-persistent-storage-dm.rules 60-multipath.rules 60-kpartx.rules 68-del-part-nodes.rules 90-minisno-dm-mpath-labels.rules 95-dm-notify.rules"

# multipath_initramfs ROOT IRD: what the initramfs's init needs for a multipath root
# (multipath-init.sh). The dm modules are in the initramfs; the programs (systemd-udevd and the
# rules above, multipath, kpartx, dmsetup, scsi_id, their libraries, multipath's plugins) are
# not: with their libraries they would make every boot's initramfs more than three times larger
# (7.4 MiB instead of 2.2 MiB, zstd), which GRUB reads at every boot, multipath or not. A multipath boot
# copies them out of the root filesystem's image instead, before it assembles the maps; this
# writes the list of files to copy, /lib/minisno/multipath-files, checked against the rootfs.
multipath_initramfs() {
    local root=$1 ird=$2 bin rule f target
    local bins="/sbin/multipath /sbin/kpartx /sbin/dmsetup /bin/udevadm /lib/udev/scsi_id"
    install -D -m 0644 "$here/multipath-init.sh" "$ird/lib/minisno/multipath.sh"
    {
        for bin in $bins /lib/udev/kpartx_id /lib/systemd/systemd-udevd; do
            echo "$bin"
        done
        for rule in $MINISNO_MULTIPATH_UDEV_RULES; do
            echo "/lib/udev/rules.d/$rule"
        done
        for f in "$root"/lib/multipath/*.so; do
            echo "/lib/multipath/${f##*/}"
        done
        for bin in $bins "$root"/lib/multipath/*.so; do
            chroot "$root" ldd "${bin#"$root"}" | awk '$2 == "=>" {print $3} $1 ~ /^\// {print $1}'
        done
    } | sort -u | while read -r f; do
        [ -n "$f" ] || continue
        [ -e "$root$f" ] || die "$f (for a multipath root) is missing from the rootfs"
        echo "$f"
        # A symlink's target too, as the rootfs has it.
        if [ -L "$root$f" ]; then
            target=$(readlink "$root$f")
            case "$target" in
                /*) echo "$target" ;;
                *) echo "$(dirname "$f")/$target" ;;
            esac
        fi
    done | sort -u > "$ird/lib/minisno/multipath-files"
    # Every binary runs from those files alone, as the initramfs will run it.
    local try=$ird.multipath-check rc
    mkdir -p "$try"
    while read -r f; do
        mkdir -p "$try$(dirname "$f")"
        cp -a "$root$f" "$try$f"
    done < "$ird/lib/minisno/multipath-files"
    rc=0
    chroot "$try" /sbin/multipath -h >/dev/null 2>&1 || rc=$?
    [ "$rc" -le 1 ] || die "multipath does not run from its listed files (exit $rc: a library is missing?)"
    chroot "$try" /bin/udevadm --version >/dev/null || die "udevadm does not run from its listed files"
    rc=0
    # dmsetup asks the kernel for its driver version too; without /dev/mapper/control it says
    # so and exits 1, which still proves it loaded.
    chroot "$try" /sbin/dmsetup version >/dev/null 2>&1 || rc=$?
    [ "$rc" -le 1 ] || die "dmsetup does not run from its listed files (exit $rc)"
    case "$(chroot "$try" /sbin/kpartx 2>&1 || true)" in
        *Usage*) ;;
        *) die "kpartx does not run from its listed files" ;;
    esac
    rm -rf "$try"
}
