//! What the harness needs to know about a libvirt connection URI: whether libvirtd is on this
//! host or reached over SSH, and if over SSH, where and as whom.
//!
//! A remote libvirtd changes what the harness can do on its own: the run directory does not
//! exist there, the guest's `hostfwd` ports bind on the remote loopback and the serial console
//! cannot be a socket here. The SSH details are what the tunnel to those ports needs, read the
//! way libvirt's own `ssh` transport reads them (`driver+ssh://[user@]host[:port]/path?...`,
//! <https://libvirt.org/uri.html>), so that the tunnel logs in where libvirt does.
//!
//! A URI is input that may be hostile (a flag, a hosts file, a registration gc reads), and
//! libvirt acts on what it says: `command=` names the program it runs instead of `ssh`,
//! `netcat=` one it runs on the far host through the login shell, `socket=` goes into that
//! shell unquoted. So a URI takes an allow-list of parameters, and its user, host and path only
//! characters no shell reads; [`daemon`] tells two URIs of one libvirt daemon apart from two
//! daemons.
//!
//! Parsed by hand: the `url` crate is not a dependency, and libvirt URIs are a small subset of
//! RFC 3986 (no passwords, no fragments).

use std::path::PathBuf;

/// The transports this module accepts, for the error message.
const SUPPORTED: &str =
    "local URIs (qemu:///system, qemu:///session, qemu+unix:///system) and qemu+ssh://[user@]host[:port]/system";

/// Where a remote libvirtd is and how to log in there over SSH.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteTarget {
    /// `None`: the `User` of `~/.ssh/config`, else the local user's name, as `ssh` does.
    pub user: Option<String>,
    /// A host name or an IP address; IPv6 literals without their brackets (`::1`).
    pub host: String,
    /// `None`: the `Port` of `~/.ssh/config`, else 22.
    pub port: Option<u16>,
    /// libvirt's `keyfile=` parameter: the private key to log in with.
    pub keyfile: Option<PathBuf>,
    /// `false` when the URI says `no_verify=1`: libvirt then lets `ssh` accept any host key.
    pub known_hosts_verify: bool,
}

impl std::fmt::Display for RemoteTarget {
    /// `[user@]host[:port]`, IPv6 literals bracketed: for messages.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(user) = &self.user {
            write!(f, "{user}@")?;
        }
        if self.host.contains(':') {
            write!(f, "[{}]", self.host)?;
        } else {
            write!(f, "{}", self.host)?;
        }
        if let Some(port) = self.port {
            write!(f, ":{port}")?;
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum UriError {
    #[error("libvirt URI {uri:?}: {reason}")]
    Malformed { uri: String, reason: String },
    #[error(
        "libvirt URI {uri:?}: parameter {name:?} is not accepted: {why}; accepted: {accepted}"
    )]
    Refused {
        uri: String,
        name: String,
        why: &'static str,
        accepted: &'static str,
    },
    #[error("libvirt URI {uri:?}: the {transport:?} transport is not supported; use {SUPPORTED}")]
    Unsupported { uri: String, transport: String },
    #[error("libvirt URI {uri:?}: parameter {name}={value:?}: {reason}")]
    Parameter {
        uri: String,
        name: String,
        value: String,
        reason: String,
    },
}

/// `None` for a libvirtd on this host, the SSH target for `driver+ssh://` URIs, an error for
/// any other remote transport, for what is not a libvirt URI, and for a parameter or a
/// character that would have libvirt run a program of the URI's choosing.
pub fn remote_target(uri: &str) -> Result<Option<RemoteTarget>, UriError> {
    Ok(parse(uri)?.remote)
}

/// The libvirt daemon a URI reaches, to tell two URIs of one daemon (`qemu:///system` and
/// `qemu+unix:///system`): on this host by driver, path and socket (the default one left
/// out); over SSH by the login (user as written, host in lower case, an IPv6 address in its
/// canonical form, port 22 when none is given), driver and path. The `mode` parameter does not
/// count: either mode reaches the one machine's daemon of that path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Daemon {
    Local {
        driver: String,
        path: String,
        socket: Option<String>,
    },
    Remote {
        user: Option<String>,
        host: String,
        port: u16,
        driver: String,
        path: String,
    },
}

impl std::fmt::Display for Daemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Daemon::Local {
                driver,
                path,
                socket,
            } => {
                write!(f, "this host's {driver} {path}")?;
                match socket {
                    Some(s) => write!(f, " at {s}"),
                    None => Ok(()),
                }
            }
            Daemon::Remote {
                user,
                host,
                port,
                driver,
                path,
            } => {
                let user = user.as_deref().map(|u| format!("{u}@")).unwrap_or_default();
                match host.contains(':') {
                    true => write!(f, "{driver} {path} on {user}[{host}]:{port}"),
                    false => write!(f, "{driver} {path} on {user}{host}:{port}"),
                }
            }
        }
    }
}

/// The daemon `uri` reaches, once it is checked as [`remote_target`] checks it.
pub fn daemon(uri: &str) -> Result<Daemon, UriError> {
    let p = parse(uri)?;
    Ok(match p.remote {
        None => Daemon::Local {
            socket: p
                .socket
                .filter(|s| !is_default_socket(s, &p.driver, &p.path)),
            driver: p.driver,
            path: p.path,
        },
        Some(t) => Daemon::Remote {
            user: t.user,
            host: match t.host.parse::<std::net::Ipv6Addr>() {
                Ok(v6) => v6.to_string(),
                Err(_) => t.host.trim_end_matches('.').to_ascii_lowercase(),
            },
            port: t.port.unwrap_or(22),
            driver: p.driver,
            path: p.path,
        },
    })
}

/// Whether a local `socket=` names the socket libvirt picks without one: the system daemon's
/// (`libvirtd`'s, the modular daemon's, or their read-only ones; `/var/run` being `/run`).
fn is_default_socket(socket: &str, driver: &str, path: &str) -> bool {
    if path != "/system" {
        return false;
    }
    let socket = socket.strip_prefix("/var").unwrap_or(socket);
    let modular = format!("virt{driver}d-sock");
    let name = socket.strip_prefix("/run/libvirt/").unwrap_or_default();
    let name = name.strip_suffix("-ro").unwrap_or(name);
    name == "libvirt-sock" || name == modular
}

/// A libvirt URI taken apart and checked.
struct Parsed {
    /// The driver, in lower case (`qemu`).
    driver: String,
    /// The path, %-decoded (`/system`).
    path: String,
    /// The SSH login of a remote URI.
    remote: Option<RemoteTarget>,
    /// A local URI's `socket=`, its `//` and `.` components dropped.
    socket: Option<String>,
}

fn parse(uri: &str) -> Result<Parsed, UriError> {
    let malformed = |reason: &str| UriError::Malformed {
        uri: uri.into(),
        reason: reason.into(),
    };
    let (scheme, rest) = uri
        .split_once("://")
        .ok_or_else(|| malformed("expected driver[+transport]://[user@][host][:port]/path"))?;
    if let Some(c) = uri
        .chars()
        .find(|c| !c.is_ascii() || c.is_ascii_whitespace() || c.is_ascii_control())
    {
        return Err(malformed(&format!(
            "{c:?}: a URI is ASCII without spaces or control characters (%-escape them)"
        )));
    }
    let (driver, transport) = match scheme.split_once('+') {
        Some((d, t)) => (d, Some(t)),
        None => (scheme, None),
    };
    if !is_name(driver) {
        return Err(malformed(
            "the driver (before \"://\") must be a name such as qemu",
        ));
    }
    if transport.is_some_and(|t| !is_name(t)) {
        return Err(malformed(
            "the transport (after '+') must be a name such as ssh",
        ));
    }
    if rest.contains('#') {
        return Err(malformed(
            "fragments ('#') have no meaning in a libvirt URI",
        ));
    }
    let (before_query, query) = match rest.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (rest, None),
    };
    let (authority, path) = match before_query.find('/') {
        Some(i) => before_query.split_at(i),
        None => (before_query, ""),
    };
    let path = percent_decode(path).map_err(|r| malformed(&r))?;
    if let Some(bad) = path.chars().find(|c| !is_plain(*c) && *c != '/') {
        return Err(malformed(&format!(
            "{bad:?} in the path {path:?}: a path is letters, digits, '/', '.', '_' and '-' (it reaches the daemon's host, a shell on the way)"
        )));
    }
    let remote = if authority.is_empty() {
        local_transport(uri, transport)?;
        None
    } else {
        remote_transport(uri, transport)?;
        let (user, host, port) = parse_authority(authority).map_err(|r| malformed(&r))?;
        Some(RemoteTarget {
            user,
            host,
            port,
            keyfile: None,
            known_hosts_verify: true,
        })
    };
    let mut parsed = Parsed {
        driver: driver.to_ascii_lowercase(),
        path,
        remote,
        socket: None,
    };
    read_parameters(uri, query.unwrap_or(""), &mut parsed)?;
    Ok(parsed)
}

/// No host: libvirt talks to the daemon on this machine, whatever the transport says
/// (`qemu+unix:///system`); remote transports need a host.
fn local_transport(uri: &str, transport: Option<&str>) -> Result<(), UriError> {
    match transport {
        None | Some("unix") => Ok(()),
        Some(t @ ("ssh" | "libssh2" | "libssh" | "tcp" | "tls")) => Err(UriError::Malformed {
            uri: uri.into(),
            reason: format!("the {t} transport needs a host"),
        }),
        Some(t) => Err(UriError::Unsupported {
            uri: uri.into(),
            transport: t.into(),
        }),
    }
}

/// A host: only `ssh` is a transport the harness can use.
fn remote_transport(uri: &str, transport: Option<&str>) -> Result<(), UriError> {
    match transport {
        Some("ssh") => Ok(()),
        Some("unix") => Err(UriError::Malformed {
            uri: uri.into(),
            reason: "the unix transport reaches this host only: leave the host out (qemu+unix:///system)".into(),
        }),
        // libvirt's default for a URI with a host is TLS.
        None => Err(UriError::Unsupported {
            uri: uri.into(),
            transport: "tls".into(),
        }),
        Some(t) => Err(UriError::Unsupported {
            uri: uri.into(),
            transport: t.into(),
        }),
    }
}

/// The parameters a URI over SSH may carry: where and how the login goes, nothing that names
/// a program or reaches the far shell.
pub const ACCEPTED_SSH: &str = "keyfile, no_verify, no_tty, mode, proxy";
/// The parameters a URI of this host may carry.
pub const ACCEPTED_LOCAL: &str = "mode, socket";

/// Why libvirt's remote driver parameter `name` (lower case) is refused. libvirt reads
/// `name`, `command`, `socket`, `auth`, `sshauth`, `netcat`, `keyfile`, `pkipath`,
/// `known_hosts`, `known_hosts_verify`, `tls_priority`, `mode`, `proxy`, `no_sanity`,
/// `no_verify`, `no_tty` and `authfile`, and passes any other on to the daemon's driver.
fn why_refused(name: &str, remote: bool) -> &'static str {
    match name {
        "command" => "it names the program libvirt runs to connect (ssh's stand-in)",
        "netcat" => "it names the program run on the far host through its login shell",
        "socket" if remote => "its path is put into the far host's shell command unquoted",
        "name" => "it replaces the URI the daemon opens with one the harness does not see",
        "known_hosts" | "known_hosts_verify" | "sshauth" => {
            "it belongs to the libssh and libssh2 transports, not to ssh"
        }
        "pkipath" | "tls_priority" => "it belongs to the tls transport",
        "keyfile" | "no_verify" | "no_tty" | "proxy" => "it belongs to the ssh transport",
        "auth" | "authfile" => "the harness logs in with SSH keys, not with credentials libvirt asks for",
        "no_sanity" => "it skips libvirt's check that the transport works",
        _ => "not a parameter of libvirt's remote driver (libvirt would pass it on to the daemon's driver)",
    }
}

/// Reads the query's parameters into `parsed`, refusing every one but the harmless.
fn read_parameters(uri: &str, query: &str, parsed: &mut Parsed) -> Result<(), UriError> {
    let malformed = |reason: String| UriError::Malformed {
        uri: uri.into(),
        reason,
    };
    let remote = parsed.remote.is_some();
    for pair in query.split(['&', ';']).filter(|p| !p.is_empty()) {
        let (raw_name, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
        let name = percent_decode(raw_name).map_err(malformed)?;
        let value = percent_decode(raw_value).map_err(malformed)?;
        let bad = |reason: &str| UriError::Parameter {
            uri: uri.into(),
            name: name.clone(),
            value: value.clone(),
            reason: reason.into(),
        };
        // libvirt compares parameter names without regard to case.
        let lower = name.to_ascii_lowercase();
        match (lower.as_str(), &mut parsed.remote) {
            ("keyfile", Some(target)) => {
                if value.is_empty() || value.chars().any(char::is_control) {
                    return Err(bad("give the path of a private key"));
                }
                target.keyfile = Some(PathBuf::from(value.clone()));
            }
            // libvirt reads them as integers; anything but 0 is yes.
            ("no_verify", Some(target)) => {
                let n: i32 = value.parse().map_err(|_| {
                    bad("expected an integer (no_verify=1 skips the host key check)")
                })?;
                target.known_hosts_verify = n == 0;
            }
            ("no_tty", Some(_)) => {
                value
                    .parse::<i32>()
                    .map_err(|_| bad("expected an integer (no_tty=1)"))?;
            }
            ("proxy", Some(_)) => {
                if !["auto", "netcat", "native"].contains(&value.as_str()) {
                    return Err(bad("expected auto, netcat or native"));
                }
            }
            ("mode", _) => {
                if !["auto", "direct", "legacy"].contains(&value.as_str()) {
                    return Err(bad("expected auto, direct or legacy"));
                }
            }
            ("socket", None) => parsed.socket = Some(local_socket(&value).map_err(bad)?),
            _ => {
                return Err(UriError::Refused {
                    uri: uri.into(),
                    name,
                    why: why_refused(&lower, remote),
                    accepted: if remote { ACCEPTED_SSH } else { ACCEPTED_LOCAL },
                })
            }
        }
    }
    Ok(())
}

/// A local `socket=`: an absolute path, without `//` and `.` components.
fn local_socket(value: &str) -> Result<String, &'static str> {
    let path = std::path::Path::new(value);
    if !path.is_absolute() || value.chars().any(char::is_control) {
        return Err("give the absolute path of the daemon's socket");
    }
    Ok(path
        .components()
        .collect::<PathBuf>()
        .to_string_lossy()
        .into_owned())
}

/// A character that means nothing to a shell or to ssh: a letter, a digit, '.', '_' or '-'.
fn is_plain(c: char) -> bool {
    c.is_ascii_alphanumeric() || "._-".contains(c)
}

/// A URI scheme component: a letter, then letters, digits, '-' or '.'.
fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
}

/// `[user@]host[:port]`, the host possibly a bracketed IPv6 literal.
fn parse_authority(authority: &str) -> Result<(Option<String>, String, Option<u16>), String> {
    let (user, hostport) = match authority.rsplit_once('@') {
        Some((u, h)) => {
            if u.contains(':') {
                return Err("passwords in the URI are not supported: use a key".into());
            }
            let u = percent_decode(u)?;
            if u.is_empty() {
                return Err("empty user name before '@'".into());
            }
            (Some(u), h)
        }
        None => (None, authority),
    };
    let (host, port) = if let Some(bracketed) = hostport.strip_prefix('[') {
        let (inside, after) = bracketed
            .split_once(']')
            .ok_or("an IPv6 address must be closed with ']'")?;
        if inside.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(format!("[{inside}] is not an IPv6 address"));
        }
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':').ok_or("expected ':port' after ']'")?),
        };
        (inside.to_string(), port)
    } else {
        match hostport.split_once(':') {
            Some((_, p)) if p.contains(':') => {
                return Err("an IPv6 address must be in brackets: [::1]".into())
            }
            Some((h, p)) => (percent_decode(h)?, Some(p)),
            None => (percent_decode(hostport)?, None),
        }
    };
    if host.is_empty() {
        return Err("empty host name".into());
    }
    // Both go to ssh as arguments and on into the far login: nothing a shell or ssh's option
    // parser reads.
    if !host.contains(':') {
        if let Some(bad) = host.chars().find(|c| !is_plain(*c)) {
            return Err(format!(
                "{bad:?} is not allowed in a host name (letters, digits, '.', '_' and '-')"
            ));
        }
        if host.starts_with(['-', '.']) {
            return Err(format!("host name {host:?} starts with {:?}", &host[..1]));
        }
    }
    if let Some(u) = &user {
        if let Some(bad) = u.chars().find(|c| !is_plain(*c)) {
            return Err(format!(
                "{bad:?} is not allowed in a user name (letters, digits, '.', '_' and '-')"
            ));
        }
        if u.starts_with('-') {
            return Err(format!("user name {u:?} starts with '-'"));
        }
    }
    let port = match port {
        None => None,
        Some(p) => match p.parse::<u16>() {
            Ok(0) | Err(_) => return Err(format!("{p:?} is not a port (1-65535)")),
            Ok(n) => Some(n),
        },
    };
    Ok((user, host, port))
}

/// `%XX` escapes decoded; the result must be UTF-8.
fn percent_decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad %-escape in {s:?}"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("{s:?} is not UTF-8 once %-decoded"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(uri: &str) -> RemoteTarget {
        remote_target(uri)
            .unwrap_or_else(|e| panic!("{uri}: {e}"))
            .unwrap_or_else(|| panic!("{uri}: parsed as local"))
    }

    #[test]
    fn local_uris_need_no_target() {
        for uri in [
            "qemu:///system",
            "qemu:///session",
            "qemu+unix:///system",
            "qemu+unix:///system?socket=/run/libvirt/libvirt-sock",
            "test:///default",
            "qemu:///system?mode=direct",
        ] {
            assert_eq!(remote_target(uri), Ok(None), "{uri}");
        }
    }

    #[test]
    fn ssh_uris_give_user_host_and_port() {
        assert_eq!(
            remote("qemu+ssh://core@virthost.example.com/system"),
            RemoteTarget {
                user: Some("core".into()),
                host: "virthost.example.com".into(),
                port: None,
                keyfile: None,
                known_hosts_verify: true,
            }
        );
        let t = remote("qemu+ssh://10.1.2.3:2222/system");
        assert_eq!(
            (t.user, t.host.as_str(), t.port),
            (None, "10.1.2.3", Some(2222))
        );
        assert_eq!(remote("qemu+ssh://h/system").port, None);
        // Other drivers over ssh are the same login.
        assert_eq!(remote("test+ssh://h/default").host, "h");
        // A percent-escaped user name is decoded.
        assert_eq!(
            remote("qemu+ssh://a%2Eb@h/system").user.as_deref(),
            Some("a.b")
        );
    }

    #[test]
    fn ipv6_literals_lose_their_brackets() {
        let t = remote("qemu+ssh://root@[::1]:2022/system");
        assert_eq!(t.host, "::1");
        assert_eq!(t.port, Some(2022));
        assert_eq!(t.to_string(), "root@[::1]:2022");
        let t = remote("qemu+ssh://[fe80::1:2]/system");
        assert_eq!((t.host.as_str(), t.port), ("fe80::1:2", None));
        for bad in [
            "qemu+ssh://[::1/system",
            "qemu+ssh://[::1]x/system",
            "qemu+ssh://[not-v6]/system",
            "qemu+ssh://::1/system",
        ] {
            assert!(
                matches!(remote_target(bad), Err(UriError::Malformed { .. })),
                "{bad}: {:?}",
                remote_target(bad)
            );
        }
    }

    #[test]
    fn keyfile_and_no_verify_are_read_and_the_other_harmless_parameters_checked() {
        let t = remote(
            "qemu+ssh://u@h/system?keyfile=/home/u/.ssh/lab%20key&no_verify=1&no_tty=1&mode=legacy&proxy=native",
        );
        assert_eq!(t.keyfile, Some(PathBuf::from("/home/u/.ssh/lab key")));
        assert!(!t.known_hosts_verify);
        assert!(remote("qemu+ssh://h/system?no_verify=0").known_hosts_verify);
        assert!(!remote("qemu+ssh://h/system?NO_VERIFY=1").known_hosts_verify);
        assert!(remote("qemu+ssh://h/system?keyfile=k;no_verify=2")
            .keyfile
            .is_some());
        let err = remote_target("qemu+ssh://h/system?no_verify=yes").unwrap_err();
        assert!(
            matches!(err, UriError::Parameter { ref name, .. } if name == "no_verify"),
            "{err}"
        );
        let err = remote_target("qemu+ssh://h/system?keyfile=").unwrap_err();
        assert!(matches!(err, UriError::Parameter { .. }), "{err}");
        for bad in [
            "qemu+ssh://h/system?no_tty=yes",
            "qemu+ssh://h/system?mode=other",
            "qemu+ssh://h/system?proxy=/bin/sh",
            "qemu:///system?socket=",
            "qemu:///system?socket=relative",
            "qemu:///system?socket=/run/x%0A",
        ] {
            let err = remote_target(bad).unwrap_err();
            assert!(matches!(err, UriError::Parameter { .. }), "{bad}: {err}");
        }
    }

    #[test]
    fn a_parameter_that_runs_a_program_or_is_not_the_transport_s_is_refused_naming_the_accepted() {
        // Every parameter libvirt's remote driver reads but the harmless ones, and one it
        // passes on; names in any case, as libvirt compares them.
        let remote = [
            "command=/tmp/x",
            "CoMmAnD=/tmp/x",
            "netcat=/tmp/x",
            "socket=/run/libvirt/libvirt-sock",
            "name=qemu:///session",
            "auth=sasl",
            "authfile=/tmp/a",
            "sshauth=privkey",
            "known_hosts=/tmp/kh",
            "known_hosts_verify=ignore",
            "pkipath=/tmp/pki",
            "tls_priority=NORMAL",
            "no_sanity=1",
            "root=/tmp/x",
        ];
        for p in remote {
            let uri = format!("qemu+ssh://h/system?keyfile=/k&{p}");
            let err = remote_target(&uri).unwrap_err();
            let name = p.split('=').next().unwrap();
            assert!(
                matches!(&err, UriError::Refused { name: n, accepted, .. } if n == name && *accepted == ACCEPTED_SSH),
                "{uri}: {err}"
            );
            assert!(
                err.to_string().contains("accepted: keyfile, no_verify"),
                "{err}"
            );
        }
        for p in [
            "command=/tmp/x",
            "netcat=/tmp/x",
            "keyfile=/k",
            "no_verify=1",
            "proxy=native",
            "name=test:///default",
            "root=/tmp/x",
        ] {
            let uri = format!("qemu:///system?{p}");
            let err = remote_target(&uri).unwrap_err();
            assert!(
                matches!(&err, UriError::Refused { accepted, .. } if *accepted == ACCEPTED_LOCAL),
                "{uri}: {err}"
            );
        }
        // A refused registration is as refused: no program runs for a URI read from a file.
        let err = remote_target("qemu+unix:///system?command=/bin/touch").unwrap_err();
        assert!(err.to_string().contains("names the program"), "{err}");
    }

    #[test]
    fn a_character_that_reaches_the_far_shell_is_refused_wherever_it_is() {
        for uri in [
            "qemu+ssh://a%3Bb@h/system",
            "qemu+ssh://a%20b@h/system",
            "qemu+ssh://%60id%60@h/system",
            "qemu+ssh://u%27@h/system",
            "qemu+ssh://-oProxyCommand@h/system",
            "qemu+ssh://h%24x/system",
            "qemu+ssh://h%22/system",
            "qemu+ssh://-h/system",
            "qemu+ssh://h/system%3Btouch",
            "qemu+ssh://h/sys%24(id)",
            "qemu+ssh://h/sys'tem",
            "qemu+ssh://h/sys\"tem",
            "qemu+ssh://h/system%0A",
            "qemu+ssh://h/sys tem",
            "qemu+ssh://h/system\n",
            "qemu:///sys`id`",
            "qemu+ssh://h\u{e9}/system",
        ] {
            let err = remote_target(uri).expect_err(uri);
            assert!(matches!(err, UriError::Malformed { .. }), "{uri}: {err}");
        }
        // What is plain passes.
        remote("qemu+ssh://ci-bot_2.x@lab-1.example_net/system");
    }

    #[test]
    fn uris_of_one_daemon_are_one_daemon() {
        let same = [
            ["qemu:///system", "qemu+unix:///system"],
            ["qemu:///system", "QEMU+unix:///system?mode=legacy"],
            [
                "qemu:///system",
                "qemu:///system?socket=/run/libvirt/libvirt-sock",
            ],
            [
                "qemu:///system",
                "qemu:///system?socket=/var/run/libvirt/virtqemud-sock",
            ],
            [
                "qemu:///system",
                "qemu:///system?socket=/run//libvirt/./libvirt-sock-ro",
            ],
            [
                "qemu:///session?socket=/s/x",
                "qemu+unix:///session?socket=//s/x",
            ],
            [
                "qemu+ssh://root@Lab-1/system",
                "qemu+ssh://root@lab-1.:22/system",
            ],
            [
                "qemu+ssh://[::1]/system",
                "qemu+ssh://[0:0:0:0:0:0:0:1]:22/system",
            ],
            [
                "qemu+ssh://h/system",
                "qemu+ssh://h/system?keyfile=/k&no_verify=1",
            ],
        ];
        for [a, b] in same {
            assert_eq!(daemon(a).unwrap(), daemon(b).unwrap(), "{a} {b}");
        }
        let different = [
            ["qemu:///system", "qemu:///session"],
            ["qemu:///system", "qemu:///system?socket=/tmp/other-sock"],
            [
                "qemu:///session",
                "qemu:///session?socket=/run/libvirt/libvirt-sock",
            ],
            ["qemu:///system", "test:///default"],
            ["qemu+ssh://root@h/system", "qemu+ssh://h/system"],
            ["qemu+ssh://h/system", "qemu+ssh://h:2222/system"],
            ["qemu+ssh://h/system", "qemu+ssh://h/session"],
            ["qemu+ssh://h/system", "qemu+ssh://g/system"],
        ];
        for [a, b] in different {
            assert_ne!(daemon(a).unwrap(), daemon(b).unwrap(), "{a} {b}");
        }
        assert_eq!(
            daemon("qemu+ssh://u@[::1]/system").unwrap().to_string(),
            "qemu /system on u@[::1]:22"
        );
        assert_eq!(
            daemon("qemu:///system?socket=/tmp/s").unwrap().to_string(),
            "this host's qemu /system at /tmp/s"
        );
    }

    #[test]
    fn other_remote_transports_are_refused_naming_what_works() {
        for (uri, transport) in [
            ("qemu+tcp://h/system", "tcp"),
            ("qemu+tls://h/system", "tls"),
            ("qemu://h/system", "tls"),
            ("qemu+libssh2://u@h/system", "libssh2"),
            ("qemu+libssh://h/system", "libssh"),
            ("qemu+ext:///system?command=/bin/x", "ext"),
        ] {
            let err = remote_target(uri).unwrap_err();
            assert_eq!(
                err,
                UriError::Unsupported {
                    uri: uri.into(),
                    transport: transport.into()
                }
            );
            assert!(err.to_string().contains("qemu+ssh://"), "{err}");
        }
    }

    #[test]
    fn garbage_is_a_clear_error() {
        for uri in [
            "",
            "system",
            "qemu:/system",
            "://h/system",
            "9p+ssh://h/system",
            "qemu+ssh:///system",
            "qemu+unix://h/system",
            "qemu+ssh://u:pw@h/system",
            "qemu+ssh://@h/system",
            "qemu+ssh://h:0/system",
            "qemu+ssh://h:70000/system",
            "qemu+ssh://h:/system",
            "qemu+ssh://h:22x/system",
            "qemu+ssh://h%zz/system",
            "qemu+ssh://h/system#frag",
            "qemu+ssh://h/system?keyfile=%ff",
            "qemu+ssh://bad host/system",
        ] {
            let err = remote_target(uri).expect_err(uri);
            assert!(
                matches!(
                    err,
                    UriError::Malformed { .. } | UriError::Unsupported { .. }
                ),
                "{uri}: {err}"
            );
            assert!(err.to_string().contains("libvirt URI"), "{err}");
        }
    }
}
