//! `sno-harness doctor [SCENARIO]`: what the host has and lacks for running scenarios, and
//! with a scenario, the very checks `run` makes before it creates anything.

use std::path::{Path, PathBuf};

use sno_harness::exit;
use sno_harness::fleet::preflight::{Finding, Level, Probe};
use sno_harness::hw::host_programs::{self, HostProgram, Need};
use sno_harness::hw::{Accel, AccelChoice, Firmware};
use sno_harness::vm::Backend;

use super::error::{bad, Outcome};

/// Check the host: QEMU, a usable KVM or TCG, OVMF, coreos-installer, disk space; with a
/// SCENARIO also what `run` checks before it starts it (installer, pull secret, memory and
/// CPUs for its VM, the accelerator, libvirt). Exit 0 when it can run, 3 when it cannot,
/// 2 for a scenario that does not load.
#[derive(clap::Args)]
pub struct DoctorArgs {
    /// A scenario file to check the host for, as `run SCENARIO` would before it starts.
    scenario: Option<PathBuf>,
    /// Print the checks as JSON on stdout (`ready`, and each check's `check`, `level`
    /// (`ok`, `warn` or `missing`) and `detail`).
    #[arg(long)]
    json: bool,
    /// The backend the scenario would run on: `qemu` or `libvirt`.
    #[arg(long, default_value = "qemu", value_parser = sno_harness::vm::backend::NAMES)]
    backend: String,
    /// The libvirt URI for `--backend libvirt`.
    #[arg(long, default_value = sno_harness::vm::libvirt::DEFAULT_URI)]
    connect: String,
}

/// The checks' findings.
#[derive(Default)]
struct Checks {
    found: Vec<Finding>,
}

impl Checks {
    /// One finding: ok, missing (needed and absent: blocks) or a warning.
    fn line(&mut self, ok: bool, needed: bool, what: &str, detail: String) {
        let level = match (ok, needed) {
            (true, _) => Level::Ok,
            (false, true) => Level::Missing,
            (false, false) => Level::Warn,
        };
        self.found.push(Finding::new(what, level, detail));
    }

    /// A program's version line, or how to install it. Only what every scenario on the
    /// default backend needs blocks; the rest is a warning.
    fn program(&mut self, p: &HostProgram) {
        let v = version(p.name, p.version_args.unwrap_or_default());
        let needed = matches!(p.need, Need::EveryRun | Need::QemuBackend);
        self.line(
            v.is_some(),
            needed,
            p.name,
            v.unwrap_or_else(|| p.missing()),
        );
    }
}

/// Whether this build has the libvirt backend: without it only `--backend qemu` runs, which
/// is a warning, not a host that cannot run scenarios.
fn libvirt_support(c: &mut Checks) {
    let built_in = sno_harness::vm::backend::LIBVIRT_BUILT_IN;
    let detail = match built_in {
        true => "built in (--backend libvirt)".to_string(),
        false => "not built in: this build of sno-harness has no libvirt support (built without the \"libvirt\" feature); --backend libvirt needs a build with default features".to_string(),
    };
    c.line(built_in, false, "libvirt support", detail);
}

fn version(cmd: &str, args: &[&str]) -> Option<String> {
    let o = std::process::Command::new(cmd).args(args).output().ok()?;
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    o.status
        .success()
        .then(|| text.lines().next().unwrap_or("").trim().to_string())
}

pub fn doctor(a: DoctorArgs) -> Outcome {
    // `--backend libvirt` in a build without it is refused with or without a scenario.
    Backend::named(&a.backend).map_err(bad)?;
    let scenario = match &a.scenario {
        Some(path) => Some(scenario_findings(path, &a)?),
        None => None,
    };
    let host = host_findings();
    let ready = host
        .iter()
        .chain(scenario.iter().flat_map(|c| &c.found))
        .all(|f| f.level != Level::Missing);
    if a.json {
        print_json(ready, &host, scenario.as_ref());
    } else {
        print_text(ready, &host, scenario.as_ref());
    }
    Ok(if ready {
        exit::OK
    } else {
        exit::HOST_NOT_READY
    })
}

/// What the host has, whatever the scenario: the programs and files of
/// `hw::host_programs` (the list the run's preflight checks too), the accelerator, root for a
/// fixture build, and disk space.
fn host_findings() -> Vec<Finding> {
    let mut c = Checks::default();
    // The programs shown by their version; the files and the fixture's tools come below.
    for p in host_programs::ALL
        .iter()
        .filter(|p| p.version_args.is_some())
    {
        c.program(p);
    }
    accelerator(&mut c);
    libvirt_support(&mut c);
    firmware(&mut c);
    fixture_tools(&mut c);
    disk_space(&mut c);
    c.found
}

/// A scenario and the run's own preflight findings for it on the chosen backend.
struct ScenarioChecks {
    name: String,
    backend: &'static str,
    found: Vec<Finding>,
}

/// A scenario that does not load, or does not fit the backend, is bad input.
fn scenario_findings(
    path: &Path,
    a: &DoctorArgs,
) -> Result<ScenarioChecks, super::error::CliError> {
    let s = sno_harness::scenario::load(path).map_err(bad)?;
    let backend = Backend::named(&a.backend).map_err(bad)?.on(&a.connect);
    if backend.uri().is_some() {
        sno_harness::vm::libvirt::remote::remote_target(&a.connect)
            .map_err(|e| bad(format!("--connect: {e}")))?;
    }
    sno_harness::fleet::preflight::backend_fits(&[&s], &backend).map_err(bad)?;
    let found = sno_harness::fleet::preflight::findings(&[&s], &backend, &Probe::host());
    Ok(ScenarioChecks {
        name: s.name.clone(),
        backend: backend.name(),
        found,
    })
}

fn print_text(ready: bool, host: &[Finding], scenario: Option<&ScenarioChecks>) {
    let print = |f: &Finding| {
        let mark = match f.level {
            Level::Ok => "ok",
            Level::Warn => "warn",
            Level::Missing => "MISSING",
        };
        outln!("{mark:<8} {:<22} {}", f.check, f.detail);
    };
    host.iter().for_each(print);
    if let Some(c) = scenario {
        outln!("\nscenario {} on {}:", c.name, c.backend);
        c.found.iter().for_each(print);
    }
    let blocking: Vec<&str> = host
        .iter()
        .chain(scenario.iter().flat_map(|c| &c.found))
        .filter(|f| f.level == Level::Missing)
        .map(|f| f.check.as_str())
        .collect();
    let what = if scenario.is_some() {
        "the scenario"
    } else {
        "scenarios"
    };
    if ready {
        outln!("\nthe host can run {what}");
    } else {
        outln!("\nthe host cannot run {what}: {}", blocking.join(", "));
    }
}

fn print_json(ready: bool, host: &[Finding], scenario: Option<&ScenarioChecks>) {
    let doc = serde_json::json!({
        "ready": ready,
        "host": host,
        "scenario": scenario.map(|c| serde_json::json!({
            "name": c.name,
            "backend": c.backend,
            "checks": c.found,
        })),
    });
    outln!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
}

/// Runs the KVM trial guest when the cheap checks pass. Falling back to TCG is a warning,
/// not a blocker: scenarios run, slowly, and the reason says what failed.
fn accelerator(c: &mut Checks) {
    match sno_harness::vm::accel::decide(AccelChoice::Auto) {
        Ok(d) => c.line(
            d.accel == Accel::Kvm,
            false,
            "accelerator",
            format!("{}: {}", d.accel, d.reason),
        ),
        Err(e) => c.line(false, true, "accelerator", e.to_string()),
    }
}

/// OVMF for `firmware = "uefi"`, and its Secure Boot build for `"uefi-secure"`.
fn firmware(c: &mut Checks) {
    for (firmware, what) in [
        (Firmware::Uefi, "OVMF (UEFI)"),
        (Firmware::UefiSecure, "OVMF (UEFI Secure Boot)"),
    ] {
        let files: Vec<_> = host_programs::firmware_files(firmware).collect();
        let missing: Vec<String> = files
            .iter()
            .filter(|f| !Path::new(f.name).is_file())
            .map(|f| f.missing())
            .collect();
        c.line(
            missing.is_empty(),
            false,
            what,
            if missing.is_empty() {
                files[0].name.into()
            } else {
                missing.join("; ")
            },
        );
    }
}

/// Root and the image tools: needed to build minisno, not to run cached builds.
fn fixture_tools(c: &mut Checks) {
    let root = unsafe { libc::geteuid() } == 0;
    c.line(
        root,
        false,
        "root",
        if root {
            "yes (can build minisno)".into()
        } else {
            "no: building minisno needs root; cached builds work".into()
        },
    );
    for tool in host_programs::needed_by(Need::FixtureBuild) {
        let found = sno_harness::util::which(tool.name);
        c.line(
            found.is_some(),
            false,
            tool.name,
            found
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| tool.missing()),
        );
    }
}

/// What the check asks for: a fixture build (3 GiB) and a run (2 GiB) side by side, which is
/// what the message says.
const NEEDED_GIB: u64 = 5;

fn disk_space(c: &mut Checks) {
    let cache = sno_harness::fixture::default_cache_dir();
    let free = free_space(&cache);
    c.line(
        free.is_none_or(enough_space),
        true,
        "disk space",
        match free {
            Some(f) => format!(
                "{:.1} GiB free under {} (needs {NEEDED_GIB} GiB: a fixture build takes about 3 GiB, a run 2 GiB)",
                f as f64 / (1u64 << 30) as f64,
                cache.display()
            ),
            None => format!("unknown for {}", cache.display()),
        },
    );
}

fn enough_space(free_bytes: u64) -> bool {
    free_bytes >= NEEDED_GIB << 30
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_disk_space_rule_is_the_one_the_message_states() {
        assert!(enough_space(NEEDED_GIB << 30));
        assert!(!enough_space((NEEDED_GIB << 30) - 1));
    }
}
