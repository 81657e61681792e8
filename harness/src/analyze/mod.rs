//! `sno-harness analyze`: judges a finished install's evidence by the run's own state machine.
//! A run directory's events.jsonl is replayed as the run saw it; other evidence (a serial
//! console log, journal exports of both boots, an installer's log bundle) becomes the signals
//! the harness's observers would have sent, replayed on the evidence's own clock. Where the
//! evidence stops before a verdict the phases after it are `no evidence`, never a timeout.
//!
//! One job a file: what kind of evidence a PATH is (`kind`), reading archives under limits
//! (`archive`, `limits`), journals (`journal`) and serial logs (`serial`), the installer's
//! service records and what its own analysis concludes of them (`records`), a log bundle's
//! layouts (`bundle`), a run directory (`run_dir`), the replay of other evidence (`replay`),
//! and the report (`report`).

pub mod archive;
pub mod bundle;
pub mod journal;
pub mod kind;
pub mod limits;
pub mod records;
pub mod replay;
pub mod report;
pub mod run_dir;
pub mod serial;

use std::path::{Path, PathBuf};

pub use limits::Limits;
pub use report::Report;

/// What analyze reads, for the messages that refuse something else.
pub const VALID_EVIDENCE: &str = "a run directory (with events.jsonl), an installer's log bundle (.tar.gz, either layout), a journal export (`journalctl -o export` or `-o json`, optionally gzipped), a `journalctl -o short` file named after its unit, or a serial console log";

/// Why the evidence cannot be analysed: bad input, exit 2.
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    #[error("{}: {reason}", path.display())]
    Unreadable { path: PathBuf, reason: String },
    /// An archive member that a log bundle cannot hold, or too large.
    #[error("{}: member {member:?}: {reason}", path.display())]
    Member {
        path: PathBuf,
        member: String,
        reason: String,
    },
    /// A file whose records are not of its format (the reason names the line or offset).
    #[error("{}: {reason}", path.display())]
    Malformed { path: PathBuf, reason: String },
    #[error("{}: {reason}; analyze reads {VALID_EVIDENCE}", path.display())]
    UnknownKind { path: PathBuf, reason: String },
    /// PATHs that cannot be analysed together.
    #[error("{0}")]
    Usage(String),
}

impl AnalyzeError {
    pub fn unreadable(path: &Path, e: impl std::fmt::Display) -> AnalyzeError {
        AnalyzeError::Unreadable {
            path: path.to_path_buf(),
            reason: e.to_string(),
        }
    }

    pub fn malformed(path: &Path, reason: impl Into<String>) -> AnalyzeError {
        AnalyzeError::Malformed {
            path: path.to_path_buf(),
            reason: reason.into(),
        }
    }
}

/// How to analyse.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The scenario the run directory's run ran (else the one its result.json names).
    pub scenario: Option<PathBuf>,
    pub limits: Limits,
}

/// Judges the evidence at `paths`: one run directory alone, or any number of other pieces of
/// evidence of one install, judged together on their clocks.
pub fn analyze(paths: &[PathBuf], opts: &Options) -> Result<Report, AnalyzeError> {
    let kinds = paths
        .iter()
        .map(|p| kind::detect(p).map(|k| (p.clone(), k)))
        .collect::<Result<Vec<_>, _>>()?;
    let run_dirs: Vec<&PathBuf> = kinds
        .iter()
        .filter(|(_, k)| matches!(k, kind::Kind::RunDir))
        .map(|(p, _)| p)
        .collect();
    match (run_dirs.as_slice(), kinds.len()) {
        ([dir], 1) => run_dir::analyze(dir, opts),
        ([], 0) => Err(AnalyzeError::Usage(
            "no evidence given: name at least one PATH".into(),
        )),
        ([], _) => replay::analyze(&kinds, opts),
        (dirs, _) => Err(AnalyzeError::Usage(format!(
            "a run directory is analysed alone (its events.jsonl holds all its evidence): got {} with {} other PATH(s); analyze {} by itself",
            dirs.len(),
            kinds.len() - dirs.len(),
            dirs[0].display()
        ))),
    }
}
