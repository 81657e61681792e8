//! Handing a passing run's cluster on while the run still has it: the admin kubeconfig copied
//! from the private directory to where the user or the next CI step looks for it
//! (`--kubeconfig-out PATH`, `$SHARED_DIR/kubeconfig` in OpenShift CI's step registry). These
//! are the user's explicit choices; nothing else of the private directory leaves it.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Writes `kubeconfig` to every target (0600, replacing it whole); the lines to print, one a
/// target, or why a target could not be written.
pub fn hand_on(targets: &[std::path::PathBuf], kubeconfig: &[u8]) -> Result<Vec<String>, String> {
    targets
        .iter()
        .map(|t| match write_private_atomically(t, kubeconfig) {
            Ok(()) => Ok(format!("the admin kubeconfig is in {}", t.display())),
            Err(e) => Err(format!(
                "the run passed but its kubeconfig cannot be handed on to {}: {e}",
                t.display()
            )),
        })
        .collect()
}

/// A new file beside `path` (created, never opened through a link), 0600 from its creation,
/// renamed over it.
pub fn write_private_atomically(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut random = [0u8; 8];
    rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut random);
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", hex::encode(random)));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)
        .and_then(|mut f| f.write_all(data).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn each_target_gets_the_kubeconfig_whole_and_owner_only_and_a_failure_is_said() {
        let t = tempfile::tempdir().unwrap();
        let (a, b) = (t.path().join("a"), t.path().join("no/such/dir/b"));
        std::fs::write(&a, "old").unwrap();
        std::fs::set_permissions(&a, std::fs::Permissions::from_mode(0o644)).unwrap();
        let lines = hand_on(std::slice::from_ref(&a), b"apiVersion: v1\n").unwrap();
        assert_eq!(
            lines,
            [format!("the admin kubeconfig is in {}", a.display())]
        );
        let e = hand_on(std::slice::from_ref(&b), b"x").unwrap_err();
        assert!(
            e.contains("cannot be handed on to") && e.contains("no/such/dir"),
            "{e}"
        );
        assert_eq!(std::fs::read(&a).unwrap(), b"apiVersion: v1\n");
        let mode = std::fs::metadata(&a).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(
            std::fs::read_dir(t.path()).unwrap().count(),
            1,
            "no temporary left"
        );
    }
}
