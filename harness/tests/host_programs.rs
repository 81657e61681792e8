//! ci/host-programs.txt is the one list of what the host must provide (ci/fresh-host-check.sh
//! proves ci/install-host-deps.sh installs all of it). These tests keep the list complete: a
//! program the code starts that the list does not name fails here, in every CI run, without
//! the minute-long fresh-root check.

use std::path::Path;
use std::process::{Command, Output};

fn list_only(list: &Path) -> Output {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    Command::new("bash")
        .arg(repo.join("ci/fresh-host-check.sh"))
        .arg("--list-only")
        .env("SNO_HOST_PROGRAMS", list)
        .current_dir(&repo)
        .output()
        .expect("running ci/fresh-host-check.sh")
}

fn shipped_list() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ci/host-programs.txt")
}

#[test]
fn the_shipped_list_names_every_program_the_code_starts() {
    let out = list_only(&shipped_list());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_list_without_a_program_the_code_starts_is_refused_naming_it() {
    let text = std::fs::read_to_string(shipped_list()).unwrap();
    let without: String = text
        .lines()
        .filter(|l| !l.starts_with("qemu-img ") && !l.starts_with("mksquashfs "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(without, text, "the list no longer names qemu-img");
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("host-programs.txt");
    std::fs::write(&list, without).unwrap();
    let out = list_only(&list);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // One from a Command::new of the harness, one from the tools build.sh checks for.
    assert!(stderr.contains("qemu-img (the code runs it)"), "{stderr}");
    assert!(stderr.contains("mksquashfs (the code runs it)"), "{stderr}");
}
