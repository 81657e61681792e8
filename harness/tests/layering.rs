//! The layers of harness/src (docs/architecture.md): every top-level module of the library
//! imports only modules below it in `LAYERS`, so there is no import cycle between them, and a
//! new edge upwards fails here, naming the file and line. Read from the source: every
//! `crate::<module>` path outside comments and outside test code (`tests.rs`, `testdata.rs`,
//! and what follows a file's `#[cfg(test)]`).

use std::collections::BTreeMap;
use std::path::Path;

/// Bottom first. The command line (src/cli, in the binary) sits on top of all of them.
const LAYERS: &[&str] = &[
    "util", "secrets", "hw", "netboot", "flow", "result", "scenario", "guest", "fixture", "vm",
    "registry", "assets", "health", "gather", "perf", "report", "run", "fleet", "analyze",
];

mod source_tree;
use source_tree::{rust_files, src};

/// The top-level module a file of the library belongs to; None for lib.rs, main.rs, cli/ and
/// test files.
fn module_of(file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src()).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    let name = file.file_name()?.to_str()?;
    if ["lib.rs", "main.rs"].contains(&first.as_str()) || first == "cli" {
        return None;
    }
    if name == "tests.rs" || name == "testdata.rs" {
        return None;
    }
    Some(first.trim_end_matches(".rs").to_string())
}

/// `(line number, module)` of every `crate::<module>` the file's code names.
fn imports(text: &str) -> Vec<(usize, String)> {
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    let mut out = Vec::new();
    for (i, line) in code.lines().enumerate() {
        let line = line.split("//").next().unwrap_or("");
        for part in line.split("crate::").skip(1) {
            let m: String = part
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !m.is_empty() {
                out.push((i + 1, m));
            }
        }
    }
    out
}

/// Every upward (or unknown) import: `file:line: a imports b`.
fn violations() -> Vec<String> {
    let rank: BTreeMap<&str, usize> = LAYERS.iter().enumerate().map(|(i, m)| (*m, i)).collect();
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let Some(m) = module_of(&f) else { continue };
        let Some(&own) = rank.get(m.as_str()) else {
            out.push(format!("{}: module {m} is not in LAYERS", f.display()));
            continue;
        };
        for (line, target) in imports(&std::fs::read_to_string(&f).unwrap()) {
            match rank.get(target.as_str()) {
                Some(&r) if r <= own => {}
                Some(_) => out.push(format!(
                    "{}:{line}: {m} imports {target}, which is above it",
                    f.display()
                )),
                None => out.push(format!(
                    "{}:{line}: {m} imports {target}, which is not in LAYERS",
                    f.display()
                )),
            }
        }
    }
    out
}

#[test]
fn no_module_imports_one_above_it() {
    let v = violations();
    assert!(v.is_empty(), "{}", v.join("\n"));
}

#[test]
fn every_top_level_module_of_the_library_has_a_layer() {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let declared: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod "))
        .map(|l| l.trim_end_matches(';').trim_end_matches(" {"))
        .filter(|m| *m != "exit")
        .collect();
    let mut sorted_declared = declared.clone();
    sorted_declared.sort();
    let mut layers = LAYERS.to_vec();
    layers.sort();
    assert_eq!(sorted_declared, layers);
}

#[test]
fn an_upward_import_is_found_with_its_line() {
    let text = "use std::fs;\n// crate::run in a comment\nuse crate::run::plan;\n#[cfg(test)]\nuse crate::cli;";
    assert_eq!(imports(text), vec![(3, "run".to_string())]);
}
