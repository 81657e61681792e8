//! The module trees of a workspace's crates, read from each crate root down its `mod`
//! declarations, finding their files as Rust does (`x.rs` or `x/mod.rs` in the declaring
//! module's directory). A module is a file or an inline `mod x { .. }`.

use super::lex::tokens;
use super::parse::{module_text, ModuleText};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file read, by its path from the workspace's root.
pub type Sources = BTreeMap<PathBuf, String>;

pub struct Module {
    /// From its crate's root: `crate::a::b`.
    pub path: String,
    pub parent: Option<usize>,
    pub root: usize,
    pub file: PathBuf,
    pub children: BTreeMap<String, usize>,
    pub text: ModuleText,
}

#[derive(Default)]
pub struct Tree {
    pub modules: Vec<Module>,
    /// The files read: production modules, and the files of test modules.
    pub read: BTreeSet<PathBuf>,
    /// `mod x;` declarations whose file is not there.
    pub missing: Vec<String>,
}

impl Tree {
    /// The module trees of the crates with these root files (lib.rs, main.rs, tests/x.rs...).
    pub fn build(sources: &Sources, roots: &[PathBuf]) -> Tree {
        let mut tree = Tree::default();
        for root in roots {
            let Some(text) = sources.get(root) else {
                tree.missing
                    .push(format!("{}: no such crate root", root.display()));
                continue;
            };
            let dir = root.parent().unwrap_or(Path::new("")).to_path_buf();
            let text = module_text(&tokens(text));
            tree.read.insert(root.clone());
            let place = Place {
                path: "crate".into(),
                parent: None,
                file: root.clone(),
                dir,
            };
            tree.add(sources, place, text);
        }
        tree
    }

    pub fn is_ancestor(&self, a: usize, mut b: usize) -> bool {
        while let Some(p) = self.modules[b].parent {
            if p == a {
                return true;
            }
            b = p;
        }
        false
    }

    fn add(&mut self, sources: &Sources, place: Place, mut text: ModuleText) -> usize {
        let id = self.modules.len();
        let root = place.parent.map_or(id, |p| self.modules[p].root);
        let children = std::mem::take(&mut text.children);
        for name in &text.test_children {
            self.read_test_files(sources, &place.dir.join(name));
        }
        self.modules.push(Module {
            path: place.path.clone(),
            parent: place.parent,
            root,
            file: place.file.clone(),
            children: BTreeMap::new(),
            text,
        });
        for child in children {
            let dir = place.dir.join(&child.name);
            let path = format!("{}::{}", place.path, child.name);
            let (file, text) = match child.inline {
                Some(text) => (place.file.clone(), text),
                None => {
                    let Some((file, text)) = find_file(sources, &dir) else {
                        let at = format!("{}:{}", place.file.display(), child.line);
                        self.missing
                            .push(format!("{at}: mod {} has no file", child.name));
                        continue;
                    };
                    let text = module_text(&tokens(text));
                    if text.is_test {
                        self.read_test_files(sources, &dir);
                        continue;
                    }
                    self.read.insert(file.clone());
                    (file, text)
                }
            };
            let child_place = Place {
                path,
                parent: Some(id),
                file,
                dir,
            };
            let c = self.add(sources, child_place, text);
            self.modules[id].children.insert(child.name, c);
        }
        id
    }

    /// A test module's file and everything below it are read as test code.
    fn read_test_files(&mut self, sources: &Sources, dir: &Path) {
        let file = dir.with_extension("rs");
        for f in sources.keys() {
            if *f == file || f.starts_with(dir) {
                self.read.insert(f.clone());
            }
        }
    }
}

/// Where a module is: its path, parent, file and the directory of its children's files.
struct Place {
    path: String,
    parent: Option<usize>,
    file: PathBuf,
    dir: PathBuf,
}

/// `dir.rs` or `dir/mod.rs`.
fn find_file<'a>(sources: &'a Sources, dir: &Path) -> Option<(PathBuf, &'a String)> {
    [dir.with_extension("rs"), dir.join("mod.rs")]
        .into_iter()
        .find_map(|f| sources.get(&f).map(|t| (f, t)))
}
