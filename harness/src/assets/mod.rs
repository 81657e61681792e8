//! The `assets` phase: install-config from the scenario, the installer's ignition config, the
//! live ISO named by the installer's stream metadata (fetched, verified, cached by digest), and
//! a per-run copy with the Ignition embedded and a serial console, made by coreos-installer.

pub mod assisted;
pub mod dns;
pub mod host_ignition;
pub mod ignition_edit;
pub mod install_config;
mod installer;
pub mod keyfiles;
pub mod multipath;
pub mod node_net;
pub use installer::InstallerVersion;
mod iso;
mod publish;
pub mod pxe;

use std::fs;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Instant;

pub use iso::{fetch_iso, fetch_iso_within, IsoError, Origin as IsoOrigin};

use crate::scenario::files;
use crate::scenario::model::{OwnIso, Scenario, SecretSource};
use install_config::InstallConfig;

/// A pull secret that satisfies the fixture's installer; it opens nothing.
pub const FIXTURE_PULL_SECRET: &str = r#"{"auths":{"minisno.invalid":{"auth":"bWluaXNubzpmaXh0dXJl","email":"fixture@minisno.invalid"}}}"#;

#[derive(Debug, thiserror::Error)]
pub enum AssetsError {
    /// The installer rejected the install-config: the system under test said no.
    #[error("the installer rejected install-config.yaml (exit {code}): {message}")]
    Rejected { code: i32, message: String },
    /// `hint` says where the installer comes from, for the scenario's profile.
    #[error("installer {path} cannot be run: {source}; {hint}")]
    InstallerMissing {
        path: PathBuf,
        #[source]
        source: std::io::Error,
        hint: &'static str,
    },
    #[error("`{command}` failed (exit {code}): {message}; see {log}")]
    CommandFailed {
        command: String,
        code: i32,
        message: String,
        log: PathBuf,
    },
    /// A helper was still running at the assets phase's deadline, and was stopped.
    #[error("`{command}` was still running at the assets phase's deadline and was stopped")]
    Late { command: String },
    #[error("pull secret: {0}")]
    Secret(String),
    #[error("additional_trust_bundle: {0}")]
    TrustBundle(String),
    #[error("stream metadata from `{installer} coreos print-stream-json`: {message}")]
    Stream { installer: PathBuf, message: String },
    #[error(transparent)]
    Iso(#[from] IsoError),
    /// The installer's Ignition cannot take the harness's additions (the install hold of
    /// `--save-state`, the node's DNS records).
    #[error("adding to the live Ignition: {}: {source}", file.display())]
    Hold {
        file: PathBuf,
        #[source]
        source: ignition_edit::EditError,
    },
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

impl AssetsError {
    /// The same error, naming `log` as the log to read.
    fn logged_in(self, log: &Path) -> Self {
        match self {
            AssetsError::CommandFailed {
                command,
                code,
                message,
                ..
            } => AssetsError::CommandFailed {
                command,
                code,
                message,
                log: log.to_path_buf(),
            },
            e => e,
        }
    }

    fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        AssetsError::Io {
            what: what.into(),
            source,
        }
    }
}

pub struct AssetsRequest<'a> {
    pub scenario: &'a Scenario,
    /// The published run directory: the redacted install-config and the redacted copies of
    /// what the installer made (`publish`).
    pub run_dir: &'a Path,
    /// The run's private directory: the installer's asset directory, the live ISO, a network
    /// boot's files.
    pub private_dir: &'a Path,
    pub installer: &'a Path,
    /// Extra environment for the installer (the fixture's faults and schedule).
    pub installer_env: Vec<(String, String)>,
    pub ssh_public_key: &'a str,
    /// Where downloaded ISOs are kept by digest.
    pub cache_dir: &'a Path,
    /// Embed an Ignition in which install-to-disk.service waits for the harness
    /// ([`hold`]): for a run that saves the VM before the install.
    pub hold_install: bool,
    /// The end of the assets phase's time: a helper still running then is stopped.
    pub deadline: Instant,
    /// Where the guest fetches the root filesystem, for a scenario that boots the minimal ISO.
    pub rootfs_url: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Assets {
    pub dir: PathBuf,
    pub kubeconfig: PathBuf,
    pub ignition: PathBuf,
    /// The per-run live ISO, with the Ignition and console karg.
    pub live_iso: PathBuf,
    /// The root filesystem the guest fetches (the minimal ISO's or PXE's), in the run
    /// directory.
    pub rootfs: Option<PathBuf>,
    /// A PXE boot's kernel, initramfs and wrapped Ignition (no live ISO is made).
    pub pxe: Option<pxe::PxeFiles>,
    pub iso_source: String,
    pub iso_sha256: String,
    /// The installer run, and what its `version` said.
    pub installer: PathBuf,
    pub installer_version: InstallerVersion,
    /// The scenario's `OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE`, when it sets one.
    pub release_override: Option<String>,
    /// The install-config given to the installer, pull secret redacted, as JSON.
    pub install_config: serde_json::Value,
}

/// Writes a file readable by its owner only (assets carry secrets).
pub mod hold;

pub fn write_private(path: &Path, data: &[u8]) -> Result<(), AssetsError> {
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| AssetsError::io(format!("writing {}", path.display()), e))?;
    f.write_all(data)
        .map_err(|e| AssetsError::io(format!("writing {}", path.display()), e))
}

/// The scenario's pull secret, as the run gives it to the installer (for the secrets the run
/// looks for in what it publishes); `None` when it cannot be read.
pub fn pull_secret_text(scenario: &Scenario) -> Option<String> {
    pull_secret(scenario).ok()
}

/// The pull secret, checked as validation checked its file: the file may have changed since,
/// and a variable is only read now.
fn pull_secret(scenario: &Scenario) -> Result<String, AssetsError> {
    match &scenario.install.pull_secret {
        None => Ok(FIXTURE_PULL_SECRET.to_string()),
        Some(SecretSource::File(p)) => {
            files::read_pull_secret(p).map_err(|e| AssetsError::Secret(e.to_string()))
        }
        Some(SecretSource::Env(v)) => {
            let text = std::env::var(v)
                .map_err(|_| AssetsError::Secret(format!("environment variable {v} is not set")))?;
            match files::pull_secret_problem(&text) {
                Some(why) => Err(AssetsError::Secret(format!(
                    "environment variable {v}: {why}"
                ))),
                None => Ok(text.trim().to_string()),
            }
        }
    }
}

/// Renders install-config.yaml for the scenario; returns (full, redacted).
pub fn render_install_config(
    scenario: &Scenario,
    ssh_public_key: &str,
) -> Result<(InstallConfig, String), AssetsError> {
    // Read again as validation read it: what is pasted in must still be certificates.
    let bundle = match &scenario.install.additional_trust_bundle {
        None => None,
        Some(p) => {
            Some(files::read_trust_bundle(p).map_err(|e| AssetsError::TrustBundle(e.to_string()))?)
        }
    };
    let ic = InstallConfig::from_spec(
        &scenario.install,
        pull_secret(scenario)?,
        install_config::ssh_key_text(ssh_public_key, &scenario.authorized_keys),
        bundle,
    );
    let redacted = ic.redacted_yaml();
    Ok((ic, redacted))
}

/// The installer's last `level=error` or `level=fatal` message, the way a person reads it.
/// On stderr the real installer writes messages unquoted, one record per line of a message, so
/// the last message is the last run of such records (joined by newlines); a quoted one (Go
/// string syntax, as in its log file) is unquoted. Without one: the last line.
fn installer_message(output: &str) -> String {
    last_error_message(output).unwrap_or_else(|| {
        output
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("(no output)")
            .trim()
            .to_string()
    })
}

/// The message of the last run of consecutive `level=error`/`level=fatal` records.
fn last_error_message(output: &str) -> Option<String> {
    let is_error = |l: &str| l.contains("level=fatal") || l.contains("level=error");
    let lines: Vec<&str> = output.lines().collect();
    let end = lines.iter().rposition(|l| is_error(l))?;
    let start = lines[..end]
        .iter()
        .rposition(|l| !is_error(l))
        .map_or(0, |i| i + 1);
    let parts: Vec<String> = lines[start..=end]
        .iter()
        .map(|l| record_message(l))
        .collect();
    Some(parts.join("\n"))
}

/// A logrus record's message: after `msg=`, unquoted when it is quoted.
fn record_message(line: &str) -> String {
    let Some(i) = line.find("msg=") else {
        return line.trim().to_string();
    };
    let msg = line[i + 4..].trim();
    if msg.len() >= 2 && msg.starts_with('"') && msg.ends_with('"') {
        if let Ok(unquoted) = serde_json::from_str::<String>(msg) {
            return unquoted;
        }
    }
    msg.to_string()
}

/// What a Rust tool such as coreos-installer says when it fails: its `Error:` line and the
/// causes under it (anyhow's report), without the backtrace that `RUST_BACKTRACE` adds and
/// whose last line would otherwise stand for the error; else its last line.
fn tool_message(output: &str) -> String {
    let mut lines = output.lines().skip_while(|l| !l.starts_with("Error: "));
    let Some(first) = lines.next() else {
        return output
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim()
            .to_string();
    };
    let mut parts = vec![first["Error: ".len()..].trim().to_string()];
    let mut causes = false;
    for l in lines {
        let t = l.trim();
        if t == "Caused by:" {
            causes = true;
        } else if t.is_empty() {
            continue;
        } else if !causes || !l.starts_with(' ') {
            break;
        } else {
            // Several causes are numbered: "    0: copying ...".
            let t = match t.split_once(": ") {
                Some((n, rest)) if n.bytes().all(|b| b.is_ascii_digit()) => rest,
                _ => t,
            };
            parts.push(t.to_string());
        }
    }
    parts.join(": ")
}

/// Runs a helper tracked (an interrupt stops it, and whatever it started, at once) with its
/// output captured, stopped at `deadline`.
fn run_tracked(cmd: &mut Command, deadline: Instant, what: &str) -> Result<Output, AssetsError> {
    run_tracked_or_late(cmd, deadline, what)?.map_err(|_| AssetsError::Late {
        command: what.to_string(),
    })
}

/// [`run_tracked`], a late helper's output kept (`Err`) for its log.
fn run_tracked_or_late(
    cmd: &mut Command,
    deadline: Instant,
    what: &str,
) -> Result<Result<Output, Output>, AssetsError> {
    use crate::util::children::{spawn, Waited};
    let tracked = spawn(
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .map_err(|e| AssetsError::io(format!("running {what}"), e))?;
    match tracked.wait_with_output_until(deadline) {
        Ok(Waited::Exited(out)) => Ok(Ok(out)),
        Ok(Waited::Late(out)) => Ok(Err(out)),
        Err(e) => Err(AssetsError::io(format!("running {what}"), e)),
    }
}

fn run_logged(
    cmd: &mut Command,
    (log, deadline): (&Path, Instant),
    what: &str,
) -> Result<(i32, String), AssetsError> {
    let waited = run_tracked_or_late(cmd, deadline, what)?;
    let out = waited.as_ref().unwrap_or_else(|late| late);
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    let mut f = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(log)
        .map_err(|e| AssetsError::io(format!("opening {}", log.display()), e))?;
    let code = out.status.code().unwrap_or(-1);
    if waited.is_err() {
        let _ = writeln!(
            f,
            "$ {what}\n{text}(still running at the deadline: stopped)\n"
        );
        return Err(AssetsError::Late {
            command: what.to_string(),
        });
    }
    let _ = writeln!(f, "$ {what}\n{text}");
    Ok((code, text))
}

/// Runs the whole assets phase: the installer's work in the private directory, and whatever
/// it made, redacted, in the run directory (on failure too: the installer's log is the
/// evidence of a rejected install-config).
pub fn prepare(req: &AssetsRequest) -> Result<Assets, AssetsError> {
    let dir = req.private_dir.join("assets");
    fs::create_dir_all(&dir).map_err(|e| AssetsError::io("creating assets/", e))?;
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))
        .map_err(|e| AssetsError::io("chmod assets/", e))?;
    let (ic, redacted) = render_install_config(req.scenario, req.ssh_public_key)?;
    let made = prepare_with(req, &dir, (&ic, &redacted));
    let mut secrets = crate::secrets::Secrets::default();
    secrets.add_pull_secret(&ic.pull_secret);
    secrets.add_private_dir(req.private_dir);
    let published = publish::redacted_copies(&dir, &req.run_dir.join("assets"), &secrets);
    // A failure points at the published log: the private one goes with the run.
    let assets = made.map_err(|e| e.logged_in(&req.run_dir.join("assets/installer.log")))?;
    published.map_err(|e| AssetsError::io("publishing the redacted assets", e))?;
    Ok(assets)
}

fn prepare_with(
    req: &AssetsRequest,
    dir: &Path,
    (ic, redacted): (&InstallConfig, &str),
) -> Result<Assets, AssetsError> {
    let log = dir.join("installer.log");
    // Owner-only: redacted of the pull secret, it still carries what the scenario pasted in
    // (proxy URLs with credentials, the trust bundle).
    write_private(
        &req.run_dir.join("install-config.yaml"),
        redacted.as_bytes(),
    )?;
    write_private(&dir.join("install-config.yaml"), ic.to_yaml().as_bytes())?;
    let installer_version = create_ignition_config(req, dir, &log)?;
    // The installer writes under its own modes (auth/ 0750): what it made holds the cluster's
    // keys, so group and others lose their bits.
    crate::util::private::make_tree_owner_only(dir)
        .map_err(|e| AssetsError::io("making assets/ owner-only", e))?;
    let ignition = dir.join("bootstrap-in-place-for-live-iso.ign");
    let kubeconfig = dir.join("auth/kubeconfig");
    let (location, sha256, origin) = iso_to_boot(req)?;
    let left = req.deadline.saturating_duration_since(Instant::now());
    let cache = req.cache_dir.join("iso");
    let source_iso = fetch_iso_within(&location, &sha256, origin, &cache, left)?;
    let live_iso = req.private_dir.join("live.iso");
    let (rootfs, pxe) = match (&req.rootfs_url, req.scenario.boot_source.is_pxe()) {
        (None, _) => {
            build_live_iso(req, dir, &log, (&ignition, &source_iso, &live_iso))?;
            (None, None)
        }
        (Some(url), false) => {
            let (minimal, rootfs) = extract_minimal_iso(req, &log, &source_iso, url)?;
            build_live_iso(req, dir, &log, (&ignition, &minimal, &live_iso))?;
            let _ = fs::remove_file(&minimal);
            (Some(rootfs), None)
        }
        (Some(url), true) => {
            let embedded = live_ignition(req, dir, &ignition)?;
            let files = pxe::make(req, &log, &source_iso, (&embedded, url))?;
            (Some(files.rootfs.clone()), Some(files))
        }
    };
    Ok(Assets {
        pxe,
        rootfs,
        dir: dir.to_path_buf(),
        kubeconfig,
        ignition,
        live_iso,
        iso_source: location,
        iso_sha256: sha256,
        installer: req.installer.to_path_buf(),
        installer_version,
        release_override: req
            .installer_env
            .iter()
            .find(|(k, _)| k == "OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE")
            .map(|(_, v)| v.clone()),
        install_config: ic.redacted_json(),
    })
}

/// The installer's assets: `create manifests` first when the harness adds a manifest (the
/// MachineConfig of the node's names, `dns/`), then `create single-node-ignition-config`;
/// each logged, a rejection of the install-config told apart from an installer that failed.
fn create_ignition_config(
    req: &AssetsRequest,
    dir: &Path,
    log: &Path,
) -> Result<InstallerVersion, AssetsError> {
    let version = format!("{} version", req.installer.display());
    let probe = run_tracked(
        Command::new(req.installer).arg("version"),
        req.deadline,
        &version,
    );
    if let Err(AssetsError::Io { source: e, .. }) = probe {
        return Err(AssetsError::InstallerMissing {
            path: req.installer.to_path_buf(),
            source: e,
            hint: match req.scenario.profile {
                crate::scenario::Profile::Openshift => {
                    "install openshift-install (the release's own, from the OpenShift mirror) \
                     on PATH, or name it in the scenario: [openshift] installer = \"PATH\""
                }
                crate::scenario::Profile::Fixture => {
                    "the fixture's installer is built by `sno-harness fixture build`; run it"
                }
            },
        });
    }
    let version = installer::version_of(&String::from_utf8_lossy(&probe?.stdout));
    // The installer consumes install-config.yaml, so it runs in its own directory.
    let names = dns::provision_for(req.scenario);
    let hostname = node_net::hostname_machine_config(req.scenario).is_some();
    if dns::machine_config(&names).is_some() || hostname {
        installer::run_installer(req, dir, log, &["create", "manifests"])?;
        dns::write_machine_config(dir, &names)?;
        node_net::write_hostname_machine_config(dir, req.scenario)?;
    }
    installer::run_installer(req, dir, log, &["create", "single-node-ignition-config"])?;
    Ok(version)
}

/// The Ignition the live ISO gets: the installer's as it made it, or a copy next to it with
/// the harness's additions (the install hold of a saving run, the node's DNS records, the
/// masked install-to-disk.service of an assisted install, multipath for a multipath
/// installation disk).
fn live_ignition(req: &AssetsRequest, dir: &Path, ignition: &Path) -> Result<PathBuf, AssetsError> {
    let names = dns::provision_for(req.scenario);
    let assisted = req.scenario.install.mode == crate::scenario::InstallMode::Assisted;
    let named = node_net::static_hostname(req.scenario).is_some();
    let multipath = multipath::installs_to_multipath(req.scenario);
    if !req.hold_install && !assisted && names.records().is_none() && !named && !multipath {
        return Ok(ignition.to_path_buf());
    }
    let text = fs::read_to_string(ignition)
        .map_err(|e| AssetsError::io(format!("reading {}", ignition.display()), e))?;
    let bad = |source| AssetsError::Hold {
        file: ignition.to_path_buf(),
        source,
    };
    let mut ign: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(ignition_edit::EditError::NotJson(e)))?;
    if req.hold_install {
        hold::add_hold(&mut ign).map_err(bad)?;
    }
    if assisted {
        assisted::mask_install_to_disk(&mut ign).map_err(bad)?;
    }
    dns::add_to_live_ignition(&mut ign, &names).map_err(bad)?;
    node_net::add_hostname_to_live_ignition(&mut ign, req.scenario).map_err(bad)?;
    multipath::add_to_live_ignition(&mut ign, req.scenario).map_err(bad)?;
    let name = if req.hold_install {
        hold::HELD_IGNITION_FILE
    } else {
        LIVE_IGNITION_FILE
    };
    let to = dir.join(name);
    write_private(&to, ign.to_string().as_bytes())?;
    Ok(to)
}

/// The live Ignition with the harness's additions (without the install hold).
pub const LIVE_IGNITION_FILE: &str = "bootstrap-in-place-for-live-iso.sno-harness.ign";

/// The ISO to boot, its SHA-256 and who named them: the scenario's `[openshift] iso` (a file
/// given without a digest is hashed here), else the installer's stream metadata.
fn iso_to_boot(req: &AssetsRequest) -> Result<(String, String, IsoOrigin), AssetsError> {
    let own = req.scenario.openshift.as_ref().and_then(|o| o.iso.as_ref());
    Ok(match own {
        None => {
            let (location, sha256) = iso_of_stream(req)?;
            (location, sha256, IsoOrigin::Stream)
        }
        Some(OwnIso::Url { url, sha256 }) => (url.clone(), sha256.clone(), IsoOrigin::Scenario),
        Some(OwnIso::File { path, sha256 }) => {
            let sha256 = match sha256 {
                Some(d) => d.clone(),
                None => iso::digest_of_file(path, &req.cache_dir.join("iso"))?,
            };
            (file_url(path), sha256, IsoOrigin::Scenario)
        }
    })
}

/// A `file://` URL of `path`, percent-encoding what a URL path cannot hold as it is.
fn file_url(path: &Path) -> String {
    let mut url = String::from("file://");
    for b in path.as_os_str().as_encoded_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                url.push(*b as char)
            }
            _ => url.push_str(&format!("%{b:02X}")),
        }
    }
    url
}

/// Where the live ISO comes from, by the installer's own stream metadata: its location and
/// SHA-256. The installer runs in the scenario's environment here too, as for its other
/// commands (the fixture's faults: under `unsigned-loader` its stream names another ISO).
fn iso_of_stream(req: &AssetsRequest) -> Result<(String, String), AssetsError> {
    let what = format!("{} coreos print-stream-json", req.installer.display());
    let out = run_tracked(
        Command::new(req.installer)
            .args(["coreos", "print-stream-json"])
            .envs(req.installer_env.iter().map(|(k, v)| (k, v))),
        req.deadline,
        &what,
    )?;
    let stream_err = |message: String| AssetsError::Stream {
        installer: req.installer.to_path_buf(),
        message,
    };
    if !out.status.success() {
        return Err(stream_err(installer_message(&String::from_utf8_lossy(
            &out.stderr,
        ))));
    }
    let stream: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| stream_err(e.to_string()))?;
    let disk = &stream["architectures"]["x86_64"]["artifacts"]["metal"]["formats"]["iso"]["disk"];
    let location = disk["location"]
        .as_str()
        .ok_or_else(|| {
            stream_err("no .architectures.x86_64.artifacts.metal.formats.iso.disk.location".into())
        })?
        .to_string();
    let sha256 = disk["sha256"]
        .as_str()
        .ok_or_else(|| {
            stream_err("no .architectures.x86_64.artifacts.metal.formats.iso.disk.sha256".into())
        })?
        .to_string();
    Ok((location, sha256))
}

/// coreos-installer's ISO commands, logged, with the run's deadline; a failure quotes its
/// `Error:` line.
struct CoreosInstaller<'a> {
    req: &'a AssetsRequest<'a>,
    log: &'a Path,
    /// The size of the ISO being copied, for the message of a full disk.
    iso_mib: u64,
}

impl<'a> CoreosInstaller<'a> {
    fn new(req: &'a AssetsRequest<'a>, log: &'a Path, iso: &Path) -> Self {
        let iso_mib = fs::metadata(iso).map(|m| m.len() >> 20).unwrap_or(0);
        CoreosInstaller { req, log, iso_mib }
    }

    /// Runs it, logged; its output on success.
    fn run(&self, args: &[&str], extra: &[&Path]) -> Result<String, AssetsError> {
        let mut cmd = Command::new("coreos-installer");
        cmd.args(args).args(extra);
        let what = format!(
            "coreos-installer {} {}",
            args.join(" "),
            extra
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" ")
        );
        let (code, output) = run_logged(&mut cmd, (self.log, self.req.deadline), &what)?;
        if code == 0 {
            return Ok(output);
        }
        let mut message = tool_message(&output);
        if output.contains("No space left on device") {
            message.push_str(&format!(
                " (the copy of the live ISO, {} MiB, goes into the run's private directory {}: \
                 free space there or set SNO_HARNESS_PRIVATE_DIR to a directory on a larger \
                 filesystem)",
                self.iso_mib,
                self.req.private_dir.display()
            ));
        }
        Err(AssetsError::CommandFailed {
            command: what,
            code,
            message,
            log: self.log.to_path_buf(),
        })
    }
}

/// The minimal ISO and the root filesystem, as `coreos-installer iso extract minimal-iso`
/// makes them of the pristine full ISO (it refuses one with an Ignition embedded): the minimal
/// ISO's kernel arguments lose `coreos.liveiso=` and gain `coreos.live.rootfs_url=URL`.
fn extract_minimal_iso(
    req: &AssetsRequest,
    log: &Path,
    full_iso: &Path,
    rootfs_url: &str,
) -> Result<(PathBuf, PathBuf), AssetsError> {
    let minimal = req.private_dir.join(MINIMAL_ISO_FILE);
    let rootfs = req.private_dir.join(ROOTFS_FILE);
    for stale in [&minimal, &rootfs] {
        // coreos-installer refuses to overwrite; a resumed directory may hold them.
        let _ = fs::remove_file(stale);
    }
    let ci = CoreosInstaller::new(req, log, full_iso);
    ci.run(
        &[
            "iso",
            "extract",
            "minimal-iso",
            "--rootfs-url",
            rootfs_url,
            "--output-rootfs",
        ],
        &[&rootfs, full_iso, &minimal],
    )?;
    Ok((minimal, rootfs))
}

/// The minimal ISO's file in the private directory, until the live ISO is made of it.
pub const MINIMAL_ISO_FILE: &str = "minimal.iso";
/// The root filesystem the harness serves to a minimal ISO, in the private directory.
pub const ROOTFS_FILE: &str = "rootfs.img";

/// The run's copy of the live ISO: the installer's Ignition (or its held copy) embedded, and
/// the serial console added to the kernel arguments, both by coreos-installer.
fn build_live_iso(
    req: &AssetsRequest,
    dir: &Path,
    log: &Path,
    (ignition, source_iso, live_iso): (&Path, &Path, &Path),
) -> Result<(), AssetsError> {
    let ci = CoreosInstaller::new(req, log, source_iso);
    // The installer's Ignition stays as it made it; a held one is a copy next to it.
    let embedded = live_ignition(req, dir, ignition)?;
    ci.run(
        &["iso", "ignition", "embed", "-f", "-i"],
        &[&embedded, Path::new("-o"), live_iso, source_iso],
    )?;
    ci.run(
        &["iso", "kargs", "modify", "-a", "console=ttyS0,115200n8"],
        &[live_iso],
    )?;
    // The scenario's static network, as a site embeds it: into the same initramfs area as
    // the Ignition, where the live system's initramfs finds it.
    let keyfiles = node_net::write_keyfiles(req.private_dir, req.scenario)?;
    if !keyfiles.is_empty() {
        let mut args = keyfile_args(&keyfiles);
        args.push(live_iso);
        ci.run(&["iso", "network", "embed"], &args)?;
    }
    // It carries the live Ignition (the pull secret, the bootstrap's keys): owner-only, as
    // coreos-installer made it under the umask (in the owner-only run directory).
    crate::util::private::set_mode(live_iso, crate::util::private::PRIVATE_FILE)
        .map_err(|e| AssetsError::io(format!("chmod 600 {}", live_iso.display()), e))
}

/// `-k FILE` for each keyfile, as coreos-installer's network commands take them.
fn keyfile_args(keyfiles: &[PathBuf]) -> Vec<&Path> {
    keyfiles
        .iter()
        .flat_map(|k| [Path::new("-k"), k.as_path()])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ISO an openshift scenario with `keys` in its `[openshift]` boots, as assets picks it.
    fn iso_picked(dir: &Path, keys: &str) -> (String, String, IsoOrigin) {
        let text = format!(
            "name = \"o\"\nprofile = \"openshift\"\n[[disks]]\nid = \"install\"\nsize = \"8GiB\"\n\
             [install]\ninstallation_disk = {{ by = \"id\", disk = \"install\" }}\n\
             pull_secret = {{ env = \"PULL_SECRET\" }}\n[openshift]\n{keys}\n"
        );
        let s = crate::scenario::parse_str(&dir.join("o.toml"), &text).unwrap();
        let req = AssetsRequest {
            scenario: &s,
            run_dir: dir,
            private_dir: dir,
            installer: Path::new("/nonexistent/openshift-install"),
            installer_env: Vec::new(),
            ssh_public_key: "",
            cache_dir: dir,
            hold_install: false,
            deadline: Instant::now(),
            rootfs_url: None,
        };
        iso_to_boot(&req).unwrap()
    }

    #[test]
    fn an_own_iso_is_booted_instead_of_the_installers_and_a_file_without_a_digest_is_hashed() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("rhcos.iso"), b"an ISO").unwrap();
        let digest_of_it = "c8b1b4d8fcb4f0e3b5fbd5e33e2e4a3cba9bd5d0a8e2e07bd2fcd2df0f6b4b1a";
        let (location, sha256, origin) = iso_picked(d.path(), "iso = \"rhcos.iso\"");
        assert_eq!(location, file_url(&d.path().join("rhcos.iso")));
        let want = crate::util::digest::sha256_of(&b"an ISO"[..]).unwrap();
        assert_eq!(
            (sha256.as_str(), origin),
            (want.as_str(), IsoOrigin::Scenario)
        );
        let keys = format!("iso = \"rhcos.iso\"\niso_sha256 = \"{digest_of_it}\"");
        let (_, sha256, _) = iso_picked(d.path(), &keys);
        assert_eq!(
            sha256, digest_of_it,
            "a given digest is taken, to be checked at the fetch"
        );
        let keys = format!("iso = \"https://m.example/r.iso\"\niso_sha256 = \"{digest_of_it}\"");
        assert_eq!(
            iso_picked(d.path(), &keys),
            (
                "https://m.example/r.iso".into(),
                digest_of_it.into(),
                IsoOrigin::Scenario
            )
        );
    }

    #[test]
    fn an_own_iso_path_becomes_a_file_url_that_reads_back_as_the_same_path() {
        for p in ["/isos/rhcos-4.17.iso", "/a b/100%/caf\u{e9}#1?.iso"] {
            let url = file_url(Path::new(p));
            assert!(url.starts_with("file:///"), "{url}");
            assert!(
                !url.contains(' ') && !url.contains('#') && !url.contains('?'),
                "{url}"
            );
            assert_eq!(iso::file_url_path(&url), Some(PathBuf::from(p)), "{url}");
        }
    }

    #[test]
    fn a_tool_message_is_its_error_and_causes_not_its_backtrace() {
        let out = "Error: copying input to temporary file\n\nCaused by:\n    No space left on device (os error 28)\n\nStack backtrace:\n   0: main\n  10: _start\n";
        assert_eq!(
            tool_message(out),
            "copying input to temporary file: No space left on device (os error 28)"
        );
        let numbered = "Error: a\n\nCaused by:\n    0: b\n    1: c\n";
        assert_eq!(tool_message(numbered), "a: b: c");
        assert_eq!(
            tool_message("some output\nthe last line\n\n"),
            "the last line"
        );
    }

    #[test]
    fn the_installer_message_is_its_last_error() {
        let out = "level=info msg=\"Consuming Install Config from target directory\"\nlevel=error msg=\"failed to fetch Single Node Bootstrap In Place Ignition Config: invalid \\\"install-config.yaml\\\" file: controlPlane.replicas: Invalid value: 3: bootstrap in place requires a single ControlPlane replica\"\n";
        let m = installer_message(out);
        assert!(m.starts_with("failed to fetch"), "{m}");
        assert!(
            m.ends_with("bootstrap in place requires a single ControlPlane replica"),
            "{m}"
        );
        assert!(m.contains("invalid \"install-config.yaml\""), "{m}");
    }

    #[test]
    fn a_message_of_several_records_is_read_whole() {
        let out = "level=info msg=Consuming Install Config from target directory\nlevel=error msg=failed to create install config: fips: Forbidden: target cluster is in FIPS mode, use the FIPS-capable installer binary.\nlevel=error msg=To obtain a suitable binary, download the archive.\n";
        assert_eq!(
            installer_message(out),
            "failed to create install config: fips: Forbidden: target cluster is in FIPS mode, use the FIPS-capable installer binary.\nTo obtain a suitable binary, download the archive."
        );
        assert_eq!(installer_message("no log format\n\n"), "no log format");
        assert_eq!(installer_message(""), "(no output)");
    }
}
