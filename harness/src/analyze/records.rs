//! The bootstrap services' records and what the installer's own analysis concludes of them.
//!
//! A record is `/var/log/openshift/<service>.json` on the bootstrap host (a log bundle's
//! `bootstrap/services/<service>.json`): a JSON array of entries, one per event, written by
//! openshift/installer's data/data/bootstrap/files/usr/local/bin/bootstrap-service-record.sh,
//! with the fields of pkg/gather/service/entry.go: `timestamp`, `phase` (`service start`,
//! `service end`, `stage start`, `stage end`, `pre-command start`/`end`, `post-command
//! start`/`end`), `result` (`success`, `failure`) on the ends, `stage`, `preCommand`,
//! `postCommand`, `errorLine` and `errorMessage` (the unit's last journal lines) on a failure.
//!
//! [`analyze`] reads one as pkg/gather/service/analyze.go's `analyzeService` does: the starts,
//! whether the last entry is a successful service (or post-command) end, the stage that failed
//! (a stage end's failure is kept over the service end it causes) and the last error; and
//! beyond it, the stage still running when the record ends. [`conclusions`] says what
//! `AnalyzeGatherBundle` says of release-image and bootkube, in its order, and the same of
//! every other service the bundle holds.

use serde::{Deserialize, Serialize};

/// One entry of a record.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(default, rename_all = "camelCase")]
pub struct RecordEntry {
    pub timestamp: String,
    pub phase: String,
    pub result: String,
    pub stage: String,
    pub pre_command: String,
    pub post_command: String,
    pub error_line: String,
    pub error_message: String,
}

/// What one service's record says.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct ServiceAnalysis {
    pub service: String,
    /// The member or file it came from.
    pub file: String,
    /// `service start` entries.
    pub starts: u32,
    /// The last entry is a successful `service end` or `post-command end`.
    pub successful: bool,
    /// The stage that failed last (analyze.go's `failingStage`), if any failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing_stage: Option<String>,
    /// The last failure's error message, its lines as recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Where the last failure happened (`errorLine`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error_line: Option<String>,
    /// The record ends with the service started and not ended: still running.
    pub running: bool,
    /// The stage started and not ended when the record ends.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_stage: Option<String>,
    /// Why the record could not be read, as the installer says it ("Could not analyze").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
    /// The entries' first and last timestamps, as recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last: Option<String>,
    #[serde(skip)]
    pub entries: Vec<RecordEntry>,
}

impl ServiceAnalysis {
    /// It failed and did not succeed since: the installer's analysis reports it.
    pub fn failed(&self) -> bool {
        self.starts > 0 && !self.successful && self.last_error.is_some()
    }
}

/// Reads one record file. An empty or malformed file is no error of the evidence: the
/// installer says it could not analyse the service and goes on, and so does this.
pub fn analyze(service: &str, file: &str, bytes: &[u8]) -> ServiceAnalysis {
    let mut a = ServiceAnalysis {
        service: service.to_string(),
        file: file.to_string(),
        ..Default::default()
    };
    match parse(bytes) {
        Ok(entries) => {
            fold(&mut a, &entries);
            a.entries = entries;
        }
        Err(why) => a.unreadable = Some(why),
    }
    a
}

/// The entries of a record, or why it is not one (as analyze.go words it).
fn parse(bytes: &[u8]) -> Result<Vec<RecordEntry>, String> {
    let text = String::from_utf8_lossy(bytes);
    let trimmed = text.trim_start();
    if trimmed.is_empty() {
        return Err("the service entries file is empty: it does not begin with a token".into());
    }
    if !trimmed.starts_with('[') {
        return Err("the service entries file does not begin with an array".into());
    }
    serde_json::from_str::<Vec<RecordEntry>>(trimmed)
        .map_err(|e| format!("could not decode an entry in the service entries file: {e}"))
}

/// analyze.go's fold over the entries, and the stage still open at the end.
fn fold(a: &mut ServiceAnalysis, entries: &[RecordEntry]) {
    let mut last: Option<&RecordEntry> = None;
    let mut open_stage: Option<String> = None;
    let mut in_service = false;
    for e in entries {
        match e.phase.as_str() {
            "service start" => {
                a.starts += 1;
                in_service = true;
                open_stage = None;
            }
            "service end" => {
                in_service = false;
                open_stage = None;
            }
            "stage start" => open_stage = Some(e.stage.clone()),
            "stage end" => open_stage = None,
            _ => {}
        }
        a.successful =
            e.result == "success" && matches!(e.phase.as_str(), "service end" | "post-command end");
        if e.result == "failure" {
            let caused_by_stage =
                last.is_some_and(|l| l.phase == "stage end" && l.result == "failure");
            if !caused_by_stage {
                a.failing_stage = Some(e.stage.clone()).filter(|s| !s.is_empty());
            }
            a.last_error = Some(e.error_message.clone());
            a.last_error_line = Some(e.error_line.clone()).filter(|s| !s.is_empty());
        }
        last = Some(e);
    }
    a.running = in_service && !a.successful;
    a.current_stage = open_stage.filter(|_| a.running);
    a.first = entries
        .first()
        .map(|e| e.timestamp.clone())
        .filter(|t| !t.is_empty());
    a.last = entries
        .last()
        .map(|e| e.timestamp.clone())
        .filter(|t| !t.is_empty());
}

/// One line the installer's analysis would log, with its level.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Conclusion {
    /// `error` or `info`, as logrus logs them.
    pub level: &'static str,
    pub message: String,
}

fn error(message: String) -> Conclusion {
    Conclusion {
        level: "error",
        message,
    }
}

fn info(message: String) -> Conclusion {
    Conclusion {
        level: "info",
        message,
    }
}

/// What pkg/gather/service/analyze.go's `AnalyzeGatherBundle` logs for these records: the
/// services it cannot read, then release-image and bootkube in order (it stops at the first
/// that did not run, and after a failed release image); then, beyond it, every other service's
/// failure, and a service still running.
pub fn conclusions(services: &[ServiceAnalysis]) -> Vec<Conclusion> {
    let mut out: Vec<Conclusion> = services
        .iter()
        .filter_map(|s| {
            s.unreadable.as_ref().map(|why| {
                info(format!(
                    "Could not analyze the {}.service: {why}",
                    s.service
                ))
            })
        })
        .collect();
    if services.is_empty() {
        out.push(error("Invalid log bundle or the bootstrap machine could not be reached and bootstrap logs were not collected".into()));
        return out;
    }
    let find = |name: &str| {
        services
            .iter()
            .find(|s| s.service == name && s.unreadable.is_none())
    };
    for name in ["release-image", "bootkube"] {
        let Some(a) = find(name).filter(|a| a.starts > 0) else {
            out.push(error(format!(
                "The bootstrap machine did not execute the {name}.service systemd unit"
            )));
            return out;
        };
        if a.successful {
            continue;
        }
        if a.running && !a.failed() {
            out.push(info(still_running(a)));
            continue;
        }
        match name {
            "release-image" => {
                out.push(error(
                    "The bootstrap machine failed to download the release image".into(),
                ));
                out.extend(error_lines(a));
                return out;
            }
            _ => {
                out.push(error(bootkube_failure(
                    a.failing_stage.as_deref().unwrap_or(""),
                )));
                out.extend(error_lines(a));
            }
        }
    }
    for a in services.iter().filter(|s| {
        s.unreadable.is_none() && !["release-image", "bootkube"].contains(&s.service.as_str())
    }) {
        if a.failed() {
            let stage = a
                .failing_stage
                .as_ref()
                .map(|s| format!(" at stage {s:?}"))
                .unwrap_or_default();
            out.push(error(format!("The {} service failed{stage}", a.service)));
            out.extend(error_lines(a));
        } else if a.running {
            out.push(info(still_running(a)));
        }
    }
    out
}

/// analyze.go's words for bootkube's failing stage.
fn bootkube_failure(stage: &str) -> String {
    match stage {
        "konnectivity-certs" => {
            "The bootstrap machine failed to generate konnectivity certificates".into()
        }
        "konnectivity-server-bootstrap" => {
            "The bootstrap machine failed to start the konnectivity server".into()
        }
        "konnectivity-agent-manifest" => {
            "The bootstrap machine failed to create konnectivity agent manifests".into()
        }
        "konnectivity-cleanup" => {
            "The bootstrap machine failed to clean up konnectivity resources".into()
        }
        s => format!("The bootkube service failed at stage {s:?}"),
    }
}

fn still_running(a: &ServiceAnalysis) -> String {
    let stage = a
        .current_stage
        .as_ref()
        .map(|s| format!(", in stage {s:?}"))
        .unwrap_or_default();
    format!(
        "The {}.service was still running when its record ends{stage}",
        a.service
    )
}

/// The last error's lines, each as analyze.go logs them (info).
fn error_lines(a: &ServiceAnalysis) -> Vec<Conclusion> {
    a.last_error
        .iter()
        .flat_map(|e| e.split('\n'))
        .map(|l| info(l.to_string()))
        .collect()
}

/// A service's failure in one line for a verdict: where it failed and its last error.
pub fn failure_reason(a: &ServiceAnalysis) -> String {
    let stage = a
        .failing_stage
        .as_ref()
        .map(|s| format!(" at stage {s:?}"))
        .unwrap_or_default();
    let starts = match a.starts {
        1 => "started once".to_string(),
        n => format!("started {n} times"),
    };
    let now = match (&a.running, &a.current_stage) {
        (true, Some(s)) => format!("; its last run was still in stage {s:?} when the record ends"),
        (true, None) => "; its last run was still going when the record ends".to_string(),
        _ => String::new(),
    };
    let at = a
        .last_error_line
        .as_ref()
        .map(|l| format!(" (at {l})"))
        .unwrap_or_default();
    let said = a
        .last_error
        .as_deref()
        .map(|e| e.trim())
        .filter(|e| !e.is_empty())
        .map(|e| format!(": {e:?}"))
        .unwrap_or_default();
    format!(
        "{}.service failed{stage}{at} (its service record {}: {starts}{now}){said}",
        a.service, a.file
    )
}

#[cfg(test)]
mod tests;
