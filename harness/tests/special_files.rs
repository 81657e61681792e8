//! Special and huge files given to the real binary: a FIFO, /dev/zero, a 14 MB scenario and a
//! pairwise matrix of two 3000-value axes are each refused promptly with exit code 2 and a
//! message naming the file and why, by `plan`, `matrix`, `perf` and `report`. Every run is
//! killed after a deadline, so a command that blocks on a FIFO fails its test instead of
//! hanging it.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_sno-harness");
const GOOD_BASE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/malformed/bases/good.toml"
);
/// Refusing takes milliseconds; a command still running after this is blocked or reading
/// without end (a debug build on a busy two-core host stays well within it).
const DEADLINE: Duration = Duration::from_secs(20);

struct Refusal {
    code: Option<i32>,
    stderr: String,
    took: Duration,
}

/// Runs the binary in `cwd`; kills it at DEADLINE and fails the test then.
fn run(args: &[&str], cwd: &Path) -> Refusal {
    let stderr_file = cwd.join(".stderr");
    let err = std::fs::File::create(&stderr_file).unwrap();
    let started = Instant::now();
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .env_remove("ARTIFACT_DIR")
        .env("SNO_HARNESS_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err)
        .spawn()
        .unwrap();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?}: still running after {DEADLINE:?}; killed");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Refusal {
        code: status.code(),
        stderr: std::fs::read_to_string(&stderr_file).unwrap(),
        took: started.elapsed(),
    }
}

#[track_caller]
fn assert_refused(args: &[&str], cwd: &Path, says: &[&str]) -> Refusal {
    let r = run(args, cwd);
    assert_eq!(r.code, Some(2), "{args:?}: {}", r.stderr);
    for s in says {
        assert!(r.stderr.contains(s), "{args:?}: no {s:?} in: {}", r.stderr);
    }
    assert!(!r.stderr.contains("panicked"), "{args:?}: {}", r.stderr);
    r
}

fn mkfifo(path: &Path) {
    let c = CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

fn fifo_in(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    mkfifo(&p);
    p
}

#[test]
fn a_fifo_scenario_is_refused_by_plan_and_perf_without_waiting_for_a_writer() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = fifo_in(dir.path(), "scenario.toml");
    let f = fifo.to_str().unwrap();
    let says = [f, "is a FIFO, not a regular file"];
    assert_refused(&["plan", f], dir.path(), &says);
    assert_refused(
        &["perf", "--repeat", "2", "--out", "out", f],
        dir.path(),
        &says,
    );
    assert_refused(&["matrix", "--out", "out", f], dir.path(), &says);
    assert!(!dir.path().join("out").exists(), "nothing is left behind");
}

#[test]
fn dev_zero_is_refused_as_a_scenario_and_as_a_matrix() {
    let dir = tempfile::tempdir().unwrap();
    let says = ["/dev/zero", "is a character device, not a regular file"];
    assert_refused(&["plan", "/dev/zero"], dir.path(), &says);
    assert_refused(&["run", "--out", "out", "/dev/zero"], dir.path(), &says);
    assert_refused(&["matrix", "--out", "out", "/dev/zero"], dir.path(), &says);
    assert!(!dir.path().join("out").exists(), "nothing is left behind");
}

#[test]
fn a_14_mb_scenario_is_refused_with_the_cap_before_it_is_parsed() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.toml");
    // A valid scenario padded with a comment: only its size is wrong.
    let mut text = std::fs::read_to_string(GOOD_BASE).unwrap();
    text.push('#');
    text.push_str(&"x".repeat(14 * 1000 * 1000));
    text.push('\n');
    std::fs::write(&big, text).unwrap();
    let b = big.to_str().unwrap();
    let r = assert_refused(
        &["plan", b],
        dir.path(),
        &[b, "bytes), more than the 1 MiB a scenario may have"],
    );
    // Parsing it took 935 MB and seconds; refusing is a stat.
    assert!(r.took < Duration::from_secs(10), "{:?}", r.took);
    assert_refused(
        &["matrix", "--out", "out", b],
        dir.path(),
        &[b, "more than the 1 MiB a matrix may have"],
    );
}

#[test]
fn a_pairwise_matrix_of_two_3000_value_axes_is_refused_promptly() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(GOOD_BASE, dir.path().join("base.toml")).unwrap();
    let axis = |phase: &str| {
        let values: Vec<String> = (1..=3000).map(|s| format!("\"{s}s\"")).collect();
        format!(
            "[[axis]]\nkey = \"timeouts.{phase}\"\nvalues = [{}]\n",
            values.join(", ")
        )
    };
    let matrix = dir.path().join("m.toml");
    std::fs::write(
        &matrix,
        format!(
            "name = \"huge\"\nbase = \"base.toml\"\nstrategy = \"pairwise\"\n{}{}",
            axis("bootkube"),
            axis("install-to-disk")
        ),
    )
    .unwrap();
    let m = matrix.to_str().unwrap();
    let says = [
        "m.toml:3:",
        "pairwise needs more than 10000 permutations",
        "9000000 pairs of values",
    ];
    let r = assert_refused(&["plan", m], dir.path(), &says);
    // It did not finish in a minute; in a release build it is refused in a fraction of a
    // second, here in a few (debug build, shared host).
    assert!(r.took < Duration::from_secs(10), "{:?}", r.took);
    assert_refused(&["matrix", "--out", "out", m], dir.path(), &says);
    assert!(!dir.path().join("out").exists(), "nothing is left behind");
}

#[test]
fn report_refuses_a_fifo_in_place_of_a_result_or_a_perf_json() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    std::fs::create_dir(&run_dir).unwrap();
    let result = fifo_in(&run_dir, "result.json");
    let r = run_dir.to_str().unwrap();
    assert_refused(
        &["report", r],
        dir.path(),
        &[result.to_str().unwrap(), "is a FIFO, not a regular file"],
    );

    let matrix_dir = dir.path().join("matrix");
    std::fs::create_dir_all(matrix_dir.join("a.virtio")).unwrap();
    let result = fifo_in(&matrix_dir.join("a.virtio"), "result.json");
    assert_refused(
        &["report", matrix_dir.to_str().unwrap()],
        dir.path(),
        &[result.to_str().unwrap(), "is a FIFO, not a regular file"],
    );

    let perf_dir = dir.path().join("perf");
    std::fs::create_dir(&perf_dir).unwrap();
    let perf = fifo_in(&perf_dir, "perf.json");
    let p = perf_dir.to_str().unwrap();
    let says = [perf.to_str().unwrap(), "is a FIFO, not a regular file"];
    assert_refused(&["report", p], dir.path(), &says);
    assert_refused(&["report", p, "--compare", p], dir.path(), &says);
}

#[test]
fn report_refuses_dev_zero_linked_in_place_of_a_perf_json() {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/dev/zero", dir.path().join("perf.json")).unwrap();
    assert_refused(
        &["report", dir.path().to_str().unwrap()],
        dir.path(),
        &["perf.json", "is a character device, not a regular file"],
    );
}
