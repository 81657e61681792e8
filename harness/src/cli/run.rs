//! `sno-harness run`: one scenario in, its run directory and an exit code out.

use std::path::{Path, PathBuf};

use sno_harness::exit;
use sno_harness::registry::run_dir;
use sno_harness::result::Verdict;
use sno_harness::run::state::{can_save, Manifest, StateMode};
use sno_harness::run::{run_scenario, RunOptions};
use sno_harness::scenario::{self, InstallMode, Scenario};

use super::error::{bad, Outcome};
use super::flags::{check_dirs, claim_dirs, interrupt_channel, out_dir, runtime, RunFlags};
use super::hand_on::HandOn;
use super::preflight::preflight;

/// Run one scenario: assets, VM, bootstrap, install, reboot, API checks; write the run
/// directory and exit 0 (passed, or failed as the scenario's [expect] says), 1 (failed),
/// 2 (bad input), 3 (host not ready) or 4 (harness error).
#[derive(clap::Args)]
pub struct RunArgs {
    /// The scenario file (TOML: docs/scenario-format.md lists its keys).
    scenario: PathBuf,
    /// Stop once bootkube is done and save the VM into DIR (a new directory): its RAM and
    /// devices (QEMU migration to a file), disks, live ISO and SSH key. Install-to-disk is
    /// held (its unit frozen) from the live boot on, so the state has it not begun. QEMU
    /// backend, disks not on NVMe.
    #[arg(long, value_name = "DIR", conflicts_with = "resume_state")]
    save_state: Option<PathBuf>,
    /// Start from the VM saved in DIR by --save-state (of the same scenario), release
    /// install-to-disk, and end once it is done: repeat the disk write without repeating
    /// the bootstrap. DIR is left as it was (the run writes into overlays).
    #[arg(long, value_name = "DIR")]
    resume_state: Option<PathBuf>,
    /// When the run passes, write the admin kubeconfig to PATH (0600), pointed at the API as
    /// the harness reached it; `$SHARED_DIR/kubeconfig` too when SHARED_DIR is set (OpenShift
    /// CI's step registry). With --keep the VM runs on, so the kubeconfig stays usable.
    #[arg(long, value_name = "PATH")]
    kubeconfig_out: Option<PathBuf>,
    /// When the run fails, stop at the verdict with the VM alive and the clocks stopped, say
    /// how to get in (ssh, console, kubeconfig), and wait for Enter, SIGUSR1 or `sno-harness
    /// resume RUN`; then gather and end as usual. Needs a terminal (refused in CI).
    #[arg(long)]
    pause_on_failure: bool,
    #[command(flatten)]
    flags: RunFlags,
}

pub fn run(a: RunArgs) -> Outcome {
    let s = scenario::overrides::load_with(&a.scenario, &a.flags.set).map_err(bad)?;
    a.flags.check()?;
    if a.pause_on_failure {
        refuse_a_pause_without_a_terminal()?;
    }
    let backend = a.flags.backend();
    let dir = out_dir(a.flags.out.clone()).join(&s.name);
    let claimed = [(dir.clone(), run_dir::RUN)];
    let hand_on = HandOn::wanted(a.kubeconfig_out.clone());
    let state = preflight(&[&s], &backend, || {
        check_dirs(&claimed, a.flags.replace)?;
        hand_on.check().map_err(bad)?;
        state_mode(&s, &a.flags, a.save_state.clone(), a.resume_state.clone()).map_err(bad)
    })?;
    // Held until the run has written its result.
    let _claim = claim_dirs(&claimed, a.flags.replace)?;
    super::flags::open_log(&dir);
    let replay = format!(
        "sno-harness run {} --keep{}",
        a.scenario.display(),
        a.flags.replay_suffix()
    );
    runtime()?.block_on(async {
        if a.pause_on_failure {
            // Before anything starts: a `resume` must never meet SIGUSR1's default (the end).
            sno_harness::run::arm_pause().map_err(super::error::harness)?;
        }
        let result = run_scenario(
            &s,
            RunOptions {
                dir: dir.clone(),
                id: s.name.clone(),
                params: Default::default(),
                keep: sno_harness::run::keeping::Keep {
                    when: a.flags.keep_when(),
                    running: sno_harness::run::keeping::RunningSlots::new(1),
                    passing_too: true,
                },
                pause_on_failure: a.pause_on_failure,
                timeout_scale: a.flags.timeout_scale,
                cache_dir: sno_harness::fixture::default_cache_dir(),
                backend,
                replay,
                interrupt: interrupt_channel(),
                progress: sno_harness::run::progress::Display::detect(),
                state,
                junit: sno_harness::report::junit::JunitOut {
                    flavour: a.flags.junit.flavour,
                    in_matrix: false,
                },
                gather: a.flags.gather(),
                kubeconfig_to: hand_on.targets(),
            },
        )
        .await;
        let code = verdict_code(&s, &result, &dir);
        // A run that failed as the scenario expects is no error to annotate.
        let annotated: &[_] = match code {
            exit::OK => &[],
            _ => std::slice::from_ref(&result),
        };
        sno_harness::report::github::publish_from_env(
            &dir.join(sno_harness::report::run_dir::SUMMARY_MD_FILE),
            annotated,
        );
        if result.verdict == Verdict::Pass {
            hand_on.warn_if_stopped(result.vm_left_running.is_some() || result.left_powered_on);
        }
        Ok(code)
    })
}

/// `--pause-on-failure` waits for the user at a terminal: without one (CI) nobody would resume
/// it, and the run would hold its VM until the pause's limit.
fn refuse_a_pause_without_a_terminal() -> Result<(), super::error::CliError> {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        return Ok(());
    }
    Err(bad(
        "--pause-on-failure waits for you at a terminal, and standard input is not one (CI, a pipe): run without it, and use --keep=on-failure to keep a failed run's VM running for later",
    ))
}

/// Says how the run ended and returns its exit code.
pub(super) fn verdict_code(
    s: &Scenario,
    result: &sno_harness::result::RunResult,
    dir: &Path,
) -> i32 {
    errln!(
        "sno-harness: {} {} in {:.0} s; {}",
        result.id,
        result.verdict.as_str(),
        result.duration_ms as f64 / 1000.0,
        sno_harness::util::lexical_absolute(&dir.join("result.json")).display()
    );
    if !result.reason.is_empty() {
        errln!("  reason: {}", result.reason);
    }
    if s.expect.is_some() {
        return match sno_harness::run::check_expectation(s, result) {
            Ok(m) => {
                errln!("  {m}");
                exit::OK
            }
            Err(m) => {
                errln!("  NOT as the scenario expects: {m}");
                exit::SCENARIO_FAILED
            }
        };
    }
    match result.verdict {
        Verdict::Pass => exit::OK,
        Verdict::Fail => exit::SCENARIO_FAILED,
        Verdict::Error => exit::HARNESS_ERROR,
    }
}

/// `--save-state` or `--resume-state` that this run cannot honour (bad input).
#[derive(Debug, thiserror::Error)]
enum StateFlagError {
    #[error("--save-state and --resume-state hold install-to-disk.service, which the assisted install of {} masks (install.mode = \"assisted\"); run it without them", scenario.display())]
    AssistedInstall { scenario: PathBuf },
    #[error("--save-state and --resume-state keep the live ISO with the VM, and {} boots from the network (boot.source = \"pxe\"), with no ISO; run it without them", scenario.display())]
    NetworkBoot { scenario: PathBuf },
    #[error("--save-state and --resume-state cannot be given together")]
    Both,
    #[error("--save-state {}: it exists; a VM state is saved into a new directory", dir.display())]
    SaveExists { dir: PathBuf },
    #[error("{flag} {}: {source}", dir.display())]
    NotAbsolute {
        flag: &'static str,
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("--resume-state: {0}")]
    Resume(#[from] sno_harness::run::state::StateError),
    #[error("--resume-state {}: the saved VM has no disk {disk:?} of {}; it was saved from {saved_from}", dir.display(), scenario.display())]
    NoSuchDisk {
        dir: PathBuf,
        disk: String,
        scenario: PathBuf,
        saved_from: String,
    },
    /// The backend or the disks cannot be saved (`run::state::can_save` says why).
    #[error("saving or resuming the VM: {0}")]
    CannotSave(#[from] sno_harness::run::state::CannotSave),
}

/// `--save-state` / `--resume-state`, checked before anything starts: the backend and disks
/// can be saved; a state is saved into a new directory; a resumed one is a complete state of
/// this scenario's disks.
fn state_mode(
    s: &Scenario,
    flags: &RunFlags,
    save: Option<PathBuf>,
    resume: Option<PathBuf>,
) -> Result<StateMode, StateFlagError> {
    let scenario = || s.path.clone();
    if s.install.mode == InstallMode::Assisted && (save.is_some() || resume.is_some()) {
        return Err(StateFlagError::AssistedInstall {
            scenario: scenario(),
        });
    }
    if s.boot_source.is_pxe() && (save.is_some() || resume.is_some()) {
        return Err(StateFlagError::NetworkBoot {
            scenario: scenario(),
        });
    }
    let absolute = |flag, dir: PathBuf| {
        std::path::absolute(&dir).map_err(|source| StateFlagError::NotAbsolute {
            flag,
            dir,
            source,
        })
    };
    let mode = match (save, resume) {
        (None, None) => return Ok(StateMode::Fresh),
        (Some(dir), None) => {
            if dir.exists() {
                return Err(StateFlagError::SaveExists { dir });
            }
            // Made absolute now: QEMU writes the state through a shell command.
            StateMode::SaveAfterBootkube(absolute("--save-state", dir)?)
        }
        (None, Some(dir)) => {
            let m = Manifest::read(&dir)?;
            if let Some(disk) = s.disks.iter().find(|d| m.disk(&dir, &d.id).is_none()) {
                return Err(StateFlagError::NoSuchDisk {
                    dir,
                    disk: disk.id.clone(),
                    scenario: scenario(),
                    saved_from: m.scenario,
                });
            }
            StateMode::ResumeInstall(absolute("--resume-state", dir)?)
        }
        (Some(_), Some(_)) => return Err(StateFlagError::Both),
    };
    can_save(&[s], &flags.backend()).map_err(StateFlagError::CannotSave)?;
    Ok(mode)
}
