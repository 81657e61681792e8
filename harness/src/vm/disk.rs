//! Disk images, made with qemu-img.

use std::path::Path;
use std::process::Command;

#[derive(Debug, thiserror::Error)]
pub enum DiskError {
    #[error("running qemu-img: {0}")]
    Spawn(#[source] std::io::Error),
    #[error("qemu-img {args} failed: {stderr}")]
    Failed { args: String, stderr: String },
}

/// Creates a sparse qcow2 image of `size_bytes`.
pub fn create_qcow2(path: &Path, size_bytes: u64) -> Result<(), DiskError> {
    qemu_img(vec![
        "create".to_string(),
        "-q".into(),
        "-f".into(),
        "qcow2".into(),
        path.display().to_string(),
        size_bytes.to_string(),
    ])
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
    ])
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
