#!/usr/bin/env bash
# minisno_image_source DISK: the coreos-installer arguments that name the metal image for DISK's
# logical sector size (RHCOS's installer picks it from stream metadata the same way).
minisno_image_source() {
    local ss image
    ss=$(blockdev --getss "$1" 2>/dev/null || echo 512)
    case "$ss" in
        4096) image=metal-4096.raw.zst ;;
        *) image=metal-512.raw.zst ;;
    esac
    # RHCOS rebuilds the image from the osmet data in its live rootfs.img; minisno's rootfs.img
    # carries the metal images instead (minisno-osmet/). A network boot (the minimal ISO, PXE)
    # unpacked them to /run/minisno/osmet; a live ISO's are read out of the ISO's rootfs.img.
    local osmet=/run/minisno/osmet
    if [ ! -r "$osmet/$image" ]; then
        if ! mountpoint -q /run/media/iso; then
            local dev
            dev=$(blkid -t TYPE=iso9660 -o device | head -n 1)
            mkdir -p /run/media/iso
            mount -o ro "$dev" /run/media/iso >&2 || echo "minisno: no ISO to read $image from" >&2
        fi
        mkdir -p "$osmet/from-iso"
        (cd "$osmet/from-iso" && busybox cpio -i -d -F /run/media/iso/images/pxeboot/rootfs.img \
            "minisno-osmet/$image") >&2 || echo "minisno: no $image in the ISO's rootfs.img" >&2
        mv "$osmet/from-iso/minisno-osmet/$image" "$osmet/$image" >&2
    fi
    image=$osmet/$image
    {{FAULT_INSTALL}}
    echo "--image-file $image --insecure"
}
