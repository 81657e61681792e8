//! Badness in the guest's logs: lines that mean something went wrong even when every phase
//! passed (a kernel oops during the install, a crash of a bootstrap unit, a unit dropped to
//! break an ordering cycle). The serial console and every boot's journal are scanned line by
//! line. What a hit does is scoped as the peers scope it (docs/badness.md has the table):
//! - the kernel and the boot itself (panic, Oops, BUG, the kernel's general protection fault,
//!   an emergency shell, dracut's fatal refusal, I/O to an offline device, an ordering cycle,
//!   Secure Boot refusing a boot loader or kernel) fail the current phase; a soft lockup is a warning under TCG, where the emulated CPUs
//!   stall (kola treats it so); a kernel `WARNING: CPU:` is a warning unless the scenario says
//!   (`[badness] kernel_warnings`): the kernel carries on after one, and neither the installer's
//!   waits nor the CVO look at the kernel's log;
//! - a crash (OOM kill, segfault or a user-space general protection fault, Go `panic:`, core
//!   dump) of a bootstrap unit (bootkube,
//!   install-to-disk, kubelet) fails; of any other unit it is a warning on the openshift profile
//!   (operators restart and recover) and fails on the fixture's, unless the scenario says
//!   (`[badness] process_crashes`);
//! - the scenario's allow-list turns any matching line into a warning.
//!
//! The patterns are the kernel's and systemd's own wording (printk formats and systemd's log
//! messages), so they match on real RHCOS as on the fixture. They are deliberately narrow: a
//! false alarm in a CI gate costs as much as a miss.

use regex::Regex;
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::sync::OnceLock;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    KernelPanic,
    Oops,
    SoftLockup,
    KernelBug,
    KernelWarning,
    GeneralProtectionFault,
    EmergencyShell,
    DracutFatal,
    OfflineDeviceIo,
    OomKill,
    Segfault,
    GoPanic,
    CoreDump,
    OrderingCycle,
    BootRefused,
}

impl Kind {
    pub fn describe(self) -> &'static str {
        match self {
            Kind::KernelPanic => "kernel panic",
            Kind::Oops => "kernel Oops",
            Kind::SoftLockup => "soft lockup",
            Kind::KernelBug => "kernel BUG",
            Kind::KernelWarning => "kernel WARNING",
            Kind::GeneralProtectionFault => "general protection fault",
            Kind::EmergencyShell => "emergency shell",
            Kind::DracutFatal => "dracut's fatal refusal",
            Kind::OfflineDeviceIo => "I/O to an offline device",
            Kind::OomKill => "OOM kill",
            Kind::Segfault => "segfault",
            Kind::GoPanic => "Go panic",
            Kind::CoreDump => "core dump",
            Kind::OrderingCycle => "systemd ordering cycle",
            Kind::BootRefused => "Secure Boot refusal",
        }
    }

    /// A process went wrong, not the kernel or the boot.
    pub fn is_process_crash(self) -> bool {
        matches!(
            self,
            Kind::OomKill | Kind::Segfault | Kind::GoPanic | Kind::CoreDump
        )
    }
}

/// The units whose crash is the bootstrap's own failure, on the live and the installed system.
pub const BOOTSTRAP_UNITS: &[&str] = &[
    "bootkube.service",
    "install-to-disk.service",
    "kubelet.service",
];

/// How a run scopes its hits: the profile's (or the scenario's) view of process crashes, and
/// the accelerator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// A crash outside the bootstrap units fails the run (the fixture's default), or is a
    /// warning (the openshift profile's).
    pub process_crashes_fatal: bool,
    /// The VM runs under TCG.
    pub tcg: bool,
    /// A kernel `WARNING: CPU:` fails the run (`[badness] kernel_warnings = "fatal"`) or is a
    /// warning (the default on both profiles).
    pub kernel_warnings_fatal: bool,
}

/// Strict until told otherwise: every crash fails.
impl Default for Policy {
    fn default() -> Self {
        Policy {
            process_crashes_fatal: true,
            tcg: false,
            kernel_warnings_fatal: true,
        }
    }
}

impl Policy {
    /// Why a hit of `kind` in `unit` (None: the console or the kernel) is only a warning, or
    /// None when it fails the run.
    pub fn warning(self, kind: Kind, unit: Option<&str>) -> Option<String> {
        if kind == Kind::SoftLockup && self.tcg {
            return Some("a soft lockup under TCG, where the emulated CPUs stall".into());
        }
        if kind == Kind::KernelWarning && !self.kernel_warnings_fatal {
            return Some(
                "a kernel WARNING: the kernel goes on after it and no gate of the install looks at the kernel's log ([badness] kernel_warnings = \"fatal\" makes it fail)".into(),
            );
        }
        let bootstrap = unit.is_some_and(|u| BOOTSTRAP_UNITS.contains(&u));
        if kind.is_process_crash() && !bootstrap && !self.process_crashes_fatal {
            let whose = unit.map_or("a process outside the bootstrap units".to_string(), |u| {
                format!("{u}, not a bootstrap unit")
            });
            return Some(format!(
                "a crash of {whose}: operators restart and recover ([badness] process_crashes = \"fatal\" makes it fail)"
            ));
        }
        None
    }
}

fn patterns() -> &'static [(Kind, Regex)] {
    static P: OnceLock<Vec<(Kind, Regex)>> = OnceLock::new();
    P.get_or_init(|| {
        let p = |k, re: &str| (k, Regex::new(re).expect("a valid pattern"));
        vec![
            p(Kind::KernelPanic, r"Kernel panic - not syncing"),
            // "Oops: 0000 [#1] SMP", "Oops: general protection fault, ..." (6.x), "Oops - BUG"
            p(Kind::Oops, r"\bOops(: | - )"),
            // "watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [etcd:1234]", before the other
            // BUGs.
            p(Kind::SoftLockup, r"BUG: soft lockup"),
            // "BUG: kernel NULL pointer dereference", "watchdog: BUG: ..."; case matters:
            // "MP-BIOS bug: 8254 timer not connected" is a harmless notice.
            p(Kind::KernelBug, r"\bBUG: "),
            // The kernel's __warn(): "WARNING: CPU: 1 PID: 120 at mm/page_alloc.c:4386 ...".
            p(Kind::KernelWarning, r"WARNING: CPU: \d+ PID: \d+"),
            // The kernel's own fault, as die() prints it: "general protection fault: 0000 [#1]
            // SMP PTI" or, since 5.x, "general protection fault, probably for non-canonical
            // address 0x...: 0000 [#1] SMP". A user-space process's fault is printed by the
            // trap handler as "traps: prog[123] general protection fault ip:... sp:... error:0
            // in ...": a process crash (below, with the segfaults), not the kernel's.
            p(
                Kind::GeneralProtectionFault,
                r"general protection fault(, [^:]*)?: [0-9a-f]{4} \[#\d+\]",
            ),
            // systemd ("You are in emergency mode", "Reached target emergency.target") and
            // dracut ("Entering emergency mode. Exit the shell to continue.").
            p(
                Kind::EmergencyShell,
                r"You are in emergency mode|Entering emergency mode|Reached target (emergency\.target|Emergency Mode)|Started emergency\.service",
            ),
            // dracut's die(): "dracut: FATAL: ..." and "dracut: Refusing to continue".
            p(Kind::DracutFatal, r"dracut: FATAL: |dracut: Refusing to continue"),
            // The SCSI layer: "sd 0:0:0:0: rejecting I/O to offline device".
            p(Kind::OfflineDeviceIo, r"rejecting I/O to offline device"),
            // The kernel ("Out of memory: Killed process 123 (etcd)", "Memory cgroup out of
            // memory: Killed process ...", "... invoked oom-killer") and systemd ("A process of
            // this unit has been killed by the OOM killer", systemd-oomd's "Killed ... due to
            // memory pressure").
            p(
                Kind::OomKill,
                r"[Oo]ut of memory: Killed process|invoked oom-killer|killed by the OOM killer|due to memory (used|pressure)",
            ),
            // The kernel's "prog[123]: segfault at 0 ip ... error 4 in ...", its trap handler's
            // "traps: prog[123] general protection fault ip:... sp:... error:0 in ..." (a
            // user-space process that touched a non-canonical address) and systemd's "Main
            // process exited, code=dumped, status=11/SEGV".
            p(
                Kind::Segfault,
                r"\bsegfault at [0-9a-f]+ |\btraps: .*general protection fault ip:|status=11/SEGV",
            ),
            // A Go program's runtime panic, as its first line reaches the journal.
            p(Kind::GoPanic, r"^panic: "),
            // systemd-coredump: "Process 1234 (crio) of user 0 dumped core."
            p(Kind::CoreDump, r"of user \d+ dumped core"),
            // "Found ordering cycle on foo.service/start" and "Job foo.service/start deleted to
            // break ordering cycle starting with ...".
            p(
                Kind::OrderingCycle,
                r"Found ordering cycle on|to break ordering cycle",
            ),
            // Secure Boot refusing an image, in the words of each stage that checks one:
            // - the firmware (edk2's BdsDxe, OVMF 2022.11): "BdsDxe: failed to load Boot0001
            //   "UEFI QEMU DVD-ROM QM00005 " from PciRoot(0x0)/...: Access Denied" for a loader
            //   its db does not trust ("Security Violation" when it was started and refused);
            // - shim, for a second stage or kernel its certificates do not verify:
            //   "Verification failed: (0x1A) Security Violation";
            // - GRUB's shim_lock verifier (Debian's 2.06), for a kernel shim does not verify:
            //   "error: bad shim signature.".
            // A boot option that is merely absent ("...: Not Found") is not one.
            p(
                Kind::BootRefused,
                r"BdsDxe: failed to (load|start) Boot[0-9A-Fa-f]{4} .*: (Access Denied|Security Violation)|Verification failed: (\(0x1A\) )?Security Violation|error: bad shim signature",
            ),
        ]
    })
}

/// The kind of badness in `line`, if any.
pub fn scan(line: &str) -> Option<Kind> {
    patterns()
        .iter()
        .find(|(_, re)| re.is_match(line))
        .map(|(k, _)| *k)
}

/// A line that matched, and where it was seen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hit {
    pub kind: Kind,
    /// `serial` or `journal <unit>`.
    pub source: String,
    pub line: String,
    pub t_ms: u64,
    /// For an emergency shell or dracut's refusal, the lines of the same source just before
    /// it: what failed says why there (the unit's or the initrd's own words).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub before: Vec<String>,
    /// The allow-list pattern that made it a warning, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_by: Option<String>,
    /// Why its kind, where it was seen, is a warning (`Policy`), if it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

impl Hit {
    /// It fails the run: neither the allow-list nor the policy makes it a warning.
    pub fn is_fatal(&self) -> bool {
        self.allowed_by.is_none() && self.warning.is_none()
    }
}

impl Hit {
    /// For a failure reason or a warning: the kind, where, the line itself, and the lines
    /// before it when it has them.
    pub fn describe(&self) -> String {
        let mut d = format!(
            "{} in the {} at {:.1} s: {:?}",
            self.kind.describe(),
            self.source,
            self.t_ms as f64 / 1000.0,
            self.line.trim()
        );
        if !self.before.is_empty() {
            let quoted: Vec<String> = self.before.iter().map(|l| format!("{l:?}")).collect();
            d.push_str(&format!(", after {}", quoted.join(" ")));
        }
        d
    }
}

/// The scenario's allow-list, compiled: hits whose line matches one of these are warnings.
#[derive(Debug, Clone, Default)]
pub struct AllowList(Vec<Regex>);

impl AllowList {
    /// Patterns were validated when the scenario was read; an invalid one here is a bug.
    pub fn new(patterns: &[String]) -> Result<AllowList, regex::Error> {
        patterns
            .iter()
            .map(|p| Regex::new(p))
            .collect::<Result<_, _>>()
            .map(AllowList)
    }

    pub fn allowing(&self, line: &str) -> Option<String> {
        self.0
            .iter()
            .find(|re| re.is_match(line))
            .map(|re| re.as_str().to_string())
    }
}

/// Lines longer than this are cut in reports (a runaway line must not bloat result.json).
const MAX_LINE: usize = 400;

/// How many lines before an emergency shell its hit quotes.
const LINES_BEFORE: usize = 6;

/// `line`, cut to [`MAX_LINE`] bytes at a character boundary.
fn cut_line(line: &str) -> String {
    let mut text = line.to_string();
    if text.len() > MAX_LINE {
        let mut cut = MAX_LINE;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    text
}

/// Every hit of a run, in order; repeats of the same line are counted, not kept.
#[derive(Debug, Clone, Default)]
pub struct Findings {
    pub hits: Vec<Hit>,
    pub repeats: u32,
    /// The last lines of each source, for the hits that quote them.
    recent: BTreeMap<String, VecDeque<String>>,
}

impl Findings {
    /// Scans one line; returns the new hit, if the line is one.
    pub fn observe(
        &mut self,
        scope: (&AllowList, Policy),
        (source, unit): (&str, Option<&str>),
        line: &str,
        t_ms: u64,
    ) -> Option<&Hit> {
        let (allow, policy) = scope;
        let text = cut_line(line.trim());
        let Some(kind) = scan(line) else {
            self.remember(source, text);
            return None;
        };
        if self
            .hits
            .iter()
            .any(|h| h.line == text && h.source == source)
        {
            self.repeats += 1;
            return None;
        }
        let before = match kind {
            Kind::EmergencyShell | Kind::DracutFatal => self
                .recent
                .get(source)
                .map(|r| r.iter().cloned().collect())
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        self.remember(source, text.clone());
        let (mut allowed_by, mut warning) = (allow.allowing(&text), policy.warning(kind, unit));
        if allowed_by.is_none() {
            if let Some(kill) = self.the_units_kill_a_slice_reports(&text) {
                (allowed_by, warning) = (kill.allowed_by.clone(), kill.warning.clone());
            }
        }
        self.hits.push(Hit {
            kind,
            source: source.to_string(),
            allowed_by,
            warning,
            line: text,
            t_ms,
            before,
        });
        self.hits.last()
    }

    /// systemd reports an OOM kill for every unit whose cgroup's `memory.events` counted it
    /// (src/core/unit.c, unit_check_oom), and cgroup v2 counts a kill in each ancestor too:
    /// after `X.service: A process of this unit has been killed by the OOM killer.` comes, as
    /// systemd gets to it, the same sentence for `system.slice`. That is the same kill, judged
    /// as the unit's was (its allow-list pattern, its warning): the earlier unit's hit, when
    /// `line` is a slice's report and a unit's kill was seen.
    fn the_units_kill_a_slice_reports(&self, line: &str) -> Option<&Hit> {
        static SLICE: OnceLock<Regex> = OnceLock::new();
        static UNIT: OnceLock<Regex> = OnceLock::new();
        let slice = SLICE.get_or_init(|| {
            Regex::new(r"^\S+\.slice: A process of this unit has been killed by the OOM killer")
                .expect("valid")
        });
        let unit = UNIT.get_or_init(|| {
            Regex::new(
                r"^\S+\.(service|scope): A process of this unit has been killed by the OOM killer",
            )
            .expect("valid")
        });
        if !slice.is_match(line) {
            return None;
        }
        self.hits
            .iter()
            .rev()
            .find(|h| h.kind == Kind::OomKill && unit.is_match(&h.line))
    }

    fn remember(&mut self, source: &str, line: String) {
        if line.is_empty() {
            return;
        }
        let recent = self.recent.entry(source.to_string()).or_default();
        if recent.len() == LINES_BEFORE {
            recent.pop_front();
        }
        recent.push_back(line);
    }

    /// The first hit that fails the run.
    pub fn first_failing(&self) -> Option<&Hit> {
        self.hits.iter().find(|h| h.is_fatal())
    }

    pub fn warnings(&self) -> impl Iterator<Item = &Hit> {
        self.hits.iter().filter(|h| !h.is_fatal())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_kernel_and_systemd_lines_are_recognised() {
        let cases = [
            ("[   12.345678] Kernel panic - not syncing: VFS: Unable to mount root fs on unknown-block(0,0)", Kind::KernelPanic),
            ("[  101.000001] Oops: 0000 [#1] PREEMPT SMP NOPTI", Kind::Oops),
            ("[   55.1] Oops: general protection fault, probably for non-canonical address 0xdead: 0000 [#1] SMP", Kind::Oops),
            ("[   33.2] BUG: kernel NULL pointer dereference, address: 0000000000000008", Kind::KernelBug),
            ("[  200.0] watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [etcd:1234]", Kind::SoftLockup),
            ("[   40.1] WARNING: CPU: 1 PID: 120 at mm/page_alloc.c:4386 __alloc_pages+0x2b5/0x330", Kind::KernelWarning),
            ("dracut: FATAL: Don't know how to handle 'root=live:CDLABEL=x'", Kind::DracutFatal),
            ("dracut: Refusing to continue", Kind::DracutFatal),
            ("[  88.8] sd 0:0:0:0: rejecting I/O to offline device", Kind::OfflineDeviceIo),
            ("panic: runtime error: invalid memory address or nil pointer dereference", Kind::GoPanic),
            ("Process 4321 (crio) of user 0 dumped core.", Kind::CoreDump),
            ("[    9.9] general protection fault: 0000 [#1] SMP PTI", Kind::GeneralProtectionFault),
            ("[   61.0] general protection fault, probably for non-canonical address 0xdead000000000100: 0000 [#1] PREEMPT SMP NOPTI", Kind::GeneralProtectionFault),
            // A user-space process's fault, from the kernel's trap handler: a process crash.
            ("[  123.4] traps: crio[2201] general protection fault ip:55d0c1a2b3c4 sp:7ffd2e0c1a28 error:0 in crio[55d0c0000000+2000000]", Kind::Segfault),
            ("You are in emergency mode. After logging in, type \"journalctl -xb\" to view", Kind::EmergencyShell),
            ("dracut-initqueue[412]: Entering emergency mode. Exit the shell to continue.", Kind::EmergencyShell),
            ("[  OK  ] Reached target emergency.target - Emergency Mode.", Kind::EmergencyShell),
            ("[  400.1] Out of memory: Killed process 2301 (kube-apiserver) total-vm:2000000kB", Kind::OomKill),
            ("[  400.1] Memory cgroup out of memory: Killed process 812 (tail) total-vm:40000kB", Kind::OomKill),
            ("[  400.0] etcd invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0", Kind::OomKill),
            ("crio.service: A process of this unit has been killed by the OOM killer.", Kind::OomKill),
            ("[   77.7] bootkube.sh[999]: segfault at 0 ip 000055d5 sp 00007ffc error 4 in bash[55d5+1000]", Kind::Segfault),
            ("kubelet.service: Main process exited, code=dumped, status=11/SEGV", Kind::Segfault),
            ("systemd[1]: multi-user.target: Found ordering cycle on bootkube.service/start", Kind::OrderingCycle),
            ("systemd[1]: multi-user.target: Job bootkube.service/start deleted to break ordering cycle starting with multi-user.target/start", Kind::OrderingCycle),
            // OVMF's Secure Boot build refusing an unsigned GRUB on the live ISO, and its EFI
            // shell (as its console showed them under QEMU 7.2, Debian's ovmf 2022.11).
            ("BdsDxe: failed to load Boot0001 \"UEFI QEMU DVD-ROM QM00011 \" from PciRoot(0x0)/Pci(0x1F,0x2)/Sata(0x5,0xFFFF,0x0): Access Denied", Kind::BootRefused),
            ("BdsDxe: failed to start Boot0002 \"EFI Internal Shell\" from Fv(7CB8BDC9-F8EB-4F34-AAEA-3EE4AF6516A1)/FvFile(7C04A583-9E3E-4F1C-AD65-E05268D0B4D1): Security Violation", Kind::BootRefused),
            ("Verification failed: (0x1A) Security Violation", Kind::BootRefused),
            ("error: bad shim signature.", Kind::BootRefused),
        ];
        for (line, kind) in cases {
            assert_eq!(scan(line), Some(kind), "{line}");
        }
    }

    #[test]
    fn harmless_lines_seen_in_passing_runs_are_not_badness() {
        for line in [
            "[    0.032000] ..MP-BIOS bug: 8254 timer not connected to IO-APIC",
            "[    0.000000] calibrate_delay_direct() failed to get a good estimate for loops_per_jiffy.",
            "Failed to start minisno-late.service - a unit that is allowed to fail.",
            "[    1.2] Spectre V2 : Mitigation: Retpolines",
            "bootkube.sh[1234]: Waiting for CEO to finish...",
            "coreos-installer: Read disk 12.0 MiB/86.8 MiB (13%)",
            "kernel: Memory: 1983420K/2096600K available",
            "systemd[1]: Reached target multi-user.target - Multi-User System.",
            "the debug build has no bugs: none",
            // An absent boot option, tried and passed over on every UEFI boot of an empty disk.
            "BdsDxe: failed to load Boot0001 \"UEFI Misc Device\" from PciRoot(0x0)/Pci(0x8,0x0): Not Found",
            "BdsDxe: loading Boot0001 \"UEFI QEMU DVD-ROM QM00011 \" from PciRoot(0x0)/Pci(0x1F,0x2)/Sata(0x5,0xFFFF,0x0)",
            "[    0.000000] secureboot: Secure boot enabled",
        ] {
            assert_eq!(scan(line), None, "{line}");
        }
    }

    #[test]
    fn a_hit_is_a_failure_unless_the_allow_list_covers_it() {
        let allow = AllowList::new(&[r"\(tail\)".to_string()]).unwrap();
        let mut f = Findings::default();
        let strict = Policy {
            process_crashes_fatal: true,
            tcg: false,
            kernel_warnings_fatal: true,
        };
        let h = f
            .observe(
                (&allow, strict),
                ("serial", None),
                "[ 9.1] Memory cgroup out of memory: Killed process 812 (tail)",
                9_000,
            )
            .unwrap();
        assert_eq!(h.allowed_by.as_deref(), Some(r"\(tail\)"));
        assert!(f.first_failing().is_none());
        f.observe(
            (&allow, strict),
            ("journal crio.service", Some("crio.service")),
            "crio.service: A process of this unit has been killed by the OOM killer.",
            9_500,
        );
        let failing = f.first_failing().unwrap();
        assert_eq!(
            failing.describe(),
            "OOM kill in the journal crio.service at 9.5 s: \"crio.service: A process of this unit has been killed by the OOM killer.\""
        );
        assert_eq!(f.warnings().count(), 1);
    }

    #[test]
    fn repeats_are_counted_once_and_long_lines_are_cut() {
        let allow = AllowList::default();
        let scope = (&allow, Policy::default());
        let mut f = Findings::default();
        let line = format!("BUG: soft lockup {}", "x".repeat(1000));
        assert!(f.observe(scope, ("serial", None), &line, 1).is_some());
        assert!(f.observe(scope, ("serial", None), &line, 2).is_none());
        assert_eq!(f.hits.len(), 1);
        assert_eq!(f.repeats, 1);
        assert!(f.hits[0].line.chars().count() <= MAX_LINE + 1);
        assert!(f.hits[0].line.ends_with('…'));
        assert!(f
            .observe(scope, ("serial", None), "no badness here", 3)
            .is_none());
    }

    #[test]
    fn an_invalid_allow_pattern_is_an_error_not_a_panic() {
        assert!(AllowList::new(&["(unclosed".to_string()]).is_err());
    }

    #[test]
    fn crashes_are_scoped_by_unit_and_profile_and_soft_lockups_by_the_accelerator() {
        let openshift = Policy {
            process_crashes_fatal: false,
            tcg: true,
            kernel_warnings_fatal: false,
        };
        let fixture = Policy {
            process_crashes_fatal: true,
            tcg: true,
            kernel_warnings_fatal: false,
        };
        // A bootstrap unit's crash fails on every profile.
        assert_eq!(
            openshift.warning(Kind::OomKill, Some("bootkube.service")),
            None
        );
        assert_eq!(
            openshift.warning(Kind::Segfault, Some("kubelet.service")),
            None
        );
        // Another unit's is a warning on the openshift profile only.
        let w = openshift
            .warning(Kind::GoPanic, Some("crio.service"))
            .unwrap();
        assert!(w.contains("crio.service, not a bootstrap unit"), "{w}");
        assert!(openshift.warning(Kind::CoreDump, None).is_some());
        assert_eq!(fixture.warning(Kind::OomKill, Some("crio.service")), None);
        // The kernel's own badness fails everywhere; a soft lockup only without TCG.
        assert_eq!(openshift.warning(Kind::KernelPanic, None), None);
        assert_eq!(openshift.warning(Kind::GeneralProtectionFault, None), None);
        assert!(openshift.warning(Kind::SoftLockup, None).is_some());
        let kvm = Policy {
            process_crashes_fatal: false,
            tcg: false,
            kernel_warnings_fatal: false,
        };
        assert_eq!(kvm.warning(Kind::SoftLockup, None), None);
    }

    #[test]
    fn a_kernel_warning_is_a_warning_unless_the_scenario_makes_it_fatal() {
        let line =
            "[   40.1] WARNING: CPU: 1 PID: 120 at mm/page_alloc.c:4386 __alloc_pages+0x2b5/0x330";
        let allow = AllowList::default();
        for (fatal, expect_fatal) in [(false, false), (true, true)] {
            let policy = Policy {
                process_crashes_fatal: true,
                tcg: true,
                kernel_warnings_fatal: fatal,
            };
            let mut f = Findings::default();
            let hit = f
                .observe((&allow, policy), ("serial", None), line, 40_100)
                .unwrap();
            assert_eq!(hit.kind, Kind::KernelWarning);
            assert_eq!(
                hit.is_fatal(),
                expect_fatal,
                "kernel_warnings_fatal={fatal}"
            );
            if !fatal {
                let why = hit.warning.as_deref().unwrap();
                assert!(why.contains("kernel_warnings = \"fatal\""), "{why}");
            }
        }
    }

    #[test]
    fn a_user_space_general_protection_fault_is_a_process_crash_not_the_kernels() {
        let line = "[  123.4] traps: crio[2201] general protection fault ip:55d0c1a2b3c4 sp:7ffd2e0c1a28 error:0 in crio[55d0c0000000+2000000]";
        let allow = AllowList::default();
        let openshift = Policy {
            process_crashes_fatal: false,
            tcg: true,
            kernel_warnings_fatal: false,
        };
        let mut f = Findings::default();
        let hit = f
            .observe((&allow, openshift), ("serial", None), line, 1)
            .unwrap();
        assert_eq!(hit.kind, Kind::Segfault);
        assert!(
            !hit.is_fatal(),
            "on the openshift profile a crash outside the bootstrap units warns"
        );
        let fixture = Policy {
            process_crashes_fatal: true,
            ..openshift
        };
        let mut f = Findings::default();
        let hit = f
            .observe((&allow, fixture), ("serial", None), line, 1)
            .unwrap();
        assert!(hit.is_fatal(), "the fixture has no crashing processes");
        // The kernel's own fault stays fatal on every profile.
        let mut f = Findings::default();
        let hit = f
            .observe(
                (&allow, openshift),
                ("serial", None),
                "[    9.9] general protection fault: 0000 [#1] SMP PTI",
                2,
            )
            .unwrap();
        assert_eq!(hit.kind, Kind::GeneralProtectionFault);
        assert!(hit.is_fatal());
    }

    #[test]
    fn a_slices_report_of_an_allowed_units_oom_kill_is_that_kill_and_allowed_as_it_was() {
        let allow =
            AllowList::new(&[r"minisno-memory-hog\.service: .*OOM killer".to_string()]).unwrap();
        let policy = Policy {
            process_crashes_fatal: true,
            tcg: true,
            kernel_warnings_fatal: false,
        };
        let mut f = Findings::default();
        let slice = "system.slice: A process of this unit has been killed by the OOM killer.";
        // A slice's report with no unit's kill before it is judged on its own: it fails.
        let mut alone = Findings::default();
        alone.observe(
            (&allow, policy),
            ("journal", Some("system.slice")),
            slice,
            1,
        );
        assert!(alone.first_failing().is_some());
        f.observe(
            (&allow, policy),
            ("journal", Some("minisno-memory-hog.service")),
            "minisno-memory-hog.service: A process of this unit has been killed by the OOM killer.",
            10,
        );
        let hit = f
            .observe(
                (&allow, policy),
                ("journal", Some("system.slice")),
                slice,
                22,
            )
            .unwrap()
            .clone();
        assert_eq!(hit.kind, Kind::OomKill);
        assert_eq!(
            hit.allowed_by.as_deref(),
            Some(r"minisno-memory-hog\.service: .*OOM killer")
        );
        assert!(f.first_failing().is_none(), "{:?}", f.hits);
        // A fatal unit kill leaves the slice's report fatal too.
        let mut fatal = Findings::default();
        fatal.observe(
            (&allow, policy),
            ("journal", Some("crio.service")),
            "crio.service: A process of this unit has been killed by the OOM killer.",
            10,
        );
        fatal.observe(
            (&allow, policy),
            ("journal", Some("system.slice")),
            slice,
            22,
        );
        assert!(fatal.hits.iter().all(|h| h.is_fatal()));
    }
}
