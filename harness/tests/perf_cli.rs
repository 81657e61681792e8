//! `sno-harness perf` through the real binary.
//!
//! Bad input ends with exit 2 and a message before anything is created. The no-VM tests run
//! the whole command on a scenario whose installer does not exist: each run ends at `assets`
//! within milliseconds (as in matrix_runner.rs), which is enough for the run directories, the
//! warmups, perf.json, perf.md and the exit codes. Every test here runs with a PATH holding
//! only stand-ins for QEMU and its tools that exit at once, so none of them can boot a VM even
//! if validation regressed. The one test that boots VMs is ignored (run it on purpose).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

mod fake_tools;
use fake_tools::fake_tools;
mod no_vm;
use no_vm::{harness_with, no_vm_scenario, repo_file, Ran};

const BAD_INPUT: i32 = 2;
const HOST_NOT_READY: i32 = 3;

/// `sno-harness perf ARGS` with PATH = `path_dir` only and the registry in `state`.
fn perf_with(args: &[&str], path_dir: &Path, state: &Path) -> Ran {
    let args: Vec<&str> = std::iter::once("perf")
        .chain(args.iter().copied())
        .collect();
    harness_with(&args, path_dir, state)
}

/// As `perf_with`, with the stand-ins on PATH.
fn perf(args: &[&str], tmp: &Path) -> Ran {
    let bin = fake_tools(tmp);
    perf_with(args, &bin, &tmp.join("state"))
}

fn assert_bad_input(r: &Ran, words: &[&str]) {
    assert_eq!(r.code, BAD_INPUT, "exit code; stderr:\n{}", r.stderr);
    for w in words {
        assert!(
            r.stderr.contains(w),
            "stderr does not say {w:?}:\n{}",
            r.stderr
        );
    }
}

#[test]
fn repeat_zero_is_bad_input_and_creates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let smoke = repo_file("scenarios/smoke.toml");
    let r = perf(
        &[
            smoke.to_str().unwrap(),
            "--repeat",
            "0",
            "--out",
            out.to_str().unwrap(),
        ],
        tmp.path(),
    );
    assert_bad_input(&r, &["--repeat must be at least 1"]);
    assert!(!out.exists());
}

#[test]
fn missing_file_is_bad_input() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let missing = tmp.path().join("no-such-scenario.toml");
    let r = perf(
        &[
            missing.to_str().unwrap(),
            "--repeat",
            "4",
            "--out",
            out.to_str().unwrap(),
        ],
        tmp.path(),
    );
    assert_bad_input(&r, &["no-such-scenario.toml"]);
    assert!(!out.exists());
}

#[test]
fn filter_matching_no_permutation_is_bad_input() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let disks = repo_file("scenarios/disks.toml");
    let r = perf(
        &[
            disks.to_str().unwrap(),
            "--repeat",
            "4",
            "--filter",
            "no-such-permutation*",
            "--out",
            out.to_str().unwrap(),
        ],
        tmp.path(),
    );
    assert_bad_input(&r, &["no permutation of", "no-such-permutation*", "plan"]);
    assert!(!out.exists());

    let r = perf(
        &[
            disks.to_str().unwrap(),
            "--repeat",
            "4",
            "--strategy",
            "random",
        ],
        tmp.path(),
    );
    assert_bad_input(&r, &["--strategy", "full", "pairwise"]);
}

#[test]
fn matrix_flags_on_a_scenario_are_bad_input() {
    let tmp = tempfile::tempdir().unwrap();
    let smoke = repo_file("scenarios/smoke.toml");
    for flag in [["--filter", "smoke"], ["--strategy", "full"]] {
        let r = perf(
            &[smoke.to_str().unwrap(), "--repeat", "4", flag[0], flag[1]],
            tmp.path(),
        );
        assert_bad_input(&r, &["select permutations of a matrix", "is a scenario"]);
    }
}

#[test]
fn bad_flag_values_are_bad_input() {
    let tmp = tempfile::tempdir().unwrap();
    let smoke = repo_file("scenarios/smoke.toml");
    let smoke = smoke.to_str().unwrap();
    // No --repeat at all.
    assert_bad_input(&perf(&[smoke], tmp.path()), &["--repeat"]);
    // K >= 0 and N >= 0 are the parser's.
    assert_bad_input(
        &perf(&[smoke, "--repeat", "4", "--warmup", "-1"], tmp.path()),
        &["--warmup"],
    );
    assert_bad_input(&perf(&[smoke, "--repeat", "-3"], tmp.path()), &["--repeat"]);
    assert_bad_input(
        &perf(&[smoke, "--repeat", "two"], tmp.path()),
        &["--repeat"],
    );
    assert_bad_input(
        &perf(
            &[smoke, "--repeat", "4", "--timeout-scale", "0"],
            tmp.path(),
        ),
        &["--timeout-scale"],
    );
    // Once a panic after the run directory existed (Duration overflow).
    assert_bad_input(
        &perf(
            &[smoke, "--repeat", "4", "--timeout-scale", "1e17"],
            tmp.path(),
        ),
        &["--timeout-scale", "at most 1000"],
    );
}

#[test]
fn help_says_runs_never_share_the_host() {
    let tmp = tempfile::tempdir().unwrap();
    let r = perf(&["--help"], tmp.path());
    assert_eq!(r.code, 0, "{}", r.stderr);
    for w in [
        "one at a time",
        "--repeat",
        "--warmup",
        "--filter",
        "perf.json",
    ] {
        assert!(
            r.stdout.contains(w),
            "--help does not say {w:?}:\n{}",
            r.stdout
        );
    }
}

#[test]
fn too_few_repeats_warn_and_a_host_not_ready_creates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let empty = tmp.path().join("empty-path");
    std::fs::create_dir(&empty).unwrap();
    let smoke = repo_file("scenarios/smoke.toml");
    // PATH has nothing: the preflight stops before anything is made.
    let r = perf_with(
        &[
            smoke.to_str().unwrap(),
            "--repeat",
            "2",
            "--out",
            out.to_str().unwrap(),
        ],
        &empty,
        &tmp.path().join("state"),
    );
    assert_eq!(r.code, HOST_NOT_READY, "{}", r.stderr);
    assert!(
        r.stderr.contains("warning: --repeat 2") && r.stderr.contains("at least 4"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("not on PATH"), "{}", r.stderr);
    assert!(!out.exists());
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn no_vm_runs_warmups_first_into_their_own_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    // The runs end as the scenario expects (an error at assets, naming the installer): exit 0.
    let scenario = no_vm_scenario(tmp.path(), Some("error"));
    let r = perf(
        &[
            scenario.to_str().unwrap(),
            "--repeat",
            "2",
            "--warmup",
            "1",
            "--out",
            out.to_str().unwrap(),
        ],
        tmp.path(),
    );
    assert_eq!(r.code, 0, "stderr:\n{}", r.stderr);
    for d in ["warmup-0", "run-0", "run-1"] {
        let result = read_json(&out.join("novm").join(d).join("result.json"));
        assert_eq!(result["id"], "novm", "{d}");
        assert_eq!(result["failed_phase"], "assets", "{d}");
    }
    assert!(!out.join("novm/run-2").exists());
    assert!(!out.join("novm/warmup-1").exists());
    // The warmup ran first.
    let order: Vec<usize> = [
        "novm/warmup-0 (1 of 3)",
        "novm/run-0 (2 of 3)",
        "novm/run-1 (3 of 3)",
    ]
    .iter()
    .map(|w| {
        r.stderr
            .find(w)
            .unwrap_or_else(|| panic!("{w}:\n{}", r.stderr))
    })
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{}", r.stderr);

    let v = read_json(&out.join("perf.json"));
    assert_eq!(v["schema"], "sno-harness/perf/v1");
    assert_eq!(v["repeat"], 2);
    assert_eq!(v["warmup"], 1);
    assert_eq!(v["interrupted"], false);
    assert!(!v["finished_at"].as_str().unwrap().is_empty());
    assert!(v["strategy"].is_null());
    let p = &v["permutations"][0];
    assert_eq!(p["id"], "novm");
    assert_eq!(
        p["counts"],
        serde_json::json!({"planned": 2, "measured": 2, "passed": 0, "as_expected": 2, "warmups": 1})
    );
    let runs = p["runs"].as_array().unwrap();
    let dirs: Vec<&str> = runs.iter().map(|e| e["dir"].as_str().unwrap()).collect();
    assert_eq!(dirs, ["novm/warmup-0", "novm/run-0", "novm/run-1"]);
    assert_eq!(runs[0]["kind"], "warmup");
    for e in runs {
        assert_eq!(e["in_statistics"], false, "not passed: {e}");
        assert!(
            e["reason"].as_str().unwrap().contains("a failing stand-in"),
            "{e}"
        );
    }
    assert_eq!(p["phases"], serde_json::json!([]));
    assert!(p["total_seconds"].is_null());
    // The host context, measured here.
    let h = &v["host"];
    assert_eq!(h["accel"], "tcg");
    assert_eq!(h["backend"], "qemu");
    assert!(h["qemu_version"]
        .as_str()
        .unwrap()
        .contains("perf_cli stand-in"));
    assert!(!h["harness_version"].as_str().unwrap().is_empty());
    assert_eq!(h["install_disk"]["disk"], "install");
    assert_eq!(h["install_disk"]["cache"], "unsafe");
    assert!(!h["backing_store"]["fstype"].as_str().unwrap().is_empty());
    assert!(!h["backing_store"]["mount_point"]
        .as_str()
        .unwrap()
        .is_empty());
    // Too few runs for --compare: said on stderr and in the report.
    assert!(r.stderr.contains("warning: --repeat 2"), "{}", r.stderr);
    assert!(v["warnings"][0].as_str().unwrap().contains("at least 4"));

    let md = std::fs::read_to_string(out.join("perf.md")).unwrap();
    assert_eq!(r.stdout, md, "the table on stdout is perf.md");
    assert!(md.contains("| permutation | phase"), "{md}");
    assert!(md.contains("(no passed run)"), "{md}");
    assert!(md.contains("0 of 2 measured runs passed"), "{md}");
    assert!(md.contains("accelerator tcg"), "{md}");
    assert!(!out.join(".perf.json.tmp").exists());
    // report.html: the Performance section, without plots (no run passed), linking the runs.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<section id=\"performance\">"), "{html}");
    assert!(html.contains("No passed measured run"), "{html}");
    assert!(!html.contains("<svg class=\"dist\""), "{html}");
    assert!(
        html.contains("href=\"./novm/warmup-0/result.json\""),
        "{html}"
    );
}

#[test]
fn no_vm_exit_codes_follow_the_measured_runs() {
    // An error nobody expected is the harness's: exit 4.
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let scenario = no_vm_scenario(tmp.path(), None);
    let r = perf(
        &[
            scenario.to_str().unwrap(),
            "--repeat",
            "1",
            "--out",
            out.to_str().unwrap(),
        ],
        tmp.path(),
    );
    assert_eq!(r.code, 4, "stderr:\n{}", r.stderr);
    let v = read_json(&out.join("perf.json"));
    assert_eq!(v["permutations"][0]["runs"][0]["verdict"], "error");
    assert_eq!(v["permutations"][0]["counts"]["as_expected"], 0);

    // Not what the scenario expects: exit 1.
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let scenario = no_vm_scenario(tmp.path(), Some("fail"));
    let r = perf(
        &[
            scenario.to_str().unwrap(),
            "--repeat",
            "1",
            "--out",
            out.to_str().unwrap(),
        ],
        tmp.path(),
    );
    assert_eq!(r.code, 1, "stderr:\n{}", r.stderr);
    assert!(r.stderr.contains("NOT as expected"), "{}", r.stderr);
}

#[test]
fn no_vm_matrix_one_directory_per_permutation_and_its_own_host_context() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    no_vm_scenario(tmp.path(), Some("error"));
    let matrix = tmp.path().join("cache.toml");
    std::fs::write(
        &matrix,
        r#"
name = "cache"
base = "novm.toml"

[[axis]]
key = "disks.install.cache"
values = ["unsafe", "writeback", "none"]
"#,
    )
    .unwrap();
    let r = perf(
        &[
            matrix.to_str().unwrap(),
            "--repeat",
            "1",
            "--filter",
            "unsafe,writeback",
            "--out",
            out.to_str().unwrap(),
        ],
        tmp.path(),
    );
    assert_eq!(r.code, 0, "stderr:\n{}", r.stderr);
    assert!(out.join("unsafe/run-0/result.json").exists());
    assert!(out.join("writeback/run-0/result.json").exists());
    assert!(!out.join("none").exists(), "filtered out");
    let v = read_json(&out.join("perf.json"));
    assert_eq!(v["strategy"], "full");
    assert_eq!(v["filter"], "unsafe,writeback");
    let perms = v["permutations"].as_array().unwrap();
    assert_eq!(perms.len(), 2);
    assert_eq!(perms[0]["params"]["disks.install.cache"], "unsafe");
    assert_eq!(v["host"]["install_disk"]["cache"], "unsafe");
    assert!(perms[0].get("host").is_none(), "the top-level host");
    assert_eq!(perms[1]["host"]["install_disk"]["cache"], "writeback");
}

#[test]
fn an_interrupt_between_runs_stops_before_the_next_one() {
    use sno_harness::fleet::job::{Job as PerfJob, RunSettings};
    use sno_harness::fleet::perf_runner::{run_perf, PerfOptions};
    use sno_harness::perf::model::{build, PerfInput};

    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let scenario = sno_harness::scenario::load(&no_vm_scenario(tmp.path(), None)).unwrap();
    let job = PerfJob {
        id: "novm".into(),
        params: Default::default(),
        scenario,
        replay: "sno-harness run novm.toml".into(),
    };
    let (tx, rx) = tokio::sync::watch::channel(false);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut calls = 0;
    let ran = rt.block_on(run_perf(
        std::slice::from_ref(&job),
        PerfOptions {
            out: out.clone(),
            repeat: 3,
            warmup: 1,
            settings: RunSettings {
                keep: sno_harness::run::keeping::Keep::never(),
                timeout_scale: 1.0,
                cache_dir: tmp.path().join("cache"),
                backend: sno_harness::vm::Backend::Qemu,
                interrupt: rx,
                progress: sno_harness::run::terminal::Mode::Plain,
                junit: Default::default(),
                gather: Default::default(),
            },
            disk_write_only: false,
        },
        |so_far| {
            calls += 1;
            // Ctrl-C once the warmup and the first measured run are done.
            if so_far[0].runs.len() == 2 {
                tx.send(true).unwrap();
            }
        },
    ));
    assert_eq!(calls, 2);
    assert!(ran.interrupted);
    let runs: Vec<&str> = ran.permutations[0]
        .runs
        .iter()
        .map(|r| r.dir.as_str())
        .collect();
    assert_eq!(runs, ["novm/warmup-0", "novm/run-0"]);
    assert!(out.join("novm/run-0/result.json").exists());
    assert!(!out.join("novm/run-1").exists());

    let report = build(&PerfInput {
        source: "novm.toml".into(),
        strategy: None,
        filter: None,
        repeat: 3,
        warmup: 1,
        started_at: String::new(),
        finished_at: String::new(),
        interrupted: ran.interrupted,
        backend: "qemu".into(),
        backing_store: None,
        permutations: ran.permutations,
    });
    assert!(report.interrupted);
    let c = report.permutations[0].counts;
    assert_eq!((c.planned, c.measured, c.warmups), (3, 1, 1));
    assert!(report.warnings.iter().any(|w| w.starts_with("interrupted")));
}

/// Every number in a JSON document, with its path.
fn numbers(v: &Value, path: &str, out: &mut Vec<(String, f64)>) {
    match v {
        Value::Number(n) => out.push((path.to_string(), n.as_f64().unwrap_or(f64::NAN))),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                numbers(x, &format!("{path}[{i}]"), out);
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                numbers(x, &format!("{path}.{k}"), out);
            }
        }
        _ => {}
    }
}

#[test]
#[ignore = "boots 3 VMs, about 6 minutes"]
fn smoke_twice_after_one_warmup() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .args([
            "perf",
            "scenarios/smoke.toml",
            "--repeat",
            "2",
            "--warmup",
            "1",
        ])
        .arg("--out")
        .arg(&out)
        .env("SNO_HARNESS_STATE_DIR", tmp.path().join("state"))
        .env("SNO_HARNESS_PROGRESS", "plain")
        .current_dir(repo_file("."))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "stderr:\n{stderr}");

    assert!(out.join("smoke/warmup-0/result.json").exists());
    assert!(out.join("smoke/run-0/result.json").exists());
    assert!(out.join("smoke/run-1/result.json").exists());
    let v = read_json(&out.join("perf.json"));
    assert_eq!(v["schema"], "sno-harness/perf/v1");
    let p = &v["permutations"][0];
    assert_eq!(p["id"], "smoke");
    assert_eq!(p["counts"]["measured"], 2);
    assert_eq!(p["counts"]["passed"], 2);
    assert_eq!(p["counts"]["warmups"], 1);
    // The warmup is listed, and in no statistic.
    let warmup = &p["runs"][0];
    assert_eq!(warmup["dir"], "smoke/warmup-0");
    assert_eq!(warmup["in_statistics"], false);
    let phases = p["phases"].as_array().unwrap();
    assert!(!phases.is_empty());
    for ph in phases {
        let s = &ph["seconds"];
        assert_eq!(s["n"], 2, "{ph}");
        assert_eq!(s["samples"].as_array().unwrap().len(), 2, "{ph}");
        assert_eq!(
            s["runs"],
            serde_json::json!([0, 1]),
            "{ph}: warmup excluded"
        );
        for k in ["min", "max", "mean", "median", "p90", "stddev"] {
            assert!(s[k].is_number(), "{k} of {ph}");
        }
    }
    assert_eq!(p["total_seconds"]["n"], 2);
    let dw = &p["disk_write"];
    assert_eq!(dw["mib_s"]["n"], 2, "{dw}");
    assert!(dw["mib_s"]["median"].as_f64().unwrap() > 0.0, "{dw}");

    let mut all = Vec::new();
    numbers(&v, "", &mut all);
    for (path, x) in &all {
        assert!(x.is_finite(), "{path} = {x}");
    }
    let h = &v["host"];
    for k in [
        "accel",
        "cpu_model",
        "qemu_version",
        "kernel",
        "harness_version",
        "backend",
    ] {
        assert!(!h[k].as_str().unwrap_or("").is_empty(), "host.{k}: {h}");
    }
    for k in ["cache", "aio"] {
        assert!(
            !h["install_disk"][k].as_str().unwrap_or("").is_empty(),
            "{h}"
        );
    }
    for k in ["fstype", "source", "mount_point"] {
        assert!(
            !h["backing_store"][k].as_str().unwrap_or("").is_empty(),
            "{h}"
        );
    }
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("| smoke"), "{stdout}");
    assert!(stdout.contains("MiB/s median"), "{stdout}");
}
