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
    image=/run/media/iso/images/$image
    {{FAULT_INSTALL}}
    echo "--image-file $image --insecure"
}
