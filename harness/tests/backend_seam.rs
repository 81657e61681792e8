//! The backend is known in one place (harness/src/vm/backend.rs): a new backend touches
//! `vm/backend.rs` (its variant, parsing, capabilities), `vm/running.rs` (its running VM's
//! verbs), `vm/mod.rs` (its module) and a module of its own, and no other existing file. The
//! test-only stand-in backend (`vm/stand_in.rs`, compiled into the library's unit tests, where
//! the compiler makes every match over backends handle it) shows the count; this test reads the
//! sources and fails, naming the file and line, when production code elsewhere names a
//! backend's variant (a match or an `==` that would treat a new backend as one of the old).

use std::path::Path;

mod source_tree;
use source_tree::{rust_files, src};

/// A file's production lines: before its first `#[cfg(test)]` (test files have none).
fn production(path: &Path) -> Vec<(usize, String)> {
    let name = path.file_name().unwrap().to_string_lossy();
    if name == "tests.rs" || name == "testdata.rs" {
        return Vec::new();
    }
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .enumerate()
        .take_while(|(_, l)| l.trim() != "#[cfg(test)]")
        .map(|(i, l)| (i + 1, l.to_string()))
        .collect()
}

/// The places in production code outside `allowed` that name one of `variants`.
fn namings(variants: &[&str], allowed: &[&str]) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut found = Vec::new();
    for f in files {
        let rel = f.strip_prefix(src()).unwrap().display().to_string();
        if allowed.contains(&rel.as_str()) {
            continue;
        }
        for (n, line) in production(&f) {
            let code = line.split("//").next().unwrap_or("");
            if variants.iter().any(|v| code.contains(v)) {
                found.push(format!("{rel}:{n}: {}", line.trim()));
            }
        }
    }
    found
}

/// The files that know the backends by name (their variants, their running VMs).
const KNOWERS: &[&str] = &[
    "vm/backend.rs",
    "vm/running.rs",
    "vm/stand_in.rs",
    "vm/external.rs",
];

#[test]
fn no_production_code_outside_vm_names_a_backends_variant() {
    let found = namings(
        &[
            "Backend::Qemu",
            "Backend::Libvirt",
            "Backend::StandIn",
            "Backend::External",
            "Backend::Redfish",
            "RunningVm::Qemu",
            "RunningVm::Libvirt",
            "RunningVm::External",
            "RunningVm::Redfish",
            "RunningVmHandle::",
        ],
        KNOWERS,
    );
    assert!(
        found.is_empty(),
        "code that names a backend instead of asking vm::Backend what it can do:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_stand_in_backend_is_handled_in_the_counted_files_only() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let touching: Vec<String> = files
        .iter()
        .filter(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .any(|l| l.contains("StandIn") || l.contains("stand_in"))
        })
        .map(|f| f.strip_prefix(src()).unwrap().display().to_string())
        .collect();
    let mut touching = touching;
    touching.sort();
    // Three existing files and the stand-in's own module.
    assert_eq!(
        touching,
        [
            "vm/backend.rs",
            "vm/mod.rs",
            "vm/running.rs",
            "vm/stand_in.rs"
        ],
        "a new backend touched more files than docs/architecture.md says"
    );
}

#[test]
fn a_backend_variant_named_elsewhere_is_found_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x.rs");
    std::fs::write(
        &f,
        "fn a(b: &Backend) -> bool {\n    // Backend::Qemu in a comment is fine\n    *b == Backend::Qemu\n}\n#[cfg(test)]\nmod tests { fn t() { let _ = Backend::Qemu; } }\n",
    )
    .unwrap();
    let lines: Vec<usize> = production(&f)
        .into_iter()
        .filter(|(_, l)| l.split("//").next().unwrap().contains("Backend::Qemu"))
        .map(|(n, _)| n)
        .collect();
    assert_eq!(lines, [3], "the comment and the test code do not count");
}
