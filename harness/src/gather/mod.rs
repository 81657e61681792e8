//! Gather: what a failed run leaves for the reader, collected before the VM stops, into
//! `OUT/<id>/gather/` with `gather/index.json`. Each collector runs under its own guard with
//! its own time limit, so that one that fails or hangs hides none of the others (the lesson of
//! assisted-test-infra, whose one-script gathers lost everything to one hung command).
//!
//! The collectors themselves: [`guest`] (commands over SSH on the live or the installed
//! system), [`api`] (the cluster's objects as JSON), [`vm`] (screenshot, status, block
//! statistics, the definition). This module runs them and writes the index.

pub mod api;
pub mod guest;

pub mod sink;
pub mod vm;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

pub use sink::{Sink, SinkError};

/// When a run gathers (`--gather`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum When {
    #[default]
    OnFailure,
    Always,
    Never,
}

impl When {
    pub fn as_str(self) -> &'static str {
        match self {
            When::OnFailure => "on-failure",
            When::Always => "always",
            When::Never => "never",
        }
    }

    /// Whether a run with this verdict gathers.
    pub fn applies(self, passed: bool) -> bool {
        match self {
            When::OnFailure => !passed,
            When::Always => true,
            When::Never => false,
        }
    }
}

/// A `--gather` that is none of the modes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a gather mode; valid: on-failure, always, never")]
pub struct UnknownWhen(pub String);

impl std::str::FromStr for When {
    type Err = UnknownWhen;
    fn from_str(s: &str) -> Result<When, UnknownWhen> {
        [When::OnFailure, When::Always, When::Never]
            .into_iter()
            .find(|w| w.as_str() == s)
            .ok_or_else(|| UnknownWhen(s.into()))
    }
}

/// Why the guest or the API is not there to gather from (the probes of `guest` and `api`).
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// No login within the probe's time; the last attempt's error says why.
    #[error(transparent)]
    Login(#[from] Box<crate::util::wait::WaitTimeout<crate::guest::ssh::SshError>>),
    #[error(transparent)]
    Ssh(#[from] crate::guest::ssh::SshError),
    #[error(transparent)]
    Api(#[from] crate::health::HealthError),
    /// The probe's own task ended without an answer (it panicked).
    #[error("{0}")]
    Task(#[from] tokio::task::JoinError),
    #[error("no answer within {} s", .0.as_secs())]
    NoAnswer(Duration),
}

/// How a run gathers: when, and each collector's time limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    pub when: When,
    pub limit: Duration,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            when: When::OnFailure,
            limit: DEFAULT_LIMIT,
        }
    }
}

/// A collector's time limit unless `--gather-limit` says otherwise: a real node's whole
/// journal over SSH takes well under a minute.
pub const DEFAULT_LIMIT: Duration = Duration::from_secs(60);

/// Collectors running at once: enough that a hung one costs little time, few enough that a
/// 2-vCPU guest under TCG still answers the others' logins.
const AT_ONCE: usize = 3;

/// A collector's work: writes through the sink, and returns why it had nothing to collect
/// (skipped) or succeeds; an error is its failure.
pub type Work = Pin<Box<dyn Future<Output = Result<Option<String>, Failure>> + Send>>;

/// Why a collector's work did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    Failed(String),
    /// Something below the harness's guard (the guest's `timeout`) cut it at its limit.
    Cut(String),
}

impl From<String> for Failure {
    fn from(why: String) -> Failure {
        Failure::Failed(why)
    }
}

impl From<&str> for Failure {
    fn from(why: &str) -> Failure {
        Failure::Failed(why.to_string())
    }
}

pub struct Collector {
    /// Where it writes, and its name in the index: `live/journal-bootkube.service`.
    pub name: String,
    pub limit: Duration,
    pub work: Box<dyn FnOnce(Sink) -> Work + Send>,
}

impl Collector {
    pub fn new(
        name: impl Into<String>,
        limit: Duration,
        work: impl FnOnce(Sink) -> Work + Send + 'static,
    ) -> Collector {
        Collector {
            name: name.into(),
            limit,
            work: Box::new(work),
        }
    }

    /// A collector that could not start, and says why: listed as failed.
    pub fn failed(name: impl Into<String>, why: String) -> Collector {
        Collector::new(name, Duration::ZERO, move |_| {
            Box::pin(async move { Err(Failure::Failed(why)) })
        })
    }

    /// A collector that has nothing to run, and says why (the guest or the API did not
    /// answer): listed in the index like the others.
    pub fn skipped(name: impl Into<String>, why: String) -> Collector {
        Collector::new(name, Duration::ZERO, move |_| {
            Box::pin(async move { Ok(Some(why)) })
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Ok,
    Skipped,
    Failed,
    /// Cut at its limit; what it wrote by then stays.
    TimedOut,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileWritten {
    pub path: String,
    pub bytes: u64,
}

/// One collector's line in index.json.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    pub name: String,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub files: Vec<FileWritten>,
    pub ms: u64,
    pub limit_ms: u64,
}

/// gather/index.json.
#[derive(Debug, Clone, Serialize)]
pub struct Index {
    /// Why the run gathered: `on-failure` or `always`.
    pub when: String,
    pub ms: u64,
    pub bytes: u64,
    pub collectors: Vec<Entry>,
}

impl Index {
    pub fn count(&self, status: Status) -> usize {
        self.collectors
            .iter()
            .filter(|c| c.status == status)
            .count()
    }

    /// `17 collectors: 14 ok, 1 skipped, 1 failed, 1 timed out; 1.2 MiB in 23.4 s`.
    pub fn summary(&self) -> String {
        format!(
            "{} collectors: {} ok, {} skipped, {} failed, {} timed out; {:.1} MiB in {:.1} s",
            self.collectors.len(),
            self.count(Status::Ok),
            self.count(Status::Skipped),
            self.count(Status::Failed),
            self.count(Status::TimedOut),
            self.bytes as f64 / 1048576.0,
            self.ms as f64 / 1000.0
        )
    }
}

/// Runs every collector, a few at a time, each under its limit, and writes `dir/index.json`
/// (owner-only: what is gathered may be as private as the run's disks).
pub async fn run_all(dir: &Path, when: When, collectors: Vec<Collector>) -> std::io::Result<Index> {
    crate::util::private::create_dir_with_mode(dir, crate::util::private::PRIVATE_DIR)?;
    let started = Instant::now();
    let slots = Arc::new(tokio::sync::Semaphore::new(AT_ONCE));
    let mut tasks = tokio::task::JoinSet::new();
    let names: Vec<String> = collectors.iter().map(|c| c.name.clone()).collect();
    for (i, c) in collectors.into_iter().enumerate() {
        let (slots, dir) = (slots.clone(), dir.to_path_buf());
        tasks.spawn(async move {
            let _slot = slots.acquire_owned().await;
            (i, run_one(&dir, c).await)
        });
    }
    let mut entries: Vec<Option<Entry>> = vec![None; names.len()];
    while let Some(done) = tasks.join_next().await {
        if let Ok((i, e)) = done {
            entries[i] = Some(e);
        }
    }
    // A collector that panicked is a failure in the index, not a hole in it.
    let collectors: Vec<Entry> = entries
        .into_iter()
        .zip(names)
        .map(|(e, name)| e.unwrap_or_else(|| panicked(name)))
        .collect();
    let index = Index {
        when: when.as_str().into(),
        ms: started.elapsed().as_millis() as u64,
        bytes: collectors
            .iter()
            .flat_map(|c| &c.files)
            .map(|f| f.bytes)
            .sum(),
        collectors,
    };
    write_index(dir, &index)?;
    Ok(index)
}

fn panicked(name: String) -> Entry {
    Entry {
        name,
        status: Status::Failed,
        reason: Some("the collector panicked".into()),
        files: Vec::new(),
        ms: 0,
        limit_ms: 0,
    }
}

/// One collector under its guard: its limit, and a sink that takes no writes once the limit
/// has passed (blocking work cut loose may still finish later).
async fn run_one(dir: &Path, c: Collector) -> Entry {
    let sink = Sink::new(dir.to_path_buf());
    let started = Instant::now();
    let work = (c.work)(sink.clone());
    let (status, reason) = match tokio::time::timeout(c.limit, work).await {
        Ok(Ok(None)) => (Status::Ok, None),
        Ok(Ok(Some(why))) => (Status::Skipped, Some(why)),
        Ok(Err(Failure::Failed(why))) => (Status::Failed, Some(why)),
        Ok(Err(Failure::Cut(why))) => (Status::TimedOut, Some(why)),
        Err(_) => (
            Status::TimedOut,
            Some(format!("cut at its limit of {} s", c.limit.as_secs_f64())),
        ),
    };
    Entry {
        name: c.name,
        status,
        reason,
        files: sink.close(),
        ms: started.elapsed().as_millis() as u64,
        limit_ms: c.limit.as_millis() as u64,
    }
}

fn write_index(dir: &Path, index: &Index) -> std::io::Result<()> {
    let path: PathBuf = dir.join("index.json");
    let text = serde_json::to_string_pretty(index).map_err(std::io::Error::other)? + "\n";
    sink::write_private(&path, text.as_bytes())
}

#[cfg(test)]
mod tests;
