//! The commands that describe the harness itself, through the real binary: `list --json`
//! (parsed), `completions` for each shell, `man` (to stdout and as one page per command), and
//! `--help` wrapped to the terminal's width.

use std::process::Command;

fn harness(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn list_json_names_the_shipped_scenarios_matrices_and_faults() {
    let (code, out, err) = harness(&["list", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let files: Vec<&str> = v["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["file"].as_str())
        .collect();
    assert!(files.contains(&"scenarios/smoke.toml"), "{files:?}");
    assert!(
        files.contains(&"scenarios/faults/gather-hang.toml"),
        "{files:?}"
    );
    let matrices = v["matrices"].as_array().unwrap();
    assert!(matrices
        .iter()
        .any(|m| m["file"] == "scenarios/install-config.toml"
            && m["permutations"].as_u64() > Some(1)));
    let faults: Vec<&str> = v["faults"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["name"].as_str())
        .collect();
    assert!(faults.contains(&"operator-degraded:<name>") && faults.contains(&"journal-cut"));
}

#[test]
fn completions_for_every_shell_and_the_manual_pages() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let (code, out, err) = harness(&["completions", shell]);
        assert_eq!(code, 0, "{shell}: {err}");
        assert!(
            out.contains("sno-harness") && out.contains("gather"),
            "{shell}"
        );
    }
    let (code, _, err) = harness(&["completions", "tcsh"]);
    assert_eq!(code, 2, "an unknown shell is bad input: {err}");
    assert!(err.contains("bash"), "the valid shells are named: {err}");

    let (code, page, err) = harness(&["man"]);
    assert_eq!(code, 0, "{err}");
    assert!(page.contains(".TH sno-harness 1"), "{page}");
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("man1");
    let (code, _, err) = harness(&["man", "--out", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    for page in [
        "sno-harness.1",
        "sno-harness-run.1",
        "sno-harness-matrix.1",
        "sno-harness-list.1",
    ] {
        assert!(dir.join(page).is_file(), "{page} missing");
    }
}

#[test]
fn help_is_wrapped_to_the_terminal_width() {
    let out = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .args(["run", "--help"])
        .env("COLUMNS", "60")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    let longest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    assert!(longest <= 60, "a line of {longest} characters:\n{text}");
}
