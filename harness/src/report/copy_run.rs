//! `report --merge --copy`: a permutation's directory copied into the merged directory, and
//! nowhere else. The shards may come from anywhere (CI artifacts downloaded from a job), so
//! nothing in them is trusted:
//!
//! - no symbolic link is followed or copied: a link is left out and named (a run directory
//!   makes none; a link in one was put there by someone else, and copying it would let a
//!   later copy or the reader of the merged directory write or read through it);
//! - sockets, FIFOs and devices are left out (a kept VM's sockets are no evidence);
//! - what holds secrets or is too big to be evidence is left out: `disks/` and `assets/`
//!   directories (disk images hold `master.ign`, `assets/` of older run directories the
//!   cluster's keys), disk images, ISOs and firmware (`*.qcow2`, `*.raw`, `*.iso`, `*.img`,
//!   `*.fd`) and `run.lock`;
//! - the copy is made through directory descriptors: every directory is opened with
//!   O_NOFOLLOW and read by descriptor, every directory of the copy is new (mkdirat, which
//!   fails on anything already there) and every file is created with O_EXCL and O_NOFOLLOW,
//!   so a link planted in the shard or in the merged directory while the copy runs is not
//!   followed either;
//! - a sparse file stays sparse: only its data extents (SEEK_DATA, SEEK_HOLE) are copied;
//! - a JUnit file named `junit*.xml` (a permutation of an older matrix wrote `junit.xml`) is
//!   copied under another name (`report.junit`, or `<stem>.junit`): the merged directory's
//!   own junit.xml has its cases, and a collector globbing `**/junit*.xml` would count them
//!   twice.

use std::ffi::{CStr, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags, SeekFrom};
use rustix::io::Errno;

use crate::util::input_file::Bytes;

/// Directories deeper than this below a permutation's directory are left out: a run directory
/// is a few levels deep (gather/installed/journal/...), and every level holds a descriptor.
const MAX_DEPTH: usize = 32;

/// Directories left out of a copy by name, wherever they are: they hold disk images and
/// secrets.
const WITHHELD_DIRS: &[&str] = &["disks", "assets"];
/// Files left out by extension (compared without case): disk images, ISOs, firmware.
const WITHHELD_EXTENSIONS: &[&str] = &["qcow2", "raw", "iso", "img", "fd"];
/// Files left out by name.
const WITHHELD_FILES: &[&str] = &["run.lock"];

/// Why an entry of a permutation's directory was not copied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Why {
    /// A disk image, ISO, firmware file, lock, or a `disks/` or `assets/` directory.
    Withheld,
    /// A symbolic link.
    Link,
    /// A socket, FIFO or device.
    Special,
    /// A directory more than [`MAX_DEPTH`] levels down.
    TooDeep,
}

/// An entry not copied: its path in the merged directory and the bytes it holds (a
/// directory's: its files' sizes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    pub path: PathBuf,
    pub why: Why,
    pub bytes: u64,
}

/// How many links and too deep directories are named one by one.
const LISTED: usize = 20;

/// What the copies left out, for people: a line of counts (and bytes), then each link and
/// each directory too deep by name (a run directory makes neither), [`LISTED`] at most.
pub fn left_out_lines(skipped: &[Skipped]) -> Vec<String> {
    if skipped.is_empty() {
        return Vec::new();
    }
    let of = |why| skipped.iter().filter(move |s| s.why == why);
    let withheld_bytes: u64 = of(Why::Withheld).map(|s| s.bytes).sum();
    let counts = [
        (Why::Withheld, "withheld", "withheld"),
        (Why::Link, "symbolic link", "symbolic links"),
        (
            Why::Special,
            "socket, FIFO or device",
            "sockets, FIFOs or devices",
        ),
        (Why::TooDeep, "directory too deep", "directories too deep"),
    ];
    let mut parts = Vec::new();
    for (why, one, many) in counts {
        let n = of(why).count();
        let what = if n == 1 { one } else { many };
        match n {
            0 => {}
            _ if why == Why::Withheld => parts.push(format!(
                "{n} {what} ({}: disk images, ISOs, firmware, locks, disks/ and assets/ directories)",
                Bytes(withheld_bytes)
            )),
            _ => parts.push(format!("{n} {what}")),
        }
    }
    let mut lines = vec![format!("left out of the copies: {}", parts.join("; "))];
    let named: Vec<&Skipped> = skipped
        .iter()
        .filter(|s| matches!(s.why, Why::Link | Why::TooDeep))
        .collect();
    for s in named.iter().take(LISTED) {
        let what = if s.why == Why::Link {
            "a symbolic link"
        } else {
            "a directory too deep"
        };
        lines.push(format!("not copied, {what}: {}", s.path.display()));
    }
    if named.len() > LISTED {
        lines.push(format!("and {} more not copied", named.len() - LISTED));
    }
    lines
}

/// A copy that failed; the path is the entry at fault.
#[derive(Debug, thiserror::Error)]
#[error("copying {}: {source}", path.display())]
pub struct CopyError {
    pub path: PathBuf,
    #[source]
    pub source: io::Error,
}

/// Where the walk is: the source and copy directories, and the copy's path for messages.
struct At<'a> {
    from: &'a OwnedFd,
    to: &'a OwnedFd,
    path: &'a Path,
    depth: usize,
}

/// Copies the directory `from` into a new directory `name` of the directory `into`; returns
/// what was left out, with paths starting at `name`. `from` itself must be a directory, not a
/// link to one.
pub fn copy_run_dir(from: &Path, into: &Path, name: &str) -> Result<Vec<Skipped>, CopyError> {
    let err = |path: &Path| {
        let path = path.to_path_buf();
        move |e: Errno| CopyError {
            path,
            source: e.into(),
        }
    };
    let source = open_dir(rfs::CWD, from).map_err(err(from))?;
    let target = open_dir(rfs::CWD, into).map_err(err(into))?;
    let path = Path::new(name);
    let copy = new_dir(&target, name).map_err(err(&into.join(name)))?;
    let mut skipped = Vec::new();
    let at = At {
        from: &source,
        to: &copy,
        path,
        depth: 0,
    };
    copy_entries(&at, &mut skipped)?;
    let mode = rfs::fstat(&source).map_err(err(from))?.st_mode;
    rfs::fchmod(&copy, dir_mode(mode)).map_err(err(path))?;
    Ok(skipped)
}

/// Opens a directory without following a link at its last component.
fn open_dir<Fd: AsFd, P: rustix::path::Arg>(dir: Fd, name: P) -> Result<OwnedFd, Errno> {
    rfs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// Makes a new, owner-only directory `name` in `dir` and opens it: fails on anything already
/// there, a link included.
fn new_dir<P: rustix::path::Arg + Copy>(dir: &OwnedFd, name: P) -> Result<OwnedFd, Errno> {
    rfs::mkdirat(dir, name, Mode::from_raw_mode(0o700))?;
    open_dir(dir, name)
}

fn copy_entries(at: &At, skipped: &mut Vec<Skipped>) -> Result<(), CopyError> {
    let err = |e: Errno| CopyError {
        path: at.path.to_path_buf(),
        source: e.into(),
    };
    for entry in rfs::Dir::read_from(at.from).map_err(err)? {
        let entry = entry.map_err(err)?;
        let name = entry.file_name();
        if name == c"." || name == c".." {
            continue;
        }
        copy_entry(at, name, skipped)?;
    }
    Ok(())
}

fn copy_entry(at: &At, name: &CStr, skipped: &mut Vec<Skipped>) -> Result<(), CopyError> {
    let path = at.path.join(OsStr::from_bytes(name.to_bytes()));
    let err = |e: Errno| CopyError {
        path: path.clone(),
        source: e.into(),
    };
    let stat = rfs::statat(at.from, name, AtFlags::SYMLINK_NOFOLLOW).map_err(err)?;
    let kind = FileType::from_raw_mode(stat.st_mode);
    let mut skip = |why, bytes| {
        skipped.push(Skipped {
            path: path.clone(),
            why,
            bytes,
        })
    };
    match kind {
        FileType::Directory if withheld_dir(name) => {
            let bytes = open_dir(at.from, name).map_or(0, |d| bytes_under(&d, 0));
            skip(Why::Withheld, bytes);
        }
        FileType::Directory if at.depth >= MAX_DEPTH => skip(Why::TooDeep, 0),
        FileType::Directory => {
            let from = open_dir(at.from, name).map_err(err)?;
            let to = new_dir(at.to, name).map_err(err)?;
            let inner = At {
                from: &from,
                to: &to,
                path: &path,
                depth: at.depth + 1,
            };
            copy_entries(&inner, skipped)?;
            rfs::fchmod(&to, dir_mode(stat.st_mode)).map_err(err)?;
        }
        FileType::RegularFile if withheld_file(name) => skip(Why::Withheld, size(stat.st_size)),
        FileType::RegularFile => {
            copy_file(at, name, &copy_name(name)).map_err(|source| CopyError {
                path: path.clone(),
                source,
            })?
        }
        FileType::Symlink => skip(Why::Link, 0),
        _ => skip(Why::Special, 0),
    }
    Ok(())
}

/// A copied directory's mode: the source's permission bits, and always the owner's: the copy
/// is the user's to read and remove (a failed merge removes it), whatever the shard said.
/// Files likewise keep at least read and write for the owner.
fn dir_mode(st_mode: u32) -> Mode {
    Mode::from_raw_mode(st_mode & 0o777 | 0o700)
}

fn withheld_dir(name: &CStr) -> bool {
    WITHHELD_DIRS
        .iter()
        .any(|d| d.as_bytes() == name.to_bytes())
}

fn withheld_file(name: &CStr) -> bool {
    let name = name.to_bytes();
    let by_extension = Path::new(OsStr::from_bytes(name))
        .extension()
        .is_some_and(|x| {
            WITHHELD_EXTENSIONS
                .iter()
                .any(|w| w.as_bytes().eq_ignore_ascii_case(x.as_bytes()))
        });
    by_extension || WITHHELD_FILES.iter().any(|f| f.as_bytes() == name)
}

fn size(st_size: i64) -> u64 {
    u64::try_from(st_size).unwrap_or(0)
}

/// The sizes of the regular files under `dir`, links not followed, [`MAX_DEPTH`] levels
/// down at most; what cannot be read counts nothing (the number is for the message only).
fn bytes_under(dir: &OwnedFd, depth: usize) -> u64 {
    let Ok(entries) = rfs::Dir::read_from(dir) else {
        return 0;
    };
    let mut total = 0u64;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name == c"." || name == c".." {
            continue;
        }
        let Ok(stat) = rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        total = total.saturating_add(match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => size(stat.st_size),
            FileType::Directory if depth < MAX_DEPTH => {
                open_dir(dir, name).map_or(0, |d| bytes_under(&d, depth + 1))
            }
            _ => 0,
        });
    }
    total
}

/// The name of the copy of the file `name`: its own, but for a JUnit file a collector would
/// find (`junit*.xml`, in any case): `junit.xml` becomes a permutation's `report.junit`, any
/// other `<stem>.xml` `<stem>.junit`.
fn copy_name(name: &CStr) -> std::ffi::CString {
    let bytes = name.to_bytes();
    let lower = bytes.to_ascii_lowercase();
    if !(lower.starts_with(b"junit") && lower.ends_with(b".xml")) {
        return name.to_owned();
    }
    let renamed = if lower == b"junit.xml" {
        super::junit::PERMUTATION_JUNIT_FILE.as_bytes().to_vec()
    } else {
        [&bytes[..bytes.len() - 4], b".junit"].concat()
    };
    std::ffi::CString::new(renamed).expect("a file name holds no NUL")
}

/// Copies the regular file `name` as `to_name`: a new file in the copy (O_EXCL, O_NOFOLLOW),
/// its data extents only, then its permission bits.
fn copy_file(at: &At, name: &CStr, to_name: &CStr) -> io::Result<()> {
    // O_NONBLOCK: had a FIFO taken the file's place since it was looked at, opening it would
    // wait for a writer; fstat below refuses it.
    let from = File::from(rfs::openat(
        at.from,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
        Mode::empty(),
    )?);
    let stat = rfs::fstat(&from)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(io::Error::other("changed into something else than a file"));
    }
    let to = File::from(rfs::openat(
        at.to,
        to_name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )?);
    copy_extents(&from, &to, size(stat.st_size))?;
    rfs::fchmod(&to, Mode::from_raw_mode(stat.st_mode & 0o777 | 0o600))?;
    Ok(())
}

/// Copies the data of the first `len` bytes of `from` to the same offsets of `to`, leaving
/// its holes as holes, and gives `to` the length `len`.
pub(crate) fn copy_extents(from: &File, to: &File, len: u64) -> io::Result<()> {
    let mut pos = 0;
    while pos < len {
        let start = match rfs::seek(from, SeekFrom::Data(pos)) {
            Ok(start) => start,
            // No data after `pos`: the rest is a hole.
            Err(Errno::NXIO) => break,
            // A file system without the two seeks: all of it is data.
            Err(Errno::INVAL | Errno::OPNOTSUPP) => pos,
            Err(e) => return Err(e.into()),
        };
        let end = match rfs::seek(from, SeekFrom::Hole(start)) {
            Ok(end) => end,
            Err(Errno::INVAL | Errno::OPNOTSUPP | Errno::NXIO) => len,
            Err(e) => return Err(e.into()),
        };
        copy_range(from, to, start, end.min(len))?;
        pos = end.max(start + 1);
    }
    to.set_len(len)
}

/// Copies bytes `start..end` at the same offsets; stops early if `from` was cut shorter.
fn copy_range(from: &File, to: &File, start: u64, end: u64) -> io::Result<()> {
    let mut buf = vec![0u8; 1 << 17];
    let mut at = start;
    while at < end {
        let want = usize::try_from(end - at).map_or(buf.len(), |n| n.min(buf.len()));
        let n = from.read_at(&mut buf[..want], at)?;
        if n == 0 {
            break;
        }
        to.write_all_at(&buf[..n], at)?;
        at += n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
