//! The graph of imports between the modules of Rust crates, read from their source, and
//! its cycles. Used by tests/module_cycles.rs; resolve.rs says what counts as an import.

pub mod lex;
pub mod parse;
pub mod resolve;
pub mod scc;
pub mod tree;
pub mod workspace;

use resolve::Edges;
use tree::Tree;

/// Every set of modules that import each other, around at least one loop, written out with
/// every import between them and the `file:line`s it is written at.
pub fn cycles(tree: &Tree) -> Vec<String> {
    let edges = resolve::edges(tree);
    let pairs: Vec<(usize, usize)> = edges.keys().copied().collect();
    scc::components(tree.modules.len(), &pairs)
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| describe(tree, &edges, &c))
        .collect()
}

fn describe(tree: &Tree, edges: &Edges, comp: &[usize]) -> String {
    let m = &tree.modules;
    let names: Vec<&str> = comp.iter().map(|&i| m[i].path.as_str()).collect();
    let root = &m[m[comp[0]].root].file;
    let mut out = format!("{}: {} import each other", root.display(), names.join(", "));
    for ((a, b), sites) in edges {
        if comp.contains(a) && comp.contains(b) {
            // All in the importing module's file.
            let lines: Vec<String> = sites.iter().map(|s| s.line.to_string()).collect();
            let file = m[*a].file.display();
            let (from, to) = (&m[*a].path, &m[*b].path);
            out += &format!("\n  {from} -> {to}: {file}:{}", lines.join(", "));
        }
    }
    out
}
