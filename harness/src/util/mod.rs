//! Small helpers shared by every layer.

pub mod children;
pub mod out;
pub mod process;
pub mod socket_path;
pub mod wait;

use std::path::PathBuf;

/// The first executable called `name` on `$PATH`.
pub fn which(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| {
            p.metadata()
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
}
