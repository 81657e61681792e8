//! No import cycle between the modules of any crate of the workspace (docs/architecture.md,
//! "The layers"): every file and inline `mod` of every member's src/, tests/, benches/ and
//! examples/, read from the crate roots down their `mod` declarations. What counts as an
//! import is in module_graph/resolve.rs: the paths a module's code names (comments, literals
//! and test code left out); a module's use of its own descendants does not count, a child's
//! use of its parent's items does. tests/layering.rs orders the harness's top-level modules.

mod module_graph;

use module_graph::tree::{Sources, Tree};
use module_graph::workspace;
use std::path::{Path, PathBuf};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn no_two_modules_of_the_workspace_import_each_other() {
    let ws = workspace::read(&workspace_root());
    let tree = Tree::build(&ws.sources, &ws.roots);
    let cycles = module_graph::cycles(&tree);
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

/// Nothing escapes the check: each file is a module of a crate (or test code), each
/// `mod x;` has its file, and each member's src/ is read.
#[test]
fn every_source_file_of_the_workspace_is_read() {
    let ws = workspace::read(&workspace_root());
    let tree = Tree::build(&ws.sources, &ws.roots);
    let unread: Vec<String> = ws
        .sources
        .keys()
        .filter(|f| !tree.read.contains(*f))
        .map(|f| format!("{}: in no module tree", f.display()))
        .collect();
    assert!(
        unread.is_empty() && tree.missing.is_empty(),
        "{unread:#?}\n{:#?}",
        tree.missing
    );
    assert!(
        ws.members.contains(&PathBuf::from("harness")),
        "{:?}",
        ws.members
    );
    for member in &ws.members {
        let src = member.join("src");
        assert!(
            tree.modules.iter().any(|m| m.file.starts_with(&src)),
            "{}: no module read",
            member.display()
        );
    }
}

fn cycles_of(files: &[(&str, &str)]) -> Vec<String> {
    let sources: Sources = files
        .iter()
        .map(|(f, text)| (PathBuf::from(f), text.to_string()))
        .collect();
    module_graph::cycles(&Tree::build(&sources, &[PathBuf::from("src/lib.rs")]))
}

/// Two sibling files that import each other, one with a path in its code, behind literals
/// and a lifetime a naive reader would trip on; a third that only imports one of them stays
/// out of the cycle, and so does a path in a comment or a string.
#[test]
fn a_cycle_between_sibling_files_is_found_with_its_lines() {
    let b = "const Q: char = '\"';\n\
             fn keep<'a>(s: &'a str) -> &'a str { s }\n\
             const R: &str = r#\"crate::c \"#; // crate::c\n\
             pub fn f() -> crate::a::A { crate::a::A }\n\
             /* crate::c */ pub struct B;";
    let cycles = cycles_of(&[
        ("src/lib.rs", "mod a;\nmod b;\nmod c;"),
        ("src/a.rs", "use crate::b::B;\npub struct A;"),
        ("src/b.rs", b),
        ("src/c.rs", "use super::a::A;\npub struct C;"),
    ]);
    assert_eq!(
        cycles,
        vec![
            "src/lib.rs: crate::a, crate::b import each other\n  \
              crate::a -> crate::b: src/a.rs:1\n  \
              crate::b -> crate::a: src/b.rs:4"
        ]
    );
}

/// A parent that uses its children and children that use the parent's items, `super::` or
/// `crate::`; siblings whose only mutual import is in test code (a `#[cfg(test)]` item, a
/// test module inline or in a file of its own): no cycle.
#[test]
fn a_parent_with_its_children_and_test_code_make_no_cycle() {
    let cycles = cycles_of(&[
        ("src/lib.rs", "pub mod p;\npub use p::Shared;"),
        (
            "src/p/mod.rs",
            "mod x;\nmod y;\npub struct Shared;\npub fn run() { x::go(); y::go() }",
        ),
        (
            "src/p/x.rs",
            "use super::y;\npub fn go() { y::go() }\n#[cfg(test)]\nmod tests;",
        ),
        ("src/p/x/tests.rs", "use crate::p::y;"),
        (
            "src/p/y.rs",
            "use crate::Shared;\npub fn go() {}\n#[cfg(test)]\nuse super::x::go as g;\n\
             #[cfg(test)]\nmod tests { use crate::p::x; }",
        ),
    ]);
    assert!(cycles.is_empty(), "{cycles:#?}");
}

/// The cycle a re-export hides (`crate::B` is b's `B`) and one through a macro: a module
/// that calls a macro imports the module defining it.
#[test]
fn a_cycle_through_a_reexport_or_a_macro_is_found() {
    let cycles = cycles_of(&[
        (
            "src/lib.rs",
            "#[macro_use]\nmod a;\nmod b;\nmod g;\npub use b::B;\npub use g::*;",
        ),
        (
            "src/a.rs",
            "macro_rules! ping { () => {} }\npub fn f() -> crate::B { B }",
        ),
        ("src/b.rs", "pub struct B;\nfn g() {\n    ping!();\n}"),
        ("src/g.rs", "pub fn globbed() { crate::a::f(); }"),
    ]);
    assert_eq!(
        cycles,
        vec![
            "src/lib.rs: crate::a, crate::b import each other\n  \
              crate::a -> crate::b: src/a.rs:2\n  \
              crate::b -> crate::a: src/b.rs:3"
        ]
    );
    let glob = cycles_of(&[
        ("src/lib.rs", "mod a;\nmod g;\npub use g::*;"),
        ("src/a.rs", "pub fn f() { crate::globbed() }"),
        ("src/g.rs", "pub fn globbed() { crate::a::f(); }"),
    ]);
    assert_eq!(glob.len(), 1, "a glob re-export is followed: {glob:#?}");
}
