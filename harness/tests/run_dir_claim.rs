//! A run never destroys another: through the real binary, a run directory that holds a previous
//! run, or that another run holds, is refused with exit 2 before anything in it is touched (the
//! refusal comes before the host is even looked at, so these tests boot nothing); `--replace`
//! removes the previous run once the directory is locked. The runs that get past the claim
//! stop at their assets phase (a missing installer), before any VM.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const BAD_INPUT: i32 = 2;
const HARNESS_ERROR: i32 = 4;

fn repo_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

struct Ran {
    code: i32,
    stderr: String,
    took: Duration,
}

/// Runs `sno-harness ARGS` with its registry in `state`. With `host_ready` false, PATH is
/// empty: a run that got past the refusal would stop at the host check (exit 3), never boot.
fn harness(args: &[&std::ffi::OsStr], state: &Path, host_ready: bool) -> Ran {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sno-harness"));
    cmd.args(args)
        .env("SNO_HARNESS_STATE_DIR", state)
        .env("SNO_HARNESS_PROGRESS", "plain");
    if !host_ready {
        cmd.env("PATH", "");
    }
    let started = Instant::now();
    let out = cmd.output().expect("running sno-harness");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    eprintln!("{stderr}");
    Ran {
        code: out.status.code().expect("an exit code"),
        stderr,
        took: started.elapsed(),
    }
}

fn os(s: &str) -> &std::ffi::OsStr {
    s.as_ref()
}

/// Every path under `dir` with its mode and bytes.
fn tree(dir: &Path) -> Vec<(PathBuf, u32, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let mode = meta.permissions().mode();
            if meta.is_dir() {
                out.push((p.clone(), mode, None));
                stack.push(p);
            } else {
                out.push((p.clone(), mode, Some(std::fs::read(&p).unwrap())));
            }
        }
    }
    out.sort();
    out
}

/// A previous run's directory: its result, timeline and a kept disk.
fn previous_run_in(dir: &Path) {
    std::fs::create_dir_all(dir.join("disks")).unwrap();
    std::fs::write(
        dir.join("result.json"),
        r#"{"id":"smoke","verdict":"pass"}"#,
    )
    .unwrap();
    std::fs::write(dir.join("events.jsonl"), "{\"previous\":true}\n").unwrap();
    std::fs::write(dir.join("disks/x.qcow2"), "the first run's disk").unwrap();
    std::fs::write(dir.join("live.iso"), "the first run's ISO").unwrap();
}

fn registrations(state: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(state.join("runs"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

#[test]
fn a_rerun_into_a_previous_run_is_refused_fast_and_leaves_it_byte_identical() {
    let work = tempfile::tempdir().unwrap();
    let (out, state) = (work.path().join("out"), work.path().join("state"));
    let dir = out.join("smoke");
    previous_run_in(&dir);
    let before = tree(&dir);
    let smoke = repo_file("scenarios/smoke.toml");
    let ran = harness(
        &[os("run"), smoke.as_os_str(), os("--out"), out.as_os_str()],
        &state,
        false,
    );
    assert_eq!(ran.code, BAD_INPUT, "{}", ran.stderr);
    let refusal = format!("{} holds a previous run", dir.display());
    for w in [
        refusal.as_str(),
        "result.json, events.jsonl, disks",
        "--out",
        "--replace",
    ] {
        assert!(ran.stderr.contains(w), "says {w:?}: {}", ran.stderr);
    }
    assert!(ran.took < Duration::from_secs(10), "took {:?}", ran.took);
    assert_eq!(tree(&dir), before, "the previous run is untouched");
    assert_eq!(registrations(&state), Vec::<PathBuf>::new());
}

#[test]
fn a_run_directory_another_run_holds_is_refused_even_with_replace() {
    let work = tempfile::tempdir().unwrap();
    let (out, state) = (work.path().join("out"), work.path().join("state"));
    let dir = out.join("smoke");
    std::fs::create_dir_all(&dir).unwrap();
    // The other run: it holds the lock, as a run does, with its pid in the file.
    let lock = std::fs::File::create(dir.join("run.lock")).unwrap();
    lock.lock().unwrap();
    std::fs::write(dir.join("run.lock"), format!("{}\n", std::process::id())).unwrap();
    std::fs::write(dir.join("events.jsonl"), "{\"live\":true}\n").unwrap();
    let before = tree(&dir);
    let smoke = repo_file("scenarios/smoke.toml");
    for replace in [false, true] {
        let mut args = vec![os("run"), smoke.as_os_str(), os("--out"), out.as_os_str()];
        if replace {
            args.push(os("--replace"));
        }
        let ran = harness(&args, &state, false);
        assert_eq!(ran.code, BAD_INPUT, "{}", ran.stderr);
        let says = format!(
            "{}: another run (pid {}) holds it",
            dir.display(),
            std::process::id()
        );
        assert!(ran.stderr.contains(&says), "{}", ran.stderr);
        assert_eq!(tree(&dir), before, "--replace {replace}");
    }
    drop(lock);
}

/// `scenarios/openshift-example.toml` with a pull secret and an installer that does not exist:
/// its run stops in the assets phase, before any VM.
fn stopping_at_assets(dir: &Path) -> PathBuf {
    let secret = dir.join("pull-secret.json");
    std::fs::write(
        &secret,
        r#"{"auths":{"registry.invalid":{"auth":"dGVzdDp0ZXN0"}}}"#,
    )
    .unwrap();
    let example = std::fs::read_to_string(repo_file("scenarios/openshift-example.toml")).unwrap();
    let (env_secret, default_installer) = (
        r#"pull_secret = { env = "PULL_SECRET" }"#,
        "# installer = \"/usr/local/bin/openshift-install\"",
    );
    assert!(example.contains(env_secret) && example.contains(default_installer));
    let text = example
        .replace(
            env_secret,
            &format!("pull_secret = {{ file = {secret:?} }}"),
        )
        .replace(
            default_installer,
            &format!("installer = {:?} #", failing_installer(dir)),
        )
        .replace("vcpus = 8", "vcpus = 1")
        .replace("memory = \"16GiB\"", "memory = \"1GiB\"");
    let path = dir.join("openshift.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// An installer that answers `version` and fails every other command, as one that cannot
/// reach its release image does.
fn failing_installer(dir: &Path) -> PathBuf {
    let path = dir.join("openshift-install");
    std::fs::write(
        &path,
        "#!/bin/sh\n[ \"$1\" = version ] && { echo 'openshift-install 4.99.0'; exit 0; }\necho 'level=fatal msg=\"a failing stand-in\"' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn scenario_name(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .find_map(|l| {
            l.strip_prefix("name = ")
                .map(|n| n.trim_matches('"').to_string())
        })
        .unwrap()
}

#[test]
fn replace_removes_the_previous_run_and_the_new_one_writes_its_own() {
    let work = tempfile::tempdir().unwrap();
    let (out, state) = (work.path().join("out"), work.path().join("state"));
    let scenario = stopping_at_assets(work.path());
    let dir = out.join(scenario_name(&scenario));
    previous_run_in(&dir);
    let args = [
        os("run"),
        scenario.as_os_str(),
        os("--out"),
        out.as_os_str(),
    ];
    let refused = harness(&args, &state, true);
    assert_eq!(refused.code, BAD_INPUT, "{}", refused.stderr);
    let ran = harness(&[&args[..], &[os("--replace")]].concat(), &state, true);
    assert_eq!(ran.code, HARNESS_ERROR, "{}", ran.stderr);
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("result.json")).unwrap()).unwrap();
    assert_eq!(result["failed_phase"], "assets", "{result}");
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    assert!(!events.contains("previous"), "{events}");
    for gone in ["disks", "live.iso"] {
        assert!(!dir.join(gone).exists(), "{gone} of the first run remains");
    }
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "the run directory is owner-only");
}

#[test]
fn an_out_that_does_not_exist_yet_is_created() {
    let work = tempfile::tempdir().unwrap();
    let (out, state) = (work.path().join("not/yet"), work.path().join("state"));
    let scenario = stopping_at_assets(work.path());
    let ran = harness(
        &[
            os("run"),
            scenario.as_os_str(),
            os("--out"),
            out.as_os_str(),
        ],
        &state,
        true,
    );
    assert_eq!(ran.code, HARNESS_ERROR, "{}", ran.stderr);
    let dir = out.join(scenario_name(&scenario));
    assert!(dir.join("result.json").is_file() && dir.join("run.lock").is_file());
    // A second run is now a rerun.
    let again = harness(
        &[
            os("run"),
            scenario.as_os_str(),
            os("--out"),
            out.as_os_str(),
        ],
        &state,
        true,
    );
    assert_eq!(again.code, BAD_INPUT, "{}", again.stderr);
}

#[test]
fn a_matrix_rerun_is_refused_for_its_reports_and_for_each_permutation() {
    let work = tempfile::tempdir().unwrap();
    let state = work.path().join("state");
    let matrix = repo_file("scenarios/disks.toml");
    let id = "virtio.512.bios.by-id.1.one-path";
    let args = |out: &Path| {
        vec![
            os("matrix").to_os_string(),
            matrix.clone().into_os_string(),
            os("--filter").into(),
            os(id).into(),
            os("--out").into(),
            out.as_os_str().to_os_string(),
        ]
    };
    let call = |out: &Path| {
        let a = args(out);
        let refs: Vec<&std::ffi::OsStr> = a.iter().map(|s| s.as_os_str()).collect();
        harness(&refs, &state, false)
    };

    // The reports of a previous matrix.
    let out = work.path().join("reports");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("summary.json"), "{}").unwrap();
    let before = tree(&out);
    let ran = call(&out);
    assert_eq!(ran.code, BAD_INPUT, "{}", ran.stderr);
    assert!(
        ran.stderr.contains(&format!(
            "{} holds a previous run (summary.json)",
            out.display()
        )),
        "{}",
        ran.stderr
    );
    assert_eq!(tree(&out), before);

    // A permutation's previous run.
    let out = work.path().join("perm");
    previous_run_in(&out.join(id));
    let before = tree(&out);
    let ran = call(&out);
    assert_eq!(ran.code, BAD_INPUT, "{}", ran.stderr);
    assert!(
        ran.stderr
            .contains(&format!("{} holds a previous run", out.join(id).display())),
        "{}",
        ran.stderr
    );
    assert_eq!(tree(&out), before);
}
