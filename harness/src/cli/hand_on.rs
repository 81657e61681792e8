//! Handing a passing run's cluster on: the admin kubeconfig written where the user or the next
//! CI step looks for it (`--kubeconfig-out PATH`, `$SHARED_DIR/kubeconfig` in OpenShift CI's
//! step registry).

use std::path::{Path, PathBuf};

/// A kubeconfig target the run could not write after it; `named_by` is the flag or variable
/// that named it.
#[derive(Debug, thiserror::Error)]
pub enum HandOnError {
    #[error("{named_by}: the kubeconfig's directory {} does not exist", dir.display())]
    NoDirectory {
        named_by: &'static str,
        dir: PathBuf,
    },
    #[error("{named_by}: {} exists and is not a regular file", path.display())]
    NotARegularFile {
        named_by: &'static str,
        path: PathBuf,
    },
}

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
    pub fn check(&self) -> Result<(), HandOnError> {
        for (t, named_by) in &self.targets {
            let parent = match t.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            if !parent.is_dir() {
                return Err(HandOnError::NoDirectory {
                    named_by,
                    dir: parent.to_path_buf(),
                });
            }
            if let Ok(meta) = std::fs::symlink_metadata(t) {
                if !meta.is_file() {
                    return Err(HandOnError::NotARegularFile {
                        named_by,
                        path: t.clone(),
                    });
                }
            }
        }
        Ok(())
    }

    /// The files the run writes the kubeconfig to when it passes.
    pub fn targets(&self) -> Vec<PathBuf> {
        self.targets.iter().map(|(t, _)| t.clone()).collect()
    }

    /// After a passing run that handed the kubeconfig on: whether the cluster is still there
    /// to reach.
    pub fn warn_if_stopped(&self, left_running: bool) {
        if !self.targets.is_empty() && !left_running {
            errln!(
                "sno-harness: warning: the VM stopped with the run, so the kubeconfig reaches no cluster now; run with --keep to leave it running"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(matches!(e, HandOnError::NoDirectory { .. }), "{e:?}");
        let e = e.to_string();
        assert!(e.contains("missing") && e.contains("does not exist"), "{e}");
        let a_dir = HandOn {
            targets: vec![(tmp.path().to_path_buf(), "--kubeconfig-out")],
        };
        let e = a_dir.check().unwrap_err();
        assert!(matches!(e, HandOnError::NotARegularFile { .. }), "{e:?}");
        assert!(e.to_string().contains("is not a regular file"), "{e}");
    }
}
