//! docs/ci.md's recipes run as written. Every command of its examples (a `run:` of the GitHub
//! workflow, an `args:` entry of the Prow job, a line of a `sh` block) either is run here,
//! verbatim in bash, or says beside it the host it needs (`# needs ...`) or the test that runs
//! it (`# run by FILE`). The merge commands run here on the directories of four shards of a
//! matrix whose scenario never starts a VM. The Prow job asks for KVM through KubeVirt's
//! device plugin, not a privileged container, and runs the CI image.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

mod fake_tools;
use fake_tools::fake_tools;
mod no_vm;
use no_vm::{harness_with, no_vm_matrix, repo_file};

fn ci_md() -> String {
    std::fs::read_to_string(repo_file("docs/ci.md")).unwrap()
}

/// One command of the examples: its text (continuation lines joined) and the comment beside
/// it, if any.
#[derive(Debug)]
struct Example {
    command: String,
    note: Option<String>,
}

/// The fenced blocks of `lang`.
fn blocks<'a>(md: &'a str, lang: &str) -> Vec<Vec<&'a str>> {
    let mut out = Vec::new();
    let mut cur: Option<Vec<&str>> = None;
    for line in md.lines() {
        match (&mut cur, line.trim_start().strip_prefix("```")) {
            (None, Some(tag)) if tag == lang => cur = Some(Vec::new()),
            (Some(_), Some("")) => out.push(cur.take().unwrap()),
            (Some(b), _) => b.push(line),
            _ => {}
        }
    }
    out
}

/// Splits `text  # comment` (a `#` after a space; `${{ }}` and `#` inside words stay).
fn split_comment(line: &str) -> (&str, Option<String>) {
    match line.find(" # ").or_else(|| line.find("  #")) {
        Some(i) => (
            line[..i].trim_end(),
            Some(line[i..].trim().trim_start_matches('#').trim().to_string()),
        ),
        None => (line.trim_end(), None),
    }
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// The `run:` values and the `args:` entries of the YAML blocks; a folded (`>`) value is its
/// more-indented lines joined.
fn yaml_examples(md: &str) -> Vec<Example> {
    let mut out = Vec::new();
    for block in blocks(md, "yaml") {
        for (i, line) in block.iter().enumerate() {
            let t = line.trim_start();
            let value = t
                .strip_prefix("- run:")
                .or_else(|| t.strip_prefix("run:"))
                .or_else(|| {
                    (t.starts_with("- >") && block[..i].iter().any(|l| l.trim() == "args:"))
                        .then(|| &t[1..])
                });
            let Some(value) = value else { continue };
            let (value, note) = split_comment(value.trim());
            let command = if value == ">" {
                block[i + 1..]
                    .iter()
                    .take_while(|l| indent(l) > indent(line) + 2 && !l.trim().is_empty())
                    .map(|l| l.trim())
                    .collect::<Vec<_>>()
                    .join(" ")
            } else {
                value.to_string()
            };
            out.push(Example { command, note });
        }
    }
    out
}

/// The commands of the `sh` blocks, `\` continuations joined; a comment on any of its lines
/// is beside it.
fn sh_examples(md: &str) -> Vec<Example> {
    let mut out = Vec::new();
    for block in blocks(md, "sh") {
        let mut command = String::new();
        let mut note = None;
        for line in block {
            let (text, comment) = split_comment(line);
            note = note.or(comment);
            let text = text.trim();
            let (text, more) = match text.strip_suffix('\\') {
                Some(t) => (t.trim_end(), true),
                None => (text, false),
            };
            if !command.is_empty() {
                command.push(' ');
            }
            command.push_str(text);
            if !more {
                out.push(Example {
                    command: std::mem::take(&mut command),
                    note: note.take(),
                });
            }
        }
    }
    out
}

/// The commands this test runs, verbatim.
const RUN_HERE: &[&str] = &[
    "target/release/sno-harness report --merge shards/shard-* --out merged --copy",
    "sno-harness report --merge shards/shard-* --out \"$ARTIFACT_DIR/merged\" --copy",
];

#[test]
fn every_command_of_the_examples_is_run_here_or_names_the_host_it_needs() {
    let md = ci_md();
    let all: Vec<Example> = yaml_examples(&md)
        .into_iter()
        .chain(sh_examples(&md))
        .collect();
    assert!(all.len() >= 12, "the examples' commands: {all:#?}");
    for want in RUN_HERE {
        assert!(
            all.iter().any(|e| e.command == *want),
            "docs/ci.md no longer shows `{want}`: {all:#?}"
        );
    }
    for e in all
        .iter()
        .filter(|e| !RUN_HERE.contains(&e.command.as_str()))
    {
        let note = e.note.as_deref().unwrap_or("");
        if let Some(file) = note.strip_prefix("run by ") {
            let text = std::fs::read_to_string(repo_file(file))
                .unwrap_or_else(|err| panic!("`{}`: run by {file}: {err}", e.command));
            let program = e.command.split_whitespace().nth(1).unwrap_or("");
            let name = Path::new(program).file_name().unwrap().to_str().unwrap();
            assert!(text.contains(name), "{file} does not run {name}");
        } else {
            assert!(
                note.starts_with("needs "),
                "`{}` is neither run by a test nor says the host it needs",
                e.command
            );
        }
    }
}

/// Four shard directories of one plan in `dir/shards`, made by `matrix --shard K/4` of a
/// matrix whose scenario ends before any VM.
fn four_shards(dir: &Path) {
    let m = no_vm_matrix(dir);
    let bin = fake_tools(dir);
    for k in 1..=4 {
        let out = dir.join(format!("shards/shard-{k}"));
        let shard = format!("{k}/4");
        let args = [
            "matrix",
            m.to_str().unwrap(),
            "--shard",
            &shard,
            "--out",
            out.to_str().unwrap(),
        ];
        let r = harness_with(&args, &bin, &dir.join("state"));
        assert_eq!(r.code, 0, "shard {shard}: {}{}", r.stdout, r.stderr);
    }
}

#[test]
fn the_merge_commands_run_as_written_on_four_shards() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    four_shards(t);
    // Where the recipes find the harness: target/release/ (GitHub) and PATH (the image).
    std::fs::create_dir_all(t.join("target/release")).unwrap();
    let exe = env!("CARGO_BIN_EXE_sno-harness");
    symlink(exe, t.join("target/release/sno-harness")).unwrap();
    std::fs::create_dir(t.join("path")).unwrap();
    symlink(exe, t.join("path/sno-harness")).unwrap();
    for (i, command) in RUN_HERE.iter().enumerate() {
        let artifacts = t.join(format!("artifacts-{i}"));
        let out = Command::new("/bin/bash")
            .args(["-c", command])
            .current_dir(t)
            .env(
                "PATH",
                format!("{}:/usr/bin:/bin", t.join("path").display()),
            )
            .env("ARTIFACT_DIR", &artifacts)
            .env("SNO_HARNESS_STATE_DIR", t.join("state"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "`{command}`: {stderr}");
        let merged = if command.contains("ARTIFACT_DIR") {
            artifacts.join("merged")
        } else {
            t.join("merged")
        };
        let summary: Value =
            serde_json::from_slice(&std::fs::read(merged.join("summary.json")).unwrap()).unwrap();
        assert_eq!(summary["counts"]["total"], 8, "`{command}`: {summary}");
        assert!(merged.join("junit.xml").is_file(), "`{command}`");
        // --copy: the permutations are inside the merged directory.
        let first = summary["permutations"][0]["id"].as_str().unwrap();
        assert!(merged.join(first).join("result.json").is_file(), "{first}");
        std::fs::remove_dir_all(&merged).unwrap();
    }
}

/// The YAML block that holds `marker`.
fn yaml_block_with(marker: &str) -> String {
    blocks(&ci_md(), "yaml")
        .into_iter()
        .map(|b| b.join("\n"))
        .find(|b| b.contains(marker))
        .unwrap_or_else(|| panic!("no YAML block of docs/ci.md holds {marker}"))
}

#[test]
fn the_prow_job_gets_kvm_from_kubevirts_device_plugin_not_privilege_and_runs_the_image() {
    let job = yaml_block_with("presubmits:");
    assert!(!job.contains("privileged"), "{job}");
    let requests = job
        .lines()
        .find(|l| l.trim_start().starts_with("requests:"))
        .expect("resources.requests");
    let limits = job
        .lines()
        .find(|l| l.trim_start().starts_with("limits:"))
        .expect("resources.limits");
    for l in [requests, limits] {
        assert!(l.contains("devices.kubevirt.io/kvm: \"1\""), "{l}");
    }
    assert!(job.contains("ci/image/Containerfile"), "the image: {job}");
    // The private directory is a volume apart, never under $ARTIFACT_DIR.
    assert!(job.contains("SNO_HARNESS_PRIVATE_DIR"), "{job}");
}

#[test]
fn the_github_merge_job_builds_without_libvirt_on_ubuntu() {
    let wf = yaml_block_with("jobs:");
    let report = &wf[wf.find("  report:").expect("the merge job")..];
    assert!(report.contains("runs-on: ubuntu-latest"), "{report}");
    assert!(
        report.contains("cargo build --release --locked -p sno-harness --no-default-features"),
        "{report}"
    );
}

#[test]
fn the_parser_sees_a_note_and_a_missing_one() {
    let md = "```sh\nfoo \\\n  bar   # needs a KVM runner\nbaz\n```\n\
              ```yaml\nsteps:\n  - run: >  # needs X\n      a b\n      c\n  - run: d\n```\n";
    let sh = sh_examples(md);
    assert_eq!(sh[0].command, "foo bar");
    assert_eq!(sh[0].note.as_deref(), Some("needs a KVM runner"));
    assert_eq!(
        (sh[1].command.as_str(), sh[1].note.as_deref()),
        ("baz", None)
    );
    let y = yaml_examples(md);
    assert_eq!(y[0].command, "a b c");
    assert_eq!(y[0].note.as_deref(), Some("needs X"));
    assert_eq!((y[1].command.as_str(), y[1].note.as_deref()), ("d", None));
}
