//! Running the installer (`openshift-install`, or the fixture's stand-in) and reading how it
//! ended. The real installer refuses a bad install-config with exit 3 (the install-config
//! asset's own checks) or exit 1 (the bootstrap-in-place checks, a fatal line), and fails for
//! its own reasons with exit 1 too (docs/bip-contract.md §3). So a rejection is told by what
//! the installer says, on either code: that is the system under test refusing the input. An
//! installer that crashed, was killed or said nothing recognisable failed, which is the
//! harness's or the host's business.

use std::path::Path;
use std::process::Command;

use super::{installer_message, last_error_message, run_logged, AssetsError, AssetsRequest};

/// Fragments that only the installer's validation of the install-config prints: the asset
/// error of the install-config, Kubernetes field errors (`<path>: Invalid value: ...`), and the
/// FIPS host check.
const REJECTION_SHAPES: &[&str] = &[
    "failed to create install config",
    ": Invalid value: ",
    ": Required value: ",
    ": Unsupported value: ",
    ": Forbidden: ",
    ": Duplicate value: ",
    ": Too long: ",
    ": Too many: ",
    "target cluster is in FIPS mode",
];

/// Whether `output` (the installer's, exit `code`) is a rejection of the install-config.
pub fn is_rejection(code: i32, output: &str) -> bool {
    if !(code == 1 || code == 3) || crashed(output) {
        return false;
    }
    let said = last_error_message(output);
    said.is_some_and(|m| REJECTION_SHAPES.iter().any(|s| m.contains(s)))
}

/// A Go runtime panic (the installer crashed, whatever it said before).
fn crashed(output: &str) -> bool {
    output.lines().any(|l| l.starts_with("panic: ")) && output.contains("goroutine ")
}

/// Runs `installer --dir DIR <args>` in the environment the scenario asks for, logged into
/// `log`; a rejection and a failure come back as their own errors.
pub fn run_installer(
    req: &AssetsRequest,
    dir: &Path,
    log: &Path,
    args: &[&str],
) -> Result<(), AssetsError> {
    let mut cmd = Command::new(req.installer);
    cmd.arg("--dir")
        .arg(dir)
        .args(args)
        .envs(req.installer_env.iter().map(|(k, v)| (k, v)));
    let what = format!(
        "{} --dir {} {}",
        req.installer.display(),
        dir.display(),
        args.join(" ")
    );
    tracing::debug!(command = %what, log = %log.display(), "running the installer");
    let (code, output) = run_logged(&mut cmd, (log, req.deadline), &what)?;
    tracing::debug!(code, "the installer exited");
    if code == 0 {
        return Ok(());
    }
    let message = installer_message(&output);
    if is_rejection(code, &output) {
        return Err(AssetsError::Rejected { code, message });
    }
    Err(AssetsError::CommandFailed {
        command: what,
        code,
        message,
        log: log.to_path_buf(),
    })
}

/// What `openshift-install version` says of itself, in its own words: `openshift-install
/// 4.17.0`, `built from commit <sha>`, `release image <pullspec>` (the fixture's installer
/// says the same things). The output is the installer's, so each value is one cleaned line,
/// cut at 300 characters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstallerVersion {
    pub first_line: String,
    pub commit: Option<String>,
    pub release_image: Option<String>,
}

pub fn version_of(stdout: &str) -> InstallerVersion {
    let clean = |l: &str| -> String {
        l.chars()
            .filter(|c| !c.is_control())
            .take(300)
            .collect::<String>()
            .trim()
            .to_string()
    };
    let after = |prefix: &str| {
        stdout
            .lines()
            .find_map(|l| l.trim().strip_prefix(prefix).map(clean))
            .filter(|v| !v.is_empty())
    };
    InstallerVersion {
        first_line: stdout.lines().next().map(clean).unwrap_or_default(),
        commit: after("built from commit "),
        release_image: after("release image "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BIP: &str = "level=info msg=Consuming Install Config from target directory\nlevel=fatal msg=failed to fetch Single node bootstrap In Place Ignition Config: failed to generate asset \"Single node bootstrap In Place Ignition Config\": controlPlane.replicas: Invalid value: 3: bootstrap in place requires a single ControlPlane replica\n";
    const SDN: &str = "level=error msg=failed to fetch Single node bootstrap In Place Ignition Config: failed to load asset \"Install Config\": failed to create install config: invalid \"install-config.yaml\" file: networking.networkType: Invalid value: \"OpenShiftSDN\": networkType OpenShiftSDN is not supported, please use OVNKubernetes\n";

    #[test]
    fn a_rejection_is_told_by_its_words_on_either_exit_code() {
        assert!(is_rejection(1, BIP));
        assert!(is_rejection(3, SDN));
        // The same words with an exit code the installer never uses for them.
        assert!(!is_rejection(2, SDN));
        let fips = "level=error msg=failed to fetch Single node bootstrap In Place Ignition Config: failed to load asset \"Install Config\": failed to create install config: target cluster is in FIPS mode, use the FIPS-capable installer binary for RHEL 9 on a host with FIPS enabled.\n";
        assert!(is_rejection(3, fips));
    }

    #[test]
    fn a_rejection_written_as_several_records_is_recognised() {
        // The installer's stderr hook writes each line of a message as a record of its own; the
        // FIPS refusal ends with a line of instructions that alone matches nothing.
        let fips = "level=error msg=failed to fetch Master Machines: failed to load asset \"Install Config\": failed to create install config: invalid \"install-config.yaml\" file: fips: Forbidden: target cluster is in FIPS mode, use the FIPS-capable installer binary for RHEL 9 on a host with FIPS enabled.\nlevel=error msg=To obtain a suitable binary, download the openshift-install-rhel9 archive from the client mirror, or extract the openshift-install-fips command from the release payload.\n";
        assert!(is_rejection(3, fips));
        // An earlier, unrelated error record does not make a later failure a rejection.
        let later = "level=error msg=fips: Forbidden: x\nlevel=info msg=retrying\nlevel=fatal msg=open /tmp/x: permission denied\n";
        assert!(!is_rejection(1, later));
    }

    #[test]
    fn a_crash_a_kill_or_words_it_does_not_know_are_failures() {
        let panic = format!("{BIP}panic: runtime error: invalid memory address\n\ngoroutine 1 [running]:\nmain.main()\n");
        assert!(!is_rejection(1, &panic));
        assert!(!is_rejection(-1, BIP), "killed by a signal");
        assert!(!is_rejection(1, "level=fatal msg=failed to fetch Single node bootstrap In Place Ignition Config: open /tmp/x: permission denied\n"));
        assert!(!is_rejection(1, ""));
        assert!(!is_rejection(3, "Segmentation fault\n"));
    }

    #[test]
    fn the_version_names_the_installer_its_commit_and_release_image() {
        let real = "openshift-install 4.17.0\nbuilt from commit 1a2b3c\nrelease image quay.io/openshift-release-dev/ocp-release@sha256:abc\nrelease architecture amd64\n";
        let v = version_of(real);
        assert_eq!(v.first_line, "openshift-install 4.17.0");
        assert_eq!(v.commit.as_deref(), Some("1a2b3c"));
        assert_eq!(
            v.release_image.as_deref(),
            Some("quay.io/openshift-release-dev/ocp-release@sha256:abc")
        );
        let quiet = version_of("openshift-install unreleased-master-123\n");
        assert_eq!((quiet.commit, quiet.release_image), (None, None));
        // The installer's output is not trusted: no control characters, no endless line.
        let hostile = format!("x\u{1b}[31m{}\nrelease image \n", "y".repeat(5000));
        let v = version_of(&hostile);
        assert!(!v.first_line.contains('\u{1b}') && v.first_line.chars().count() == 300);
        assert_eq!(v.release_image, None, "an empty value is none");
        assert_eq!(version_of(""), InstallerVersion::default());
    }
}
