//! The trial boot: proof that an accelerator runs guest code, by booting a 64 KiB ROM that
//! computes a byte and writes it to QEMU's isa-debug-exit port, which makes QEMU exit with a
//! status derived from that byte.
//!
//! Why a trial and not only checks: a nested host can have a /dev/kvm that opens read-write and
//! still cannot run guests. On the host this was written on (docs/host-facts.md), `-accel kvm -cpu
//! host` aborts at start ("failed to set MSR 0x10a"), while with QEMU's default CPU model this
//! very ROM runs, with only a CPUID warning, and real guests later hang. So the trial uses the
//! same `-machine`/`-accel`/`-cpu` as `qemu::argv` and treats a CPUID warning as failure too.
//! It is necessary, not sufficient: a paravirtual KVM runs the ROM and still hangs a Linux
//! kernel (docs/host-facts.md), which is why `decide` also wants vmx or svm.

use std::fmt;
use std::fs::File;
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::Accel;

const QEMU: &str = "qemu-system-x86_64";

/// Size of the ROM. QEMU's `-bios` wants a multiple of 64 KiB; it maps the image so that its
/// last byte is at 0xFFFFFFFF, where the CPU starts.
pub const ROM_SIZE: usize = 64 * 1024;

/// Where the CPU fetches its first instruction: physical 0xFFFFFFF0 (CS base 0xFFFF0000, IP
/// 0xFFF0), i.e. 16 bytes below the top of the ROM.
pub const RESET_VECTOR: usize = ROM_SIZE - 16;

/// I/O port of the `isa-debug-exit` device; the ROM writes here.
const DEBUG_EXIT_PORT: u8 = 0xf4;

/// The trial guest's code, 16-bit real mode, placed at the reset vector. It computes its byte
/// instead of loading it, so that the expected status proves the vCPU executed instructions.
#[rustfmt::skip] // one instruction per line
const RESET_CODE: [u8; 9] = [
    0xB0, 0x15,            // mov al, 0x15
    0x00, 0xC0,            // add al, al     ; al = 0x2A
    0xE6, DEBUG_EXIT_PORT, // out 0xf4, al   ; QEMU exits with (0x2A << 1) | 1 = 85
    0xF4,                  // hlt            ; not reached when the device works
    0xEB, 0xFD,            // jmp short -3   ; back to hlt: a missed exit hangs, never runs away
];

/// QEMU's exit status after the ROM ran: isa-debug-exit exits with `(value << 1) | 1`.
pub const EXPECTED_STATUS: i32 = ((0x15 + 0x15) << 1) | 1;

/// Fill byte for the rest of the ROM: `hlt`, so a jump anywhere else stops the vCPU (and the
/// trial times out) instead of executing garbage.
const FILL: u8 = 0xF4;

/// How long a trial may take. It takes about 50 ms on an idle host, under TCG or KVM.
pub const TRIAL_TIMEOUT: Duration = Duration::from_secs(10);

/// The ROM image: `hlt` everywhere, the code at the reset vector.
pub fn rom_image() -> Vec<u8> {
    let mut rom = vec![FILL; ROM_SIZE];
    rom[RESET_VECTOR..RESET_VECTOR + RESET_CODE.len()].copy_from_slice(&RESET_CODE);
    rom
}

/// How the trial QEMU ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Exited(i32),
    Signalled(i32),
    /// Still running when the harness gave up, or stopped early for a KVM internal error
    /// (QEMU then pauses the guest and never exits on its own); killed by the harness.
    Killed,
}

/// Why a trial boot failed. The texts end up in the accelerator reason, so they name the
/// evidence and quote the first line of QEMU's stderr.
#[derive(Debug, thiserror::Error)]
pub enum TrialError {
    #[error("could not prepare the trial: {0}")]
    Setup(std::io::Error),
    #[error("could not start {QEMU}: {0}")]
    Spawn(std::io::Error),
    #[error("KVM internal error{0}")]
    KvmInternalError(Stderr),
    #[error("no exit within {0:?}, killed{1}")]
    Timeout(Duration, Stderr),
    #[error("QEMU {0} instead of exiting with status {EXPECTED_STATUS}{1}")]
    WrongExit(EndedText, Stderr),
    #[error("the guest ran but QEMU warned about CPUID{0}")]
    CpuidWarning(Stderr),
}

/// The first non-empty line of QEMU's stderr, formatted as `; stderr: "..."` (empty when QEMU
/// said nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stderr(pub Option<String>);

impl Stderr {
    fn first_line_of(text: &str) -> Self {
        let line = text.lines().map(str::trim).find(|l| !l.is_empty());
        // A line this long is a register dump or similar; the start says what happened.
        Stderr(line.map(|l| l.chars().take(200).collect()))
    }
}

impl fmt::Display for Stderr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(l) => write!(f, "; stderr: {l:?}"),
            None => Ok(()),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndedText(pub Ended);

impl fmt::Display for EndedText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Ended::Exited(0) => write!(f, "exited with status 0 as the guest reset or shut down"),
            Ended::Exited(c) => write!(f, "exited with status {c}"),
            Ended::Signalled(6) => write!(f, "was killed by SIGABRT"),
            Ended::Signalled(s) => write!(f, "was killed by signal {s}"),
            Ended::Killed => write!(f, "was killed by the harness"),
        }
    }
}

/// Judges a trial from how QEMU ended and what it printed. Pure, so the rules are tested
/// without QEMU.
pub fn judge(ended: Ended, stderr: &str, timeout: Duration) -> Result<(), TrialError> {
    let first = Stderr::first_line_of(stderr);
    if stderr.contains("KVM internal error") {
        return Err(TrialError::KvmInternalError(first));
    }
    match ended {
        Ended::Killed => Err(TrialError::Timeout(timeout, first)),
        Ended::Exited(EXPECTED_STATUS) if has_cpuid_warning(stderr) => {
            Err(TrialError::CpuidWarning(first))
        }
        Ended::Exited(EXPECTED_STATUS) => Ok(()),
        other => Err(TrialError::WrongExit(EndedText(other), first)),
    }
}

/// QEMU's "host doesn't support requested feature: CPUID..." means the vCPU is not the CPU the
/// VM asked for; the guest may run a few instructions and hang later.
fn has_cpuid_warning(stderr: &str) -> bool {
    stderr
        .lines()
        .any(|l| l.contains("warning:") && l.contains("CPUID"))
}

/// The accelerator and CPU arguments. The KVM ones are those `qemu::argv` uses for real VMs,
/// since the trial must prove that configuration; TCG's are plain (one thread, default cache)
/// because a trial of a few instructions needs nothing more.
fn accel_args(accel: Accel) -> [&'static str; 6] {
    match accel {
        Accel::Kvm => ["-machine", "q35", "-accel", "kvm", "-cpu", "host"],
        Accel::Tcg => ["-machine", "q35", "-accel", "tcg", "-cpu", "max"],
    }
}

/// Boots the trial ROM under `accel` and returns how long it took. Does not look at CPU flags
/// or /dev/kvm: that is `decide`'s job.
pub fn trial_boot(accel: Accel) -> Result<Duration, TrialError> {
    trial_boot_with(accel, &rom_image(), TRIAL_TIMEOUT)
}

/// `trial_boot` with another ROM and timeout; the tests use it to show the trial can fail.
pub fn trial_boot_with(
    accel: Accel,
    rom: &[u8],
    timeout: Duration,
) -> Result<Duration, TrialError> {
    let dir = tempfile::Builder::new()
        .prefix("sno-accel-trial-")
        .tempdir()
        .map_err(TrialError::Setup)?;
    let rom_path = dir.path().join("trial.rom");
    let stderr_path = dir.path().join("qemu.stderr");
    std::fs::write(&rom_path, rom).map_err(TrialError::Setup)?;
    // stderr goes to a file, not a pipe: a KVM internal error dumps registers, and nobody
    // reads a pipe while we poll.
    let stderr_file = File::create(&stderr_path).map_err(TrialError::Setup)?;
    let started = Instant::now();
    let mut cmd = Command::new(QEMU);
    cmd.args(accel_args(accel))
        .args(["-nodefaults", "-no-user-config", "-display", "none"])
        // A triple fault would otherwise reset and rerun the ROM until the timeout.
        .args(["-no-reboot", "-m", "16", "-smp", "1"])
        .arg("-bios")
        .arg(&rom_path)
        .args(["-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(stderr_file));
    let child = Reaped(cmd.spawn().map_err(TrialError::Spawn)?);
    let ended = wait(child, &stderr_path, started + timeout);
    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let elapsed = started.elapsed();
    judge(ended, &stderr, timeout)?;
    Ok(elapsed)
}

/// Waits for QEMU to exit, until `deadline`. Stops early when stderr reports a KVM internal
/// error: QEMU then pauses the guest and would sit there until the deadline.
fn wait(mut child: Reaped, stderr_path: &std::path::Path, deadline: Instant) -> Ended {
    use std::os::unix::process::ExitStatusExt;
    loop {
        match child.0.try_wait() {
            Ok(Some(status)) => {
                return match (status.code(), status.signal()) {
                    (Some(c), _) => Ended::Exited(c),
                    (None, Some(s)) => Ended::Signalled(s),
                    (None, None) => Ended::Killed,
                };
            }
            Ok(None) if Instant::now() < deadline && !internal_error(stderr_path) => {
                std::thread::sleep(Duration::from_millis(20));
            }
            // Deadline, internal error, or try_wait failing: Drop kills and reaps.
            _ => return Ended::Killed,
        }
    }
}

fn internal_error(stderr_path: &std::path::Path) -> bool {
    let mut text = String::new();
    File::open(stderr_path)
        .and_then(|mut f| f.read_to_string(&mut text))
        .is_ok()
        && text.contains("KVM internal error")
}

/// The trial QEMU; dropping it kills and reaps the process, so no path leaves it running or a
/// zombie behind. After `try_wait` has reaped it, std makes `kill` and `wait` no-ops (they never
/// signal a reused pid).
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rom_is_64k_with_the_code_at_the_reset_vector() {
        let rom = rom_image();
        assert_eq!(rom.len(), 64 * 1024);
        assert_eq!(
            rom.len() % (64 * 1024),
            0,
            "QEMU wants -bios in 64 KiB units"
        );
        assert_eq!(RESET_VECTOR, rom.len() - 16);
        assert_eq!(
            &rom[RESET_VECTOR..RESET_VECTOR + RESET_CODE.len()],
            &RESET_CODE
        );
        // The code fits in the 16 bytes between the reset vector and the end of the ROM.
        assert!(RESET_CODE.len() <= 16);
        // Everything else is hlt.
        assert!(rom[..RESET_VECTOR].iter().all(|&b| b == FILL));
        assert!(rom[RESET_VECTOR + RESET_CODE.len()..]
            .iter()
            .all(|&b| b == FILL));
    }

    #[test]
    fn expected_status_follows_from_the_code() {
        // mov al, imm8; add al, al; out imm8, al
        assert_eq!(RESET_CODE[0], 0xB0);
        assert_eq!(&RESET_CODE[2..4], &[0x00, 0xC0]);
        assert_eq!(&RESET_CODE[4..6], &[0xE6, 0xF4]);
        let al = RESET_CODE[1].wrapping_add(RESET_CODE[1]) as i32;
        assert_eq!(EXPECTED_STATUS, (al << 1) | 1);
        assert_eq!(EXPECTED_STATUS, 85);
        // The jmp lands on the hlt before it.
        let jmp_end = 9i32;
        assert_eq!(jmp_end + RESET_CODE[8] as i8 as i32, 6);
        assert_eq!(RESET_CODE[6], 0xF4);
    }

    #[test]
    fn the_expected_exit_without_warnings_passes() {
        assert!(judge(Ended::Exited(EXPECTED_STATUS), "", TRIAL_TIMEOUT).is_ok());
    }

    #[test]
    fn a_cpuid_warning_fails_even_with_the_right_status() {
        let e = judge(
            Ended::Exited(EXPECTED_STATUS),
            "qemu-system-x86_64: warning: host doesn't support requested feature: CPUID.01H:ECX.pni [bit 0]\n",
            TRIAL_TIMEOUT,
        )
        .unwrap_err();
        assert!(matches!(e, TrialError::CpuidWarning(_)));
        assert!(e.to_string().contains("CPUID.01H:ECX.pni"), "{e}");
    }

    #[test]
    fn an_abort_quotes_the_first_stderr_line() {
        let stderr = "qemu-system-x86_64: error: failed to set MSR 0x10a to 0x69\n\
                      qemu-system-x86_64: ../../target/i386/kvm/kvm.c:3183: kvm_buf_set_msrs: Assertion failed.\n";
        let e = judge(Ended::Signalled(6), stderr, TRIAL_TIMEOUT).unwrap_err();
        assert_eq!(
            e.to_string(),
            "QEMU was killed by SIGABRT instead of exiting with status 85; stderr: \
             \"qemu-system-x86_64: error: failed to set MSR 0x10a to 0x69\""
        );
    }

    #[test]
    fn an_internal_error_is_named_even_when_killed() {
        let stderr = "\nKVM internal error. Suberror: 1\nemulation failure\nEAX=00000000\n";
        let e = judge(Ended::Killed, stderr, TRIAL_TIMEOUT).unwrap_err();
        assert!(matches!(e, TrialError::KvmInternalError(_)));
        assert_eq!(
            e.to_string(),
            "KVM internal error; stderr: \"KVM internal error. Suberror: 1\""
        );
    }

    #[test]
    fn silence_until_killed_is_a_timeout() {
        let e = judge(Ended::Killed, "", Duration::from_secs(3)).unwrap_err();
        assert_eq!(e.to_string(), "no exit within 3s, killed");
    }

    #[test]
    fn other_statuses_are_wrong_exits() {
        let e = judge(
            Ended::Exited(1),
            "qemu-system-x86_64: -accel kvm: failed\n",
            TRIAL_TIMEOUT,
        )
        .unwrap_err();
        assert!(matches!(e, TrialError::WrongExit(..)));
        assert!(e.to_string().contains("exited with status 1"), "{e}");
        assert!(e.to_string().contains("-accel kvm: failed"), "{e}");
        let e = judge(Ended::Exited(0), "", TRIAL_TIMEOUT).unwrap_err();
        assert!(e.to_string().contains("reset or shut down"), "{e}");
    }

    #[test]
    fn long_stderr_lines_are_cut() {
        let s = Stderr::first_line_of(&"x".repeat(1000));
        assert_eq!(s.0.unwrap().len(), 200);
    }
}
