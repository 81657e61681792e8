//! The user's MachineConfigs: every YAML or JSON document in `manifests/` and `openshift/`
//! whose kind is MachineConfig and whose role label is `master` gives its Ignition file entries
//! (`spec.config.storage.files`) to the installed system's config, the way the machine-config
//! operator renders MachineConfigs into a node's config. Documents are taken in file-name order,
//! `manifests/` first; a later entry for the same path wins.

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

/// The file entries of the master MachineConfigs in one file's text (one or more documents).
pub fn files_in(text: &str) -> Result<Vec<Value>, String> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(text).map_err(|e| e.to_string())?;
    Ok(docs
        .iter()
        .filter(|d| is_master_machine_config(d))
        .flat_map(|d| {
            d["spec"]["config"]["storage"]["files"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .collect())
}

/// Every master file entry of the manifests in `dir`.
pub fn master_files(dir: &Path) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for sub in DIRS {
        for rel in files::list(dir, sub, EXTENSIONS)? {
            let text = std::fs::read_to_string(dir.join(&rel))
                .map_err(|e| format!("failed to read {rel}: {e}"))?;
            out.extend(files_in(&text).map_err(|e| format!("failed to parse {rel}: {e}"))?);
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
        let paths: Vec<Value> = master_files(d)
            .unwrap()
            .iter()
            .map(|f| f["path"].clone())
            .collect();
        assert_eq!(paths, ["/etc/hosts", "/etc/a", "/etc/b"]);
        files::write_new(d, "openshift/broken.yaml", b"kind: [").unwrap();
        assert!(master_files(d)
            .unwrap_err()
            .starts_with("failed to parse openshift/broken.yaml"));
    }
}
