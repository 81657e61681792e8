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

/// Where the list `doctor` and the run's preflight check (`hw::host_programs`) disagrees with
/// ci/host-programs.txt (`list`): an entry the file does not name, a hint that installs
/// another package than the file's provider, a fixture tool build.sh does not check for.
fn disagreements(list: &str, build_sh: &str) -> Vec<String> {
    use sno_harness::hw::host_programs::{Need, ALL};
    let providers: std::collections::HashMap<&str, &str> = list
        .lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?, w.next()?))
        })
        .collect();
    let installs = |hint: &str, command: &str| {
        hint.match_indices(command).any(|(at, _)| {
            let after = hint[at + command.len()..].chars().next();
            !after.is_some_and(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        })
    };
    let mut out = Vec::new();
    for p in ALL {
        let command = match providers.get(p.name).map(|v| v.split_once(':')) {
            None => {
                out.push(format!("{}: not in ci/host-programs.txt", p.name));
                continue;
            }
            Some(Some(("deb", package))) => format!("apt-get install {package}"),
            Some(Some(("cargo", krate))) => format!("cargo install {krate}"),
            Some(other) => {
                out.push(format!(
                    "{}: provider {other:?} has no install hint",
                    p.name
                ));
                continue;
            }
        };
        if !installs(p.install, &command) {
            out.push(format!(
                "{}: the hint {:?} does not say `{command}`",
                p.name, p.install
            ));
        }
        let checked_by_build = build_sh
            .lines()
            .skip_while(|l| !l.starts_with("for tool in"))
            .take_while(|l| !l.starts_with("done"))
            .any(|l| l.split_whitespace().any(|w| w == p.name));
        if p.need == Need::FixtureBuild && !checked_by_build {
            out.push(format!("{}: build.sh does not check for it", p.name));
        }
    }
    out
}

fn build_sh() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../images/recipe/build.sh"))
        .unwrap()
}

#[test]
fn what_doctor_and_the_preflight_check_is_in_the_shipped_list_with_the_same_packages() {
    let list = std::fs::read_to_string(shipped_list()).unwrap();
    assert_eq!(disagreements(&list, &build_sh()), Vec::<String>::new());
}

#[test]
fn a_hint_for_another_package_or_an_entry_the_list_lacks_is_named() {
    let list = std::fs::read_to_string(shipped_list()).unwrap();
    let changed: String = list
        .lines()
        .filter(|l| !l.starts_with("kubectl "))
        .map(|l| match l.strip_prefix("qemu-img ") {
            Some(rest) => format!(
                "qemu-img {}\n",
                rest.replace("deb:qemu-utils", "deb:qemu-tools")
            ),
            None => format!("{l}\n"),
        })
        .collect();
    let found = disagreements(&changed, &build_sh());
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].starts_with("qemu-img: the hint"), "{found:?}");
    assert!(found[0].contains("apt-get install qemu-tools"), "{found:?}");
    assert_eq!(found[1], "kubectl: not in ci/host-programs.txt");
}
