//! What a guest fetches over the network while it boots, served by the harness itself: the
//! minimal ISO's root filesystem (its `coreos.live.rootfs_url=`), a PXE boot's kernel and
//! initramfs. The server binds a host address the guest reaches through its network, serves a
//! fixed set of files under a per-run random path, and reports every request for them (bytes,
//! time) for the timeline; what it refuses it counts. The fixture faults `rootfs-404` and
//! `rootfs-corrupt` are played here, as `no-dns` is played by the harness's DNS records.

mod server;

pub use server::{FileServer, Load, Peers, Report, Served, ServerFault};

/// Where the guest finds the host on QEMU's user network (slirp's gateway, which is the host's
/// loopback): the same address on the QEMU and the local libvirt backend.
pub const USER_NETWORK_HOST: std::net::Ipv4Addr = std::net::Ipv4Addr::new(10, 0, 2, 2);

/// The fixture faults this server plays.
pub const ROOTFS_404_FAULT: &str = "rootfs-404";
pub const ROOTFS_CORRUPT_FAULT: &str = "rootfs-corrupt";

/// The root filesystem image's name on the boot server (its URL path is the run's token, then
/// this: `FileServer::path_of`).
pub const ROOTFS_NAME: &str = "rootfs.img";

/// The fault a scenario's `[fixture] faults` asks of the server, if any.
pub fn fault_of(faults: &[String]) -> Option<ServerFault> {
    faults.iter().find_map(|f| match f.as_str() {
        ROOTFS_404_FAULT => Some(ServerFault::NotFound),
        ROOTFS_CORRUPT_FAULT => Some(ServerFault::Corrupt),
        _ => None,
    })
}
