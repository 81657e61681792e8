//! One run of a scenario, as named steps (`drive`: plan, assets, the VM session with its
//! observers, artifacts), from its start to its verdict and its reports. Many runs (matrices,
//! perf runs, their hosts and admission) are `fleet`'s; the registry of runs in progress, their
//! directories and the gc of dead ones are `registry`'s. Every resource a run creates is owned
//! here and released on every path.

mod api_poller;
pub mod artifacts;
pub mod assisted;
mod context;
mod drive;
mod error;
mod expect;
mod gather_step;
pub mod given;
pub mod hand_on;
pub mod installer;
mod instead;
pub mod keeping;
mod lifecycle;
pub mod multipath;
mod observers;
mod outcome;
mod pause;
pub mod plan;
mod ports;
pub mod progress;
mod registration;
mod session;
mod shown;
pub mod state;
pub mod terminal;
mod way_in;

pub use artifacts::FORWARDED_KUBECONFIG;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use crate::flow::machine::Machine;
use crate::hw::Accel;
use crate::result::RunResult;
use crate::scenario::Scenario;
use crate::vm::accel;
use crate::vm::Backend;

pub use expect::check_expectation;
pub use installer::{installer_env, installer_for};
pub use outcome::build_result;
pub use pause::arm as arm_pause;
pub use plan::{phase_timeouts, vm_name, vm_spec};

pub struct RunOptions {
    /// This run's directory (result.json and the artifacts go here).
    pub dir: PathBuf,
    pub id: String,
    pub params: BTreeMap<String, String>,
    /// What the run keeps once it ends (`--keep`), and whether it may leave its VM running
    /// for the user (`run`: one VM; a matrix: its first N failures').
    pub keep: keeping::Keep,
    /// A failed run stops at its verdict with its VM alive until the user resumes it
    /// (`run --pause-on-failure`, on a terminal).
    pub pause_on_failure: bool,
    pub timeout_scale: f64,
    pub cache_dir: PathBuf,
    pub replay: String,
    /// QEMU directly, or libvirt (`--backend libvirt [--connect URI]`).
    pub backend: Backend,
    /// Resolves when the run must stop (Ctrl-C, SIGTERM).
    pub interrupt: tokio::sync::watch::Receiver<bool>,
    /// A live status line on a terminal, or plain lines; in a matrix, the matrix's board.
    pub progress: progress::Display,
    /// The whole flow, or save the VM once bootkube is done, or resume a saved VM for
    /// install-to-disk alone.
    pub state: state::StateMode,
    /// The cases of the run's junit.xml (`--junit-flavour`), and its name (a permutation's
    /// is not junit.xml).
    pub junit: crate::report::junit::JunitOut,
    /// When the run gathers, and each collector's limit.
    pub gather: crate::gather::Settings,
    /// Where a passing run hands its admin kubeconfig on (`--kubeconfig-out`,
    /// `$SHARED_DIR/kubeconfig`): the user's explicit choices, written before the run's private
    /// directory goes.
    pub kubeconfig_to: Vec<PathBuf>,
}

/// Resolves once the run must stop; never when the sender is gone without asking.
async fn until_interrupted(rx: &mut tokio::sync::watch::Receiver<bool>) {
    loop {
        let stop = *rx.borrow_and_update();
        if stop {
            return;
        }
        if rx.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// What the state machine and the observers produced, for the result.
pub struct RunRecord {
    pub machine: Machine,
    pub started_at: SystemTime,
    pub duration: Duration,
    pub accel: Accel,
    pub accel_reason: String,
    pub artifacts: BTreeMap<String, String>,
    pub install_disk: Option<String>,
    /// The host the VM ran on, when not this one (a remote libvirtd).
    pub vm_host: Option<crate::result::HostContext>,
    /// The installer and the live ISO, once the assets were made.
    pub assets: Option<crate::result::AssetsUsed>,
    /// What a `--keep` run left running.
    pub vm_left_running: Option<crate::vm::running::LeftRunning>,
    /// How long the run was paused at its failure (left out of `duration`).
    pub paused: Duration,
    /// The root filesystem's URL the guest was given (a minimal-ISO boot).
    pub rootfs_url: Option<String>,
    /// The run's private directory: where it was, and whether it stays.
    pub private: Option<crate::result::PrivateRecord>,
    /// What the boot server refused, in words, when it refused anything.
    pub boot_server_refused: Option<String>,
}

/// The accelerator the run's timeouts and badness rules assume: this host's decision for a VM
/// the harness starts; for a machine it did not boot, the scenario's word (`vm.accel = "tcg"`
/// for one under TCG), since this host's KVM says nothing of it.
fn accelerator(s: &Scenario, backend: &Backend) -> Result<(Accel, String), accel::KvmUnusable> {
    use crate::hw::accel::AccelChoice;
    if backend.can().owned != crate::vm::backend::Owned::Nothing {
        return accel::decide(s.vm.accel).map(|d| (d.accel, d.reason));
    }
    Ok(match s.vm.accel {
        AccelChoice::Tcg => (
            Accel::Tcg,
            "the machine runs under TCG, as the scenario says (vm.accel = \"tcg\")".into(),
        ),
        _ => (
            Accel::Kvm,
            "the machine is not the harness's: timed as a real or KVM machine (vm.accel = \"tcg\" says it runs under TCG)".into(),
        ),
    })
}

/// Runs a scenario to its verdict and writes result.json. Never panics on the guest's or the
/// host's account: failures become the verdict.
pub async fn run_scenario(s: &Scenario, opts: RunOptions) -> RunResult {
    let started = Instant::now();
    let started_at = SystemTime::now();
    tracing::debug!(
        id = %opts.id,
        dir = %opts.dir.display(),
        scenario = %s.path.display(),
        backend = ?opts.backend,
        timeout_scale = opts.timeout_scale,
        "run starting"
    );
    // Lines carry the run's id: a matrix interleaves several runs' lines.
    let mut ui = progress::Progress::new(started, &opts.progress, &opts.id);
    let mut artifacts = BTreeMap::new();
    let record = |machine, accel, accel_reason, artifacts, vm_host| RunRecord {
        machine,
        started_at,
        duration: started.elapsed(),
        accel,
        accel_reason,
        artifacts,
        install_disk: s.install.install_disk_id.clone(),
        vm_host,
        assets: None,
        vm_left_running: None,
        paused: Duration::ZERO,
        rootfs_url: None,
        private: None,
        boot_server_refused: None,
    };
    // Said before anything else: what this run's verdict rests on less than a VM's would.
    let lacks = opts.backend.can().lacks();
    if !lacks.is_empty() {
        ui.line(&format!("{}: {}", opts.backend.name(), lacks.join("; ")));
    }
    // Timeouts depend on the accelerator, so the machine is made once it is known.
    let (accel, accel_reason) = match accelerator(s, &opts.backend) {
        Ok(d) => d,
        Err(e) => {
            let mut machine = plan::machine_for(s, Accel::Kvm, opts.timeout_scale, &opts.state);
            machine.start(0);
            machine.error(0, e.to_string());
            let mut rec = record(machine, Accel::Kvm, e.to_string(), artifacts, None);
            rec.install_disk = None;
            return artifacts::finish(s, &opts, rec);
        }
    };
    let mut machine = plan::machine_for(s, accel, opts.timeout_scale, &opts.state);
    if !opts.backend.can().qmp {
        machine.resets_seen_at_boot();
    }
    ui.line(&format!("accelerator {accel} ({accel_reason})"));
    let driven = drive::drive(s, &opts, machine, (started, accel), &mut artifacts, &mut ui).await;
    ui.finish();
    let mut rec = record(
        driven.machine,
        accel,
        accel_reason,
        artifacts,
        driven.vm_host,
    );
    rec.assets = driven.assets;
    rec.vm_left_running = driven.vm_left_running;
    // The pause at the failure is the user's time, not the run's.
    rec.duration = rec.duration.saturating_sub(driven.paused);
    rec.paused = driven.paused;
    rec.rootfs_url = driven.rootfs_url;
    rec.private = driven.private;
    rec.boot_server_refused = driven.boot_server_refused;
    let result = artifacts::finish(s, &opts, rec);
    artifacts::withhold_leaks(&opts, result, &driven.secrets)
}
