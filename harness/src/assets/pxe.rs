//! The files of a PXE boot (`[boot] source = "pxe"`), made of the pristine full live ISO by the
//! real coreos-installer: `iso extract pxe` gives the kernel, the initramfs and the root
//! filesystem, `pxe ignition wrap` puts the live Ignition into an initramfs of its own (CoreOS's
//! way of handing a PXE boot its config), and the kernel arguments are the ISO's with
//! `coreos.liveiso=` replaced by `coreos.live.rootfs_url=`, as for the minimal ISO. The harness
//! serves all four over HTTP; the user network's TFTP serves only the iPXE script that names
//! them (QEMU's NIC ROM is iPXE on SeaBIOS and on OVMF).

use std::fs;
use std::path::{Path, PathBuf};

use super::{AssetsError, AssetsRequest, CoreosInstaller};

/// The TFTP root in the run directory, and the script in it the DHCP answer names.
pub const TFTP_DIR: &str = "tftp";
pub const BOOT_SCRIPT: &str = "boot.ipxe";
/// The URL paths of the kernel, the initramfs and the wrapped Ignition on the boot server
/// (the root filesystem is at `netboot::ROOTFS_PATH`).
pub const KERNEL_PATH: &str = "/vmlinuz";
pub const INITRD_PATH: &str = "/initrd.img";
pub const IGNITION_PATH: &str = "/ignition.img";
/// Where they are in the run directory.
const DIR: &str = "pxe";

/// A PXE boot's files in the run directory (the iPXE script beside them, in `tftp/`).
#[derive(Debug, Clone)]
pub struct PxeFiles {
    pub kernel: PathBuf,
    pub initrd: PathBuf,
    /// The live Ignition as an initramfs (owner-only: it carries the cluster's secrets).
    pub ignition: PathBuf,
    pub rootfs: PathBuf,
}

impl PxeFiles {
    /// What the boot server serves for iPXE, by URL path; the root filesystem is served as
    /// every network boot's is (`Assets::rootfs`).
    pub fn boot_files(&self) -> [(&'static str, PathBuf); 3] {
        [
            (KERNEL_PATH, self.kernel.clone()),
            (INITRD_PATH, self.initrd.clone()),
            (IGNITION_PATH, self.ignition.clone()),
        ]
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
    let dir = req.run_dir.join(DIR);
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
    let ignition = dir.join("ignition.img");
    ci.run(
        &["pxe", "ignition", "wrap", "-i"],
        &[live_ignition, Path::new("-o"), &ignition],
    )?;
    crate::util::private::set_mode(&ignition, crate::util::private::PRIVATE_FILE)
        .map_err(|e| AssetsError::io("chmod 600 pxe/ignition.img", e))?;
    let iso_kargs = ci.run(&["iso", "kargs", "show"], &[full_iso])?;
    let kargs = kernel_args(last_line(&iso_kargs), rootfs_url);
    let tftp = req.run_dir.join(TFTP_DIR);
    fs::create_dir_all(&tftp).map_err(|e| AssetsError::io("creating tftp/", e))?;
    let script = tftp.join(BOOT_SCRIPT);
    let origin = rootfs_url
        .strip_suffix(crate::netboot::ROOTFS_PATH)
        .unwrap_or(rootfs_url);
    fs::write(&script, ipxe_script(origin, &kargs))
        .map_err(|e| AssetsError::io(format!("writing {}", script.display()), e))?;
    // Readable by others, whatever the umask: libvirt's QEMU runs as its own user, and its
    // TFTP opens the script by name (the run directory lets it through, and no further). The
    // script holds URLs and kernel arguments, nothing secret; the Ignition goes over HTTP.
    crate::util::private::set_mode(&tftp, 0o755)
        .and_then(|_| crate::util::private::set_mode(&script, 0o644))
        .map_err(|e| AssetsError::io("making tftp/ readable by libvirt's QEMU", e))?;
    let files = PxeFiles {
        kernel: file("vmlinuz"),
        initrd: file("initrd.img"),
        ignition,
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
pub fn ipxe_script(origin: &str, kargs: &str) -> String {
    format!(
        "#!ipxe\n\
         initrd --name initrd {origin}{INITRD_PATH}\n\
         initrd --name ignition {origin}{IGNITION_PATH}\n\
         kernel {origin}{KERNEL_PATH} initrd=initrd initrd=ignition {kargs}\n\
         boot\n"
    )
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
        let s = ipxe_script("http://10.0.2.2:4000", "a=b");
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "#!ipxe");
        assert_eq!(
            lines[1],
            "initrd --name initrd http://10.0.2.2:4000/initrd.img"
        );
        assert_eq!(
            lines[2],
            "initrd --name ignition http://10.0.2.2:4000/ignition.img"
        );
        assert_eq!(
            lines[3],
            "kernel http://10.0.2.2:4000/vmlinuz initrd=initrd initrd=ignition a=b"
        );
        assert_eq!(lines[4], "boot");
    }

    #[test]
    fn the_kernel_arguments_come_from_the_last_line_coreos_installer_printed() {
        assert_eq!(
            last_line("a warning\ncoreos.liveiso=x y\n\n"),
            "coreos.liveiso=x y"
        );
    }
}
