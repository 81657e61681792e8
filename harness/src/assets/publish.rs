//! What the run directory keeps of the installer's asset directory, which itself stays in the
//! run's private directory: the installer's log with every secret taken out, each Ignition
//! config with its file contents replaced by their size (the shape a reader of a failed install
//! needs: which files, units, users), `metadata.json` (cluster name and ids, nothing secret),
//! and `private.txt` saying where the real ones are. Everything else the installer made
//! (`auth/`, the state file, the install-config it consumed) is not copied.

use std::fs;
use std::io;
use std::path::Path;

use crate::secrets::Secrets;

/// The note in the published assets/ that names the private originals.
pub const PRIVATE_NOTE: &str = "private.txt";

/// Writes the redacted copies of what `private_assets` holds into `published` (created). A
/// file that cannot be read is skipped; a file that cannot be written is an error.
pub fn redacted_copies(
    private_assets: &Path,
    published: &Path,
    secrets: &Secrets,
) -> io::Result<()> {
    fs::create_dir_all(published)?;
    let entries = match fs::read_dir(private_assets) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let mut names: Vec<String> = Vec::new();
    for e in entries.flatten() {
        if e.file_type().is_ok_and(|t| t.is_file()) {
            names.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    names.sort();
    for name in &names {
        let from = private_assets.join(name);
        let Some(copy) = redacted(name, &from, secrets) else {
            continue;
        };
        fs::write(published.join(name), copy)?;
    }
    fs::write(published.join(PRIVATE_NOTE), note(private_assets, &names))
}

/// The redacted copy of one of the installer's files; `None` for a file not published, one
/// that cannot be read, and an Ignition config that cannot be redacted.
fn redacted(name: &str, from: &Path, secrets: &Secrets) -> Option<Vec<u8>> {
    let text = |b: Vec<u8>| secrets.redact(&String::from_utf8_lossy(&b)).into_bytes();
    if name.ends_with(".ign") {
        return crate::secrets::ignition::redacted(&fs::read(from).ok()?).ok();
    }
    if name.ends_with(".log") || name == "metadata.json" {
        return fs::read(from).ok().map(text);
    }
    None
}

fn note(private_assets: &Path, names: &[String]) -> String {
    format!(
        "The installer's asset directory of this run is {} (the run's private directory, \
         outside the published run directory; removed when the run ended unless it was kept).\n\
         It held: {}.\n\
         Here are copies without secrets: the Ignition configs with every file's contents \
         replaced by its size, the installer's log with secrets and private keys taken out, and \
         metadata.json. auth/ (the admin kubeconfig, the kubeadmin password), the installer's \
         state file and the install-config it consumed are not copied; ../install-config.yaml \
         is the redacted install-config.\n",
        private_assets.display(),
        if names.is_empty() {
            "nothing".to_string()
        } else {
            names.join(", ") + ", auth/"
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_redacted_copies_and_a_note_are_published() {
        let t = tempfile::tempdir().unwrap();
        let (private, public) = (t.path().join("private"), t.path().join("public"));
        fs::create_dir_all(private.join("auth")).unwrap();
        let password = "kubeadmin-pass-12345-abcde";
        fs::write(private.join("auth/kubeadmin-password"), password).unwrap();
        let ign = r#"{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/root/.docker/config.json","contents":{"source":"data:,%7B%22auths%22%3A%7B%7D%7D"}}]}}"#;
        fs::write(private.join("bootstrap-in-place-for-live-iso.ign"), ign).unwrap();
        let log = format!("level=info msg=\"password {password}\"\n-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n");
        fs::write(private.join("installer.log"), log).unwrap();
        fs::write(
            private.join(".openshift_install_state.json"),
            "{\"pullSecret\":\"x\"}",
        )
        .unwrap();
        fs::write(private.join("metadata.json"), r#"{"clusterName":"sno"}"#).unwrap();
        let mut secrets = Secrets::default();
        secrets.add_private_dir(t.path().join("nowhere").as_path());
        secrets.add("the kubeadmin password", password);
        redacted_copies(&private, &public, &secrets).unwrap();
        let mut names: Vec<String> = fs::read_dir(&public)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "bootstrap-in-place-for-live-iso.ign",
                "installer.log",
                "metadata.json",
                "private.txt"
            ]
        );
        assert!(
            secrets.scan(&public).is_empty(),
            "{:?}",
            secrets.scan(&public)
        );
        let ign = fs::read_to_string(public.join("bootstrap-in-place-for-live-iso.ign")).unwrap();
        assert!(
            ign.contains("/root/.docker/config.json") && !ign.contains("auths"),
            "{ign}"
        );
        let note = fs::read_to_string(public.join(PRIVATE_NOTE)).unwrap();
        assert!(note.contains(&private.display().to_string()), "{note}");
    }
}
