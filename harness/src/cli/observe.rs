//! `sno-harness observe`: a run whose machine the harness did not boot and does not own.

use std::path::{Path, PathBuf};

use sno_harness::registry::run_dir;
use sno_harness::report::junit::JunitFlavour;
use sno_harness::run::state::StateMode;
use sno_harness::run::{run_scenario, RunOptions};
use sno_harness::scenario::{self, InstallMode, Scenario};
use sno_harness::vm::Backend;

use super::error::{bad, Outcome};
use super::flags::{check_dirs, claim_dirs, interrupt_channel, out_dir, runtime, JunitFlag};
use super::observe_inputs as inputs;

/// The smoke scenario, built in: what `observe` expects without a scenario (a pass).
const SMOKE: &str = include_str!("../../../scenarios/smoke.toml");

/// Follow a machine the harness did not boot (booted by a BMC, another tool, a person) from its
/// live system to the settled cluster: the same phases, timeline, verdict, reports and gather
/// as `run`, from what SSH, the journal, the API and a console (if given) show. Without the
/// VM's own signals: no QMP (a reboot is a new boot id over SSH), no disk counters (the write
/// is read from coreos-installer's progress lines), no screenshots; the run says so up front.
/// The key and the kubeconfig are kept in the run's private directory, never under --out.
/// Exit codes as `run`'s.
#[derive(clap::Args)]
pub struct ObserveArgs {
    /// The scenario whose expectations, timeouts and checks apply (docs/scenario-format.md)
    /// [default: the smoke scenario's: a pass].
    scenario: Option<PathBuf>,
    /// Where the machine's SSH answers and as whom: USER@HOST[:PORT] (IPv6 in brackets).
    #[arg(long, value_name = "USER@HOST[:PORT]")]
    ssh: String,
    /// The private key USER logs in with (OpenSSH's format, unencrypted).
    #[arg(long, value_name = "KEY")]
    key: PathBuf,
    /// The installer's asset directory the install was made in: auth/kubeconfig, and
    /// install-config.yaml or the install-config its .openshift_install_state.json keeps.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["kubeconfig", "install_config"])]
    assets: Option<PathBuf>,
    /// The install's admin kubeconfig (instead of --assets; with --install-config).
    #[arg(long, value_name = "FILE", requires = "install_config")]
    kubeconfig: Option<PathBuf>,
    /// The install-config the install used (instead of --assets; with --kubeconfig).
    #[arg(long, value_name = "FILE", requires = "kubeconfig")]
    install_config: Option<PathBuf>,
    /// Where this host reaches the API, HOST:PORT (e.g. a forward of the node's 6443)
    /// [default: the kubeconfig's server].
    #[arg(long, value_name = "HOST:PORT")]
    api: Option<String>,
    /// A file the machine's serial console is logged into, followed as it grows.
    #[arg(long, value_name = "PATH", conflicts_with = "console_command")]
    console_log: Option<PathBuf>,
    /// A command that prints the machine's console on its standard output (run with sh -c;
    /// its end is the console's).
    #[arg(long, value_name = "CMD")]
    console_command: Option<String>,
    /// Output directory [default: $ARTIFACT_DIR, else runs/<timestamp>]
    #[arg(long)]
    out: Option<PathBuf>,
    /// Remove a previous run from the run directory instead of refusing it.
    #[arg(long)]
    replace: bool,
    /// Multiply every phase timeout: a positive number, at most 1000.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true, value_parser = super::flags::timeout_scale)]
    timeout_scale: f64,
    #[command(flatten)]
    junit: JunitFlag,
    /// When the run collects the guest's and the API's evidence into `<run>/gather/`:
    /// `on-failure`, `always` or `never`.
    #[arg(long, value_name = "WHEN", default_value = "on-failure", value_parser = super::flags::gather_when)]
    gather: sno_harness::gather::When,
    /// Each gather collector's time limit, e.g. `60s`.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = super::flags::gather_limit)]
    gather_limit: std::time::Duration,
    /// Change a scenario key without editing the file, e.g. `--set vm.accel=tcg` (a machine
    /// under TCG), as `run` takes it.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<scenario::overrides::Override>,
    /// Refused: nothing of an observed machine is the harness's to keep (its disks and the
    /// machine are its owner's, and it runs on after the run).
    #[arg(long, value_name = "WHEN", num_args = 0..=1, require_equals = true, default_missing_value = "always")]
    keep: Option<String>,
}

pub fn observe(a: ObserveArgs) -> Outcome {
    if a.keep.is_some() {
        return Err(bad(
            "--keep: nothing of an observed machine is the harness's to keep: the machine runs on after the run and its disks are its owner's; leave --keep out",
        ));
    }
    let s = load(a.scenario.as_deref(), &a.set)?;
    if s.install.mode == InstallMode::Assisted {
        return Err(bad(format!(
            "{}: install.mode = \"assisted\" has the harness install the machine over SSH, which `observe` does not: it follows an install that install-to-disk.service makes; use `run` for an assisted install",
            s.path.display()
        )));
    }
    let key = inputs::key(&a.key)?;
    let given = inputs::given(
        key,
        a.assets.as_deref(),
        (a.kubeconfig.as_deref(), a.install_config.as_deref()),
    )?;
    let kubeconfig_flag = match &a.assets {
        Some(d) => format!("--assets {}", d.display()),
        None => format!(
            "--kubeconfig {}",
            a.kubeconfig.as_deref().unwrap_or(Path::new("")).display()
        ),
    };
    let api = inputs::api_address(a.api.as_deref(), &given.kubeconfig, &kubeconfig_flag)?;
    let machine = inputs::machine(
        inputs::ssh_target(&a.ssh)?,
        api,
        (a.console_log.as_deref(), a.console_command.as_deref()),
    )?;
    let backend = Backend::external(machine);
    let dir = out_dir(a.out.clone()).join(&s.name);
    let claimed = [(dir.clone(), run_dir::RUN)];
    // Nothing is started on this host: no programs or firmware to look for.
    check_dirs(&claimed, a.replace)?;
    let _claim = claim_dirs(&claimed, a.replace)?;
    super::flags::open_log(&dir);
    let replay = replay(&a);
    let junit = a.junit.flavour;
    runtime()?.block_on(async {
        let result = run_scenario(
            &s,
            options(&a, (dir.clone(), backend, replay), junit, given),
        )
        .await;
        Ok(super::run::verdict_code(&s, &result, &dir))
    })
}

/// The scenario given, or the built-in smoke scenario, with `--set` applied.
fn load(
    path: Option<&Path>,
    set: &[scenario::overrides::Override],
) -> Result<Scenario, super::error::CliError> {
    match path {
        Some(p) => scenario::overrides::load_with(p, set).map_err(bad),
        None => {
            scenario::overrides::parse_with(Path::new("(the built-in smoke scenario)"), SMOKE, set)
                .map_err(bad)
        }
    }
}

fn options(
    a: &ObserveArgs,
    (dir, backend, replay): (PathBuf, Backend, String),
    flavour: JunitFlavour,
    given: sno_harness::run::given::Given,
) -> RunOptions {
    RunOptions {
        id: dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        dir,
        params: Default::default(),
        keep: Default::default(),
        pause_on_failure: false,
        timeout_scale: a.timeout_scale,
        cache_dir: sno_harness::fixture::default_cache_dir(),
        backend,
        replay,
        interrupt: interrupt_channel(),
        progress: sno_harness::run::progress::Display::detect(),
        state: StateMode::Observe(Box::new(given)),
        junit: sno_harness::report::junit::JunitOut {
            flavour,
            in_matrix: false,
        },
        gather: sno_harness::gather::Settings {
            when: a.gather,
            limit: a.gather_limit,
        },
        kubeconfig_to: Vec::new(),
    }
}

/// The command that observes the same machine again (its paths only: no secret is on it).
fn replay(a: &ObserveArgs) -> String {
    let mut words = vec!["sno-harness observe".to_string()];
    if let Some(s) = &a.scenario {
        words.push(s.display().to_string());
    }
    words.push(format!("--ssh {} --key {}", a.ssh, a.key.display()));
    match (&a.assets, &a.kubeconfig, &a.install_config) {
        (Some(d), _, _) => words.push(format!("--assets {}", d.display())),
        (None, Some(k), Some(i)) => words.push(format!(
            "--kubeconfig {} --install-config {}",
            k.display(),
            i.display()
        )),
        _ => {}
    }
    if let Some(api) = &a.api {
        words.push(format!("--api {api}"));
    }
    for o in &a.set {
        words.push(format!("--set '{}'", o.given.replace('\'', r"'\''")));
    }
    words.join(" ")
}
