//! `sno-harness check`: the post-pivot checks against any existing cluster.

use std::path::{Path, PathBuf};
use std::time::Duration;

use sno_harness::exit;
use sno_harness::health::check::{check_cluster, Report};
use sno_harness::health::checks::Inputs;
use sno_harness::health::{ApiEndpoint, HealthError};
use sno_harness::scenario::model::EtcdCheck;
use sno_harness::util::input_file;

use super::error::{bad, harness, CliError, Outcome};
use super::flags::write_atomically;

/// Check an existing cluster (one installed by other means, or a kept run's) the way a run
/// checks its own after the pivot: api-ready, node-ready, bootstrap-complete, cluster-ready
/// (operators settled for 30 s), and the install-config applied when one is given. Exit 0
/// healthy, 1 not healthy (each failing check named with the object that fails it), 2 bad
/// input, 4 the API could not be reached.
#[derive(clap::Args)]
pub struct CheckArgs {
    /// The cluster's admin kubeconfig: its server, CA, client certificate and
    /// tls-server-name are used as they are.
    #[arg(long, value_name = "FILE")]
    kubeconfig: PathBuf,
    /// The install-config the cluster was installed with: the cluster's reported state is
    /// compared with it.
    #[arg(long, value_name = "FILE")]
    install_config: Option<PathBuf>,
    /// Check again every 5 s until healthy or this long has passed (e.g. 10m) [default: one
    /// attempt].
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

pub fn check(a: CheckArgs) -> Outcome {
    let wait = match &a.wait {
        None => Duration::ZERO,
        Some(w) => humantime::parse_duration(w).map_err(|e| {
            bad(format!(
                "--wait {w:?}: {e}; give a duration such as 90s, 10m or 1h"
            ))
        })?,
    };
    let install_config = a
        .install_config
        .as_deref()
        .map(read_install_config)
        .transpose()?;
    let inputs = Inputs {
        api_int: api_int_of(install_config.as_ref()),
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
    let rt = tokio::runtime::Runtime::new().map_err(harness)?;
    let report = rt
        .block_on(check_cluster(&endpoint, &inputs, wait))
        .map_err(|e| match e {
            HealthError::Kubeconfig { .. } => bad(e),
            other => harness(other),
        })?;
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
