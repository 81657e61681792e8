//! The merge of a host Ignition into master.ign, as the assisted agent applies the host's
//! overrides from the service (assisted-installer's `src/installer/installer.go`
//! updateSingleNodeIgnition, which uses Ignition's `config/merge`). Ignition's merge rule,
//! for the lists the harness supports (`scenario::files::host_ignition::MERGED_LISTS`): an
//! entry whose key (path or name) the parent does not have is appended; one it has is merged
//! into the parent's field by field, the child's fields winning, its keyed sub-lists
//! (a unit's dropins) merged the same way by name, and lists of plain values (a user's SSH
//! keys and groups) taking the child's values the parent lacks.

use serde_json::{Map, Value};

use crate::scenario::files::host_ignition::MERGED_LISTS;

/// What the merge added and changed, in words.
pub fn merge(master: &mut Value, host: &Value) -> Result<String, String> {
    let root = master
        .as_object_mut()
        .ok_or("master.ign is not a JSON object")?;
    let mut said = Vec::new();
    for (section, list, key) in MERGED_LISTS {
        let Some(entries) = host
            .pointer(&format!("/{section}/{list}"))
            .and_then(Value::as_array)
        else {
            continue;
        };
        let into = root
            .entry(*section)
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
            .ok_or_else(|| format!("master.ign's {section} is not an object"))?
            .entry(*list)
            .or_insert_with(|| Value::Array(Vec::new()))
            .as_array_mut()
            .ok_or_else(|| format!("master.ign's {section}.{list} is not a list"))?;
        let (added, merged) = merge_keyed(into, entries, key);
        said.push(format!("{section}.{list}: {added} added, {merged} merged"));
    }
    raise_version(root, host);
    Ok(said.join("; "))
}

/// Merges `entries` into `into` by `key`: how many were added and how many merged.
fn merge_keyed(into: &mut Vec<Value>, entries: &[Value], key: &str) -> (usize, usize) {
    let (mut added, mut merged) = (0, 0);
    for e in entries {
        match into
            .iter_mut()
            .find(|p| p.get(key).is_some() && p.get(key) == e.get(key))
        {
            Some(parent) => {
                merge_value(parent, e);
                merged += 1;
            }
            None => {
                into.push(e.clone());
                added += 1;
            }
        }
    }
    (added, merged)
}

/// The child's value merged into the parent's: objects field by field, lists of named objects
/// by name, lists of plain values as a union, anything else replaced.
fn merge_value(parent: &mut Value, child: &Value) {
    match (parent, child) {
        (Value::Object(p), Value::Object(c)) => {
            for (k, v) in c {
                match p.get_mut(k) {
                    Some(pv) => merge_value(pv, v),
                    None => {
                        p.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (Value::Array(p), Value::Array(c)) if c.iter().all(|e| e.get("name").is_some()) => {
            merge_keyed(p, c, "name");
        }
        (Value::Array(p), Value::Array(c)) if c.iter().all(|e| !e.is_object()) => {
            for v in c {
                if !p.contains(v) {
                    p.push(v.clone());
                }
            }
        }
        (p, c) => *p = c.clone(),
    }
}

/// The merged config's spec version is the later of the two, as Ignition's merge translates
/// both to the newer spec.
fn raise_version(root: &mut Map<String, Value>, host: &Value) {
    let version = |v: Option<&Value>| -> Vec<u64> {
        v.and_then(Value::as_str)
            .map(|s| s.split('.').map(|p| p.parse().unwrap_or(0)).collect())
            .unwrap_or_default()
    };
    let hosts = host.pointer("/ignition/version");
    let masters = root.get("ignition").and_then(|i| i.get("version"));
    if version(hosts) > version(masters) {
        if let (Some(Value::Object(ign)), Some(v)) = (root.get_mut("ignition"), hosts) {
            ign.insert("version".into(), v.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn master() -> Value {
        json!({
            "ignition": {"version": "3.2.0"},
            "storage": {"files": [
                {"path": "/etc/a", "mode": 420, "contents": {"source": "data:,old"}},
                {"path": "/var/lib/etcd/member/snap/db", "mode": 384}
            ]},
            "systemd": {"units": [
                {"name": "kubelet.service", "enabled": true, "contents": "[Unit]\n",
                 "dropins": [{"name": "10-a.conf", "contents": "a"}]}
            ]},
            "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": ["key-1"]}]}
        })
    }

    #[test]
    fn new_entries_are_appended_and_known_ones_merged_field_by_field() {
        let mut m = master();
        let host = json!({
            "ignition": {"version": "3.2.0"},
            "storage": {"files": [
                {"path": "/etc/a", "contents": {"source": "data:,new"}},
                {"path": "/etc/host-marker", "contents": {"source": "data:,host"}}
            ], "directories": [{"path": "/var/lib/host"}]},
            "systemd": {"units": [
                {"name": "kubelet.service", "dropins": [{"name": "20-b.conf", "contents": "b"}]},
                {"name": "host.service", "enabled": true}
            ]},
            "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": ["key-1", "key-2"]}]}
        });
        let said = merge(&mut m, &host).unwrap();
        assert_eq!(said, "storage.files: 1 added, 1 merged; storage.directories: 1 added, 0 merged; systemd.units: 1 added, 1 merged; passwd.users: 0 added, 1 merged");
        let files = m["storage"]["files"].as_array().unwrap();
        assert_eq!(files.len(), 3);
        // The child's contents win; the parent's mode stays.
        assert_eq!(
            files[0],
            json!({"path": "/etc/a", "mode": 420, "contents": {"source": "data:,new"}})
        );
        assert_eq!(files[2]["path"], "/etc/host-marker");
        let kubelet = &m["systemd"]["units"][0];
        assert_eq!(kubelet["contents"], "[Unit]\n");
        assert_eq!(kubelet["dropins"].as_array().unwrap().len(), 2);
        assert_eq!(m["systemd"]["units"][1]["name"], "host.service");
        assert_eq!(
            m["passwd"]["users"][0]["sshAuthorizedKeys"],
            json!(["key-1", "key-2"])
        );
        assert_eq!(
            m["storage"]["directories"],
            json!([{"path": "/var/lib/host"}])
        );
    }

    #[test]
    fn the_later_spec_version_is_kept() {
        let mut m = master();
        merge(&mut m, &json!({"ignition": {"version": "3.4.0"}})).unwrap();
        assert_eq!(m["ignition"]["version"], "3.4.0");
        merge(&mut m, &json!({"ignition": {"version": "3.1.0"}})).unwrap();
        assert_eq!(m["ignition"]["version"], "3.4.0");
    }

    #[test]
    fn a_master_of_the_wrong_shape_is_an_error() {
        let host =
            json!({"ignition": {"version": "3.2.0"}, "storage": {"files": [{"path": "/x"}]}});
        assert!(merge(&mut json!([]), &host).is_err());
        let mut bad = json!({"storage": {"files": {}}});
        assert_eq!(
            merge(&mut bad, &host).unwrap_err(),
            "master.ign's storage.files is not a list"
        );
    }
}
