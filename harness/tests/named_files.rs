//! Files a scenario names, through the real binary: resolved next to the scenario whatever the
//! working directory, and a FIFO refused at once rather than waited on (the hostile-input
//! corpus has the other kinds of file that are not what the scenario claims).

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_sno-harness");
const PROXY_CA: &str = include_str!("../../scenarios/data/proxy-ca.pem");
/// Refusing takes milliseconds; waiting this long means the binary blocked on the file.
const PATIENCE: Duration = Duration::from_secs(30);

fn scenario_with(install: &str) -> String {
    format!(
        "name = \"named\"\nprofile = \"fixture\"\n[[disks]]\nid = \"install\"\nsize = \"8GiB\"\n[install]\n{install}\n"
    )
}

/// `sno-harness ARGS` in `cwd`, killed if it outlives PATIENCE.
fn sno(args: &[&std::ffi::OsStr], cwd: &Path) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .env("SNO_HARNESS_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > PATIENCE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("sno-harness {args:?} still running after {PATIENCE:?}: it blocked");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn files_are_found_next_to_the_scenario_from_any_working_directory() {
    let work = tempfile::tempdir().unwrap();
    let here = work.path().join("scenarios");
    std::fs::create_dir_all(here.join("data")).unwrap();
    std::fs::write(here.join("data/ca.pem"), PROXY_CA).unwrap();
    std::fs::write(
        here.join("data/ps.json"),
        r#"{"auths":{"registry.invalid":{"auth":"dGVzdDp0ZXN0"}}}"#,
    )
    .unwrap();
    let scenario = here.join("s.toml");
    std::fs::write(
        &scenario,
        scenario_with(
            "additional_trust_bundle = \"data/ca.pem\"\npull_secret = { file = \"data/ps.json\" }",
        ),
    )
    .unwrap();
    // Elsewhere: neither file is next to the working directory.
    let elsewhere = work.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let out = sno(&["plan".as_ref(), scenario.as_os_str()], &elsewhere);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The bundle is in the install-config the plan shows; the pull secret stays redacted.
    let first_line = PROXY_CA.lines().nth(1).unwrap();
    assert!(stdout.contains(first_line), "{stdout}");
    assert!(!stdout.contains("dGVzdDp0ZXN0"), "{stdout}");

    // And the same relative names, from the working directory, are not what the scenario
    // means: a scenario written next to them but read from elsewhere still finds its own.
    std::fs::write(
        elsewhere.join("s.toml"),
        scenario_with("additional_trust_bundle = \"data/ca.pem\""),
    )
    .unwrap();
    let out = sno(&["plan".as_ref(), "s.toml".as_ref()], &here);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = sno(&["plan".as_ref(), "../elsewhere/s.toml".as_ref()], &here);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("elsewhere/s.toml:7:")
            && stderr.contains("elsewhere/data/ca.pem: cannot read it"),
        "{stderr}"
    );
}

#[test]
fn a_fifo_is_refused_at_once_by_plan_and_run_and_nothing_is_made() {
    let work = tempfile::tempdir().unwrap();
    let fifo = work.path().join("bundle.pem");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path; mkfifo only reads it.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let secret = work.path().join("ps.fifo");
    let c = std::ffi::CString::new(secret.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let out_dir = work.path().join("out");
    for (install, says) in [
        (
            "additional_trust_bundle = \"bundle.pem\"",
            "install.additional_trust_bundle: ",
        ),
        (
            "pull_secret = { file = \"ps.fifo\" }",
            "install.pull_secret: ",
        ),
    ] {
        let scenario = work.path().join("s.toml");
        std::fs::write(&scenario, scenario_with(install)).unwrap();
        let plan = sno(&["plan".as_ref(), scenario.as_os_str()], work.path());
        let run = sno(
            &[
                "run".as_ref(),
                scenario.as_os_str(),
                "--out".as_ref(),
                out_dir.as_os_str(),
            ],
            work.path(),
        );
        for o in [plan, run] {
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{stderr}");
            assert!(stderr.contains("s.toml:7:"), "{stderr}");
            assert!(stderr.contains(says), "{stderr}");
            assert!(stderr.contains("is a FIFO, not a regular file"), "{stderr}");
        }
        assert!(!out_dir.exists(), "run made {}", out_dir.display());
    }
}
