//! What can go wrong with a BMC, typed: before any request (the URL, the credentials, the TLS
//! settings: the user's to fix) and in a request (each naming the request and the BMC, and,
//! when the BMC refused, quoting its own words: Redfish's extended error).

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

/// A setting the user gave that cannot work; nothing was sent to the BMC.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("--bmc {url}: {why}")]
    Url { url: String, why: String },
    #[error("{}: {why}", path.display())]
    CredentialsFile { path: PathBuf, why: String },
    #[error("{0}")]
    CredentialsEnv(String),
    #[error("{}: {why}", path.display())]
    CaFile { path: PathBuf, why: String },
    #[error("the BMC certificate fingerprint {given:?}: {why}")]
    Fingerprint { given: String, why: String },
    #[error("the system's trusted certificates: {0}")]
    SystemRoots(String),
}

/// A request to the BMC that did not do what was asked.
#[derive(Debug, thiserror::Error)]
#[error("{what} at the BMC {bmc}: {problem}")]
pub struct RequestError {
    /// The request in words: `POST .../VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia`, or
    /// the step of discovery.
    pub what: String,
    /// The BMC's address as the user gave it (scheme, host, port).
    pub bmc: String,
    pub problem: Problem,
}

/// How a request failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    #[error("no answer within {} (the request's deadline)", human(*.0))]
    Deadline(Duration),
    #[error("could not connect: {0}")]
    Connect(String),
    #[error("the TLS handshake failed: {0}")]
    Tls(String),
    #[error("the BMC refused the credentials (401 Unauthorized{}): check the user and password given", quoted(.0))]
    Unauthorized(Option<String>),
    #[error("the BMC answered {status}: {message}")]
    Refused { status: u16, message: String },
    #[error("the answer is longer than the {} KiB read of one", .0 >> 10)]
    TooLarge(usize),
    #[error("the answer is not what Redfish says: {0}")]
    BadAnswer(String),
    #[error("redirected more than {limit} times (the last to {to})")]
    TooManyRedirects { limit: usize, to: String },
    #[error("redirected to {0}, which is not the BMC: the credentials are not sent there")]
    ForeignRedirect(String),
    #[error("{0}")]
    Missing(String),
    #[error("the BMC's task ended {state}: {message}")]
    TaskFailed { state: String, message: String },
}

impl Problem {
    /// What the BMC itself said, when it refused.
    pub fn bmc_message(&self) -> Option<&str> {
        match self {
            Problem::Refused { message, .. } | Problem::TaskFailed { message, .. } => Some(message),
            Problem::Unauthorized(m) => m.as_deref(),
            _ => None,
        }
    }
}

/// Anything the Redfish client returns.
#[derive(Debug, thiserror::Error)]
pub enum RedfishError {
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error(transparent)]
    Request(#[from] Box<RequestError>),
}

impl RedfishError {
    /// The request's problem, if it got as far as a request.
    pub fn problem(&self) -> Option<&Problem> {
        match self {
            RedfishError::Request(r) => Some(&r.problem),
            RedfishError::Setup(_) => None,
        }
    }
}

/// A duration as people write it (10s, 300ms).
pub fn human(d: Duration) -> String {
    let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    humantime::format_duration(Duration::from_millis(ms)).to_string()
}

fn quoted(m: &Option<String>) -> String {
    m.as_ref().map(|m| format!(": {m}")).unwrap_or_default()
}

/// The most characters of a BMC's message quoted.
const MAX_MESSAGE_CHARS: usize = 1000;

/// What a refusal says, from its body: the messages of Redfish's extended error
/// (`error.@Message.ExtendedInfo[].Message`, joined), else `error.message`, else the start of
/// the body as text, else the status's reason.
pub fn refusal_message(status: http::StatusCode, body: &[u8]) -> String {
    let from_json = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| extended_messages(&v));
    let text = from_json.unwrap_or_else(|| {
        let text = String::from_utf8_lossy(body);
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        match text.is_empty() {
            false => text,
            true => status
                .canonical_reason()
                .unwrap_or("no reason given")
                .into(),
        }
    });
    clip(&text)
}

/// The messages of a Redfish error body, or of a task's `Messages`.
pub fn extended_messages(v: &Value) -> Option<String> {
    let error = v.get("error");
    let infos = error
        .and_then(|e| e.get("@Message.ExtendedInfo"))
        .or_else(|| v.get("@Message.ExtendedInfo"))
        .or_else(|| v.get("Messages"))
        .and_then(Value::as_array);
    let messages: Vec<String> = infos
        .into_iter()
        .flatten()
        .filter_map(|i| {
            let m = i.get("Message").and_then(Value::as_str)?;
            let id = i.get("MessageId").and_then(Value::as_str);
            Some(match id {
                Some(id) => format!("{m} ({id})"),
                None => m.to_string(),
            })
        })
        .collect();
    if !messages.is_empty() {
        return Some(messages.join("; "));
    }
    error
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .filter(|m| !m.trim().is_empty())
        .map(str::to_string)
}

/// `text` cut to [`MAX_MESSAGE_CHARS`], control characters made spaces (a hostile BMC's
/// message must not move a terminal's cursor).
pub fn clip(text: &str) -> String {
    let clean: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    match clean.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((at, _)) => format!("{}...", &clean[..at]),
        None => clean,
    }
}
