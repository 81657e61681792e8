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

const ED25519_KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKS1GOM4iZ3Jw/8/Dy6E7UbT0+kyuGA0TF6+GbLmcpt6 me@laptop";
const P256_KEY: &str = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBGG6yaNWeOx0cnD4TYElzNOEuRksPzHXure5g6VLyb8vxV4owTxsFZX8MdrQF/crVA8C7mqVC5zbmM6pDnLwvus= ci";

/// A scenario whose line 7 is `authorized_keys = [entries]`.
fn scenario_with_keys(entries: &[&str]) -> String {
    let list: Vec<String> = entries.iter().map(|e| format!("{e:?}")).collect();
    format!(
        "name = \"named\"\nprofile = \"fixture\"\n[[disks]]\nid = \"install\"\nsize = \"8GiB\"\n[access]\nauthorized_keys = [{}]\n",
        list.join(", ")
    )
}

#[test]
fn authorized_keys_are_read_next_to_the_scenario_and_shown_with_their_fingerprints() {
    let work = tempfile::tempdir().unwrap();
    let here = work.path().join("scenarios");
    std::fs::create_dir_all(here.join("keys")).unwrap();
    std::fs::write(here.join("keys/ci.pub"), format!("# CI\n{P256_KEY}\n")).unwrap();
    let scenario = here.join("s.toml");
    std::fs::write(&scenario, scenario_with_keys(&[ED25519_KEY, "keys/ci.pub"])).unwrap();
    let out = sno(&["plan".as_ref(), scenario.as_os_str()], work.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(
            "  SHA256:3WR35Z7tU/ELQgfrW/0LuPANOHfoXjdLbNcljWgM/LY ssh-ed25519 me@laptop (from the scenario)"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "  SHA256:vgSokjXusmNKQWTAl/NgZAL7bj2wd5qijlxLTh/oKoU ecdsa-sha2-nistp256 ci (from {}:2)",
            here.join("keys/ci.pub").display()
        )),
        "{stdout}"
    );
    // In install-config's sshKey, after the run's own key, one per line.
    let at = stdout
        .find("<a key generated for the run>")
        .expect("the run's key");
    let rest = &stdout[at..];
    let (ed, p256) = (rest.find(ED25519_KEY), rest.find(P256_KEY));
    assert!(ed.is_some() && p256.is_some() && ed < p256, "{stdout}");
}

#[test]
fn a_private_key_named_as_an_authorized_key_is_refused_at_both_lines_before_anything_is_made() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(
        work.path().join("id_ed25519"),
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----\n",
    )
    .unwrap();
    let fifo = work.path().join("k.pub");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path; mkfifo only reads it.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let out_dir = work.path().join("out");
    for (entry, says) in [
        (
            "id_ed25519",
            "id_ed25519:1: a private key, not a public key line",
        ),
        ("k.pub", "is a FIFO, not a regular file"),
    ] {
        let scenario = work.path().join("s.toml");
        std::fs::write(&scenario, scenario_with_keys(&[ED25519_KEY, entry])).unwrap();
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
            assert!(stderr.contains("access.authorized_keys: "), "{stderr}");
            assert!(stderr.contains(says), "{stderr}");
            assert!(!stderr.contains("b3BlbnNzaC1rZXkt"), "{stderr}");
        }
        assert!(!out_dir.exists(), "run made {}", out_dir.display());
    }
}
