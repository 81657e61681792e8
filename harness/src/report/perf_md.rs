//! `perf.md`: the statistics of a perf run as Markdown tables (readable as plain text; `perf`
//! prints it on stdout), and the one-line host context and state-reuse sentences the HTML
//! page shares.

use std::fmt::Write as _;

use crate::perf::model::{throttle_text, HostInfo, PerfReport, Stat, StateReuse};
use crate::result::Verdict;

/// The host context in one line.
pub fn host_line(h: &HostInfo) -> String {
    let or = |s: &str| {
        if s.is_empty() {
            "unknown".to_string()
        } else {
            s.to_string()
        }
    };
    let disk = match &h.install_disk {
        Some(d) => format!(
            "install disk `{}`: cache {}, aio {}, {}",
            d.disk,
            d.cache.name(),
            d.aio.name(),
            throttle_text(d.throttle)
        ),
        None => "install disk unknown".into(),
    };
    let store = match &h.backing_store {
        Some(b) => format!(
            "backing store {} ({} on {})",
            or(&b.fstype),
            or(&b.source),
            or(&b.mount_point)
        ),
        None => "backing store unknown".into(),
    };
    format!(
        "accelerator {}; CPU {}; QEMU {}; kernel {}; harness {}; backend {}; {disk}; {store}",
        or(&h.accel),
        or(&h.cpu_model),
        or(&h.qemu_version),
        or(&h.kernel),
        or(&h.harness_version),
        or(&h.backend),
    )
}

/// A Markdown table with padded columns (readable as plain text too); `right[i]` right-aligns
/// column i.
fn table(header: &[&str], right: &[bool], rows: &[Vec<String>]) -> String {
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in width.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| -> String {
        let padded: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if right[i] {
                    format!("{c:>w$}", w = width[i])
                } else {
                    format!("{c:<w$}", w = width[i])
                }
            })
            .collect();
        format!("| {} |\n", padded.join(" | "))
    };
    let mut out = line(header.iter().map(|h| h.to_string()).collect());
    // GFM: a delimiter cell is hyphens with the alignment colon at its edge.
    let rule: Vec<String> = width
        .iter()
        .zip(right)
        .map(|(w, r)| {
            if *r {
                format!("{}:", "-".repeat(w + 1))
            } else {
                "-".repeat(w + 2)
            }
        })
        .collect();
    let _ = writeln!(out, "|{}|", rule.join("|"));
    for row in rows {
        out.push_str(&line(row.clone()));
    }
    out
}

fn stat_row(perm: &str, what: &str, s: &Stat, digits: usize) -> Vec<String> {
    let f = |v: f64| format!("{v:.digits$}");
    let m = &s.summary;
    vec![
        perm.to_string(),
        what.to_string(),
        m.n.to_string(),
        f(m.median),
        f(m.p90),
        f(m.min),
        f(m.max),
        f(m.stddev),
    ]
}

/// What `--disk-write-only` saved, in one sentence.
pub fn state_reuse_line(sr: &StateReuse) -> String {
    if !sr.saved {
        return format!(
            "disk write only: the save run ({}) saved no state, so nothing was resumed",
            sr.save_run
        );
    }
    format!(
        "disk write only: bootstrapped once ({:.1} s to bootkube done; the save run took {:.1} s), then resumed {} time{} ({:.1} s): {:.1} s in all, against {:.1} s for as many runs that each bootstrap up to the end of install-to-disk; saved {:.1} s ({:.0} %)",
        sr.bootstrap_s,
        sr.save_run_s,
        sr.resumed_runs,
        if sr.resumed_runs == 1 { "" } else { "s" },
        sr.resumed_s,
        sr.actual_s,
        sr.without_state_s,
        sr.saved_s,
        sr.saved_pct
    )
}

/// `perf.md`, also printed on stdout.
pub fn render_markdown(r: &PerfReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# sno-harness perf: {}\n", r.source);
    let _ = writeln!(out, "{}.\n", how_it_ran(r));
    let _ = writeln!(out, "Host: {}.\n", host_line(&r.host));
    out.push_str(&phase_table(r));
    out.push_str(&disk_write_section(r));
    out.push_str(&runs_section(r));
    if !r.warnings.is_empty() {
        let _ = writeln!(out, "\nWarnings:\n");
        for w in &r.warnings {
            let _ = writeln!(out, "- {w}");
        }
    }
    out
}

/// How many runs, warmups, when, which strategy and filter.
fn how_it_ran(r: &PerfReport) -> String {
    let mut how = format!(
        "{} measured run{} per permutation",
        r.repeat,
        if r.repeat == 1 { "" } else { "s" }
    );
    if r.warmup > 0 {
        let _ = write!(
            how,
            ", after {} warmup run{} (not in the statistics)",
            r.warmup,
            if r.warmup == 1 { "" } else { "s" }
        );
    }
    let _ = write!(
        how,
        "; one run at a time; {} to {}",
        r.started_at, r.finished_at
    );
    if let Some(st) = &r.strategy {
        let _ = write!(how, "; strategy {st}");
    }
    if let Some(f) = &r.filter {
        let _ = write!(how, "; filter `{f}`");
    }
    how
}

/// One row per permutation and phase, and its total.
fn phase_table(r: &PerfReport) -> String {
    let mut rows = Vec::new();
    for p in &r.permutations {
        for ph in &p.phases {
            rows.push(stat_row(&p.id, &ph.phase, &ph.seconds, 2));
        }
        match &p.total_seconds {
            Some(t) => rows.push(stat_row(&p.id, "total", t, 2)),
            None => rows.push(vec![
                p.id.clone(),
                "(no passed run)".into(),
                "0".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
            ]),
        }
    }
    table(
        &[
            "permutation",
            "phase",
            "n",
            "median s",
            "p90 s",
            "min s",
            "max s",
            "stddev s",
        ],
        &[false, false, true, true, true, true, true, true],
        &rows,
    )
}

/// The disk write of each permutation, and its install-to-disk deadline.
fn disk_write_section(r: &PerfReport) -> String {
    let mut out = String::new();
    let mut disk_lines = Vec::new();
    for p in &r.permutations {
        let Some(d) = &p.disk_write else { continue };
        let m = &d.mib_s.summary;
        disk_lines.push(format!(
            "- `{}` disk write to `{}`: {:.1} MiB/s median, p90 {:.1}, min {:.1}, max {:.1}, stddev {:.1} (n {}); {:.1} MiB in {:.2} s median",
            p.id,
            d.disk,
            m.median,
            m.p90,
            m.min,
            m.max,
            m.stddev,
            m.n,
            d.bytes.summary.median / (1024.0 * 1024.0),
            d.seconds.summary.median,
        ));
        if let Some(c) = &d.caveat {
            disk_lines.push(format!("  - **{c}**"));
        }
        if let Some(dl) = &d.deadline {
            disk_lines.push(format!(
                "  - install-to-disk deadline: nominal {:.1} s, adapted to {:.1} s median (min {:.1}, max {:.1}); the write projected to end at {:.1} s median (n {})",
                dl.nominal_s.summary.median,
                dl.adapted_s.summary.median,
                dl.adapted_s.summary.min,
                dl.adapted_s.summary.max,
                dl.projected_write_end_s.summary.median,
                dl.adapted_s.summary.n,
            ));
        }
    }
    if !disk_lines.is_empty() {
        let _ = writeln!(out, "\nDisk write (higher MiB/s is faster):\n");
        for l in disk_lines {
            let _ = writeln!(out, "{l}");
        }
    }
    out
}

/// Each permutation's runs: counts, and every run that did not pass as expected.
fn runs_section(r: &PerfReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\nRuns:\n");
    for p in &r.permutations {
        let c = &p.counts;
        let mut line = format!(
            "- `{}`: {} of {} measured runs passed",
            p.id, c.passed, c.measured
        );
        if c.measured < c.planned {
            let _ = write!(line, " ({} planned)", c.planned);
        }
        if c.as_expected != c.passed {
            let _ = write!(line, "; {} as the scenario expects", c.as_expected);
        }
        if c.warmups > 0 {
            let _ = write!(
                line,
                "; {} warmup run{} not in the statistics",
                c.warmups,
                if c.warmups == 1 { "" } else { "s" }
            );
        }
        let _ = writeln!(out, "{line}");
        for e in &p.runs {
            if e.verdict == Verdict::Pass && e.as_expected {
                continue;
            }
            let _ = writeln!(
                out,
                "  - {}: {} at {}{}: {}{}",
                e.dir,
                e.verdict,
                e.failed_phase.as_deref().unwrap_or("-"),
                if e.as_expected { " (as expected)" } else { "" },
                e.reason,
                if e.in_statistics {
                    ""
                } else {
                    " (not in the statistics)"
                }
            );
        }
        if let Some(h) = &p.host {
            let _ = writeln!(out, "  - host differs: {}", host_line(h));
        }
        if let Some(sr) = &p.state_reuse {
            let _ = writeln!(out, "  - {}", state_reuse_line(sr));
        }
        for w in &p.warnings {
            let _ = writeln!(out, "  - warning: {w}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    use crate::hw::{AioMode, CacheMode, Throttle};
    use crate::perf::model::{build, InstallDisk, RunEntry, RunKind};
    use crate::perf::testdata::{failed, input, passed, phase, run};
    use crate::result::RunResult;
    use crate::result::{phase_names, InstallDeadline};

    #[test]
    fn failed_runs_are_counted_and_listed_but_not_in_the_statistics() {
        let timed_out = failed("bootkube timed out after 600 s");
        let mut harness_error = RunResult::unreached_error("smoke", "creating the run dir: EACCES");
        harness_error.started_at = "2026-11-30T10:09:00Z".into();
        let rep = build(&input(
            vec![
                run(RunKind::Measured, 0, passed(1, 2, 2_000)),
                run(RunKind::Measured, 1, timed_out),
                run(RunKind::Measured, 2, passed(2, 6, 2_000)),
                run(RunKind::Measured, 3, harness_error),
            ],
            4,
            0,
        ));
        let p = &rep.permutations[0];
        assert_eq!(p.counts.measured, 4);
        assert_eq!(p.counts.passed, 2);
        assert_eq!(p.counts.as_expected, 2);
        let failed: Vec<&RunEntry> = p.runs.iter().filter(|e| !e.in_statistics).collect();
        assert_eq!(failed.len(), 2);
        assert_eq!(failed[0].dir, "smoke/run-1");
        assert_eq!(failed[0].verdict, Verdict::Fail);
        assert_eq!(failed[0].failed_phase.as_deref(), Some("bootkube"));
        assert_eq!(failed[0].reason, "bootkube timed out after 600 s");
        assert_eq!(failed[1].verdict, Verdict::Error);
        assert!(failed[1].reason.contains("EACCES"));
        // The failed run's phases (1 s each in sample_fail) are in no sample.
        let assets = &phase(p, "assets").unwrap().seconds;
        assert_eq!(assets.samples, [2.0, 6.0]);
        assert_eq!(assets.runs, [0, 2]);
        assert_eq!(p.total_seconds.as_ref().unwrap().summary.n, 2);
        // The unreached run carries no host context: not a disagreement.
        assert_eq!(rep.host.accel, "kvm");
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
        // 4 runs are enough for --compare.
        assert!(rep.warnings.is_empty(), "{:?}", rep.warnings);

        let md = render_markdown(&rep);
        assert!(md.contains("2 of 4 measured runs passed"), "{md}");
        assert!(
            md.contains("smoke/run-1: fail at bootkube: bootkube timed out after 600 s (not in the statistics)"),
            "{md}"
        );
    }

    #[test]
    fn state_reuse_counts_the_bootstraps_the_resumed_runs_skipped() {
        // The save run: bootkube done at 60 s, the whole save run 70 s.
        let mut save = passed(0, 1, 1);
        let bk = save
            .phases
            .iter_mut()
            .find(|p| p.name == "bootkube")
            .unwrap();
        bk.end_ms = Some(60_000);
        save.duration_ms = 70_000;
        let resumed = |index| {
            let mut r = passed(index, 1, 5_000);
            r.duration_ms = 30_000;
            r
        };
        let runs = vec![
            run(RunKind::SaveState, 0, save.clone()),
            run(RunKind::Warmup, 0, resumed(0)),
            run(RunKind::Measured, 0, resumed(0)),
            run(RunKind::Measured, 1, resumed(1)),
        ];
        let r = build(&input(runs, 2, 1));
        let p = &r.permutations[0];
        let sr = p.state_reuse.as_ref().unwrap();
        assert!(sr.saved);
        assert_eq!(sr.save_run, "smoke/save-state");
        assert_eq!((sr.bootstrap_s, sr.save_run_s), (60.0, 70.0));
        assert_eq!((sr.resumed_runs, sr.resumed_s), (3, 90.0));
        // 70 + 90 against 3 x 60 + 90.
        assert_eq!((sr.actual_s, sr.without_state_s), (160.0, 270.0));
        assert_eq!((sr.saved_s, sr.saved_pct), (110.0, 40.7));
        // The save run is listed, and in no statistic.
        assert_eq!(p.counts.measured, 2);
        assert_eq!(p.counts.warmups, 1);
        assert!(p
            .runs
            .iter()
            .any(|e| e.kind == RunKind::SaveState && !e.in_statistics));
        let md = render_markdown(&r);
        assert!(md.contains("saved 110.0 s (41 %)"), "{md}");
        let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(json["permutations"][0]["runs"][0]["kind"], "save-state");
        assert_eq!(json["permutations"][0]["state_reuse"]["saved_s"], 110.0);

        // A save run that failed: nothing resumed, nothing claimed.
        let mut failed_save = failed("bootkube: timeout");
        failed_save.duration_ms = 50_000;
        let never = RunResult::unreached_error("smoke", "the VM state could not be saved");
        let r = build(&input(
            vec![
                run(RunKind::SaveState, 0, failed_save),
                run(RunKind::Measured, 0, never),
            ],
            1,
            0,
        ));
        let sr = r.permutations[0].state_reuse.as_ref().unwrap();
        assert!(!sr.saved);
        assert_eq!((sr.resumed_runs, sr.saved_s), (0, -50.0));
        assert!(state_reuse_line(sr).contains("saved no state"));

        // Runs without a save run have no such section.
        let r = build(&input(
            vec![run(RunKind::Measured, 0, passed(0, 1, 1))],
            1,
            0,
        ));
        assert!(r.permutations[0].state_reuse.is_none());
        assert!(!r.to_json().contains("state_reuse"));
    }

    #[test]
    fn disk_write_summary_from_bytes_and_duration() {
        let mut with_deadline = passed(3, 2, 4_000);
        with_deadline.disk_write.as_mut().unwrap().deadline = Some(InstallDeadline {
            nominal_s: 600.0,
            adapted_s: 120.0,
            projected_write_end_s: 40.5,
        });
        let mut no_write = passed(4, 2, 1_000);
        no_write.disk_write = None;
        let rep = build(&input(
            vec![
                run(RunKind::Warmup, 0, passed(0, 2, 1)),
                run(RunKind::Measured, 0, passed(1, 2, 2_000)),
                run(RunKind::Measured, 1, passed(2, 2, 1_000)),
                run(RunKind::Measured, 2, with_deadline),
                run(RunKind::Measured, 3, no_write),
            ],
            4,
            1,
        ));
        let d = rep.permutations[0].disk_write.as_ref().unwrap();
        assert_eq!(d.disk, "install");
        // 256 MiB in 2, 1 and 4 s.
        assert_eq!(d.seconds.samples, [2.0, 1.0, 4.0]);
        assert_eq!(d.seconds.runs, [0, 1, 2]);
        assert_eq!(d.mib_s.samples, [128.0, 256.0, 64.0]);
        assert_eq!(d.mib_s.summary.median, 128.0);
        assert_eq!(d.mib_s.summary.min, 64.0);
        assert_eq!(d.mib_s.summary.max, 256.0);
        assert_eq!(d.bytes.summary.min, (256u64 << 20) as f64);
        assert_eq!(d.bytes.summary.max, (256u64 << 20) as f64);
        let dl = d.deadline.as_ref().unwrap();
        assert_eq!(dl.adapted_s.samples, [120.0]);
        assert_eq!(dl.adapted_s.runs, [2]);
        assert_eq!(dl.nominal_s.summary.median, 600.0);
        assert_eq!(dl.projected_write_end_s.summary.median, 40.5);

        let md = render_markdown(&rep);
        assert!(
            md.contains("- `smoke` disk write to `install`: 128.0 MiB/s median, p90 230.4, min 64.0, max 256.0"),
            "{md}"
        );
        assert!(md.contains("256.0 MiB in 2.00 s median"), "{md}");
        assert!(
            md.contains("nominal 600.0 s, adapted to 120.0 s median"),
            "{md}"
        );

        // A write too short to time has no rate: left out of MiB/s, with a warning.
        let mut instant = passed(1, 2, 0);
        instant.disk_write.as_mut().unwrap().duration_ms = 0;
        let rep = build(&input(
            vec![
                run(RunKind::Measured, 0, instant),
                run(RunKind::Measured, 1, passed(2, 2, 2_000)),
            ],
            2,
            0,
        ));
        let p = &rep.permutations[0];
        let d = p.disk_write.as_ref().unwrap();
        assert_eq!(d.mib_s.runs, [1]);
        assert_eq!(d.seconds.runs, [0, 1]);
        assert!(
            p.warnings.iter().any(|w| w.contains("no rate")),
            "{:?}",
            p.warnings
        );
    }

    #[test]
    fn host_context_next_to_the_numbers() {
        let mut tcg = passed(2, 2, 2_000);
        tcg.accel = "tcg".into();
        let mut inp = input(
            vec![
                run(RunKind::Measured, 0, passed(1, 2, 2_000)),
                run(RunKind::Measured, 1, tcg),
            ],
            2,
            0,
        );
        // A second permutation on another disk cache mode.
        let mut other = inp.permutations[0].clone();
        other.id = "none".into();
        other.params = BTreeMap::from([("disks.install.cache".into(), "none".into())]);
        other.install_disk.as_mut().unwrap().cache = CacheMode::None;
        other.runs.truncate(1);
        other.runs[0].other_vms = vec!["qemu-system-x86 (pid 42)".into()];
        inp.permutations.push(other);
        let rep = build(&inp);

        let h = &rep.host;
        assert_eq!(h.accel, "kvm | tcg");
        assert_eq!(h.cpu_model, "AMD EPYC 7B13");
        assert_eq!(h.qemu_version, "QEMU emulator version 7.2.15");
        assert_eq!(h.kernel, "6.1.0-28-amd64");
        assert_eq!(h.harness_version, "0.1.0");
        assert_eq!(h.backend, "qemu");
        assert_eq!(h.install_disk.as_ref().unwrap().cache, CacheMode::Unsafe);
        assert_eq!(h.backing_store.as_ref().unwrap().fstype, "ext4");
        let first = &rep.permutations[0];
        assert!(first.host.is_none(), "the same as the top level");
        assert!(
            first
                .warnings
                .iter()
                .any(|w| w == "the runs disagree on the accelerator: kvm (run-0); tcg (run-1)"),
            "{:?}",
            first.warnings
        );
        let second = &rep.permutations[1];
        let own = second.host.as_ref().expect("differs: its own host context");
        assert_eq!(own.install_disk.as_ref().unwrap().cache, CacheMode::None);
        assert_eq!(own.accel, "kvm");
        assert!(second.warnings[0]
            .contains("run-0 started while other VMs ran on this host: qemu-system-x86 (pid 42)"));

        let md = render_markdown(&rep);
        assert!(md.contains("Host: accelerator kvm | tcg; CPU AMD EPYC 7B13; QEMU QEMU emulator version 7.2.15; kernel 6.1.0-28-amd64; harness 0.1.0; backend qemu; install disk `install`: cache unsafe, aio threads, no throttle; backing store ext4 (/dev/vda1 on /)."), "{md}");
        assert!(md.contains("host differs: accelerator kvm;"), "{md}");
        assert!(md.contains("cache none"), "{md}");

        let throttled = HostInfo {
            install_disk: Some(InstallDisk {
                disk: "install".into(),
                cache: CacheMode::Directsync,
                aio: AioMode::IoUring,
                throttle: Some(Throttle {
                    bytes_per_s: Some(8 << 20),
                    iops: Some(500),
                }),
            }),
            ..HostInfo::default()
        };
        let line = host_line(&throttled);
        assert!(
            line.contains("cache directsync, aio io_uring, throttled to 8.0 MiB/s and 500 IOPS"),
            "{line}"
        );
        assert!(line.contains("accelerator unknown"), "{line}");
    }

    #[test]
    fn nothing_passed_no_statistics_but_a_report() {
        let rep = build(&input(
            vec![run(RunKind::Measured, 0, failed("bootkube timed out"))],
            1,
            0,
        ));
        let p = &rep.permutations[0];
        assert!(p.phases.is_empty());
        assert!(p.total_seconds.is_none());
        assert!(p.disk_write.is_none());
        assert_eq!(p.counts.passed, 0);
        assert!(p
            .warnings
            .iter()
            .any(|w| w.contains("no measured run passed")));
        let md = render_markdown(&rep);
        assert!(md.contains("(no passed run)"), "{md}");

        // No permutation at all (interrupted at once): still a document.
        let mut inp = input(vec![], 2, 0);
        inp.permutations.clear();
        inp.interrupted = true;
        let rep = build(&inp);
        assert_eq!(rep.host.backend, "qemu");
        assert!(!rep.host.harness_version.is_empty());
        assert!(rep.warnings.iter().any(|w| w.starts_with("interrupted")));
    }

    #[test]
    fn markdown_table_lines_up() {
        let rep = build(&input(
            vec![
                run(RunKind::Measured, 0, passed(1, 2, 2_000)),
                run(RunKind::Measured, 1, passed(2, 12, 2_000)),
            ],
            2,
            0,
        ));
        let md = render_markdown(&rep);
        let rows: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
        // Header, rule, 11 phases and the total.
        assert_eq!(rows.len(), 2 + phase_names().len() + 1, "{md}");
        let width = rows[0].chars().count();
        assert!(rows.iter().all(|r| r.chars().count() == width), "{md}");
        assert!(
            rows[1].starts_with("|-") && rows[1].contains(":|"),
            "{}",
            rows[1]
        );
        let bootkube = rows.iter().find(|r| r.contains("bootkube")).unwrap();
        let cells: Vec<&str> = bootkube.split('|').map(str::trim).collect();
        // | smoke | bootkube | 2 | median | p90 | min | max | stddev |
        assert_eq!(
            cells[1..9],
            ["smoke", "bootkube", "2", "9.00", "13.00", "4.00", "14.00", "7.07"]
        );
    }

    #[test]
    fn a_disk_write_through_the_unsafe_cache_is_labelled_as_the_page_cache() {
        let runs = || vec![run(RunKind::Measured, 0, passed(1, 2, 2_000))];
        let rep = build(&input(runs(), 1, 0));
        let d = rep.permutations[0].disk_write.as_ref().unwrap();
        assert_eq!(
            d.caveat.as_deref(),
            Some("measured with cache = \"unsafe\": the host's page cache, not the disk")
        );
        let md = render_markdown(&rep);
        assert!(
            md.contains(
                "  - **measured with cache = \"unsafe\": the host's page cache, not the disk**"
            ),
            "{md}"
        );
        let json = serde_json::to_value(&rep).unwrap();
        assert!(json["permutations"][0]["disk_write"]["caveat"]
            .as_str()
            .unwrap()
            .contains("page cache"));
        // A disk written with O_DIRECT is the disk: no label.
        let mut direct = input(runs(), 1, 0);
        direct.permutations[0].install_disk.as_mut().unwrap().cache = CacheMode::None;
        let rep = build(&direct);
        assert_eq!(
            rep.permutations[0].disk_write.as_ref().unwrap().caveat,
            None
        );
        assert!(!render_markdown(&rep).contains("page cache"));
    }
}
