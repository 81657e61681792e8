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
