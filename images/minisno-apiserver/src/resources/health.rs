//! `/readyz`, `/livez`, `/healthz` and `/version`.

use super::Reply;
use crate::app::App;
use crate::schedule;

pub const KUBE_VERSION: &str = "v1.30.4-minisno";

/// Which health endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    Readyz,
    Livez,
    Healthz,
}

impl Check {
    fn name(self) -> &'static str {
        match self {
            Check::Readyz => "readyz",
            Check::Livez => "livez",
            Check::Healthz => "healthz",
        }
    }
}

const CHECKS: &[&str] = &[
    "ping",
    "log",
    "etcd",
    "etcd-readiness",
    "api-openshift-apiserver-available",
    "informer-sync",
    "poststarthook/start-apiserver-admission-initializer",
    "shutdown",
];

pub fn health(app: &App, check: Check, verbose: bool) -> Reply {
    let elapsed = app.elapsed();
    let s = &app.config.schedule;
    let ok = match check {
        Check::Livez => schedule::api_live(elapsed, s),
        Check::Readyz | Check::Healthz => app.timeline().api_ready(elapsed),
    };
    let code = if ok { 200 } else { 503 };
    if !verbose {
        return Reply::text(
            code,
            if ok {
                "ok".to_string()
            } else {
                format!(
                    "[-]etcd failed: reason withheld\n{} check failed\n",
                    check.name()
                )
            },
        );
    }
    let mut out = String::new();
    for c in CHECKS {
        let failing = !ok && (*c == "etcd" || *c == "etcd-readiness");
        if failing {
            out.push_str(&format!("[-]{c} failed: reason withheld\n"));
        } else {
            out.push_str(&format!("[+]{c} ok\n"));
        }
    }
    out.push_str(&format!(
        "{} check {}\n",
        check.name(),
        if ok { "passed" } else { "failed" }
    ));
    Reply::text(code, out)
}

pub fn version() -> Reply {
    Reply::json(
        200,
        &serde_json::json!({
            "major": "1",
            "minor": "30",
            "gitVersion": KUBE_VERSION,
            "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean",
            "buildDate": "2024-08-14T00:00:00Z",
            "goVersion": "minisno",
            "compiler": "rustc",
            "platform": format!("linux/{}", go_arch()),
        }),
    )
}

fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "powerpc64" => "ppc64le",
        other => other,
    }
}
