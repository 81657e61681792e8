//! Typed errors. Each names the dotted JSON path of the key it is about.

use std::io;

/// What minisno-ignition understands, quoted in unknown-key errors.
pub const SUPPORTED: &str = "minisno-ignition supports: ignition.version, storage.files, \
storage.directories, storage.links, systemd.units, passwd.users";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Usage(String),
    #[error("cannot read config file {file}: {source}")]
    ReadConfig { file: String, source: io::Error },
    #[error("bad --root: {0}")]
    Root(String),
    #[error("config is not valid JSON: {0}")]
    Json(String),
    /// A key this applier does not implement (or Ignition does not know).
    #[error("unsupported Ignition key `{path}` ({SUPPORTED})")]
    UnknownKey { path: String },
    /// A key is present but its value is wrong or unsupported.
    #[error("invalid value at `{path}`: {msg}")]
    Invalid { path: String, msg: String },
    /// The config is fine but cannot be applied to this root.
    #[error("cannot apply `{path}`: {msg}")]
    Apply { path: String, msg: String },
    #[error("cannot apply `{path}`: {op} {file}: {source}")]
    Io {
        path: String,
        op: &'static str,
        file: String,
        source: io::Error,
    },
}

pub type Result<T> = std::result::Result<T, Error>;

/// `fail!(Kind, path, "fmt", args..)`: return `Err(Error::Kind { path, msg })`.
macro_rules! fail {
    ($kind:ident, $path:expr, $($msg:tt)+) => {
        return Err($crate::error::Error::$kind { path: $path.to_string(), msg: format!($($msg)+) })
    };
}

/// `ensure!(cond, path, "fmt", args..)`: `fail!(Invalid, ..)` unless `cond`.
macro_rules! ensure {
    ($cond:expr, $path:expr, $($msg:tt)+) => {
        if !$cond {
            fail!(Invalid, $path, $($msg)+);
        }
    };
}

impl Error {
    pub fn apply(path: impl Into<String>, msg: impl Into<String>) -> Self {
        Error::Apply {
            path: path.into(),
            msg: msg.into(),
        }
    }

    /// The dotted JSON path of the offending key, if the error is about one.
    pub fn json_path(&self) -> Option<&str> {
        match self {
            Error::UnknownKey { path }
            | Error::Invalid { path, .. }
            | Error::Apply { path, .. }
            | Error::Io { path, .. } => Some(path),
            _ => None,
        }
    }
}

/// Attach a JSON path, an operation and the in-root file to an io::Error.
pub fn io_err(path: &str, op: &'static str, file: &str) -> impl FnOnce(io::Error) -> Error {
    let (path, file) = (path.to_string(), file.to_string());
    move |source| Error::Io {
        path,
        op,
        file,
        source,
    }
}

/// The loud multi-line console report; `action` is what did not happen.
pub fn report(err: &Error, config: Option<&str>, action: &str) -> String {
    const P: &str = "minisno-ignition: ERROR:";
    let bar = format!("{P} {}", "*".repeat(64));
    let mut lines: Vec<String> = err
        .to_string()
        .lines()
        .map(|l| format!("{P} {l}"))
        .collect();
    lines.push(bar.clone());
    if let Some(config) = config {
        lines.push(format!("{P} Ignition config {config} was NOT {action}."));
    }
    if let Some(path) = err.json_path() {
        lines.push(format!("{P} offending JSON key: {path}"));
    }
    if !matches!(err, Error::UnknownKey { .. }) {
        lines.push(format!("{P} {SUPPORTED}."));
    }
    lines.push(format!(
        "{P} supported sources: data: URLs only; compression: gzip; hashes: sha256, sha512."
    ));
    lines.push(bar);
    lines.join("\n") + "\n"
}
