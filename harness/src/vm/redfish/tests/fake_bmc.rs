//! An in-process BMC for the client's tests: a hyper server holding one machine's Redfish
//! resources (a system, a manager, a floppy and a CD), doing what a BMC does with the verbs,
//! recording every request, and playing the faults a test asks for.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{header, Method, Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::TcpListener;

pub const USER: &str = "admin";
pub const PASSWORD: &str = "s3cret-pass";

pub const SYSTEM: &str = "/redfish/v1/Systems/1";
pub const MANAGER: &str = "/redfish/v1/Managers/bmc";

/// One request as the BMC saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: Method,
    pub path: String,
    pub body: Value,
    pub authorization: Option<String>,
    pub if_match: Option<String>,
}

/// What the BMC does wrong, or differently.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// The insertion answers this status and body.
    pub refuse_insert: Option<(u16, Value)>,
    /// Every answer waits this long.
    pub delay: Option<Duration>,
    /// The service root is this many bytes of JSON.
    pub huge_root: Option<usize>,
    /// The service root is not JSON.
    pub bad_json: bool,
    /// The service root redirects to itself.
    pub redirect_loop: bool,
    /// The service root redirects to another server.
    pub foreign_redirect: bool,
    /// The system's collection has this many members (1 unless set).
    pub systems: Option<usize>,
    /// The virtual media hang off the manager only (older BMCs).
    pub media_on_manager_only: bool,
    /// The CD is missing: only the floppy is there.
    pub no_cd: bool,
    /// A PATCH without If-Match is refused with 428.
    pub require_etag: bool,
    /// The insertion makes a task: its monitor answers 202 this many times, then the task
    /// with this state and message.
    pub insert_task: Option<(usize, &'static str, &'static str)>,
}

/// The machine's state, the requests, the faults.
#[derive(Debug, Default)]
pub struct State {
    pub seen: Vec<Seen>,
    pub power_on: bool,
    pub image: Option<String>,
    pub write_protected: Option<bool>,
    pub boot: (String, String),
    pub faults: Faults,
    task_polls: usize,
}

pub struct FakeBmc {
    pub addr: SocketAddr,
    pub state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeBmc {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeBmc {
    /// A BMC on 127.0.0.1 with `faults`, over TLS with `tls` when given.
    pub async fn start(faults: Faults, tls: Option<Arc<rustls::ServerConfig>>) -> FakeBmc {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State {
            faults,
            boot: ("None".into(), "Disabled".into()),
            ..State::default()
        }));
        let task = tokio::spawn(accept(listener, state.clone(), tls));
        FakeBmc { addr, state, task }
    }

    pub fn url(&self, scheme: &str) -> String {
        format!("{scheme}://{}", self.addr)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }
}

async fn accept(
    listener: TcpListener,
    state: Arc<Mutex<State>>,
    tls: Option<Arc<rustls::ServerConfig>>,
) {
    while let Ok((stream, _)) = listener.accept().await {
        let state = state.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let state = state.clone();
                async move { Ok::<_, Infallible>(answer(req, &state).await) }
            });
            let builder = hyper::server::conn::http1::Builder::new();
            match tls {
                None => {
                    let _ = builder
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                }
                Some(config) => {
                    let Ok(stream) = tokio_rustls::TlsAcceptor::from(config).accept(stream).await
                    else {
                        return;
                    };
                    let _ = builder
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                }
            }
        });
    }
}

type Answer = Response<Full<Bytes>>;

fn reply(status: u16, body: Value) -> Answer {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}

fn redirect(status: u16, to: &str) -> Answer {
    Response::builder()
        .status(status)
        .header(header::LOCATION, to)
        .body(Full::new(Bytes::new()))
        .unwrap()
}

/// A Redfish error body with one extended message.
pub fn extended_error(message: &str, id: &str) -> Value {
    json!({ "error": {
        "code": "Base.1.0.GeneralError",
        "message": "A general error has occurred. See ExtendedInfo for more information.",
        "@Message.ExtendedInfo": [ { "MessageId": id, "Message": message } ]
    }})
}

async fn answer(req: Request<Incoming>, state: &Mutex<State>) -> Answer {
    let (parts, body) = req.into_parts();
    let bytes = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let text = |name: header::HeaderName| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let seen = Seen {
        method: parts.method.clone(),
        path: parts.uri.path().to_string(),
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        authorization: text(header::AUTHORIZATION),
        if_match: text(header::IF_MATCH),
    };
    let delay = state.lock().unwrap().faults.delay;
    if let Some(d) = delay {
        tokio::time::sleep(d).await;
    }
    let mut state = state.lock().unwrap();
    state.seen.push(seen.clone());
    let expected = format!(
        "Basic {}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            format!("{USER}:{PASSWORD}")
        )
    );
    if seen.authorization.as_deref() != Some(expected.as_str()) {
        return reply(
            401,
            extended_error("Invalid username or password", "Base.1.8.NoValidSession"),
        );
    }
    route(&mut state, &seen)
}

fn route(state: &mut State, seen: &Seen) -> Answer {
    if let Some(canned) = root_fault(state, &seen.path) {
        return canned;
    }
    let cd_path = media_base(state) + "/Cd";
    match (&seen.method, seen.path.as_str()) {
        (&Method::GET, "/redfish/v1/" | "/redfish/v1") => reply(200, root()),
        (&Method::GET, "/redfish/v1/Systems") => reply(200, systems(state)),
        (&Method::GET, "/redfish/v1/Systems/by-name") => redirect(307, SYSTEM),
        (&Method::GET, SYSTEM) => system_answer(state),
        (&Method::PATCH, SYSTEM) => patch_system(state, seen),
        (&Method::POST, p) if p == format!("{SYSTEM}/Actions/ComputerSystem.Reset") => {
            state.power_on = seen.body["ResetType"] == "On";
            reply(204, Value::Null)
        }
        (&Method::GET, MANAGER) => reply(200, manager(state)),
        (&Method::GET, p) if p == media_base(state) => reply(200, media_collection(state)),
        (&Method::GET, p) if p == media_base(state) + "/Floppy" => reply(200, floppy(state)),
        (&Method::GET, p) if p == cd_path && !state.faults.no_cd => reply(200, cd(state)),
        (&Method::POST, p) if p == format!("{cd_path}/Actions/VirtualMedia.InsertMedia") => {
            insert(state, seen)
        }
        (&Method::POST, p) if p == format!("{cd_path}/Actions/VirtualMedia.EjectMedia") => {
            state.image = None;
            reply(204, Value::Null)
        }
        (&Method::GET, "/redfish/v1/TaskService/Tasks/7/Monitor") => task_monitor(state),
        _ => reply(
            404,
            extended_error(
                "The resource was not found",
                "Base.1.8.ResourceMissingAtURI",
            ),
        ),
    }
}

fn root_fault(state: &State, path: &str) -> Option<Answer> {
    if path != "/redfish/v1/" {
        return None;
    }
    let f = &state.faults;
    if let Some(n) = f.huge_root {
        let filler = "x".repeat(n);
        return Some(reply(200, json!({ "Filler": filler })));
    }
    if f.bad_json {
        return Some(
            Response::builder()
                .status(200)
                .body(Full::new(Bytes::from_static(b"<html>not redfish</html>")))
                .unwrap(),
        );
    }
    if f.redirect_loop {
        return Some(redirect(302, "/redfish/v1/"));
    }
    if f.foreign_redirect {
        return Some(redirect(301, "https://elsewhere.example/redfish/v1/"));
    }
    None
}

fn root() -> Value {
    json!({
        "@odata.id": "/redfish/v1/",
        "Systems": { "@odata.id": "/redfish/v1/Systems" },
        "Managers": { "@odata.id": "/redfish/v1/Managers" },
    })
}

fn systems(state: &State) -> Value {
    let n = state.faults.systems.unwrap_or(1);
    let members: Vec<Value> = (1..=n)
        .map(|i| json!({ "@odata.id": format!("/redfish/v1/Systems/{i}") }))
        .collect();
    json!({ "Members": members, "Members@odata.count": n })
}

fn media_base(state: &State) -> String {
    match state.faults.media_on_manager_only {
        true => format!("{MANAGER}/VirtualMedia"),
        false => format!("{SYSTEM}/VirtualMedia"),
    }
}

fn system_answer(state: &State) -> Answer {
    let mut v = json!({
        "@odata.id": SYSTEM,
        "Id": "1",
        "PowerState": if state.power_on { "On" } else { "Off" },
        "Boot": {
            "BootSourceOverrideTarget": state.boot.0,
            "BootSourceOverrideEnabled": state.boot.1,
        },
        "Links": { "ManagedBy": [ { "@odata.id": MANAGER } ] },
        "Actions": { "#ComputerSystem.Reset": {
            "target": format!("{SYSTEM}/Actions/ComputerSystem.Reset"),
        }},
    });
    if !state.faults.media_on_manager_only {
        v["VirtualMedia"] = json!({ "@odata.id": media_base(state) });
    }
    let mut answer = reply(200, v);
    answer
        .headers_mut()
        .insert(header::ETAG, "W/\"42\"".parse().unwrap());
    answer
}

fn patch_system(state: &mut State, seen: &Seen) -> Answer {
    if state.faults.require_etag && seen.if_match.as_deref() != Some("W/\"42\"") {
        return reply(
            428,
            extended_error(
                "The If-Match header is required",
                "Base.1.8.PreconditionRequired",
            ),
        );
    }
    let boot = &seen.body["Boot"];
    let field = |k: &str| boot[k].as_str().unwrap_or_default().to_string();
    state.boot = (
        field("BootSourceOverrideTarget"),
        field("BootSourceOverrideEnabled"),
    );
    reply(204, Value::Null)
}

fn manager(state: &State) -> Value {
    let mut v = json!({ "@odata.id": MANAGER, "ManagerType": "BMC" });
    if state.faults.media_on_manager_only {
        v["VirtualMedia"] = json!({ "@odata.id": media_base(state) });
    }
    v
}

fn media_collection(state: &State) -> Value {
    let base = media_base(state);
    let mut members = vec![json!({ "@odata.id": format!("{base}/Floppy") })];
    if !state.faults.no_cd {
        members.push(json!({ "@odata.id": format!("{base}/Cd") }));
    }
    json!({ "Members": members })
}

fn floppy(state: &State) -> Value {
    json!({ "@odata.id": media_base(state) + "/Floppy", "MediaTypes": ["Floppy", "USBStick"] })
}

fn cd(state: &State) -> Value {
    let base = media_base(state) + "/Cd";
    json!({
        "@odata.id": base,
        "MediaTypes": ["CD", "DVD"],
        "Inserted": state.image.is_some(),
        "Image": state.image.clone().unwrap_or_default(),
        "Actions": {
            "#VirtualMedia.InsertMedia": { "target": format!("{base}/Actions/VirtualMedia.InsertMedia") },
            "#VirtualMedia.EjectMedia": { "target": format!("{base}/Actions/VirtualMedia.EjectMedia") },
        },
    })
}

fn insert(state: &mut State, seen: &Seen) -> Answer {
    if let Some((status, body)) = &state.faults.refuse_insert {
        return reply(*status, body.clone());
    }
    state.image = seen.body["Image"].as_str().map(str::to_string);
    state.write_protected = seen.body["WriteProtected"].as_bool();
    if state.faults.insert_task.is_some() {
        state.task_polls = 0;
        return redirect(202, "/redfish/v1/TaskService/Tasks/7/Monitor");
    }
    reply(204, Value::Null)
}

fn task_monitor(state: &mut State) -> Answer {
    let Some((running_polls, task_state, message)) = state.faults.insert_task else {
        return reply(404, Value::Null);
    };
    state.task_polls += 1;
    if state.task_polls <= running_polls {
        return reply(202, json!({ "TaskState": "Running" }));
    }
    reply(
        200,
        json!({
            "TaskState": task_state,
            "Messages": [ { "MessageId": "Task.1.0.Done", "Message": message } ],
        }),
    )
}
