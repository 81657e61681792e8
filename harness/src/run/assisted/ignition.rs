//! master.ign on the live system with the scenario's host Ignition merged in, before the
//! install, as the agent merges the host's config from the service
//! (assisted-installer's `src/installer/installer.go` updateSingleNodeIgnition). The file is
//! read back size-limited, merged here (`assets::host_ignition`), and written to a temporary
//! file beside it, owner-only (it holds the cluster's keys), that then replaces it.

use std::io::{Read, Write};
use std::time::Duration;

use serde_json::Value;

use crate::assets::host_ignition::merge;
use crate::guest::ssh::SshSession;

use super::guest::{as_root, quote};

/// A real master.ign is a few hundred KiB (minisno's carries the bootstrap log bundle).
const MAX_MASTER_IGNITION: u64 = 32 << 20;
const WRITE_LIMIT: Duration = Duration::from_secs(120);

/// Merges `host` into the live system's `master_path`: what was merged, in words.
pub fn merge_into_master(
    s: &SshSession,
    master_path: &str,
    host: &Value,
) -> Result<String, String> {
    let read = s
        .exec_bytes(&as_root(&["cat", master_path]), MAX_MASTER_IGNITION)
        .map_err(|e| format!("reading {master_path}: {e}"))?;
    if read.truncated {
        return Err(format!(
            "{master_path} is larger than {} MiB",
            MAX_MASTER_IGNITION >> 20
        ));
    }
    if read.status != 0 {
        return Err(format!("reading {master_path} exited {}", read.status));
    }
    let mut master: Value = serde_json::from_slice(&read.stdout)
        .map_err(|e| format!("{master_path} is not JSON: {e}"))?;
    let said = merge(&mut master, host).map_err(|e| format!("merging: {e}"))?;
    let bytes = serde_json::to_vec(&master).expect("a JSON value serialises");
    write(s, master_path, &bytes)?;
    Ok(said)
}

/// Writes `bytes` over `path` on the live system through a temporary file, as root.
fn write(s: &SshSession, path: &str, bytes: &[u8]) -> Result<(), String> {
    let tmp = format!("{path}.sno-harness");
    let script = format!(
        "umask 077 && cat > {t} && mv -f {t} {p}",
        t = quote(&tmp),
        p = quote(path)
    );
    let command = as_root(&["sh", "-c", &script]);
    s.with_io_timeout(WRITE_LIMIT, |s| {
        let mut ch = s.stream(&command).map_err(|e| e.to_string())?;
        ch.write_all(bytes)
            .and_then(|()| ch.flush())
            .map_err(|e| format!("sending the merged config: {e}"))?;
        ch.send_eof().map_err(|e| e.to_string())?;
        let mut said = String::new();
        let _ = (&mut ch).take(64 << 10).read_to_string(&mut said);
        ch.wait_close().map_err(|e| e.to_string())?;
        match ch.exit_status().map_err(|e| e.to_string())? {
            0 => Ok(()),
            code => Err(format!("writing {path} exited {code}: {}", said.trim())),
        }
    })
    .map_err(|e| format!("writing {path}: {e}"))
}
