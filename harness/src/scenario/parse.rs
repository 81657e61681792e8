//! Parsing and validating a scenario file. Every error names the file, the line and what would
//! be valid; nothing is started before a scenario is valid.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::Spanned;

use crate::util::input_file;

use super::model::*;
use super::validate::validate;

/// Names become directory names (and parts of permutation ids): well under the 255 bytes a
/// file name may have.
pub(crate) const MAX_NAME_LEN: usize = 100;
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
    pub(crate) fn err(
        &self,
        span: Option<Range<usize>>,
        message: impl Into<String>,
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
            message: shorten_long_words(&message.into()),
        }
    }

    pub(super) fn at<T>(&self, s: &Spanned<T>, message: impl Into<String>) -> ScenarioError {
        self.err(Some(s.span()), message)
    }
}

/// 1-based line and column (in bytes) of byte `at`.
fn line_column(bytes: &[u8], at: usize) -> (usize, usize) {
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

/// Reads and validates a scenario file.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let whole_file = |message: String| ScenarioError {
        file: path.to_path_buf(),
        line: None,
        column: None,
        message,
    };
    // A device or FIFO would be read forever, or block, and a huge file would take the
    // host's memory: only a regular file of at most 1 MiB is a scenario.
    let bytes = input_file::read_bytes(path, input_file::SCENARIO).map_err(|e| {
        let hint = match e.problem {
            input_file::Problem::NotRegular { .. } => "; a scenario is a TOML file",
            _ => "",
        };
        whole_file(format!("cannot read the scenario: {}{hint}", e.problem))
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let (line, column) = line_column(e.as_bytes(), at);
        ScenarioError {
            file: path.to_path_buf(),
            line: Some(line),
            column: Some(column),
            message: format!(
                "byte 0x{:02x} is not UTF-8: a scenario is a TOML file, which is UTF-8 text",
                e.as_bytes()[at]
            ),
        }
    })?;
    parse_str(path, &text)
}

pub fn parse_str(path: &Path, text: &str) -> Result<Scenario, ScenarioError> {
    let cx = Ctx { file: path, text };
    // TOML forbids control characters anyway; saying so beats the parser's guess at a key.
    if let Some(at) = text.find('\0') {
        return Err(cx.err(
            Some(at..at + 1),
            "a NUL byte: this is not a text file; a scenario is a TOML text file (name = ..., profile = ..., [[disks]] ...)",
        ));
    }
    let file: ScenarioFile = toml::from_str(text)
        .map_err(|e| cx.err(e.span(), e.message().trim().replace('\n', "; ")))?;
    validate(&cx, file)
}

/// Files the harness writes into `--out` beside the run directories (a matrix's merged
/// reports, a perf run's): a run named like one would overwrite it, or be overwritten.
pub(crate) const RESERVED_NAMES: &[&str] = &[
    "summary.json",
    "summary.md",
    "junit.xml",
    "report.html",
    "perf.json",
    "perf.md",
    crate::util::harness_log::HARNESS_LOG_FILE,
];

/// Why `name` cannot name a run directory of its own inside `--out`, if it cannot: one path
/// component of safe characters, neither `.`, `..` nor hidden, and no reserved report name.
pub(crate) fn name_problem(name: &str) -> Option<String> {
    let chars_ok = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.' || c == '_');
    if name.is_empty() || name.len() > MAX_NAME_LEN || !chars_ok {
        return Some(format!(
            "must be 1 to {MAX_NAME_LEN} lowercase letters, digits, '-', '.' or '_'"
        ));
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit()) {
        return Some("must start with a lowercase letter or a digit: it names a directory inside --out, so \".\", \"..\" and hidden names are refused".into());
    }
    if RESERVED_NAMES.contains(&name) {
        return Some(format!(
            "is the name of a report the harness writes beside the run directories ({})",
            RESERVED_NAMES.join(", ")
        ));
    }
    None
}

pub(super) fn check_name(cx: &Ctx, what: &str, s: &Spanned<String>) -> Result<(), ScenarioError> {
    match name_problem(s.get_ref()) {
        None => Ok(()),
        Some(why) => Err(cx.at(s, format!("{what} {:?} {why}", s.get_ref()))),
    }
}

#[cfg(test)]
mod tests;
