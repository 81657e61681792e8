//! The commands that describe the harness itself, through the real binary: `list --json`
//! (parsed), `completions` for each shell, `man` (to stdout and as one page per command), and
//! `--help` wrapped to the terminal's width; and docs/real-openshift.md's examples, planned.

use std::process::Command;

mod planted;

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
    // Again, with a link planted where a page goes: replaced, not written through.
    let victim = planted::Victim::new(d.path());
    let page = dir.join("sno-harness-run.1");
    std::fs::remove_file(&page).unwrap();
    victim.link_at(&page);
    let (code, _, err) = harness(&["man", "--out", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    victim.assert_untouched();
    let text = std::fs::read_to_string(&page).unwrap();
    assert!(text.contains(".TH sno-harness-run 1"), "{text}");
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

/// docs/real-openshift.md's two examples are scenarios `plan` accepts as they are (with a pull
/// secret in the environment, as the page says), each on the backend the page gives it.
#[test]
fn the_real_openshift_examples_plan() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let page = std::fs::read_to_string(root.join("docs/real-openshift.md")).unwrap();
    for (file, backend) in [
        ("scenarios/openshift-example.toml", "qemu"),
        ("scenarios/openshift-example-nat.toml", "libvirt"),
    ] {
        assert!(page.contains(file), "the page does not name {file}");
        let out = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
            .args([
                "plan",
                root.join(file).to_str().unwrap(),
                "--backend",
                backend,
            ])
            .env(
                "PULL_SECRET",
                r#"{"auths":{"registry.example":{"auth":"dXNlcjpwYXNz"}}}"#,
            )
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{file}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("profile openshift"), "{file}: {text}");
        if backend == "libvirt" {
            assert!(
                text.contains("libvirt NAT network for the cluster"),
                "{file}: {text}"
            );
        }
    }
}

/// `list` shows each fault scenario's whole expectation (verdict, phase, reason), and its
/// columns line up past the longest shipped file name, which it prints whole.
#[test]
fn list_shows_every_fault_scenarios_expectation_in_aligned_columns() {
    let (code, out, err) = harness(&["list"]);
    assert_eq!(code, 0, "{err}");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let (_, json, _) = harness(&["list", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let files: Vec<String> = ["scenarios", "matrices"]
        .iter()
        .flat_map(|k| v[k].as_array().unwrap().clone())
        .map(|s| s["file"].as_str().unwrap().to_string())
        .collect();
    let longest = files.iter().max_by_key(|f| f.len()).unwrap();
    let line_of = |file: &str| {
        out.lines()
            .find(|l| {
                l.strip_prefix("  ")
                    .and_then(|l| l.strip_prefix(file))
                    .is_some_and(|r| r.starts_with(' '))
            })
            .unwrap_or_else(|| panic!("no line for {file} (whole) in:\n{out}"))
    };
    assert!(line_of(longest).len() > longest.len() + 3, "{out}");
    let column = |file: &str| {
        let rest = &line_of(file)[2 + file.len()..];
        2 + file.len() + rest.len() - rest.trim_start().len()
    };
    let columns: std::collections::BTreeSet<usize> = files.iter().map(|f| column(f)).collect();
    assert_eq!(
        columns.len(),
        1,
        "the second column starts at {columns:?}:\n{out}"
    );
    for file in files.iter().filter(|f| f.starts_with("scenarios/faults/")) {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let doc: toml::Table = toml::from_str(&text).unwrap();
        let line = line_of(file).replace('\\', "");
        let Some(expect) = doc.get("expect").and_then(|e| e.as_table()) else {
            assert!(line.contains("expects pass"), "{file}: {line}");
            continue;
        };
        for key in [
            "verdict",
            "failed_phase",
            "reason_contains",
            "warning_contains",
        ] {
            if let Some(want) = expect.get(key).and_then(|w| w.as_str()) {
                assert!(line.contains(want), "{file}: no {key} {want:?} in\n{line}");
            }
        }
    }
}

/// `run --help` says what `--keep` keeps and where: the run's private directory, outside
/// `--out`, with its disks, live ISO and secrets; and that a passing run's VM runs on where
/// the backend can leave it.
#[test]
fn run_help_says_what_keep_keeps_and_where() {
    let (code, out, err) = harness(&["run", "--help"]);
    assert_eq!(code, 0, "{err}");
    let at = out
        .find("\n      --keep[=<WHEN>]")
        .expect("--keep in run --help");
    let end = out[at + 1..]
        .find("\n      --")
        .map_or(out.len(), |e| at + 1 + e);
    let keep = out[at..end]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for words in [
        "private directory",
        "outside --out",
        "disks",
        "ISO",
        "secrets",
        "SNO_HARNESS_PRIVATE_DIR",
        "running",
        "--keep=on-failure",
        "gc",
    ] {
        assert!(keep.contains(words), "no {words:?} in: {keep}");
    }
}

/// `plan --json` names its schema, as result.json and summary.json do, for a scenario and for
/// a matrix.
#[test]
fn plan_json_names_its_schema() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for (file, schema) in [
        ("scenarios/smoke.toml", "sno-harness/plan/v1"),
        ("scenarios/disks.toml", "sno-harness/matrix-plan/v1"),
    ] {
        let (code, out, err) = harness(&["plan", "--json", root.join(file).to_str().unwrap()]);
        assert_eq!(code, 0, "{file}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["schema"], schema, "{file}");
    }
}

/// `plan` shows a scenario's `[network]`: its mode, addresses and keyfiles, and how a run puts
/// them on the node; a scenario without the table has no `network` in its JSON.
#[test]
fn plan_shows_the_static_network_and_its_keyfiles() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let file = root.join("scenarios/static-ipv4-nat.toml");
    let file = file.to_str().unwrap();
    let (code, out, err) = harness(&["plan", file]);
    assert_eq!(code, 0, "{err}");
    for words in [
        "\n# network: static: 192.168.126.10/24 via 192.168.126.1, DNS 192.168.126.1\n",
        "embedded into the live ISO with `coreos-installer iso network embed`",
        "\n## nic0.nmconnection\n[connection]\nid=nic0\n",
        "\n[ethernet]\nmac-address=52:54:00:12:34:56\n",
        "\naddress1=192.168.126.10/24,192.168.126.1\n",
    ] {
        assert!(out.contains(words), "no {words:?} in:\n{out}");
    }
    let (code, out, err) = harness(&["plan", "--json", file]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["scenario"]["network"]["mode"], "static");
    assert_eq!(
        v["scenario"]["network"]["ipv4"]["address"],
        "192.168.126.10"
    );
    assert_eq!(v["network"]["keyfiles_embedded"], true);
    let files = v["network"]["keyfiles"].as_array().unwrap();
    assert_eq!(files.len(), 1);
    assert_eq!(files[0]["file"], "nic0.nmconnection");
    assert!(files[0]["text"].as_str().unwrap().contains("method=manual"));
    let smoke = root.join("scenarios/smoke.toml");
    let (code, out, err) = harness(&["plan", "--json", smoke.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v.get("network").is_none() && v["scenario"].get("network").is_none());
    let (_, text, _) = harness(&["plan", smoke.to_str().unwrap()]);
    assert!(!text.contains("# network"), "{text}");
}
