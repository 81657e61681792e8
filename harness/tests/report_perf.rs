//! `sno-harness report` on perf directories, through the real binary and without VMs: two
//! perf directories are made here from synthetic runs (their result.json files, and perf.json
//! built and written by the same code `perf` uses), then compared (`--compare`, `--alpha`,
//! `--min-effect-pct`, `--json`) or rendered (report.html's Performance section).

use std::path::Path;
use std::process::{Command, Output};

use report_fixtures::passed_run;
use serde_json::Value;
use sno_harness::hw::{AioMode, CacheMode};
use sno_harness::perf::model::BackingStore;
use sno_harness::perf::model::{build, InstallDisk, PerfInput, PerfRun, PermutationRuns, RunKind};
use sno_harness::result::{HostContext, RunResult};

mod planted;
mod report_fixtures;

const REGRESSED: i32 = 1;
const BAD_INPUT: i32 = 2;

/// Run-to-run noise of a steady host: every phase of run i takes its nominal time times
/// these, in an order unrelated to size.
const BASELINE_NOISE: [f64; 6] = [1.0, 1.02, 0.98, 1.01, 0.99, 1.0];
/// The same spread, interleaved with the baseline's.
const CANDIDATE_NOISE: [f64; 6] = [1.005, 0.985, 1.015, 0.995, 1.025, 0.975];

fn sno_harness(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .args(args)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The line of the table for this permutation and metric.
fn line<'a>(text: &'a str, id: &str, metric: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(&format!("{id} ")) && l.contains(metric))
        .unwrap_or_else(|| panic!("no line {id} {metric} in:\n{text}"))
}

/// How one synthetic permutation ran.
struct Perm {
    id: &'static str,
    /// One factor per measured run, applied to every phase and the disk write.
    noise: &'static [f64],
    /// bootkube alone takes this many times longer.
    bootkube: f64,
}

impl Perm {
    fn new(id: &'static str, noise: &'static [f64]) -> Perm {
        Perm {
            id,
            noise,
            bootkube: 1.0,
        }
    }
}

/// A passed run of the fixture's phases (phase i takes 2 + 1.5 i seconds) times `factor`,
/// bootkube times `bootkube` more; 256 MiB written in 3.1 s times `factor`.
fn timed_run(id: &str, factor: f64, bootkube: f64, accel: &str) -> RunResult {
    let mut r = passed_run(id, &[]);
    let mut t = 0;
    for (i, p) in r.phases.iter_mut().enumerate() {
        let f = if p.name == "bootkube" {
            factor * bootkube
        } else {
            factor
        };
        let d = ((2_000.0 + 1_500.0 * i as f64) * f).round() as u64;
        p.start_ms = Some(t);
        t += d;
        p.end_ms = Some(t);
        p.duration_ms = Some(d);
    }
    r.duration_ms = t;
    let w = r.disk_write.as_mut().unwrap();
    w.duration_ms = (3_100.0 * factor).round() as u64;
    w.mib_per_s = 256.0 / (w.duration_ms as f64 / 1000.0);
    r.accel = accel.into();
    r.host = HostContext {
        qemu_version: "QEMU emulator version 8.2.2".into(),
        cpu_model: "Intel Xeon Gold 6338".into(),
        harness_version: "0.1.0".into(),
        kernel: "6.8.0".into(),
    };
    r
}

/// A perf directory of these permutations' measured runs on a host with `accel`: each run's
/// result.json in `<id>/run-<i>/`, and perf.json as `perf` writes it.
fn perf_dir(perms: &[Perm], accel: &str) -> tempfile::TempDir {
    let out = tempfile::Builder::new()
        .prefix("sno-report-perf-")
        .tempdir()
        .unwrap();
    let mut permutations = Vec::new();
    for p in perms {
        let mut runs = Vec::new();
        for (i, &f) in p.noise.iter().enumerate() {
            let index = i as u32;
            let dir = format!("{}/{}", p.id, RunKind::Measured.dir_name(index));
            let result = timed_run(p.id, f, p.bootkube, accel);
            std::fs::create_dir_all(out.path().join(&dir)).unwrap();
            result.write(&out.path().join(&dir)).unwrap();
            runs.push(PerfRun {
                kind: RunKind::Measured,
                index,
                dir,
                result,
                as_expected: true,
                load_1m: Some(0.5),
                other_vms: vec![],
            });
        }
        permutations.push(PermutationRuns {
            id: p.id.into(),
            params: Default::default(),
            install_disk: Some(InstallDisk {
                disk: "install".into(),
                cache: CacheMode::Unsafe,
                aio: AioMode::Threads,
                throttle: None,
            }),
            runs,
        });
    }
    let repeat = perms.iter().map(|p| p.noise.len()).max().unwrap_or(0) as u32;
    let report = build(&PerfInput {
        source: "scenarios/smoke.toml".into(),
        strategy: None,
        filter: None,
        repeat,
        warmup: 0,
        started_at: "2026-12-01T08:00:00Z".into(),
        finished_at: "2026-12-01T09:00:00Z".into(),
        interrupted: false,
        backend: "qemu".into(),
        backing_store: Some(BackingStore {
            fstype: "xfs".into(),
            source: "/dev/nvme0n1p2".into(),
            mount_point: "/".into(),
            options: "rw".into(),
        }),
        permutations,
    });
    std::fs::write(out.path().join("perf.json"), report.to_json()).unwrap();
    out
}

fn compare(candidate: &Path, baseline: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["report", path(candidate), "--compare", path(baseline)];
    args.extend_from_slice(extra);
    sno_harness(&args)
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn unchanged_runs_exit_0_with_an_aligned_table() {
    let base = perf_dir(&[Perm::new("smoke", &BASELINE_NOISE)], "kvm");
    let cand = perf_dir(&[Perm::new("smoke", &CANDIDATE_NOISE)], "kvm");
    let o = compare(cand.path(), base.path(), &[]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{text}{}", stderr(&o));
    assert!(text.starts_with(&format!(
        "{} compared with the baseline {} (their perf.json)\nregression: slower at alpha 0.05",
        path(cand.path()),
        path(base.path())
    )));
    assert!(text.contains("at least 5% above the baseline's"), "{text}");
    let header = text.lines().find(|l| l.starts_with("permutation")).unwrap();
    for h in [
        "metric",
        "baseline",
        "candidate",
        "change",
        "p-value",
        "n",
        "verdict",
    ] {
        assert!(header.contains(h), "{h}: {header}");
    }
    // 11 phases, the whole run, the disk write and its MiB/s, all lined up under the header.
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("smoke ")).collect();
    assert_eq!(rows.len(), 14, "{text}");
    let verdict_col = header.find("verdict").unwrap();
    for r in &rows {
        assert!(r[..verdict_col].ends_with("  "), "{r}");
        assert!(!r.contains("REGRESSION"), "{r}");
    }
    let bootkube = line(&text, "smoke", "bootkube (s)");
    assert!(bootkube.contains("6/6"), "{bootkube}");
    assert!(
        bootkube.ends_with("no significant difference"),
        "{bootkube}"
    );
    assert!(!text.contains("WARNING"), "same host: {text}");
    assert!(text.trim_end().ends_with("no regression"), "{text}");
    // A comparison only reads.
    assert_eq!(files_in(cand.path()), ["perf.json", "smoke"]);
}

#[test]
fn a_slower_phase_exits_1_and_the_json_says_why() {
    let base = perf_dir(&[Perm::new("smoke", &BASELINE_NOISE)], "kvm");
    let slow = Perm {
        bootkube: 1.3,
        ..Perm::new("smoke", &CANDIDATE_NOISE)
    };
    let cand = perf_dir(&[slow], "kvm");
    let json = cand.path().join("cmp.json");
    let o = compare(cand.path(), base.path(), &["--json", path(&json)]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(REGRESSED), "{text}{}", stderr(&o));
    // bootkube (phase 2): 5 s -> 6.5 s.
    let bootkube = line(&text, "smoke", "bootkube (s)");
    for cell in ["5.00", "6.50", "+30.0%", "6/6", "slower"] {
        assert!(bootkube.contains(cell), "{cell}: {bootkube}");
    }
    assert!(bootkube.ends_with("REGRESSION"), "{bootkube}");
    // The whole run grew by 1.5 s of 104.5: whatever the test says, below the 5 % minimum.
    assert!(!line(&text, "smoke", "total (s)").contains("REGRESSION"));
    assert!(text.contains("\n1 regression\n"), "{text}");
    assert!(
        text.trim_end().ends_with(&format!("wrote {}", path(&json))),
        "{text}"
    );

    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["schema"], "sno-harness/perf-compare/v1");
    assert_eq!(v["baseline_dir"], path(base.path()));
    assert_eq!(v["candidate_dir"], path(cand.path()));
    assert_eq!(v["alpha"], 0.05);
    assert_eq!(v["min_effect_pct"], 5.0);
    assert_eq!(v["regressions"], 1);
    let rows = v["rows"].as_array().unwrap();
    let flagged: Vec<&Value> = rows.iter().filter(|r| r["regression"] == true).collect();
    assert_eq!(flagged.len(), 1);
    let r = flagged[0];
    assert_eq!(r["permutation"], "smoke");
    assert_eq!(
        r["metric"],
        serde_json::json!({"kind": "phase", "phase": "bootkube"})
    );
    assert_eq!(r["verdict"], "slower");
    assert_eq!(r["decided_by"], "test");
    assert!(r["p_value"].as_f64().unwrap() < 0.05, "{r}");
    assert_eq!(r["baseline"]["median"], 5.0);
    // Whole milliseconds in result.json: 6467.5 and 6532.5 ms round up.
    let median = r["candidate"]["median"].as_f64().unwrap();
    assert!((median - 6.5).abs() < 0.001, "{r}");
    let disk = rows
        .iter()
        .find(|r| r["metric"]["kind"] == "disk_write")
        .unwrap();
    assert!(
        disk["mib_s"]["baseline_median"].as_f64().unwrap() > 80.0,
        "{disk}"
    );

    // A larger minimum effect lets 30 % through; a smaller alpha keeps it (p = 0.005).
    let o = compare(cand.path(), base.path(), &["--min-effect-pct", "31"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(line(&stdout(&o), "smoke", "bootkube (s)")
        .ends_with("slower; below the 31% minimum effect"));
    let o = compare(cand.path(), base.path(), &["--alpha", "0.01"]);
    assert_eq!(o.status.code(), Some(REGRESSED), "{}", stdout(&o));
}

#[test]
fn the_comparison_json_is_written_through_no_link_planted_beside_it() {
    let base = perf_dir(&[Perm::new("smoke", &BASELINE_NOISE)], "kvm");
    let cand = perf_dir(&[Perm::new("smoke", &CANDIDATE_NOISE)], "kvm");
    let elsewhere = tempfile::tempdir().unwrap();
    let victim = planted::Victim::new(elsewhere.path());
    let json = cand.path().join("cmp.json");
    victim.link_beside(&json);
    let o = compare(cand.path(), base.path(), &["--json", path(&json)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    victim.assert_untouched();
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["schema"], "sno-harness/perf-compare/v1");
}

#[test]
fn too_few_runs_are_judged_by_the_thresholds() {
    const TWO: [f64; 2] = [1.0, 1.01];
    let base = perf_dir(&[Perm::new("smoke", &TWO)], "kvm");
    // bootkube 5 s -> 25 s: +400 % and +20 s, beyond 20 % and 10 s.
    let slow = Perm {
        bootkube: 5.0,
        ..Perm::new("smoke", &TWO)
    };
    let cand = perf_dir(&[slow], "kvm");
    let o = compare(cand.path(), base.path(), &[]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(REGRESSED), "{text}{}", stderr(&o));
    let bootkube = line(&text, "smoke", "bootkube (s)");
    assert!(
        bootkube.contains("too few runs; threshold: n=2 < 4 needed for the test"),
        "{bootkube}"
    );
    assert!(bootkube.ends_with("REGRESSION"), "{bootkube}");
    let assets = line(&text, "smoke", "assets (s)");
    assert!(
        assets.ends_with("threshold: n=2 < 4 needed for the test"),
        "{assets}"
    );
    // The thresholds are the flags': 20 s is not beyond 25 s.
    let o = compare(cand.path(), base.path(), &["--threshold-s", "25"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn permutations_only_on_one_side_are_listed() {
    let base = perf_dir(
        &[
            Perm::new("a", &BASELINE_NOISE),
            Perm::new("gone", &BASELINE_NOISE),
        ],
        "kvm",
    );
    let cand = perf_dir(
        &[
            Perm::new("new", &CANDIDATE_NOISE),
            Perm::new("a", &CANDIDATE_NOISE),
        ],
        "kvm",
    );
    let o = compare(cand.path(), base.path(), &[]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains("\nonly in the baseline (not compared): gone\n"),
        "{text}"
    );
    assert!(
        text.contains("\nonly in the candidate (not compared): new\n"),
        "{text}"
    );
    assert!(!text.lines().any(|l| l.starts_with("new ")), "{text}");
}

#[test]
fn another_accelerator_is_named_and_fails_the_gate() {
    let base = perf_dir(&[Perm::new("smoke", &BASELINE_NOISE)], "kvm");
    let cand = perf_dir(&[Perm::new("smoke", &CANDIDATE_NOISE)], "tcg");
    let o = compare(cand.path(), base.path(), &[]);
    let text = stdout(&o);
    // The rows are shown, but KVM against TCG is no pass.
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains("no regression"), "{text}");
    assert!(
        stderr(&o).contains(
            "report --compare: accelerator: kvm in the baseline, tcg in the candidate: the figures are not comparable"
        ),
        "{}",
        stderr(&o)
    );
    assert!(text.contains("WARNING: the host context differs"), "{text}");
    assert!(
        text.contains("  - accelerator: kvm in the baseline, tcg in the candidate\n"),
        "{text}"
    );
    assert!(
        stderr(&o).contains("warning: the host context differs from the baseline's: accelerator"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn nothing_in_common_fails_the_gate() {
    let base = perf_dir(&[Perm::new("smoke", &BASELINE_NOISE)], "kvm");
    let cand = perf_dir(&[Perm::new("other", &BASELINE_NOISE)], "kvm");
    let o = compare(cand.path(), base.path(), &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("FAILED: nothing comparable was compared"),
        "{}",
        stdout(&o)
    );
    assert!(
        stderr(&o)
            .contains("no permutation in common: the baseline has smoke, the candidate other"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_perf_directory_compares_only_with_a_perf_directory() {
    let perf = perf_dir(&[Perm::new("smoke", &BASELINE_NOISE)], "kvm");
    let plain = tempfile::tempdir().unwrap();
    let run = plain.path().join("smoke");
    std::fs::create_dir(&run).unwrap();
    passed_run("smoke", &[]).write(&run).unwrap();

    let o = compare(perf.path(), plain.path(), &[]);
    assert_eq!(o.status.code(), Some(BAD_INPUT));
    let e = stderr(&o);
    assert!(
        e.contains(&format!(
            "{} has a perf.json, the baseline {} has none",
            path(perf.path()),
            path(plain.path())
        )),
        "{e}"
    );
    assert!(e.contains("compare two perf directories"), "{e}");

    let o = compare(plain.path(), perf.path(), &[]);
    assert_eq!(o.status.code(), Some(BAD_INPUT));
    let e = stderr(&o);
    assert!(
        e.contains(&format!(
            "the baseline {} has a perf.json, {} has none",
            path(perf.path()),
            path(plain.path())
        )),
        "{e}"
    );

    let missing = plain.path().join("nope");
    let o = compare(perf.path(), &missing, &[]);
    assert_eq!(o.status.code(), Some(BAD_INPUT));
    assert!(
        stderr(&o).contains(&format!(
            "the baseline {} is not a directory",
            path(&missing)
        )),
        "{}",
        stderr(&o)
    );

    // The statistical flags are for perf directories, and for a comparison.
    let o = compare(plain.path(), plain.path(), &["--alpha", "0.1"]);
    assert_eq!(o.status.code(), Some(BAD_INPUT));
    assert!(
        stderr(&o).contains("compare perf directories"),
        "{}",
        stderr(&o)
    );
    let o = sno_harness(&["report", path(perf.path()), "--json", "x.json"]);
    assert_eq!(o.status.code(), Some(BAD_INPUT));
    assert!(
        stderr(&o).contains("--compare BASELINE_DIR"),
        "{}",
        stderr(&o)
    );
    // Plain directories still compare as before.
    assert_eq!(
        compare(plain.path(), plain.path(), &[]).status.code(),
        Some(0)
    );
}

#[test]
fn bad_flags_and_bad_perf_json_exit_2_saying_what_is_wrong() {
    let base = perf_dir(&[Perm::new("smoke", &BASELINE_NOISE)], "kvm");
    let cand = perf_dir(&[Perm::new("smoke", &CANDIDATE_NOISE)], "kvm");
    for (flag, value) in [
        ("--alpha", "0"),
        ("--alpha", "1"),
        ("--alpha", "1.5"),
        ("--alpha", "-0.05"),
        ("--min-effect-pct", "-1"),
        ("--min-effect-pct", "NaN"),
    ] {
        let o = compare(cand.path(), base.path(), &[flag, value]);
        assert_eq!(o.status.code(), Some(BAD_INPUT), "{flag} {value}");
        assert!(stderr(&o).contains(&format!("{flag}:")), "{}", stderr(&o));
    }
    let o = compare(cand.path(), base.path(), &["--alpha", "1.5"]);
    assert!(
        stderr(&o).contains("strictly between 0 and 1, not 1.5"),
        "{}",
        stderr(&o)
    );

    let file = base.path().join("perf.json");
    for (content, says) in [
        (
            r#"{"schema": "sno-harness/perf/v2"}"#,
            "schema \"sno-harness/perf/v2\"",
        ),
        ("{\"schema\": ", "not JSON"),
        (
            r#"{"schema": "sno-harness/perf/v1", "permutations": 3}"#,
            "not a valid",
        ),
    ] {
        std::fs::write(&file, content).unwrap();
        let o = compare(cand.path(), base.path(), &[]);
        assert_eq!(o.status.code(), Some(BAD_INPUT), "{content}");
        let e = stderr(&o);
        assert!(
            e.contains(path(&file)) && e.contains(says),
            "{content}: {e}"
        );
        assert!(e.starts_with("sno-harness: baseline: "), "{e}");
        assert!(!e.contains("panicked"), "{e}");
        let o = sno_harness(&["report", path(base.path())]);
        assert_eq!(o.status.code(), Some(BAD_INPUT), "{content}");
    }
}

/// Every `href` of the page that leads to a result.json, resolved from `dir`.
fn result_links(html: &str) -> Vec<String> {
    html.split("href=\"")
        .skip(1)
        .map(|s| s.split('"').next().unwrap().to_string())
        .filter(|h| h.ends_with("/result.json"))
        .collect()
}

#[test]
fn report_writes_the_performance_section_with_its_plots() {
    let dir = perf_dir(
        &[
            Perm::new("virtio", &BASELINE_NOISE),
            Perm::new("nvme", &CANDIDATE_NOISE[..4]),
        ],
        "kvm",
    );
    let o = sno_harness(&["report", path(dir.path())]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let page = dir.path().join("report.html");
    assert!(stdout(&o).contains(&format!("wrote {}", path(&page))));
    assert_eq!(
        files_in(dir.path()),
        ["nvme", "perf.json", "report.html", "virtio"]
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<section id=\"performance\"><h2>Performance</h2>"));
    assert!(html.contains("Host: accelerator kvm; CPU Intel Xeon Gold 6338;"));
    for id in ["virtio", "nvme"] {
        assert!(html.contains(&format!(
            "<div class=\"perf-permutation\" data-permutation=\"{id}\">"
        )));
    }
    // A plot per row (11 phases, the whole run, the write's seconds and MiB/s), a dot per run.
    assert_eq!(html.matches("<svg class=\"dist\"").count(), 2 * 14);
    assert_eq!(
        html.matches("<circle class=\"sample\"").count(),
        14 * (6 + 4)
    );
    for m in ["phase", "total", "disk-write-s", "disk-write-mib-s"] {
        assert_eq!(
            html.matches(&format!("data-metric=\"{m}\"")).count(),
            2,
            "{m}"
        );
    }
    // Every link to a run resolves.
    let links = result_links(&html);
    assert!(links.len() >= 10, "{links:?}");
    for l in links {
        assert!(dir.path().join(&l).is_file(), "{l}");
    }

    // --html elsewhere links back into the perf directory.
    let elsewhere = tempfile::tempdir().unwrap();
    let file = elsewhere.path().join("perf.html");
    let o = sno_harness(&["report", path(dir.path()), "--html", path(&file)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let html = std::fs::read_to_string(&file).unwrap();
    for l in result_links(&html) {
        assert!(elsewhere.path().join(&l).is_file(), "{l}");
    }

    // A comparison with --html writes the candidate's page too.
    let base = perf_dir(&[Perm::new("virtio", &CANDIDATE_NOISE)], "kvm");
    let file = elsewhere.path().join("cmp.html");
    let o = compare(dir.path(), base.path(), &["--html", path(&file)]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(std::fs::read_to_string(&file)
        .unwrap()
        .contains("data-permutation=\"nvme\""));
}
