//! What may name a scenario or a permutation: each becomes a directory inside `--out`.

use toml::Spanned;

use super::error::{Ctx, ScenarioError};

/// Names become directory names (and parts of permutation ids): well under the 255 bytes a
/// file name may have.
pub(crate) const MAX_NAME_LEN: usize = 100;

/// A permutation id is its values' labels joined with '.': a directory name too, so under the
/// 255 bytes a file name may have.
pub(crate) const MAX_PERMUTATION_ID_LEN: usize = 250;

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

/// Why `id` cannot be a permutation's id, if it cannot: what a matrix makes (labels of
/// `[A-Za-z0-9_-]` joined with '.', see matrix/ids.rs) and nothing else, so that it is one
/// path component inside `--out`: no '/', no empty part (".", "..", "a..b", a hidden name),
/// and no reserved report name. Ids read back from files (`report --merge`) are checked
/// with it before one names a directory.
pub fn permutation_id_problem(id: &str) -> Option<String> {
    let part_ok = |p: &str| {
        !p.is_empty()
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    };
    if id.len() > MAX_PERMUTATION_ID_LEN || !id.split('.').all(part_ok) {
        return Some(format!(
            "is not a permutation id: one directory name of 1 to {MAX_PERMUTATION_ID_LEN} characters, parts of letters, digits, '-' and '_' joined by single dots (such as virtio.4k.uefi)"
        ));
    }
    if RESERVED_NAMES.contains(&id) {
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
mod tests {
    use super::*;

    #[test]
    fn permutation_ids_are_one_safe_directory_name() {
        for ok in ["virtio.4k.uefi.by-id", "-1", "A_b", "x", &"a".repeat(250)] {
            assert_eq!(permutation_id_problem(ok), None, "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            "../x",
            "a..b",
            ".hidden",
            "a.",
            "/etc",
            "a/b",
            "a b",
            "é",
            "a\0",
            &"a".repeat(251),
        ] {
            assert!(permutation_id_problem(bad).is_some(), "{bad:?}");
        }
        let why = permutation_id_problem("summary.json").unwrap();
        assert!(why.contains("report"), "{why}");
    }
}
