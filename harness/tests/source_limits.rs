//! No production source file of the workspace is over `MAX_LINES` lines: a file that grows
//! past it is split by job into modules (docs/architecture.md). Every member crate's `src/`
//! is read (the members come from the workspace's Cargo.toml). Test code does not count: a
//! `tests.rs` or `testdata.rs`, a module declared under `#[cfg(test)]` (its file and what is
//! under it), and a module-level `#[cfg(test)]` item inside a production file.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

mod source_tree;
use source_tree::rust_files;

const MAX_LINES: usize = 800;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Each member crate's `src/`, as the workspace's Cargo.toml lists the members.
fn source_dirs() -> Vec<PathBuf> {
    let manifest: toml::Value =
        toml::from_str(&std::fs::read_to_string(workspace().join("Cargo.toml")).unwrap()).unwrap();
    let members = manifest["workspace"]["members"]
        .as_array()
        .expect("[workspace] members is a list");
    members
        .iter()
        .map(|m| workspace().join(m.as_str().unwrap()).join("src"))
        .collect()
}

/// A module-level `#[cfg(test)]` at line `i`: the index of the item's first line after its
/// attributes.
fn test_item_at(lines: &[&str], i: usize) -> Option<usize> {
    if !lines[i].starts_with("#[cfg(test)]") {
        return None;
    }
    let mut j = i + 1;
    while j < lines.len() && lines[j].starts_with("#[") {
        j += 1;
    }
    Some(j)
}

/// The lines of `text` that are not module-level `#[cfg(test)]` items: such an item ends at
/// its `;` (`mod tests;`, a `use`) or at the `}` that closes it in column 0.
fn production_lines(text: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    let mut count = 0;
    let mut i = 0;
    while i < lines.len() {
        let Some(mut j) = test_item_at(&lines, i) else {
            count += 1;
            i += 1;
            continue;
        };
        if !lines.get(j).is_some_and(|l| l.trim_end().ends_with(';')) {
            while j < lines.len() && lines[j].trim_end() != "}" {
                j += 1;
            }
        }
        i = j + 1;
    }
    count
}

/// The name of the module a `mod NAME;` line declares.
fn declared_module(line: &str) -> Option<&str> {
    let mut rest = line.trim();
    for visibility in ["pub(crate) ", "pub(super) ", "pub "] {
        if let Some(r) = rest.strip_prefix(visibility) {
            rest = r;
            break;
        }
    }
    rest.strip_prefix("mod ")?.strip_suffix(';').map(str::trim)
}

/// The files and directories of the modules `file` declares under `#[cfg(test)]`.
fn test_modules(file: &Path, text: &str) -> Vec<PathBuf> {
    let lines: Vec<&str> = text.lines().collect();
    let stem = file.file_stem().unwrap().to_str().unwrap();
    let dir = if ["mod", "lib", "main"].contains(&stem) {
        file.parent().unwrap().to_path_buf()
    } else {
        file.with_extension("")
    };
    let mut out = Vec::new();
    for i in 0..lines.len() {
        let Some(j) = test_item_at(&lines, i) else {
            continue;
        };
        if let Some(name) = lines.get(j).and_then(|l| declared_module(l)) {
            out.push(dir.join(format!("{name}.rs")));
            out.push(dir.join(name));
        }
    }
    out
}

/// `path: lines` of every production file over the limit, in order.
fn over_the_limit(dirs: &[PathBuf]) -> Vec<String> {
    let mut files = Vec::new();
    for d in dirs {
        rust_files(d, &mut files);
    }
    files.sort();
    let texts: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    let test_code: BTreeSet<PathBuf> = files
        .iter()
        .zip(&texts)
        .flat_map(|(f, t)| test_modules(f, t))
        .collect();
    let is_test = |f: &Path| {
        let name = f.file_name().unwrap().to_str().unwrap();
        name == "tests.rs" || name == "testdata.rs" || test_code.iter().any(|t| f.starts_with(t))
    };
    files
        .iter()
        .zip(&texts)
        .filter(|(f, _)| !is_test(f))
        .map(|(f, t)| (f, production_lines(t)))
        .filter(|(_, n)| *n > MAX_LINES)
        .map(|(f, n)| {
            let shown = f.strip_prefix(workspace()).unwrap_or(f);
            format!("{}: {n} lines", shown.display())
        })
        .collect()
}

#[test]
fn no_production_source_file_is_over_800_lines() {
    let dirs = source_dirs();
    assert!(
        dirs.iter().any(|d| d.ends_with("harness/src")),
        "the harness is a member: {dirs:?}"
    );
    let over = over_the_limit(&dirs);
    assert!(
        over.is_empty(),
        "production source over {MAX_LINES} lines (split each by job into modules):\n{}",
        over.join("\n")
    );
}

/// The counting itself: test items and test modules are left out, the rest is counted.
#[test]
fn test_code_is_left_out_of_the_count() {
    let text = "use a;\n\n#[cfg(test)]\nmod tests;\nfn f() {\n}\n#[cfg(test)]\n#[allow(dead_code)]\nmod inline {\n    fn g() {\n    }\n}\nconst X: u8 = 1;\n";
    // use a; / blank / fn f() { / } / const X
    assert_eq!(production_lines(text), 5);

    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let big = "fn f() {}\n".repeat(MAX_LINES + 1);
    let tail = "#[cfg(test)]\nmod tests {\n".to_string() + &"// x\n".repeat(2000) + "}\n";
    let lib = format!("mod a;\nmod b;\nmod c;\n#[cfg(test)]\npub(crate) mod fixtures;\n{tail}");
    std::fs::write(src.join("lib.rs"), lib).unwrap();
    // a.rs: one line over the limit before a long inline test module.
    std::fs::write(src.join("a.rs"), format!("{big}{tail}")).unwrap();
    // b.rs: its test module declared first; the lines after the declaration count.
    std::fs::write(src.join("b.rs"), format!("#[cfg(test)]\nmod tests;\n{big}")).unwrap();
    std::fs::create_dir(src.join("b")).unwrap();
    std::fs::write(src.join("b/tests.rs"), &big).unwrap();
    // c.rs: at the limit.
    let at_limit = "fn f() {}\n".repeat(MAX_LINES);
    std::fs::write(src.join("c.rs"), format!("{at_limit}{tail}")).unwrap();
    // A test-only module, as a file and as a directory.
    std::fs::write(src.join("fixtures.rs"), &big).unwrap();
    std::fs::create_dir(src.join("fixtures")).unwrap();
    std::fs::write(src.join("fixtures/data.rs"), &big).unwrap();

    let over = over_the_limit(&[src.to_path_buf()]);
    let n = MAX_LINES + 1;
    assert_eq!(over.len(), 2, "{over:?}");
    assert!(over[0].ends_with(&format!("/a.rs: {n} lines")), "{over:?}");
    assert!(over[1].ends_with(&format!("/b.rs: {n} lines")), "{over:?}");
}
