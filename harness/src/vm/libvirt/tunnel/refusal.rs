//! Why the control connection did not come up, read from what `ssh` printed: an unknown or a
//! changed host key and a refused login get their own errors, with the fix.

use std::path::Path;

use super::{TunnelError, TunnelOptions};
use crate::vm::libvirt::remote::RemoteTarget;

/// The lines of `ssh`'s stderr worth showing: without carriage returns, blank lines and the
/// notes that are no failure.
pub(super) fn said(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(|l| l.trim_end_matches('\r').trim())
        .filter(|l| !l.is_empty() && !l.starts_with("Warning: Permanently added"))
        .collect();
    // The last lines carry the reason; a long banner before them does not.
    let start = lines.len().saturating_sub(12);
    lines[start..].join(" / ")
}

/// The error for a control connection that ended with `stderr` before it was up.
pub(super) fn classify(
    target: &RemoteTarget,
    options: &TunnelOptions,
    status: &str,
    stderr: &str,
) -> TunnelError {
    let said = said(stderr);
    let host = target.to_string();
    let known_hosts = match &options.known_hosts {
        Some(path) => path.display().to_string(),
        None => "~/.ssh/known_hosts".to_string(),
    };
    if stderr.contains("Host key verification failed") {
        if stderr.contains("REMOTE HOST IDENTIFICATION HAS CHANGED") {
            // Of OpenSSH's long warning, the key it was sent and what it concluded.
            let said: Vec<&str> = stderr
                .lines()
                .map(|l| l.trim_end_matches('\r').trim())
                .filter(|l| l.starts_with("SHA256:") || l.contains("has changed and"))
                .collect();
            return TunnelError::HostKeyChanged {
                host,
                said: format!("the key it was sent: {}", said.join(" / ")),
                fix: changed_fix(target, &known_hosts),
            };
        }
        return TunnelError::UnknownHostKey {
            host,
            said,
            known_hosts: known_hosts.clone(),
            fix: unknown_fix(target, &known_hosts),
        };
    }
    if stderr.contains("Permission denied") {
        return TunnelError::Auth {
            host,
            offered: offered(target),
            said,
        };
    }
    TunnelError::Refused {
        host,
        status: status.to_string(),
        said,
    }
}

/// How the login was to be made: the URI's user and key, else what the configuration gives.
fn offered(target: &RemoteTarget) -> String {
    let user = match &target.user {
        Some(u) => format!("as {u}"),
        None => "as the user ~/.ssh/config names (else this one)".to_string(),
    };
    let key = match &target.keyfile {
        Some(k) => format!("with the key {} and", k.display()),
        None => "with".to_string(),
    };
    format!("{user}, {key} the keys of ssh-agent and ~/.ssh/config")
}

/// `ssh`'s own way to name the host, for commands the user can paste.
fn ssh_command(target: &RemoteTarget) -> String {
    let mut cmd = "ssh".to_string();
    if let Some(port) = target.port {
        cmd.push_str(&format!(" -p {port}"));
    }
    match &target.user {
        Some(u) => cmd.push_str(&format!(" {u}@{}", target.host)),
        None => cmd.push_str(&format!(" {}", target.host)),
    }
    cmd
}

fn unknown_fix(target: &RemoteTarget, known_hosts: &str) -> String {
    let port = target.port.map(|p| format!("-p {p} ")).unwrap_or_default();
    format!(
        "Log in once with `{}` and accept the key after checking its fingerprint, or add it \
         with `ssh-keyscan {port}{} >> {known_hosts}` (from where the host is directly \
         reachable), or skip the check with `no_verify=1` in the URI",
        ssh_command(target),
        target.host,
    )
}

fn changed_fix(target: &RemoteTarget, known_hosts: &str) -> String {
    let name = match target.port {
        Some(p) if p != 22 => format!("[{}]:{p}", target.host),
        _ => target.host.clone(),
    };
    let file = if known_hosts.starts_with('~') {
        String::new()
    } else {
        format!(" -f {}", Path::new(known_hosts).display())
    };
    format!(
        "the host was reinstalled, or someone is in the middle. If the change is expected, \
         remove the old key with `ssh-keygen -R '{name}'{file}` and accept the new one"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn target() -> RemoteTarget {
        RemoteTarget {
            user: Some("root".into()),
            host: "lab".into(),
            port: Some(2201),
            keyfile: Some(PathBuf::from("/k/client")),
            known_hosts_verify: true,
        }
    }

    // What OpenSSH 9 prints, in shape.
    const UNKNOWN: &str = "No ED25519 host key is known for [lab]:2201 and you have requested \
        strict checking.\r\nHost key verification failed.\r\n";
    const CHANGED: &str = "@@@@@@@@@@@\r\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! \
        @\r\nHost key for [lab]:2201 has changed and you have requested strict checking.\r\n\
        Host key verification failed.\r\n";

    #[test]
    fn host_key_failures_name_the_file_and_the_fix() {
        let options = TunnelOptions {
            known_hosts: Some(PathBuf::from("/t/kh")),
        };
        let e = classify(&target(), &options, "exit status: 255", UNKNOWN);
        assert!(matches!(e, TunnelError::UnknownHostKey { .. }), "{e}");
        let text = e.to_string();
        for needle in [
            "is not in /t/kh",
            "ssh -p 2201 root@lab",
            "ssh-keyscan -p 2201 lab >> /t/kh",
            "no_verify=1",
            "No ED25519 host key is known",
        ] {
            assert!(text.contains(needle), "{needle:?} missing: {text}");
        }
        let e = classify(&target(), &options, "exit status: 255", CHANGED);
        assert!(matches!(e, TunnelError::HostKeyChanged { .. }), "{e}");
        let text = e.to_string();
        assert!(
            text.contains("ssh-keygen -R '[lab]:2201' -f /t/kh"),
            "{text}"
        );
        assert!(
            text.contains("Host key for [lab]:2201 has changed"),
            "{text}"
        );
        assert!(!text.contains("WARNING"), "{text}");
    }

    #[test]
    fn a_refused_login_says_what_was_offered_and_anything_else_what_ssh_said() {
        let o = TunnelOptions::default();
        let e = classify(
            &target(),
            &o,
            "exit status: 255",
            "root@lab: Permission denied (publickey).\r\n",
        );
        let text = e.to_string();
        assert!(matches!(e, TunnelError::Auth { .. }), "{text}");
        assert!(text.contains("as root, with the key /k/client"), "{text}");
        assert!(text.contains("Permission denied (publickey)"), "{text}");
        let e = classify(
            &target(),
            &o,
            "exit status: 255",
            "Warning: Permanently added 'x'\nssh: Could not resolve hostname lab: Name or service not known\n",
        );
        let text = e.to_string();
        assert!(matches!(e, TunnelError::Refused { .. }), "{text}");
        assert!(text.contains("Could not resolve hostname lab"), "{text}");
        assert!(!text.contains("Permanently added"), "{text}");
    }
}
