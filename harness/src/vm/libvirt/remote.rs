//! What the harness needs to know about a libvirt connection URI: whether libvirtd is on this
//! host or reached over SSH, and if over SSH, where and as whom.
//!
//! A remote libvirtd changes what the harness can do on its own: the run directory does not
//! exist there, the guest's `hostfwd` ports bind on the remote loopback and the serial console
//! cannot be a socket here. The SSH details are what the tunnel to those ports needs, read the
//! way libvirt's own `ssh` transport reads them (`driver+ssh://[user@]host[:port]/path?...`,
//! <https://libvirt.org/uri.html>), so that the tunnel logs in where libvirt does.
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
/// any other remote transport and for what is not a libvirt URI.
pub fn remote_target(uri: &str) -> Result<Option<RemoteTarget>, UriError> {
    let malformed = |reason: &str| UriError::Malformed {
        uri: uri.into(),
        reason: reason.into(),
    };
    let (scheme, rest) = uri
        .split_once("://")
        .ok_or_else(|| malformed("expected driver[+transport]://[user@][host][:port]/path"))?;
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
    let (authority, _path) = match before_query.find('/') {
        Some(i) => before_query.split_at(i),
        None => (before_query, ""),
    };
    if authority.is_empty() {
        // No host: libvirt talks to the daemon on this machine, whatever the transport says
        // (`qemu+unix:///system`); remote transports need a host.
        return match transport {
            None | Some("unix") => Ok(None),
            Some(t @ ("ssh" | "libssh2" | "libssh" | "tcp" | "tls")) => {
                Err(malformed(&format!("the {t} transport needs a host")))
            }
            Some(t) => Err(UriError::Unsupported {
                uri: uri.into(),
                transport: t.into(),
            }),
        };
    }
    match transport {
        Some("ssh") => {}
        Some("unix") => return Err(malformed(
            "the unix transport reaches this host only: leave the host out (qemu+unix:///system)",
        )),
        // libvirt's default for a URI with a host is TLS.
        None => {
            return Err(UriError::Unsupported {
                uri: uri.into(),
                transport: "tls".into(),
            })
        }
        Some(t) => {
            return Err(UriError::Unsupported {
                uri: uri.into(),
                transport: t.into(),
            })
        }
    }
    let (user, host, port) = parse_authority(authority).map_err(|r| malformed(&r))?;
    let mut target = RemoteTarget {
        user,
        host,
        port,
        keyfile: None,
        known_hosts_verify: true,
    };
    for pair in query
        .unwrap_or("")
        .split(['&', ';'])
        .filter(|p| !p.is_empty())
    {
        let (raw_name, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
        let name = percent_decode(raw_name).map_err(|r| malformed(&r))?;
        let value = percent_decode(raw_value).map_err(|r| malformed(&r))?;
        let bad = |reason: &str| UriError::Parameter {
            uri: uri.into(),
            name: name.clone(),
            value: value.clone(),
            reason: reason.into(),
        };
        // libvirt compares parameter names without regard to case.
        match name.to_ascii_lowercase().as_str() {
            "keyfile" => {
                if value.is_empty() {
                    return Err(bad("empty: give the path of a private key"));
                }
                target.keyfile = Some(PathBuf::from(value.clone()));
            }
            "no_verify" => {
                // libvirt reads it as an integer; anything but 0 skips the check.
                let n: i64 = value.parse().map_err(|_| {
                    bad("expected an integer (no_verify=1 skips the host key check)")
                })?;
                target.known_hosts_verify = n == 0;
            }
            // The others (socket, mode, command, netcat, name, no_tty, proxy, ...) are about
            // the far end or the ssh binary, not about where the tunnel logs in.
            _ => {}
        }
    }
    Ok(Some(target))
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
    if let Some(bad) = host
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || "/?#@[]\\".contains(*c))
    {
        return Err(format!("{bad:?} is not allowed in a host name"));
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
            "qemu:///embed?root=/tmp/x",
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
    fn keyfile_and_no_verify_are_read_and_other_parameters_ignored() {
        let t = remote(
            "qemu+ssh://u@h/system?keyfile=/home/u/.ssh/lab%20key&no_verify=1&socket=/run/x&mode=legacy",
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
