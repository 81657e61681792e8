//! The `run` command: scenario in, run directory and exit code out.

use std::path::{Path, PathBuf};

use sno_harness::exit;
use sno_harness::report::result::Verdict;
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

pub fn run(path: &Path, backend: &str, out: Option<PathBuf>, keep: bool, scale: f64) -> i32 {
    let s = match scenario::load(path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("sno-harness: {e}");
            return exit::BAD_INPUT;
        }
    };
    if backend != "qemu" {
        eprintln!("sno-harness: --backend {backend:?}: only \"qemu\" is available");
        return exit::BAD_INPUT;
    }
    if !(scale.is_finite() && scale > 0.0) {
        eprintln!("sno-harness: --timeout-scale must be a positive number");
        return exit::BAD_INPUT;
    }
    let out = out_dir(out);
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
    let replay = format!("sno-harness run {} --keep", path.display());
    rt.block_on(async {
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
            let _ = tx.send(true);
            tokio::select! { _ = int.recv() => {}, _ = term.recv() => {} }
            // QEMU dies with us (parent-death signal).
            std::process::exit(130);
        });
        let result = run_scenario(
            &s,
            RunOptions {
                dir: dir.clone(),
                id: s.name.clone(),
                params: Default::default(),
                keep,
                timeout_scale: scale,
                cache_dir: sno_harness::fixture::default_cache_dir(),
                replay,
                interrupt: rx,
                progress: sno_harness::run::progress::Mode::detect(),
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

/// `plan`: what a run would do, without doing any of it.
pub fn plan(path: &Path, json: bool) -> i32 {
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
        Err(e) => (sno_harness::vm::Accel::Kvm, e.to_string()),
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
    let timeouts = sno_harness::run::phase_timeouts(&s, accel, 1.0);
    if json {
        let v = serde_json::json!({
            "scenario": s,
            "install_config": install_config,
            "commands": commands,
            "accel": {"accel": format!("{accel:?}").to_lowercase(), "reason": accel_reason},
            "qemu_argv": argv,
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
    println!("{}", sno_harness::vm::qemu::argv::shell_command_line(&argv));
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
    match sno_harness::vm::accel::decide(sno_harness::vm::AccelChoice::Auto) {
        Ok(d) => line(
            d.accel == sno_harness::vm::Accel::Kvm,
            false,
            "accelerator",
            format!("{:?}: {}", d.accel, d.reason),
        ),
        Err(e) => line(false, true, "accelerator", e.to_string()),
    }
    let ovmf = Path::new(sno_harness::vm::OVMF_CODE).is_file()
        && Path::new(sno_harness::vm::OVMF_VARS).is_file();
    line(
        ovmf,
        false,
        "OVMF (UEFI)",
        if ovmf {
            sno_harness::vm::OVMF_CODE.into()
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
