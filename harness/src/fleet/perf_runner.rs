//! Running a perf plan: each permutation's warmups, then its measured runs, strictly one run
//! at a time (two VMs at once would measure each other), into `OUT/<id>/warmup-<k>/` and
//! `OUT/<id>/run-<i>/`.

use std::path::PathBuf;

use super::job::{Job, RunSettings};
use crate::perf::model::{InstallDisk, PerfRun, PermutationRuns, RunKind};
use crate::result::Verdict;
use crate::run::progress::Display;
use crate::run::state::StateMode;
use crate::run::{check_expectation, run_scenario};

pub struct PerfOptions {
    pub out: PathBuf,
    /// Measured runs per permutation (at least 1).
    pub repeat: u32,
    /// Warmup runs per permutation, before the measured ones.
    pub warmup: u32,
    pub settings: RunSettings,
    /// Bootstrap each permutation once, save the VM when bootkube is done, and make every
    /// warmup and measured run resume it for install-to-disk alone (see run/state.rs).
    pub disk_write_only: bool,
}

/// What ran.
#[derive(Debug, Clone)]
pub struct PerfRuns {
    /// In the jobs' order; a permutation the interrupt came before is absent.
    pub permutations: Vec<PermutationRuns>,
    /// Ctrl-C or SIGTERM: the run under way stopped with verdict error, the rest never began.
    pub interrupted: bool,
}

/// The runs of a permutation, in order: warmups (kind, index), then the measured ones.
pub fn schedule(warmup: u32, repeat: u32) -> Vec<(RunKind, u32)> {
    (0..warmup)
        .map(|k| (RunKind::Warmup, k))
        .chain((0..repeat).map(|i| (RunKind::Measured, i)))
        .collect()
}

/// Runs every job's warmups and measured runs, one run at a time; `after_each` sees the
/// results so far after every run (to keep perf.json current should the harness be killed).
pub async fn run_perf(
    jobs: &[Job],
    opts: PerfOptions,
    mut after_each: impl FnMut(&[PermutationRuns]),
) -> PerfRuns {
    let mut done: Vec<PermutationRuns> = Vec::new();
    let mut plan = schedule(opts.warmup, opts.repeat);
    if opts.disk_write_only {
        plan.insert(0, (RunKind::SaveState, 0));
    }
    let total = jobs.len() * plan.len();
    let mut n = 0;
    'jobs: for job in jobs {
        // The saved VM (disks, RAM, live ISO, the guest's key and kubeconfig: GiBs and
        // secrets) lives in a private directory of its own, outside --out, and goes when the
        // permutation is done, on every way out, unless --keep.
        let state = match SavedState::new(&job.id, opts.settings.keep.when.may_keep()) {
            Ok(s) => s,
            Err(e) => {
                let why = format!("no private directory for the saved VM state: {e}");
                done.push(PermutationRuns {
                    id: job.id.clone(),
                    params: job.params.clone(),
                    install_disk: InstallDisk::of(&job.scenario),
                    runs: vec![PerfRun {
                        kind: RunKind::SaveState,
                        index: 0,
                        dir: format!("{}/{}", job.id, RunKind::SaveState.dir_name(0)),
                        result: job.not_started(&why),
                        as_expected: false,
                        load_1m: None,
                        other_vms: Vec::new(),
                    }],
                });
                after_each(&done);
                continue;
            }
        };
        let mut unsaved: Option<String> = None;
        for &(kind, index) in &plan {
            if *opts.settings.interrupt.borrow() {
                break 'jobs;
            }
            if done.last().is_none_or(|p| p.id != job.id) {
                done.push(PermutationRuns {
                    id: job.id.clone(),
                    params: job.params.clone(),
                    install_disk: InstallDisk::of(&job.scenario),
                    runs: Vec::new(),
                });
            }
            n += 1;
            let mode = match (opts.disk_write_only, kind) {
                (false, _) => StateMode::Fresh,
                (true, RunKind::SaveState) => StateMode::SaveAfterBootkube(state.dir.clone()),
                (true, _) => StateMode::ResumeInstall(state.dir.clone()),
            };
            let run = match (&mode, &unsaved) {
                (StateMode::ResumeInstall(_), Some(why)) => {
                    let rel = format!("{}/{}", job.id, kind.dir_name(index));
                    PerfRun {
                        kind,
                        index,
                        dir: rel,
                        result: job.not_started(&format!("not run: {why}")),
                        as_expected: false,
                        load_1m: None,
                        other_vms: Vec::new(),
                    }
                }
                _ => one_run(job, &opts, kind, index, mode, (n, total)).await,
            };
            if kind == RunKind::SaveState && run.result.verdict != Verdict::Pass {
                unsaved = Some(format!(
                    "the save run ({}) saved no VM state: {}",
                    run.dir, run.result.reason
                ));
            }
            done.last_mut().expect("pushed above").runs.push(run);
            after_each(&done);
        }
    }
    let interrupted = *opts.settings.interrupt.borrow();
    PerfRuns {
        permutations: done,
        interrupted,
    }
}

/// The state directory of a permutation's saved VM, in its private directory.
pub const STATE_DIR: &str = "state";

/// A permutation's saved VM, in a private directory of its own (see `private_dir`), removed
/// when dropped unless kept.
struct SavedState {
    dir: PathBuf,
    _private: crate::registry::private_dir::PrivateDir,
}

impl SavedState {
    fn new(
        job_id: &str,
        keep: bool,
    ) -> Result<SavedState, crate::registry::private_dir::PrivateDirError> {
        let mut private = crate::registry::private_dir::PrivateDir::create(
            &format!("{job_id}-saved"),
            crate::util::private::DirAccess::OwnerOnly,
        )?;
        if keep {
            private.keep();
        }
        Ok(SavedState {
            dir: private.path().join(STATE_DIR),
            _private: private,
        })
    }
}

/// Runs one of a permutation's runs into `OUT/<id>/<kind>-<index>`.
async fn one_run(
    job: &Job,
    opts: &PerfOptions,
    kind: RunKind,
    index: u32,
    state: StateMode,
    (n, total): (usize, usize),
) -> PerfRun {
    let name = kind.dir_name(index);
    let rel = format!("{}/{name}", job.id);
    let dir = opts.out.join(&job.id).join(&name);
    let load_1m = load_average();
    let other_vms = other_vms();
    errln!(
        "sno-harness: perf {rel} ({n} of {total}){}",
        if other_vms.is_empty() {
            String::new()
        } else {
            format!(
                "; WARNING: other VMs run on this host: {}",
                other_vms.join(", ")
            )
        }
    );
    let result = match std::fs::create_dir_all(&dir) {
        Ok(()) => {
            let progress = Display::from(opts.settings.progress);
            run_scenario(
                &job.scenario,
                opts.settings.run_options(job, dir.clone(), progress, state),
            )
            .await
        }
        Err(e) => job.not_started(&format!("creating {}: {e}", dir.display())),
    };
    let as_expected = check_expectation(&job.scenario, &result);
    errln!(
        "sno-harness: perf {rel}: {} in {:.0} s{}",
        result.verdict,
        result.duration_ms as f64 / 1000.0,
        match (&as_expected, result.reason.is_empty()) {
            (Ok(_), true) => String::new(),
            (Ok(m), false) => format!("; {m}"),
            (Err(m), _) => format!("; NOT as expected: {m}"),
        }
    );
    PerfRun {
        kind,
        index,
        dir: rel,
        result,
        as_expected: as_expected.is_ok(),
        load_1m,
        other_vms,
    }
}

/// The 1-minute load average.
fn load_average() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    parse_loadavg(&text)
}

fn parse_loadavg(text: &str) -> Option<f64> {
    text.split_whitespace()
        .next()?
        .parse()
        .ok()
        .filter(|l: &f64| l.is_finite())
}

/// QEMU processes on this host (`qemu-system-x86 (pid N)`): called between runs, when this
/// harness has none, so each is someone else's VM competing for the CPUs and the disk.
fn other_vms() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found: Vec<(u32, String)> = dir
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
            let comm = comm.trim();
            comm.starts_with("qemu-system")
                .then(|| (pid, comm.to_string()))
        })
        .collect();
    found.sort();
    found
        .into_iter()
        .map(|(pid, comm)| format!("{comm} (pid {pid})"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warmups_come_first_and_indices_start_at_zero() {
        assert_eq!(
            schedule(1, 2),
            [
                (RunKind::Warmup, 0),
                (RunKind::Measured, 0),
                (RunKind::Measured, 1)
            ]
        );
        assert_eq!(schedule(0, 1), [(RunKind::Measured, 0)]);
        assert_eq!(RunKind::Warmup.dir_name(0), "warmup-0");
        assert_eq!(RunKind::Measured.dir_name(3), "run-3");
    }

    #[test]
    fn load_average_first_field() {
        assert_eq!(parse_loadavg("1.43 1.78 2.55 3/412 8510\n"), Some(1.43));
        assert_eq!(parse_loadavg(""), None);
        assert_eq!(parse_loadavg("NaN 1 1"), None);
        assert!(load_average().is_some());
    }
}
