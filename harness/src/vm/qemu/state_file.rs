//! The VM's running state saved to a file and loaded back, through QEMU's migration: the
//! source is paused and migrated into `exec:cat > FILE`; a new QEMU started with
//! `-incoming defer` migrates in from `exec:cat FILE` and continues exactly there. Disks are not
//! in the stream: the caller keeps the disk images of that moment and gives the new QEMU
//! overlays on them.
//!
//! QEMU 7.2 has no `file:` migration URI (8.2 added it), hence `exec:`. The commands are sent
//! as raw JSON: qapi's bundled schema (9.1) describes `migrate` and `query-migrate` with fields
//! 7.2 does not have.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::qmp::{Qmp, QmpError, RawCommandName};

macro_rules! raw_command {
    ($ty:ident, $name:literal) => {
        #[derive(Debug, Clone, Copy)]
        pub struct $ty;
        impl RawCommandName for $ty {
            const NAME: &'static str = $name;
        }
    };
}

raw_command!(Stop, "stop");
raw_command!(Cont, "cont");
raw_command!(Migrate, "migrate");
raw_command!(MigrateIncoming, "migrate-incoming");
raw_command!(QueryMigrate, "query-migrate");
raw_command!(MigrateSetParameters, "migrate-set-parameters");

/// QEMU's default migration bandwidth (32 MiB/s in 7.2) is meant for a live migration over a
/// network shared with the guest; to a local file it would only make saving slow.
const SAVE_BANDWIDTH_BYTES_PER_S: u64 = 16 << 30;

#[derive(Debug, thiserror::Error)]
pub enum StateFileError {
    #[error("QMP: {0}")]
    Qmp(#[from] QmpError),
    #[error("QEMU could not {what} {path}: migration {status}{detail}")]
    Failed {
        what: &'static str,
        path: PathBuf,
        status: String,
        detail: String,
    },
    #[error("{what} {path} took more than {secs} s (migration status {status})")]
    Timeout {
        what: &'static str,
        path: PathBuf,
        secs: u64,
        status: String,
    },
    #[error("the state file path {0} cannot be given to QEMU (it must be absolute and have no single quote or newline)")]
    Path(PathBuf),
}

/// What saving took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Saved {
    pub bytes: u64,
    pub duration: Duration,
}

fn args(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// `path` single-quoted for the shell QEMU runs `exec:` commands with.
fn quoted(path: &Path) -> Result<String, StateFileError> {
    let s = path.to_str().unwrap_or("'");
    if !path.is_absolute() || s.contains('\'') || s.contains('\n') {
        return Err(StateFileError::Path(path.to_path_buf()));
    }
    Ok(format!("'{s}'"))
}

/// The `exec:` URI that writes the migration stream to `path`.
pub fn save_uri(path: &Path) -> Result<String, StateFileError> {
    Ok(format!("exec:cat > {}", quoted(path)?))
}

/// The `exec:` URI that reads the migration stream from `path`.
pub fn load_uri(path: &Path) -> Result<String, StateFileError> {
    Ok(format!("exec:cat {}", quoted(path)?))
}

/// The migration's status and error from a `query-migrate` reply (`{}` before any migration).
pub fn migration_status(reply: &Value) -> (String, String) {
    let status = reply
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or("none")
        .to_string();
    let error = reply
        .get("error-desc")
        .and_then(Value::as_str)
        .map(|e| format!(": {e}"))
        .unwrap_or_default();
    (status, error)
}

/// Waits until the migration in either direction completes, fails or `timeout` passes.
async fn wait_for_migration(
    qmp: &Qmp,
    what: &'static str,
    path: &Path,
    timeout: Duration,
) -> Result<(), StateFileError> {
    let start = Instant::now();
    loop {
        let reply = qmp.execute_raw::<QueryMigrate>(Map::new()).await?;
        let (status, detail) = migration_status(&reply);
        match status.as_str() {
            "completed" => return Ok(()),
            "failed" | "cancelled" => {
                return Err(StateFileError::Failed {
                    what,
                    path: path.to_path_buf(),
                    status,
                    detail,
                })
            }
            _ if start.elapsed() > timeout => {
                return Err(StateFileError::Timeout {
                    what,
                    path: path.to_path_buf(),
                    secs: timeout.as_secs(),
                    status,
                })
            }
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Pauses the VM and writes its state (CPU, devices, RAM) to `path`. The VM stays paused; the
/// caller ends this QEMU and keeps its disk images as they are now.
pub async fn save(qmp: &Qmp, path: &Path, timeout: Duration) -> Result<Saved, StateFileError> {
    let uri = save_uri(path)?;
    let start = Instant::now();
    qmp.execute_raw::<Stop>(Map::new()).await?;
    qmp.execute_raw::<MigrateSetParameters>(args(
        json!({ "max-bandwidth": SAVE_BANDWIDTH_BYTES_PER_S }),
    ))
    .await?;
    qmp.execute_raw::<Migrate>(args(json!({ "uri": uri })))
        .await?;
    wait_for_migration(qmp, "save the VM state to", path, timeout).await?;
    let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    Ok(Saved {
        bytes,
        duration: start.elapsed(),
    })
}

/// Loads the state in `path` into a QEMU started with `-incoming defer` and lets the VM run
/// from where it was saved. Returns how long loading took.
pub async fn load(qmp: &Qmp, path: &Path, timeout: Duration) -> Result<Duration, StateFileError> {
    let uri = load_uri(path)?;
    let start = Instant::now();
    qmp.execute_raw::<MigrateIncoming>(args(json!({ "uri": uri })))
        .await?;
    wait_for_migration(qmp, "load the VM state from", path, timeout).await?;
    // The source was paused when it was saved, and QEMU restores that: continue it.
    if qmp.status().await? != "running" {
        qmp.execute_raw::<Cont>(Map::new()).await?;
    }
    Ok(start.elapsed())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_quote_the_path_and_refuse_what_the_shell_would_misread() {
        assert_eq!(
            save_uri(Path::new("/runs/a b/vm.state")).unwrap(),
            "exec:cat > '/runs/a b/vm.state'"
        );
        assert_eq!(
            load_uri(Path::new("/runs/x/vm.state")).unwrap(),
            "exec:cat '/runs/x/vm.state'"
        );
        for bad in ["relative/vm.state", "/runs/it's/vm.state", "/runs/a\nb"] {
            assert!(
                matches!(save_uri(Path::new(bad)), Err(StateFileError::Path(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn migration_status_from_query_migrate_replies() {
        assert_eq!(
            migration_status(&json!({})),
            ("none".to_string(), String::new())
        );
        assert_eq!(
            migration_status(&json!({"status": "active", "ram": {}})),
            ("active".to_string(), String::new())
        );
        assert_eq!(
            migration_status(&json!({"status": "failed", "error-desc": "nvme is not migratable"})),
            ("failed".to_string(), ": nvme is not migratable".to_string())
        );
    }
}
