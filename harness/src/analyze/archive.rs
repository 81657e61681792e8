//! A gzip-compressed tar archive (an installer's log bundle), read in memory and never
//! extracted: every member is checked, the ones asked for are kept, and every bound of
//! [`Limits`] holds. A member named outside the archive (`..`, an absolute name), a link, a
//! device or a FIFO is bad input naming the member, as is a member or an archive larger than
//! its limit: a log bundle holds regular files and directories only.

use std::cell::Cell;
use std::io::Read;
use std::path::{Component, Path};
use std::rc::Rc;

use super::limits::{size, Limits};
use super::AnalyzeError;

/// A member kept: its name as the archive gives it, its bytes, its modification time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    pub bytes: Vec<u8>,
    /// Seconds since the epoch (0 when the archive gives none).
    pub mtime: u64,
}

/// What the member types of a log bundle may be, for the messages.
const VALID: &str = "a log bundle holds regular files and directories only";

/// Counts what the decompressor gives and stops past `max`, saying so through `over`.
struct Counted<R> {
    inner: R,
    read: u64,
    max: u64,
    over: Rc<Cell<bool>>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        if self.read > self.max {
            self.over.set(true);
            return Err(std::io::Error::other("decompressed past the limit"));
        }
        Ok(n)
    }
}

/// Reads the archive at `path`, keeping the members `keep` selects by name.
pub fn read(
    path: &Path,
    limits: &Limits,
    keep: impl Fn(&str) -> bool,
) -> Result<Vec<Member>, AnalyzeError> {
    let file = std::fs::File::open(path).map_err(|e| AnalyzeError::unreadable(path, e))?;
    read_from(path, file, limits, keep)
}

/// Reads a gzip-compressed tar from `input` (`path` names it in errors).
pub fn read_from(
    path: &Path,
    input: impl Read,
    limits: &Limits,
    keep: impl Fn(&str) -> bool,
) -> Result<Vec<Member>, AnalyzeError> {
    let over = Rc::new(Cell::new(false));
    let counted = Counted {
        inner: flate2::read::MultiGzDecoder::new(std::io::BufReader::new(input)),
        read: 0,
        max: limits.total_bytes,
        over: over.clone(),
    };
    let mut archive = tar::Archive::new(counted);
    let broken = |e: std::io::Error, at: &str| {
        if over.get() {
            AnalyzeError::Malformed {
                path: path.to_path_buf(),
                reason: format!(
                    "the archive decompresses to more than the limit of {} (a gzip bomb?){at}",
                    size(limits.total_bytes)
                ),
            }
        } else {
            AnalyzeError::Malformed {
                path: path.to_path_buf(),
                reason: format!("not a readable gzip-compressed tar archive{at}: {e}"),
            }
        }
    };
    let entries = archive.entries().map_err(|e| broken(e, ""))?;
    let mut kept = Vec::new();
    for (i, entry) in entries.enumerate() {
        let at = format!(" (at member {})", i + 1);
        let mut entry = entry.map_err(|e| broken(e, &at))?;
        if i >= limits.members {
            return Err(AnalyzeError::Malformed {
                path: path.to_path_buf(),
                reason: format!(
                    "the archive has more than {} members, the limit",
                    limits.members
                ),
            });
        }
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let refuse = |reason: String| AnalyzeError::Member {
            path: path.to_path_buf(),
            member: name.clone(),
            reason,
        };
        check_name(&name).map_err(&refuse)?;
        if !check_type(entry.header().entry_type(), &entry).map_err(&refuse)? {
            continue;
        }
        let declared = entry.size();
        if declared > limits.member_bytes {
            return Err(refuse(format!(
                "it declares {declared} bytes, more than the limit of {} for one member",
                size(limits.member_bytes)
            )));
        }
        if !keep(&name) {
            continue;
        }
        let mut bytes = Vec::with_capacity(declared.min(1 << 20) as usize);
        (&mut entry)
            .take(limits.member_bytes)
            .read_to_end(&mut bytes)
            .map_err(|e| broken(e, &format!(" (in member {name:?})")))?;
        let mtime = entry.header().mtime().unwrap_or(0);
        kept.push(Member { name, bytes, mtime });
    }
    Ok(kept)
}

/// A member's name must stay inside the archive: relative, without `..`.
fn check_name(name: &str) -> Result<(), String> {
    if name.starts_with('/') {
        return Err(format!(
            "an absolute name: members must be relative to the bundle ({VALID})"
        ));
    }
    if Path::new(name).components().any(|c| {
        matches!(
            c,
            Component::ParentDir | Component::RootDir | Component::Prefix(_)
        )
    }) {
        return Err(format!(
            "a name with `..`, which points outside the bundle: members must stay inside it ({VALID})"
        ));
    }
    Ok(())
}

/// Ok(true) for a regular file, Ok(false) for a directory, and why anything else is refused.
fn check_type<R: Read>(t: tar::EntryType, entry: &tar::Entry<'_, R>) -> Result<bool, String> {
    let target = || {
        entry
            .link_name_bytes()
            .map(|b| format!(" to {:?}", String::from_utf8_lossy(&b)))
            .unwrap_or_default()
    };
    let what = match t {
        tar::EntryType::Regular | tar::EntryType::Continuous => return Ok(true),
        tar::EntryType::Directory => return Ok(false),
        tar::EntryType::Symlink => format!("a symbolic link{}", target()),
        tar::EntryType::Link => format!("a hard link{}", target()),
        tar::EntryType::Char => "a character device".to_string(),
        tar::EntryType::Block => "a block device".to_string(),
        tar::EntryType::Fifo => "a FIFO".to_string(),
        other => format!("an entry of type {:?}", other.as_byte() as char),
    };
    Err(format!("{what}: {VALID}"))
}

#[cfg(test)]
mod tests;
