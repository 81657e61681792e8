//! The imports between modules: where each path a module's code names leads.
//!
//! A path starts at `crate`, `self`, `super` (as often as written), a child module's name or
//! a name a `use` bound to a module; it then goes down child modules as far as its names are
//! modules. A name that is an item is followed through the `use` that brought it into that
//! module (a re-export leads to where the item is defined, also through a `pub use x::*`).
//! Paths of other crates (`std::`, `serde::`...) are no import. A macro of the crate called
//! by name (`fail!(..)`) imports the module that defines it.
//!
//! The edges kept: a module's imports of other modules, except its own descendants. A
//! module may use its children (they are its parts, and it declares them), and a child may
//! use its parent's items through `super::` (the parent is the ground its children share);
//! counting both would make every such pair a cycle (the harness alone would have 12). So a
//! cycle runs between modules of which neither contains the other: siblings, or a child and
//! its parent's siblings. What is not seen: the grain is the module, not the item, so a child
//! using a parent's type that holds a sibling's type imports the parent only.

use super::parse::Bind;
use super::tree::Tree;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Deeper than this a chain of `use`s is taken for a loop of them.
const MAX_DEPTH: u32 = 16;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Site {
    pub file: PathBuf,
    pub line: usize,
}

/// `(from, to)` module ids and the places the import is written.
pub type Edges = BTreeMap<(usize, usize), Vec<Site>>;

pub fn edges(tree: &Tree) -> Edges {
    let r = Resolver { t: tree };
    let mut out = Edges::new();
    for (m, module) in tree.modules.iter().enumerate() {
        let text = &module.text;
        let uses = text.uses.iter().map(|u| (r.resolve(m, &u.path, 0), u.line));
        let paths = text
            .paths
            .iter()
            .map(|p| (r.resolve(m, &p.segs, 0), p.line));
        let targets = uses.chain(paths).map(|(t, line)| (t.map(|(t, _)| t), line));
        let macros = text
            .macro_calls
            .iter()
            .map(|(name, line)| (r.definer(m, name), *line));
        for (target, line) in targets.chain(macros) {
            let Some(t) = target else { continue };
            if t != m && !tree.is_ancestor(m, t) {
                let site = Site {
                    file: module.file.clone(),
                    line,
                };
                out.entry((m, t)).or_default().push(site);
            }
        }
    }
    for sites in out.values_mut() {
        sites.sort();
        sites.dedup();
    }
    out
}

struct Resolver<'a> {
    t: &'a Tree,
}

impl Resolver<'_> {
    /// The module a path seen in module `m` leads to, and whether the whole path is that
    /// module (not an item in it). None: another crate's path, or not a module path at all.
    fn resolve(&self, m: usize, segs: &[String], depth: u32) -> Option<(usize, bool)> {
        if depth > MAX_DEPTH || segs.is_empty() {
            return None;
        }
        let (mut cur, mut i) = self.start(m, segs, depth)?;
        while let Some(name) = segs.get(i) {
            if let Some(&c) = self.t.modules[cur].children.get(name) {
                cur = c;
            } else {
                match self.item(cur, name, depth + 1)? {
                    (target, true) => cur = target,
                    found => return Some(found),
                }
            }
            i += 1;
        }
        Some((cur, true))
    }

    /// The module a path starts at, and how many of its names that took.
    fn start(&self, m: usize, segs: &[String], depth: u32) -> Option<(usize, usize)> {
        let module = &self.t.modules[m];
        match segs[0].as_str() {
            "crate" => Some((module.root, 1)),
            "self" => Some((m, 1)),
            "super" => {
                let ups = segs.iter().take_while(|s| *s == "super").count();
                let mut cur = m;
                for _ in 0..ups {
                    cur = self.t.modules[cur].parent?;
                }
                Some((cur, ups))
            }
            name => match module.children.get(name) {
                Some(&c) => Some((c, 1)),
                None => match self.binding(m, name, depth + 1)? {
                    (target, true) => Some((target, 1)),
                    // An item brought in by a `use` (`Error::Io`): that `use` is the import.
                    (_, false) => None,
                },
            },
        }
    }

    /// Where the name `name` seen in module `m` is defined: through the `use` that bound it,
    /// else `m` itself if it defines it, else a glob `use` whose module has it; else `m`.
    fn item(&self, m: usize, name: &str, depth: u32) -> Option<(usize, bool)> {
        if depth > MAX_DEPTH {
            return Some((m, false));
        }
        let text = &self.t.modules[m].text;
        if text.uses.iter().any(|u| u.bind == Bind::Name(name.into())) {
            return self.binding(m, name, depth);
        }
        if text.defined.contains(name) {
            return Some((m, false));
        }
        for u in text.uses.iter().filter(|u| u.bind == Bind::Glob) {
            if let Some((g, true)) = self.resolve(m, &u.path, depth + 1) {
                if g != m && self.has(g, name) {
                    return self.item(g, name, depth + 1);
                }
            }
        }
        Some((m, false))
    }

    /// What the `use` in module `m` that binds `name` leads to.
    fn binding(&self, m: usize, name: &str, depth: u32) -> Option<(usize, bool)> {
        let text = &self.t.modules[m].text;
        let u = text
            .uses
            .iter()
            .find(|u| u.bind == Bind::Name(name.into()))?;
        self.resolve(m, &u.path, depth + 1)
    }

    fn has(&self, m: usize, name: &str) -> bool {
        let module = &self.t.modules[m];
        module.text.defined.contains(name)
            || module.children.contains_key(name)
            || module
                .text
                .uses
                .iter()
                .any(|u| u.bind == Bind::Name(name.into()))
    }

    /// The module of `m`'s crate that defines the macro `name`: `m`'s nearest ancestor that
    /// does, else the only one.
    fn definer(&self, m: usize, name: &str) -> Option<usize> {
        let root = self.t.modules[m].root;
        let defines = |d: &usize| {
            let module = &self.t.modules[*d];
            module.root == root && module.text.macro_defs.iter().any(|n| n == name)
        };
        let mut up = Some(m);
        while let Some(a) = up {
            if defines(&a) {
                return Some(a);
            }
            up = self.t.modules[a].parent;
        }
        let all: Vec<usize> = (0..self.t.modules.len()).filter(defines).collect();
        (all.len() == 1).then(|| all[0])
    }
}
