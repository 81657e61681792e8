# The installed system's kernel arguments from its BLS entry, for the initramfs's /init
# (sourced; busybox sh).
#
# On RHCOS, GRUB's blscfg builds the kernel command line from the boot partition's BLS entry
# (/boot/loader/entries/*.conf, its `options` line), which is where `coreos-installer install
# --append-karg` and `--delete-karg` write: a day-1 multipath install's
# `rd.multipath=default root=/dev/disk/by-label/dm-mpath-root rw` reach dracut that way.
# Debian's GRUB has no blscfg, and minisno's grub-disk.cfg boots its own command line; so the
# initramfs reads the entry's options itself and takes them as kernel arguments after
# /proc/cmdline's, which therefore does not show them (/run/minisno/cmdline does).

# boot_entry_kargs: the `options` of the boot filesystem's BLS entries, on one line.
boot_entry_kargs() {
    dev=$(wait_label boot) || return 0
    mkdir -p /run/minisno/boot-entry
    # Read-only without the journal: nothing is written to the disk before the root is chosen.
    mount -t ext4 -o ro,noload "$dev" /run/minisno/boot-entry 2>/dev/null || return 0
    for entry in /run/minisno/boot-entry/loader/entries/*.conf; do
        [ -f "$entry" ] && sed -n 's/^options[ \t]\{1,\}//p' "$entry"
    done | tr '\n' ' '
    umount /run/minisno/boot-entry
}
