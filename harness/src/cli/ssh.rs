//! `sno-harness ssh RUN [-- COMMAND]`: log in to a registered run's node with the run's own key,
//! through the address the run reaches it at (its forward, or the node's NAT address).

use std::io::Read;
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use sno_harness::registry::{self, Entry};
use sno_harness::run::artifacts::{SSH_ADDRESS_FILE, SSH_KEY_FILE};

use super::error::{bad, Outcome};

/// Log in to the node of a running or kept run as its user (`core`, or the one `observe
/// --ssh` or `--backend redfish --ssh` named), with the run's key (OpenSSH's client): the live system before the reboot, the installed one after it. RUN is a
/// registered run's id or its run directory (`sno-harness status` lists them). A remote libvirt
/// run is reached only while its harness runs (its forward is the harness's).
#[derive(clap::Args)]
pub struct SshArgs {
    /// A registered run's id or its run directory.
    run: String,
    /// A command to run on the node instead of a shell (after `--`).
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

pub fn ssh(a: SshArgs) -> Outcome {
    let entry = find(&a.run)?;
    let private = entry.private.clone().ok_or_else(|| {
        bad(format!(
            "run {} has no private directory any more: its key and address are gone",
            entry.id
        ))
    })?;
    let (user, at) = address(&private).map_err(|why| bad(format!("run {}: {why}", entry.id)))?;
    let key = private.join(SSH_KEY_FILE);
    if !key.is_file() {
        return Err(bad(format!(
            "run {}: no key at {}",
            entry.id,
            key.display()
        )));
    }
    let mut cmd = Command::new("ssh");
    cmd.arg("-i")
        .arg(&key)
        .args(["-p", &at.port().to_string()])
        // Each boot of the node has its own host key, and the address is the run's alone.
        .args([
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
        ])
        .args(["-o", "LogLevel=ERROR", "-o", "IdentitiesOnly=yes"])
        .arg(format!("{user}@{}", at.ip()));
    if !a.command.is_empty() {
        cmd.arg("--").args(&a.command);
    }
    let e = cmd.exec();
    Err(super::error::CliError::Harness(format!(
        "cannot start ssh (OpenSSH's client, Debian's openssh-client): {e}"
    )))
}

/// The registered run whose id or directory is `run`.
pub(super) fn find(run: &str) -> Result<Entry, super::error::CliError> {
    match registry::named(&registry::dir(), run).as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(bad(format!(
            "{run}: no registered run has this id or directory (`sno-harness status` lists them)"
        ))),
        many => Err(bad(format!(
            "{run}: {} registered runs have this id; name one by its run directory: {}",
            many.len(),
            many.iter()
                .map(|e| e.dir.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Whom and where the run logs in over SSH, from its private directory (at most 128 bytes,
/// `USER@ADDRESS`; a bare address, as runs before the user was recorded wrote it, is `core`'s).
fn address(private: &Path) -> Result<(String, SocketAddr), String> {
    let path = private.join(SSH_ADDRESS_FILE);
    let mut text = String::new();
    std::fs::File::open(&path)
        .and_then(|f| f.take(128).read_to_string(&mut text))
        .map_err(|e| {
            format!(
                "its VM has not started, or it is gone ({}: {e})",
                path.display()
            )
        })?;
    let (user, addr) = match text.trim().rsplit_once('@') {
        Some((user, addr)) => (user, addr),
        None => ("core", text.trim()),
    };
    let valid_user = !user.is_empty()
        && user
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    match (valid_user, addr.parse()) {
        (true, Ok(at)) => Ok((user.to_string(), at)),
        _ => Err(format!(
            "{} does not hold USER@ADDRESS: {text:?}",
            path.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recorded_login_is_its_user_and_address_and_a_bare_address_is_cores() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(SSH_ADDRESS_FILE);
        std::fs::write(&file, "admin@192.0.2.7:22").unwrap();
        assert_eq!(
            address(dir.path()).unwrap(),
            ("admin".to_string(), "192.0.2.7:22".parse().unwrap())
        );
        std::fs::write(&file, "127.0.0.1:2222\n").unwrap();
        assert_eq!(address(dir.path()).unwrap().0, "core");
        for bad in [
            "x y@127.0.0.1:22",
            "@127.0.0.1:22",
            "core@nowhere",
            "core@127.0.0.1:22 -oProxyCommand=x",
        ] {
            std::fs::write(&file, bad).unwrap();
            let e = address(dir.path()).unwrap_err();
            assert!(e.contains("does not hold USER@ADDRESS"), "{bad}: {e}");
        }
    }
}
