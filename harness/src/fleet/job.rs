//! What the matrix runner and the perf runner share: the job (one permutation, or a single
//! scenario named after itself) and the settings every run of theirs gets.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::SystemTime;

use crate::result::RunResult;
use crate::run::progress::Display;
use crate::run::state::StateMode;
use crate::run::terminal::Mode;
use crate::run::RunOptions;
use crate::scenario::Scenario;
use crate::vm::Backend;

/// One permutation to run.
#[derive(Debug, Clone)]
pub struct Job {
    pub id: String,
    /// Axis key -> value label, for result.json's `params`.
    pub params: BTreeMap<String, String>,
    pub scenario: Scenario,
    /// The command that runs this permutation alone.
    pub replay: String,
}

/// How every run of a matrix or a perf run goes.
#[derive(Clone)]
pub struct RunSettings {
    /// What the runs keep, and the VMs their first failures may leave running.
    pub keep: crate::run::keeping::Keep,
    pub timeout_scale: f64,
    pub cache_dir: PathBuf,
    pub backend: Backend,
    pub interrupt: tokio::sync::watch::Receiver<bool>,
    /// On a terminal: one live display; elsewhere plain lines.
    pub progress: Mode,
    /// The cases of each run's junit.xml (`--junit-flavour`).
    pub junit: crate::report::junit::JunitFlavour,
    /// When each run gathers, and each collector's limit (`--gather`, `--gather-limit`).
    pub gather: crate::gather::Settings,
}

impl RunSettings {
    /// The options of one run of `job` into `dir`.
    pub fn run_options(
        &self,
        job: &Job,
        dir: PathBuf,
        progress: Display,
        state: StateMode,
    ) -> RunOptions {
        RunOptions {
            dir,
            id: job.id.clone(),
            params: job.params.clone(),
            keep: self.keep.clone(),
            pause_on_failure: false,
            timeout_scale: self.timeout_scale,
            cache_dir: self.cache_dir.clone(),
            replay: job.replay.clone(),
            backend: self.backend.clone(),
            interrupt: self.interrupt.clone(),
            progress,
            state,
            // A perf run's runs have no merged junit.xml above them: each keeps its own. The
            // matrix runner says when its permutations' are in `OUT/junit.xml`.
            junit: crate::report::junit::JunitOut {
                flavour: self.junit,
                in_matrix: false,
            },
            gather: self.gather,
            kubeconfig_to: Vec::new(),
        }
    }
}

impl Job {
    /// The result of a run of this job that never started: verdict error, saying why.
    pub fn not_started(&self, why: &str) -> RunResult {
        let mut r = RunResult::unreached_error(&self.id, why);
        r.scenario = self.scenario.path.display().to_string();
        r.params = self.params.clone();
        r.profile = self.scenario.profile.name().to_string();
        r.replay = self.replay.clone();
        r.started_at = crate::result::rfc3339(SystemTime::now());
        r
    }
}
