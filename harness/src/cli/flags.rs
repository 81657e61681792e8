//! What `run`, `matrix` and `perf` share: their flags, the output directory, the interrupt
//! handling, the runtime, and the replay commands they print.

use std::path::{Path, PathBuf};

use sno_harness::fleet::job::RunSettings;
use sno_harness::registry::run_dir::{self, Claim, ClaimError, DirKind};
use sno_harness::report::junit::JunitFlavour;
use sno_harness::vm::backend::BackendError;
use sno_harness::vm::Backend;

use super::error::{bad, harness, CliError};

/// `--out`, else `$ARTIFACT_DIR` (OpenShift CI), else `runs/<timestamp>`.
pub fn out_dir(out: Option<PathBuf>) -> PathBuf {
    out.or_else(|| {
        std::env::var_os("ARTIFACT_DIR")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    })
    .unwrap_or_else(|| {
        let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
            .to_string()
            .replace(':', "");
        PathBuf::from("runs").join(stamp)
    })
}

/// `--shard K/N` and how the plan is split, as `plan`, `matrix` and `perf` take them.
#[derive(clap::Args)]
pub struct ShardFlags {
    /// A matrix only: shard K of N of the (filtered) plan. The same slice on every machine;
    /// `report --merge` joins the shards' run directories.
    #[arg(long, value_name = "K/N")]
    shard: Option<sno_harness::scenario::matrix::Shard>,
    /// How `--shard` splits the plan: `order` deals the permutations in plan order (shard
    /// sizes differ by at most one), `hash` by a hash of each permutation id (independent
    /// of the plan's order, but uneven on a small plan).
    #[arg(long, value_enum, default_value_t, requires = "shard")]
    shard_by: sno_harness::scenario::matrix::ShardBy,
}

impl ShardFlags {
    /// The shard asked for, split as asked.
    pub fn get(&self) -> Option<sno_harness::scenario::matrix::Shard> {
        self.shard.map(|s| s.split_by(self.shard_by))
    }
}

/// The flags `run`, `matrix` and `perf` share.
#[derive(clap::Args)]
pub struct RunFlags {
    /// Output directory [default: $ARTIFACT_DIR, else runs/<timestamp>]
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// What a run keeps once it ends: `--keep=on-failure`, `--keep=always` (also `--keep`
    /// alone) or `--keep=never` (the default). A kept run keeps its private directory, outside
    /// --out ($SNO_HARNESS_PRIVATE_DIR/ID-RANDOM, else under $SNO_HARNESS_STATE_DIR/private or
    /// /var/tmp/sno-harness-UID): the disks, the live ISO or network boot files, and the
    /// secrets (installer assets, SSH key, kubeconfig). A kept `run` on QEMU or a local
    /// libvirt leaves its VM running until `sno-harness gc` and says how to get in (a matrix:
    /// its first failures', `--keep-running`); else it prints how to boot the disks again.
    #[arg(
        long,
        value_name = "WHEN",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "always",
        value_parser = keep_when
    )]
    pub keep: Option<sno_harness::run::keeping::KeepWhen>,
    /// Remove a previous run from the run directory (its disks, live ISO, timeline, result)
    /// instead of refusing the directory; never one that another run holds.
    #[arg(long)]
    pub replace: bool,
    /// Multiply every phase timeout: a positive number, at most 1000.
    // Negative numbers reach the parser, which names the flag in its refusal.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true, value_parser = timeout_scale)]
    pub timeout_scale: f64,
    /// Who starts the VMs: `qemu` (the harness itself), `libvirt` (transient domains) or
    /// `redfish` (a machine booted through its BMC: --bmc, --ssh, --api). [default: qemu]
    #[arg(long, value_parser = sno_harness::vm::backend::NAMES)]
    pub backend: Option<String>,
    /// The libvirt URI for `--backend libvirt` [default: qemu:///system]; `matrix` takes it
    /// more than once, to spread its permutations over those hosts (not two of one daemon).
    /// Parameters: keyfile, no_verify, no_tty, mode, proxy over qemu+ssh; mode, socket here.
    #[arg(long, value_name = "URI")]
    pub connect: Vec<String>,
    #[command(flatten)]
    pub bmc: super::bmc_flags::BmcFlags,
    #[command(flatten)]
    pub junit: JunitFlag,
    /// When a run collects the guest's, the API's and the VM's evidence into
    /// `<run>/gather/` before the VM stops: `on-failure`, `always` or `never`.
    #[arg(long, value_name = "WHEN", default_value = "on-failure", value_parser = gather_when)]
    pub gather: sno_harness::gather::When,
    /// Each gather collector's time limit (the whole journal gets twice this), e.g. `60s`.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = gather_limit)]
    pub gather_limit: std::time::Duration,
    /// Change a scenario key without editing the file, e.g. `--set vm.memory=24GiB` or
    /// `--set openshift.release_image=quay.io/...` (a matrix axis's dotted key; again for
    /// more); checked as the file is, and recorded in result.json. On a matrix, its base's key
    /// in every permutation (not a key an axis sets).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<sno_harness::scenario::overrides::Override>,
}

/// A `--timeout-scale` that cannot be one.
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not a positive number at most 1000 (a phase deadline is at most a week whatever the scale)")]
pub(super) struct TimeoutScaleError(String);

/// A finite scale above 0, at most 1000 (a scaled deadline must fit a `Duration`).
pub(super) fn timeout_scale(s: &str) -> Result<f64, TimeoutScaleError> {
    match s.trim().parse::<f64>() {
        Ok(f) if f.is_finite() && f > 0.0 && f <= 1000.0 => Ok(f),
        _ => Err(TimeoutScaleError(s.into())),
    }
}

pub(super) fn keep_when(
    s: &str,
) -> Result<sno_harness::run::keeping::KeepWhen, sno_harness::run::keeping::UnknownKeep> {
    s.parse()
}

pub(super) fn gather_when(
    s: &str,
) -> Result<sno_harness::gather::When, sno_harness::gather::UnknownWhen> {
    s.parse()
}

/// A `--gather-limit` that cannot be one.
#[derive(Debug, thiserror::Error)]
pub(super) enum GatherLimitError {
    #[error("{given:?} is not a duration such as 30s or 2m ({source})")]
    NotADuration {
        given: String,
        #[source]
        source: humantime::DurationError,
    },
    #[error("{0:?}: a collector's limit is from 1s to 1h")]
    OutOfRange(String),
}

/// A limit from 1 s to 1 h, in the scenario files' duration forms.
pub(super) fn gather_limit(s: &str) -> Result<std::time::Duration, GatherLimitError> {
    let d = humantime::parse_duration(s).map_err(|source| GatherLimitError::NotADuration {
        given: s.into(),
        source,
    })?;
    if d < std::time::Duration::from_secs(1) || d > std::time::Duration::from_secs(3600) {
        return Err(GatherLimitError::OutOfRange(s.into()));
    }
    Ok(d)
}

impl RunFlags {
    /// How each run gathers.
    pub fn gather(&self) -> sno_harness::gather::Settings {
        sno_harness::gather::Settings {
            when: self.gather,
            limit: self.gather_limit,
        }
    }
}

/// `--junit-flavour`, wherever junit.xml is written (`run`, `matrix`, `perf`, `report`).
#[derive(clap::Args)]
pub struct JunitFlag {
    /// The cases of junit.xml: `harness` (one per phase) or `openshift` (OpenShift CI's
    /// install steps, in a suite named `cluster install`; docs/architecture.md "junit.xml").
    #[arg(long = "junit-flavour", value_name = "FLAVOUR", default_value = "harness", value_parser = junit_flavour)]
    pub flavour: JunitFlavour,
}

fn junit_flavour(s: &str) -> Result<JunitFlavour, sno_harness::report::junit::UnknownFlavour> {
    s.parse()
}

impl RunFlags {
    /// The backend of a command that runs on one host: the first `--connect` (`check` refuses
    /// more).
    pub fn backend(&self) -> Backend {
        self.backends().swap_remove(0)
    }

    /// `--backend`, or its default.
    pub fn backend_name(&self) -> &str {
        self.backend.as_deref().unwrap_or("qemu")
    }

    /// One backend per `--connect` (at least one). The flags were checked (`check_hosts`):
    /// clap takes only backend names and `--connect` only with libvirt.
    pub fn backends(&self) -> Vec<Backend> {
        if let Ok(Some(machine)) = self.bmc.machine(self.backend_name()) {
            return vec![Backend::redfish(machine)];
        }
        Backend::from_flags(self.backend_name(), &self.connect)
            .unwrap_or_else(|_| vec![Backend::default()])
    }

    /// The settings of every run of a matrix or perf run.
    /// When the runs keep what they made (`--keep`; never when not given).
    pub fn keep_when(&self) -> sno_harness::run::keeping::KeepWhen {
        self.keep.unwrap_or_default()
    }

    /// The settings of every run of a matrix or perf run; `running` is how many of their VMs
    /// may be left running (their first failures').
    pub fn settings(
        &self,
        interrupt: tokio::sync::watch::Receiver<bool>,
        running: usize,
    ) -> RunSettings {
        RunSettings {
            keep: sno_harness::run::keeping::Keep {
                when: self.keep_when(),
                running: sno_harness::run::keeping::RunningSlots::new(running),
                passing_too: false,
            },
            timeout_scale: self.timeout_scale,
            cache_dir: sno_harness::fixture::default_cache_dir(),
            backend: self.backend(),
            interrupt,
            progress: sno_harness::run::terminal::Mode::detect(),
            junit: self.junit.flavour,
            gather: self.gather(),
        }
    }

    /// The flags a replay command must repeat to run the same way.
    pub fn replay_suffix(&self) -> String {
        self.backend().replay_flags() + &self.set_flags()
    }

    /// `--set` as a replay command repeats it, shell-quoted.
    pub fn set_flags(&self) -> String {
        self.set
            .iter()
            .map(|o| format!(" --set '{}'", o.given.replace('\'', r"'\''")))
            .collect()
    }

    /// Refuses flag values that cannot be used, before anything is made, for a command that
    /// runs on one host.
    pub fn check(&self) -> Result<(), CliError> {
        if self.connect.len() > 1 {
            return Err(bad(format!(
                "--connect is given {} times; only `matrix` spreads its runs over several hosts",
                self.connect.len()
            )));
        }
        self.check_hosts()
    }

    /// `check` without the one-host rule: `matrix` takes several `--connect`.
    pub fn check_hosts(&self) -> Result<(), CliError> {
        // A machine booted through its BMC is named by flags of its own, on no libvirt host.
        if self.bmc.machine(self.backend_name())?.is_some() {
            return match self.connect.is_empty() {
                true => Ok(()),
                false => Err(bad(
                    "--connect names a libvirt host: --backend redfish boots the machine --bmc names, on no libvirt host; leave --connect out",
                )),
            };
        }
        // The URI a libvirt run connects to, with the transports it can use: refused here,
        // not once the run directory exists.
        if let Err(e) = Backend::from_flags(self.backend_name(), &self.connect) {
            return Err(bad(match e {
                BackendError::ConnectWithoutLibvirt => {
                    "--connect names a libvirt host: give --backend libvirt with it".to_string()
                }
                e => e.to_string(),
            }));
        }
        check_connect(&self.connect)
    }
}

/// `--connect` URIs: each one the harness can use without libvirt running a program of the
/// URI's choosing, and no two of one daemon (each would get its own share of jobs).
pub fn check_connect(uris: &[String]) -> Result<(), CliError> {
    use sno_harness::vm::libvirt::remote::daemon;
    let mut seen: Vec<(&String, _)> = Vec::new();
    for uri in uris {
        let d = daemon(uri).map_err(|e| bad(format!("--connect: {e}")))?;
        match seen.iter().find(|(_, s)| *s == d) {
            Some((first, _)) if *first == uri => {
                return Err(bad(format!("--connect {uri} is given twice")))
            }
            Some((first, _)) => {
                return Err(bad(format!(
                    "--connect {first} and --connect {uri} reach the same libvirt daemon ({d}): give each host once"
                )))
            }
            None => seen.push((uri, d)),
        }
    }
    Ok(())
}

/// A directory refused (bad input: another `--out`, or `--replace`) or that could not be
/// claimed (the host failed).
fn claim_failed(e: ClaimError) -> CliError {
    if e.is_refusal() {
        bad(e)
    } else {
        harness(e)
    }
}

/// Starts the harness's log in `dir` (a run's directory, or a matrix's or perf run's `--out`):
/// a log that cannot be made is said, and the run goes on without it.
pub fn open_log(dir: &Path) {
    if let Err(e) = sno_harness::util::harness_log::open_in(dir) {
        errln!("sno-harness: no harness log: {e}");
    }
}

/// Refuses any of `dirs` that another run holds or that holds a previous run (unless
/// `--replace`); touches none. For the preflight: before the host is looked at.
pub fn check_dirs(dirs: &[(PathBuf, DirKind)], replace: bool) -> Result<(), CliError> {
    dirs.iter()
        .try_for_each(|(d, kind)| run_dir::check(d, *kind, replace))
        .map_err(claim_failed)
}

/// Claims all of `dirs` for the command's runs (held until the claims are dropped), or none.
pub fn claim_dirs(dirs: &[(PathBuf, DirKind)], replace: bool) -> Result<Vec<Claim>, CliError> {
    run_dir::claim_all(dirs, replace).map_err(claim_failed)
}

/// The runtime the runs go on.
pub fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Runtime::new().map_err(harness)
}

/// SIGINT or SIGTERM sets the channel (runs stop and write `interrupted`); a second one exits
/// at once, and QEMU dies with us through its parent-death signal. Call inside the runtime.
pub fn interrupt_channel() -> tokio::sync::watch::Receiver<bool> {
    let (tx, rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut int), Ok(mut term)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            return;
        };
        tokio::select! { _ = int.recv() => {}, _ = term.recv() => {} }
        errln!("sno-harness: interrupted; stopping (press Ctrl-C again to force)");
        // First the flag, so that a run whose helper dies next knows why; then the helpers (a
        // fixture build, the installer, coreos-installer) stop, off the async threads: stopping
        // them may wait out their grace period.
        let _ = tx.send(true);
        let _ = tokio::task::spawn_blocking(sno_harness::util::children::kill_all).await;
        tokio::select! { _ = int.recv() => {}, _ = term.recv() => {} }
        sno_harness::util::children::kill_all();
        // A --keep run's VM has no parent-death signal (QEMU) or auto-destroy (libvirt); it is
        // the user's only once its run handed it on.
        sno_harness::vm::end_outliving_vms();
        std::process::exit(130);
    });
    rx
}

/// The command that replays one permutation of a matrix, kept for inspection (`--keep`),
/// without the backend's flags: they name the host the permutation went to.
pub fn matrix_replay(path: &Path, strategy: &str, id: &str) -> String {
    format!(
        "sno-harness matrix {} --strategy {strategy} --filter {id} --keep",
        path.display(),
    )
}

/// Writes a document (a report, a `--json FILE`) at `path` whole or not at all, following no
/// link planted beside it (util/replace_file.rs); the error names the path.
pub fn write_atomically(
    path: &Path,
    text: &str,
) -> Result<(), sno_harness::util::replace_file::WriteError> {
    use sno_harness::util::replace_file::{replace_file, PUBLIC_FILE};
    replace_file(path, text.as_bytes(), PUBLIC_FILE)
}

/// How many runs ended as their scenario expects, and how the others count: a harness error
/// of a scenario that expects nothing is an error; everything else is unexpected.
#[derive(Default)]
pub struct Tally {
    pub unexpected: usize,
    pub errors: usize,
}

impl Tally {
    /// Counts one run; `Err` when it did not end as expected, with why.
    pub fn count(
        &mut self,
        s: &sno_harness::scenario::Scenario,
        r: &sno_harness::result::RunResult,
    ) -> Result<(), String> {
        let checked = sno_harness::run::check_expectation(s, r).map(drop);
        if checked.is_err() {
            if r.verdict == sno_harness::result::Verdict::Error && s.expect.is_none() {
                self.errors += 1;
            } else {
                self.unexpected += 1;
            }
        }
        checked
    }

    /// The exit code: 1 when one ended unexpectedly, 4 for errors (or `also_error`), else 0.
    pub fn code(&self, also_error: bool) -> i32 {
        if self.unexpected > 0 {
            sno_harness::exit::SCENARIO_FAILED
        } else if self.errors > 0 || also_error {
            sno_harness::exit::HARNESS_ERROR
        } else {
            sno_harness::exit::OK
        }
    }
}
