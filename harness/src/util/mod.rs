//! Small helpers shared by every layer.

pub mod children;
pub mod digest;
pub mod harness_log;
pub mod input_file;
pub mod out;
pub mod private;
pub mod process;
pub mod raw_terminal;
pub mod replace_file;
pub mod socket_path;
pub mod url;
pub mod wait;

use std::path::{Component, Path, PathBuf};

/// `path` made absolute (against the working directory) with `.` and `..` resolved by their
/// names alone, without looking at the file system: the same string always gives the same
/// path, so a run directory as registered and as QEMU's arguments name it compare equal.
pub fn lexical_absolute(path: &Path) -> PathBuf {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

/// This host's name (gethostname(2)), empty when it cannot be had: the `hostname` of JUnit
/// suites.
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its whole length, which is what gethostname is given.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_dot_is_resolved_by_name() {
        assert_eq!(
            lexical_absolute(Path::new("/home/u/../runs/./x")),
            Path::new("/home/runs/x")
        );
        assert_eq!(lexical_absolute(Path::new("/../x")), Path::new("/x"));
        assert!(lexical_absolute(Path::new("rel")).is_absolute());
    }
}
