//! What one module's text declares and names: its child modules (`mod x;` and inline
//! `mod x { .. }`), its `use` bindings, every path in its code, the macros it defines and
//! calls, the names of the items it defines. Test code is left out: an item under
//! `#[cfg(test)]`, `#[test]` or `#[<runner>::test]`, so a `#[cfg(test)] mod tests;` too
//! (its name is kept, to account for its file).

use super::lex::{Tok, Token};
use std::collections::BTreeSet;

#[derive(Debug, Default)]
pub struct ModuleText {
    pub children: Vec<Child>,
    /// Names of child modules that are test code (`#[cfg(test)] mod tests;`).
    pub test_children: Vec<String>,
    pub uses: Vec<Use>,
    pub paths: Vec<PathRef>,
    pub macro_defs: Vec<String>,
    pub macro_calls: Vec<(String, usize)>,
    /// Names of the items it defines (functions, types, constants...).
    pub defined: BTreeSet<String>,
    /// `#![cfg(test)]` at its top: the whole module is test code.
    pub is_test: bool,
}

#[derive(Debug)]
pub struct Child {
    pub name: String,
    pub line: usize,
    /// `Some` for an inline `mod x { .. }`, `None` for `mod x;` (a file of its own).
    pub inline: Option<ModuleText>,
}

/// One leaf of a `use` tree: the path it names and the name it binds.
#[derive(Debug, Clone)]
pub struct Use {
    pub path: Vec<String>,
    pub bind: Bind,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bind {
    Name(String),
    Glob,
    /// `as _`
    Nothing,
}

#[derive(Debug, Clone)]
pub struct PathRef {
    pub segs: Vec<String>,
    pub line: usize,
}

const ITEM_KEYWORDS: &[&str] = &[
    "fn", "struct", "enum", "trait", "type", "union", "static", "const",
];

pub fn module_text(toks: &[Token]) -> ModuleText {
    let mut p = Parser { t: toks, i: 0 };
    p.body(false)
}

struct Parser<'a> {
    t: &'a [Token],
    i: usize,
}

impl<'a> Parser<'a> {
    fn tok(&self, k: usize) -> Option<&'a Tok> {
        self.t.get(self.i + k).map(|t| &t.tok)
    }

    fn is_ident(&self, k: usize, s: &str) -> bool {
        matches!(self.tok(k), Some(Tok::Ident(x)) if x == s)
    }

    fn is_punct(&self, k: usize, c: char) -> bool {
        self.tok(k) == Some(&Tok::Punct(c))
    }

    fn ident(&self, k: usize) -> Option<String> {
        match self.tok(k) {
            Some(Tok::Ident(x)) => Some(x.clone()),
            _ => None,
        }
    }

    fn line(&self) -> usize {
        self.t.get(self.i).or(self.t.last()).map_or(0, |t| t.line)
    }

    /// A module's body up to its end: the text's end, or the `}` closing an inline module.
    fn body(&mut self, inline: bool) -> ModuleText {
        let mut m = ModuleText::default();
        let mut depth = 0usize;
        while let Some(tok) = self.tok(0) {
            match tok {
                Tok::Punct('}') if depth == 0 && inline => {
                    self.i += 1;
                    break;
                }
                Tok::Punct('{') => depth += 1,
                Tok::Punct('}') => depth = depth.saturating_sub(1),
                Tok::Punct('#') => {
                    self.attributes(&mut m);
                    continue;
                }
                Tok::Ident(s) if self.word(s, &mut m) => continue,
                Tok::Punct('$')
                    if self.is_ident(1, "crate") && self.tok(2) == Some(&Tok::PathSep) =>
                {
                    self.i += 1;
                    self.path(&mut m);
                    continue;
                }
                _ => {}
            }
            self.i += 1;
        }
        m
    }

    /// Handles the name at the cursor; true when it moved the cursor itself.
    fn word(&mut self, s: &str, m: &mut ModuleText) -> bool {
        let after_sep = self.i > 0 && self.t[self.i - 1].tok == Tok::PathSep;
        match s {
            "mod" if self.ident(1).is_some() => self.module(m),
            "use" if !self.is_punct(1, '<') => self.use_decl(m),
            "pub" if self.is_punct(1, '(') => self.skip_group(1),
            "macro_rules" if self.is_punct(1, '!') => {
                if let Some(name) = self.ident(2) {
                    m.macro_defs.push(name);
                }
                self.i += 3;
            }
            _ if ITEM_KEYWORDS.contains(&s) => {
                if let Some(name) = self
                    .ident(1)
                    .filter(|n| !ITEM_KEYWORDS.contains(&n.as_str()))
                {
                    let name = if name == "mut" {
                        self.ident(2).unwrap_or(name)
                    } else {
                        name
                    };
                    m.defined.insert(name);
                }
                return false;
            }
            _ if self.tok(1) == Some(&Tok::PathSep) && !after_sep => self.path(m),
            _ if self.is_punct(1, '!') && self.is_open(2) => {
                m.macro_calls.push((s.to_string(), self.line()));
                return false;
            }
            _ => return false,
        }
        true
    }

    fn is_open(&self, k: usize) -> bool {
        self.is_punct(k, '(') || self.is_punct(k, '[') || self.is_punct(k, '{')
    }

    /// Skips the bracketed group opening `k` tokens ahead, and what comes before it.
    fn skip_group(&mut self, k: usize) {
        self.i += k;
        let mut depth = 0usize;
        while let Some(tok) = self.tok(0) {
            self.i += 1;
            match tok {
                Tok::Punct('(' | '[' | '{') => depth += 1,
                Tok::Punct(')' | ']' | '}') => {
                    depth -= 1;
                    if depth == 0 {
                        return;
                    }
                }
                _ => {}
            }
        }
    }

    /// `#[..]` or `#![..]`: a test attribute leaves out the item it is on (or, inner, the
    /// whole module); the others name nothing this check follows.
    fn attributes(&mut self, m: &mut ModuleText) {
        let inner = self.is_punct(1, '!');
        let open = if inner { 2 } else { 1 };
        if !self.is_punct(open, '[') {
            self.i += 1;
            return;
        }
        let start = self.i + open + 1;
        self.skip_group(open);
        let words: Vec<&Tok> = self.t[start..self.i - 1].iter().map(|t| &t.tok).collect();
        if is_test_attribute(&words) {
            if inner {
                m.is_test = true;
            } else {
                self.skip_item(m);
            }
        }
    }

    /// Skips one item (with any further attributes): up to a `;` or the `}` that closes
    /// its body. A `mod x` it declares is noted as a test child.
    fn skip_item(&mut self, m: &mut ModuleText) {
        let mut depth = 0usize;
        while let Some(tok) = self.tok(0) {
            self.i += 1;
            match tok {
                Tok::Ident(s) if s == "mod" && depth == 0 => {
                    if let Some(name) = self.ident(0) {
                        m.test_children.push(name);
                    }
                }
                Tok::Punct('(' | '[' | '{') => depth += 1,
                Tok::Punct(')' | ']') => depth = depth.saturating_sub(1),
                Tok::Punct('}') => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        if self.is_punct(0, ';') {
                            self.i += 1;
                        }
                        return;
                    }
                }
                Tok::Punct(';') if depth == 0 => return,
                _ => {}
            }
        }
    }

    /// `mod x;` or `mod x { .. }`.
    fn module(&mut self, m: &mut ModuleText) {
        let line = self.t[self.i].line;
        let name = self.ident(1).unwrap_or_default();
        self.i += 2;
        let inline = if self.is_punct(0, '{') {
            self.i += 1;
            Some(self.body(true))
        } else {
            None
        };
        m.children.push(Child { name, line, inline });
    }

    /// A path in code: `a::b::c`, up to its last name (`::<T>` and what follows end it).
    fn path(&mut self, m: &mut ModuleText) {
        let line = self.line();
        let mut segs = vec![self.ident(0).unwrap_or_default()];
        self.i += 1;
        while self.tok(0) == Some(&Tok::PathSep) {
            let Some(next) = self.ident(1) else { break };
            segs.push(next);
            self.i += 2;
        }
        m.paths.push(PathRef { segs, line });
    }

    /// `use tree;`: every leaf of the tree.
    fn use_decl(&mut self, m: &mut ModuleText) {
        self.i += 1;
        self.use_tree(Vec::new(), &mut m.uses);
        while let Some(tok) = self.tok(0) {
            self.i += 1;
            if tok == &Tok::Punct(';') {
                break;
            }
        }
    }

    fn use_tree(&mut self, mut segs: Vec<String>, out: &mut Vec<Use>) {
        loop {
            let line = self.line();
            match self.tok(0) {
                Some(Tok::PathSep) => self.i += 1,
                Some(Tok::Punct('$')) => self.i += 1,
                Some(Tok::Punct('*')) => {
                    self.i += 1;
                    out.push(Use {
                        path: segs,
                        bind: Bind::Glob,
                        line,
                    });
                    return;
                }
                Some(Tok::Punct('{')) => {
                    self.i += 1;
                    while !self.is_punct(0, '}') && self.tok(0).is_some() {
                        self.use_tree(segs.clone(), out);
                        if self.is_punct(0, ',') {
                            self.i += 1;
                        }
                    }
                    self.i += 1;
                    return;
                }
                Some(Tok::Ident(s)) => {
                    segs.push(s.clone());
                    self.i += 1;
                    if self.tok(0) != Some(&Tok::PathSep) {
                        out.push(self.use_leaf(segs, line));
                        return;
                    }
                }
                _ => return,
            }
        }
    }

    /// The end of a `use` path, with its `as name` if any; `a::{self}` binds `a`.
    fn use_leaf(&mut self, mut path: Vec<String>, line: usize) -> Use {
        if path.last().is_some_and(|s| s == "self") && path.len() > 1 {
            path.pop();
        }
        let mut bind = Bind::Name(path.last().cloned().unwrap_or_default());
        if self.is_ident(0, "as") {
            bind = match self.ident(1) {
                Some(alias) if alias != "_" => Bind::Name(alias),
                _ => Bind::Nothing,
            };
            self.i += 2;
        }
        Use { path, bind, line }
    }
}

/// `test`, `tokio::test` and the like, `cfg(test)`, `cfg(all(test, ..))`.
fn is_test_attribute(words: &[&Tok]) -> bool {
    let name = |k: usize, s: &str| matches!(words.get(k), Some(Tok::Ident(x)) if x == s);
    let is_runner_test = words
        .iter()
        .rposition(|t| **t == Tok::PathSep)
        .is_some_and(|k| k + 2 == words.len() && name(k + 1, "test"));
    if words.iter().any(|t| **t == Tok::Ident("not".into())) {
        return false;
    }
    (words.len() == 1 && name(0, "test"))
        || is_runner_test
        || (words.len() == 4 && name(0, "cfg") && name(2, "test"))
        || (name(0, "cfg")
            && name(2, "all")
            && words.iter().any(|t| **t == Tok::Ident("test".into())))
}
