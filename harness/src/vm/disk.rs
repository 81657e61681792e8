//! Disk images, made with qemu-img, owner-only: once the install is done a disk holds
//! `master.ign` (the cluster CA's key, the pull secret). qemu-img creates them under the umask;
//! they are made `0600` at once, inside `disks/`, which only the owner can list.

use std::path::Path;
use std::process::Command;

#[derive(Debug, thiserror::Error)]
pub enum DiskError {
    #[error("running qemu-img: {0}")]
    Spawn(#[source] std::io::Error),
    #[error("qemu-img {args} failed: {stderr}")]
    Failed { args: String, stderr: String },
    #[error("making {} owner-only: {source}", .path.display())]
    Mode {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Makes the image qemu-img just created owner-only.
fn private(path: &Path) -> Result<(), DiskError> {
    crate::util::private::set_mode(path, crate::util::private::PRIVATE_FILE).map_err(|source| {
        DiskError::Mode {
            path: path.to_path_buf(),
            source,
        }
    })
}

/// Creates a sparse qcow2 image of `size_bytes`.
pub fn create_qcow2(path: &Path, size_bytes: u64) -> Result<(), DiskError> {
    create(path, "qcow2", size_bytes)
}

/// Creates a sparse image of `size_bytes` in `format` (`qcow2` or `raw`).
pub fn create(path: &Path, format: &str, size_bytes: u64) -> Result<(), DiskError> {
    qemu_img(vec![
        "create".to_string(),
        "-q".into(),
        "-f".into(),
        format.into(),
        path.display().to_string(),
        size_bytes.to_string(),
    ])?;
    private(path)
}

/// Creates a qcow2 overlay at `path` on the qcow2 image `backing` (absolute, never written
/// through the overlay): reads fall through to it, writes land in the overlay. A write
/// allocates clusters in the overlay as it would in an empty image, so a disk write into an
/// overlay of an unwritten disk costs what it costs on a fresh image.
pub fn create_overlay(path: &Path, backing: &Path) -> Result<(), DiskError> {
    let backing = std::path::absolute(backing).map_err(DiskError::Spawn)?;
    qemu_img(vec![
        "create".to_string(),
        "-q".into(),
        "-f".into(),
        "qcow2".into(),
        "-b".into(),
        backing.display().to_string(),
        "-F".into(),
        "qcow2".into(),
        path.display().to_string(),
    ])?;
    private(path)
}

fn qemu_img(args: Vec<String>) -> Result<(), DiskError> {
    let out = Command::new("qemu-img")
        .args(&args)
        .output()
        .map_err(DiskError::Spawn)?;
    if out.status.success() {
        Ok(())
    } else {
        Err(DiskError::Failed {
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn images_and_overlays_are_owner_only_whatever_the_umask() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().join("base.qcow2");
        create_qcow2(&base, 1 << 20).unwrap();
        assert_eq!(mode(&base), 0o600);
        let overlay = d.path().join("overlay.qcow2");
        create_overlay(&overlay, &base).unwrap();
        assert_eq!(mode(&overlay), 0o600);
    }
}
