//! Where a collector writes: files under the gather directory, by names the harness made (a
//! name from the guest or the API is checked first, see [`safe_component`]), owner-only, and
//! recorded as they are written, so that the index lists what a collector cut at its limit
//! left.

use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::FileWritten;
use crate::util::private::{create_dir_with_mode, PRIVATE_DIR, PRIVATE_FILE};

/// Why a collector's file was not written.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    /// Work the guard cut loose wrote after the collector's limit.
    #[error("the collector's time is up")]
    TimeUp,
    /// A name that would leave the gather directory, or is none.
    #[error("{0:?} is not a plain relative path")]
    NotAPlainPath(String),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl From<SinkError> for super::Failure {
    fn from(e: SinkError) -> super::Failure {
        super::Failure::Failed(e.to_string())
    }
}

#[derive(Clone)]
pub struct Sink {
    dir: PathBuf,
    /// None once closed: a late write of work cut loose is dropped.
    written: Arc<Mutex<Option<Vec<FileWritten>>>>,
}

impl Sink {
    pub fn new(dir: PathBuf) -> Sink {
        Sink {
            dir,
            written: Arc::new(Mutex::new(Some(Vec::new()))),
        }
    }

    /// Writes `rel` (a relative path of plain components) with `bytes`.
    pub fn write(&self, rel: &str, bytes: &[u8]) -> Result<(), SinkError> {
        let mut guard = self.written.lock().unwrap_or_else(|e| e.into_inner());
        let Some(written) = guard.as_mut() else {
            return Err(SinkError::TimeUp);
        };
        let rel_path = Path::new(rel);
        if rel.is_empty()
            || !rel_path
                .components()
                .all(|c| matches!(c, Component::Normal(_)))
        {
            return Err(SinkError::NotAPlainPath(rel.into()));
        }
        let path = self.dir.join(rel_path);
        let io = |at: &Path| {
            let path = at.to_path_buf();
            move |source| SinkError::Io { path, source }
        };
        if let Some(parent) = path.parent() {
            create_dirs(&self.dir, parent).map_err(io(parent))?;
        }
        write_private(&path, bytes).map_err(io(&path))?;
        written.push(FileWritten {
            path: rel.to_string(),
            bytes: bytes.len() as u64,
        });
        Ok(())
    }

    /// Stops taking writes; returns what was written.
    pub fn close(&self) -> Vec<FileWritten> {
        let mut guard = self.written.lock().unwrap_or_else(|e| e.into_inner());
        guard.take().unwrap_or_default()
    }
}

/// The directories from `root` down to `dir`, each owner-only.
fn create_dirs(root: &Path, dir: &Path) -> std::io::Result<()> {
    let Ok(rest) = dir.strip_prefix(root) else {
        return Ok(());
    };
    let mut at = root.to_path_buf();
    for c in rest.components() {
        at.push(c);
        create_dir_with_mode(&at, PRIVATE_DIR)?;
    }
    Ok(())
}

/// A new file (never through a link planted where it goes), 0600.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let _ = fs::remove_file(path);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(PRIVATE_FILE)
        .open(path)?;
    f.write_all(bytes)
}

/// A name from outside (a namespace the API listed) as one file-name component: a
/// Kubernetes DNS label, which is what a namespace must be; anything else is refused.
pub fn safe_component(name: &str) -> Option<&str> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    ok.then_some(name)
}
