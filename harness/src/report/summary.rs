//! `summary.md`: the verdicts and timelines of a set of runs, for a terminal or GitHub.

use std::fmt::Write;

use super::load::LocatedRun;
use super::summary_json::Summary;
use crate::result::{PhaseStatus, RunResult, Verdict};

/// The longest reason shown in the verdict table, in characters.
const REASON_MAX: usize = 120;

/// Renders runs as Markdown: a verdict table, then per run its phases, disk write, replay
/// command (when not passed) and artifacts.
pub fn summary_markdown(runs: &[RunResult]) -> String {
    let refs: Vec<&RunResult> = runs.iter().collect();
    let mut md = String::from("# sno-harness summary\n\n");
    md.push_str(&counts_and_verdicts(&refs));
    for r in runs {
        md.push_str(&run_section(r, ".", "##"));
    }
    md
}

/// Renders a matrix run as Markdown: the verdict table, the coverage of every axis value, the
/// slowest phases, then a section per permutation that did not pass (its phases, reason,
/// signals, replay command and artifacts). Passed permutations are in result.json and
/// report.html: a long matrix would bury its failures here.
pub fn matrix_summary_markdown(runs: &[LocatedRun], summary: &Summary) -> String {
    let results: Vec<&RunResult> = runs.iter().map(|r| &r.result).collect();
    let mut md = String::from("# sno-harness summary\n\n");
    md.push_str(&counts_and_verdicts(&results));

    md.push_str("\n## Coverage\n\n");
    if summary.coverage.is_empty() {
        md.push_str("No axes: a single scenario.\n");
    } else {
        let rows = summary
            .coverage
            .iter()
            .flat_map(|axis| {
                axis.values.iter().map(|v| {
                    vec![
                        format!("`{}`", cell(&axis.axis)),
                        format!("`{}`", cell(&v.value)),
                        v.passed.to_string(),
                        v.failed.to_string(),
                        v.not_run.to_string(),
                        match v.state {
                            super::coverage::CoverageState::Failed => "**failed**".into(),
                            other => other.as_str().to_string(),
                        },
                    ]
                })
            })
            .collect::<Vec<_>>();
        md.push_str(&table(
            &["axis", "value", "passed", "failed", "not run", "state"],
            &rows,
        ));
    }

    md.push_str("\n## Slowest phases\n\n");
    let rows = summary
        .slowest_phases
        .iter()
        .enumerate()
        .map(|(i, s)| {
            vec![
                (i + 1).to_string(),
                s.phase.clone(),
                format!("`{}`", cell(&s.id)),
                status_badge(s.status),
                secs(s.duration_ms),
            ]
        })
        .collect::<Vec<_>>();
    md.push_str(&table(
        &["#", "phase", "permutation", "status", "duration s"],
        &rows,
    ));

    let failed: Vec<&LocatedRun> = runs
        .iter()
        .filter(|r| r.result.verdict != Verdict::Pass)
        .collect();
    if !failed.is_empty() {
        md.push_str("\n## Failures\n");
        for r in failed {
            md.push_str(&run_section(&r.result, &r.dir, "###"));
        }
    }
    md
}

/// The counts line and the verdict table.
fn counts_and_verdicts(runs: &[&RunResult]) -> String {
    let mut md = String::new();
    let n = |v: Verdict| runs.iter().filter(|r| r.verdict == v).count();
    let _ = writeln!(
        md,
        "{} run(s): {} passed, {} failed, {} error(s).\n",
        runs.len(),
        n(Verdict::Pass),
        n(Verdict::Fail),
        n(Verdict::Error)
    );

    // Which host ran what, when libvirt hosts did.
    let hosts = runs.iter().any(|r| r.libvirt_host.is_some());
    let rows = runs
        .iter()
        .map(|r| {
            let mut row = vec![
                format!("`{}`", cell(&r.id)),
                verdict_badge(r.verdict),
                r.failed_phase.as_deref().map(cell).unwrap_or_default(),
                cell(&truncate(&r.reason, REASON_MAX)),
                secs(r.duration_ms),
            ];
            if hosts {
                row.push(r.libvirt_host.as_deref().map(cell).unwrap_or_default());
            }
            row
        })
        .collect::<Vec<_>>();
    let mut header = vec!["id", "verdict", "failed phase", "reason", "duration s"];
    if hosts {
        header.push("host");
    }
    md.push_str(&table(&header, &rows));
    md
}

/// One run: its phases, disk write, and for a run that did not pass, its reason, last
/// signals and replay command; then its artifacts, as paths relative to the summary (`dir` is
/// the run's directory from there). `heading` is the Markdown heading level.
fn run_section(r: &RunResult, dir: &str, heading: &str) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "\n{heading} `{}`: {}\n", r.id, verdict_badge(r.verdict));
    let _ = writeln!(
        md,
        "Scenario `{}`, profile {}, backend {}, accel {}{}; started {}, {} reset(s).",
        r.scenario,
        r.profile,
        r.backend,
        r.accel,
        if r.accel_reason.is_empty() {
            String::new()
        } else {
            format!(" ({})", r.accel_reason)
        },
        r.started_at,
        r.resets
    );
    if let Some(a) = &r.assets {
        let _ = writeln!(md, "\n{}", one_line(&a.sentence()));
    }
    if let Some(b) = &r.boot {
        let _ = writeln!(md, "\n{}", one_line(&b.sentence()));
    }
    md.push_str(&firmware_and_disk(r));
    if !r.params.is_empty() {
        let params: Vec<String> = r.params.iter().map(|(k, v)| format!("`{k}={v}`")).collect();
        let _ = writeln!(md, "\nParams: {}.", params.join(", "));
    }
    if r.verdict != Verdict::Pass {
        let _ = writeln!(md, "\n**Reason:** {}", one_line(&r.reason));
    }
    md.push_str(&operator_warnings(r));
    md.push('\n');

    let rows = r
        .phases
        .iter()
        .map(|p| {
            vec![
                p.name.clone(),
                status_badge(p.status),
                p.duration_ms.map(secs).unwrap_or_default(),
                p.timeout_ms.map(secs).unwrap_or_default(),
            ]
        })
        .collect::<Vec<_>>();
    md.push_str(&table(
        &["phase", "status", "duration s", "timeout s"],
        &rows,
    ));

    if let Some(w) = &r.disk_write {
        let _ = writeln!(
            md,
            "\nDisk write: {:.1} MiB ({} bytes) to `{}` in {} s, {:.1} MiB/s (source: {}).",
            w.bytes as f64 / (1024.0 * 1024.0),
            w.bytes,
            w.disk,
            secs(w.duration_ms),
            w.mib_per_s,
            w.source
        );
    }
    if r.verdict != Verdict::Pass {
        if !r.last_signals.is_empty() {
            md.push_str("\nLast signals:\n\n```text\n");
            for s in &r.last_signals {
                let _ = writeln!(md, "[{:>9}s] {}: {}", secs(s.t_ms), s.source, s.summary);
            }
            md.push_str("```\n");
        }
        if !r.replay.is_empty() {
            let _ = writeln!(md, "\nReplay:\n\n```sh\n{}\n```", r.replay);
        }
    }
    if !r.artifacts.is_empty() {
        md.push_str("\nArtifacts:\n\n");
        for (name, path) in &r.artifacts {
            if dir == "." {
                let _ = writeln!(md, "- {name}: `{path}`");
            } else {
                let _ = writeln!(md, "- {name}: `{dir}/{path}`");
            }
        }
    }
    md
}

/// What the run saw of Secure Boot in each system and of the multipath installation disk:
/// the facts a Secure Boot or SAN-disk site looks for first; nothing for runs without either.
fn firmware_and_disk(r: &RunResult) -> String {
    use crate::flow::event::SecureBootState;
    let mut md = String::new();
    if let Some(sb) = r
        .secure_boot
        .filter(|sb| sb.live.is_some() || sb.installed.is_some())
    {
        let said = |s: Option<SecureBootState>| match s {
            Some(SecureBootState::On) => "on",
            Some(SecureBootState::Off) => "off",
            Some(SecureBootState::NoVariable) => "no SecureBoot variable",
            None => "not read",
        };
        let _ = writeln!(
            md,
            "\nSecure Boot: the live system {}, the installed system {}.",
            said(sb.live),
            said(sb.installed)
        );
    }
    if let Some(m) = &r.multipath {
        let root = m
            .root
            .as_ref()
            .map_or("the installed root was not read", |root| {
                root.summary.as_str()
            });
        let _ = writeln!(md, "\nMultipath: {}.", one_line(root).trim_end_matches('.'));
        for e in &m.path_events {
            let _ = writeln!(md, "- [{:>9}s] {}", secs(e.t_ms), one_line(&e.summary));
        }
    }
    md
}

/// The operators the `installer` rule reported unavailable or degraded, as a list under the
/// rule's name; nothing when there are none.
fn operator_warnings(r: &RunResult) -> String {
    if r.operator_warnings.is_empty() {
        return String::new();
    }
    let rule = r.operators_rule.as_deref().unwrap_or("installer");
    let mut md = format!(
        "\n**Operator warnings** (rule `{rule}`: `wait-for install-complete` does not judge an operator's Available or Degraded, so the install completes with them):\n\n"
    );
    for w in &r.operator_warnings {
        let _ = writeln!(md, "- {}", one_line(w));
    }
    md
}

fn verdict_badge(v: Verdict) -> String {
    match v {
        Verdict::Pass => "pass".into(),
        Verdict::Fail => "**FAIL**".into(),
        Verdict::Error => "**ERROR**".into(),
    }
}

fn status_badge(s: PhaseStatus) -> String {
    if s.is_failure() {
        format!("**{s}**")
    } else {
        s.to_string()
    }
}

/// Milliseconds as seconds with one decimal.
fn secs(ms: u64) -> String {
    format!("{:.1}", ms as f64 / 1000.0)
}

/// Collapses line breaks so a text stays on one Markdown line.
fn one_line(s: &str) -> String {
    s.split(['\r', '\n'])
        .filter(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Escapes a text for a Markdown table cell: one line, `|` escaped.
fn cell(s: &str) -> String {
    one_line(s).replace('|', "\\|")
}

/// Cuts a text to at most `max` characters, marking the cut with an ellipsis.
fn truncate(s: &str, max: usize) -> String {
    let s = one_line(s);
    if s.chars().count() <= max {
        return s;
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// A Markdown table with columns padded to their widest cell, so it also reads in a terminal.
fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c}{}", " ".repeat(w - c.chars().count())))
            .collect();
        format!("| {} |\n", padded.join(" | "))
    };
    let mut out = line(headers.iter().map(|h| h.to_string()).collect());
    out.push_str(&line(widths.iter().map(|w| "-".repeat(*w)).collect()));
    for row in rows {
        out.push_str(&line(row.clone()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::tests::{sample_fail, sample_pass};

    #[test]
    fn a_pass_with_reported_operators_lists_them_under_the_rule() {
        let mut r = sample_pass("p");
        assert!(!summary_markdown(std::slice::from_ref(&r)).contains("Operator warnings"));
        r.operators_rule = Some("installer".into());
        r.operator_warnings = vec![
            "ingress: Available=True Degraded=True Progressing=False (canary <failing> | 3 times)"
                .into(),
        ];
        let md = summary_markdown(&[r]);
        assert!(
            md.contains("**Operator warnings** (rule `installer`"),
            "{md}"
        );
        assert!(
            md.contains("\n- ingress: Available=True Degraded=True"),
            "{md}"
        );
    }

    #[test]
    fn verdict_table_and_sections() {
        let runs = [
            sample_pass("virtio.512.bios.by-id"),
            sample_fail("nvme.4k.uefi.by-path", "bootkube timed out after 600 s"),
        ];
        let md = summary_markdown(&runs);
        assert!(md.starts_with("# sno-harness summary\n"));
        assert!(md.contains("2 run(s): 1 passed, 1 failed, 0 error(s)."));
        assert!(md.contains("| id "));
        let pass_row = md
            .lines()
            .find(|l| l.starts_with("| `virtio.512.bios.by-id`"))
            .unwrap();
        assert!(pass_row.contains("| pass "));
        assert!(pass_row.contains("| 61.2 "));
        let fail_row = md
            .lines()
            .find(|l| l.starts_with("| `nvme.4k.uefi.by-path`"))
            .unwrap();
        assert!(fail_row.contains("| **FAIL** "));
        assert!(fail_row.contains("| bootkube "));
        assert!(fail_row.contains("bootkube timed out after 600 s"));
        // Phase tables: a passed phase with duration and timeout, a timeout, an unreached one.
        assert!(md.lines().any(|l| l.starts_with("| install-to-disk ")
            && l.contains("| pass ")
            && l.contains("| 1.0 ")
            && l.contains("| 600.0 ")));
        assert!(md
            .lines()
            .any(|l| l.starts_with("| bootkube ") && l.contains("**timeout**")));
        assert!(md
            .lines()
            .any(|l| l.starts_with("| node-ready ") && l.contains("not-reached")));
        assert!(md
            .contains("Disk write: 256.0 MiB (268435456 bytes) to `install` in 3.1 s, 82.6 MiB/s"));
        // Replay only for the failed run.
        assert_eq!(md.matches("```sh\n").count(), 1);
        assert!(md.contains(
            "```sh\nsno-harness run scenarios/disks.toml --filter nvme.4k.uefi.by-path --keep\n```"
        ));
        assert!(md.contains("- serial: `serial.log`"));
        assert!(md.contains("bootkube.sh: waiting for etcd"));
        // Every table row has as many cells as its header.
        for l in md.lines().filter(|l| l.starts_with("| ")) {
            let cells = l.replace("\\|", "").matches('|').count();
            assert!(cells == 6 || cells == 5, "bad row: {l}");
        }
    }

    #[test]
    fn the_verdict_table_says_which_libvirt_host_ran_what() {
        let mut a = sample_pass("a");
        a.libvirt_host = Some("qemu+ssh://root@lab-1/system".into());
        let b = sample_fail("b", "lost");
        let md = summary_markdown(&[a.clone(), b.clone()]);
        let cells =
            |l: &str| -> Vec<String> { l.split('|').map(|c| c.trim().to_string()).collect() };
        let header = md.lines().find(|l| l.starts_with("| id ")).unwrap();
        assert_eq!(cells(header)[6], "host", "{header}");
        let row = md.lines().find(|l| l.starts_with("| `a`")).unwrap();
        assert_eq!(cells(row)[6], "qemu+ssh://root@lab-1/system", "{row}");
        let row = md.lines().find(|l| l.starts_with("| `b`")).unwrap();
        assert_eq!(cells(row)[6], "", "{row}");
        // Without libvirt hosts there is no such column.
        let md = summary_markdown(&[sample_pass("a"), b]);
        assert!(!md
            .lines()
            .any(|l| l.starts_with("| id ") && l.contains("host")));
        let v: serde_json::Value = serde_json::to_value(&a).unwrap();
        assert_eq!(v["libvirt_host"], "qemu+ssh://root@lab-1/system");
        let v = serde_json::to_value(sample_pass("q")).unwrap();
        assert!(v.get("libvirt_host").is_none(), "absent on QEMU");
    }

    #[test]
    fn reason_escaped_and_truncated() {
        let long = format!("api: GET /readyz | status 500 | {}", "x".repeat(200));
        let md = summary_markdown(&[sample_fail("a|b", &format!("{long}\nsecond line"))]);
        let row = md.lines().find(|l| l.starts_with("| `a\\|b`")).unwrap();
        assert!(row.contains("api: GET /readyz \\| status 500 \\| xxx"));
        assert!(row.contains('…'));
        assert!(!row.contains("second line"));
        let reason_cell = row.split(" | ").nth(3).unwrap();
        assert!(reason_cell.replace("\\|", "|").trim().chars().count() <= REASON_MAX);
        assert_eq!(truncate("short", 120), "short");
        assert_eq!(cell("a|b\nc"), "a\\|b c");
    }

    #[test]
    fn a_run_names_its_installer_release_and_iso() {
        let mut r = sample_pass("smoke");
        r.assets = Some(crate::result::AssetsUsed {
            installer: "/usr/local/bin/openshift-install".into(),
            installer_version: "openshift-install 4.17.0".into(),
            installer_commit: Some("1a2b3c".into()),
            release_image: Some("quay.io/ocp-release:4.17.0-x86_64".into()),
            inherited_env: Vec::new(),
            iso: "https://m.example/rhcos.iso".into(),
            iso_sha256: "ab".repeat(32),
        });
        let md = summary_markdown(&[r]);
        let want = format!(
            "Installer openshift-install 4.17.0 (commit 1a2b3c; release image quay.io/ocp-release:4.17.0-x86_64); ISO https://m.example/rhcos.iso (sha256 {}).",
            "ab".repeat(32)
        );
        assert!(md.contains(&want), "{md}");
    }

    #[test]
    fn secure_boot_and_the_multipath_root_are_said_only_for_runs_that_have_them() {
        use crate::flow::event::SecureBootState;
        let plain = summary_markdown(&[sample_pass("smoke")]);
        assert!(
            !plain.contains("Secure Boot:") && !plain.contains("Multipath:"),
            "{plain}"
        );
        let mut r = sample_pass("fault-multipath-path-lost");
        r.secure_boot = Some(crate::flow::machine::SecureBootSeen {
            live: Some(SecureBootState::On),
            installed: Some(SecureBootState::Off),
        });
        r.multipath = Some(crate::result::MultipathResult {
            kargs: vec!["rd.multipath=default".into()],
            root: Some(crate::result::MultipathRoot {
                t_ms: 460_234,
                on_multipath: true,
                summary: "the root filesystem is on multipath device mpatha: 2 of 2 paths active"
                    .into(),
                ..Default::default()
            }),
            path_events: vec![crate::result::MultipathEvent {
                t_ms: 207_328,
                step: "path-lost".into(),
                summary: "multipath: the harness removed path install_path1".into(),
            }],
        });
        let md = summary_markdown(&[r]);
        assert!(
            md.contains("Secure Boot: the live system on, the installed system off."),
            "{md}"
        );
        assert!(md.contains("Multipath: the root filesystem is on multipath device mpatha: 2 of 2 paths active."), "{md}");
        let event = format!(
            "- [{:>9}s] multipath: the harness removed path install_path1",
            "207.3"
        );
        assert!(md.contains(&event), "{md}");
    }
}
