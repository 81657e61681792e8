//! Files a scenario names: where they are and what they must be.
//!
//! Every path in a scenario is relative to the scenario file's directory, whatever the working
//! directory (an absolute path is taken as it is). The two files whose content goes into
//! install-config.yaml are read at validation, so that `plan` refuses them too and no run
//! directory is made for them, and read again the same way when a run uses them: the trust
//! bundle must be PEM certificates and nothing else, the pull secret file a pull secret. Only
//! regular files are read (a FIFO would block, a device never end), at most [`MAX_NAMED_FILE`]
//! bytes. Messages say what a file is not and where; they never quote it: a file named by
//! mistake may be a secret (`/etc/shadow`, `/proc/self/environ`).

use std::path::{Path, PathBuf};

use base64::Engine;

pub mod authorized_keys;
pub mod host_ignition;

/// A bundle of every public CA (some 150) is about 220 KiB, a pull secret a few KiB: a file
/// larger than this is neither.
pub const MAX_NAMED_FILE: u64 = 1 << 20;

/// Why a named file was refused. Displayed after the scenario's key, e.g.
/// `install.additional_trust_bundle: ca.pem:3: ...`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    #[error("{}: cannot read it: {reason}", path.display())]
    Unreadable { path: PathBuf, reason: String },
    #[error("{}: is {kind}, not a regular file", path.display())]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("{}: more than {} bytes; a {what} is far smaller", path.display(), MAX_NAMED_FILE)]
    TooLarge { path: PathBuf, what: &'static str },
    #[error("{}:{line}: not UTF-8 text; a {what} is text", path.display())]
    NotText {
        path: PathBuf,
        line: usize,
        what: &'static str,
    },
    /// What is wrong, at a line of the file.
    #[error("{}:{line}: {why}", path.display())]
    AtLine {
        path: PathBuf,
        line: usize,
        why: String,
    },
    /// What is wrong with the file as a whole.
    #[error("{}: {why}", path.display())]
    Whole { path: PathBuf, why: String },
}

/// `named` as a scenario at `scenario_file` means it: relative to the scenario's directory.
pub fn resolve(scenario_file: &Path, named: &Path) -> PathBuf {
    match scenario_file.parent() {
        Some(dir) if named.is_relative() => dir.join(named),
        _ => named.to_path_buf(),
    }
}

/// A program a scenario names: a bare name (`openshift-install`) is looked up on PATH, as a
/// shell would; a path with a directory in it is resolved like any other file.
pub fn resolve_program(scenario_file: &Path, named: &Path) -> PathBuf {
    if named.components().count() == 1 && named.is_relative() {
        named.to_path_buf()
    } else {
        resolve(scenario_file, named)
    }
}

/// The trust bundle at `path`, checked: PEM CERTIFICATE blocks whose base64 is an X.509
/// certificate, blank lines between them, and nothing else.
pub fn read_trust_bundle(path: &Path) -> Result<String, FileError> {
    const WHAT: &str = "trust bundle";
    let text = read_text(path, WHAT)?;
    check_trust_bundle(&text).map_err(|p| match p {
        (Some(line), why) => FileError::AtLine {
            path: path.to_path_buf(),
            line,
            why,
        },
        (None, why) => FileError::Whole {
            path: path.to_path_buf(),
            why,
        },
    })?;
    Ok(text)
}

/// The pull secret file at `path`, checked (see [`pull_secret_problem`]) and trimmed.
pub fn read_pull_secret(path: &Path) -> Result<String, FileError> {
    let text = read_text(path, "pull secret")?;
    if let Some(why) = pull_secret_problem(&text) {
        return Err(FileError::Whole {
            path: path.to_path_buf(),
            why,
        });
    }
    Ok(text.trim().to_string())
}

/// A named file's bytes as text; bad UTF-8 named by its line, never quoted (the file may hold
/// a secret).
pub(super) fn utf8_text(
    path: &Path,
    bytes: Vec<u8>,
    what: &'static str,
) -> Result<String, FileError> {
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        FileError::NotText {
            path: path.to_path_buf(),
            line: e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1,
            what,
        }
    })
}

/// A regular file's text, at most [`MAX_NAMED_FILE`] bytes, read by the one reader of named
/// files (`util::input_file`: no FIFO blocks, no device is read, the opened file is the one
/// checked); bad UTF-8 named by its line, never quoted.
fn read_text(path: &Path, what: &'static str) -> Result<String, FileError> {
    use crate::util::input_file::{read_bytes, Cap, Problem};
    let cap = Cap {
        what,
        bytes: MAX_NAMED_FILE,
    };
    let bytes = read_bytes(path, cap).map_err(|e| match e.problem {
        Problem::NotRegular { kind } => FileError::NotRegular {
            path: path.to_path_buf(),
            kind,
        },
        Problem::TooLarge { .. } => FileError::TooLarge {
            path: path.to_path_buf(),
            what,
        },
        p => FileError::Unreadable {
            path: path.to_path_buf(),
            reason: p.to_string(),
        },
    })?;
    utf8_text(path, bytes, what)
}

const BEGIN_CERT: &str = "-----BEGIN CERTIFICATE-----";
const END_CERT: &str = "-----END CERTIFICATE-----";
const ONLY_CERTS: &str = "a trust bundle holds only PEM certificates (-----BEGIN CERTIFICATE----- ... -----END CERTIFICATE-----), with blank lines between them";

/// PEM labels named in messages; any other label is called "another type", since a label
/// is text of the file and a file named by mistake may be anything.
const KNOWN_LABELS: &[&str] = &[
    "PRIVATE KEY",
    "RSA PRIVATE KEY",
    "EC PRIVATE KEY",
    "DSA PRIVATE KEY",
    "ENCRYPTED PRIVATE KEY",
    "OPENSSH PRIVATE KEY",
    "PUBLIC KEY",
    "RSA PUBLIC KEY",
    "CERTIFICATE REQUEST",
    "NEW CERTIFICATE REQUEST",
    "TRUSTED CERTIFICATE",
    "X509 CRL",
    "PKCS7",
    "PGP PUBLIC KEY BLOCK",
    "PGP PRIVATE KEY BLOCK",
];

/// A PEM boundary line's label (`BEGIN` or `END`), if the line is one.
fn boundary<'a>(line: &'a str, which: &str) -> Option<&'a str> {
    line.strip_prefix("-----")?
        .strip_prefix(which)?
        .strip_prefix(' ')?
        .strip_suffix("-----")
}

fn block_of_another_type(label: &str) -> String {
    let kind = if label.contains("PRIVATE KEY") {
        "a private key".to_string()
    } else if KNOWN_LABELS.contains(&label) {
        format!("a PEM {label} block")
    } else {
        "a PEM block of another type".to_string()
    };
    format!("{kind}, not a certificate: {ONLY_CERTS}")
}

/// What is wrong with a trust bundle (at which line, when at one), if anything.
fn check_trust_bundle(text: &str) -> Result<(), (Option<usize>, String)> {
    // The open block: the line of its BEGIN and its base64 so far.
    let mut open: Option<(usize, String)> = None;
    let mut certificates = 0;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        match open.as_mut() {
            None if line.is_empty() => {}
            None if line == BEGIN_CERT => open = Some((n, String::new())),
            None => {
                let why = match boundary(line, "BEGIN") {
                    Some(label) => block_of_another_type(label),
                    None if boundary(line, "END").is_some() => {
                        format!("an END line without its BEGIN line: {ONLY_CERTS}")
                    }
                    None => format!("not part of a certificate: {ONLY_CERTS}"),
                };
                return Err((Some(n), why));
            }
            Some((from, _)) if line == END_CERT => {
                let (from, base64) = open.take().expect("a block is open");
                check_certificate(from, &base64)?;
                certificates += 1;
            }
            Some((from, _)) if line.starts_with("-----") => {
                return Err((
                    Some(n),
                    format!(
                        "the certificate that begins at line {from} has no {END_CERT} line before this boundary line"
                    ),
                ));
            }
            Some((from, base64)) => {
                let is_base64 = line
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'=');
                if !is_base64 {
                    return Err((
                        Some(n),
                        format!("not a line of base64, inside the certificate that begins at line {from}"),
                    ));
                }
                base64.push_str(line);
            }
        }
    }
    if let Some((from, _)) = open {
        return Err((
            Some(from),
            format!("this certificate has no {END_CERT} line"),
        ));
    }
    if certificates == 0 {
        return Err((None, format!("holds no certificate: {ONLY_CERTS}")));
    }
    Ok(())
}

/// A CERTIFICATE block's content: base64 of one DER X.509 certificate.
fn check_certificate(from: usize, base64: &str) -> Result<(), (Option<usize>, String)> {
    let der = base64::engine::general_purpose::STANDARD
        .decode(base64)
        .map_err(|_| {
            (
                Some(from),
                "the base64 of this certificate does not decode (cut short, or edited?)".into(),
            )
        })?;
    match x509_parser::parse_x509_certificate(&der) {
        Ok((&[], _)) => Ok(()),
        _ => Err((
            Some(from),
            "this block is not an X.509 certificate in DER (its base64 decodes to something else)"
                .into(),
        )),
    }
}

/// What is wrong with a pull secret, if anything: the installer's own rules (a JSON object
/// whose `auths` is an object of registries, each with `auth` or `credsStore`). Never quotes
/// it: serde_json's position is all that is said of a syntax error.
pub fn pull_secret_problem(text: &str) -> Option<String> {
    const SHAPE: &str = "a pull secret is JSON such as {\"auths\": {\"REGISTRY\": {\"auth\": \"BASE64\"}}} (from console.redhat.com)";
    let value: serde_json::Value = match serde_json::from_str(text.trim()) {
        Ok(v) => v,
        Err(e) => {
            return Some(format!(
                "not JSON (at line {} column {}); {SHAPE}",
                e.line(),
                e.column()
            ))
        }
    };
    let Some(auths) = value.get("auths").and_then(serde_json::Value::as_object) else {
        return Some(format!("has no \"auths\" object; {SHAPE}"));
    };
    if auths.is_empty() {
        return Some(format!("its \"auths\" names no registry; {SHAPE}"));
    }
    let lacking = auths
        .values()
        .filter(|a| a.get("auth").is_none() && a.get("credsStore").is_none())
        .count();
    (lacking > 0).then(|| {
        format!("{lacking} of its registries have neither \"auth\" nor \"credsStore\"; {SHAPE}")
    })
}

#[cfg(test)]
mod tests;
