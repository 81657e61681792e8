//! The `run` command: scenario in, run directory and exit code out.

use std::path::{Path, PathBuf};

use sno_harness::exit;
use sno_harness::result::Verdict;
use sno_harness::run::{run_scenario, RunOptions};
use sno_harness::scenario;

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

/// The flags `run` and `matrix` share.
#[derive(clap::Args)]
pub struct RunFlags {
    /// Output directory [default: $ARTIFACT_DIR, else runs/<timestamp>]
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Keep the VMs' disks and the live ISO, and print how to boot them.
    #[arg(long)]
    pub keep: bool,
    /// Multiply every phase timeout.
    #[arg(long, default_value_t = 1.0)]
    pub timeout_scale: f64,
    /// Who starts the VMs: `qemu` (the harness itself) or `libvirt` (transient domains).
    #[arg(long, default_value = "qemu", value_parser = ["qemu", "libvirt"])]
    pub backend: String,
    /// The libvirt URI for `--backend libvirt`.
    #[arg(long, default_value = sno_harness::vm::libvirt::DEFAULT_URI)]
    pub connect: String,
}

impl RunFlags {
    pub fn backend(&self) -> sno_harness::vm::running::Backend {
        use sno_harness::vm::running::Backend;
        match self.backend.as_str() {
            "libvirt" => Backend::Libvirt {
                uri: self.connect.clone(),
            },
            _ => Backend::Qemu,
        }
    }

    /// The settings of every run of a matrix or perf run.
    pub fn settings(
        &self,
        interrupt: tokio::sync::watch::Receiver<bool>,
    ) -> sno_harness::run::job::RunSettings {
        sno_harness::run::job::RunSettings {
            keep: self.keep,
            timeout_scale: self.timeout_scale,
            cache_dir: sno_harness::fixture::default_cache_dir(),
            backend: self.backend(),
            interrupt,
            progress: sno_harness::run::progress::Mode::detect(),
        }
    }

    /// The flags a replay command must repeat to run the same way.
    pub fn replay_suffix(&self) -> String {
        match self.backend() {
            sno_harness::vm::running::Backend::Qemu => String::new(),
            sno_harness::vm::running::Backend::Libvirt { uri } => {
                format!(" --backend libvirt --connect {uri}")
            }
        }
    }

    /// A bad flag's message, for exit 2.
    fn invalid(&self) -> Option<&'static str> {
        (!(self.timeout_scale.is_finite() && self.timeout_scale > 0.0))
            .then_some("--timeout-scale must be a positive number")
    }
}

/// `--save-state` / `--resume-state`, checked before anything starts: the backend and disks
/// can be saved; a state is saved into a new directory; a resumed one is a complete state of
/// this scenario's disks.
fn state_mode(
    s: &scenario::Scenario,
    flags: &RunFlags,
    save: Option<PathBuf>,
    resume: Option<PathBuf>,
) -> Result<sno_harness::run::state::StateMode, String> {
    use sno_harness::run::state::{can_save, Manifest, StateMode};
    let mode = match (save, resume) {
        (None, None) => return Ok(StateMode::Fresh),
        (Some(d), None) => {
            if d.exists() {
                return Err(format!(
                    "--save-state {}: it exists; a VM state is saved into a new directory",
                    d.display()
                ));
            }
            // Made absolute now: QEMU writes the state through a shell command.
            StateMode::SaveAfterBootkube(std::path::absolute(&d).map_err(|e| e.to_string())?)
        }
        (None, Some(d)) => {
            let m = Manifest::read(&d).map_err(|e| format!("--resume-state: {e}"))?;
            for disk in &s.disks {
                if m.disk(&d, &disk.id).is_none() {
                    return Err(format!(
                        "--resume-state {}: the saved VM has no disk {:?} of {}; it was saved from {}",
                        d.display(),
                        disk.id,
                        s.path.display(),
                        m.scenario
                    ));
                }
            }
            StateMode::ResumeInstall(std::path::absolute(&d).map_err(|e| e.to_string())?)
        }
        (Some(_), Some(_)) => {
            return Err("--save-state and --resume-state cannot be given together".into())
        }
    };
    can_save(&[s], &flags.backend()).map_err(|e| format!("saving or resuming the VM: {e}"))?;
    Ok(mode)
}

pub fn run(
    path: &Path,
    flags: RunFlags,
    save_state: Option<PathBuf>,
    resume_state: Option<PathBuf>,
) -> i32 {
    let RunFlags {
        ref out,
        keep,
        timeout_scale: scale,
        ..
    } = flags;
    let s = match scenario::load(path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("sno-harness: {e}");
            return exit::BAD_INPUT;
        }
    };
    if let Some(why) = flags.invalid() {
        eprintln!("sno-harness: {why}");
        return exit::BAD_INPUT;
    }
    if let Err(e) = sno_harness::run::preflight::backend_fits(&[&s], &flags.backend()) {
        eprintln!("sno-harness: {e}");
        return exit::BAD_INPUT;
    }
    let state = match state_mode(&s, &flags, save_state, resume_state) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("sno-harness: {e}");
            return exit::BAD_INPUT;
        }
    };
    if let Err(e) = sno_harness::run::preflight::check(&[&s], &flags.backend()) {
        eprintln!("sno-harness: {e}");
        return exit::HOST_NOT_READY;
    }
    let out = out_dir(out.clone());
    let dir = out.join(&s.name);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("sno-harness: creating {}: {e}", dir.display());
        return exit::HARNESS_ERROR;
    }
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("sno-harness: {e}");
            return exit::HARNESS_ERROR;
        }
    };
    let replay = format!(
        "sno-harness run {} --keep{}",
        path.display(),
        flags.replay_suffix()
    );
    rt.block_on(async {
        let rx = interrupt_channel();
        let result = run_scenario(
            &s,
            RunOptions {
                dir: dir.clone(),
                id: s.name.clone(),
                params: Default::default(),
                keep,
                timeout_scale: scale,
                cache_dir: sno_harness::fixture::default_cache_dir(),
                backend: flags.backend(),
                replay,
                interrupt: rx,
                progress: sno_harness::run::progress::Display::detect(),
                state,
            },
        )
        .await;
        eprintln!(
            "sno-harness: {} {} in {:.0} s; {}",
            result.id,
            result.verdict.as_str(),
            result.duration_ms as f64 / 1000.0,
            dir.join("result.json").display()
        );
        if !result.reason.is_empty() {
            eprintln!("  reason: {}", result.reason);
        }
        if s.expect.is_some() {
            return match sno_harness::run::check_expectation(&s, &result) {
                Ok(m) => {
                    eprintln!("  {m}");
                    exit::OK
                }
                Err(m) => {
                    eprintln!("  NOT as the scenario expects: {m}");
                    exit::SCENARIO_FAILED
                }
            };
        }
        match result.verdict {
            Verdict::Pass => exit::OK,
            Verdict::Fail => exit::SCENARIO_FAILED,
            Verdict::Error => exit::HARNESS_ERROR,
        }
    })
}

/// SIGINT or SIGTERM sets the channel (runs stop and write `interrupted`); a second one exits
/// at once, and QEMU dies with us through its parent-death signal. Call inside the runtime.
fn interrupt_channel() -> tokio::sync::watch::Receiver<bool> {
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
        eprintln!("sno-harness: interrupted; stopping (press Ctrl-C again to force)");
        // First the flag, so that a run whose helper dies next knows why; then the helpers (a
        // fixture build, the installer, coreos-installer) stop, off the async threads: stopping
        // them may wait out their grace period.
        let _ = tx.send(true);
        let _ = tokio::task::spawn_blocking(sno_harness::util::children::kill_all).await;
        tokio::select! { _ = int.recv() => {}, _ = term.recv() => {} }
        sno_harness::util::children::kill_all();
        std::process::exit(130);
    });
    rx
}

pub struct MatrixArgs {
    pub path: PathBuf,
    pub jobs: Option<u32>,
    pub strategy: Option<String>,
    pub filter: Option<String>,
    pub flags: RunFlags,
}

/// `matrix`: every permutation (filtered), in parallel under admission control, then the
/// merged reports.
pub fn matrix(a: &MatrixArgs) -> i32 {
    use sno_harness::run::job::Job;
    use sno_harness::run::matrix_runner::{run_matrix, MatrixOptions};
    use sno_harness::scenario::matrix::{self, Strategy};

    let mut m = match matrix::load(&a.path) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("sno-harness: {e}");
            return exit::BAD_INPUT;
        }
    };
    if let Some(st) = &a.strategy {
        let st: Strategy = match st.parse() {
            Ok(st) => st,
            Err(e) => {
                eprintln!("sno-harness: --strategy {st:?}: {e}");
                return exit::BAD_INPUT;
            }
        };
        m = match m.with_strategy(st) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("sno-harness: {e}");
                return exit::BAD_INPUT;
            }
        };
    }
    if let Some(why) = a.flags.invalid() {
        eprintln!("sno-harness: {why}");
        return exit::BAD_INPUT;
    }
    if a.jobs == Some(0) {
        eprintln!("sno-harness: --jobs must be at least 1");
        return exit::BAD_INPUT;
    }
    let perms: Vec<_> = match &a.filter {
        Some(glob) => m
            .permutations
            .iter()
            .filter(|p| matrix::matches_filter(&p.id, glob))
            .cloned()
            .collect(),
        None => m.permutations.clone(),
    };
    if perms.is_empty() {
        eprintln!(
            "sno-harness: no permutation of {} matches --filter {:?}; `sno-harness plan {}` lists them",
            a.path.display(),
            a.filter.as_deref().unwrap_or(""),
            a.path.display()
        );
        return exit::BAD_INPUT;
    }
    let needs: Vec<&scenario::Scenario> = perms.iter().map(|p| &p.scenario).collect();
    if let Err(e) = sno_harness::run::preflight::backend_fits(&needs, &a.flags.backend()) {
        eprintln!("sno-harness: {e}");
        return exit::BAD_INPUT;
    }
    if let Err(e) = sno_harness::run::preflight::check(&needs, &a.flags.backend()) {
        eprintln!("sno-harness: {e}");
        return exit::HOST_NOT_READY;
    }
    let out = out_dir(a.flags.out.clone());
    if let Err(e) = std::fs::create_dir_all(&out) {
        eprintln!("sno-harness: creating {}: {e}", out.display());
        return exit::HARNESS_ERROR;
    }
    let jobs: Vec<Job> = perms
        .iter()
        .map(|p| Job {
            id: p.id.clone(),
            params: p.values.clone(),
            scenario: p.scenario.clone(),
            replay: matrix_replay(&a.path, m.strategy.name(), &p.id, &a.flags),
        })
        .collect();
    let jobs_n = a
        .jobs
        .unwrap_or_else(sno_harness::run::admission::default_jobs);
    eprintln!(
        "sno-harness: matrix {}: {} permutations ({} strategy; {} in the full product), {jobs_n} at once, into {}",
        m.name,
        jobs.len(),
        m.strategy.name(),
        m.full_count,
        out.display()
    );
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("sno-harness: {e}");
            return exit::HARNESS_ERROR;
        }
    };
    let (results, schedule) = rt.block_on(async {
        let rx = interrupt_channel();
        run_matrix(
            jobs,
            MatrixOptions {
                name: m.name.clone(),
                out: out.clone(),
                jobs: jobs_n,
                settings: a.flags.settings(rx),
            },
        )
        .await
    });
    let axes: Vec<(String, Vec<String>)> = m
        .axes
        .iter()
        .map(|ax| (ax.key.clone(), ax.labels.clone()))
        .collect();
    let mut code = exit::OK;
    if let Err(e) = sno_harness::report::run_dir::write_reports(&out, &results, &axes) {
        eprintln!("sno-harness: writing the reports: {e}");
        code = exit::HARNESS_ERROR;
    }
    let mut unexpected = 0;
    let mut errors = 0;
    for (p, r) in perms.iter().zip(&results) {
        match sno_harness::run::check_expectation(&p.scenario, r) {
            Ok(_) => {}
            Err(why) => {
                eprintln!("  {}: {why}", p.id);
                if r.verdict == Verdict::Error && p.scenario.expect.is_none() {
                    errors += 1;
                } else {
                    unexpected += 1;
                }
            }
        }
    }
    let delays = &schedule.dispatch_delays;
    let mean_delay = if delays.is_empty() {
        0.0
    } else {
        delays.iter().map(|d| d.as_secs_f64()).sum::<f64>() / delays.len() as f64
    };
    let summed: f64 = results.iter().map(|r| r.duration_ms as f64 / 1000.0).sum();
    eprintln!(
        "sno-harness: matrix {}: {} as expected, {unexpected} not, {errors} errors; wall {:.0} s against {summed:.0} s of runs (x{:.2}); at most {} at once; dispatch {mean_delay:.3} s per permutation; {}",
        m.name,
        results.len() - unexpected - errors,
        schedule.wall.as_secs_f64(),
        if schedule.wall.as_secs_f64() > 0.0 { summed / schedule.wall.as_secs_f64() } else { 0.0 },
        schedule.peak_parallel,
        out.join("summary.md").display()
    );
    if code != exit::OK {
        code
    } else if unexpected > 0 {
        exit::SCENARIO_FAILED
    } else if errors > 0 {
        exit::HARNESS_ERROR
    } else {
        exit::OK
    }
}

/// `plan`: what a run would do, without doing any of it. For a matrix: its permutations.
pub fn plan(path: &Path, json: bool, backend: &str) -> i32 {
    if sno_harness::scenario::matrix::is_matrix_file(path) {
        return match sno_harness::scenario::matrix::load(path) {
            Ok(m) if json => {
                let v = sno_harness::scenario::matrix::plan_json(&m);
                println!(
                    "{}",
                    serde_json::to_string_pretty(&v).expect("serialisable")
                );
                exit::OK
            }
            Ok(m) => {
                print!("{}", sno_harness::scenario::matrix::plan_text(&m));
                exit::OK
            }
            Err(e) => {
                eprintln!("sno-harness: {e}");
                exit::BAD_INPUT
            }
        };
    }
    let s = match scenario::load(path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("sno-harness: {e}");
            return exit::BAD_INPUT;
        }
    };
    let placeholder_key = "ssh-ed25519 <a key generated for the run>";
    // The plan shows the install-config redacted, so it neither needs nor reads the secret.
    let mut unsecret = s.clone();
    unsecret.install.pull_secret = None;
    let install_config =
        match sno_harness::assets::render_install_config(&unsecret, placeholder_key) {
            Ok((_, redacted)) => redacted,
            Err(e) => {
                eprintln!("sno-harness: {e}");
                return exit::BAD_INPUT;
            }
        };
    let installer = match s.profile {
        scenario::Profile::Fixture => {
            "<minisno-install from `sno-harness fixture build`>".to_string()
        }
        scenario::Profile::Openshift => s
            .openshift
            .as_ref()
            .and_then(|o| o.installer.as_ref())
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "openshift-install".into()),
    };
    let env: Vec<String> = match &s.fixture {
        Some(f) => vec![
            format!("MINISNO_SCHEDULE={}", f.schedule),
            format!("MINISNO_FAULTS={}", f.faults.join(",")),
        ],
        None => s
            .openshift
            .as_ref()
            .and_then(|o| o.release_image.as_ref())
            .map(|r| vec![format!("OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE={r}")])
            .unwrap_or_default(),
    };
    let commands = vec![
        format!("{} {installer} --dir RUN/assets create single-node-ignition-config", env.join(" ")).trim().to_string(),
        format!("{installer} coreos print-stream-json   # .architectures.x86_64.artifacts.metal.formats.iso.disk.{{location,sha256}}"),
        "coreos-installer iso ignition embed -f -i RUN/assets/bootstrap-in-place-for-live-iso.ign -o RUN/live.iso ISO".into(),
        "coreos-installer iso kargs modify -a console=ttyS0,115200n8 RUN/live.iso".into(),
    ];
    let accel = sno_harness::vm::accel::decide(s.vm.accel);
    let (accel, accel_reason) = match &accel {
        Ok(d) => (d.accel, d.reason.clone()),
        Err(e) => (sno_harness::hw::Accel::Kvm, e.to_string()),
    };
    let spec = sno_harness::run::vm_spec(
        &s,
        Path::new("RUN"),
        Path::new("RUN/live.iso"),
        accel,
        40022,
        46443,
    );
    let argv = sno_harness::vm::qemu::qemu_argv(&spec);
    let domain_xml = (backend == "libvirt").then(|| {
        let mut spec = spec.clone();
        spec.name = sno_harness::run::vm_name(&s.name, 40022);
        sno_harness::vm::libvirt::domain_xml(
            &spec,
            &sno_harness::vm::libvirt::RunMeta::for_this_process(s.name.clone(), "RUN".into()),
        )
    });
    // A real cluster on libvirt gets a NAT network of its own (the node on a virtual LAN, its
    // names in the network's DNS); the fixture uses loopback forwards instead.
    let network_xml =
        (backend == "libvirt" && s.vm.network == scenario::GuestNetwork::Nat).then(|| {
            sno_harness::vm::libvirt::network::from_machine_network(
                &s.install.machine_network,
                &s.install.cluster,
                &s.install.base_domain,
                sno_harness::vm::libvirt::RunMeta::for_this_process(s.name.clone(), "RUN".into()),
                sno_harness::run::vm_name(&s.name, 40022),
            )
            .map(|n| sno_harness::vm::libvirt::nat_network_xml(&n))
        });
    let timeouts = sno_harness::run::phase_timeouts(&s, accel, 1.0);
    if json {
        let v = serde_json::json!({
            "scenario": s,
            "install_config": install_config,
            "commands": commands,
            "accel": {"accel": format!("{accel:?}").to_lowercase(), "reason": accel_reason},
            "qemu_argv": argv,
            "libvirt_domain_xml": domain_xml,
            "libvirt_network_xml": network_xml.clone().map(|r| r.unwrap_or_else(|e| format!("error: {e}"))),
            "timeouts_s": timeouts.iter().map(|(p, d)| (p.name().to_string(), d.as_secs())).collect::<std::collections::BTreeMap<_, _>>(),
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&v).expect("serialisable")
        );
        return exit::OK;
    }
    println!(
        "scenario {} ({}), profile {}",
        s.name,
        path.display(),
        s.profile.name()
    );
    println!("\n# install-config.yaml (pull secret redacted)\n{install_config}");
    println!("# commands (RUN is the run directory)");
    for c in &commands {
        println!("  {c}");
    }
    println!("\n# VM: accelerator {accel:?} ({accel_reason}); ports are picked at run time");
    match &domain_xml {
        Some(xml) => println!(
            "# libvirt domain (transient, auto-destroyed with the harness's connection)\n{xml}"
        ),
        None => println!("{}", sno_harness::vm::qemu::argv::shell_command_line(&argv)),
    }
    match &network_xml {
        Some(Ok(xml)) => println!("\n# libvirt NAT network for the cluster (created and removed with the run; not yet automated)\n{xml}"),
        Some(Err(e)) => println!("\n# no NAT network: {e}"),
        None => {}
    }
    println!("\n# phase timeouts (after TCG scaling)");
    for (p, d) in &timeouts {
        println!("  {:<20} {}", p.name(), humantime::format_duration(*d));
    }
    exit::OK
}

/// `doctor`: what the host has and lacks for running scenarios.
pub fn doctor() -> i32 {
    let mut blocking = Vec::new();
    let mut line = |ok: bool, needed: bool, what: &str, detail: String| {
        let mark = if ok {
            "ok  "
        } else if needed {
            "MISSING"
        } else {
            "warn"
        };
        println!("{mark:<8} {what:<22} {detail}");
        if !ok && needed {
            blocking.push(what.to_string());
        }
    };
    let version = |cmd: &str, args: &[&str]| -> Option<String> {
        let o = std::process::Command::new(cmd).args(args).output().ok()?;
        let text =
            String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
        o.status
            .success()
            .then(|| text.lines().next().unwrap_or("").trim().to_string())
    };
    let q = version("qemu-system-x86_64", &["--version"]);
    line(
        q.is_some(),
        true,
        "qemu-system-x86_64",
        q.unwrap_or_else(|| "not found (apt-get install qemu-system-x86)".into()),
    );
    let qi = version("qemu-img", &["--version"]);
    line(
        qi.is_some(),
        true,
        "qemu-img",
        qi.unwrap_or_else(|| "not found (apt-get install qemu-utils)".into()),
    );
    // Runs the KVM trial guest when the cheap checks pass. Falling back to TCG is a warning,
    // not a blocker: scenarios run, slowly, and the reason says what failed.
    match sno_harness::vm::accel::decide(sno_harness::hw::AccelChoice::Auto) {
        Ok(d) => line(
            d.accel == sno_harness::hw::Accel::Kvm,
            false,
            "accelerator",
            format!("{:?}: {}", d.accel, d.reason),
        ),
        Err(e) => line(false, true, "accelerator", e.to_string()),
    }
    let ovmf = Path::new(sno_harness::hw::OVMF_CODE).is_file()
        && Path::new(sno_harness::hw::OVMF_VARS).is_file();
    line(
        ovmf,
        false,
        "OVMF (UEFI)",
        if ovmf {
            sno_harness::hw::OVMF_CODE.into()
        } else {
            "not found: firmware = \"uefi\" scenarios cannot run (apt-get install ovmf)".into()
        },
    );
    let ci = version("coreos-installer", &["--version"]);
    line(
        ci.is_some(),
        true,
        "coreos-installer",
        ci.unwrap_or_else(|| "not found (cargo install coreos-installer --locked)".into()),
    );
    let kubectl = version("kubectl", &["version", "--client"]);
    line(
        kubectl.is_some(),
        false,
        "kubectl",
        kubectl.unwrap_or_else(|| "not found (optional; used by the API tests)".into()),
    );
    let root = unsafe { libc::geteuid() } == 0;
    line(
        root,
        false,
        "root",
        if root {
            "yes (can build minisno)".into()
        } else {
            "no: building minisno needs root; cached builds work".into()
        },
    );
    for tool in [
        "mmdebstrap",
        "mksquashfs",
        "grub-mkrescue",
        "xorriso",
        "sfdisk",
        "mkfs.vfat",
        "mcopy",
    ] {
        let found = sno_harness::util::which(tool);
        line(
            found.is_some(),
            false,
            tool,
            found.map(|p| p.display().to_string()).unwrap_or_else(|| {
                "not found: needed to build minisno (ci/install-host-deps.sh)".into()
            }),
        );
    }
    let cache = sno_harness::fixture::default_cache_dir();
    let free = free_space(&cache);
    let enough = free.is_none_or(|f| f >= 10 << 30);
    line(
        enough,
        true,
        "disk space",
        match free {
            Some(f) => format!(
                "{:.1} GiB free under {} (a run needs about 2 GiB, a fixture build 3 GiB)",
                f as f64 / (1u64 << 30) as f64,
                cache.display()
            ),
            None => format!("unknown for {}", cache.display()),
        },
    );
    if blocking.is_empty() {
        println!("\nthe host can run scenarios");
        exit::OK
    } else {
        println!("\nthe host cannot run scenarios: {}", blocking.join(", "));
        exit::HOST_NOT_READY
    }
}

fn free_space(p: &Path) -> Option<u64> {
    use std::ffi::CString;
    let mut dir = p.to_path_buf();
    while !dir.exists() {
        dir = dir.parent()?.to_path_buf();
    }
    let c = CString::new(dir.as_os_str().as_encoded_bytes()).ok()?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: statvfs with a valid C string and an owned output struct.
    (unsafe { libc::statvfs(c.as_ptr(), &mut st) } == 0)
        .then(|| st.f_bavail as u64 * st.f_frsize as u64)
}

/// What `report` was asked (see main.rs).
pub struct ReportArgs {
    pub dir: PathBuf,
    pub baseline: Option<PathBuf>,
    pub html: Option<PathBuf>,
    pub threshold_pct: f64,
    pub threshold_s: f64,
    /// Perf directories only, as `--min-effect-pct` and `--json`.
    pub alpha: Option<f64>,
    pub min_effect_pct: Option<f64>,
    pub json: Option<PathBuf>,
}

/// `report`: regenerate a run directory's reports from its result.json files (a perf
/// directory's report.html from its perf.json), or compare it with a baseline. Exit 0, 1 (a
/// regression), 2 (bad input: not a run directory, an unreadable result.json or perf.json, a
/// perf directory against a plain one, bad flags) or 4 (a report could not be written).
pub fn report(a: &ReportArgs) -> i32 {
    use sno_harness::perf::load::is_perf_dir;

    let rules = match report_rules(a) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let perf_only = a.alpha.is_some() || a.min_effect_pct.is_some() || a.json.is_some();
    match &a.baseline {
        Some(base) => match (is_perf_dir(&a.dir), is_perf_dir(base)) {
            (true, true) => return perf_compare(a, base, rules),
            (false, false) if perf_only => {
                eprintln!(
                    "sno-harness: --alpha, --min-effect-pct and --json compare perf directories \
                     (with a perf.json, from `sno-harness perf`); {} and {} are run directories, \
                     compared with --threshold-pct and --threshold-s",
                    a.dir.display(),
                    base.display()
                );
                return exit::BAD_INPUT;
            }
            (false, false) => {}
            (run_is_perf, _) => {
                let (perf, plain) = if run_is_perf {
                    (a.dir.display().to_string(), base.as_path())
                } else {
                    (format!("the baseline {}", base.display()), a.dir.as_path())
                };
                let named = if run_is_perf { "the baseline " } else { "" };
                // A missing directory is the likelier mistake than a wrong one: say which.
                let lacks = if plain.is_dir() {
                    "has none"
                } else {
                    "is not a directory"
                };
                eprintln!(
                    "sno-harness: cannot compare a perf directory with a run directory: {perf} \
                     has a perf.json, {named}{} {lacks}; compare two perf directories (both \
                     from `sno-harness perf`) or two run directories (from `run` or `matrix`)",
                    plain.display()
                );
                return exit::BAD_INPUT;
            }
        },
        None if perf_only => {
            eprintln!(
                "sno-harness: --alpha, --min-effect-pct and --json apply to a comparison: give \
                 --compare BASELINE_DIR"
            );
            return exit::BAD_INPUT;
        }
        None if is_perf_dir(&a.dir) => return perf_page(a),
        None => {}
    }
    report_run_dir(
        &a.dir,
        a.baseline.as_deref(),
        a.html.as_deref(),
        rules.thresholds(),
    )
}

/// The comparison rules from the flags, or the exit code after saying which flag is wrong.
fn report_rules(a: &ReportArgs) -> Result<sno_harness::perf::compare::Rules, i32> {
    use sno_harness::perf::compare::{Rules, RulesError, DEFAULT_MIN_EFFECT_PCT};
    use sno_harness::perf::thresholds::Thresholds;

    let t = Thresholds {
        pct: a.threshold_pct,
        secs: a.threshold_s,
    };
    let alpha = a.alpha.unwrap_or(sno_harness::perf::model::COMPARE_ALPHA);
    let min_effect = a.min_effect_pct.unwrap_or(DEFAULT_MIN_EFFECT_PCT);
    Rules::new(alpha, min_effect, t).map_err(|e| {
        let flag = match e {
            RulesError::Alpha(_) => "--alpha",
            RulesError::MinEffect(_) => "--min-effect-pct",
            RulesError::Thresholds { .. } => "--threshold-pct and --threshold-s",
        };
        eprintln!("sno-harness: {flag}: {e}");
        exit::BAD_INPUT
    })
}

/// `report --compare` of two perf directories: the statistical comparison of their perf.json.
fn perf_compare(
    a: &ReportArgs,
    baseline_dir: &Path,
    rules: sno_harness::perf::compare::Rules,
) -> i32 {
    use sno_harness::perf::compare::compare_reports;
    use sno_harness::perf::load::read_perf_dir;
    use sno_harness::report::perf_compare::render_text;

    let (base, cand) = match (read_perf_dir(baseline_dir), read_perf_dir(&a.dir)) {
        (Ok(b), Ok(c)) => (b, c),
        (Err(e), _) => {
            eprintln!("sno-harness: baseline: {e}");
            return exit::BAD_INPUT;
        }
        (_, Err(e)) => {
            eprintln!("sno-harness: {e}");
            return exit::BAD_INPUT;
        }
    };
    let mut cmp = match compare_reports(&base, &cand, rules) {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "sno-harness: comparing {} with {}: {e}",
                a.dir.display(),
                baseline_dir.display()
            );
            return exit::BAD_INPUT;
        }
    };
    cmp.baseline_dir = baseline_dir.display().to_string();
    cmp.candidate_dir = a.dir.display().to_string();
    println!(
        "{} compared with the baseline {} (their perf.json)",
        a.dir.display(),
        baseline_dir.display()
    );
    print!("{}", render_text(&cmp));
    if !cmp.host_differences.is_empty() {
        let what: Vec<&str> = cmp
            .host_differences
            .iter()
            .map(|d| d.what.as_str())
            .collect();
        eprintln!(
            "sno-harness: warning: the host context differs from the baseline's: {}",
            what.join(", ")
        );
    }
    if let Some(path) = &a.json {
        if let Err(e) = write_atomically(path, &cmp.to_json()) {
            eprintln!("sno-harness: writing {}: {e}", path.display());
            return exit::HARNESS_ERROR;
        }
        println!("wrote {}", path.display());
    }
    if let Some(file) = &a.html {
        if let Err(code) = write_perf_page(file, &a.dir, &cand) {
            return code;
        }
    }
    if cmp.regressions > 0 {
        exit::SCENARIO_FAILED
    } else {
        exit::OK
    }
}

/// `report PERF_DIR`: its report.html (in it, or at --html) from its perf.json.
fn perf_page(a: &ReportArgs) -> i32 {
    let report = match sno_harness::perf::load::read_perf_dir(&a.dir) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("sno-harness: {e}");
            return exit::BAD_INPUT;
        }
    };
    let path = a
        .html
        .clone()
        .unwrap_or_else(|| a.dir.join(sno_harness::report::html::REPORT_HTML_FILE));
    match write_perf_page(&path, &a.dir, &report) {
        Ok(()) => exit::OK,
        Err(code) => code,
    }
}

fn write_perf_page(
    path: &Path,
    perf_dir: &Path,
    report: &sno_harness::perf::model::PerfReport,
) -> Result<(), i32> {
    match sno_harness::report::run_dir::write_perf_html(path, perf_dir, report) {
        Ok(()) => {
            println!("wrote {}", path.display());
            Ok(())
        }
        Err(e) => {
            eprintln!("sno-harness: writing the report: {e}");
            Err(exit::HARNESS_ERROR)
        }
    }
}

/// `report` of plain run directories (from `run` or `matrix`): their reports, or their
/// comparison with fixed thresholds.
fn report_run_dir(
    dir: &Path,
    baseline: Option<&Path>,
    html: Option<&Path>,
    t: sno_harness::perf::thresholds::Thresholds,
) -> i32 {
    use sno_harness::report::compare::{compare, render_text};
    use sno_harness::report::load::load_run_dir;
    use sno_harness::report::run_dir::{write_html, write_reports_for};
    use sno_harness::report::summary_json::{Summary, SUMMARY_JSON_FILE};

    let runs = match load_run_dir(dir) {
        Ok(runs) => runs,
        Err(e) => {
            eprintln!("sno-harness: {e}");
            return exit::BAD_INPUT;
        }
    };
    // An earlier report's summary.json knows the matrix axes, with the values no permutation
    // ran; the result.json files alone only know the values that did.
    let axes = Summary::read(&dir.join(SUMMARY_JSON_FILE))
        .map(|s| s.axes())
        .unwrap_or_default();

    let mut regressed = false;
    if let Some(baseline_dir) = baseline {
        let base = match load_run_dir(baseline_dir) {
            Ok(runs) => runs,
            Err(e) => {
                eprintln!("sno-harness: baseline: {e}");
                return exit::BAD_INPUT;
            }
        };
        let base: Vec<_> = base.into_iter().map(|r| r.result).collect();
        let current: Vec<_> = runs.iter().map(|r| r.result.clone()).collect();
        let cmp = compare(&base, &current, t);
        println!(
            "{} compared with the baseline {}",
            dir.display(),
            baseline_dir.display()
        );
        print!("{}", render_text(&cmp, t));
        regressed = cmp.regressions() > 0;
    }

    let written = match (html, baseline) {
        (Some(file), _) => write_html(file, dir, &runs, &axes).map(|()| vec![file.to_path_buf()]),
        (None, None) => write_reports_for(dir, &runs, &axes),
        // A comparison only reads.
        (None, Some(_)) => Ok(Vec::new()),
    };
    match written {
        Ok(paths) => {
            for p in paths {
                println!("wrote {}", p.display());
            }
        }
        Err(e) => {
            eprintln!("sno-harness: writing the report: {e}");
            return exit::HARNESS_ERROR;
        }
    }
    if regressed {
        // The contract's exit 1, here meaning "regressed".
        exit::SCENARIO_FAILED
    } else {
        exit::OK
    }
}

/// `gc`: see main.rs.
pub fn gc(dry_run: bool, mut uris: Vec<String>) -> i32 {
    if uris.is_empty() && Path::new("/run/libvirt/libvirt-sock").exists() {
        uris.push(sno_harness::vm::libvirt::DEFAULT_URI.to_string());
    }
    let registry = sno_harness::run::registry::dir();
    let c = sno_harness::run::gc::collect(&registry, &uris, dry_run);
    let verb = if dry_run { "would" } else { "did" };
    for a in &c.actions {
        println!("gc {verb}: {a}");
    }
    for a in &c.alive {
        println!("gc: left alone, still running: {a}");
    }
    for e in &c.errors {
        eprintln!("sno-harness gc: {e}");
    }
    if c.actions.is_empty() && c.errors.is_empty() {
        println!("gc: nothing to collect ({})", registry.display());
    }
    if c.errors.is_empty() {
        exit::OK
    } else {
        exit::HARNESS_ERROR
    }
}

pub struct PerfArgs {
    pub path: PathBuf,
    pub repeat: u32,
    pub warmup: u32,
    pub strategy: Option<String>,
    pub filter: Option<String>,
    pub disk_write_only: bool,
    pub flags: RunFlags,
}

/// `perf`: each permutation (or the one scenario) `--warmup` times unmeasured, then `--repeat`
/// times measured, one run at a time; then perf.json, perf.md and the table on stdout.
pub fn perf(a: &PerfArgs) -> i32 {
    use sno_harness::perf::model::{
        self as perf_report, PerfInput, PermutationRuns, RunKind, PERF_JSON, PERF_MD,
    };
    use sno_harness::run::job::Job as PerfJob;
    use sno_harness::run::perf_runner::{run_perf, PerfOptions};

    if a.repeat == 0 {
        eprintln!("sno-harness: --repeat must be at least 1 (measured runs per permutation)");
        return exit::BAD_INPUT;
    }
    if let Some(why) = a.flags.invalid() {
        eprintln!("sno-harness: {why}");
        return exit::BAD_INPUT;
    }
    let (jobs, strategy) = if sno_harness::scenario::matrix::is_matrix_file(&a.path) {
        match perf_matrix_jobs(a) {
            Ok(j) => j,
            Err(code) => return code,
        }
    } else {
        if a.strategy.is_some() || a.filter.is_some() {
            eprintln!(
                "sno-harness: --strategy and --filter select permutations of a matrix; {} is a scenario",
                a.path.display()
            );
            return exit::BAD_INPUT;
        }
        let s = match scenario::load(&a.path) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("sno-harness: {e}");
                return exit::BAD_INPUT;
            }
        };
        let job = PerfJob {
            id: s.name.clone(),
            params: Default::default(),
            replay: format!(
                "sno-harness run {} --keep{}",
                a.path.display(),
                a.flags.replay_suffix()
            ),
            scenario: s,
        };
        (vec![job], None)
    };
    let needs: Vec<&scenario::Scenario> = jobs.iter().map(|j| &j.scenario).collect();
    if let Err(e) = sno_harness::run::preflight::backend_fits(&needs, &a.flags.backend()) {
        eprintln!("sno-harness: {e}");
        return exit::BAD_INPUT;
    }
    if a.disk_write_only {
        if let Err(e) = sno_harness::run::state::can_save(&needs, &a.flags.backend()) {
            eprintln!("sno-harness: --disk-write-only: {e}");
            return exit::BAD_INPUT;
        }
    }
    let min = perf_report::min_samples_for_compare();
    if (a.repeat as usize) < min {
        eprintln!(
            "sno-harness: warning: --repeat {}: `report --compare` needs at least {min} runs per permutation to tell a difference at alpha {}",
            a.repeat,
            perf_report::COMPARE_ALPHA
        );
    }
    if let Err(e) = sno_harness::run::preflight::check(&needs, &a.flags.backend()) {
        eprintln!("sno-harness: {e}");
        return exit::HOST_NOT_READY;
    }
    let out = out_dir(a.flags.out.clone());
    if let Err(e) = std::fs::create_dir_all(&out) {
        eprintln!("sno-harness: creating {}: {e}", out.display());
        return exit::HARNESS_ERROR;
    }
    let backing = sno_harness::run::backing::backing_for(&a.flags.backend(), &out);
    let started_at = sno_harness::result::rfc3339(std::time::SystemTime::now());
    let input =
        |permutations: &[PermutationRuns], interrupted: bool, finished_at: String| PerfInput {
            source: a.path.display().to_string(),
            strategy: strategy.clone(),
            filter: a.filter.clone(),
            repeat: a.repeat,
            warmup: a.warmup,
            started_at: started_at.clone(),
            finished_at,
            interrupted,
            backend: a.flags.backend().name().to_string(),
            backing_store: backing.clone(),
            permutations: permutations.to_vec(),
        };
    eprintln!(
        "sno-harness: perf {}: {} permutation(s) x ({} warmup + {} measured) runs, one at a time, into {}",
        a.path.display(),
        jobs.len(),
        a.warmup,
        a.repeat,
        out.display()
    );
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("sno-harness: {e}");
            return exit::HARNESS_ERROR;
        }
    };
    let json_path = out.join(PERF_JSON);
    let html_path = out.join(sno_harness::report::html::REPORT_HTML_FILE);
    let ran = rt.block_on(async {
        let rx = interrupt_channel();
        run_perf(
            &jobs,
            PerfOptions {
                out: out.clone(),
                repeat: a.repeat,
                warmup: a.warmup,
                settings: a.flags.settings(rx),
                disk_write_only: a.disk_write_only,
            },
            // Kept current after every run: a killed harness leaves what it measured, and
            // the page shows the distributions so far.
            |so_far| {
                let partial = perf_report::build(&input(so_far, false, String::new()));
                for (path, text) in [
                    (json_path.clone(), partial.to_json()),
                    (
                        html_path.clone(),
                        sno_harness::report::html::render_perf_html(&partial, "."),
                    ),
                ] {
                    if let Err(e) = write_atomically(&path, &text) {
                        tracing::warn!("writing {}: {e}", path.display());
                    }
                }
            },
        )
        .await
    });
    let finished_at = sno_harness::result::rfc3339(std::time::SystemTime::now());
    let report = perf_report::build(&input(&ran.permutations, ran.interrupted, finished_at));
    let markdown = sno_harness::report::perf_md::render_markdown(&report);
    let mut code = exit::OK;
    for (path, text) in [
        (json_path.clone(), report.to_json()),
        (out.join(PERF_MD), markdown.clone()),
        // The distributions, next to the run directories the page links to.
        (
            html_path.clone(),
            sno_harness::report::html::render_perf_html(&report, "."),
        ),
    ] {
        if let Err(e) = write_atomically(&path, &text) {
            eprintln!("sno-harness: writing {}: {e}", path.display());
            code = exit::HARNESS_ERROR;
        }
    }
    print!("{markdown}");

    let mut unexpected = 0;
    let mut errors = 0;
    let mut measured = 0;
    for perm in &ran.permutations {
        let Some(job) = jobs.iter().find(|j| j.id == perm.id) else {
            continue;
        };
        for r in perm.runs.iter().filter(|r| r.kind == RunKind::Measured) {
            measured += 1;
            if sno_harness::run::check_expectation(&job.scenario, &r.result).is_err() {
                if r.result.verdict == Verdict::Error && job.scenario.expect.is_none() {
                    errors += 1;
                } else {
                    unexpected += 1;
                }
            }
        }
    }
    eprintln!(
        "sno-harness: perf {}: {} of {measured} measured runs as expected, {unexpected} not, {errors} errors{}; {}",
        a.path.display(),
        measured - unexpected - errors,
        if ran.interrupted { "; interrupted" } else { "" },
        json_path.display()
    );
    if code != exit::OK {
        code
    } else if unexpected > 0 {
        exit::SCENARIO_FAILED
    } else if errors > 0 || ran.interrupted {
        exit::HARNESS_ERROR
    } else {
        exit::OK
    }
}

/// A matrix's permutations as perf jobs (with `--strategy` and `--filter`), and the strategy;
/// `Err(exit code)` after saying what is wrong.
fn perf_matrix_jobs(
    a: &PerfArgs,
) -> Result<(Vec<sno_harness::run::job::Job>, Option<String>), i32> {
    use sno_harness::scenario::matrix::{self, Strategy};

    let mut m = matrix::load(&a.path).map_err(|e| {
        eprintln!("sno-harness: {e}");
        exit::BAD_INPUT
    })?;
    if let Some(st) = &a.strategy {
        let st: Strategy = st.parse().map_err(|e| {
            eprintln!("sno-harness: --strategy {st:?}: {e}");
            exit::BAD_INPUT
        })?;
        m = m.with_strategy(st).map_err(|e| {
            eprintln!("sno-harness: {e}");
            exit::BAD_INPUT
        })?;
    }
    let perms: Vec<&matrix::Permutation> = match &a.filter {
        Some(glob) => m.filter(glob).collect(),
        None => m.permutations.iter().collect(),
    };
    if perms.is_empty() {
        eprintln!(
            "sno-harness: no permutation of {} matches --filter {:?}; `sno-harness plan {}` lists them",
            a.path.display(),
            a.filter.as_deref().unwrap_or(""),
            a.path.display()
        );
        return Err(exit::BAD_INPUT);
    }
    let jobs = perms
        .into_iter()
        .map(|p| sno_harness::run::job::Job {
            id: p.id.clone(),
            params: p.values.clone(),
            scenario: p.scenario.clone(),
            replay: matrix_replay(&a.path, m.strategy.name(), &p.id, &a.flags),
        })
        .collect();
    Ok((jobs, Some(m.strategy.name().to_string())))
}

/// Writes `path` through a temporary file in the same directory and a rename, so that a reader
/// never sees half a document.
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// The command that replays one permutation of a matrix, kept for inspection (`--keep`).
fn matrix_replay(path: &Path, strategy: &str, id: &str, flags: &RunFlags) -> String {
    format!(
        "sno-harness matrix {} --strategy {strategy} --filter {id} --keep{}",
        path.display(),
        flags.replay_suffix()
    )
}
