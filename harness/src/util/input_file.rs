//! Reading a file a user named (a scenario, a matrix, a result, a perf.json): only a regular
//! file, and only up to a size cap, so that a FIFO cannot block a command, a device such as
//! /dev/zero cannot be read forever, and a huge file cannot take the memory of the host.
//!
//! The path may be a symbolic link (scenarios are symlinked into place); it is opened without
//! blocking (O_NONBLOCK: opening a FIFO with no writer would otherwise wait), the opened file
//! is checked with fstat (what is read is what was checked, even if the path changes in
//! between), and at most cap + 1 bytes are read, whatever the size the file claims.

use std::fmt;
use std::fs::{File, FileType, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// How large one kind of input file may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cap {
    /// What the file is, for the message: "a scenario".
    pub what: &'static str,
    pub bytes: u64,
}

/// Scenario and matrix files: the shipped ones are a few KiB and the largest conceivable one
/// (every key, long descriptions, hundreds of axis values) stays far below 1 MiB, while the
/// TOML parser takes some 65 times a file's size in memory (a 14 MB scenario took 935 MB).
pub const SCENARIO: Cap = Cap {
    what: "a scenario",
    bytes: 1 << 20,
};

/// Matrix files, like scenarios.
pub const MATRIX: Cap = Cap {
    what: "a matrix",
    bytes: 1 << 20,
};

/// A run's result.json: a few KiB (phases, signals, reset causes, the last signals); 16 MiB
/// leaves room for a run's worth of recorded detail while bounding serde_json's copy.
pub const RESULT: Cap = Cap {
    what: "a result.json",
    bytes: 16 << 20,
};

/// A matrix's summary.json: a record per permutation and the plan's ids, for at most
/// MAX_PERMUTATIONS (10,000) permutations. A record of the longest id (250 bytes), its path,
/// the params of its labels (64 bytes at most each) and the quoted reason (1 KiB at most,
/// report/summary_json.rs) takes up to some 3 KiB, pretty-printed: the largest plan's merged
/// summary takes some 30 MiB (report/merge/tests.rs writes and reads one back). As perf.json's,
/// the cap keeps the parsed form to a few hundred MiB.
pub const SUMMARY: Cap = Cap {
    what: "a summary.json",
    bytes: 64 << 20,
};

/// A perf.json: a sample per iteration, phase and metric. 64 MiB holds millions of samples,
/// far more than any perf run takes, and keeps its parsed form to a few hundred MiB.
pub const PERF: Cap = Cap {
    what: "a perf.json",
    bytes: 64 << 20,
};

/// Why a named file cannot be read, without its path (callers with their own error types put
/// the path where they say it).
#[derive(Debug, thiserror::Error)]
pub enum Problem {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("is {kind}, not a regular file")]
    NotRegular { kind: &'static str },
    /// `size` is the size the file claims, or `None` when it claims less than it holds (a
    /// file of /proc, a file that grew) and only reading showed it is too large.
    #[error("{}, more than the {} {} may have", size_words(*.size, cap.bytes), Bytes(cap.bytes), cap.what)]
    TooLarge { size: Option<u64>, cap: Cap },
    #[error("not UTF-8 text (byte 0x{byte:02x} at offset {offset})")]
    NotUtf8 { offset: usize, byte: u8 },
}

fn size_words(size: Option<u64>, cap: u64) -> String {
    match size {
        Some(n) if n < 1024 => format!("{n} bytes"),
        Some(n) => format!("{} ({n} bytes)", Bytes(n)),
        None => format!("more than {cap} bytes"),
    }
}

/// A named file that cannot be read, and why.
#[derive(Debug, thiserror::Error)]
#[error("{}: {problem}", path.display())]
pub struct InputFileError {
    pub path: PathBuf,
    #[source]
    pub problem: Problem,
}

/// A byte count for people: "1 MiB", "13.4 MiB", "2.5 GiB", "512 bytes".
pub(crate) struct Bytes(pub(crate) u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const GIB: u64 = 1 << 30;
        const MIB: u64 = 1 << 20;
        const KIB: u64 = 1 << 10;
        let n = self.0;
        if n >= GIB {
            fmt_unit(f, n, GIB, "GiB")
        } else if n >= MIB {
            fmt_unit(f, n, MIB, "MiB")
        } else if n >= KIB {
            fmt_unit(f, n, KIB, "KiB")
        } else {
            write!(f, "{n} bytes")
        }
    }
}

fn fmt_unit(f: &mut fmt::Formatter<'_>, n: u64, unit: u64, name: &str) -> fmt::Result {
    if n.is_multiple_of(unit) {
        write!(f, "{} {name}", n / unit)
    } else {
        write!(f, "{:.1} {name}", n as f64 / unit as f64)
    }
}

/// What a file that is not regular is, for the message.
fn kind_of(t: FileType) -> Option<&'static str> {
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        Some("not a file")
    }
}

/// The bytes of the regular file `path`, at most `cap.bytes` of them.
pub fn read_bytes(path: &Path, cap: Cap) -> Result<Vec<u8>, InputFileError> {
    read_capped(path, cap).map_err(|problem| InputFileError {
        path: path.to_path_buf(),
        problem,
    })
}

/// The text of the regular file `path`, at most `cap.bytes` of UTF-8.
pub fn read_text(path: &Path, cap: Cap) -> Result<String, InputFileError> {
    read_capped(path, cap)
        .and_then(|bytes| {
            String::from_utf8(bytes).map_err(|e| {
                let offset = e.utf8_error().valid_up_to();
                Problem::NotUtf8 {
                    offset,
                    byte: e.as_bytes()[offset],
                }
            })
        })
        .map_err(|problem| InputFileError {
            path: path.to_path_buf(),
            problem,
        })
}

fn read_capped(path: &Path, cap: Cap) -> Result<Vec<u8>, Problem> {
    // Refused before opening when the path says so: opening a device can have effects of its
    // own (a tape rewinds, a terminal becomes the controlling one).
    refuse_irregular(std::fs::metadata(path)?.file_type())?;
    let file = open_without_blocking(path)?;
    let meta = file.metadata()?;
    refuse_irregular(meta.file_type())?;
    if meta.len() > cap.bytes {
        return Err(Problem::TooLarge {
            size: Some(meta.len()),
            cap,
        });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(cap.bytes + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap.bytes {
        return Err(Problem::TooLarge { size: None, cap });
    }
    Ok(bytes)
}

fn refuse_irregular(t: FileType) -> Result<(), Problem> {
    match kind_of(t) {
        None => Ok(()),
        Some(kind) => Err(Problem::NotRegular { kind }),
    }
}

/// Opens for reading; a FIFO opens at once instead of waiting for a writer.
fn open_without_blocking(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn fifo(dir: &Path) -> PathBuf {
        let p = dir.join("fifo");
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        p
    }

    const TINY: Cap = Cap {
        what: "a test file",
        bytes: 16,
    };

    #[test]
    fn a_regular_file_within_the_cap_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, "exactly 16 bytes").unwrap();
        assert_eq!(read_text(&p, TINY).unwrap(), "exactly 16 bytes");
        // Through a link too: scenarios may be symlinked into place.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        assert_eq!(read_bytes(&link, TINY).unwrap(), b"exactly 16 bytes");
    }

    #[test]
    fn a_file_over_the_cap_is_refused_with_its_size_and_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, "seventeen bytes!!").unwrap();
        let e = read_text(&p, TINY).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{}: 17 bytes, more than the 16 bytes a test file may have",
                p.display()
            )
        );
        std::fs::write(&p, vec![b'x'; (14 << 20) + 4096]).unwrap();
        let e = read_text(&p, SCENARIO).unwrap_err().to_string();
        assert!(
            e.ends_with(": 14.0 MiB (14684160 bytes), more than the 1 MiB a scenario may have"),
            "{e}"
        );
    }

    #[test]
    fn a_fifo_is_refused_at_once_without_waiting_for_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let p = fifo(dir.path());
        let started = Instant::now();
        let e = read_text(&p, TINY).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(
            matches!(e.problem, Problem::NotRegular { kind: "a FIFO" }),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            format!("{}: is a FIFO, not a regular file", p.display())
        );
    }

    #[test]
    fn devices_and_directories_are_refused_by_kind() {
        let e = read_bytes(Path::new("/dev/zero"), TINY).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/dev/zero: is a character device, not a regular file"
        );
        let dir = tempfile::tempdir().unwrap();
        let e = read_bytes(dir.path(), TINY).unwrap_err();
        assert!(e
            .to_string()
            .ends_with(": is a directory, not a regular file"));
    }

    #[test]
    fn a_file_larger_than_it_claims_is_read_no_further_than_the_cap() {
        // /proc files say they are empty and hold more.
        let e = read_bytes(Path::new("/proc/self/maps"), TINY).unwrap_err();
        assert!(
            matches!(e.problem, Problem::TooLarge { size: None, .. }),
            "{e}"
        );
        assert!(e.to_string().contains("more than 16 bytes"), "{e}");
    }

    #[test]
    fn a_missing_file_and_bad_utf8_say_so() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("missing");
        let e = read_text(&p, TINY).unwrap_err();
        assert!(matches!(e.problem, Problem::Io(ref io) if io.kind() == io::ErrorKind::NotFound));
        std::fs::write(&p, b"ok\xff").unwrap();
        assert_eq!(
            read_text(&p, TINY).unwrap_err().to_string(),
            format!("{}: not UTF-8 text (byte 0xff at offset 2)", p.display())
        );
    }
}
