//! The host Ignition of an assisted install (`[install.assisted] host_ignition`): what the
//! assisted service holds for the host and the agent merges into master.ign before it installs
//! (assisted-installer's `src/installer/installer.go` updateSingleNodeIgnition). It must be an
//! Ignition config of spec 3.x, and hold only what the harness's merge supports: entries of
//! `storage.files`, `storage.directories`, `storage.links` (by path), `systemd.units` (by
//! name) and `passwd.users` (by name). Anything else is refused here rather than dropped at
//! the merge. The agent empties the host config's `ignition.config` before its merge, so a
//! host Ignition that merges or replaces other configs has no meaning there either.

use std::path::Path;

use serde_json::Value;

use super::{read_text, FileError};

/// The lists the merge supports, as (section, list, the key its entries are merged by).
pub const MERGED_LISTS: &[(&str, &str, &str)] = &[
    ("storage", "files", "path"),
    ("storage", "directories", "path"),
    ("storage", "links", "path"),
    ("systemd", "units", "name"),
    ("passwd", "users", "name"),
];

const VALID: &str = "a host Ignition is a JSON object with ignition.version \"3.x.y\" and, besides it, only storage.files, storage.directories, storage.links (entries with a \"path\"), systemd.units and passwd.users (entries with a \"name\")";

/// The host Ignition at `path`, checked.
pub fn read_host_ignition(path: &Path) -> Result<Value, FileError> {
    let text = read_text(path, "host Ignition")?;
    check(&text).map_err(|(line, why)| FileError::AtLine {
        path: path.to_path_buf(),
        line,
        why,
    })
}

/// The config, or the line of what is wrong and why.
pub fn check(text: &str) -> Result<Value, (usize, String)> {
    let v: Value = serde_json::from_str(text)
        .map_err(|e| (e.line().max(1), format!("not JSON ({e}): {VALID}")))?;
    let top = v
        .as_object()
        .ok_or((1, format!("not a JSON object: {VALID}")))?;
    check_version(text, &v)?;
    for (key, value) in top {
        let lists: Vec<&str> = MERGED_LISTS
            .iter()
            .filter(|(s, _, _)| s == key)
            .map(|(_, l, _)| *l)
            .collect();
        match key.as_str() {
            "ignition" => {
                if let Some(other) = value
                    .as_object()
                    .and_then(|o| o.keys().find(|k| *k != "version"))
                {
                    return Err(refused(text, other, &format!("ignition.{other}")));
                }
            }
            _ if lists.is_empty() => return Err(refused(text, key, key)),
            _ => check_section(text, key, value, &lists)?,
        }
    }
    Ok(v)
}

/// `ignition.version` is a 3.x spec version.
fn check_version(text: &str, v: &Value) -> Result<(), (usize, String)> {
    let version = v.pointer("/ignition/version").and_then(Value::as_str);
    let ok = version.is_some_and(|s| {
        let mut parts = s.split('.');
        parts.next() == Some("3")
            && parts
                .next()
                .is_some_and(|m| !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit()))
    });
    if ok {
        return Ok(());
    }
    let said = version.map_or("none".to_string(), |s| format!("{s:?}"));
    Err((
        line_of(text, "version"),
        format!("ignition.version is {said}; the merge takes spec 3.x (e.g. \"3.2.0\"): {VALID}"),
    ))
}

/// A section of the merged ones: only its supported lists, each a list of objects with their
/// key as a string.
fn check_section(
    text: &str,
    section: &str,
    value: &Value,
    lists: &[&str],
) -> Result<(), (usize, String)> {
    let obj = value.as_object().ok_or((
        line_of(text, section),
        format!("{section} is not an object: {VALID}"),
    ))?;
    for (list, entries) in obj {
        if !lists.contains(&list.as_str()) {
            return Err(refused(text, list, &format!("{section}.{list}")));
        }
        let key = MERGED_LISTS
            .iter()
            .find(|(s, l, _)| *s == section && l == list)
            .map(|(_, _, k)| *k)
            .expect("a merged list");
        let ok = entries.as_array().is_some_and(|a| {
            a.iter().all(|e| {
                e.get(key)
                    .and_then(Value::as_str)
                    .is_some_and(|k| !k.is_empty())
            })
        });
        if !ok {
            return Err((
                line_of(text, list),
                format!("{section}.{list} must be a list of objects each with a {key:?}: {VALID}"),
            ));
        }
    }
    Ok(())
}

fn refused(text: &str, key: &str, full: &str) -> (usize, String) {
    (
        line_of(text, key),
        format!("{full} is not merged by the harness: {VALID}"),
    )
}

/// The line where `"key"` first appears (1 when it does not): serde_json's values carry no
/// position, and a message that points near the key is better than none.
fn line_of(text: &str, key: &str) -> usize {
    let needle = format!("\"{key}\"");
    text.find(&needle)
        .map_or(1, |at| text[..at].matches('\n').count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_supported_lists_pass() {
        let text = r#"{
  "ignition": {"version": "3.2.0"},
  "storage": {"files": [{"path": "/etc/host-marker", "contents": {"source": "data:,x"}}],
              "directories": [{"path": "/var/lib/x"}], "links": [{"path": "/etc/l", "target": "/x"}]},
  "systemd": {"units": [{"name": "host.service", "enabled": true}]},
  "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 AAAA"]}]}
}"#;
        assert!(check(text).is_ok());
    }

    #[test]
    fn a_version_other_than_3_is_refused_at_its_line() {
        let text = "{\n  \"ignition\": {\n    \"version\": \"2.2.0\"\n  }\n}";
        let (line, why) = check(text).unwrap_err();
        assert_eq!(line, 3);
        assert!(why.contains("ignition.version is \"2.2.0\""), "{why}");
        let (_, why) = check("{\"storage\": {}}").unwrap_err();
        assert!(why.contains("ignition.version is none"), "{why}");
        assert!(check("{\"ignition\": {\"version\": \"3.\"}}").is_err());
    }

    #[test]
    fn what_the_merge_does_not_take_is_named() {
        let text = "{\"ignition\": {\"version\": \"3.2.0\"},\n \"storage\": {\"disks\": []}}";
        let (line, why) = check(text).unwrap_err();
        assert_eq!(
            (line, why.starts_with("storage.disks is not merged")),
            (2, true),
            "{why}"
        );
        let text = "{\"ignition\": {\"version\": \"3.2.0\", \"config\": {\"merge\": []}}}";
        assert!(check(text)
            .unwrap_err()
            .1
            .starts_with("ignition.config is not merged"));
        let text = "{\"ignition\": {\"version\": \"3.2.0\"}, \"kernelArguments\": {}}";
        assert!(check(text)
            .unwrap_err()
            .1
            .starts_with("kernelArguments is not merged"));
    }

    #[test]
    fn entries_need_their_key_and_bad_json_names_its_line() {
        let text = "{\"ignition\": {\"version\": \"3.2.0\"}, \"systemd\": {\"units\": [{\"enabled\": true}]}}";
        assert!(check(text).unwrap_err().1.contains("each with a \"name\""));
        let (line, why) = check("{\n\"ignition\": \n}").unwrap_err();
        assert_eq!(line, 3);
        assert!(why.starts_with("not JSON"), "{why}");
        assert!(check("[]").unwrap_err().1.starts_with("not a JSON object"));
    }
}
