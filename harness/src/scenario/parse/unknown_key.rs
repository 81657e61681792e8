//! An unknown key's refusal, made helpful: serde says "unknown field `firmwre`, expected one
//! of `vcpus`, ..."; this adds the table the key stands in and the known key it is likely a
//! typo of ("[vm]: unknown field `firmwre`, expected one of ...; did you mean `firmware`?").
//! serde's words stay whole: docs/scenario-format.md's test reads the list of keys from them.

use std::ops::Range;

/// `message` with the table and the closest known key added when it is serde's unknown-field
/// refusal; else `message` as it is.
pub(super) fn with_suggestion(message: &str, text: &str, span: Option<Range<usize>>) -> String {
    let Some((key, known)) = unknown_field(message) else {
        return message.to_string();
    };
    let table = span
        .and_then(|s| table_of(text, s.start, key))
        .map(|t| format!("{t}: "))
        .unwrap_or_default();
    let guess = closest(key, &known)
        .map(|k| format!("; did you mean `{k}`?"))
        .unwrap_or_default();
    format!("{table}{message}{guess}")
}

/// The unknown key and the keys serde lists as valid, from "unknown field `k`, expected one of
/// `a`, `b`" (or "expected `a` or `b`", "expected `a`").
fn unknown_field(message: &str) -> Option<(&str, Vec<&str>)> {
    let rest = message.strip_prefix("unknown field `")?;
    let (key, rest) = rest.split_once('`')?;
    let (_, expected) = rest.split_once("expected")?;
    let expected = expected.split(';').next().unwrap_or(expected);
    let known = expected.split('`').skip(1).step_by(2).collect();
    Some((key, known))
}

/// The known key nearest `key` by edit distance, if near enough to be a typo: at most a third
/// of the key's length (at least one edit), so that `zzz` gets no guess.
fn closest<'k>(key: &str, known: &[&'k str]) -> Option<&'k str> {
    let (distance, best) = known
        .iter()
        .map(|k| (strsim::levenshtein(key, k), *k))
        .min()?;
    (distance <= (best.chars().count() / 3).max(1)).then_some(best)
}

/// The table header (`[vm]`, `[[disks]]`) above the key at byte `at`, when the key starts its
/// line (a key in an inline table or a dotted key is not one of the table's own keys).
fn table_of(text: &str, at: usize, key: &str) -> Option<String> {
    let before = text.get(..at)?;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = text.get(line_start..)?.trim_start();
    let own = line
        .strip_prefix(key)
        .is_some_and(|rest| rest.trim_start().starts_with('='));
    if !own {
        return None;
    }
    let header = before[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))?;
    let end = if header.starts_with("[[") {
        header.find("]]").map(|i| i + 2)
    } else {
        header.find(']').map(|i| i + 1)
    }?;
    Some(header[..end].to_string())
}
