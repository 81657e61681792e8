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
    if ! mountpoint -q /run/media/iso; then
        # The minimal ISO: the root filesystem came over the network and the init mounted no
        # ISO, but the metal images are still on it (RHCOS rebuilds the image from osmet data
        # in its root filesystem instead).
        local dev
        dev=$(blkid -t TYPE=iso9660 -o device | head -n 1)
        mkdir -p /run/media/iso
        mount -o ro "$dev" /run/media/iso >&2 || echo "minisno: no ISO to read $image from" >&2
    fi
    image=/run/media/iso/images/$image
    {{FAULT_INSTALL}}
    echo "--image-file $image --insecure"
}
