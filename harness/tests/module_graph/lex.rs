//! Rust source as tokens with their lines. Comments (doc comments too), string and character
//! literals and lifetimes carry no import, so they are dropped or opaque; `::` is one token.

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tok {
    Ident(String),
    /// `::`
    PathSep,
    Punct(char),
    /// A string, character or number literal: its text never names a module.
    Lit,
}

#[derive(Debug, Clone)]
pub struct Token {
    pub tok: Tok,
    pub line: usize,
}

pub fn tokens(text: &str) -> Vec<Token> {
    let mut lx = Lexer {
        c: text.chars().collect(),
        i: 0,
        line: 1,
        out: Vec::new(),
    };
    while lx.i < lx.c.len() {
        lx.step();
    }
    lx.out
}

struct Lexer {
    c: Vec<char>,
    i: usize,
    line: usize,
    out: Vec<Token>,
}

fn ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

impl Lexer {
    fn at(&self, k: usize) -> char {
        self.c.get(self.i + k).copied().unwrap_or('\0')
    }

    /// Moves on `n` characters, counting the lines passed.
    fn bump(&mut self, n: usize) {
        for _ in 0..n {
            if self.at(0) == '\n' {
                self.line += 1;
            }
            self.i += 1;
        }
    }

    fn push(&mut self, tok: Tok, line: usize) {
        self.out.push(Token { tok, line });
    }

    fn step(&mut self) {
        let (c, line) = (self.at(0), self.line);
        match c {
            _ if c.is_whitespace() => self.bump(1),
            '/' if self.at(1) == '/' => {
                while self.i < self.c.len() && self.at(0) != '\n' {
                    self.bump(1);
                }
            }
            '/' if self.at(1) == '*' => self.block_comment(),
            '"' => self.string(line),
            '\'' => self.quote(line),
            'r' | 'b' | 'c' if self.literal_prefix() => self.prefixed_literal(line),
            'r' if self.at(1) == '#' && ident_start(self.at(2)) => {
                self.bump(2);
                self.ident(line);
            }
            _ if ident_start(c) => self.ident(line),
            _ if c.is_ascii_digit() => self.number(line),
            ':' if self.at(1) == ':' => {
                self.bump(2);
                self.push(Tok::PathSep, line);
            }
            _ => {
                self.bump(1);
                self.push(Tok::Punct(c), line);
            }
        }
    }

    fn block_comment(&mut self) {
        let mut depth = 0;
        while self.i < self.c.len() {
            if self.at(0) == '/' && self.at(1) == '*' {
                depth += 1;
                self.bump(2);
            } else if self.at(0) == '*' && self.at(1) == '/' {
                depth -= 1;
                self.bump(2);
                if depth == 0 {
                    return;
                }
            } else {
                self.bump(1);
            }
        }
    }

    /// `"..."` with its escapes.
    fn string(&mut self, line: usize) {
        self.bump(1);
        while self.i < self.c.len() && self.at(0) != '"' {
            self.bump(if self.at(0) == '\\' { 2 } else { 1 });
        }
        self.bump(1);
        self.push(Tok::Lit, line);
    }

    /// A character literal (`'a'`, `'\n'`, `'\u{1F600}'`) or a lifetime (`'a`, dropped).
    fn quote(&mut self, line: usize) {
        if self.at(1) == '\\' {
            self.bump(2);
            while self.i < self.c.len() && self.at(0) != '\'' {
                self.bump(1);
            }
            self.bump(1);
            self.push(Tok::Lit, line);
        } else if self.at(2) == '\'' {
            self.bump(3);
            self.push(Tok::Lit, line);
        } else {
            self.bump(1);
            while ident_char(self.at(0)) {
                self.bump(1);
            }
        }
    }

    /// Whether the `r`, `b`, `c`, `br` or `cr` here starts a literal rather than a name.
    fn literal_prefix(&self) -> bool {
        let mut k = 1;
        if matches!(self.at(0), 'b' | 'c') && self.at(1) == 'r' {
            k = 2;
        }
        let raw = self.at(k - 1) == 'r';
        match self.at(k) {
            '"' => true,
            '\'' => self.at(0) == 'b' && k == 1,
            '#' if raw => {
                let mut j = k;
                while self.at(j) == '#' {
                    j += 1;
                }
                self.at(j) == '"'
            }
            _ => false,
        }
    }

    fn prefixed_literal(&mut self, line: usize) {
        while matches!(self.at(0), 'r' | 'b' | 'c') {
            self.bump(1);
        }
        match self.at(0) {
            '\'' => self.quote(line),
            '"' if self.c[self.i - 1] != 'r' => self.string(line),
            _ => self.raw_string(line),
        }
    }

    /// `r#"..."#`: no escapes, ends at a quote followed by as many `#` as it opened with.
    fn raw_string(&mut self, line: usize) {
        let mut hashes = 0;
        while self.at(0) == '#' {
            hashes += 1;
            self.bump(1);
        }
        self.bump(1);
        while self.i < self.c.len() {
            if self.at(0) == '"' && (1..=hashes).all(|k| self.at(k) == '#') {
                self.bump(1 + hashes);
                break;
            }
            self.bump(1);
        }
        self.push(Tok::Lit, line);
    }

    fn ident(&mut self, line: usize) {
        let start = self.i;
        while ident_char(self.at(0)) {
            self.bump(1);
        }
        let name: String = self.c[start..self.i].iter().collect();
        self.push(Tok::Ident(name), line);
    }

    /// A number: digits, letters (suffixes, hex, exponents) and a `.` before a digit.
    fn number(&mut self, line: usize) {
        while ident_char(self.at(0)) || (self.at(0) == '.' && self.at(1).is_ascii_digit()) {
            self.bump(1);
        }
        self.push(Tok::Lit, line);
    }
}
