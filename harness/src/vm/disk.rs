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
    let args = vec![
        "create".to_string(),
        "-q".into(),
        "-f".into(),
        "qcow2".into(),
        path.display().to_string(),
        size_bytes.to_string(),
    ];
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
