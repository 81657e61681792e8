//! What `observe` is given, read and checked before anything is made: where the machine's SSH
//! answers and as whom, the key, the install's kubeconfig and install-config (or the
//! installer's asset directory that holds them), where the API is reached, and the console. A
//! flag that cannot be used is bad input naming the flag and what would be valid.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};

use sno_harness::guest::ssh::SshKeyPair;
use sno_harness::run::given::Given;
use sno_harness::util::input_file::{self, Cap};
use sno_harness::vm::backend::{ConsoleSource, ExternalMachine};

use super::error::{bad, CliError};

const KEY: Cap = Cap {
    what: "an SSH private key",
    bytes: 64 << 10,
};
const KUBECONFIG: Cap = Cap {
    what: "a kubeconfig",
    bytes: 1 << 20,
};
const INSTALL_CONFIG: Cap = Cap {
    what: "an install-config",
    bytes: 1 << 20,
};
const STATE: Cap = Cap {
    what: "the installer's state file",
    bytes: 64 << 20,
};

/// The install-config's key in the installer's `.openshift_install_state.json`.
const STATE_INSTALL_CONFIG: &str = "*installconfig.InstallConfig";

/// `USER@HOST[:PORT]` (an IPv6 address in brackets): the user and the address, resolved now.
pub fn ssh_target(given: &str) -> Result<(String, SocketAddr), CliError> {
    let wrong = |why: &str| {
        bad(format!(
            "--ssh {given:?}: {why}; give USER@HOST[:PORT], e.g. core@192.0.2.10 or core@[2001:db8::10]:2222"
        ))
    };
    let Some((user, host)) = given.split_once('@') else {
        return Err(wrong("no user"));
    };
    if user.is_empty() || user.contains(char::is_whitespace) {
        return Err(wrong("no user"));
    }
    let addr = resolve(host, 22).map_err(|why| wrong(&why))?;
    Ok((user.to_string(), addr))
}

/// `HOST[:PORT]` (IPv6 in brackets) as one address, `port` when none is given.
fn resolve(host: &str, port: u16) -> Result<SocketAddr, String> {
    if host.is_empty() {
        return Err("no host".into());
    }
    if let Ok(a) = host.parse::<SocketAddr>() {
        return Ok(a);
    }
    let (name, port) = match host.rsplit_once(':') {
        Some((n, p)) if !n.contains(':') || n.ends_with(']') => (
            n,
            p.parse::<u16>()
                .map_err(|_| format!("{p:?} is not a port"))?,
        ),
        _ => (host, port),
    };
    let name = name.trim_start_matches('[').trim_end_matches(']');
    (name, port)
        .to_socket_addrs()
        .map_err(|e| format!("{name} does not resolve here ({e})"))?
        .next()
        .ok_or_else(|| format!("{name} resolves to no address"))
}

/// `--api HOST:PORT`, or the kubeconfig's server when it is not given.
pub fn api_address(
    flag: Option<&str>,
    kubeconfig: &str,
    from: &str,
) -> Result<SocketAddr, CliError> {
    if let Some(api) = flag {
        return resolve(api, 6443).map_err(|why| {
            bad(format!(
                "--api {api:?}: {why}; give HOST:PORT where this host reaches the API"
            ))
        });
    }
    let server = kubeconfig_server(kubeconfig).map_err(|why| bad(format!("{from}: {why}")))?;
    let host = server
        .strip_prefix("https://")
        .map(|h| h.split('/').next().unwrap_or(h))
        .ok_or_else(|| {
            bad(format!(
                "{from}: its server {server:?} is not an https:// URL"
            ))
        })?;
    resolve(host, 443).map_err(|why| {
        bad(format!(
            "{from}: its server {server}: {why}; give --api HOST:PORT where this host reaches the API (a forward of the node's port 6443)"
        ))
    })
}

/// The first cluster's server of a kubeconfig.
fn kubeconfig_server(text: &str) -> Result<String, String> {
    let v: serde_json::Value = serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
    v["clusters"][0]["cluster"]["server"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| "no clusters[0].cluster.server".to_string())
}

/// The key the machine's user accepts.
pub fn key(path: &Path) -> Result<SshKeyPair, CliError> {
    let what = |e: String| bad(format!("--key {}: {e}", path.display()));
    let text = input_file::read_text(path, KEY).map_err(|e| what(e.problem.to_string()))?;
    SshKeyPair::from_private_openssh(&text).map_err(|e| what(e.to_string()))
}

/// The install's files: from the installer's asset directory (`auth/kubeconfig`, and
/// `install-config.yaml` or the install-config its state file keeps), or the two files.
pub fn given(
    key: SshKeyPair,
    assets: Option<&Path>,
    files: (Option<&Path>, Option<&Path>),
) -> Result<Given, CliError> {
    let (kubeconfig, install_config, kubeadmin_password, from) = match (assets, files) {
        (Some(dir), _) => {
            let kc = read(&dir.join("auth/kubeconfig"), KUBECONFIG, "--assets")?;
            let ic = assets_install_config(dir)?;
            let password = std::fs::read_to_string(dir.join("auth/kubeadmin-password")).ok();
            (kc, ic, password, format!("--assets {}", dir.display()))
        }
        (None, (Some(kc), Some(ic))) => (
            read(kc, KUBECONFIG, "--kubeconfig")?,
            install_config_file(ic, "--install-config")?,
            None,
            format!("--kubeconfig {} --install-config {}", kc.display(), ic.display()),
        ),
        _ => {
            return Err(bad(
                "give the install's assets: --assets DIR (the installer's asset directory), or --kubeconfig FILE and --install-config FILE",
            ))
        }
    };
    Ok(Given {
        key,
        kubeconfig,
        kubeadmin_password,
        install_config: install_config.to_string(),
        from,
    })
}

fn read(path: &Path, cap: Cap, flag: &str) -> Result<String, CliError> {
    input_file::read_text(path, cap)
        .map_err(|e| bad(format!("{flag} {}: {}", path.display(), e.problem)))
}

/// An install-config file, as a JSON object.
fn install_config_file(path: &Path, flag: &str) -> Result<serde_json::Value, CliError> {
    let text = read(path, INSTALL_CONFIG, flag)?;
    let v: serde_json::Value = serde_saphyr::from_str(&text)
        .map_err(|e| bad(format!("{flag} {}: {e}", path.display())))?;
    if !v.is_object() {
        return Err(bad(format!(
            "{flag} {}: not a YAML mapping (an install-config has apiVersion, metadata, baseDomain, ...)",
            path.display()
        )));
    }
    Ok(v)
}

/// The install-config of an asset directory: its `install-config.yaml` when it has one (the
/// installer consumes it; a copy is often kept), else the one its state file records.
fn assets_install_config(dir: &Path) -> Result<serde_json::Value, CliError> {
    let yaml = dir.join("install-config.yaml");
    if yaml.exists() {
        return install_config_file(&yaml, "--assets");
    }
    let state_path: PathBuf = dir.join(".openshift_install_state.json");
    let none = || {
        bad(format!(
            "--assets {}: no install-config.yaml, and no install-config in .openshift_install_state.json; give --kubeconfig FILE and --install-config FILE instead",
            dir.display()
        ))
    };
    let text = input_file::read_text(&state_path, STATE).map_err(|_| none())?;
    let state: serde_json::Value = serde_json::from_str(&text).map_err(|_| none())?;
    let config = &state[STATE_INSTALL_CONFIG]["config"];
    config.is_object().then(|| config.clone()).ok_or_else(none)
}

/// The machine as the backend reaches it.
pub fn machine(
    (user, ssh): (String, SocketAddr),
    api: SocketAddr,
    console: (Option<&Path>, Option<&str>),
) -> Result<ExternalMachine, CliError> {
    let console = match console {
        (Some(log), _) => {
            // The file may come once the console starts (it is waited for), in a directory
            // that is there.
            let dir = log.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            if log.exists() && !log.is_file() || !log.exists() && !dir.is_dir() {
                return Err(bad(format!(
                    "--console-log {}: not a file, nor one in a directory that exists; give the file the machine's console is logged into",
                    log.display()
                )));
            }
            Some(ConsoleSource::Log(std::path::absolute(log).unwrap_or(log.to_path_buf())))
        }
        (None, Some(cmd)) if cmd.trim().is_empty() => {
            return Err(bad(
                "--console-command is empty; give a command that prints the console, e.g. \"ipmitool -I lanplus -H BMC -U USER -E sol activate\"",
            ))
        }
        (None, Some(cmd)) => Some(ConsoleSource::Command(cmd.to_string())),
        (None, None) => None,
    };
    Ok(ExternalMachine {
        ssh,
        user,
        api,
        console,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_targets_name_a_user_and_an_address() {
        assert_eq!(
            ssh_target("core@127.0.0.1:2222").unwrap(),
            ("core".into(), "127.0.0.1:2222".parse().unwrap())
        );
        assert_eq!(ssh_target("me@127.0.0.1").unwrap().1.port(), 22);
        assert_eq!(
            ssh_target("core@[::1]:2200").unwrap().1,
            "[::1]:2200".parse().unwrap()
        );
        assert_eq!(
            ssh_target("core@[::1]").unwrap().1,
            "[::1]:22".parse().unwrap()
        );
        for wrong in ["127.0.0.1", "@127.0.0.1", "core@", "core@127.0.0.1:port"] {
            let e = ssh_target(wrong).unwrap_err().message().to_string();
            assert!(
                e.contains("--ssh") && e.contains("USER@HOST[:PORT]"),
                "{wrong}: {e}"
            );
        }
    }

    #[test]
    fn the_api_is_the_kubeconfigs_server_unless_given() {
        let kc = "clusters:\n- cluster:\n    server: https://127.0.0.1:6443\n  name: sno\n";
        assert_eq!(
            api_address(None, kc, "--kubeconfig k").unwrap(),
            "127.0.0.1:6443".parse().unwrap()
        );
        assert_eq!(
            api_address(Some("127.0.0.1:4000"), kc, "k").unwrap(),
            "127.0.0.1:4000".parse().unwrap()
        );
        let e = api_address(None, "clusters: []\n", "--kubeconfig k")
            .unwrap_err()
            .message()
            .to_string();
        assert!(e.contains("--kubeconfig k"), "{e}");
        let e = api_address(None, &kc.replace("https", "http"), "--kubeconfig k")
            .unwrap_err()
            .message()
            .to_string();
        assert!(e.contains("https://"), "{e}");
    }

    #[test]
    fn an_asset_directory_gives_its_state_files_install_config() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("auth")).unwrap();
        std::fs::write(d.path().join("auth/kubeconfig"), "clusters: []\n").unwrap();
        let key = SshKeyPair::generate("t").unwrap();
        let e = given(key.clone(), Some(d.path()), (None, None))
            .unwrap_err()
            .message()
            .to_string();
        assert!(
            e.to_string()
                .contains("--kubeconfig FILE and --install-config FILE"),
            "{e}"
        );
        std::fs::write(
            d.path().join(".openshift_install_state.json"),
            r#"{"*installconfig.InstallConfig":{"config":{"metadata":{"name":"sno"}}}}"#,
        )
        .unwrap();
        let g = given(key, Some(d.path()), (None, None)).unwrap();
        assert!(g.install_config.contains("\"sno\""), "{}", g.install_config);
        assert_eq!(g.kubeconfig, "clusters: []\n");
    }
}
