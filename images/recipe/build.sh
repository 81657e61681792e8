#!/usr/bin/env bash
# Builds the minisno appliance: a Debian rootfs (squashfs), a busybox initramfs, the live ISO
# (BIOS+UEFI, with the Ignition and kernel-argument embed areas of a CoreOS live ISO) and two
# metal images (512-byte and 4096-byte logical sectors) for `coreos-installer install`. On UEFI
# both boot Debian's signed shim, GRUB and kernel, so that they boot under Secure Boot
# (secureboot.sh); a third ISO boots grub-mkrescue's unsigned GRUB (the fault unsigned-loader).
#
# Usage: build.sh OUT_DIR
# Environment: MINISNO_IGNITION_BIN  the minisno-ignition binary to put into the image
#              MINISNO_APISERVER_BIN the minisno-apiserver binary (the installed system's API)
#              COREOS_INSTALLER_BIN  coreos-installer binary (version must match pins.env)
# Called by `sno-harness fixture build`, which owns caching. Needs root (mmdebstrap, chroot,
# a loop device for grub's BIOS boot code). The host kernel is never asked to parse a
# partition table or to mount vfat or iso9660: those are written with userspace tools.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=pins.env
. "$here/pins.env"
# shellcheck source=secureboot.sh
. "$here/secureboot.sh"
# shellcheck source=multipath.sh
. "$here/multipath.sh"

out=${1:?usage: build.sh OUT_DIR}
: "${MINISNO_IGNITION_BIN:?set MINISNO_IGNITION_BIN}"
: "${MINISNO_APISERVER_BIN:?set MINISNO_APISERVER_BIN}"
: "${COREOS_INSTALLER_BIN:?set COREOS_INSTALLER_BIN}"

step() { printf '[minisno %(%H:%M:%S)T] %s\n' -1 "$*"; }
die() { echo "minisno build: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (mmdebstrap --mode=root, chroot, losetup)"
for tool in mmdebstrap mksquashfs grub-mkrescue grub-install xorriso apt-get dpkg-deb \
            mkfs.vfat mmd mcopy mke2fs sfdisk losetup partx zstd cpio depmod modprobe; do
    command -v "$tool" >/dev/null || die "missing host tool: $tool (see ci/install-host-deps.sh)"
done
have_ci=$("$COREOS_INSTALLER_BIN" --version | awk '{print $2}')
[ "$have_ci" = "$MINISNO_COREOS_INSTALLER_VERSION" ] \
    || die "coreos-installer $have_ci found, pins.env wants $MINISNO_COREOS_INSTALLER_VERSION"

mkdir -p "$out"
work=$(mktemp -d "$out/.work.XXXXXX")
loopdev=""
mnt=""
cleanup() {
    set +e
    [ -n "$mnt" ] && mountpoint -q "$mnt" && umount "$mnt"
    if [ -n "$loopdev" ]; then
        partx -d "$loopdev" 2>/dev/null
        losetup -d "$loopdev"
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# --- rootfs -------------------------------------------------------------------------------
step "rootfs: mmdebstrap $MINISNO_SUITE with $MINISNO_KERNEL_PACKAGE"
root=$work/rootfs
mmdebstrap --variant=minbase --mode=root --quiet \
    --include="systemd,systemd-sysv,dbus,udev,openssh-server,$MINISNO_KERNEL_PACKAGE,tiny-initramfs,kmod,iproute2,util-linux,e2fsprogs,sudo,procps,fdisk,busybox-static,less,curl,jq,network-manager,dnsmasq-base,libnss-myhostname,lvm2,mdadm,efibootmgr,$MINISNO_MULTIPATH_PACKAGES" \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    "$MINISNO_SUITE" "$root" "$MINISNO_MIRROR"
chroot "$root" dpkg-query -W -f '${Package} ${Version}\n' > "$work/packages.txt"
step "secure boot: $SB_PACKAGES"
sb_fetch "$root" "$work/secureboot" "$work/packages.txt"

kver=$(basename "$(ls -d "$root"/lib/modules/*)")
step "rootfs: kernel $kver; configuring"
cp -a "$here/rootfs-overlay/." "$root/"
chmod 0440 "$root/etc/sudoers.d/core"
install -D -m 0755 "$MINISNO_IGNITION_BIN" "$root/usr/lib/minisno/minisno-ignition"
install -D -m 0755 "$MINISNO_APISERVER_BIN" "$root/usr/lib/minisno/minisno-apiserver"
install -D -m 0755 "$COREOS_INSTALLER_BIN" "$root/usr/bin/coreos-installer"
# The network as on RHCOS: NetworkManager (keyfile plugin, connections in
# /etc/NetworkManager/system-connections, 0600), DHCP on every Ethernet NIC through its
# default automatic connection, and the resolv.conf NetworkManager writes. No static hostname:
# like an RHCOS node, minisno takes the one DHCP gives (option 12), else the reverse DNS name
# of its address (NetworkManager's hostname-mode=default); with neither, NetworkManager sets
# "localhost.localdomain" ("no hostname found"), over systemd's fallback "localhost". The build
# host's resolv.conf, which mmdebstrap leaves behind, goes.
mkdir -p "$root/etc/NetworkManager/system-connections"
chmod 0700 "$root/etc/NetworkManager/system-connections"
rm -f "$root/etc/hostname" "$root/etc/resolv.conf"
# systemd's nss-myhostname resolves the node's own name whatever DHCP named it (sudo looks it
# up on every call). Fedora CoreOS and RHEL list it too; here it comes before DNS, so that the
# lookup never waits on a DNS server that cannot answer for the name.
sed -i -E 's/^hosts:.*/hosts:          files myhostname dns/' "$root/etc/nsswitch.conf"
grep -q '^hosts:          files myhostname dns$' "$root/etc/nsswitch.conf" \
    || die "nsswitch.conf has no hosts line to set"
[ -x "$root/usr/sbin/dnsmasq" ] || die "dnsmasq-base did not install /usr/sbin/dnsmasq"
printf 'minisno %s (a test fixture for sno-harness; not RHCOS)\n' "$MINISNO_SUITE" > "$root/etc/minisno-release"
multipath_rootfs "$root"
chroot "$root" useradd --create-home --uid 1000 --user-group --groups sudo --shell /bin/bash core
chroot "$root" usermod -p '*' core
rm -f "$root"/etc/ssh/ssh_host_*
# sshd's configuration is checked here, once, instead of before every start (ssh.service.d).
mkdir -p "$root/run/sshd"
chroot "$root" ssh-keygen -q -t ed25519 -N "" -f /run/sshd-check-key
chroot "$root" /usr/sbin/sshd -t -h /run/sshd-check-key || die "sshd -t rejects the image's sshd_config"
rm -rf "$root"/run/sshd-check-key* "$root/run/sshd"
# NetworkManager-wait-online as on RHCOS: network-online.target means NetworkManager has
# finished starting (the DHCP lease taken), and what orders itself after it waits for that.
chroot "$root" systemctl enable NetworkManager.service NetworkManager-wait-online.service \
    ssh.service ssh-host-keygen.service minisno-boot-report.service >/dev/null
chroot "$root" systemctl disable apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer \
    fstrim.timer >/dev/null 2>&1 || true
# lvm2, mdadm and efibootmgr as on RHCOS's live system: the assisted agent removes an old
# disk's volume groups and arrays with them and sets the EFI boot entry (the harness's assisted
# install does the same over SSH); their udev rules activate old metadata as RHCOS's do.
# Masked: systemd-networkd (NetworkManager manages the network, as on RHCOS), e2scrub_reap
# (a 5 s LVM snapshot scan on every boot under TCG; no volume of minisno's is LVM), LVM's
# and mdadm's monitors and scrub timers (nothing to monitor on a test VM), the VGA getty (the VM has no display), and boot-time
# units this appliance has no use for (DRM, pstore, FUSE, device-mapper, debugfs, tracefs,
# huge pages, kernel-command-line networks, audit, daily timers). Under TCG every unit costs a
# fork and an exec on a CPU that is also starting sshd and the API server.
chroot "$root" systemctl mask systemd-networkd.service systemd-networkd.socket \
    systemd-networkd-wait-online.service e2scrub_reap.service \
    getty@tty1.service modprobe@drm.service modprobe@efi_pstore.service \
    modprobe@fuse.service modprobe@dm_mod.service modprobe@configfs.service \
    sys-kernel-debug.mount sys-kernel-tracing.mount dev-hugepages.mount \
    sys-fs-fuse-connections.mount sys-kernel-config.mount systemd-network-generator.service \
    systemd-pstore.service systemd-journald-audit.socket dpkg-db-backup.timer \
    systemd-tmpfiles-clean.timer lvm2-monitor.service mdmonitor.service \
    mdmonitor-oneshot.timer mdcheck_start.timer mdcheck_continue.timer >/dev/null
# The live system's /var is whatever the overlay gives; keep the journal in memory there.
if chroot "$root" ldd /usr/bin/coreos-installer | grep 'not found'; then
    die "coreos-installer misses libraries in the rootfs"
fi

step "rootfs: trimming kernel modules and caches"
kmods=$root/lib/modules/$kver/kernel
for d in "$kmods"/drivers/*; do
    case " block ata scsi nvme virtio cdrom char misc firmware md net acpi " in
        *" $(basename "$d") "*) ;;
        *) rm -rf "$d" ;;
    esac
done
# bonding: RHCOS bonds NICs with it (NetworkManager's bond connections).
find "$kmods/drivers/net" -name '*.ko' ! -name virtio_net.ko ! -name net_failover.ko \
    ! -name tun.ko ! -name veth.ko ! -name dummy.ko ! -name bonding.ko -delete
for d in "$kmods"/fs/*/; do
    # efivarfs: efibootmgr reads and writes the EFI variables through it.
    case " ext4 jbd2 mbcache fat isofs squashfs overlayfs nls fuse efivarfs " in
        *" $(basename "$d") "*) ;;
        *) rm -rf "$d" ;;
    esac
done
rm -rf "$kmods/sound" "$kmods/arch/x86/kvm" "$kmods"/net/{wireless,mac80211,bluetooth,sunrpc,ceph,rxrpc,tipc,sctp,rds,l2tp,nfc,mac802154,ieee802154,6lowpan}
rm -rf "$root/lib/firmware" "$root/boot"/initrd.img-* "$root/var/cache/apt"/*.bin "$root/var/lib/apt/lists"/*
depmod -b "$root" "$kver"
# NetworkManager's bond profiles (type=bond) need bonding.ko and what it depends on, in the
# live and the installed system alike (one rootfs).
modprobe -d "$root" -S "$kver" --show-depends bonding >/dev/null 2>&1 \
    || die "bonding.ko or a module it needs is missing after trimming"
# coreos-installer's cpio archives (the ISO's embedded Ignition and network keyfiles, PXE's
# wrapped ones, the keyfiles `install -n` appends to the installed initramfs) are xz-compressed.
grep -qx 'CONFIG_RD_XZ=y' "$root/boot/config-$kver" \
    || die "kernel $kver cannot unpack an xz-compressed initramfs (CONFIG_RD_XZ)"
cp "$root/boot/vmlinuz-$kver" "$work/vmlinuz"
sb_check_kernel "$work/vmlinuz"

step "rootfs: squashfs"
mksquashfs "$root" "$work/rootfs.squashfs" -comp zstd -Xcompression-level 15 -noappend -quiet -no-xattrs \
    -e boot/vmlinuz-"$kver" -e boot/System.map-"$kver"

live_version="minisno-$(sha256sum "$work/rootfs.squashfs" | cut -c1-16)"

# --- initramfs ------------------------------------------------------------------------------
step "initramfs: busybox, modules, init"
ird=$work/initramfs
mkdir -p "$ird"/{bin,dev,proc,sys,run,sysroot,etc,lib/modules}
cp "$root/bin/busybox" "$ird/bin/busybox"
install -m 0755 "$here/init" "$ird/init"
install -m 0755 "$here/udhcpc.script" "$ird/etc/udhcpc.script"
install -D -m 0644 "$here/rootfs-fetch.sh" "$ird/lib/minisno/rootfs-fetch.sh"
install -D -m 0644 "$here/firstboot-network.sh" "$ird/lib/minisno/firstboot-network.sh"
install -D -m 0644 "$here/boot-entry.sh" "$ird/lib/minisno/boot-entry.sh"
echo "$live_version" > "$ird/etc/coreos-live-initramfs"
# virtio_net: the minimal ISO's and PXE's init fetch the rootfs over the VM's network.
mods="virtio_pci virtio_blk virtio_scsi sd_mod sr_mod ahci nvme crc32c_generic ext4 isofs loop squashfs overlay virtio_net $MINISNO_MULTIPATH_MODULES"
for m in $mods; do
    modprobe -d "$root" -S "$kver" --show-depends "$m" 2>/dev/null | awk '$1 == "insmod" {print $2}'
done | sort -u | while read -r ko; do
    rel=${ko#"$root"}
    install -D -m 0644 "$ko" "$ird$rel"
done
cp "$root/lib/modules/$kver"/modules.{order,builtin,builtin.modinfo} "$ird/lib/modules/$kver/"
depmod -b "$ird" "$kver"
multipath_initramfs "$root" "$ird"
# The installed system's initramfs, and the live one's first part (the live one gains the
# rootfs's stream hashes once rootfs.img exists, which holds the metal images that hold this).
(cd "$ird" && find . | LC_ALL=C sort | cpio -o -H newc --quiet | zstd -q -19 -T0 > "$work/initramfs.img")

# --- metal images ----------------------------------------------------------------------------
# Layout (GPT): 1 BIOS boot (512-byte image only), 2 EFI-SYSTEM (vfat), 3 boot (ext4, LABEL=boot),
# 4 root (ext4, LABEL=root, holding rootfs.squashfs and the overlay's persistent upper dir).
bootdir=$work/boot
mkdir -p "$bootdir/grub" "$bootdir/loader/entries" "$bootdir/ignition"
cp "$work/vmlinuz" "$bootdir/vmlinuz"
cp "$work/initramfs.img" "$bootdir/initramfs.img"
cp "$here/grub-disk.cfg" "$bootdir/grub/grub.cfg"
: > "$bootdir/ignition.firstboot"
rmdir "$bootdir/ignition"
# A BLS entry, so that coreos-installer's network-config and initramfs code finds the files.
# `coreos-installer install -n` (0.27, copy_network_config) appends its cpio of
# /etc/coreos-firstboot-network to the file this entry's `initrd` names; grub-disk.cfg must load
# that very file, or the keyfiles never reach the installed system's first boot.
cat > "$bootdir/loader/entries/minisno.conf" <<EOF
title minisno ($kver)
linux /vmlinuz
initrd /initramfs.img
options minisno.root=LABEL=root console=tty0 console=ttyS0,115200n8
EOF
bls_initrd=$(awk '$1 == "initrd" {print $2}' "$bootdir/loader/entries/minisno.conf")
grub_initrd=$(awk '$1 == "initrd" {print $2}' "$bootdir/grub/grub.cfg")
[ "$bls_initrd" = "$grub_initrd" ] && [ -f "$bootdir$bls_initrd" ] \
    || die "grub-disk.cfg loads initrd $grub_initrd, the BLS entry names $bls_initrd: they must be the same file"

rootdir=$work/rootpart
mkdir -p "$rootdir/minisno" "$rootdir/upper" "$rootdir/work"
ln "$work/rootfs.squashfs" "$rootdir/minisno/rootfs.squashfs"

mib=$((1024 * 1024))
sq_mib=$(( ($(stat -c %s "$work/rootfs.squashfs") + mib - 1) / mib ))
esp_mib=32
boot_mib=64
# Room for the overlay's upper directory (journal, the bootstrap files, the API server's state).
# The installer writes every byte of the image, zeros included, so the slack costs install time.
root_mib=$(( sq_mib + 96 ))

build_metal() {
    local ss=$1 img=$2
    local d=$work/metal-$ss
    mkdir -p "$d"
    mkfs.vfat -C -S "$ss" -n EFI-SYSTEM "$d/esp.img" $((esp_mib * 1024)) >/dev/null
    mmd -i "$d/esp.img" ::/EFI ::/EFI/BOOT
    sb_fill_esp "$d/esp.img" "$here/grub-esp.cfg"
    # Inode tables and journal initialised now: lazy initialisation would make the installed
    # system's first boot zero them in the background, slowly under TCG.
    local noinit="lazy_itable_init=0,lazy_journal_init=0"
    mke2fs -q -t ext4 -b 4096 -E "$noinit" -L boot -d "$bootdir" "$d/boot.img" "${boot_mib}M"
    mke2fs -q -t ext4 -b 4096 -E "$noinit" -L root -d "$rootdir" "$d/root.img" "${root_mib}M"

    # Partition starts at 1 MiB boundaries; sizes in MiB. sfdisk sizes a table by the device's
    # logical sector size, so the table is written through a loop device of that sector size.
    local total_mib=$(( 1 + 1 + esp_mib + boot_mib + root_mib + 1 ))
    truncate -s "${total_mib}M" "$img"
    local per=$(( mib / ss ))
    loopdev=$(losetup -f --show --sector-size "$ss" "$img")
    {
        echo "label: gpt"
        if [ "$ss" = 512 ]; then
            echo "start=$((1 * per)), size=$((1 * per)), type=21686148-6449-6E6F-744E-656564454649, name=BIOS-BOOT"
        fi
        echo "start=$((2 * per)), size=$((esp_mib * per)), type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B, name=EFI-SYSTEM"
        echo "start=$(((2 + esp_mib) * per)), size=$((boot_mib * per)), type=0FC63DAF-8483-4772-8E79-3D69D8477DE4, name=boot"
        echo "start=$(((2 + esp_mib + boot_mib) * per)), size=$((root_mib * per)), type=0FC63DAF-8483-4772-8E79-3D69D8477DE4, name=root"
    } | sfdisk --quiet --no-reread --no-tell-kernel "$loopdev"
    dd if="$d/esp.img" of="$loopdev" bs=1M seek=2 conv=notrunc,sparse status=none
    dd if="$d/boot.img" of="$loopdev" bs=1M seek=$((2 + esp_mib)) conv=notrunc,sparse status=none
    dd if="$d/root.img" of="$loopdev" bs=1M seek=$((2 + esp_mib + boot_mib)) conv=notrunc,sparse status=none
    sync

    if [ "$ss" = 512 ]; then
        # GRUB's BIOS boot code: grub-install needs the block device and the mounted boot
        # filesystem. partx (not the kernel) makes the partition nodes; only ext4 is mounted.
        # 4096-byte-sector disks get no BIOS boot code: GRUB's i386-pc boot sector assumes
        # 512-byte sectors, and like RHCOS, minisno supports 4Kn disks on UEFI only.
        partx -a "$loopdev"
        mnt=$d/mnt
        mkdir -p "$mnt"
        mount -t ext4 "${loopdev}p3" "$mnt"
        grub-install --target=i386-pc --boot-directory="$mnt" \
            --modules="part_gpt ext2 search search_label serial terminal" \
            --locales= --fonts= --themes= "$loopdev" 2>&1 | grep -v '^Installation finished' || true
        [ -f "$mnt/grub/i386-pc/core.img" ] || die "grub-install did not install the BIOS boot code"
        umount "$mnt"
        mnt=""
        partx -d "$loopdev"
    fi
    losetup -d "$loopdev"
    loopdev=""
    rm -rf "$d"
}

for ss in 512 4096; do
    step "metal: $ss-byte sector image"
    build_metal "$ss" "$work/metal-$ss.raw"
    zstd -q -T0 -6 --rm "$work/metal-$ss.raw" -o "$work/metal-$ss.raw.zst"
done

# The live rootfs as CoreOS ships it: images/pxeboot/rootfs.img, a newc cpio whose first member
# is root.squashfs (so that the live ISO's init mounts it in place, at offset 124), then
# etc/coreos-live-rootfs, the version a PXE boot compares with the initramfs's, then what RHCOS
# keeps there as osmet data: what `coreos-installer install` with no image source writes. minisno
# has no osmet, so the metal images themselves are there (minisno-osmet/), and a network-booted
# live system (the minimal ISO, PXE) has them without any ISO.
# The live initramfs is the installed one plus etc/coreos-live-want-rootfs, the image's SHA-256
# per 4 MiB chunk in the format of rdcore stream-hash, against which a rootfs fetched from
# coreos.live.rootfs_url= is checked (the kernel unpacks concatenated cpio archives in turn).
step "rootfs: rootfs.img (cpio) with the metal images, its stream hashes, the live initramfs"
rcpio=$work/rootfs-cpio
mkdir -p "$rcpio/etc" "$rcpio/minisno-osmet"
# Copies, not hard links: cpio writes a hard-linked file's data after its last link only.
cp "$work/rootfs.squashfs" "$rcpio/root.squashfs"
cp "$work/metal-512.raw.zst" "$work/metal-4096.raw.zst" "$rcpio/minisno-osmet/"
echo "$live_version" > "$rcpio/etc/coreos-live-rootfs"
(cd "$rcpio" && printf '%s\n' root.squashfs etc etc/coreos-live-rootfs minisno-osmet \
    minisno-osmet/metal-512.raw.zst minisno-osmet/metal-4096.raw.zst \
    | cpio -o -H newc --quiet > "$work/rootfs.img")
rm -rf "$rcpio"
[ "$(dd if="$work/rootfs.img" bs=1 skip=124 count=4 2>/dev/null)" = hsqs ] \
    || die "root.squashfs is not at offset 124 of rootfs.img"
rootfs_chunk=$((4 * 1024 * 1024))
{
    echo "stream-hash sha256 $rootfs_chunk"
    split -b "$rootfs_chunk" --filter='sha256sum | cut -d" " -f1' "$work/rootfs.img"
} > "$work/want-rootfs"
wcpio=$work/want-cpio
mkdir -p "$wcpio/etc/coreos"
install -m 0644 "$work/want-rootfs" "$wcpio/etc/coreos-live-want-rootfs"
# The live image's feature flags, as cosa buildextend-live writes them into the live initramfs
# (etc/coreos/features.json) and the ISO (coreos/features.json): coreos-installer's
# `iso network embed`, `iso customize --network-keyfile` and `pxe customize` refuse an image
# without live-initrd-network, which says that the live initramfs applies keyfiles found in
# /etc/coreos-firstboot-network (minisno's init does, firstboot-network.sh). minisno's live
# system has no coreos-installer-service reading /etc/coreos/installer.d, so it does not claim
# installer-config (nor its console directive).
cat > "$work/features.json" <<'EOF'
{
  "installer-config": false,
  "installer-config-directives": {
    "console": false
  },
  "live-initrd-network": true
}
EOF
install -m 0644 "$work/features.json" "$wcpio/etc/coreos/features.json"
cp "$work/initramfs.img" "$work/live-initrd.img"
# The kernel takes a plain cpio after a compressed one only at an offset that is a multiple of
# 4 (and skips zeros before it); the compressed initramfs's length varies from build to build,
# and an unaligned append is dropped with an "invalid magic" line, the hashes with it.
pad=$(( (4 - $(stat -c %s "$work/live-initrd.img") % 4) % 4 ))
head -c "$pad" /dev/zero >> "$work/live-initrd.img"
(cd "$wcpio" && printf '%s\n' etc etc/coreos-live-want-rootfs etc/coreos etc/coreos/features.json \
    | cpio -o -H newc --quiet) \
    >> "$work/live-initrd.img"
rm -rf "$wcpio"

# --- live ISO --------------------------------------------------------------------------------
step "live ISO"
iso=$work/iso
mkdir -p "$iso/images/pxeboot" "$iso/coreos" "$iso/boot/grub"
cp "$work/vmlinuz" "$iso/images/pxeboot/vmlinuz"
cp "$work/live-initrd.img" "$iso/images/pxeboot/initrd.img"
mv "$work/rootfs.img" "$iso/images/pxeboot/rootfs.img"
head -c "$MINISNO_IGNITION_AREA" /dev/zero > "$iso/images/ignition.img"
echo '{"file": "images/ignition.img"}' > "$iso/coreos/igninfo.json"
cp "$work/features.json" "$iso/coreos/features.json"
# Room for `coreos-installer pack minimal-iso`'s data (coreos/miniso.dat, rewritten in place).
head -c "$MINISNO_MINISO_AREA" /dev/zero > "$iso/coreos/miniso.dat"

# The kernel-argument area is a fixed-size run of bytes inside grub.cfg: the arguments, a
# newline, then '#' padding (a grub comment line). coreos-installer finds it through
# coreos/kargs.json, by file and offset, and rewrites it in place.
default_kargs="coreos.liveiso=$MINISNO_ISO_LABEL ignition.firstboot ignition.platform.id=metal"
area=$(printf '%s\n' "$default_kargs"; printf '%*s' $((MINISNO_KARGS_AREA - ${#default_kargs} - 1)) '' | tr ' ' '#')
head_cfg="set timeout=0
serial --unit=0 --speed=115200
terminal_input serial console
terminal_output serial console
menuentry 'minisno live ($MINISNO_SUITE, a fixture)' {
    linux /images/pxeboot/vmlinuz "
{
    printf '%s' "$head_cfg"
    printf '%s' "$area"
    printf '\n    initrd /images/pxeboot/initrd.img /images/ignition.img\n}\n'
} > "$iso/boot/grub/grub.cfg"
offset=${#head_cfg}
cat > "$iso/coreos/kargs.json" <<EOF
{
  "default": "$default_kargs",
  "files": [{"path": "boot/grub/grub.cfg", "offset": $offset}],
  "size": $MINISNO_KARGS_AREA
}
EOF
sb_efi_boot_image "$work/efiboot.img"
MINIMAL_ISO=$work/minimal.iso MINISNO_EFI_IMAGE=$work/efiboot.img \
    UNSIGNED_LOADER_ISO=$work/live-unsigned-loader.iso \
    grub-mkrescue --xorriso="$here/xorriso-full-and-minimal" \
    -o "$work/live.iso" "$iso" -- -volid "$MINISNO_ISO_LABEL" 2> "$work/mkrescue.log" \
    || { cat "$work/mkrescue.log" >&2; die "grub-mkrescue failed"; }
for i in live.iso live-unsigned-loader.iso; do
    "$COREOS_INSTALLER_BIN" iso kargs show "$work/$i" >/dev/null \
        || die "coreos-installer does not recognise the kargs area of $i"
done
# The minimal ISO goes into the full one, as on RHCOS: `coreos-installer iso extract minimal-iso`
# gives it back, with coreos.live.rootfs_url= in its kernel arguments.
step "live ISO: packing the minimal ISO into it"
"$COREOS_INSTALLER_BIN" pack minimal-iso --consume "$work/live.iso" "$work/minimal.iso" \
    > "$work/pack.log" 2>&1 || { cat "$work/pack.log" >&2; die "coreos-installer pack minimal-iso failed"; }
"$COREOS_INSTALLER_BIN" iso extract minimal-iso "$work/live.iso" "$work/check-minimal.iso" \
    --rootfs-url http://10.0.2.2/rootfs.img \
    || die "coreos-installer cannot extract the minimal ISO it packed"
rm "$work/check-minimal.iso"

step "done: moving results into $out"
mv "$work/live.iso" "$out/live.iso"
mv "$work/live-unsigned-loader.iso" "$out/live-unsigned-loader.iso"
mv "$work/metal-512.raw.zst" "$out/metal-512.raw.zst"
mv "$work/metal-4096.raw.zst" "$out/metal-4096.raw.zst"
mv "$work/packages.txt" "$out/packages.txt"
for f in live.iso live-unsigned-loader.iso metal-512.raw.zst metal-4096.raw.zst; do
    sha256sum "$out/$f" | awk '{print $1}' > "$out/$f.sha256"
done
echo "$kver" > "$out/kernel-version.txt"
