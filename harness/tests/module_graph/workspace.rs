//! The workspace's crates as the root Cargo.toml lists them (`[workspace] members`), and
//! every `.rs` file under their `src/`, `tests/`, `benches/` and `examples/`.

use super::tree::Sources;
use std::path::{Path, PathBuf};

pub struct Workspace {
    pub sources: Sources,
    /// Crate roots: src/lib.rs, src/main.rs, src/bin/*.rs, build.rs, and the top-level files
    /// of tests/, benches/ and examples/.
    pub roots: Vec<PathBuf>,
    pub members: Vec<PathBuf>,
}

pub fn read(root: &Path) -> Workspace {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let members = members(&manifest);
    let mut sources = Sources::new();
    let mut roots = Vec::new();
    for member in &members {
        for dir in ["src", "tests", "benches", "examples"] {
            rust_files(root, &member.join(dir), &mut sources);
        }
        rust_files(root, &member.join("build.rs"), &mut sources);
        roots.extend(crate_roots(member, &sources));
    }
    Workspace {
        sources,
        roots,
        members,
    }
}

/// `members = [..]` of the `[workspace]` table (the list may span lines).
pub fn members(manifest: &str) -> Vec<PathBuf> {
    let table = manifest
        .find("[workspace]")
        .expect("Cargo.toml: no [workspace]");
    let list = &manifest[table..];
    let list = &list[list
        .find("members")
        .expect("Cargo.toml: no workspace members")..];
    let list = &list[list.find('[').unwrap() + 1..list.find(']').unwrap()];
    let members: Vec<PathBuf> = list
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .map(PathBuf::from)
        .collect();
    assert!(
        members.iter().all(|m| !m.to_string_lossy().contains('*')),
        "Cargo.toml: a glob in the workspace members; teach module_graph/workspace.rs"
    );
    members
}

fn crate_roots(member: &Path, sources: &Sources) -> Vec<PathBuf> {
    let fixed = ["src/lib.rs", "src/main.rs", "build.rs"].map(|f| member.join(f));
    let top_level = |f: &&PathBuf| {
        ["src/bin", "tests", "benches", "examples"]
            .iter()
            .any(|d| f.parent() == Some(&member.join(d)))
    };
    let mut roots: Vec<PathBuf> = fixed
        .into_iter()
        .filter(|f| sources.contains_key(f))
        .collect();
    roots.extend(sources.keys().filter(top_level).cloned());
    roots
}

/// Every `.rs` file at or under `rel` (from the workspace root), by its path from there.
fn rust_files(root: &Path, rel: &Path, out: &mut Sources) {
    let full = root.join(rel);
    if full.is_dir() {
        for e in std::fs::read_dir(&full).unwrap().flatten() {
            rust_files(root, &rel.join(e.file_name()), out);
        }
    } else if full.is_file() && full.extension().is_some_and(|x| x == "rs") {
        out.insert(rel.to_path_buf(), std::fs::read_to_string(&full).unwrap());
    }
}
