//! `sno-harness check`, and the API client that runs use too, against API servers that misbehave,
//! each started here on 127.0.0.1: one that accepts and never answers, one that completes TLS
//! and then says nothing, one that trickles, one whose body never ends, one whose certificate
//! is not the kubeconfig CA's, one that refuses the client certificate, and a kubeconfig whose
//! exec credential plugin never returns. Each fake server serves a bounded number of
//! connections for a bounded time and stops by itself.

mod fake_api;

use std::io::Read;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use fake_api::{kubeconfig, Behaviour, Ca, FakeApi, API_NAME};
use sno_harness::health::client::Limits;
use sno_harness::health::failure::Transport;
use sno_harness::health::watch::Watch;
use sno_harness::health::{ApiEndpoint, ClusterApi, HealthError};

/// What `sno-harness ARGS` did: its exit code, how long it ran, its output. It is killed
/// after `limit` (the test then fails on the exit code).
struct Ran {
    code: Option<i32>,
    took: Duration,
    stdout: String,
    stderr: String,
}

fn harness(args: &[&str], limit: Duration) -> Ran {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipes = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out = thread::spawn(move || {
        let (mut o, mut e) = (String::new(), String::new());
        let _ = pipes.0.read_to_string(&mut o);
        let _ = pipes.1.read_to_string(&mut e);
        (o, e)
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            child.kill().unwrap();
        }
        thread::sleep(Duration::from_millis(20));
    };
    let took = started.elapsed();
    let (stdout, stderr) = out.join().unwrap();
    Ran {
        code: status.code(),
        took,
        stdout,
        stderr,
    }
}

impl Ran {
    fn says(&self) -> String {
        format!(
            "exit {:?} after {:?}\nstdout:\n{}stderr:\n{}",
            self.code, self.took, self.stdout, self.stderr
        )
    }
}

/// A check bounded by `--wait 3s` against a server that accepts and never answers (at TCP, or
/// after the TLS handshake): exit 4 at the deadline, naming the request, the server, and how
/// long it waited. Before the fix, the check hung until killed.
#[test]
fn a_silent_api_ends_the_check_at_its_deadline_naming_the_request_and_server() {
    let ca = Ca::new("cluster CA");
    for (behaviour, tls) in [
        (Behaviour::Silent, None),
        (Behaviour::TlsThenSilent, Some(ca.server(None))),
    ] {
        let api = FakeApi::start(behaviour, tls);
        let dir = tempfile::tempdir().unwrap();
        let kc = kubeconfig(dir.path(), &api.url, &ca, None);
        let json = dir.path().join("check.json");
        let ran = harness(
            &[
                "check",
                "--kubeconfig",
                kc.to_str().unwrap(),
                "--wait",
                "3s",
                "--json",
                json.to_str().unwrap(),
            ],
            Duration::from_secs(60),
        );
        let says = ran.says();
        assert_eq!(ran.code, Some(4), "{says}");
        // The deadline, not a request's own (longer) timeout, ended it; and promptly.
        assert!(ran.took >= Duration::from_secs(3), "{says}");
        assert!(ran.took < Duration::from_millis(5500), "{says}");
        let named = format!("GET /readyz at {}: no answer after ", api.url);
        assert!(ran.stdout.contains(&named), "{says}");
        assert!(
            ran.stdout.contains("when the deadline (--wait 3s) passed"),
            "{says}"
        );
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert_eq!(v["reachable"], false, "{v}");
        assert!(v["unreachable"].as_str().unwrap().contains(&named), "{v}");
    }
}

/// Without `--wait`, a server that never completes the handshake ends the one attempt at the
/// connect timeout (TCP and TLS handshake), exit 4. Before the fix it hung until killed.
#[test]
fn without_wait_a_silent_api_ends_at_the_connect_timeout() {
    let ca = Ca::new("cluster CA");
    let api = FakeApi::start(Behaviour::Silent, None);
    let dir = tempfile::tempdir().unwrap();
    let kc = kubeconfig(dir.path(), &api.url, &ca, None);
    let ran = harness(
        &["check", "--kubeconfig", kc.to_str().unwrap()],
        Duration::from_secs(90),
    );
    let says = ran.says();
    assert_eq!(ran.code, Some(4), "{says}");
    let connect = Limits::DEFAULT.connect;
    assert!(ran.took >= connect, "{says}");
    assert!(ran.took < connect + Duration::from_secs(5), "{says}");
    assert!(
        ran.stdout.contains(&format!(
            "GET /readyz at {}: the TCP connection and TLS handshake did not finish within 10s",
            api.url
        )),
        "{says}"
    );
}

/// A body that never ends: the check fails at the cap, quickly, exit 4 naming it; the server
/// could write little past the cap (the client stopped reading there). Before the fix, the
/// check read every byte the server sent. (The memory this takes: tests/api_body_memory.rs.)
#[test]
fn an_endless_body_stops_the_check_at_the_cap() {
    let ca = Ca::new("cluster CA");
    let dir = tempfile::tempdir().unwrap();
    let api = FakeApi::start(Behaviour::Endless, Some(ca.server(None)));
    let kc = kubeconfig(dir.path(), &api.url, &ca, None);
    let ran = harness(
        &["check", "--kubeconfig", kc.to_str().unwrap()],
        Duration::from_secs(90),
    );
    let says = ran.says();
    assert_eq!(ran.code, Some(4), "{says}");
    assert!(ran.took < Duration::from_secs(20), "{says}");
    let cap = Limits::DEFAULT.body;
    assert!(
        ran.stdout.contains(&format!(
            "GET /readyz at {}: the response body was longer than the {} MiB the harness reads of one answer",
            api.url,
            cap >> 20
        )),
        "{says}"
    );
    // What the sockets' buffers hold, at most, past what the client read.
    let slack = 16 << 20;
    assert!(
        api.sent() < cap as u64 + slack,
        "{} bytes sent: {says}",
        api.sent()
    );
}

/// The server's certificate is not signed by the kubeconfig's CA: exit 4, and the message says
/// that it is the server's certificate that failed, for which server and name. Before the fix
/// it said the admin client certificate was not accepted.
#[test]
fn a_server_certificate_from_another_ca_is_named_as_the_servers() {
    let (ours, theirs) = (Ca::new("cluster CA"), Ca::new("someone else's CA"));
    let api = FakeApi::start(Behaviour::Ok, Some(theirs.server(None)));
    let dir = tempfile::tempdir().unwrap();
    let kc = kubeconfig(dir.path(), &api.url, &ours, None);
    let ran = harness(
        &["check", "--kubeconfig", kc.to_str().unwrap()],
        Duration::from_secs(60),
    );
    let says = ran.says();
    assert_eq!(ran.code, Some(4), "{says}");
    assert!(
        ran.stdout.contains(&format!(
            "the API server at {} presented a serving certificate that does not verify against the kubeconfig's certificate-authority for the name {API_NAME} (UnknownIssuer): it is the server's certificate that failed, not the admin client certificate",
            api.url
        )),
        "{says}"
    );
    assert!(
        !ran.stdout.contains("client certificate was not accepted"),
        "{says}"
    );
}

/// The server does not take the kubeconfig's client certificate: exit 4, saying so.
#[test]
fn a_refused_client_certificate_is_named_as_the_clients() {
    let (ours, theirs) = (Ca::new("cluster CA"), Ca::new("someone else's CA"));
    let api = FakeApi::start(Behaviour::Ok, Some(ours.server(Some(&theirs))));
    let dir = tempfile::tempdir().unwrap();
    let kc = kubeconfig(dir.path(), &api.url, &ours, None);
    let ran = harness(
        &["check", "--kubeconfig", kc.to_str().unwrap()],
        Duration::from_secs(60),
    );
    let says = ran.says();
    assert_eq!(ran.code, Some(4), "{says}");
    assert!(
        ran.stdout.contains(&format!(
            "the API server at {} did not accept the kubeconfig's client certificate (TLS alert ",
            api.url
        )),
        "{says}"
    );
}

/// A kubeconfig whose exec credential plugin never returns: kube runs it on a runtime thread,
/// where no timer of the check can end it; the command still ends at the deadline plus its
/// grace, exit 4, naming the client's setting up.
#[test]
fn an_exec_plugin_that_never_returns_ends_at_the_deadline() {
    let ca = Ca::new("cluster CA");
    let dir = tempfile::tempdir().unwrap();
    let plugin = dir.path().join("plugin");
    let pid_file = dir.path().join("plugin.pid");
    std::fs::write(
        &plugin,
        format!(
            "#!/bin/sh\necho $$ > {}\nexec sleep 60\n",
            pid_file.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let kc = kubeconfig(dir.path(), &format!("https://{closed}"), &ca, Some(&plugin));
    let ran = harness(
        &[
            "check",
            "--kubeconfig",
            kc.to_str().unwrap(),
            "--wait",
            "2s",
        ],
        Duration::from_secs(60),
    );
    if let Ok(pid) = std::fs::read_to_string(&pid_file) {
        let _ = Command::new("kill").arg(pid.trim()).status();
    }
    let says = ran.says();
    assert_eq!(ran.code, Some(4), "{says}");
    // The deadline, the command's 2 s of grace, and room for a loaded machine.
    assert!(ran.took < Duration::from_millis(6500), "{says}");
    assert!(
        ran.stdout
            .contains("setting up the API client from the kubeconfig: no answer after "),
        "{says}"
    );
    assert!(
        ran.stdout.contains("when the deadline (--wait 2s) passed"),
        "{says}"
    );
}

/// The client's own bounds, small here, each named for what ran out: connect (a server that
/// never completes the TLS handshake), read (silence after it), the whole request (a body that
/// trickles), the body cap (one that does not end).
#[test]
fn each_bound_of_a_request_ends_it_and_is_named() {
    let ca = Ca::new("cluster CA");
    // The read bound is ten times the trickle's 200 ms between bytes: at load 12 a 600 ms bound
    // ran out between two of them, and the request's bound was never reached.
    let limits = Limits {
        connect: Duration::from_millis(300),
        read: Duration::from_secs(2),
        request: Duration::from_secs(4),
        body: 1 << 20,
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let cases = [
        (Behaviour::Silent, Transport::Connect(limits.connect)),
        (Behaviour::TlsThenSilent, Transport::Read(limits.read)),
        (Behaviour::Trickle, Transport::Request(limits.request)),
        (Behaviour::Endless, Transport::TooLarge(limits.body)),
    ];
    for (behaviour, expected) in cases {
        let api = FakeApi::start(behaviour, Some(ca.server(None)));
        let dir = tempfile::tempdir().unwrap();
        let ep = ApiEndpoint {
            kubeconfig: kubeconfig(dir.path(), &api.url, &ca, None),
            server: None,
        };
        let started = Instant::now();
        let e = rt
            .block_on(async {
                let client = ClusterApi::connect_with(&ep, limits, Watch::default()).await?;
                client.readyz().await
            })
            .unwrap_err();
        let took = started.elapsed();
        let text = e.to_string();
        let HealthError::Transport {
            what,
            server,
            problem,
        } = e
        else {
            panic!("not a transport error: {text}");
        };
        assert_eq!(
            (what.as_str(), server.as_str()),
            ("GET /readyz", api.url.as_str())
        );
        assert_eq!(problem, expected, "{text}");
        assert!(
            took < limits.request + Duration::from_secs(1),
            "{took:?}: {text}"
        );
        if matches!(behaviour, Behaviour::Endless) {
            assert!(
                api.sent() < (limits.body as u64) + (16 << 20),
                "{}",
                api.sent()
            );
        }
    }
}
