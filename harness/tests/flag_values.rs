//! Flag values a run cannot use are refused before anything exists: exit 2, a message naming
//! the flag and what is valid, and no `--out`. A `--connect` URI of a transport `run` does
//! not take (an `ext` transport runs a command of the URI's choosing) used to be accepted and
//! fail once the run directory existed.

use std::path::Path;
use std::process::Command;

fn repo_file(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

#[test]
fn a_connect_uri_run_cannot_use_is_refused_before_the_run_directory_exists() {
    let tmp = tempfile::tempdir().unwrap();
    let smoke = repo_file("scenarios/smoke.toml");
    let matrix = repo_file("scenarios/disks.toml");
    let planted = tmp.path().join("planted");
    let ext = format!(
        "qemu+ext:///system?command=/usr/bin/touch&{}",
        planted.display()
    );
    let cases: [(&str, &Path, &str, &[&str]); 4] = [
        (
            "run",
            &smoke,
            &ext,
            &["--connect", "\"ext\" transport is not supported"],
        ),
        (
            "run",
            &smoke,
            "not a uri",
            &["--connect", "driver[+transport]://"],
        ),
        ("matrix", &matrix, &ext, &["--connect", "not supported"]),
        (
            "perf",
            &smoke,
            "qemu+tcp://host/system",
            &["--connect", "\"tcp\" transport"],
        ),
    ];
    for (command, file, uri, words) in cases {
        let out = tmp.path().join("out");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sno-harness"));
        cmd.arg(command).arg(file);
        if command == "perf" {
            cmd.args(["--repeat", "1"]);
        }
        let o = cmd
            .args(["--backend", "libvirt", "--connect", uri, "--out"])
            .arg(&out)
            .env("SNO_HARNESS_STATE_DIR", tmp.path().join("state"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{command} {uri}: {stderr}");
        for w in words {
            assert!(stderr.contains(w), "{command} {uri}: no {w:?} in {stderr}");
        }
        assert!(!out.exists(), "{command} {uri} created --out");
        assert!(!planted.exists(), "{command} {uri} ran the ext command");
    }
}

/// The host flags: several `--connect` only for `matrix`, `--connect` only with libvirt, and a
/// hosts file that cannot be used, refused with its line, all before `--out` exists.
#[test]
fn host_flags_a_command_cannot_use_are_refused_before_the_run_directory_exists() {
    let tmp = tempfile::tempdir().unwrap();
    let smoke = repo_file("scenarios/smoke.toml");
    let matrix = repo_file("scenarios/disks.toml");
    let hosts = tmp.path().join("hosts.toml");
    std::fs::write(
        &hosts,
        "[[host]]\nuri = \"qemu+ssh://root@lab/system\"\njobs = 0\n",
    )
    .unwrap();
    let hosts = hosts.to_str().unwrap();
    let (a, b) = ("qemu+ssh://root@a/system", "qemu+ssh://root@b/system");
    let cases: [(&str, &Path, Vec<&str>, &str); 6] = [
        (
            "run",
            &smoke,
            vec!["--backend", "libvirt", "--connect", a, "--connect", b],
            "--connect is given 2 times; only `matrix` spreads its runs over several hosts",
        ),
        (
            "matrix",
            &matrix,
            vec!["--connect", a],
            "--connect names a libvirt host: give --backend libvirt with it",
        ),
        (
            "matrix",
            &matrix,
            vec!["--backend", "libvirt", "--connect", a, "--connect", a],
            "is given twice",
        ),
        (
            "matrix",
            &matrix,
            vec!["--hosts", hosts],
            "hosts.toml:3:8: jobs = 0: from 1 to 256",
        ),
        (
            "matrix",
            &matrix,
            vec!["--hosts", hosts, "--backend", "qemu"],
            "--hosts names libvirt hosts",
        ),
        (
            "matrix",
            &matrix,
            vec!["--hosts", "/nonexistent/hosts.toml"],
            "cannot read the hosts file",
        ),
    ];
    for (command, file, flags, want) in cases {
        let out = tmp.path().join("out");
        let o = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
            .arg(command)
            .arg(file)
            .args(&flags)
            .arg("--out")
            .arg(&out)
            .env("SNO_HARNESS_STATE_DIR", tmp.path().join("state"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{command} {flags:?}: {stderr}");
        assert!(
            stderr.contains(want),
            "{command} {flags:?}: no {want:?} in {stderr}"
        );
        assert!(!out.exists(), "{command} {flags:?} created --out");
    }
}

/// A program a URI must never get run: it leaves `marker` behind.
fn marker_program(dir: &Path) -> (String, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let marker = dir.join("ran");
    let script = dir.join("program");
    std::fs::write(
        &script,
        format!("#!/bin/sh\ntouch '{}'\n", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (script.to_str().unwrap().to_string(), marker)
}

/// The libvirt URI parameters that name a program, reach a shell, or are not the `ssh`
/// transport's (libvirt's remote driver reads them all; it passes any other on to the far
/// daemon), each with a value that would do harm where it can.
fn refused_parameters(program: &str) -> Vec<(&'static str, String)> {
    [
        ("command", program.to_string()),
        ("COMMAND", program.to_string()),
        ("netcat", program.to_string()),
        ("socket", format!("/x%3B{program}")),
        ("name", "qemu:///session".into()),
        ("known_hosts", "/tmp/kh".into()),
        ("known_hosts_verify", "ignore".into()),
        ("sshauth", "password".into()),
        ("pkipath", "/tmp/pki".into()),
        ("tls_priority", "NORMAL".into()),
        ("auth", "sasl".into()),
        ("authfile", "/tmp/auth.conf".into()),
        ("no_sanity", "1".into()),
        ("root", "/tmp/embed".into()),
    ]
    .into()
}

/// The allowed ones, as every refusal names them.
const ACCEPTED_SSH: &str = "keyfile, no_verify, no_tty, mode, proxy";

fn harness_in(tmp: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .args(args)
        .env("SNO_HARNESS_STATE_DIR", tmp.join("state"))
        .env("SNO_HARNESS_PROGRESS", "plain")
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// URIs whose user, host or path would reach the far login shell with a character it reads.
const SHELL_IN_AUTHORITY: [&str; 7] = [
    "qemu+ssh://a%3Bb@h/system",
    "qemu+ssh://h%24x/system",
    "qemu+ssh://h/system%3Btouch",
    "qemu+ssh://h/sys%60id%60tem",
    "qemu+ssh://h/sys'tem",
    "qemu+ssh://u%0A@h/system",
    "qemu+ssh://-oProxyCommand%3Dx/system",
];

#[test]
fn a_connect_uri_parameter_that_names_a_program_or_reaches_a_shell_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (program, marker) = marker_program(tmp.path());
    let smoke = repo_file("scenarios/smoke.toml");
    let smoke = smoke.to_str().unwrap();
    let out = tmp.path().join("out");
    let out_s = out.to_str().unwrap();
    let mut uris: Vec<(String, String)> = refused_parameters(&program)
        .into_iter()
        .map(|(n, v)| (format!("qemu+ssh://h/system?{n}={v}"), n.to_string()))
        .collect();
    // A local URI gets no program either.
    uris.push((
        format!("qemu:///system?command={program}"),
        "command".into(),
    ));
    uris.push((
        format!("qemu+unix:///system?netcat={program}"),
        "netcat".into(),
    ));
    for uri in SHELL_IN_AUTHORITY {
        uris.push((uri.into(), "libvirt URI".into()));
    }
    for (uri, named) in &uris {
        let args = [
            "run",
            smoke,
            "--backend",
            "libvirt",
            "--connect",
            uri,
            "--out",
            out_s,
        ];
        let (code, _, stderr) = harness_in(tmp.path(), &args);
        assert_eq!(code, Some(2), "{uri}: {stderr}");
        assert!(stderr.contains("--connect"), "{uri}: {stderr}");
        assert!(
            stderr.contains(named.as_str()),
            "{uri}: no {named:?} in {stderr}"
        );
        if uri.contains('?') && uri.contains("+ssh") {
            assert!(stderr.contains(ACCEPTED_SSH), "{uri}: {stderr}");
        }
        assert!(!out.exists(), "{uri} created --out");
        assert!(!marker.exists(), "{uri}: libvirt ran the URI's program");
    }
    // `gc --connect` sweeps what it is given: the same refusal, before any connection.
    let uri = format!("qemu+ssh://h/system?command={program}");
    let (code, _, stderr) = harness_in(tmp.path(), &["gc", "--dry-run", "--connect", &uri]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("command"), "{stderr}");
    assert!(!marker.exists(), "gc --dry-run ran the URI's program");
}

#[test]
fn a_hosts_file_uri_parameter_that_names_a_program_is_refused_at_its_line_and_column() {
    let tmp = tempfile::tempdir().unwrap();
    let (program, marker) = marker_program(tmp.path());
    let matrix = repo_file("scenarios/disks.toml");
    let out = tmp.path().join("out");
    let hosts = tmp.path().join("hosts.toml");
    for (name, value) in refused_parameters(&program) {
        std::fs::write(
            &hosts,
            format!(
                "[[host]]\nuri = \"qemu+ssh://a/system\"\n\n[[host]]\njobs = 1\nuri = \"qemu+ssh://b/system?{name}={value}\"\n"
            ),
        )
        .unwrap();
        let args = [
            "matrix",
            matrix.to_str().unwrap(),
            "--hosts",
            hosts.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            // Refused after the hosts: a check that let them through starts no VM.
            "--jobs",
            "0",
        ];
        let (code, _, stderr) = harness_in(tmp.path(), &args);
        assert_eq!(code, Some(2), "{name}: {stderr}");
        assert!(stderr.contains("hosts.toml:6:7:"), "{name}: {stderr}");
        assert!(
            stderr.contains(name) && stderr.contains(ACCEPTED_SSH),
            "{name}: {stderr}"
        );
        assert!(!out.exists() && !marker.exists(), "{name}");
    }
}

#[test]
fn a_registration_whose_uri_names_a_program_is_reported_and_skipped_by_gc() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let (program, marker) = marker_program(tmp.path());
    let registry = tmp.path().join("state/runs");
    std::fs::create_dir_all(&registry).unwrap();
    std::fs::set_permissions(&registry, std::fs::Permissions::from_mode(0o700)).unwrap();
    let run = tmp.path().join("run");
    std::fs::create_dir_all(run.join("disks")).unwrap();
    std::fs::write(run.join("disks/install.qcow2"), "disk").unwrap();
    for (name, value) in refused_parameters(&program) {
        // A harness that is gone (no such pid), its domain on a host the URI names.
        let entry = serde_json::json!({
            "id": "smoke", "pid": u32::MAX - 1, "pid_start": 1, "dir": run,
            "backend": "libvirt", "uri": format!("qemu+ssh://h/system?{name}={value}"),
            "domain": "sno-smoke-1", "keep": false,
        });
        let file = registry.join("1-smoke.json");
        std::fs::write(&file, serde_json::to_vec(&entry).unwrap()).unwrap();
        let (code, stdout, stderr) = harness_in(tmp.path(), &["gc", "--dry-run"]);
        assert!(
            !marker.exists(),
            "{name}: gc --dry-run ran the URI's program"
        );
        assert_eq!(code, Some(4), "{name}: {stdout}{stderr}");
        assert!(
            stderr.contains("1-smoke.json")
                && stderr.contains(name)
                && stderr.contains("not acted on"),
            "{name}: {stderr}"
        );
        assert!(!stdout.contains("gc would"), "{name}: acted on: {stdout}");
        assert!(file.exists() && run.join("disks/install.qcow2").exists());
    }
}

#[test]
fn two_uris_of_one_libvirt_daemon_are_refused_naming_both() {
    let tmp = tempfile::tempdir().unwrap();
    let matrix = repo_file("scenarios/disks.toml");
    let out = tmp.path().join("out");
    let pairs = [
        ("qemu:///system", "qemu+unix:///system"),
        (
            "qemu:///system",
            "qemu+unix:///system?socket=/run/libvirt/libvirt-sock",
        ),
        (
            "qemu:///system",
            "qemu:///system?socket=/var/run/libvirt/virtqemud-sock",
        ),
        (
            "qemu+ssh://root@Lab-1/system",
            "qemu+ssh://root@lab-1:22/system",
        ),
        (
            "qemu+ssh://[::1]/system",
            "qemu+ssh://[0:0:0:0:0:0:0:1]:22/system",
        ),
        ("qemu+ssh://h/system", "qemu+ssh://h/system?keyfile=/k"),
    ];
    for (a, b) in pairs {
        let args = [
            "matrix",
            matrix.to_str().unwrap(),
            "--backend",
            "libvirt",
            "--connect",
            a,
            "--connect",
            b,
            "--out",
            out.to_str().unwrap(),
            // Refused after the hosts: a check that let them through starts no VM.
            "--jobs",
            "0",
        ];
        let (code, _, stderr) = harness_in(tmp.path(), &args);
        assert_eq!(code, Some(2), "{a} {b}: {stderr}");
        assert!(
            stderr.contains(a) && stderr.contains(b) && stderr.contains("same libvirt daemon"),
            "{a} {b}: {stderr}"
        );
        assert!(!out.exists());

        let hosts = tmp.path().join("hosts.toml");
        std::fs::write(
            &hosts,
            format!("[[host]]\nuri = \"{a}\"\n[[host]]\nuri = \"{b}\"\n"),
        )
        .unwrap();
        let args = [
            "matrix",
            matrix.to_str().unwrap(),
            "--hosts",
            hosts.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            // Refused after the hosts: a check that let them through starts no VM.
            "--jobs",
            "0",
        ];
        let (code, _, stderr) = harness_in(tmp.path(), &args);
        assert_eq!(code, Some(2), "{a} {b}: {stderr}");
        assert!(
            stderr.contains("hosts.toml:4:7:")
                && stderr.contains(a)
                && stderr.contains(b)
                && stderr.contains("same libvirt daemon"),
            "{a} {b}: {stderr}"
        );
        assert!(!out.exists());
    }
}

/// `sno-harness <args>` in `tmp` with its state there: exit code and stderr.
fn refused(tmp: &Path, args: &[&str]) -> (Option<i32>, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .args(args)
        .env("SNO_HARNESS_STATE_DIR", tmp.join("state"))
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `--timeout-scale` that is not a positive number is refused as such, in both spellings:
/// `--timeout-scale -1` once read `-1` as an unknown flag.
#[test]
fn a_timeout_scale_that_is_not_a_positive_number_is_refused_as_such() {
    let tmp = tempfile::tempdir().unwrap();
    let smoke = repo_file("scenarios/smoke.toml");
    let out = tmp.path().join("out");
    for value in ["-1", "0", "NaN", "inf", "1e17"] {
        for spelled in [
            vec!["--timeout-scale".to_string(), value.to_string()],
            vec![format!("--timeout-scale={value}")],
        ] {
            let mut args = vec![
                "run",
                smoke.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ];
            args.extend(spelled.iter().map(String::as_str));
            let (code, stderr) = refused(tmp.path(), &args);
            assert_eq!(code, Some(2), "{spelled:?}: {stderr}");
            assert!(
                stderr.contains("--timeout-scale") && stderr.contains("a positive number"),
                "{spelled:?}: {stderr}"
            );
            assert!(!out.exists(), "{spelled:?} created --out");
        }
    }
}

/// `perf --strategy` takes `full` or `pairwise` only, and says so.
#[test]
fn perf_strategy_is_a_choice_of_full_or_pairwise() {
    let tmp = tempfile::tempdir().unwrap();
    let matrix = repo_file("scenarios/disks.toml");
    let out = tmp.path().join("out");
    let (code, stderr) = refused(
        tmp.path(),
        &[
            "perf",
            matrix.to_str().unwrap(),
            "--repeat",
            "1",
            "--strategy",
            "allpairs",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--strategy"), "{stderr}");
    assert!(
        stderr.contains("[possible values: full, pairwise]"),
        "{stderr}"
    );
    assert!(!out.exists());
}

/// `--backend redfish`'s flags: the machine must be named (BMC, SSH, API), its flags are its
/// alone, it runs on no libvirt host, and the addresses must be addresses; all refused before
/// `--out` exists, naming the flag.
#[test]
fn redfish_flags_a_run_cannot_use_are_refused_before_the_run_directory_exists() {
    let tmp = tempfile::tempdir().unwrap();
    let smoke = repo_file("scenarios/smoke.toml");
    let bmc = ["--bmc", "http://127.0.0.1:8000"];
    let machine = ["--ssh", "core@127.0.0.1:2222", "--api", "127.0.0.1:6443"];
    let cases: [(Vec<&str>, &str); 6] = [
        (
            vec!["--backend", "redfish"],
            "give --bmc URL, --ssh USER@HOST[:PORT] and --api HOST:PORT",
        ),
        (
            [&["--backend", "redfish"][..], &bmc].concat(),
            "give --bmc URL",
        ),
        (bmc.to_vec(), "--bmc is --backend redfish's"),
        (
            [&["--backend", "qemu"][..], &machine].concat(),
            "--ssh is --backend redfish's",
        ),
        (
            [
                &["--backend", "redfish", "--connect", "qemu:///system"][..],
                &bmc,
                &machine,
            ]
            .concat(),
            "--backend redfish boots the machine --bmc names, on no libvirt host",
        ),
        (
            [
                &[
                    "--backend",
                    "redfish",
                    "--ssh",
                    "127.0.0.1",
                    "--api",
                    "127.0.0.1:6443",
                ][..],
                &bmc,
            ]
            .concat(),
            "--ssh \"127.0.0.1\": no user",
        ),
    ];
    for (flags, want) in cases {
        let out = tmp.path().join("out");
        let o = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
            .arg("run")
            .arg(&smoke)
            .args(&flags)
            .arg("--out")
            .arg(&out)
            .env("SNO_HARNESS_STATE_DIR", tmp.path().join("state"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flags:?}: {stderr}");
        assert!(stderr.contains(want), "{flags:?}: no {want:?} in {stderr}");
        assert!(!out.exists(), "{flags:?} created --out");
    }
}

/// A matrix on `--backend redfish` would run its permutations at once on the one machine the
/// BMC names: refused unless `--jobs 1`, before `--out` exists.
#[test]
fn a_matrix_on_the_one_machine_of_a_bmc_needs_jobs_1() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .arg("matrix")
        .arg(repo_file("scenarios/disks.toml"))
        .args(["--backend", "redfish", "--bmc", "http://127.0.0.1:8000"])
        .args(["--ssh", "core@127.0.0.1:2222", "--api", "127.0.0.1:6443"])
        .arg("--out")
        .arg(&out)
        .env("SNO_HARNESS_STATE_DIR", tmp.path().join("state"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("only one at a time; give --jobs 1"),
        "{stderr}"
    );
    assert!(!out.exists(), "the refusal created --out");
}
