//! A bad scenario file's error: the file, the line and column of the offending text, and a
//! message that stays readable whatever the file holds.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::Spanned;

/// A bad scenario: where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    pub file: PathBuf,
    /// 1-based; None when the error is about the file as a whole.
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, "{}:{l}:{c}: {}", self.file.display(), self.message),
            (Some(l), None) => write!(f, "{}:{l}: {}", self.file.display(), self.message),
            _ => write!(f, "{}: {}", self.file.display(), self.message),
        }
    }
}

impl std::error::Error for ScenarioError {}

pub(crate) struct Ctx<'a> {
    pub(crate) file: &'a Path,
    pub(crate) text: &'a str,
}

impl Ctx<'_> {
    /// The error at `span` (None: the whole file), in the words of `message`: a typed
    /// error, or words of the parser's.
    pub(crate) fn err(
        &self,
        span: Option<Range<usize>>,
        message: impl fmt::Display,
    ) -> ScenarioError {
        let (line, column) = match span.filter(|s| s.end > 0 || s.start > 0) {
            Some(s) => {
                let (line, column) = line_column(self.text.as_bytes(), s.start);
                (Some(line), Some(column))
            }
            None => (None, None),
        };
        ScenarioError {
            file: self.file.to_path_buf(),
            line,
            column,
            message: shorten_long_words(&message.to_string()),
        }
    }

    pub(super) fn at<T>(&self, s: &Spanned<T>, message: impl fmt::Display) -> ScenarioError {
        self.err(Some(s.span()), message)
    }
}

/// 1-based line and column (in bytes) of byte `at`.
pub(super) fn line_column(bytes: &[u8], at: usize) -> (usize, usize) {
    let upto = &bytes[..at.min(bytes.len())];
    let line_start = upto.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let line = upto.iter().filter(|&&b| b == b'\n').count() + 1;
    (line, upto.len() - line_start + 1)
}

/// Messages quote what the file says; one pathological token (a megabyte-long key or value)
/// would bury what the message says around it.
pub(crate) fn shorten_long_words(message: &str) -> String {
    const LONG: usize = 120;
    if message.split(' ').all(|w| w.len() <= LONG) {
        return message.to_string();
    }
    message
        .split(' ')
        .map(|w| {
            if w.len() <= LONG {
                return w.to_string();
            }
            let mut head = 60;
            while !w.is_char_boundary(head) {
                head -= 1;
            }
            let mut tail = w.len() - 20;
            while !w.is_char_boundary(tail) {
                tail += 1;
            }
            format!("{}...({} bytes)...{}", &w[..head], w.len(), &w[tail..])
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_words_in_messages_are_cut_on_character_boundaries() {
        let word = "é".repeat(100);
        let m = shorten_long_words(&format!("unknown field `{word}`, expected `a`"));
        assert!(m.starts_with("unknown field `"), "{m}");
        assert!(m.contains("...(203 bytes)..."), "{m}");
        assert!(m.ends_with("`, expected `a`"), "{m}");
        assert_eq!(shorten_long_words("short words"), "short words");
    }
}
