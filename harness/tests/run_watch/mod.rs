//! Shared by the tests that stop a run in the middle and check it left nothing behind. Each test
//! binary uses a different subset, hence the allowance.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

/// QEMU processes whose command line names `dir` (a run's disks and sockets are in it).
pub fn qemu_processes_for(dir: &Path) -> Vec<String> {
    let needle = dir.display().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|p| std::fs::read(p.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains("qemu-system") && c.contains(&needle))
        .collect()
}

/// The smoke scenario with the normal schedule, written into `into`: its bootkube stages take
/// 2 s each, so a signal sent once bootkube has started lands in bootkube for certain (the
/// fast schedule's whole bootkube takes 4 s).
pub fn slow_smoke(into: &Path) -> PathBuf {
    let smoke = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/smoke.toml"),
    )
    .unwrap();
    assert!(
        smoke.contains("schedule = \"fast\""),
        "smoke.toml changed shape"
    );
    let path = into.join("smoke.toml");
    std::fs::write(
        &path,
        smoke.replace("schedule = \"fast\"", "schedule = \"normal\""),
    )
    .unwrap();
    path
}

/// Waits until the run is in its bootkube phase: the live system was seen (which ends
/// live-boot) and bootkube.sh printed a line after that, in the run's events.
pub fn wait_for_bootkube(child: &mut Child, events: &Path) {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(events).unwrap_or_default();
        let live_seen = text
            .lines()
            .position(|l| l.contains("\"kind\":\"guest-status\"") && l.contains("\"live\":true"));
        if live_seen.is_some_and(|i| {
            text.lines().skip(i).any(|l| {
                l.contains("\"kind\":\"journal\"")
                    && l.contains("bootkube.service")
                    && l.contains("Rendering")
            })
        }) {
            return;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "the run ended ({status}) before bootkube started\n{}",
                what_the_run_left(events)
            );
        }
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "bootkube never started"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Waits until the run's events hold every one of `needles` (while the run still runs).
pub fn wait_for_events(child: &mut Child, events: &Path, needles: &[&str]) {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(events).unwrap_or_default();
        if needles.iter().all(|n| text.contains(n)) {
            return;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "the run ended ({status}) before its events held {needles:?}\n{}",
                what_the_run_left(events)
            );
        }
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "{} never held {needles:?}",
            events.display()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// For a run that ended early: its result, its last events and the stderr files beside its
/// directory (a test's temporary directory goes when the test fails, and the cause with it).
pub fn what_the_run_left(events: &Path) -> String {
    let tail = |path: &Path, n: usize| {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| format!("({e})"));
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    };
    let dir = events.parent().unwrap_or(Path::new("."));
    let mut report = format!(
        "--- result.json:\n{}\n--- the last events:\n{}",
        tail(&dir.join("result.json"), 40),
        tail(events, 15)
    );
    let beside = dir.parent().unwrap_or(Path::new("."));
    for entry in std::fs::read_dir(beside).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "stderr") {
            report.push_str(&format!("\n--- {}:\n{}", path.display(), tail(&path, 40)));
        }
    }
    report
}

/// What is left in the private directories of the runs whose `SNO_HARNESS_STATE_DIR` is
/// `state` (their secrets, disks, ISO and sockets live there, outside `--out`): the paths of
/// everything in them, which a run that ended must have removed.
pub fn private_leftovers(state: &Path) -> Vec<PathBuf> {
    let mut left = Vec::new();
    let Ok(runs) = std::fs::read_dir(state.join("private")) else {
        return left;
    };
    for run in runs.flatten() {
        left.push(run.path());
        if let Ok(files) = std::fs::read_dir(run.path()) {
            left.extend(files.flatten().map(|f| f.path()));
        }
    }
    left
}

/// The QEMU processes of the runs whose `SNO_HARNESS_STATE_DIR` is `state` (their disks and
/// sockets are in its private directories).
pub fn qemu_processes_of_state(state: &Path) -> Vec<String> {
    qemu_processes_for(&state.join("private"))
}

/// The private directory of run `id` under `state` (`ID-` and 16 hex digits), while it exists.
pub fn private_dir_of(state: &Path, id: &str) -> Option<PathBuf> {
    std::fs::read_dir(state.join("private"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix(id)?.strip_prefix('-'))
                .is_some_and(|rest| rest.len() == 16 && rest.bytes().all(|b| b.is_ascii_hexdigit()))
        })
}

/// The QEMU processes of run `id` whose `SNO_HARNESS_STATE_DIR` is `state`.
pub fn qemu_processes_of_run(state: &Path, id: &str) -> Vec<String> {
    private_dir_of(state, id)
        .map(|d| qemu_processes_for(&d))
        .unwrap_or_default()
}

/// A pseudo-terminal: its controller end, and the terminal end a program is given as its
/// standard input (`--pause-on-failure` and `console -i` need one).
pub fn pseudo_terminal() -> (std::os::fd::OwnedFd, std::fs::File) {
    use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
    let controller = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).unwrap();
    grantpt(&controller).unwrap();
    unlockpt(&controller).unwrap();
    let name = ptsname(&controller, Vec::new()).unwrap();
    let terminal = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(name.to_str().unwrap())
        .unwrap();
    (controller, terminal)
}
