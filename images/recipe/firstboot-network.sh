# First-boot network configuration for the initramfs's /init (sourced; busybox sh): the
# NetworkManager keyfiles a site gives the node, applied as fedora-coreos-config's
# 35coreos-network and 35coreos-ignition dracut modules apply them on RHCOS.
#
# Where the keyfiles come from: the initramfs's /etc/coreos-firstboot-network, unpacked there by
# the kernel from a cpio archive that coreos-installer made:
#   - live ISO: `coreos-installer iso network embed -k FILE` writes it into images/ignition.img
#     (the ISO's second initrd), next to the embedded Ignition config;
#   - PXE: `coreos-installer pxe network wrap -k FILE` makes an initrd of its own;
#   - installed system: `coreos-installer install -n` (0.27) appends it to the initramfs file the
#     boot partition's BLS entry names (/initramfs.img, which grub-disk.cfg loads).
# And, on the installed system only, /boot/coreos-firstboot-network/, where coreos-installer
# before 0.27 put them: coreos-rescue-misplaced-network still takes those (rescue_boot_network).

FIRSTBOOT_NETWORK=coreos-firstboot-network

# rescue_boot_network: like coreos-rescue-misplaced-network, the keyfiles an older
# coreos-installer left in /boot (mounted at /sysroot/boot) join the initramfs's, with a warning
# in the kernel log. The directory itself is removed once the first boot is done, as
# coreos-boot-edit does.
rescue_boot_network() {
    legacy="/sysroot/boot/$FIRSTBOOT_NETWORK"
    [ -n "$(ls -A "$legacy" 2>/dev/null)" ] || return 0
    say "warning: network configuration found in /boot/$FIRSTBOOT_NETWORK, where coreos-installer before 0.27 puts it; taking it as if it came in the initramfs"
    mkdir -p "/etc/$FIRSTBOOT_NETWORK"
    cp "$legacy"/* "/etc/$FIRSTBOOT_NETWORK/" 2>/dev/null \
        || say "warning: could not copy every file of /boot/$FIRSTBOOT_NETWORK"
}

# apply_firstboot_network: on a first boot, after Ignition, the keyfiles in
# /etc/coreos-firstboot-network become the real root's NetworkManager connection profiles, one
# kernel-log line per file. On RHCOS, coreos-copy-firstboot-network.service copies them into
# the initramfs's NetworkManager (which brings the network up with them), and
# coreos-teardown-initramfs's propagate_initramfs_networking then copies that configuration into
# /sysroot/etc/NetworkManager/system-connections, unless the real root already has connection
# profiles (Ignition wrote some: the config wins) or the karg coreos.no_persist_ip says not to;
# coreos.force_persist_ip copies them all the same. minisno's initramfs runs no NetworkManager,
# so the copy goes straight to the real root, under the same policy.
#
# Only regular files named *.nmconnection are taken: the keyfiles NetworkManager is meant to
# read (coreos-installer names each after the file it was given). Each lands root-owned, mode
# 0600, in a directory of mode 0700: NetworkManager ignores a keyfile that another user can read
# or write.
apply_firstboot_network() {
    src="/etc/$FIRSTBOOT_NETWORK"
    dest=/sysroot/etc/NetworkManager/system-connections
    [ -n "$(ls -A "$src" 2>/dev/null)" ] || return 0
    if [ "$no_persist_ip" = 1 ]; then
        say "firstboot network: coreos.no_persist_ip given; not copying $src to the real root"
        return 0
    fi
    if [ -n "$(ls -A "$dest" 2>/dev/null)" ] && [ "$force_persist_ip" != 1 ]; then
        say "firstboot network: the real root has connection profiles already (from Ignition); not copying $src"
        return 0
    fi
    mkdir -p "$dest"
    chown 0:0 "$dest"
    chmod 0700 "$dest"
    for f in "$src"/*; do
        name=${f##*/}
        case "$name" in
            *.nmconnection) ;;
            *) say "firstboot network: ignoring $f: not a *.nmconnection keyfile"; continue ;;
        esac
        if [ -L "$f" ] || [ ! -f "$f" ]; then
            say "firstboot network: ignoring $f: not a regular file"
            continue
        fi
        if cp "$f" "$dest/$name" && chown 0:0 "$dest/$name" && chmod 0600 "$dest/$name"; then
            say "firstboot network: copied $f to /etc/NetworkManager/system-connections/$name"
        else
            say "firstboot network: could not copy $f to /etc/NetworkManager/system-connections/$name"
        fi
    done
}
