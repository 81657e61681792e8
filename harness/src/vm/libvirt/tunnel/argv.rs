//! The `ssh` command lines of a tunnel: the control connection, and one stdio forward per
//! accepted connection through it.
//!
//! Only what the libvirt URI says is given on the command line (user, port, key file, and
//! `no_verify`), as libvirt's own `ssh` transport gives it; everything else (host aliases,
//! `ProxyJump`, `IdentityFile`, `User` and `Port` when the URI has none, known_hosts) comes
//! from the user's OpenSSH configuration.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::Path;

use super::TunnelOptions;
use crate::vm::libvirt::remote::RemoteTarget;

/// Seconds: the bound on each TCP connect of a login (each hop of a `ProxyJump` has its own),
/// and, three times over, on a silent server before the connection counts as dead.
const CONNECT_TIMEOUT_S: u32 = 15;

/// What every `ssh` of the tunnel is given: no prompts (a tunnel has no terminal to ask on),
/// no escape character, and the URI's own settings.
fn common(target: &RemoteTarget, options: &TunnelOptions) -> Vec<OsString> {
    let mut argv: Vec<OsString> = ["-T", "-e", "none"].map(OsString::from).to_vec();
    for option in [
        "BatchMode=yes".to_string(),
        format!("ConnectTimeout={CONNECT_TIMEOUT_S}"),
        format!("ServerAliveInterval={CONNECT_TIMEOUT_S}"),
        "ServerAliveCountMax=3".to_string(),
    ] {
        argv.push("-o".into());
        argv.push(option.into());
    }
    if let Some(port) = target.port {
        argv.push("-p".into());
        argv.push(port.to_string().into());
    }
    if let Some(user) = &target.user {
        argv.push("-l".into());
        argv.push(user.into());
    }
    if let Some(key) = &target.keyfile {
        argv.push("-i".into());
        argv.push(key.into());
    }
    let known_hosts = if !target.known_hosts_verify {
        // libvirt's `no_verify=1`: any host key. Checking none at all (rather than OpenSSH's
        // `StrictHostKeyChecking=no`, which still refuses forwards to a host whose key changed)
        // is what the URI asks for, and writes nothing to the user's known_hosts.
        argv.extend(["-o", "StrictHostKeyChecking=no"].map(OsString::from));
        Some(Path::new("/dev/null"))
    } else {
        options.known_hosts.as_deref()
    };
    if let Some(file) = known_hosts {
        let mut user_file = OsString::from("UserKnownHostsFile=");
        user_file.push(file);
        argv.extend(["-o".into(), user_file]);
        argv.extend(["-o", "GlobalKnownHostsFile=/dev/null"].map(OsString::from));
    }
    argv
}

/// The host argument, after `--` so that no host name is read as an option.
fn destination(argv: &mut Vec<OsString>, target: &RemoteTarget) {
    argv.push("--".into());
    argv.push(target.host.clone().into());
}

/// The control connection: logs in, serves the forwards of every later `ssh -S`, runs no
/// command, and goes when it is told to (never persists after its forwards).
pub(super) fn master(
    target: &RemoteTarget,
    options: &TunnelOptions,
    control: &Path,
) -> Vec<OsString> {
    let mut argv = common(target, options);
    argv.push("-N".into());
    argv.extend(["-o", "ControlMaster=yes", "-o", "ControlPersist=no"].map(OsString::from));
    argv.push("-S".into());
    argv.push(control.into());
    destination(&mut argv, target);
    argv
}

/// An `ssh` that uses the control connection and never makes one of its own.
fn through_control(
    target: &RemoteTarget,
    options: &TunnelOptions,
    control: &Path,
) -> Vec<OsString> {
    let mut argv = common(target, options);
    argv.extend(["-o", "ControlMaster=no", "-S"].map(OsString::from));
    argv.push(control.into());
    argv
}

/// One forwarded connection: stdin and stdout carried to `remote` (as the remote host
/// reaches it) over the control connection.
pub(super) fn forward(
    target: &RemoteTarget,
    options: &TunnelOptions,
    control: &Path,
    remote: SocketAddr,
) -> Vec<OsString> {
    let mut argv = through_control(target, options, control);
    // SocketAddr brackets an IPv6 address, as `-W` wants it.
    argv.push("-W".into());
    argv.push(remote.to_string().into());
    destination(&mut argv, target);
    argv
}

/// Asks the control connection for a remote forward: a port the remote host's sshd picks on
/// its loopback, carried back to `local_port` on this host's. `ssh` prints the port it got.
pub(super) fn reverse(
    target: &RemoteTarget,
    options: &TunnelOptions,
    control: &Path,
    local_port: u16,
) -> Vec<OsString> {
    let mut argv = through_control(target, options, control);
    argv.extend(["-O", "forward", "-R"].map(OsString::from));
    argv.push(format!("127.0.0.1:0:127.0.0.1:{local_port}").into());
    destination(&mut argv, target);
    argv
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn strings(argv: &[OsString]) -> Vec<String> {
        argv.iter()
            .map(|a| a.to_str().unwrap().to_string())
            .collect()
    }

    fn bare(host: &str) -> RemoteTarget {
        RemoteTarget {
            user: None,
            host: host.into(),
            port: None,
            keyfile: None,
            known_hosts_verify: true,
        }
    }

    /// The value after each `flag` in `argv`.
    fn values(argv: &[String], flag: &str) -> Vec<String> {
        argv.windows(2)
            .filter(|w| w[0] == flag)
            .map(|w| w[1].clone())
            .collect()
    }

    #[test]
    fn what_the_uri_does_not_say_is_left_to_the_users_ssh_configuration() {
        let argv = strings(&master(
            &bare("lab"),
            &TunnelOptions::default(),
            Path::new("/tmp/c"),
        ));
        for flag in ["-p", "-l", "-i"] {
            assert!(values(&argv, flag).is_empty(), "{flag} in {argv:?}");
        }
        let options = values(&argv, "-o");
        assert!(
            !options.iter().any(|o| o.contains("KnownHostsFile")
                || o.starts_with("StrictHostKeyChecking")
                || o.starts_with("User=")
                || o.starts_with("Port=")
                || o.starts_with("ProxyJump")),
            "{options:?}"
        );
        assert!(options.contains(&"BatchMode=yes".to_string()));
        assert!(options.contains(&"ControlMaster=yes".to_string()));
        assert_eq!(values(&argv, "-S"), ["/tmp/c"]);
        assert_eq!(&argv[argv.len() - 2..], ["--", "lab"]);
        assert!(argv.contains(&"-N".to_string()));
    }

    #[test]
    fn the_uris_user_port_key_and_no_verify_are_given_as_libvirt_gives_them() {
        let target = RemoteTarget {
            user: Some("core".into()),
            host: "::1".into(),
            port: Some(2222),
            keyfile: Some(PathBuf::from("/keys/lab")),
            known_hosts_verify: false,
        };
        let remote: SocketAddr = "[::1]:6443".parse().unwrap();
        let argv = strings(&forward(
            &target,
            &TunnelOptions::default(),
            Path::new("/tmp/c"),
            remote,
        ));
        assert_eq!(values(&argv, "-p"), ["2222"]);
        assert_eq!(values(&argv, "-l"), ["core"]);
        assert_eq!(values(&argv, "-i"), ["/keys/lab"]);
        assert_eq!(values(&argv, "-W"), ["[::1]:6443"]);
        let options = values(&argv, "-o");
        for o in [
            "StrictHostKeyChecking=no",
            "UserKnownHostsFile=/dev/null",
            "ControlMaster=no",
        ] {
            assert!(options.contains(&o.to_string()), "{o} in {options:?}");
        }
        // The host never reads as an option, whatever its name.
        assert_eq!(&argv[argv.len() - 2..], ["--", "::1"]);
    }

    #[test]
    fn a_reverse_forward_asks_the_control_connection_for_a_port_on_the_remote_loopback() {
        let argv = strings(&reverse(
            &bare("lab"),
            &TunnelOptions::default(),
            Path::new("/tmp/c"),
            4711,
        ));
        assert_eq!(values(&argv, "-S"), ["/tmp/c"]);
        assert_eq!(values(&argv, "-O"), ["forward"]);
        assert_eq!(values(&argv, "-R"), ["127.0.0.1:0:127.0.0.1:4711"]);
        assert!(values(&argv, "-o").contains(&"ControlMaster=no".to_string()));
        assert_eq!(&argv[argv.len() - 2..], ["--", "lab"]);
    }

    #[test]
    fn a_known_hosts_file_given_replaces_both_of_the_users() {
        let options = TunnelOptions {
            known_hosts: Some(PathBuf::from("/t/known")),
        };
        let argv = strings(&master(&bare("h"), &options, Path::new("/tmp/c")));
        let o = values(&argv, "-o");
        assert!(
            o.contains(&"UserKnownHostsFile=/t/known".to_string()),
            "{o:?}"
        );
        assert!(o.contains(&"GlobalKnownHostsFile=/dev/null".to_string()));
        assert!(!o.iter().any(|o| o.starts_with("StrictHostKeyChecking")));
    }
}
