//! `[access] authorized_keys`: the user's own public keys for user `core`, each entry a public
//! key line or the path of a file of them (a `.pub` file). Every line is checked to be an
//! OpenSSH public key of a type RHCOS's sshd accepts, so that a private key named by mistake
//! (a PEM block, a file without a key type) is refused before anything runs. Messages never
//! quote a file: one named by mistake may be a private key.

use std::path::{Path, PathBuf};

use serde::Serialize;
use ssh_key::{Algorithm, EcdsaCurve, HashAlg, PublicKey};

use super::FileError;
use crate::util::input_file::{read_bytes, Cap, Problem};

/// The key types an entry may have (OpenSSH's names); `ssh-dss` is not one: OpenSSH no longer
/// accepts DSA keys.
pub const KEY_TYPES: &[&str] = &[
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
];

/// A `.pub` file is one line of well under 1 KiB (an RSA-16384 key is some 2.8 KiB); a file of
/// many keys (an authorized_keys) fits too. Anything larger is not a key file.
pub const MAX_KEY_FILE: u64 = 64 << 10;

/// What a valid entry looks like, for every refusal.
pub const VALID: &str = "an entry is a public key line, TYPE BASE64 [COMMENT] as a .pub file holds it (TYPE one of ssh-ed25519, ssh-rsa, ecdsa-sha2-nistp256/384/521, sk-ssh-ed25519@openssh.com, sk-ecdsa-sha2-nistp256@openssh.com), or the path of a .pub file (relative to the scenario file, ~/ for the home directory)";

/// One public key `core` gets, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuthorizedKey {
    /// The line as authorized_keys gets it: `TYPE BASE64 [COMMENT]`.
    pub line: String,
    /// `SHA256:...`, as `ssh-keygen -l` prints it.
    pub fingerprint: String,
    /// Where the line came from: [`IN_THE_SCENARIO`], or the file and its line.
    pub from: String,
}

/// The `from` of a key written in the scenario itself.
pub const IN_THE_SCENARIO: &str = "the scenario";

/// Why an entry was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The entry itself, written in the scenario.
    #[error("{0}; {VALID}")]
    Line(String),
    /// The file the entry names, or a line in it.
    #[error("{0}; {VALID}")]
    File(#[from] FileError),
    #[error("{0:?}: only ~/ (the home directory, $HOME) is expanded; {VALID}")]
    Tilde(String),
    #[error("{0:?}: ~/ needs $HOME, which is not set")]
    NoHome(String),
}

/// The keys of one entry: the line it is, or the lines of the file it names (resolved against
/// `scenario_file`'s directory).
pub fn entry_keys(scenario_file: &Path, entry: &str) -> Result<Vec<AuthorizedKey>, KeyError> {
    if entry.trim().is_empty() {
        return Err(KeyError::Line("an empty entry".into()));
    }
    if is_key_line(entry) {
        let key = parse_line(entry).map_err(KeyError::Line)?;
        return Ok(vec![AuthorizedKey {
            from: IN_THE_SCENARIO.into(),
            ..key
        }]);
    }
    let path = expand_home(entry, std::env::var_os("HOME"))?;
    Ok(read_key_file(&super::resolve(scenario_file, &path))?)
}

/// Whether an entry is meant as a key line rather than a path: it starts with a key type (a
/// known one, or any word followed by a long run of base64, as `ssh-dss AAAA...` is), or is
/// a PEM block (refused as one, not looked for as a file).
fn is_key_line(entry: &str) -> bool {
    let t = entry.trim_start();
    let mut words = t.split_whitespace();
    let (first, second) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    t.starts_with("-----")
        || KEY_TYPES.contains(&first)
        || (second.len() >= 40 && second.bytes().all(is_base64_byte))
}

fn is_base64_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'='
}

/// `~/x` as `$HOME/x` (`home`); any other path as it is.
fn expand_home(entry: &str, home: Option<std::ffi::OsString>) -> Result<PathBuf, KeyError> {
    let Some(rest) = entry.strip_prefix('~') else {
        return Ok(PathBuf::from(entry));
    };
    let Some(rest) = rest.strip_prefix('/') else {
        return Err(KeyError::Tilde(entry.to_string()));
    };
    match home.filter(|h| !h.is_empty()) {
        Some(home) => Ok(Path::new(&home).join(rest)),
        None => Err(KeyError::NoHome(entry.to_string())),
    }
}

/// The keys of a file: each line that is neither blank nor a `#` comment must be a key.
pub fn read_key_file(path: &Path) -> Result<Vec<AuthorizedKey>, FileError> {
    let text = read_key_text(path)?;
    let mut keys = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let key = parse_line(line).map_err(|why| FileError::AtLine {
            path: path.to_path_buf(),
            line: i + 1,
            why,
        })?;
        keys.push(AuthorizedKey {
            from: format!("{}:{}", path.display(), i + 1),
            ..key
        });
    }
    if keys.is_empty() {
        return Err(FileError::Whole {
            path: path.to_path_buf(),
            why: "holds no public key (only blank and # lines)".into(),
        });
    }
    Ok(keys)
}

/// A key file's text: a regular file of at most [`MAX_KEY_FILE`] bytes, UTF-8.
fn read_key_text(path: &Path) -> Result<String, FileError> {
    const WHAT: &str = "public key file";
    let cap = Cap {
        what: WHAT,
        bytes: MAX_KEY_FILE,
    };
    let bytes = read_bytes(path, cap).map_err(|e| match e.problem {
        Problem::NotRegular { kind } => FileError::NotRegular {
            path: path.to_path_buf(),
            kind,
        },
        Problem::TooLarge { .. } => FileError::Whole {
            path: path.to_path_buf(),
            why: format!("more than {MAX_KEY_FILE} bytes: not a public key file"),
        },
        p => FileError::Unreadable {
            path: path.to_path_buf(),
            reason: p.to_string(),
        },
    })?;
    super::utf8_text(path, bytes, WHAT)
}

/// One line checked as a public key (its `from` left empty), or what it is instead. The line
/// is never quoted: it may be part of a private key.
pub fn parse_line(line: &str) -> Result<AuthorizedKey, String> {
    let line = line.trim();
    if let Some(why) = not_a_key_line(line) {
        return Err(why);
    }
    // One space between the words, as ssh-keygen writes them (the parser takes no other).
    let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
    let first = line.split(' ').next().unwrap_or("");
    let key = PublicKey::from_openssh(&line).map_err(|_| {
        format!("the base64 after {first} is not a {first} public key (cut short, or edited?)")
    })?;
    // The text and the key data name the same type (the parser checks); the data's own name
    // is what is trusted.
    if !is_accepted(&key.algorithm()) {
        return Err(format!("{first} is not a key type this harness adds"));
    }
    Ok(AuthorizedKey {
        fingerprint: key.fingerprint(HashAlg::Sha256).to_string(),
        line,
        from: String::new(),
    })
}

/// Why a line is no public key line before its base64 is read: a PEM block, a control
/// character, no known key type in front.
fn not_a_key_line(line: &str) -> Option<String> {
    if line.starts_with("-----BEGIN") {
        let what = if line.contains("PRIVATE KEY") {
            "a private key"
        } else {
            "a PEM block"
        };
        return Some(format!(
            "{what}, not a public key line: give its public half (the .pub file beside it, or what `ssh-keygen -y -f KEY` prints)"
        ));
    }
    if line.chars().any(|c| c.is_control() && c != '\t') {
        return Some("a control character in the line: not a public key line".into());
    }
    let first = line.split_whitespace().next().unwrap_or("");
    if KEY_TYPES.contains(&first) {
        return None;
    }
    Some(if first == "ssh-dss" {
        "a DSA key (ssh-dss), which OpenSSH no longer accepts".to_string()
    } else if looks_like_a_type(first) {
        format!("{first:?} is not a key type this harness adds")
    } else {
        "not a public key line (it does not start with a key type)".to_string()
    })
}

/// A word shaped like a key type's name (`ecdsa-sha2-nistp999`), which a message may quote: it
/// has a '-', which base64 has not, so it is no piece of a private key.
fn looks_like_a_type(word: &str) -> bool {
    word.len() <= 40
        && word.contains('-')
        && word
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-@.".contains(&b))
}

fn is_accepted(a: &Algorithm) -> bool {
    matches!(
        a,
        Algorithm::Ed25519
            | Algorithm::Rsa { hash: None }
            | Algorithm::Ecdsa {
                curve: EcdsaCurve::NistP256 | EcdsaCurve::NistP384 | EcdsaCurve::NistP521
            }
            | Algorithm::SkEd25519
            | Algorithm::SkEcdsaSha2NistP256
    )
}

/// Whether a key is of a type a FIPS node's sshd refuses: the installer refuses an ed25519
/// `sshKey` when `fips` is set ("SSH key type ssh-ed25519 unavailable when FIPS is enabled.
/// Please use rsa or ecdsa."), for the same reason.
pub fn refused_by_fips(key: &AuthorizedKey) -> bool {
    let first = key.line.split_whitespace().next().unwrap_or("");
    first == "ssh-ed25519" || first == "sk-ssh-ed25519@openssh.com"
}

#[cfg(test)]
mod tests;
