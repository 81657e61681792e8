//! The assets of an install the harness did not make (`observe`): the SSH key that logs in, the
//! admin kubeconfig and the install-config the install used, read and checked by the command
//! line and handed to the run in place of its assets phase. They are secrets: the run keeps
//! them in its private directory (owner-only, outside the run directory, gone with the run) as
//! it keeps its own, so that the secrets scan of what it publishes looks for them too, and
//! nothing of them is published.

use std::path::{Path, PathBuf};

use crate::assets::Assets;
use crate::guest::ssh::SshKeyPair;

/// What an observed install was made with.
#[derive(Clone, PartialEq, Eq)]
pub struct Given {
    pub key: SshKeyPair,
    /// The admin kubeconfig's text.
    pub kubeconfig: String,
    /// The kubeadmin password, when the installer's asset directory has one (a secret the
    /// scan looks for).
    pub kubeadmin_password: Option<String>,
    /// The install-config as JSON text, as given (its pull secret in it).
    pub install_config: String,
    /// Where they came from, in words: `--assets DIR`, or the files given.
    pub from: String,
}

impl std::fmt::Debug for Given {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the secrets.
        f.debug_struct("Given")
            .field("from", &self.from)
            .finish_non_exhaustive()
    }
}

/// Where the given assets go in the run's private directory: where a run's own would be.
const KUBECONFIG: &str = "assets/auth/kubeconfig";
const KUBEADMIN_PASSWORD: &str = "assets/auth/kubeadmin-password";

impl Given {
    /// Writes the key and the kubeconfig into the run's private directory `private` (0600 in
    /// 0700 directories) and returns what the session reaches the machine with.
    pub fn place(&self, private: &Path) -> Result<(SshKeyPair, Assets), String> {
        let auth = private.join("assets/auth");
        for dir in [private.join("assets"), auth.clone()] {
            crate::util::private::create_dir_with_mode(&dir, crate::util::private::PRIVATE_DIR)
                .map_err(|e| format!("creating {}: {e}", dir.display()))?;
        }
        let write = |rel: &str, text: &str| {
            crate::assets::write_private(&private.join(rel), text.as_bytes())
                .map_err(|e| e.to_string())
        };
        write(super::artifacts::SSH_KEY_FILE, &self.key.private_openssh)?;
        write(KUBECONFIG, &self.kubeconfig)?;
        if let Some(p) = &self.kubeadmin_password {
            write(KUBEADMIN_PASSWORD, p)?;
        }
        let assets = Assets {
            dir: private.join("assets"),
            kubeconfig: private.join(KUBECONFIG),
            ignition: PathBuf::new(),
            live_iso: PathBuf::new(),
            rootfs: None,
            pxe: None,
            iso_source: format!("not the harness's: {}", self.from),
            iso_sha256: String::new(),
            installer: PathBuf::new(),
            installer_version: Default::default(),
            release_override: None,
            install_config: self.install_config_redacted(),
        };
        Ok((self.key.clone(), assets))
    }

    /// The install-config's pull secret, for the secrets scan.
    pub fn pull_secret(&self) -> Option<String> {
        let v: serde_json::Value = serde_json::from_str(&self.install_config).ok()?;
        v["pullSecret"].as_str().map(str::to_string)
    }

    /// The install-config as the checks compare the cluster with it: its pull secret left out.
    fn install_config_redacted(&self) -> serde_json::Value {
        let mut v: serde_json::Value =
            serde_json::from_str(&self.install_config).unwrap_or(serde_json::Value::Null);
        if v.get("pullSecret").is_some() {
            v["pullSecret"] = serde_json::Value::String("<redacted>".into());
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_given_secrets_go_owner_only_where_a_runs_own_would_be() {
        let d = tempfile::tempdir().unwrap();
        let given = Given {
            key: SshKeyPair::generate("t").unwrap(),
            kubeconfig: "apiVersion: v1\nkind: Config\n".into(),
            kubeadmin_password: Some("hunter2".into()),
            install_config: r#"{"metadata":{"name":"sno"},"pullSecret":"{\"auths\":{}}"}"#.into(),
            from: "--assets /x".into(),
        };
        let (key, assets) = given.place(d.path()).unwrap();
        assert_eq!(key, given.key);
        assert_eq!(assets.kubeconfig, d.path().join(KUBECONFIG));
        for rel in [
            super::super::artifacts::SSH_KEY_FILE,
            KUBECONFIG,
            KUBEADMIN_PASSWORD,
        ] {
            let mode = std::fs::metadata(d.path().join(rel))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{rel}");
        }
        let auth = std::fs::metadata(d.path().join("assets/auth")).unwrap();
        assert_eq!(auth.permissions().mode() & 0o777, 0o700);
        assert_eq!(assets.install_config["pullSecret"], "<redacted>");
        assert_eq!(assets.install_config["metadata"]["name"], "sno");
        assert_eq!(given.pull_secret().as_deref(), Some("{\"auths\":{}}"));
        assert!(!format!("{given:?}").contains("hunter2"));
    }
}
