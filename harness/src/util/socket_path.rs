//! Unix socket paths longer than `sun_path` allows (108 bytes with the NUL) can be neither
//! bound nor connected as they are, and a run directory deep in `--out` or a long scenario or
//! permutation name makes them so. Such a socket stays where the run keeps it; it is reached
//! through an open handle on its directory: `/proc/self/fd/N/<name>`, which is short. QEMU
//! binds it through such a handle that it inherits; the harness connects through its own.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// The longest path a Unix socket address holds.
pub const MAX_SOCKET_PATH: usize = 107;

/// Whether `path` can be bound or connected as it is.
pub fn fits(path: &Path) -> bool {
    path.as_os_str().len() <= MAX_SOCKET_PATH
}

/// `path` as QEMU is to bind it: itself when it fits (or no directory handle is given), else
/// through `dir_fd`, its directory as QEMU inherits it.
pub fn for_qemu(path: &Path, dir_fd: Option<i32>) -> PathBuf {
    match (path.file_name(), dir_fd) {
        (Some(name), Some(fd)) if !fits(path) => {
            Path::new(&format!("/proc/self/fd/{fd}")).join(name)
        }
        _ => path.to_path_buf(),
    }
}

/// A socket path the harness can connect to; the handle on its directory (if it needs one)
/// lives as long as this value.
pub struct Reachable {
    path: PathBuf,
    _dir: Option<File>,
}

impl Reachable {
    pub fn new(path: &Path) -> io::Result<Reachable> {
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            return Ok(Reachable {
                path: path.into(),
                _dir: None,
            });
        };
        if fits(path) {
            return Ok(Reachable {
                path: path.into(),
                _dir: None,
            });
        }
        let dir = File::open(dir)?;
        let short = Path::new(&format!("/proc/self/fd/{}", dir.as_raw_fd())).join(name);
        Ok(Reachable {
            path: short,
            _dir: Some(dir),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::{UnixListener, UnixStream};

    #[test]
    fn a_socket_deeper_than_sun_path_is_bound_and_reached_through_its_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let deep = tmp.path().join("d".repeat(100));
        std::fs::create_dir(&deep).unwrap();
        let sock = deep.join("serial.sock");
        assert!(!fits(&sock));
        assert!(
            UnixListener::bind(&sock).is_err(),
            "the kernel refuses the long path"
        );
        let bind_at = Reachable::new(&sock).unwrap();
        assert!(fits(bind_at.path()), "{}", bind_at.path().display());
        let listener = UnixListener::bind(bind_at.path()).unwrap();
        assert!(sock.exists(), "the socket is where the run keeps it");
        let connect_at = Reachable::new(&sock).unwrap();
        let _client = UnixStream::connect(connect_at.path()).unwrap();
        listener.accept().unwrap();
    }

    #[test]
    fn a_short_path_is_used_as_it_is() {
        let p = Path::new("/tmp/r/qmp.sock");
        assert_eq!(Reachable::new(p).unwrap().path(), p);
        assert_eq!(for_qemu(p, Some(7)), p);
        let long = PathBuf::from(format!("/{}/serial.sock", "x".repeat(110)));
        assert_eq!(
            for_qemu(&long, Some(7)),
            Path::new("/proc/self/fd/7/serial.sock")
        );
        assert_eq!(for_qemu(&long, None), long);
    }
}
