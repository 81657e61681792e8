//! The BMC's user and password: from a file of this user's that no one else may read, or from
//! two environment variables; never from the command line (other users see a process's
//! arguments), never written anywhere, never shown (`Debug` hides the password).
//!
//! The file holds one line, `USER:PASSWORD` (the user cannot contain `:`, as in HTTP basic
//! authentication; the password may); a final newline is allowed.

use std::fmt;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use base64::Engine;

use super::error::SetupError;

/// The environment variables the credentials may come from, both or neither.
pub const USER_ENV: &str = "SNO_BMC_USER";
pub const PASSWORD_ENV: &str = "SNO_BMC_PASSWORD";

/// A credentials file is one short line; anything larger is not one.
const MAX_FILE_BYTES: u64 = 4096;

#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    user: String,
    password: String,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .field("password", &"<redacted>")
            .finish()
    }
}

impl Credentials {
    pub fn new(user: &str, password: &str) -> Result<Credentials, String> {
        if user.is_empty() {
            return Err("the user is empty".into());
        }
        if user.contains(':') {
            return Err(
                "the user contains ':', which HTTP basic authentication cannot carry".into(),
            );
        }
        if user.chars().chain(password.chars()).any(char::is_control) {
            return Err("the user or password contains a control character".into());
        }
        Ok(Credentials {
            user: user.into(),
            password: password.into(),
        })
    }

    pub fn user(&self) -> &str {
        &self.user
    }

    /// The password, for the run's redactor (which must know every secret it is to hide) and
    /// for the Authorization header; for nothing else.
    pub fn password(&self) -> &str {
        &self.password
    }

    /// The `Authorization` header's value, marked sensitive (hyper and http leave such values
    /// out of their debug output).
    pub fn authorization(&self) -> http::HeaderValue {
        let token = base64::engine::general_purpose::STANDARD
            .encode(format!("{}:{}", self.user, self.password));
        let mut v = http::HeaderValue::from_str(&format!("Basic {token}"))
            .expect("base64 is a valid header value");
        v.set_sensitive(true);
        v
    }

    /// The credentials in `path`: a regular file of this user's, readable by no one else.
    pub fn from_file(path: &Path) -> Result<Credentials, SetupError> {
        let fail = |why: String| SetupError::CredentialsFile {
            path: path.to_path_buf(),
            why,
        };
        let text = read_owner_only(path).map_err(fail)?;
        parse_line(&text).map_err(fail)
    }

    /// The credentials in [`USER_ENV`] and [`PASSWORD_ENV`], if both are set; one without the
    /// other is an error.
    pub fn from_env() -> Result<Option<Credentials>, SetupError> {
        Self::from_vars(
            std::env::var(USER_ENV).ok(),
            std::env::var(PASSWORD_ENV).ok(),
        )
    }

    fn from_vars(
        user: Option<String>,
        password: Option<String>,
    ) -> Result<Option<Credentials>, SetupError> {
        match (user, password) {
            (None, None) => Ok(None),
            (Some(u), Some(p)) => Credentials::new(&u, &p).map(Some).map_err(|why| {
                SetupError::CredentialsEnv(format!("{USER_ENV}/{PASSWORD_ENV}: {why}"))
            }),
            (Some(_), None) => Err(SetupError::CredentialsEnv(format!(
                "{USER_ENV} is set but {PASSWORD_ENV} is not: set both, or neither"
            ))),
            (None, Some(_)) => Err(SetupError::CredentialsEnv(format!(
                "{PASSWORD_ENV} is set but {USER_ENV} is not: set both, or neither"
            ))),
        }
    }
}

/// The text of `path` if it is a regular file of this user's with no permission for group or
/// others (checked on the opened file, so what is read is what was checked).
fn read_owner_only(path: &Path) -> Result<String, String> {
    let file = File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| e.to_string())?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return Err(format!(
            "owned by uid {}, not by this user (uid {me}): a secret must be the user's own",
            meta.uid()
        ));
    }
    let mode = meta.mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "group or others may use it (mode {mode:03o}): make it the owner's only (chmod 600)"
        ));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!(
            "{} bytes, more than a credentials line ({MAX_FILE_BYTES} bytes at most)",
            meta.len()
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!("more than {MAX_FILE_BYTES} bytes"));
    }
    String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())
}

/// `USER:PASSWORD` on the one line of `text`; the error says what is wrong, never what is
/// there.
fn parse_line(text: &str) -> Result<Credentials, String> {
    let line = text.strip_suffix('\n').unwrap_or(text);
    let line = line.strip_suffix('\r').unwrap_or(line);
    if line.contains('\n') {
        return Err("more than one line: the file holds one line, USER:PASSWORD".into());
    }
    let Some((user, password)) = line.split_once(':') else {
        return Err("line 1 has no ':': the file holds one line, USER:PASSWORD".into());
    };
    Credentials::new(user, password).map_err(|why| format!("line 1: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn file_with(text: &str, mode: u32) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bmc");
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        (dir, p)
    }

    #[test]
    fn an_owner_only_file_gives_user_and_password_with_colons_in_the_password() {
        let (_d, p) = file_with("admin:pa:ss word\n", 0o600);
        let c = Credentials::from_file(&p).unwrap();
        assert_eq!((c.user(), c.password()), ("admin", "pa:ss word"));
        assert!(!format!("{c:?}").contains("pa:ss"), "{c:?}");
        assert!(c.authorization().is_sensitive());
        assert_eq!(
            c.authorization().to_str().unwrap(),
            "Basic YWRtaW46cGE6c3Mgd29yZA=="
        );
    }

    #[test]
    fn a_file_others_may_read_is_refused_naming_its_mode_and_not_its_content() {
        let (_d, p) = file_with("admin:hunter2\n", 0o644);
        let e = Credentials::from_file(&p).unwrap_err().to_string();
        assert!(e.contains("mode 644") && e.contains("chmod 600"), "{e}");
        assert!(e.contains(&p.display().to_string()), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
    }

    #[test]
    fn malformed_files_are_refused_without_quoting_them() {
        for (text, expect) in [
            ("hunter2\n", "no ':'"),
            ("a:b\nc:d\n", "more than one line"),
            (":hunter2", "user is empty"),
            ("ad\u{1b}min:hunter2", "control character"),
        ] {
            let (_d, p) = file_with(text, 0o600);
            let e = Credentials::from_file(&p).unwrap_err().to_string();
            assert!(e.contains(expect), "{text:?}: {e}");
            assert!(!e.contains("hunter2"), "{e}");
        }
    }

    #[test]
    fn a_directory_a_fifo_or_a_huge_file_is_no_credentials_file() {
        let dir = tempfile::tempdir().unwrap();
        let e = Credentials::from_file(dir.path()).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = Credentials::from_file(&fifo).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let (_d, p) = file_with(&format!("a:{}", "x".repeat(5000)), 0o600);
        let e = Credentials::from_file(&p).unwrap_err().to_string();
        assert!(e.contains("4096 bytes at most"), "{e}");
    }

    #[test]
    fn the_environment_gives_both_or_neither() {
        assert_eq!(Credentials::from_vars(None, None).unwrap(), None);
        let c = Credentials::from_vars(Some("u".into()), Some("p".into())).unwrap();
        assert_eq!(c.unwrap().password(), "p");
        let e = Credentials::from_vars(Some("u".into()), None).unwrap_err();
        assert!(e.to_string().contains("SNO_BMC_PASSWORD is not"), "{e}");
        let e = Credentials::from_vars(None, Some("p".into())).unwrap_err();
        assert!(e.to_string().contains("SNO_BMC_USER is not"), "{e}");
    }
}
