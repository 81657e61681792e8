//! The files of a PXE boot (`[boot] source = "pxe"`), made of the pristine full live ISO by the
//! real coreos-installer: `iso extract pxe` gives the kernel, the initramfs and the root
//! filesystem, `pxe ignition wrap` puts the live Ignition into an initramfs of its own (CoreOS's
//! way of handing a PXE boot its config), and the kernel arguments are the ISO's with
//! `coreos.liveiso=` replaced by `coreos.live.rootfs_url=`, as for the minimal ISO. The harness
//! serves the kernel, the initramfs and the root filesystem over HTTP under the run's random
//! path; the TFTP that boots the NIC (QEMU's own on the user network, the network's dnsmasq on
//! NAT) serves the iPXE script that names them.
//!
//! The wrapped Ignition carries the cluster's secrets, so it never sits on a socket any local
//! user can reach: on the user network it goes through QEMU's TFTP, which only the guest
//! reaches; on a NAT network the boot server sends it once, only to the node's address.

use std::fs;
use std::path::{Path, PathBuf};

use super::{AssetsError, AssetsRequest, CoreosInstaller};

/// The TFTP root in the private directory, and the script in it the DHCP answer names.
pub const TFTP_DIR: &str = "tftp";
pub const BOOT_SCRIPT: &str = "boot.ipxe";
/// The names of the kernel, the initramfs and the wrapped Ignition on the boot server (under
/// the run's token; the root filesystem is `netboot::ROOTFS_NAME`) and in the TFTP root.
pub const KERNEL_NAME: &str = "vmlinuz";
pub const INITRD_NAME: &str = "initrd.img";
pub const IGNITION_NAME: &str = "ignition.img";
/// The scenario's static network as an initramfs of its own (`pxe network wrap`), delivered
/// as the Ignition is.
pub const NETWORK_NAME: &str = "network.img";
/// Where they are in the private directory.
const DIR: &str = "pxe";

/// How the guest gets the wrapped Ignition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IgnitionBy {
    /// From the TFTP root, by QEMU's user network (reached by the guest alone).
    Tftp,
    /// From the boot server, once, to the node's address only (a NAT network).
    HttpOnce,
}

/// A PXE boot's files in the private directory (the iPXE script beside them, in `tftp/`).
#[derive(Debug, Clone)]
pub struct PxeFiles {
    pub kernel: PathBuf,
    pub initrd: PathBuf,
    /// The live Ignition as an initramfs (owner-only: it carries the cluster's secrets).
    pub ignition: PathBuf,
    pub ignition_by: IgnitionBy,
    /// The keyfiles' initramfs, for a scenario with static networking.
    pub network: Option<PathBuf>,
    pub rootfs: PathBuf,
}

impl PxeFiles {
    /// What the boot server serves for iPXE, by name, and whether once only; the root
    /// filesystem is served as every network boot's is (`Assets::rootfs`).
    pub fn boot_files(&self) -> Vec<(&'static str, PathBuf, bool)> {
        let mut files = vec![
            (KERNEL_NAME, self.kernel.clone(), false),
            (INITRD_NAME, self.initrd.clone(), false),
        ];
        if self.ignition_by == IgnitionBy::HttpOnce {
            files.push((IGNITION_NAME, self.ignition.clone(), true));
            if let Some(n) = &self.network {
                files.push((NETWORK_NAME, n.clone(), true));
            }
        }
        files
    }
}

/// Makes the PXE files of `full_iso` with `live_ignition` for a guest that reaches the boot
/// server at `rootfs_url`'s origin.
pub(super) fn make(
    req: &AssetsRequest,
    log: &Path,
    full_iso: &Path,
    (live_ignition, rootfs_url): (&Path, &str),
) -> Result<PxeFiles, AssetsError> {
    let dir = req.private_dir.join(DIR);
    // coreos-installer refuses to overwrite; a resumed directory may hold them.
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).map_err(|e| AssetsError::io("creating pxe/", e))?;
    let ci = CoreosInstaller::new(req, log, full_iso);
    ci.run(&["iso", "extract", "pxe", "-o"], &[&dir, full_iso])?;
    // Named after the ISO's file: NAME-vmlinuz, NAME-initrd.img, NAME-rootfs.img.
    let stem = full_iso
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let file = |what: &str| dir.join(format!("{stem}-{what}"));
    let nat = req.scenario.vm.network == crate::scenario::GuestNetwork::Nat;
    let tftp = req.private_dir.join(TFTP_DIR);
    fs::create_dir_all(&tftp).map_err(|e| AssetsError::io("creating tftp/", e))?;
    let (ignition, ignition_by) = match nat {
        true => (dir.join(IGNITION_NAME), IgnitionBy::HttpOnce),
        false => (tftp.join(IGNITION_NAME), IgnitionBy::Tftp),
    };
    ci.run(
        &["pxe", "ignition", "wrap", "-i"],
        &[live_ignition, Path::new("-o"), &ignition],
    )?;
    crate::util::private::set_mode(&ignition, crate::util::private::PRIVATE_FILE)
        .map_err(|e| AssetsError::io("chmod 600 the wrapped Ignition", e))?;
    let network = wrap_network(req, &ci, ignition.with_file_name(NETWORK_NAME))?;
    let iso_kargs = ci.run(&["iso", "kargs", "show"], &[full_iso])?;
    let kargs = kernel_args(last_line(&iso_kargs), rootfs_url);
    let script = tftp.join(BOOT_SCRIPT);
    let origin = rootfs_url
        .strip_suffix(&format!("/{}", crate::netboot::ROOTFS_NAME))
        .unwrap_or(rootfs_url);
    let initrds = Initrds {
        by: ignition_by,
        network: network.is_some(),
    };
    fs::write(&script, ipxe_script(origin, initrds, &kargs))
        .map_err(|e| AssetsError::io(format!("writing {}", script.display()), e))?;
    tftp_modes(&tftp, &script, nat)?;
    let files = PxeFiles {
        kernel: file("vmlinuz"),
        initrd: file("initrd.img"),
        ignition,
        ignition_by,
        network,
        rootfs: file("rootfs.img"),
    };
    for f in [&files.kernel, &files.initrd, &files.rootfs] {
        if !f.is_file() {
            return Err(AssetsError::io(
                format!("coreos-installer iso extract pxe made no {}", f.display()),
                std::io::Error::from(std::io::ErrorKind::NotFound),
            ));
        }
    }
    Ok(files)
}

/// The scenario's keyfiles as an initramfs at `to` (`coreos-installer pxe network wrap`),
/// if it has any.
fn wrap_network(
    req: &AssetsRequest,
    ci: &CoreosInstaller,
    to: PathBuf,
) -> Result<Option<PathBuf>, AssetsError> {
    let keyfiles = super::node_net::write_keyfiles(req.private_dir, req.scenario)?;
    if keyfiles.is_empty() {
        return Ok(None);
    }
    let mut args = super::keyfile_args(&keyfiles);
    args.extend([Path::new("-o"), to.as_path()]);
    ci.run(&["pxe", "network", "wrap"], &args)?;
    crate::util::private::set_mode(&to, crate::util::private::PRIVATE_FILE)
        .map_err(|e| AssetsError::io("chmod 600 the wrapped keyfiles", e))?;
    Ok(Some(to))
}

/// The TFTP root's modes. On the user network it holds the Ignition: the owner's alone (a
/// local libvirtd's QEMU, which runs as its own user, is given its files by the backend). On a
/// NAT network the network's dnsmasq, another user, reads the script, which holds nothing
/// secret (its URLs answer the node's address only).
fn tftp_modes(tftp: &Path, script: &Path, nat: bool) -> Result<(), AssetsError> {
    let (dir_mode, file_mode) = match nat {
        true => (0o755, 0o644),
        false => (
            crate::util::private::PRIVATE_DIR,
            crate::util::private::PRIVATE_FILE,
        ),
    };
    crate::util::private::set_mode(tftp, dir_mode)
        .and_then(|_| crate::util::private::set_mode(script, file_mode))
        .map_err(|e| AssetsError::io("setting the TFTP root's modes", e))
}

fn last_line(text: &str) -> &str {
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}

/// The ISO's kernel arguments for a network boot: `coreos.liveiso=` (which names a CD-ROM the
/// machine does not have) becomes `coreos.live.rootfs_url=URL`, and the serial console is
/// added, as the live ISO gets it.
pub fn kernel_args(iso_kargs: &str, rootfs_url: &str) -> String {
    let mut out: Vec<String> = iso_kargs
        .split_whitespace()
        .filter(|a| !a.starts_with("coreos.liveiso=") && !a.starts_with("coreos.live.rootfs_url="))
        .map(str::to_string)
        .collect();
    out.insert(0, format!("coreos.live.rootfs_url={rootfs_url}"));
    out.push("console=ttyS0,115200n8".into());
    out.join(" ")
}

/// The iPXE script: both initramfs images by name, which the kernel line names too (iPXE's EFI
/// build hands the EFI stub only the initrds named by `initrd=`; the BIOS one ignores them).
/// `origin` is the boot server's URL up to the run's token. The Ignition is named relative to
/// the script when it comes by TFTP: iPXE resolves it against the script's own URL, the TFTP
/// server that only the guest reaches.
pub fn ipxe_script(origin: &str, initrds: Initrds, kargs: &str) -> String {
    let by = |name: &str| match initrds.by {
        IgnitionBy::Tftp => name.to_string(),
        IgnitionBy::HttpOnce => format!("{origin}/{name}"),
    };
    let mut script = format!(
        "#!ipxe\n\
         initrd --name initrd {origin}/{INITRD_NAME}\n\
         initrd --name ignition {}\n",
        by(IGNITION_NAME)
    );
    let mut named = String::from("initrd=initrd initrd=ignition");
    if initrds.network {
        script.push_str(&format!("initrd --name network {}\n", by(NETWORK_NAME)));
        named.push_str(" initrd=network");
    }
    script.push_str(&format!(
        "kernel {origin}/{KERNEL_NAME} {named} {kargs}\nboot\n"
    ));
    script
}

/// The initramfs images of a PXE boot beside the OS's own: the Ignition's, delivered `by`,
/// and the keyfiles' (delivered the same way) when the scenario has static networking.
#[derive(Debug, Clone, Copy)]
pub struct Initrds {
    pub by: IgnitionBy,
    pub network: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_isos_kernel_arguments_lose_the_cd_rom_and_gain_the_rootfs_url_and_the_console() {
        let k = kernel_args(
            "coreos.liveiso=rhcos-416 ignition.firstboot ignition.platform.id=metal",
            "http://10.0.2.2:4000/rootfs.img",
        );
        assert_eq!(
            k,
            "coreos.live.rootfs_url=http://10.0.2.2:4000/rootfs.img ignition.firstboot \
             ignition.platform.id=metal console=ttyS0,115200n8"
        );
    }

    #[test]
    fn the_script_loads_both_initrds_by_the_names_the_kernel_line_gives() {
        let origin = "http://10.0.2.2:4000/0123abcd";
        let tftp = Initrds {
            by: IgnitionBy::Tftp,
            network: false,
        };
        let s = ipxe_script(origin, tftp, "a=b");
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "#!ipxe");
        assert_eq!(
            lines[1],
            "initrd --name initrd http://10.0.2.2:4000/0123abcd/initrd.img"
        );
        assert_eq!(
            lines[2], "initrd --name ignition ignition.img",
            "the Ignition from the TFTP root, beside the script"
        );
        assert_eq!(
            lines[3],
            "kernel http://10.0.2.2:4000/0123abcd/vmlinuz initrd=initrd initrd=ignition a=b"
        );
        assert_eq!(lines[4], "boot");
        let http = Initrds {
            by: IgnitionBy::HttpOnce,
            network: false,
        };
        let nat = ipxe_script(origin, http, "a=b");
        assert_eq!(
            nat.lines().nth(2),
            Some("initrd --name ignition http://10.0.2.2:4000/0123abcd/ignition.img")
        );
    }

    #[test]
    fn static_networking_adds_the_keyfiles_initrd_delivered_as_the_ignition_is() {
        let origin = "http://10.0.2.2:4000/0123abcd";
        for (by, network) in [
            (IgnitionBy::Tftp, "network.img".to_string()),
            (IgnitionBy::HttpOnce, format!("{origin}/network.img")),
        ] {
            let s = ipxe_script(origin, Initrds { by, network: true }, "a=b");
            let lines: Vec<&str> = s.lines().collect();
            assert_eq!(lines[3], format!("initrd --name network {network}"));
            assert_eq!(
                lines[4],
                "kernel http://10.0.2.2:4000/0123abcd/vmlinuz initrd=initrd initrd=ignition initrd=network a=b",
                "the EFI stub gets only the initrds the kernel line names"
            );
            assert_eq!(lines[5], "boot");
        }
    }

    #[test]
    fn only_a_nat_networks_ignition_is_served_over_http_and_once() {
        let f = |by| PxeFiles {
            kernel: "k".into(),
            initrd: "i".into(),
            ignition: "ign".into(),
            ignition_by: by,
            network: Some("net".into()),
            rootfs: "r".into(),
        };
        let names = |by| -> Vec<(&str, bool)> {
            f(by)
                .boot_files()
                .iter()
                .map(|(n, _, once)| (*n, *once))
                .collect()
        };
        assert_eq!(
            names(IgnitionBy::Tftp),
            [("vmlinuz", false), ("initrd.img", false)]
        );
        assert_eq!(
            names(IgnitionBy::HttpOnce),
            [
                ("vmlinuz", false),
                ("initrd.img", false),
                ("ignition.img", true),
                ("network.img", true)
            ]
        );
    }

    #[test]
    fn the_kernel_arguments_come_from_the_last_line_coreos_installer_printed() {
        assert_eq!(
            last_line("a warning\ncoreos.liveiso=x y\n\n"),
            "coreos.liveiso=x y"
        );
    }
}
