//! The verbs the harness needs of a BMC to boot a machine from the live ISO: insert the image
//! by URL as virtual media, boot once from the CD, power on and off, read the power state,
//! eject. Each is one request (and its task, if the BMC makes one) within its deadline.

use std::fmt;
use std::time::Duration;

use http::{header, HeaderValue, Method, StatusCode};
use serde_json::{json, Value};

use super::credentials::Credentials;
use super::discovery::{discover, Target};
use super::endpoint;
use super::error::{clip, Problem, RedfishError, RequestError};
use super::http::{Limits, Transport};
use super::task;
use super::tls::{client_config, Trust};

/// What the harness is given to reach a BMC.
#[derive(Debug, Clone)]
pub struct BmcSettings {
    /// `https://HOST[:PORT]`, or `.../redfish/v1/Systems/ID` naming the system.
    pub url: String,
    pub credentials: Credentials,
    /// How its certificate is checked (https only).
    pub trust: Trust,
    pub limits: Limits,
}

/// `ComputerSystem.Reset`'s types the harness uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetType {
    On,
    ForceOff,
    GracefulShutdown,
    ForceRestart,
}

impl ResetType {
    pub fn as_str(self) -> &'static str {
        match self {
            ResetType::On => "On",
            ResetType::ForceOff => "ForceOff",
            ResetType::GracefulShutdown => "GracefulShutdown",
            ResetType::ForceRestart => "ForceRestart",
        }
    }
}

/// A system's `PowerState`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PowerState {
    On,
    Off,
    PoweringOn,
    PoweringOff,
    Paused,
    /// Anything else the BMC says, quoted.
    Other(String),
}

impl fmt::Display for PowerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PowerState::Other(s) => f.write_str(s),
            known => write!(f, "{known:?}"),
        }
    }
}

/// The system's boot override, as the BMC reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootOverride {
    /// `Cd`, `Hdd`, `Pxe`, `None`...
    pub target: Option<String>,
    /// `Once`, `Continuous` or `Disabled`.
    pub enabled: Option<String>,
}

/// The virtual CD's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Media {
    pub inserted: bool,
    /// The image's URL as the BMC reports it (empty when none).
    pub image: String,
}

/// A BMC with its system and virtual CD found.
pub struct Bmc {
    transport: Transport,
    target: Target,
}

impl Bmc {
    /// Checks the settings, then finds the system and its virtual CD on the BMC.
    pub async fn connect(settings: &BmcSettings) -> Result<Bmc, RedfishError> {
        let (endpoint, named) = endpoint::parse(&settings.url)?;
        let tls = match endpoint.https {
            true => Some(client_config(&settings.trust)?),
            false => None,
        };
        let transport = Transport::new(endpoint, tls, &settings.credentials, settings.limits)
            .map_err(|why| endpoint::url_error(&settings.url, &why))?;
        let target = discover(&transport, named.as_deref()).await?;
        Ok(Bmc { transport, target })
    }

    /// What was found: the system, the virtual CD, the actions' paths.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// `scheme://host:port` of the BMC.
    pub fn origin(&self) -> String {
        self.transport.endpoint().origin()
    }

    /// Inserts the image at `url` into the virtual CD, write-protected; done once the BMC
    /// says so (it may fetch the whole image first: the insert deadline, not the request's).
    pub async fn insert_media(&self, url: &str) -> Result<(), RedfishError> {
        let body = json!({ "Image": url, "Inserted": true, "WriteProtected": true });
        let deadline = self.transport.limits.insert;
        self.action(&self.target.insert.clone(), body, deadline)
            .await
    }

    /// Ejects whatever the virtual CD holds.
    pub async fn eject_media(&self) -> Result<(), RedfishError> {
        let deadline = self.transport.limits.request;
        self.action(&self.target.eject.clone(), json!({}), deadline)
            .await
    }

    /// The next boot, once, from the (virtual) CD.
    pub async fn boot_once_from_cd(&self) -> Result<(), RedfishError> {
        let body = json!({ "Boot": {
            "BootSourceOverrideTarget": "Cd",
            "BootSourceOverrideEnabled": "Once",
        }});
        self.patch_system(&body).await
    }

    /// `ComputerSystem.Reset` with `kind`.
    pub async fn reset(&self, kind: ResetType) -> Result<(), RedfishError> {
        let body = json!({ "ResetType": kind.as_str() });
        let deadline = self.transport.limits.request;
        self.action(&self.target.reset.clone(), body, deadline)
            .await
    }

    pub async fn power_state(&self) -> Result<PowerState, RedfishError> {
        let system = self.transport.get_json(&self.target.system).await?;
        let state = system.get("PowerState").and_then(Value::as_str);
        Ok(match state {
            Some("On") => PowerState::On,
            Some("Off") => PowerState::Off,
            Some("PoweringOn") => PowerState::PoweringOn,
            Some("PoweringOff") => PowerState::PoweringOff,
            Some("Paused") => PowerState::Paused,
            Some(other) => PowerState::Other(clip(other)),
            None => {
                let what = format!("GET {}", self.target.system);
                let why = "the system has no PowerState".to_string();
                return Err(self.transport.error(&what, Problem::BadAnswer(why)).into());
            }
        })
    }

    pub async fn boot_override(&self) -> Result<BootOverride, RedfishError> {
        let system = self.transport.get_json(&self.target.system).await?;
        let field = |name: &str| {
            system
                .pointer(&format!("/Boot/{name}"))
                .and_then(Value::as_str)
                .map(clip)
        };
        Ok(BootOverride {
            target: field("BootSourceOverrideTarget"),
            enabled: field("BootSourceOverrideEnabled"),
        })
    }

    pub async fn media(&self) -> Result<Media, RedfishError> {
        let device = self.transport.get_json(&self.target.media).await?;
        Ok(Media {
            inserted: device.get("Inserted").and_then(Value::as_bool) == Some(true),
            image: device
                .get("Image")
                .and_then(Value::as_str)
                .map(clip)
                .unwrap_or_default(),
        })
    }

    /// POSTs an action and waits for its task, all within `deadline`.
    async fn action(
        &self,
        path: &str,
        body: Value,
        deadline: Duration,
    ) -> Result<(), RedfishError> {
        let what = format!("POST {path}");
        let work = async {
            let answer = self
                .transport
                .call(Method::POST, path, Some(&body), &[], deadline)
                .await?;
            task::finished(&self.transport, &what, answer).await
        };
        match tokio::time::timeout(deadline, work).await {
            Ok(done) => done.map_err(Into::into),
            Err(_) => Err(self
                .transport
                .error(&what, Problem::Deadline(deadline))
                .into()),
        }
    }

    /// PATCHes the system; a BMC that wants the resource's ETag first (428) gets it.
    async fn patch_system(&self, body: &Value) -> Result<(), RedfishError> {
        let deadline = self.transport.limits.request;
        let path = &self.target.system;
        let first = self
            .transport
            .call(Method::PATCH, path, Some(body), &[], deadline)
            .await;
        match first {
            Err(e) if precondition_required(&e) => {
                let etag = self.etag(path).await?;
                let headers = [(header::IF_MATCH, etag)];
                self.transport
                    .call(Method::PATCH, path, Some(body), &headers, deadline)
                    .await?;
                Ok(())
            }
            other => other.map(drop).map_err(Into::into),
        }
    }

    async fn etag(&self, path: &str) -> Result<HeaderValue, RedfishError> {
        let deadline = self.transport.limits.request;
        let answer = self
            .transport
            .call(Method::GET, path, None, &[], deadline)
            .await?;
        let from_json = || {
            let v: Value = serde_json::from_slice(&answer.body).ok()?;
            HeaderValue::from_str(v.get("@odata.etag")?.as_str()?).ok()
        };
        answer
            .headers
            .get(header::ETAG)
            .cloned()
            .or_else(from_json)
            .ok_or_else(|| {
                let why = "the BMC wants an If-Match (428) but gives no ETag".to_string();
                self.transport
                    .error(&format!("GET {path}"), Problem::BadAnswer(why))
                    .into()
            })
    }
}

fn precondition_required(e: &RequestError) -> bool {
    matches!(e.problem, Problem::Refused { status, .. } if status == StatusCode::PRECONDITION_REQUIRED.as_u16())
}
