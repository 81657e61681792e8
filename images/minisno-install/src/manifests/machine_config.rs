//! The user's MachineConfigs: every YAML or JSON document in `manifests/` and `openshift/`
//! whose kind is MachineConfig and whose role label is `master` gives its Ignition file entries
//! (`spec.config.storage.files`) and systemd units (`spec.config.systemd.units`) to the
//! installed system's config, the way the machine-config operator renders MachineConfigs into a
//! node's config. Documents are taken in file-name order, `manifests/` first; a later entry for
//! the same path (or unit name) wins.

use std::path::Path;

use serde_json::Value;

use crate::assets::files;

pub const ROLE_LABEL: &str = "machineconfiguration.openshift.io/role";
/// The directories the real tool reads manifests from, and the endings it reads.
pub const DIRS: &[&str] = &["manifests", "openshift"];
pub const EXTENSIONS: &[&str] = &[".yaml", ".yml", ".json"];

/// Whether a document is a MachineConfig for the master role.
fn is_master_machine_config(doc: &Value) -> bool {
    doc["kind"] == "MachineConfig" && doc["metadata"]["labels"][ROLE_LABEL] == "master"
}

/// Where a MachineConfig holds its Ignition file entries and its units.
const FILES: &str = "/spec/config/storage/files";
const UNITS: &str = "/spec/config/systemd/units";

/// The entries at `pointer` of the master MachineConfigs in one file's text (one or more
/// documents).
fn entries_in(text: &str, pointer: &str) -> Result<Vec<Value>, String> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(text).map_err(|e| e.to_string())?;
    Ok(docs
        .iter()
        .filter(|d| is_master_machine_config(d))
        .flat_map(|d| {
            d.pointer(pointer)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .collect())
}

/// The file entries of the master MachineConfigs in one file's text.
pub fn files_in(text: &str) -> Result<Vec<Value>, String> {
    entries_in(text, FILES)
}

/// What the master MachineConfigs in `dir` give the installed system.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct MasterConfig {
    pub files: Vec<Value>,
    pub units: Vec<Value>,
}

/// Every master file entry and unit of the manifests in `dir`.
pub fn master_config(dir: &Path) -> Result<MasterConfig, String> {
    let mut out = MasterConfig::default();
    for sub in DIRS {
        for rel in files::list(dir, sub, EXTENSIONS)? {
            let text = std::fs::read_to_string(dir.join(&rel))
                .map_err(|e| format!("failed to read {rel}: {e}"))?;
            let bad = |e: String| format!("failed to parse {rel}: {e}");
            out.files.extend(entries_in(&text, FILES).map_err(bad)?);
            out.units.extend(entries_in(&text, UNITS).map_err(bad)?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTS_MC: &str = r#"apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  labels:
    machineconfiguration.openshift.io/role: master
  name: 99-sno-harness-dns-master
spec:
  config:
    ignition:
      version: 3.2.0
    storage:
      files:
      - path: /etc/hosts
        mode: 420
        overwrite: true
        contents:
          source: data:,10.0.2.15%20api-int.sno.example.test%0A
"#;

    #[test]
    fn only_master_machine_configs_count() {
        let files = files_in(HOSTS_MC).unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0]["path"], "/etc/hosts");
        assert_eq!(files[0]["overwrite"], true);
        let worker = HOSTS_MC.replace("role: master", "role: worker");
        assert!(files_in(&worker).unwrap().is_empty());
        let other = HOSTS_MC.replace("kind: MachineConfig", "kind: ConfigMap");
        assert!(files_in(&other).unwrap().is_empty());
        let two = format!(
            "{HOSTS_MC}---\n{}",
            HOSTS_MC.replace("/etc/hosts", "/etc/motd")
        );
        assert_eq!(files_in(&two).unwrap().len(), 2);
    }

    #[test]
    fn a_master_machine_configs_units_count_too() {
        let dir = tempfile::tempdir().unwrap();
        let with_unit = format!(
            "{HOSTS_MC}    systemd:\n      units:\n      - name: dnsmasq.service\n        enabled: true\n        contents: \"[Service]\\nExecStart=/usr/sbin/dnsmasq -k\\n\"\n"
        );
        files::write_new(dir.path(), "openshift/99-dns.yaml", with_unit.as_bytes()).unwrap();
        files::write_new(
            dir.path(),
            "openshift/99-worker.yaml",
            with_unit.replace("role: master", "role: worker").as_bytes(),
        )
        .unwrap();
        let got = master_config(dir.path()).unwrap();
        assert_eq!(got.files.len(), 1);
        assert_eq!(got.units.len(), 1);
        assert_eq!(got.units[0]["name"], "dnsmasq.service");
        assert_eq!(got.units[0]["enabled"], true);
    }

    #[test]
    fn both_directories_are_read_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        files::write_new(
            d,
            "openshift/99-b.yaml",
            HOSTS_MC.replace("/etc/hosts", "/etc/b").as_bytes(),
        )
        .unwrap();
        files::write_new(
            d,
            "openshift/99-a.yml",
            HOSTS_MC.replace("/etc/hosts", "/etc/a").as_bytes(),
        )
        .unwrap();
        files::write_new(d, "manifests/z.yaml", HOSTS_MC.as_bytes()).unwrap();
        files::write_new(d, "openshift/notes.txt", b"not a manifest").unwrap();
        let paths: Vec<Value> = master_config(d)
            .unwrap()
            .files
            .iter()
            .map(|f| f["path"].clone())
            .collect();
        assert_eq!(paths, ["/etc/hosts", "/etc/a", "/etc/b"]);
        files::write_new(d, "openshift/broken.yaml", b"kind: [").unwrap();
        assert!(master_config(d)
            .unwrap_err()
            .starts_with("failed to parse openshift/broken.yaml"));
    }
}
