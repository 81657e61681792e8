//! `sno-harness doctor`: what the host has and lacks for running scenarios.

use std::path::Path;

use sno_harness::exit;
use sno_harness::hw::{Accel, AccelChoice, OVMF_CODE, OVMF_VARS};

use super::error::Outcome;

/// Check the host: QEMU, a usable KVM or TCG, OVMF, coreos-installer, disk space.
/// Exit 3 when it cannot run a scenario.
#[derive(clap::Args)]
pub struct DoctorArgs {}

/// The checks' lines, and what blocks running scenarios.
#[derive(Default)]
struct Checks {
    blocking: Vec<String>,
}

impl Checks {
    /// One line: `ok`, `MISSING` (needed and absent: blocks) or `warn`.
    fn line(&mut self, ok: bool, needed: bool, what: &str, detail: String) {
        let mark = match (ok, needed) {
            (true, _) => "ok  ",
            (false, true) => "MISSING",
            (false, false) => "warn",
        };
        outln!("{mark:<8} {what:<22} {detail}");
        if !ok && needed {
            self.blocking.push(what.to_string());
        }
    }

    /// A program's version line, or how to install it.
    fn program(&mut self, cmd: &str, args: &[&str], needed: bool, missing: &str) {
        let v = version(cmd, args);
        self.line(
            v.is_some(),
            needed,
            cmd,
            v.unwrap_or_else(|| missing.into()),
        );
    }
}

fn version(cmd: &str, args: &[&str]) -> Option<String> {
    let o = std::process::Command::new(cmd).args(args).output().ok()?;
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    o.status
        .success()
        .then(|| text.lines().next().unwrap_or("").trim().to_string())
}

pub fn doctor(_: DoctorArgs) -> Outcome {
    let mut c = Checks::default();
    c.program(
        "qemu-system-x86_64",
        &["--version"],
        true,
        "not found (apt-get install qemu-system-x86)",
    );
    c.program(
        "qemu-img",
        &["--version"],
        true,
        "not found (apt-get install qemu-utils)",
    );
    accelerator(&mut c);
    firmware(&mut c);
    c.program(
        "coreos-installer",
        &["--version"],
        true,
        "not found (cargo install coreos-installer --locked)",
    );
    let kubectl = version("kubectl", &["version", "--client"]);
    c.line(
        kubectl.is_some(),
        false,
        "kubectl",
        kubectl.unwrap_or_else(|| "not found (optional; used by the API tests)".into()),
    );
    fixture_tools(&mut c);
    disk_space(&mut c);
    Ok(if c.blocking.is_empty() {
        outln!("\nthe host can run scenarios");
        exit::OK
    } else {
        outln!("\nthe host cannot run scenarios: {}", c.blocking.join(", "));
        exit::HOST_NOT_READY
    })
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

fn firmware(c: &mut Checks) {
    let ovmf = Path::new(OVMF_CODE).is_file() && Path::new(OVMF_VARS).is_file();
    c.line(
        ovmf,
        false,
        "OVMF (UEFI)",
        if ovmf {
            OVMF_CODE.into()
        } else {
            "not found: firmware = \"uefi\" scenarios cannot run (apt-get install ovmf)".into()
        },
    );
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
        c.line(
            found.is_some(),
            false,
            tool,
            found.map(|p| p.display().to_string()).unwrap_or_else(|| {
                "not found: needed to build minisno (ci/install-host-deps.sh)".into()
            }),
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
