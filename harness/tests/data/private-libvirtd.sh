# Sourced by netns-libvirtd.sh and netns-libvirt-host.sh, in mount namespaces of their own.
#
#   start_private_libvirtd STATE_DIR
#
# Hides the host's libvirt sockets and state under tmpfs mounts (/run, /var/lib/libvirt,
# /var/cache/libvirt) and /var/log/libvirt under STATE_DIR/log (so the domains' QEMU logs,
# log/qemu/NAME.log, outlive the namespace: a QEMU that dies says why there), so nothing here
# touches the host's, then starts a private virtlogd and libvirtd (its log in
# STATE_DIR/libvirtd.log) and waits until libvirtd answers.
start_private_libvirtd() {
    local state=$1
    mount -t tmpfs tmpfs /run
    mkdir -p /run/libvirt /run/lock
    for d in /var/lib/libvirt /var/cache/libvirt; do
        mkdir -p "$d"
        mount -t tmpfs tmpfs "$d"
    done
    mkdir -p /var/log/libvirt "$state/log"
    mount --bind "$state/log" /var/log/libvirt
    mkdir -p /var/lib/libvirt/qemu /var/lib/libvirt/dnsmasq /var/lib/libvirt/images \
        /var/log/libvirt/qemu /var/cache/libvirt/qemu
    virtlogd -d
    LIBVIRT_LOG_OUTPUTS="3:file:$state/libvirtd.log" libvirtd -d
    for _ in $(seq 100); do
        virsh -c qemu:///system version >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    virsh -c qemu:///system version >/dev/null
}
