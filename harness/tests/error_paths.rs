//! The error paths of `sno-harness run`, through the real binary: a missing or failing
//! installer, an ISO that is missing or not the one the stream metadata names, a full run
//! directory, no QEMU, a forwarded port taken, an unreadable kubeconfig. Each must end with a
//! message that says what went wrong and what to do, the exit code of the CLI contract, a
//! result.json saying why (none when the host is not ready: that is found before anything is
//! created), and nothing of the run left: no QEMU, no disks, no live ISO copy, no
//! sockets, no registration. None of them boots a VM further than QEMU's start-up.

mod junit_xsd;
mod run_watch;
use run_watch::{private_leftovers, qemu_processes_of_state};

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const HARNESS_ERROR: i32 = 4;

fn repo_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

/// What a run gave: its exit code, its stderr, its run directory and result.json.
struct Ran {
    code: i32,
    stderr: String,
    dir: PathBuf,
    result: serde_json::Value,
}

impl Ran {
    fn reason(&self) -> &str {
        self.result["reason"].as_str().unwrap_or("")
    }

    fn assert_error(&self, code: i32) {
        assert_eq!(
            self.code, code,
            "exit code; stderr:\n{}\nresult: {}",
            self.stderr, self.result
        );
        assert_eq!(
            self.result["verdict"], "error",
            "verdict; result: {}",
            self.result
        );
    }

    /// Every word on stderr (the person's view) and in the result's reason (the record's).
    fn assert_says(&self, words: &[&str]) {
        for w in words {
            assert!(
                self.stderr.contains(w),
                "stderr does not say {w:?}:\n{}",
                self.stderr
            );
            assert!(
                self.reason().contains(w),
                "the reason does not say {w:?}: {}",
                self.reason()
            );
        }
    }
}

/// Runs `sno-harness run SCENARIO --out OUT` with the registry in `state`; `tweak` adds to the
/// environment. Proxies are removed: the tests' servers are on 127.0.0.1.
fn run(scenario: &Path, out: &Path, state: &Path, tweak: impl FnOnce(&mut Command)) -> Ran {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sno-harness"));
    cmd.arg("run")
        .arg(scenario)
        .arg("--out")
        .arg(out)
        .env("SNO_HARNESS_STATE_DIR", state)
        .env("SNO_HARNESS_PROGRESS", "plain");
    for v in [
        "http_proxy",
        "HTTP_PROXY",
        "https_proxy",
        "HTTPS_PROXY",
        "all_proxy",
        "ALL_PROXY",
    ] {
        cmd.env_remove(v);
    }
    tweak(&mut cmd);
    let output = cmd.output().expect("running sno-harness");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    eprintln!("{stderr}");
    let name = std::fs::read_to_string(scenario)
        .unwrap()
        .lines()
        .find_map(|l| {
            l.strip_prefix("name = ")
                .map(|n| n.trim_matches('"').to_string())
        })
        .expect("a scenario name");
    let dir = out.join(name);
    let result = std::fs::read(dir.join("result.json"))
        .map(|b| serde_json::from_slice(&b).expect("result.json is JSON"))
        .unwrap_or_else(|e| panic!("no result.json in {}: {e}\n{stderr}", dir.display()));
    Ran {
        code: output.status.code().expect("an exit code, not a signal"),
        stderr,
        dir,
        result,
    }
}

/// No QEMU, disks, ISO copy, sockets or registration of the run remain.
fn assert_nothing_left(ran: &Ran, state: &Path) {
    assert_eq!(qemu_processes_of_state(state), Vec::<String>::new());
    assert_eq!(
        private_leftovers(state),
        Vec::<PathBuf>::new(),
        "the private directory remains ({})",
        ran.dir.display()
    );
    let registered: Vec<_> = std::fs::read_dir(state.join("runs"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert_eq!(registered, Vec::<PathBuf>::new(), "registrations remain");
}

/// The fixture, built once (cached afterwards); the runs that use it then only read it.
fn fixture_ready() {
    let out = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .args(["fixture", "build"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "fixture build: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn smoke() -> PathBuf {
    repo_file("scenarios/smoke.toml")
}

/// `scenarios/openshift-example.toml` with a pull secret file in `dir` and `installer`, its VM
/// made small enough for the preflight of a CI host (these runs end before any VM).
fn openshift_scenario(dir: &Path, installer: &Path) -> PathBuf {
    let secret = dir.join("pull-secret.json");
    std::fs::write(
        &secret,
        r#"{"auths":{"registry.invalid":{"auth":"dGVzdDp0ZXN0"}}}"#,
    )
    .unwrap();
    let example = std::fs::read_to_string(repo_file("scenarios/openshift-example.toml")).unwrap();
    let env_secret = r#"pull_secret = { env = "PULL_SECRET" }"#;
    let default_installer = "# installer = \"/usr/local/bin/openshift-install\"";
    assert!(
        example.contains(env_secret)
            && example.contains(default_installer)
            && example.contains("vcpus = 8")
            && example.contains("memory = \"16GiB\""),
        "openshift-example.toml changed shape"
    );
    let text = example
        .replace(
            env_secret,
            &format!(
                "pull_secret = {{ file = {:?} }}",
                secret.display().to_string()
            ),
        )
        .replace(
            default_installer,
            &format!("installer = {:?} #", installer.display().to_string()),
        )
        .replace("vcpus = 8", "vcpus = 1")
        .replace("memory = \"16GiB\"", "memory = \"1GiB\"");
    let path = dir.join("openshift.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// An executable stand-in for openshift-install in `dir/bin`: `version` answers, each `--dir
/// DIR create ...` (`create manifests`, then `create single-node-ignition-config`) runs
/// `create` (shell; `$2` is the asset directory), `coreos print-stream-json` prints `stream`. Every call is appended to `dir/bin/calls`.
fn fake_installer(dir: &Path, create: &str, stream: &serde_json::Value) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("stream.json"), stream.to_string()).unwrap();
    let script = format!(
        r#"#!/bin/bash
here=$(dirname "$0")
echo "$*" >> "$here/calls"
case "$1" in
version) echo "openshift-install 4.99.0 (a test stand-in)" ;;
--dir) {create} ;;
coreos) cat "$here/stream.json" ;;
*) echo "level=fatal msg=\"unknown command $1\"" >&2; exit 1 ;;
esac
"#
    );
    let path = bin.join("openshift-install");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// An installer that fails after it wrote secrets and printed them: the install-config it was
/// given (with the pull secret), a private key, and a kubeadmin password in `auth/`. Nothing
/// of it may reach `--out`: the installer's directory stays private, its log is published
/// redacted, and the run's own search of its directory finds nothing.
#[test]
fn an_installer_failure_publishes_nothing_secret() {
    let work = tempfile::tempdir().unwrap();
    let (out, state) = (work.path().join("out"), work.path().join("state"));
    let canary = "CANARY-INSTALLER-FAILURE-9d41c2";
    let create = format!(
        r#"mkdir -p "$2/auth" && echo 'Kq7Vw-canary-admin-pw-4411' > "$2/auth/kubeadmin-password" && cat "$2/install-config.yaml" >&2 && printf -- '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA{canary}\n-----END RSA PRIVATE KEY-----\n' >&2 && echo 'level=fatal msg="failed to fetch Master Ignition Config"' >&2 && exit 1"#
    );
    let installer = fake_installer(work.path(), &create, &stream_json("http://x/", "00"));
    let scenario = openshift_scenario(work.path(), &installer);
    let pull_secret = format!(r#"{{"auths":{{"registry.invalid":{{"auth":"{canary}-auth"}}}}}}"#);
    std::fs::write(work.path().join("pull-secret.json"), &pull_secret).unwrap();
    let ran = run(&scenario, &out, &state, |_| {});
    ran.assert_error(HARNESS_ERROR);
    let log = std::fs::read_to_string(ran.dir.join("assets/installer.log")).unwrap();
    assert!(
        log.contains("<redacted: a private key>") && log.contains("level=fatal"),
        "the log is published, redacted: {log}"
    );
    assert!(ran
        .reason()
        .contains(&ran.dir.join("assets/installer.log").display().to_string()));
    let mut secrets = sno_harness::secrets::Secrets::default();
    secrets.add_pull_secret(&pull_secret);
    secrets.add("the canary", canary);
    secrets.add("the kubeadmin password", "Kq7Vw-canary-admin-pw-4411");
    let leaks = secrets.scan(&out);
    assert!(leaks.is_empty(), "{leaks:?}");
    assert!(!ran.stderr.contains(canary), "{}", ran.stderr);
    assert!(
        !std::fs::read_dir(&ran.dir)
            .unwrap()
            .flatten()
            .any(|e| e.file_name() == "live.iso"),
        "nothing of the VM's under --out"
    );
    assert_nothing_left(&ran, &state);
}

/// What a successful `create single-node-ignition-config` leaves.
const CREATE_OK: &str = r#"mkdir -p "$2/auth" && echo '{"ignition":{"version":"3.2.0"}}' > "$2/bootstrap-in-place-for-live-iso.ign" && echo 'apiVersion: v1' > "$2/auth/kubeconfig""#;

fn stream_json(location: &str, sha256: &str) -> serde_json::Value {
    serde_json::json!({
        "stream": "test",
        "architectures": {"x86_64": {"artifacts": {"metal": {"formats": {"iso": {"disk": {
            "location": location,
            "sha256": sha256,
        }}}}}}}
    })
}

/// An HTTP server on 127.0.0.1 that answers every request with 200 and 64 KiB that are not
/// the ISO anyone expects, and counts the requests.
struct IsoServer {
    url: String,
    requests: Arc<AtomicUsize>,
}

impl IsoServer {
    fn start() -> IsoServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/rhcos-live.iso", listener.local_addr().unwrap());
        let requests = Arc::new(AtomicUsize::new(0));
        let count = requests.clone();
        std::thread::spawn(move || {
            for mut s in listener.incoming().flatten() {
                let mut head = Vec::new();
                let mut b = [0u8];
                while !head.ends_with(b"\r\n\r\n") && matches!(s.read(&mut b), Ok(1)) {
                    head.push(b[0]);
                }
                count.fetch_add(1, Ordering::SeqCst);
                let body = vec![0x5au8; 64 << 10];
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                )
                .and_then(|()| s.write_all(&body));
            }
        });
        IsoServer { url, requests }
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

/// Runs `scenario` and expects the preflight to refuse it: exit 3, no `out`, no registration.
/// Returns what the harness said.
fn refused_by_the_preflight(scenario: &Path, out: &Path, state: &Path) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .arg("run")
        .arg(scenario)
        .arg("--out")
        .arg(out)
        .env("SNO_HARNESS_STATE_DIR", state)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(!out.exists(), "the run created {}", out.display());
    assert!(!state.join("runs").exists(), "a run was registered");
    stderr
}

/// Case 1a: the installer named by the scenario does not exist: the preflight refuses the
/// run before anything exists (exit 3), saying what to do.
#[test]
fn a_missing_installer_is_refused_before_anything_and_says_where_to_get_one() {
    let work = tempfile::tempdir().unwrap();
    let (out, state) = (work.path().join("out"), work.path().join("state"));
    let scenario = openshift_scenario(work.path(), Path::new("/nonexistent/openshift-install"));
    let stderr = refused_by_the_preflight(&scenario, &out, &state);
    for said in [
        "the host is not ready",
        "the installer /nonexistent/openshift-install: No such file or directory",
        "sno-harness doctor SCENARIO",
    ] {
        assert!(stderr.contains(said), "{said:?} not in {stderr}");
    }
}

/// The installer exists but cannot be run: refused the same way, saying how to fix it.
#[test]
fn an_installer_that_is_not_executable_is_refused_saying_chmod() {
    let work = tempfile::tempdir().unwrap();
    let (out, state) = (work.path().join("out"), work.path().join("state"));
    let installer = fake_installer(work.path(), CREATE_OK, &stream_json("http://x/", "00"));
    std::fs::set_permissions(&installer, std::fs::Permissions::from_mode(0o644)).unwrap();
    let scenario = openshift_scenario(work.path(), &installer);
    let stderr = refused_by_the_preflight(&scenario, &out, &state);
    let said = format!("not executable (chmod +x {})", installer.display());
    assert!(stderr.contains(&said), "{said:?} not in {stderr}");
    assert!(
        !work.path().join("bin/calls").exists(),
        "the installer was called"
    );
}

/// Case 1b: the installer exits 1 with a fatal line; the run stops there, before the stream
/// metadata is asked for and so before any download.
#[test]
fn a_failing_installer_is_quoted_and_nothing_is_downloaded() {
    let work = tempfile::tempdir().unwrap();
    let (out, state, cache) = (
        work.path().join("out"),
        work.path().join("state"),
        work.path().join("cache"),
    );
    let server = IsoServer::start();
    let fatal = "failed to fetch Single Node Bootstrap In Place Ignition Config: failed to fetch dependency of \\\"Release Image\\\": unable to pull quay.invalid/ocp-release:4.99: connection refused";
    let create = format!(
        r#"echo 'level=info msg="Consuming Install Config from target directory"'; echo 'level=fatal msg="{fatal}"' >&2; exit 1"#
    );
    let installer = fake_installer(
        work.path(),
        &create,
        &stream_json(&server.url, &"ab".repeat(32)),
    );
    let scenario = openshift_scenario(work.path(), &installer);
    let ran = run(&scenario, &out, &state, |c| {
        c.env("XDG_CACHE_HOME", &cache);
    });
    ran.assert_error(HARNESS_ERROR);
    ran.assert_says(&[
        // The first of the installer's steps: `create manifests` (the harness adds its DNS
        // MachineConfig there), then `create single-node-ignition-config`.
        "create manifests` failed (exit 1)",
        // The fatal line's message, unquoted, not the info line before it.
        "unable to pull quay.invalid/ocp-release:4.99: connection refused",
        "Release Image",
        "assets/installer.log",
    ]);
    assert!(!ran.reason().contains("level="), "{}", ran.reason());
    let log = std::fs::read_to_string(ran.dir.join("assets/installer.log")).unwrap();
    assert!(
        log.contains("level=fatal"),
        "the log keeps the output: {log}"
    );
    let calls = std::fs::read_to_string(work.path().join("bin/calls")).unwrap();
    assert!(
        !calls.contains("print-stream-json"),
        "stream metadata asked for: {calls}"
    );
    // Redacted of the pull secret, the run's copy still carries what the scenario pasted in.
    let mode = std::fs::metadata(ran.dir.join("install-config.yaml"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(
        mode & 0o777,
        0o600,
        "install-config.yaml is {:o}",
        mode & 0o777
    );
    assert_eq!(server.requests(), 0, "a download was attempted");
    assert!(!cache.join("sno-harness/iso").exists());
    assert_nothing_left(&ran, &state);
}

/// Issue 18: a run that fails before any VM leaves `harness.log` (the debug lines whatever the
/// terminal's level, and every line printed, the error with its reason too) and a junit.xml
/// that validates against the Jenkins JUnit schema with the reason on the failed case; stderr,
/// a pipe here, gets no colour codes even for the debug lines `-v` shows.
#[test]
fn a_failed_run_leaves_its_log_and_a_junit_that_validates() {
    let work = tempfile::tempdir().unwrap();
    let (state, cache) = (work.path().join("state"), work.path().join("cache"));
    let create = r#"echo 'level=fatal msg="failed to fetch the release image: connection refused"' >&2; exit 1"#;
    let installer = fake_installer(
        work.path(),
        create,
        &stream_json("http://127.0.0.1:9/rhcos-live.iso", &"ab".repeat(32)),
    );
    let scenario = openshift_scenario(work.path(), &installer);
    let quiet = run(&scenario, &work.path().join("quiet"), &state, |c| {
        c.env("XDG_CACHE_HOME", &cache)
            .env_remove("SNO_HARNESS_LOG");
    });
    let verbose = run(&scenario, &work.path().join("verbose"), &state, |c| {
        c.env("XDG_CACHE_HOME", &cache)
            .env_remove("SNO_HARNESS_LOG")
            .env_remove("NO_COLOR")
            .args(["-v", "--junit-flavour", "openshift"]);
    });
    for ran in [&quiet, &verbose] {
        ran.assert_error(HARNESS_ERROR);
        let log = std::fs::read_to_string(ran.dir.join("harness.log")).unwrap();
        for debug in [
            "run starting",
            "running the installer",
            "the installer exited",
        ] {
            assert!(
                log.lines()
                    .any(|l| l.contains(" DEBUG ") && l.contains(debug)),
                "no debug line {debug:?} in harness.log:\n{log}"
            );
        }
        let reason_line = format!(
            " PRINT stderr:   reason: {}",
            ran.reason().lines().next().unwrap()
        );
        assert!(log.contains(&reason_line), "{reason_line:?} not in:\n{log}");
        assert!(log.contains(" PRINT stderr: sno-harness: "), "{log}");
        assert!(
            !log.contains('\u{1b}'),
            "colour codes in harness.log:\n{log}"
        );
        assert!(!ran.stderr.contains('\u{1b}'), "colour codes on stderr");
        assert_nothing_left(ran, &state);
    }
    assert!(!quiet.stderr.contains("running the installer"));
    assert!(
        verbose.stderr.contains("running the installer"),
        "{}",
        verbose.stderr
    );

    let harness = std::fs::read_to_string(quiet.dir.join("junit.xml")).unwrap();
    junit_xsd::assert_valid(&harness);
    assert_eq!(
        junit_xsd::non_successes(&harness),
        [(
            "assets".to_string(),
            "error".to_string(),
            quiet.reason().to_string()
        )]
    );
    let openshift = std::fs::read_to_string(verbose.dir.join("junit.xml")).unwrap();
    junit_xsd::assert_valid(&openshift);
    let error = |case: &str| {
        (
            case.to_string(),
            "error".to_string(),
            verbose.reason().to_string(),
        )
    };
    assert_eq!(
        junit_xsd::non_successes(&openshift),
        [
            error("install should succeed: configuration"),
            error("install should succeed: overall"),
        ]
    );
    // Named relative to the JUnit file (it sits beside result.json), which outlives the
    // upload; the runner's absolute path would not.
    assert!(openshift.contains("  result: result.json\n"), "{openshift}");
    assert!(
        openshift.contains("[[ATTACHMENT|result.json]]"),
        "{openshift}"
    );
}

/// Case 2a: the stream metadata names an ISO over http whose digest is not the one it gives:
/// the run stops after the download, and neither the cache nor the run keeps the bytes.
#[test]
fn an_iso_with_the_wrong_sha256_is_refused_and_not_kept() {
    let work = tempfile::tempdir().unwrap();
    let (out, state, cache) = (
        work.path().join("out"),
        work.path().join("state"),
        work.path().join("cache"),
    );
    let server = IsoServer::start();
    let expected = "ab".repeat(32);
    let installer = fake_installer(work.path(), CREATE_OK, &stream_json(&server.url, &expected));
    let scenario = openshift_scenario(work.path(), &installer);
    let ran = run(&scenario, &out, &state, |c| {
        c.env("XDG_CACHE_HOME", &cache);
    });
    ran.assert_error(HARNESS_ERROR);
    ran.assert_says(&[
        &format!("the ISO at {} has sha256", server.url),
        &format!("but the installer's stream metadata says {expected}"),
        "replace it with the one the installer names",
    ]);
    assert_eq!(server.requests(), 1);
    let iso_cache = cache.join("sno-harness/iso");
    let kept: Vec<_> = std::fs::read_dir(&iso_cache)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".lock"))
        .collect();
    assert_eq!(
        kept,
        Vec::<String>::new(),
        "left in {}",
        iso_cache.display()
    );
    assert_nothing_left(&ran, &state);
}

/// Case 2b: the stream metadata names a local ISO that is not there.
#[test]
fn a_missing_iso_names_its_location() {
    let work = tempfile::tempdir().unwrap();
    let (out, state, cache) = (
        work.path().join("out"),
        work.path().join("state"),
        work.path().join("cache"),
    );
    let location = format!("file://{}/rhcos-live.iso", work.path().display());
    let installer = fake_installer(
        work.path(),
        CREATE_OK,
        &stream_json(&location, &"ab".repeat(32)),
    );
    let scenario = openshift_scenario(work.path(), &installer);
    let ran = run(&scenario, &out, &state, |c| {
        c.env("XDG_CACHE_HOME", &cache);
    });
    ran.assert_error(HARNESS_ERROR);
    ran.assert_says(&[
        &format!("the ISO at {location} is missing"),
        "No such file or directory",
        "put the ISO in place",
    ]);
    assert_nothing_left(&ran, &state);
}

/// A tmpfs mounted on a directory for the test's life, unmounted even when it panics.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(dir).unwrap();
        let st = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status()
            .unwrap();
        assert!(
            st.success(),
            "mounting a tmpfs on {} (needs root)",
            dir.display()
        );
        Tmpfs(dir.to_path_buf())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn bytes_under(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            let m = e.metadata().unwrap();
            if m.is_dir() {
                bytes_under(&e.path())
            } else {
                m.len()
            }
        })
        .sum()
}

/// Case 3: the run's private directory (where the live ISO is copied) fills up.
#[test]
fn a_full_private_directory_is_a_harness_error_naming_it() {
    fixture_ready();
    let work = tempfile::tempdir().unwrap();
    let state = work.path().join("state");
    let out = work.path().join("out");
    // The live ISO's copy goes into the run's private directory, under the state's.
    let private_root = state.join("private");
    std::fs::create_dir_all(&private_root).unwrap();
    let _tmpfs = Tmpfs::mount(&private_root, "2m");
    let ran = run(&smoke(), &out, &state, |_| {});
    ran.assert_error(HARNESS_ERROR);
    let private = ran.result["private"]["dir"].as_str().unwrap().to_string();
    ran.assert_says(&[
        "No space left on device",
        &format!("goes into the run's private directory {private}"),
        "set SNO_HARNESS_PRIVATE_DIR to a directory on a larger filesystem",
    ]);
    // coreos-installer's own message, not the last line of its backtrace.
    assert!(!ran.reason().contains("_start"), "{}", ran.reason());
    assert_eq!(ran.result["failed_phase"], "assets");
    // Not a byte of the ISO copy stays (a partial one would have filled the 2 MiB).
    let used = bytes_under(&private_root);
    assert!(
        used < 512 << 10,
        "{used} bytes remain under {}",
        private_root.display()
    );
    assert_nothing_left(&ran, &state);
}

/// Case 4: no QEMU on PATH, everything else the run executes there (coreos-installer,
/// qemu-img; the fixture's installer is named by its path). The host is not ready: exit 3
/// before anything is created, saying what to install.
#[test]
fn a_missing_qemu_says_how_to_install_it() {
    fixture_ready();
    let work = tempfile::tempdir().unwrap();
    let (out, state) = (work.path().join("out"), work.path().join("state"));
    let bin = work.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    for tool in ["coreos-installer", "qemu-img"] {
        let found = std::env::split_paths(&std::env::var_os("PATH").unwrap())
            .map(|d| d.join(tool))
            .find(|p| p.is_file())
            .unwrap_or_else(|| panic!("{tool} is not on PATH"));
        std::os::unix::fs::symlink(found, bin.join(tool)).unwrap();
    }
    for args in [&["run"][..], &["matrix"][..]] {
        let file = if args[0] == "run" {
            smoke()
        } else {
            repo_file("scenarios/disks.toml")
        };
        let output = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
            .args(args)
            .arg(&file)
            .arg("--out")
            .arg(&out)
            .env("SNO_HARNESS_STATE_DIR", &state)
            .env("PATH", &bin)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(3), "{args:?}: {stderr}");
        for said in [
            "the host is not ready",
            "qemu-system-x86_64 is not on PATH",
            "apt-get install qemu-system-x86",
            "sno-harness doctor",
        ] {
            assert!(stderr.contains(said), "{args:?}: {said:?} not in {stderr}");
        }
        assert!(!out.exists(), "{args:?}: the run created {}", out.display());
        assert!(!state.join("runs").exists(), "{args:?}: registered a run");
    }
}

/// A `qemu-system-x86_64` in front of the real one, in `work/shim`, that passes every
/// argument `$a` through `rewrite` (bash, run once per argument) first; returns the PATH that
/// finds it first.
fn qemu_wrapper(work: &Path, rewrite: &str) -> std::ffi::OsString {
    let qemu = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join("qemu-system-x86_64"))
        .find(|p| p.is_file())
        .expect("qemu-system-x86_64 on PATH");
    let shim = work.join("shim");
    std::fs::create_dir(&shim).unwrap();
    let wrapper = shim.join("qemu-system-x86_64");
    let script = format!(
        "#!/bin/bash\nargs=()\nfor a in \"$@\"; do\n  {rewrite}\n  args+=(\"$a\")\ndone\nexec {} \"${{args[@]}}\"\n",
        qemu.display()
    );
    std::fs::write(&wrapper, script).unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::env::join_paths(
        std::iter::once(shim).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap()
}

/// Case 5: the host port the SSH forward needs is taken when QEMU binds it. Another process
/// taking it between the harness's choice and QEMU's start is what happens for real; here a
/// wrapper in front of QEMU points the forward at a port this test holds, which is the same
/// to QEMU and certain to collide.
#[test]
fn a_taken_forward_port_is_named_and_qemu_does_not_stay() {
    fixture_ready();
    let work = tempfile::tempdir().unwrap();
    let (out, state) = (work.path().join("out"), work.path().join("state"));
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let path = qemu_wrapper(
        work.path(),
        &format!(
            r#"if [[ $a =~ ^(.*hostfwd=tcp:127\.0\.0\.1:)[0-9]+(-:22.*)$ ]]; then
    a="${{BASH_REMATCH[1]}}{port}${{BASH_REMATCH[2]}}"
  fi"#
        ),
    );
    let ran = run(&smoke(), &out, &state, |c| {
        c.env("PATH", path);
    });
    ran.assert_error(HARNESS_ERROR);
    ran.assert_says(&[
        "QEMU exited during start-up",
        &format!("Could not set up host forwarding rule 'tcp:127.0.0.1:{port}-:22'"),
        &format!("host port {port} is taken by another process"),
        "run again",
    ]);
    // Caught as QEMU's exit, not 30 s later as a QMP socket that never answered.
    assert!(!ran.reason().contains("QMP"), "{}", ran.reason());
    assert!(!ran.reason().contains("info:"), "{}", ran.reason());
    drop(taken);
    assert_nothing_left(&ran, &state);
}

/// Case 6: the admin kubeconfig cannot be read. At run level this needs a VM booted to the
/// api-ready phase; the API client is where the error is made, so it is checked there.
#[test]
fn an_unreadable_kubeconfig_is_a_kubeconfig_error_naming_the_file() {
    use sno_harness::health::{ApiEndpoint, ClusterApi, HealthError};
    let work = tempfile::tempdir().unwrap();
    let garbage = work.path().join("garbage");
    std::fs::write(&garbage, b"\x00\x01 this: [is not: a kubeconfig").unwrap();
    let empty_map = work.path().join("empty");
    std::fs::write(&empty_map, b"{}\n").unwrap();
    let cases = [
        (work.path().join("missing"), "No such file"),
        (garbage, ""),
        // Readable YAML without a cluster: the client cannot be configured from it.
        (empty_map, ""),
        // A directory where the file should be.
        (work.path().to_path_buf(), ""),
    ];
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for (path, words) in cases {
        let ep = ApiEndpoint {
            kubeconfig: path.clone(),
            server: Some("https://127.0.0.1:1".into()),
        };
        let e = match rt.block_on(ClusterApi::connect(&ep)) {
            Ok(_) => panic!("{} was accepted as a kubeconfig", path.display()),
            Err(e) => e,
        };
        let text = e.to_string();
        let HealthError::Kubeconfig {
            path: named,
            message,
        } = e
        else {
            panic!("{}: not a kubeconfig error: {text}", path.display());
        };
        assert_eq!(named, path.display().to_string());
        assert!(!message.is_empty(), "{text}");
        assert!(
            text.starts_with(&format!("reading the kubeconfig {}: ", path.display())),
            "{text}"
        );
        assert!(text.contains(words), "{text}");
        eprintln!("{text}");
    }
}

/// Case 7: `[timeouts] assets` holds for every helper of the phase: an installer that hangs in
/// `version`, in `create`, or in `coreos print-stream-json`, and a download that never ends,
/// each ends the phase at its deadline as a timeout (verdict fail: the installer is the system
/// under test) naming what was still running, and no process of the hung helper remains.
#[test]
fn a_hung_assets_helper_is_stopped_at_the_phase_deadline() {
    let stall = TrickleServer::start();
    let hang = "sleep 3007";
    let cases: [(&str, String, String, serde_json::Value); 4] = [
        (
            "version",
            hang.into(),
            CREATE_OK.into(),
            stream_json(&stall.url, &"ab".repeat(32)),
        ),
        (
            "--dir",
            "true".into(),
            hang.into(),
            stream_json(&stall.url, &"ab".repeat(32)),
        ),
        (
            "coreos",
            "true".into(),
            CREATE_OK.into(),
            serde_json::json!("hang"),
        ),
        (
            "download",
            "true".into(),
            CREATE_OK.into(),
            stream_json(&stall.url, &"ab".repeat(32)),
        ),
    ];
    for (what, version, create, stream) in cases {
        let work = tempfile::tempdir().unwrap();
        let (out, state, cache) = (
            work.path().join("out"),
            work.path().join("state"),
            work.path().join("cache"),
        );
        let installer = fake_installer(work.path(), &create, &stream);
        let script = std::fs::read_to_string(&installer).unwrap();
        let script = script
            .replace(
                "version) echo \"openshift-install 4.99.0 (a test stand-in)\" ;;",
                &format!("version) {version} ;;"),
            )
            .replace(
                "coreos) cat \"$here/stream.json\" ;;",
                "coreos) grep -q hang \"$here/stream.json\" && sleep 3007; cat \"$here/stream.json\" ;;",
            );
        std::fs::write(&installer, script).unwrap();
        let scenario = openshift_scenario(work.path(), &installer);
        let mut text = std::fs::read_to_string(&scenario).unwrap();
        text.push_str("\n[timeouts]\nassets = \"2s\"\n");
        std::fs::write(&scenario, text).unwrap();
        let start = std::time::Instant::now();
        let ran = run(&scenario, &out, &state, |c| {
            c.env("XDG_CACHE_HOME", &cache);
        });
        let took = start.elapsed();
        assert_eq!(ran.code, 1, "{what}: exit code; stderr:\n{}", ran.stderr);
        assert_eq!(ran.result["verdict"], "fail", "{what}: {}", ran.result);
        assert_eq!(ran.result["failed_phase"], "assets", "{what}");
        let assets = ran.result["phases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "assets")
            .unwrap();
        assert_eq!(assets["status"], "timeout", "{what}: {assets}");
        assert!(
            ran.reason().contains("assets did not finish within "),
            "{what}: {}",
            ran.reason()
        );
        assert!(
            ran.reason().contains("was still running"),
            "{what}: {}",
            ran.reason()
        );
        // 2 s (8 s under TCG), the helper's grace to stop and the run's own start and end.
        assert!(
            took < std::time::Duration::from_secs(20),
            "{what}: {took:?}"
        );
        assert!(
            !processes_named("sleep 3007"),
            "{what}: the hung helper's sleep survived"
        );
        assert_nothing_left(&ran, &state);
    }
}

/// Whether a process whose command line is `cmdline` (words joined by spaces) exists.
fn processes_named(cmdline: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline")).is_ok_and(|c| {
            let words: Vec<_> = c.split(|b| *b == 0).filter(|w| !w.is_empty()).collect();
            words.join(&b' ') == cmdline.as_bytes()
        })
    })
}

/// An HTTP server on 127.0.0.1 that answers with the headers of a large body and then a byte
/// a second: a mirror too slow to ever finish.
struct TrickleServer {
    url: String,
}

impl TrickleServer {
    fn start() -> TrickleServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/rhcos-live.iso", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            for mut s in listener.incoming().flatten() {
                std::thread::spawn(move || {
                    let _ = write!(
                        s,
                        "HTTP/1.1 200 OK\r\nContent-Length: 1073741824\r\nConnection: close\r\n\r\n"
                    );
                    while s.write_all(b"x").is_ok() {
                        std::thread::sleep(std::time::Duration::from_secs(1));
                    }
                });
            }
        });
        TrickleServer { url }
    }
}

/// Case 7: the QMP connection is lost while QEMU runs on. The wrapper in front of QEMU moves
/// QMP's socket aside (`qmp.sock.real`); this test stands at `qmp.sock`, passes the harness's
/// connection through to QEMU, and cuts it 15 s in, with QEMU and its guest untouched. Without
/// QMP the harness sees no reset, panic or block statistics: the run must end as `error`
/// naming the lost connection (before, it ran on blind, to a phase timeout and a `fail`), and
/// leave nothing behind.
#[test]
fn a_lost_qmp_connection_is_an_error_naming_it_and_leaves_nothing() {
    use std::os::unix::net::{UnixListener, UnixStream};
    fixture_ready();
    let work = tempfile::tempdir().unwrap();
    let (out, state) = (work.path().join("out"), work.path().join("state"));
    let path = qemu_wrapper(
        work.path(),
        r#"if [[ $a =~ ^(socket,id=qmp0,path=)([^,]+)(,.*)$ ]]; then
    a="${BASH_REMATCH[1]}${BASH_REMATCH[2]}.real${BASH_REMATCH[3]}"
  fi"#,
    );
    // QEMU's sockets are in the run's private directory, the one directory under the state's.
    let private = state.join("private");
    let cut = std::thread::spawn(move || -> Result<(), String> {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(120);
        let real = loop {
            let found = std::fs::read_dir(&private)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path().join("qmp.sock.real"))
                .find(|p| p.exists());
            if let Some(real) = found {
                break real;
            }
            if std::time::Instant::now() > until {
                return Err("QEMU made no QMP socket".into());
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let listener =
            UnixListener::bind(real.with_file_name("qmp.sock")).map_err(|e| e.to_string())?;
        let (harness, _) = listener.accept().map_err(|e| e.to_string())?;
        let qemu = UnixStream::connect(&real).map_err(|e| e.to_string())?;
        let pass = |mut from: UnixStream, mut to: UnixStream| {
            std::thread::spawn(move || std::io::copy(&mut from, &mut to))
        };
        pass(harness.try_clone().unwrap(), qemu.try_clone().unwrap());
        pass(qemu.try_clone().unwrap(), harness.try_clone().unwrap());
        std::thread::sleep(std::time::Duration::from_secs(15));
        let _ = harness.shutdown(std::net::Shutdown::Both);
        let _ = qemu.shutdown(std::net::Shutdown::Both);
        Ok(())
    });
    let ran = run(&smoke(), &out, &state, |c| {
        c.env("PATH", path);
    });
    cut.join().unwrap().unwrap();
    ran.assert_error(HARNESS_ERROR);
    ran.assert_says(&["lost the QMP connection while the VM runs"]);
    assert!(
        ran.reason().contains("can no longer be seen"),
        "{}",
        ran.reason()
    );
    assert_nothing_left(&ran, &state);
}
