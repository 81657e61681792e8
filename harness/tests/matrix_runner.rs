//! The matrix scheduler without VMs: permutations whose installer is missing end at `assets`
//! within milliseconds, which is enough to check ordering, per-permutation directories,
//! parallelism bounds and the refusal of a permutation the host can never hold.

use std::collections::BTreeMap;
use std::path::Path;

use sno_harness::fleet::job::{Job, RunSettings};
use sno_harness::fleet::matrix_runner::{run_matrix, MatrixOptions};
use sno_harness::fleet::places::PlaceSpec;
use sno_harness::result::{RunResult, Verdict};
use sno_harness::run::terminal::Mode;
use sno_harness::scenario::parse_str;
use sno_harness::vm::Backend;

/// A pull secret file of the installer's shape; it opens nothing.
const PULL_SECRET: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/fake-pull-secret.json"
);

fn scenario(name: &str, memory: &str) -> sno_harness::scenario::Scenario {
    let secret = PULL_SECRET;
    let text = format!(
        r#"
name = "{name}"
profile = "openshift"

[vm]
vcpus = 2
memory = "{memory}"

[[disks]]
id = "install"
size = "8GiB"

[install]
pull_secret = {{ file = "{secret}" }}

[openshift]
installer = "/nonexistent/openshift-install"
"#
    );
    parse_str(Path::new("m.toml"), &text).unwrap()
}

fn job(id: &str, memory: &str) -> Job {
    Job {
        id: id.into(),
        params: BTreeMap::from([("vm.memory".to_string(), memory.to_string())]),
        scenario: scenario(id, memory),
        replay: format!("sno-harness matrix m.toml --filter {id}"),
    }
}

#[test]
fn every_permutation_gets_its_own_directory_and_result_in_order() {
    let out = tempfile::tempdir().unwrap();
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let jobs = vec![
        job("a", "2GiB"),
        job("b", "2GiB"),
        job("huge", "4096GiB"),
        job("c", "2GiB"),
    ];
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (results, schedule) = rt.block_on(run_matrix(
        jobs,
        MatrixOptions {
            name: "m".into(),
            out: out.path().to_path_buf(),
            jobs: 2,
            settings: RunSettings {
                keep: sno_harness::run::keeping::Keep::never(),
                timeout_scale: 1.0,
                cache_dir: out.path().join("cache"),
                backend: Backend::Qemu,
                interrupt: rx,
                progress: Mode::Plain,
                junit: Default::default(),
                gather: Default::default(),
            },
            places: vec![PlaceSpec::unlimited(Backend::Qemu)],
        },
    ));
    let ids: Vec<&str> = results.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "huge", "c"]);
    for r in &results {
        let on_disk = RunResult::read(out.path().join(&r.id).join("result.json")).unwrap();
        assert_eq!(&on_disk, r);
        assert_eq!(
            r.params["vm.memory"],
            if r.id == "huge" { "4096GiB" } else { "2GiB" }
        );
    }
    let huge = &results[2];
    assert_eq!(huge.verdict, Verdict::Error);
    assert!(huge.reason.contains("not admitted"), "{}", huge.reason);
    assert!(huge.reason.contains("4096.0 GiB"), "{}", huge.reason);
    for r in [&results[0], &results[1], &results[3]] {
        assert_ne!(r.verdict, Verdict::Pass, "{r:?}");
        assert_eq!(r.failed_phase.as_deref(), Some("assets"), "{r:?}");
        assert!(
            r.reason.contains("/nonexistent/openshift-install"),
            "{}",
            r.reason
        );
    }
    assert!(schedule.peak_parallel >= 1 && schedule.peak_parallel <= 2);
    assert_eq!(schedule.dispatch_delays.len(), 3, "three runs started");
}

#[test]
fn an_interrupt_before_the_start_leaves_every_permutation_not_run() {
    let out = tempfile::tempdir().unwrap();
    let (tx, rx) = tokio::sync::watch::channel(false);
    tx.send(true).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (results, schedule) = rt.block_on(run_matrix(
        vec![job("a", "2GiB"), job("b", "2GiB")],
        MatrixOptions {
            name: "m".into(),
            out: out.path().to_path_buf(),
            jobs: 2,
            settings: RunSettings {
                keep: sno_harness::run::keeping::Keep::never(),
                timeout_scale: 1.0,
                cache_dir: out.path().join("cache"),
                backend: Backend::Qemu,
                interrupt: rx,
                progress: Mode::Plain,
                junit: Default::default(),
                gather: Default::default(),
            },
            places: vec![PlaceSpec::unlimited(Backend::Qemu)],
        },
    ));
    assert_eq!(schedule.peak_parallel, 0);
    for r in results {
        assert_eq!(r.verdict, Verdict::Error);
        assert!(r.reason.contains("interrupted"), "{}", r.reason);
    }
}
