//! `[timeouts]`: the phases' timeouts, the write-stall limit and the bootkube restart limit.

use std::collections::BTreeMap;
use std::time::Duration;

use toml::Spanned;

use super::{Ctx, ScenarioError};
use crate::flow::phase::Phase;
use crate::scenario::model::*;
use crate::scenario::units::{parse_duration, DURATION_FORMS};

/// A phase timeout of zero fails the phase before it starts; more than a week is a typo, and
/// scaling a huge one by --timeout-scale overflows.
const MIN_TIMEOUT: Duration = Duration::from_secs(1);
const MAX_TIMEOUT: Duration = Duration::from_secs(7 * 24 * 3600);

/// The phase timeouts, the write-stall limit and the bootkube restart limit.
pub(super) struct Timeouts {
    pub(super) phases: BTreeMap<Phase, Duration>,
    pub(super) disk_write_stall: Option<Duration>,
    pub(super) bootkube_restarts: Option<u32>,
}

pub(super) fn timeouts(
    cx: &Ctx,
    entries: &BTreeMap<Spanned<String>, Spanned<TimeoutValue>>,
) -> Result<Timeouts, ScenarioError> {
    let mut t = Timeouts {
        phases: BTreeMap::new(),
        disk_write_stall: None,
        bootkube_restarts: None,
    };
    for (k, v) in entries {
        let key = k.get_ref().as_str();
        if key == BOOTKUBE_RESTARTS_KEY {
            t.bootkube_restarts = Some(restart_limit(cx, v)?);
            continue;
        }
        let phase = Phase::from_name(key);
        if let Some(p) = phase.filter(|p| !p.has_own_timeout()) {
            return Err(cx.at(
                k,
                format!(
                    "timeouts.{key}: {p} has no deadline of its own: as `openshift-install wait-for bootstrap-complete` does, the node's readiness is judged within {b}'s budget, which runs from {p}'s start; set timeouts.{b} instead",
                    b = p.budget_phase()
                ),
            ));
        }
        if phase.is_none() && key != DISK_WRITE_STALL_KEY {
            let phases: Vec<&str> = Phase::ALL
                .into_iter()
                .filter(|p| p.has_own_timeout())
                .map(Phase::name)
                .collect();
            return Err(cx.at(
                k,
                format!(
                    "timeouts.{key}: unknown key; the keys are the phases with a deadline of their own ({}), {DISK_WRITE_STALL_KEY} and {BOOTKUBE_RESTARTS_KEY}",
                    phases.join(", ")
                ),
            ));
        }
        let d = duration_value(cx, key, v)?;
        match phase {
            Some(p) => {
                t.phases.insert(p, d);
            }
            None => t.disk_write_stall = Some(d),
        }
    }
    Ok(t)
}

/// A timeout: a duration of 1 s to 7 days.
fn duration_value(
    cx: &Ctx,
    key: &str,
    v: &Spanned<TimeoutValue>,
) -> Result<Duration, ScenarioError> {
    let refuse = |got: String| {
        cx.at(
            v,
            format!(
                "timeouts.{key}: expected a duration from 1s to 7d, {DURATION_FORMS}; got {got}"
            ),
        )
    };
    let text = match v.get_ref() {
        TimeoutValue::Text(text) => text,
        TimeoutValue::Count(n) => {
            return Err(refuse(format!(
                "the number {n} (a duration is a string, with its unit)"
            )))
        }
    };
    let d = parse_duration(text).map_err(|_| refuse(format!("the string {text:?}")))?;
    if !(MIN_TIMEOUT..=MAX_TIMEOUT).contains(&d) {
        return Err(refuse(format!("{text:?}, which is out of range")));
    }
    Ok(d)
}

/// `bootkube-restarts`: a whole number of restarts, 1 to 1000.
fn restart_limit(cx: &Ctx, v: &Spanned<TimeoutValue>) -> Result<u32, ScenarioError> {
    match v.get_ref() {
        TimeoutValue::Count(n) if (1..=1000).contains(n) => Ok(*n as u32),
        other => Err(cx.at(
            v,
            format!("timeouts.{BOOTKUBE_RESTARTS_KEY} = {other}: a whole number of restarts from 1 to 1000, e.g. {BOOTKUBE_RESTARTS_KEY} = 5 (leave it out for no limit)"),
        )),
    }
}
