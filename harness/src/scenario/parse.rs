//! Reading and parsing a scenario file, then validating it. Every error names the file, the
//! line and what would be valid; nothing is started before a scenario is valid.

use std::path::Path;

use crate::util::input_file;

use super::error::{line_column, Ctx, ScenarioError};
use super::model::*;
use super::validate::validate;

/// Reads and validates a scenario file.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    parse_str(path, &read_text(path)?)
}

/// A scenario file's text: a regular file of at most 1 MiB, UTF-8.
pub(super) fn read_text(path: &Path) -> Result<String, ScenarioError> {
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
    Ok(text)
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
    let file: ScenarioFile = toml::from_str(text).map_err(|e| {
        let message = e.message().trim().replace('\n', "; ");
        let message = unknown_key::with_suggestion(&message, text, e.span());
        cx.err(e.span(), message)
    })?;
    validate(&cx, file)
}

mod unknown_key;

#[cfg(test)]
mod tests;
