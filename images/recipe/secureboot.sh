# UEFI Secure Boot for minisno: the boot chain Debian signs, laid out as RHCOS lays out its own.
# Sourced by build.sh (it uses build.sh's `step` and `die`).
#
# The chain, as the firmware, shim and GRUB check it:
# - The firmware (OVMF's Secure Boot build with Microsoft's keys enrolled, like a PC's) runs only
#   images signed by a key in its db: shim (Debian's shim-signed, signed by Microsoft's UEFI CA).
#   Anything else it refuses to load; OVMF says so on the console ("BdsDxe: failed to load
#   Boot0001 ...: Access Denied").
# - shim loads grubx64.efi from its own directory and checks it, and every image GRUB then hands
#   it (the kernel), against the certificate built into shim: Debian's.
# - Debian's signed GRUB (grub-efi-amd64-signed) is one image with its modules built in (under
#   Secure Boot it loads no others). Its embedded configuration looks for grub.cfg under its
#   prefix on the device it was loaded from (grubx64.efi: /EFI/debian; gcdx64.efi, the build for
#   optical discs that Debian's installer ISOs boot: /boot/grub, which on a disc is the ISO
#   filesystem), then on a disc holding /.disk/info, then next to itself.
# - The kernel is Debian's signed linux-image-amd64 (linux-signed-amd64; the cloud flavour is
#   signed too). Neither shim nor GRUB checks the initramfs, on Debian as on RHCOS.
# RHCOS's layout: the ISO's El Torito EFI image and the metal image's ESP hold
# \EFI\BOOT\BOOTX64.EFI (shim), grubx64.efi and mmx64.efi (MokManager, which shim starts when a
# key enrolment is pending); the ESP's vendor directory holds a small grub.cfg that finds the
# boot filesystem by label and reads the real one there (RHCOS: \EFI\redhat\grub.cfg; here
# \EFI\debian\grub.cfg, where Debian's GRUB looks). No fbx64.efi: the fallback loader would add
# a boot entry and reset the machine on the installed system's first boot.

# The packages of the signed chain, from the suite and mirror of pins.env.
SB_PACKAGES="shim-signed shim-helpers-amd64-signed grub-efi-amd64-signed"

# sb_fetch ROOT DIR PACKAGES_TXT: the signed binaries of $SB_PACKAGES, downloaded with the
# rootfs's apt configuration (its sources: the pinned suite and mirror) into DIR, their versions
# appended to PACKAGES_TXT. The rootfs does not get them: nothing in it runs them. Sets SB_SHIM,
# SB_MOKMANAGER, SB_GRUB_DISK and SB_GRUB_CD.
sb_fetch() {
    local root=$1 dir=$2 packages=$3 deb
    local apt=(apt-get -q -o "Dir=$root" -o Dir::Bin::Methods=/usr/lib/apt/methods
               -o APT::Sandbox::User=root)
    mkdir -p "$dir/debs" "$dir/files"
    # mmdebstrap leaves no package lists; build.sh's trimming removes these.
    "${apt[@]}" update >"$dir/apt.log" 2>&1 || { cat "$dir/apt.log" >&2; die "apt-get update for $SB_PACKAGES failed"; }
    # shellcheck disable=SC2086
    (cd "$dir/debs" && "${apt[@]}" download $SB_PACKAGES) >>"$dir/apt.log" 2>&1 \
        || { cat "$dir/apt.log" >&2; die "downloading $SB_PACKAGES failed"; }
    for deb in "$dir"/debs/*.deb; do
        dpkg-deb -x "$deb" "$dir/files"
        dpkg-deb -W --showformat='${Package} ${Version}\n' "$deb" >> "$packages"
    done
    SB_SHIM=$dir/files/usr/lib/shim/shimx64.efi.signed
    SB_MOKMANAGER=$dir/files/usr/lib/shim/mmx64.efi.signed
    SB_GRUB_DISK=$dir/files/usr/lib/grub/x86_64-efi-signed/grubx64.efi.signed
    SB_GRUB_CD=$dir/files/usr/lib/grub/x86_64-efi-signed/gcdx64.efi.signed
    local f
    for f in "$SB_SHIM" "$SB_MOKMANAGER" "$SB_GRUB_DISK" "$SB_GRUB_CD"; do
        [ -f "$f" ] || die "$f is missing from $SB_PACKAGES"
        sb_signed "$f" || die "$f carries no Authenticode signature"
    done
}

# sb_signed FILE: FILE is a PE32+ image with a certificate table (an Authenticode signature).
# The table is data directory 4 of the optional header (PE/COFF specification): at 144 bytes
# into a PE32+ optional header, which follows the 4-byte signature and the 20-byte COFF header.
sb_signed() {
    local f=$1 pe magic size
    pe=$(od -An -tu4 -j60 -N4 "$f" | tr -d ' ')
    [ -n "$pe" ] || return 1
    [ "$(od -An -tx1 -j"$pe" -N4 "$f" | tr -d ' ')" = 50450000 ] || return 1
    magic=$(od -An -tx2 -j$((pe + 24)) -N2 "$f" | tr -d ' ')
    [ "$magic" = 020b ] || return 1
    size=$(od -An -tu4 -j$((pe + 24 + 144 + 4)) -N4 "$f" | tr -d ' ')
    [ "${size:-0}" -gt 0 ]
}

# sb_check_kernel VMLINUZ: the kernel shim will be asked to verify is signed at all (a kernel
# package other than Debian's signed ones would stop every Secure Boot run at GRUB's `linux`).
sb_check_kernel() {
    sb_signed "$1" || die "the kernel $1 carries no signature: MINISNO_KERNEL_PACKAGE must be one of Debian's signed kernels (linux-image-amd64, linux-image-cloud-amd64)"
}

# sb_fill_esp IMG ESP_CFG: the signed chain into the metal image's ESP (a vfat image holding
# /EFI/BOOT), and ESP_CFG as \EFI\debian\grub.cfg.
sb_fill_esp() {
    local img=$1 cfg=$2
    mmd -i "$img" ::/EFI/debian
    mcopy -i "$img" "$SB_SHIM" ::/EFI/BOOT/BOOTX64.EFI
    mcopy -i "$img" "$SB_GRUB_DISK" ::/EFI/BOOT/grubx64.efi
    mcopy -i "$img" "$SB_MOKMANAGER" ::/EFI/BOOT/mmx64.efi
    mcopy -i "$img" "$cfg" ::/EFI/debian/grub.cfg
}

# sb_efi_boot_image OUT: the live ISO's El Torito EFI image, a vfat image of the chain for
# optical discs (GRUB then reads /boot/grub/grub.cfg of the ISO, the kernel-argument area's file).
sb_efi_boot_image() {
    local out=$1 bytes=0 f
    for f in "$SB_SHIM" "$SB_GRUB_CD" "$SB_MOKMANAGER"; do
        bytes=$((bytes + $(stat -c %s "$f")))
    done
    # The files, and room for the filesystem's own tables.
    mkfs.vfat -C -n EFIBOOT "$out" $((bytes / 1024 + 512)) >/dev/null
    mmd -i "$out" ::/EFI ::/EFI/BOOT
    mcopy -i "$out" "$SB_SHIM" ::/EFI/BOOT/BOOTX64.EFI
    mcopy -i "$out" "$SB_GRUB_CD" ::/EFI/BOOT/grubx64.efi
    mcopy -i "$out" "$SB_MOKMANAGER" ::/EFI/BOOT/mmx64.efi
}
