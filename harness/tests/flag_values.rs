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
