//! Ctrl-C during bootkube: the run ends within 10 s with verdict `error` and reason
//! `interrupted`, keeps its evidence, and leaves no QEMU, socket or disk behind.

mod run_watch;
use run_watch::{
    private_leftovers, qemu_processes_of_run, qemu_processes_of_state, slow_smoke,
    wait_for_bootkube, wait_for_events,
};

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn ctrl_c_during_bootkube_stops_the_run_cleanly() {
    let out = tempfile::Builder::new()
        .prefix("sno-interrupt-")
        .tempdir()
        .unwrap();
    let state = tempfile::Builder::new()
        .prefix("sno-interrupt-state-")
        .tempdir()
        .unwrap();
    let scenario = slow_smoke(out.path());
    let mut child = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .arg("run")
        .arg(&scenario)
        .arg("--out")
        .arg(out.path())
        .env("SNO_HARNESS_STATE_DIR", state.path())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let dir = out.path().join("smoke");
    let events = dir.join("events.jsonl");

    wait_for_bootkube(&mut child, &events);
    assert!(
        !qemu_processes_of_run(state.path(), "smoke").is_empty(),
        "QEMU runs during bootkube"
    );

    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let interrupted = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            interrupted.elapsed() < Duration::from_secs(10),
            "the run did not stop within 10 s of Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let took = interrupted.elapsed();
    eprintln!("stopped {:.1} s after SIGINT", took.as_secs_f64());
    assert_eq!(
        status.code(),
        Some(4),
        "an interrupted run is a harness error (exit 4)"
    );

    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).unwrap()).unwrap();
    assert_eq!(result["verdict"], "error");
    assert_eq!(result["reason"], "interrupted");
    assert_eq!(result["failed_phase"], "bootkube");
    // The evidence stays; the VM and everything it needed are gone.
    for kept in [
        "events.jsonl",
        "serial.log",
        "vm.txt",
        "install-config.yaml",
        "junit.xml",
        "summary.md",
    ] {
        assert!(dir.join(kept).is_file(), "{kept} is kept");
    }
    assert!(
        qemu_processes_of_state(state.path()).is_empty(),
        "QEMU outlived the run"
    );
    let left = private_leftovers(state.path());
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn ctrl_c_during_the_fixture_build_stops_it_and_leaves_no_partial_build() {
    use std::io::Read;
    let out = tempfile::Builder::new()
        .prefix("sno-interrupt-build-")
        .tempdir()
        .unwrap();
    // An empty cache: the run has to build minisno first.
    let cache = tempfile::Builder::new()
        .prefix("sno-cache-")
        .tempdir()
        .unwrap();
    let stderr_path = out.path().join("harness.stderr");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .arg("run")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/smoke.toml"))
        .arg("--out")
        .arg(out.path())
        .env("XDG_CACHE_HOME", cache.path())
        .env("SNO_HARNESS_PROGRESS", "plain")
        .stdin(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    // Wait for the image recipe to be under way (its first step is mmdebstrap), then a little.
    let start = Instant::now();
    loop {
        let mut text = String::new();
        std::fs::File::open(&stderr_path)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        if text.contains("[minisno") {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before the build:\n{text}"
        );
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "the build never started"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(3));
    let cache_str = cache.path().display().to_string();
    let builders = || -> Vec<String> {
        let mut found = Vec::new();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
                let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
                if cmd.contains(&cache_str) {
                    found.push(cmd);
                }
            }
        }
        found
    };
    assert!(!builders().is_empty(), "the build runs");

    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let interrupted = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            interrupted.elapsed() < Duration::from_secs(10),
            "the run did not stop within 10 s of Ctrl-C during the fixture build"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    eprintln!(
        "stopped {:.1} s after SIGINT during the fixture build",
        interrupted.elapsed().as_secs_f64()
    );
    assert_eq!(status.code(), Some(4));
    let result: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.path().join("smoke/result.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(result["verdict"], "error");
    assert_eq!(result["reason"], "interrupted");
    assert_eq!(result["failed_phase"], "assets");
    assert!(
        builders().is_empty(),
        "build processes outlived the run: {:?}",
        builders()
    );
    let fixture_dir = cache.path().join("sno-harness/fixture");
    // The lock file stays (it is only ever locked, never trusted for its content).
    let partial: Vec<_> = std::fs::read_dir(&fixture_dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name())
                .filter(|n| n != ".lock")
                .collect()
        })
        .unwrap_or_default();
    assert!(partial.is_empty(), "left in the cache: {partial:?}");
}

#[test]
fn sigterm_during_a_matrix_stops_every_running_permutation() {
    let out = tempfile::Builder::new()
        .prefix("sno-interrupt-matrix-")
        .tempdir()
        .unwrap();
    slow_smoke(out.path());
    // Three permutations, two at once: when the signal comes two run and one waits its turn.
    let matrix = out.path().join("three.toml");
    std::fs::write(
        &matrix,
        "name = \"three\"\nbase = \"smoke.toml\"\nstrategy = \"full\"\n\n\
         [[axis]]\nkey = \"disks.install.bus\"\nvalues = [\"virtio\", \"scsi\", \"nvme\"]\n",
    )
    .unwrap();
    let runs = out.path().join("runs");
    let state = tempfile::Builder::new()
        .prefix("sno-interrupt-state-")
        .tempdir()
        .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .arg("matrix")
        .arg(&matrix)
        .args(["--jobs", "2", "--out"])
        .arg(&runs)
        .env("SNO_HARNESS_STATE_DIR", state.path())
        .env("SNO_HARNESS_PROGRESS", "plain")
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    // The matrix starts its permutations in order; once both guests print on their consoles,
    // two VMs run (where in the flow they are does not matter to the matrix's interrupt; the
    // single run's test above interrupts bootkube).
    for running in ["virtio", "scsi"] {
        wait_for_events(
            &mut child,
            &runs.join(running).join("events.jsonl"),
            &["\"kind\":\"vm-started\"", "\"kind\":\"console\""],
        );
    }
    assert!(
        !runs.join("nvme").join("events.jsonl").exists(),
        "the third permutation waits while two run"
    );
    for running in ["virtio", "scsi"] {
        assert!(
            !qemu_processes_of_run(state.path(), running).is_empty(),
            "{running} has its VM"
        );
    }

    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let signalled = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            signalled.elapsed() < Duration::from_secs(10),
            "the matrix did not stop within 10 s of SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    eprintln!(
        "matrix stopped {:.1} s after SIGTERM",
        signalled.elapsed().as_secs_f64()
    );
    assert_eq!(
        status.code(),
        Some(4),
        "an interrupted matrix is a harness error"
    );

    let result = |id: &str| -> serde_json::Value {
        let path = runs.join(id).join("result.json");
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
    };
    for running in ["virtio", "scsi"] {
        let r = result(running);
        assert_eq!(r["verdict"], "error", "{running}");
        assert_eq!(r["reason"], "interrupted", "{running}");
        let dir = runs.join(running);
        for kept in ["events.jsonl", "serial.log", "report.junit"] {
            assert!(dir.join(kept).is_file(), "{running}: {kept} is kept");
        }
    }
    assert!(
        qemu_processes_of_state(state.path()).is_empty(),
        "QEMU outlived the matrix"
    );
    let left = private_leftovers(state.path());
    assert!(left.is_empty(), "left behind: {left:?}");
    let queued = result("nvme");
    assert_eq!(queued["verdict"], "error");
    assert_eq!(queued["reason"], "interrupted before it started");
    // The matrix's own reports are written for what ran.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(runs.join("summary.json")).unwrap()).unwrap();
    let text = summary.to_string();
    for id in ["virtio", "scsi", "nvme"] {
        assert!(
            text.contains(&format!("\"{id}\"")),
            "summary.json names {id}"
        );
    }
    assert!(runs.join("junit.xml").is_file());
}
