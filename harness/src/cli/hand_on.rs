//! Handing a passing run's cluster on: the admin kubeconfig written where the user or the next
//! CI step looks for it (`--kubeconfig-out PATH`, `$SHARED_DIR/kubeconfig` in OpenShift CI's
//! step registry).

use std::path::{Path, PathBuf};

use sno_harness::run::FORWARDED_KUBECONFIG;
use sno_harness::util::private::PRIVATE_FILE;
use sno_harness::util::replace_file::replace_file;

/// Where the kubeconfig goes, each with what named it (for the messages).
pub struct HandOn {
    targets: Vec<(PathBuf, &'static str)>,
}

impl HandOn {
    /// `--kubeconfig-out`, and `$SHARED_DIR/kubeconfig` when SHARED_DIR is set and not empty.
    pub fn wanted(out: Option<PathBuf>) -> HandOn {
        let shared = std::env::var_os("SHARED_DIR")
            .filter(|v| !v.is_empty())
            .map(|d| PathBuf::from(d).join("kubeconfig"));
        let out = out.map(|p| (p, "--kubeconfig-out"));
        let shared = shared.map(|p| (p, "$SHARED_DIR"));
        HandOn {
            targets: out.into_iter().chain(shared).collect(),
        }
    }

    /// Refuses, before the run, a target that could not be written after it: its directory
    /// must exist, and the path must not be a directory or anything but a regular file.
    pub fn check(&self) -> Result<(), String> {
        for (t, named_by) in &self.targets {
            let parent = match t.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            if !parent.is_dir() {
                return Err(format!(
                    "{named_by}: the kubeconfig's directory {} does not exist",
                    parent.display()
                ));
            }
            if let Ok(meta) = std::fs::symlink_metadata(t) {
                if !meta.is_file() {
                    return Err(format!(
                        "{named_by}: {} exists and is not a regular file",
                        t.display()
                    ));
                }
            }
        }
        Ok(())
    }

    /// Copies the run's forwarded kubeconfig to every target (0600, replaced whole), and says
    /// where it went and whether the cluster is still there to reach.
    pub fn write(&self, run_dir: &Path, vm_left_running: Option<u32>) -> Result<(), String> {
        if self.targets.is_empty() {
            return Ok(());
        }
        let source = run_dir.join(FORWARDED_KUBECONFIG);
        let text = std::fs::read(&source).map_err(|e| {
            format!(
                "the run passed but its kubeconfig cannot be handed on: {}: {e}",
                source.display()
            )
        })?;
        for (t, _) in &self.targets {
            replace_file(t, &text, PRIVATE_FILE)
                .map_err(|e| format!("writing the kubeconfig to {e}"))?;
            errln!("sno-harness: the admin kubeconfig is in {}", t.display());
        }
        if vm_left_running.is_none() {
            errln!(
                "sno-harness: warning: the VM stopped with the run, so the kubeconfig reaches no cluster now; run with --keep to leave it running"
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_target_that_could_not_be_written_is_refused_before_the_run() {
        let tmp = tempfile::tempdir().unwrap();
        let ok = HandOn {
            targets: vec![(tmp.path().join("kubeconfig"), "--kubeconfig-out")],
        };
        assert!(ok.check().is_ok());
        let no_dir = HandOn {
            targets: vec![(tmp.path().join("missing/kubeconfig"), "--kubeconfig-out")],
        };
        let e = no_dir.check().unwrap_err();
        assert!(e.contains("missing") && e.contains("does not exist"), "{e}");
        let a_dir = HandOn {
            targets: vec![(tmp.path().to_path_buf(), "--kubeconfig-out")],
        };
        let e = a_dir.check().unwrap_err();
        assert!(e.contains("is not a regular file"), "{e}");
    }

    #[test]
    fn the_kubeconfig_replaces_a_target_whole_and_owner_only() {
        let tmp = tempfile::tempdir().unwrap();
        let run = tmp.path().join("run");
        std::fs::create_dir_all(run.join("assets/auth")).unwrap();
        std::fs::write(run.join(FORWARDED_KUBECONFIG), "apiVersion: v1\n").unwrap();
        let target = tmp.path().join("kubeconfig");
        std::fs::write(&target, "an older one, world-readable").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
        let h = HandOn {
            targets: vec![(target.clone(), "--kubeconfig-out")],
        };
        h.write(&run, Some(1)).unwrap();
        assert_eq!(
            std::fs::read_to_string(&target).unwrap(),
            "apiVersion: v1\n"
        );
        let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // Nothing else is left beside it.
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 2);
        // A run without the kubeconfig cannot hand it on, and says which file is missing.
        let e = h.write(&tmp.path().join("empty"), None).unwrap_err();
        assert!(e.contains("kubeconfig-forwarded"), "{e}");
    }
}
