//! `sno-harness check`: the post-pivot checks against any existing cluster.

use std::path::{Path, PathBuf};
use std::time::Duration;

use sno_harness::exit;
use sno_harness::flow::release_rules;
use sno_harness::health::check::{check_cluster, cut_short, Deadline, Report};
use sno_harness::health::checks::Inputs;
use sno_harness::health::watch::Watch;
use sno_harness::health::{ApiEndpoint, HealthError};
use sno_harness::scenario::model::EtcdCheck;
use sno_harness::util::input_file;

use super::error::{bad, harness, CliError, Outcome};
use super::flags::write_atomically;

/// Check an existing cluster (one installed by other means, or a kept run's) the way a run
/// checks its own after the pivot: api-ready, node-ready, bootstrap-complete, cluster-ready
/// (operators settled for 30 s), and the install-config applied when one is given. Each API
/// request is bounded: 10 s to connect (TCP and TLS handshake), 20 s of silence, 30 s in all,
/// 32 MiB of response body. Exit 0 healthy, 1 not healthy (each failing check named with the
/// object that fails it), 2 bad input, 4 the API could not be reached or the deadline passed
/// (naming the request that did not answer, its server, and how long it waited).
#[derive(clap::Args)]
pub struct CheckArgs {
    /// The cluster's admin kubeconfig: its server, CA, client certificate and
    /// tls-server-name are used as they are.
    #[arg(long, value_name = "FILE")]
    kubeconfig: PathBuf,
    /// The install-config the cluster was installed with: the cluster's reported state is
    /// compared with it, the installer's defaults filled in for the fields it leaves out.
    #[arg(long, value_name = "FILE")]
    install_config: Option<PathBuf>,
    /// Check again every 5 s until healthy, within this deadline for the whole command (e.g.
    /// 10m): when it passes, exit 4 naming what did not answer [default: one attempt, within
    /// 60 s].
    #[arg(long, value_name = "DURATION")]
    wait: Option<String>,
    /// Also write the result as JSON (schema sno-harness/check/v1) to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Whether bootstrap-complete needs etcd's EtcdBootstrapMemberRemoved: auto (by the
    /// cluster's release, 4.16 on), required, or skipped.
    #[arg(long, value_name = "RULE", default_value = "auto", value_parser = ["auto", "required", "skipped"])]
    etcd_rule: String,
}

/// The largest install-config read (a real one is a few KiB).
const INSTALL_CONFIG: input_file::Cap = input_file::Cap {
    what: "an install-config",
    bytes: 1 << 20,
};

/// Past the deadline, how long the command waits for the check's own report (naming the
/// request cut short) before it reports from the outside what was still waited for.
const GRACE: Duration = Duration::from_secs(2);

pub fn check(a: CheckArgs) -> Outcome {
    let deadline = match &a.wait {
        None => Deadline::one_attempt(),
        Some(w) => match humantime::parse_duration(w) {
            Ok(d) if !d.is_zero() => Deadline::wait(d, w),
            Ok(_) => return Err(bad(format!(
                "--wait {w:?}: the deadline must be longer than zero; leave --wait out for one attempt"
            ))),
            Err(e) => return Err(bad(format!(
                "--wait {w:?}: {e}; give a duration such as 90s, 10m or 1h"
            ))),
        },
    };
    let install_config = a
        .install_config
        .as_deref()
        .map(read_install_config)
        .transpose()?;
    let inputs = Inputs {
        api_int: api_int_of(install_config.as_ref()),
        // A cluster the harness did not boot: no name is expected of it.
        node_name: None,
        static_addresses: Vec::new(),
        install_config,
        etcd: match a.etcd_rule.as_str() {
            "required" => EtcdCheck::Required,
            "skipped" => EtcdCheck::Skipped,
            _ => EtcdCheck::Auto,
        },
    };
    let endpoint = ApiEndpoint {
        kubeconfig: a.kubeconfig.clone(),
        server: None,
    };
    let report = within_deadline(endpoint, inputs, &deadline)?;
    print_report(&report);
    if let Some(path) = &a.json {
        let text = serde_json::to_string_pretty(&report.to_json()).expect("a report serialises");
        write_atomically(path, &(text + "\n")).map_err(|e| harness(format!("writing {e}")))?;
    }
    Ok(if report.unreachable.is_some() {
        exit::HARNESS_ERROR
    } else if report.healthy() {
        exit::OK
    } else {
        exit::SCENARIO_FAILED
    })
}

/// The check on a runtime of its own, its report awaited on this thread: the check keeps the
/// deadline itself, and this thread keeps it too (plus [`GRACE`]) in case the runtime cannot,
/// e.g. a kubeconfig's exec credential plugin that kube runs on a runtime thread and that
/// never returns. The runtime is left behind, not waited for.
fn within_deadline(
    endpoint: ApiEndpoint,
    inputs: Inputs,
    deadline: &Deadline,
) -> Result<Report, CliError> {
    let rt = tokio::runtime::Runtime::new().map_err(harness)?;
    let watch = Watch::default();
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    {
        let (watch, deadline, inputs) = (watch.clone(), deadline.clone(), inputs.clone());
        rt.spawn(async move {
            let _ = tx.send(check_cluster(&endpoint, &inputs, &deadline, &watch).await);
        });
    }
    let outcome = rx
        .recv_timeout(deadline.after + GRACE)
        .unwrap_or_else(|_| Ok(cut_short(&inputs, deadline, watch.stuck(), None)));
    rt.shutdown_background();
    outcome.map_err(|e| match e {
        HealthError::Kubeconfig { .. } => bad(e),
        other => harness(other),
    })
}

/// An install-config file as JSON: a regular file of at most 1 MiB, in YAML.
fn read_install_config(path: &Path) -> Result<serde_json::Value, CliError> {
    let what = |e: String| bad(format!("--install-config {}: {e}", path.display()));
    let text =
        input_file::read_text(path, INSTALL_CONFIG).map_err(|e| what(e.problem.to_string()))?;
    let v: serde_json::Value = serde_saphyr::from_str(&text).map_err(|e| what(e.to_string()))?;
    if !v.is_object() {
        return Err(what(
            "not a YAML mapping (an install-config has apiVersion, metadata, baseDomain, ...)"
                .into(),
        ));
    }
    Ok(v)
}

/// `api-int.<name>.<baseDomain>` of an install-config.
fn api_int_of(ic: Option<&serde_json::Value>) -> Option<String> {
    let ic = ic?;
    let (name, domain) = (ic["metadata"]["name"].as_str()?, ic["baseDomain"].as_str()?);
    Some(format!("api-int.{name}.{domain}"))
}

fn print_report(r: &Report) {
    outln!(
        "sno-harness check: {}{}",
        r.server,
        r.version
            .as_deref()
            .map(|v| format!(", release {v}"))
            .unwrap_or_default()
    );
    for p in &r.phases {
        let mark = if p.ok() { "pass" } else { "FAIL" };
        outln!("  {mark}  {:<20} {}", p.phase.name(), p.detail());
    }
    if let Some(rule) = &r.etcd_rule {
        outln!(
            "  etcd rule: {} ({})",
            if rule.required {
                "required"
            } else {
                "not required"
            },
            rule.why
        );
    }
    let not_held: Vec<String> = release_rules::applied(r.version.as_deref())
        .into_iter()
        .filter(|a| !a.applied)
        .map(|a| format!("{} (from {})", a.rule, a.from))
        .collect();
    if !not_held.is_empty() {
        outln!("  release rules not applied: {}", not_held.join(", "));
    }
    match (&r.unreachable, r.healthy()) {
        (Some(why), _) => outln!("the API cannot be reached: {why}"),
        (None, true) => outln!("healthy"),
        (None, false) => {
            let failing: Vec<&str> = r
                .phases
                .iter()
                .filter(|p| !p.ok())
                .map(|p| p.phase.name())
                .collect();
            outln!("not healthy: {}", failing.join(", "));
        }
    }
}
