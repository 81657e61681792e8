//! Evidence that is not a run directory, replayed through the run's own state machine on the
//! evidence's own clock.
//!
//! Each piece becomes the signals the harness's observers would have sent: journal entries as
//! the journal follower's, console lines as the console's. What only the harness sees (the
//! assets, the VM's start, its resets, SSH) is inferred where the evidence implies it, and said
//! in the notes: the VM started when the evidence begins; a new boot is a reset; the installed
//! system booting means the install and the reboot were over; its units running end the disk
//! boot; the post-reboot script leaving a wait loop means what it waited for (its API, the
//! bootstrap configmap, the node) came. The installer's service records mark bootkube's start
//! and success, and install-to-disk going past its wait for bootkube. No deadline runs: where the evidence stops
//! before a verdict, the phases left have no evidence (`report::Judged::NoVerdict`), never a
//! timeout. At the end, what the evidence holds and the machine could not yet weigh decides:
//! a service whose record ends failed fails its phase, a failed post-reboot unit fails
//! bootstrap-cleanup.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::kind::{self, Kind};
use super::records::{self, RecordEntry, ServiceAnalysis};
use super::report::{Ending, EvidenceRead, Judged, Report};
use super::{bundle, journal, serial, AnalyzeError, Options};
use crate::flow::event::{ApiCheck, Event, GuestStatus, Signal, Source};
use crate::flow::machine::{boot_key, AdaptiveDeadline, Config, Machine};
use crate::flow::phase::{openshift_default_timeout, Phase};
use crate::flow::post_reboot::{IDENTIFIER, LOOPS};

/// One thing the evidence says, and when.
#[derive(Debug, Clone)]
pub struct Timed {
    /// Microseconds since the epoch; None for a line of a log without a clock.
    pub usec: Option<u64>,
    /// Within the same time: the order of the kinds of evidence (records after the lines).
    pub rank: u8,
    /// The order within its file.
    pub seq: usize,
    pub item: Item,
}

#[derive(Debug, Clone)]
pub enum Item {
    /// A journal entry (`Signal::Journal`).
    Journal(Signal),
    Console(String),
    /// An entry of a service's record.
    Record {
        service: String,
        entry: RecordEntry,
    },
}

/// Everything read from the PATHs.
#[derive(Debug, Default)]
pub struct Evidence {
    pub items: Vec<Timed>,
    pub services: Vec<ServiceAnalysis>,
    pub read: Vec<EvidenceRead>,
    pub notes: Vec<String>,
}

/// Reads every PATH (none a run directory) and judges them together.
pub fn analyze(kinds: &[(PathBuf, Kind)], opts: &Options) -> Result<Report, AnalyzeError> {
    let mut ev = Evidence::default();
    for (path, kind) in kinds {
        read_one(path, *kind, opts, &mut ev)?;
    }
    let mut report = judge(ev.items, &ev.services, opts, &mut ev.notes)?;
    report.installer_analysis = if ev.services.is_empty() {
        Vec::new()
    } else {
        records::conclusions(&ev.services)
    };
    report.services = ev.services;
    report.evidence = ev.read;
    report.notes.splice(0..0, ev.notes);
    Ok(report)
}

fn read_one(
    path: &Path,
    kind: Kind,
    opts: &Options,
    ev: &mut Evidence,
) -> Result<(), AnalyzeError> {
    let limits = &opts.limits;
    let said = match kind {
        Kind::Bundle => {
            let c = bundle::read(path, limits)?;
            let mut entries = 0;
            for (_, read) in c.journals.iter() {
                entries += read.entries.len();
                note_cuts(path, read.cut, &mut ev.notes);
                push_entries(&read.entries, &mut ev.items);
            }
            for s in &c.services {
                push_records(s, &mut ev.items);
            }
            let said =
                format!(
                "layout: {}; {} service records ({}), {} journals with {entries} bootstrap entries",
                c.layout,
                c.services.len(),
                c.services.iter().map(|s| s.service.as_str()).collect::<Vec<_>>().join(", "),
                c.journals.len()
            );
            ev.services.extend(c.services);
            said
        }
        Kind::JournalJson | Kind::JournalExport | Kind::JournalShort => {
            let (bytes, cut_short) = kind::read_all(path, limits)?;
            note_cut_short(path, cut_short, &mut ev.notes);
            let read = match kind {
                Kind::JournalJson => {
                    journal::parse_json(path, &String::from_utf8_lossy(&bytes), limits)?
                }
                Kind::JournalExport => journal::parse_export(path, &bytes, limits)?,
                _ => journal::parse_short(
                    path,
                    &String::from_utf8_lossy(&bytes),
                    &short_context(path),
                    limits,
                )?,
            };
            note_cuts(path, read.cut, &mut ev.notes);
            note_cut_short(path, read.cut_short, &mut ev.notes);
            push_entries(&read.entries, &mut ev.items);
            format!(
                "{} entries the journal follower would send",
                read.entries.len()
            )
        }
        Kind::Serial => {
            let (bytes, cut_short) = kind::read_all(path, limits)?;
            note_cut_short(path, cut_short, &mut ev.notes);
            let (lines, cuts) = serial::parse(&bytes, limits);
            note_cuts(path, cuts, &mut ev.notes);
            let clocked = lines.iter().filter(|l| l.usec.is_some()).count();
            for (seq, l) in lines.iter().enumerate() {
                ev.items.push(Timed {
                    usec: l.usec,
                    rank: 0,
                    seq,
                    item: Item::Console(l.text.clone()),
                });
            }
            format!(
                "{} console lines, {clocked} with the host's time",
                lines.len()
            )
        }
        Kind::RunDir => unreachable!("a run directory is analysed alone"),
    };
    ev.read.push(EvidenceRead {
        path: path.display().to_string(),
        kind: kind.describe().to_string(),
        read: said,
    });
    Ok(())
}

fn note_cuts(path: &Path, cuts: usize, notes: &mut Vec<String>) {
    if cuts > 0 {
        notes.push(format!(
            "{}: {cuts} lines longer than the line limit were cut",
            path.display()
        ));
    }
}

fn note_cut_short(path: &Path, cut_short: bool, notes: &mut Vec<String>) {
    if cut_short {
        notes.push(format!("{}: the file ends inside a record (it was being written): what came before it was read", path.display()));
    }
}

fn push_entries(entries: &[journal::Entry], items: &mut Vec<Timed>) {
    for (seq, e) in entries.iter().enumerate() {
        items.push(Timed {
            usec: Some(e.usec),
            rank: 0,
            seq,
            item: Item::Journal(e.signal.clone()),
        });
    }
}

fn push_records(s: &ServiceAnalysis, items: &mut Vec<Timed>) {
    for (seq, e) in s.entries.iter().enumerate() {
        let usec = humantime::parse_rfc3339(&e.timestamp)
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_micros() as u64);
        if usec.is_none() {
            continue;
        }
        items.push(Timed {
            usec,
            rank: 1,
            seq,
            item: Item::Record {
                service: s.service.clone(),
                entry: e.clone(),
            },
        });
    }
}

/// A short-format file's unit from its name (`bootkube.log`, `bootkube.service.txt`), its
/// year from its time.
fn short_context(path: &Path) -> journal::ShortContext {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = match name.find(".service") {
        Some(i) => &name[..i],
        None => name.split('.').next().unwrap_or(&name),
    };
    let mtime = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    journal::ShortContext {
        unit: format!("{stem}.service"),
        boot_id: format!("file:{name}"),
        year: journal::year_of(mtime),
    }
}

/// The machine for evidence from elsewhere: the scenario's when one is given, else the
/// OpenShift profile's; its deadlines never run here.
fn machine(opts: &Options, notes: &mut Vec<String>) -> Result<Machine, AnalyzeError> {
    if let Some(path) = &opts.scenario {
        let s = crate::scenario::load(path).map_err(|e| AnalyzeError::unreadable(path, e))?;
        notes.push(format!(
            "judged by the rules of scenario {} (its allow-list, its view of crashes)",
            path.display()
        ));
        let state = crate::run::state::StateMode::Fresh;
        return Ok(crate::run::plan::machine_for(
            &s,
            crate::hw::Accel::Kvm,
            1.0,
            &state,
        ));
    }
    let timeouts: BTreeMap<Phase, std::time::Duration> = Phase::ALL
        .iter()
        .map(|p| (*p, openshift_default_timeout(*p)))
        .collect();
    let adaptive_install = Some(AdaptiveDeadline::around(timeouts[&Phase::InstallToDisk]));
    let mut m = Machine::new(Config {
        timeouts,
        write_stall: crate::scenario::DEFAULT_DISK_WRITE_STALL,
        bootkube_max_restarts: None,
        adaptive_install,
    });
    // The openshift profile's view: a crash outside the bootstrap units is a warning.
    m.scope_badness(crate::flow::badness::Policy {
        process_crashes_fatal: false,
        tcg: false,
        kernel_warnings_fatal: false,
    });
    Ok(m)
}

/// Sorts the evidence into one timeline, replays it and judges the end.
pub fn judge(
    mut items: Vec<Timed>,
    services: &[ServiceAnalysis],
    opts: &Options,
    notes: &mut Vec<String>,
) -> Result<Report, AnalyzeError> {
    let clocked = items.iter().any(|i| i.usec.is_some());
    let unclocked = items.iter().any(|i| i.usec.is_none());
    if clocked && unclocked {
        notes.push("a console log without a clock was replayed after the evidence with one: its lines' place among the others is unknown".into());
    }
    // Stable: each file keeps its order; lines without a clock go last, in theirs.
    items.sort_by_key(|i| (i.usec.is_none(), i.usec.unwrap_or(0), i.rank));
    let t0 = items.iter().find_map(|i| i.usec).unwrap_or(0);
    let mut r = Replay {
        m: machine(opts, notes)?,
        boots: classify_boots(&items),
        seen: BTreeMap::new(),
        boot_kind: None,
        console_boot: 0,
        console_pending: false,
        api_sent: Vec::new(),
        disk_boot_seen: false,
        t: 0,
    };
    r.m.start(0);
    r.feed(Source::Harness, Signal::AssetsReady);
    r.feed(Source::Harness, Signal::VmStarted { pid: 0 });
    notes.push("the installer's assets and the VM's start are not in this evidence: they are taken as done when the evidence begins".into());
    for it in &items {
        if let Some(u) = it.usec {
            r.t = u.saturating_sub(t0) / 1000;
        }
        r.item(&it.item);
    }
    let ending = r.ending(services);
    let started_at = clocked.then(|| {
        humantime::format_rfc3339_seconds(
            std::time::UNIX_EPOCH + std::time::Duration::from_micros(t0),
        )
        .to_string()
    });
    let mut report = Report::of(&r.m, ending, started_at);
    if r.m.outcome().is_none() && report.verdict != Judged::NoVerdict {
        report.notes.push("the verdict comes of evidence the phases before it did not reach: they have no evidence".into());
    }
    Ok(report)
}

/// Whether a boot is the live system's or the installed one's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BootKind {
    Live,
    Installed,
}

/// Each journal boot's kind from what ran in it: the live system runs install-to-disk and
/// bootkube.sh, the installed one the post-reboot script. A boot that shows neither is the
/// live system when it comes first, else the installed one (a bootstrap-in-place install
/// reboots once, into the disk).
fn classify_boots(items: &[Timed]) -> BTreeMap<String, BootKind> {
    let mut kinds: BTreeMap<String, Option<BootKind>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for it in items {
        let Item::Journal(Signal::Journal {
            unit,
            identifier,
            boot_id,
            ..
        }) = &it.item
        else {
            continue;
        };
        let key = boot_key(boot_id);
        if !kinds.contains_key(&key) {
            order.push(key.clone());
        }
        let said = if boot_id == bundle::INSTALLED_BOOT || identifier == IDENTIFIER {
            Some(BootKind::Installed)
        } else if unit.starts_with("install-to-disk")
            || [
                "bootkube.sh",
                "install-to-disk.sh",
                "release-image-download.sh",
            ]
            .contains(&identifier.as_str())
        {
            Some(BootKind::Live)
        } else {
            None
        };
        let k = kinds.entry(key).or_insert(None);
        if k.is_none() {
            *k = said;
        }
    }
    order
        .iter()
        .enumerate()
        .map(|(i, key)| {
            let k = kinds[key].unwrap_or(if i == 0 {
                BootKind::Live
            } else {
                BootKind::Installed
            });
            (key.clone(), k)
        })
        .collect()
}

struct Replay {
    m: Machine,
    boots: BTreeMap<String, BootKind>,
    /// The boots seen, by family (`journal`, `console`): the last one of each.
    seen: BTreeMap<&'static str, String>,
    /// The kind of the boot the evidence is in.
    boot_kind: Option<BootKind>,
    console_boot: u32,
    /// A kernel banner was seen and its command line not yet.
    console_pending: bool,
    api_sent: Vec<ApiCheck>,
    disk_boot_seen: bool,
    t: u64,
}

impl Replay {
    fn feed(&mut self, source: Source, signal: Signal) {
        let ev = Event {
            time: String::new(),
            t_ms: self.t,
            source,
            signal,
        };
        self.m.on_event(&ev);
    }

    fn item(&mut self, item: &Item) {
        match item {
            Item::Journal(sig) => {
                self.journal_boot(sig);
                self.feed(Source::Journal, sig.clone());
                self.journal_after(sig);
            }
            Item::Console(line) => {
                self.console_boot_line(line);
                self.feed(Source::Serial, Signal::Console { line: line.clone() });
            }
            Item::Record { service, entry } => self.record(service, entry),
        }
    }

    /// A journal entry of a boot not seen before in the journals is a new boot.
    fn journal_boot(&mut self, sig: &Signal) {
        let Signal::Journal { boot_id, unit, .. } = sig else {
            return;
        };
        let key = boot_key(boot_id);
        let kind = self.boots.get(&key).copied().unwrap_or(BootKind::Live);
        if self.seen.get("journal") != Some(&key) {
            let what = format!("the journal of boot {}", short(boot_id));
            self.new_boot("journal", key, kind, &what);
        }
        // The installed system's bootstrap units run: its boot is over.
        let bip_unit = crate::guest::journal::BIP_UNITS.contains(&unit.as_str());
        if kind == BootKind::Installed && bip_unit && !self.disk_boot_seen {
            self.disk_boot_seen = true;
            let why = format!(
                "the installed system's {unit} runs (its journal, boot {})",
                short(boot_id)
            );
            self.m.implied(Phase::ApiReady, self.t, &why);
        }
    }

    /// The kernel's banner starts a boot; its command line says which system it is.
    fn console_boot_line(&mut self, line: &str) {
        if line.contains("] Linux version ") {
            self.console_pending = true;
            return;
        }
        if !(self.console_pending && line.contains("] Command line: ")) {
            return;
        }
        self.console_pending = false;
        self.console_boot += 1;
        let live = line.contains("coreos.liveiso") || line.contains("coreos.live.rootfs_url");
        let kind = if live {
            BootKind::Live
        } else {
            BootKind::Installed
        };
        let key = format!("console:{}", self.console_boot);
        let what = format!(
            "the console's boot {} ({})",
            self.console_boot,
            if live {
                "the live ISO"
            } else {
                "the installed system"
            }
        );
        self.new_boot("console", key, kind, &what);
    }

    /// A boot of `kind` in the evidence of one family: the first is where the evidence starts;
    /// a later one is a reset, and the installed system booting ends the phases before its
    /// boot; the live ISO booting again after the install is the machine's to judge.
    fn new_boot(&mut self, family: &'static str, key: String, kind: BootKind, what: &str) {
        let first_of_family = !self.seen.contains_key(family);
        self.seen.insert(family, key.clone());
        let changed = self.boot_kind.is_some_and(|k| k != kind);
        let again = !first_of_family && self.boot_kind == Some(kind);
        if self.boot_kind.is_some() && (changed || again) {
            let data = serde_json::json!({"reason": format!("{what}: a new boot in the evidence")});
            self.feed(
                Source::Harness,
                Signal::Qmp {
                    name: "RESET".into(),
                    data,
                },
            );
        }
        self.boot_kind = Some(kind);
        match kind {
            BootKind::Installed => {
                let why = format!("the installed system booted ({what}), which it does only after the install and the reboot");
                self.m.implied(Phase::DiskBoot, self.t, &why);
            }
            BootKind::Live if self.m.current().is_some_and(|p| p >= Phase::Reboot) => {
                let s = GuestStatus {
                    boot_id: key,
                    live: true,
                    ..Default::default()
                };
                self.feed(Source::Harness, Signal::GuestStatus(s));
            }
            BootKind::Live => {}
        }
    }

    /// After the entry: the post-reboot script's progress and its unit's failure.
    fn journal_after(&mut self, sig: &Signal) {
        let Signal::Journal {
            unit,
            identifier,
            message,
            boot_id,
            ..
        } = sig
        else {
            return;
        };
        if self.boots.get(&boot_key(boot_id)) != Some(&BootKind::Installed) {
            return;
        }
        if identifier == IDENTIFIER {
            for check in script_progress(message.trim()) {
                if !self.api_sent.contains(&check) {
                    self.api_sent.push(check);
                    let detail = format!(
                        "the post-reboot script went past its wait for it (its journal: {:?})",
                        message.trim()
                    );
                    self.feed(
                        Source::Journal,
                        Signal::Api {
                            check,
                            ok: true,
                            detail,
                        },
                    );
                }
            }
        }
        if unit == "bootkube.service" {
            if let Some(result) = failed_result(message) {
                let s = GuestStatus {
                    boot_id: boot_id.clone(),
                    live: false,
                    bootkube_enabled: "enabled".into(),
                    bootkube_state: format!("failed/failed/{result}"),
                    bootstrap_files: vec!["(not in this evidence)".into()],
                    ..Default::default()
                };
                self.feed(Source::Journal, Signal::GuestStatus(s));
            }
        }
    }

    /// A service record's entry: bootkube started or succeeded, install-to-disk started.
    fn record(&mut self, service: &str, e: &RecordEntry) {
        let cur = self.m.current();
        match (service, e.phase.as_str(), e.result.as_str()) {
            ("bootkube", "service start", _) if cur == Some(Phase::LiveBoot) => {
                self.m.implied(
                    Phase::Bootkube,
                    self.t,
                    "bootkube.service started (its service record)",
                );
            }
            ("bootkube", "service end", "success") if cur.is_some_and(|p| p <= Phase::Bootkube) => {
                self.m.implied(
                    Phase::InstallToDisk,
                    self.t,
                    "bootkube.service ended in success (its service record)",
                );
            }
            // install-to-disk.service starts beside bootkube and waits for it (its first
            // stage): past that wait, bootkube is done.
            ("install-to-disk", "stage start", _) | ("install-to-disk", "stage end", "success")
                if (e.stage != "wait-for-bootkube" || e.phase == "stage end")
                    && cur.is_some_and(|p| p < Phase::InstallToDisk) =>
            {
                let why = format!(
                    "install-to-disk.service went past its wait for bootkube (its service record: {} {:?})",
                    e.phase, e.stage
                );
                self.m.implied(Phase::InstallToDisk, self.t, &why);
            }
            _ => {}
        }
    }

    /// What decides when the machine has no outcome: a service whose record ends failed
    /// fails its phase; the post-reboot unit's failure fails bootstrap-cleanup; else none.
    fn ending(&mut self, services: &[ServiceAnalysis]) -> Option<Ending> {
        if self.m.outcome().is_some() {
            return None;
        }
        let phase_of = |s: &str| match s {
            "release-image" | "release-image-download" | "bootkube" => Some(Phase::Bootkube),
            "install-to-disk" => Some(Phase::InstallToDisk),
            _ => None,
        };
        let failed = services
            .iter()
            .filter(|s| s.failed())
            .filter_map(|s| phase_of(&s.service).map(|p| (p, s)))
            .filter(|(p, _)| self.m.current().is_some_and(|c| c <= *p))
            .min_by_key(|(p, _)| *p);
        if let Some((p, s)) = failed {
            let why = format!("{}.service ran (its service record)", s.service);
            self.m.implied(p, self.t, &why);
            if self.m.current() == Some(p) {
                self.m.fail_now(self.t, records::failure_reason(s));
                return None;
            }
        }
        self.m.post_reboot_failure().map(|reason| Ending {
            verdict: Judged::Fail,
            failed_phase: Some(Phase::BootstrapCleanup),
            reason: format!(
                "{}: {reason}, so the script's cleanup never ran",
                Phase::BootstrapCleanup
            ),
        })
    }
}

/// The API checks a line of the post-reboot script shows passed: it is past the loop that
/// waited for each (`flow::post_reboot::LOOPS`, in the script's order).
fn script_progress(line: &str) -> Vec<ApiCheck> {
    let loop_at = |id: &str| LOOPS.iter().position(|l| l.id == id).unwrap_or(usize::MAX);
    let node_ready = "node is ready";
    let at = LOOPS
        .iter()
        .position(|l| l.opens.contains(&line) || l.rounds.contains(&line))
        .or((line == node_ready || line == "Restarting kubelet").then(|| loop_at("csr") + 1));
    let Some(at) = at else { return Vec::new() };
    let mut past = Vec::new();
    if at > loop_at("api") {
        past.push(ApiCheck::Readyz);
    }
    if at > loop_at("bootstrap-configmap") {
        past.push(ApiCheck::BootstrapConfigmap);
    }
    if at > loop_at("csr") {
        past.push(ApiCheck::NodeReady);
    }
    past
}

/// systemd's `<unit>: Failed with result 'exit-code'.`: the result.
fn failed_result(message: &str) -> Option<&str> {
    let rest = message.split("Failed with result '").nth(1)?;
    rest.split('\'').next()
}

fn short(boot_id: &str) -> &str {
    &boot_id[..boot_id.len().min(12)]
}

#[cfg(test)]
mod tests;
