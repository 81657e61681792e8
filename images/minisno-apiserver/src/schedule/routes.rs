//! The operators that reach a route of theirs through the cluster's DNS, and what they report
//! while the route's host does not resolve there (the lookups: crate::pod_dns, run by the
//! app). The shapes are the real operators' (4.17):
//! - authentication (cluster-authentication-operator's endpoint-accessible controller for the
//!   OAuth route, `GET https://oauth-openshift.apps.../healthz`): Available=False
//!   `OAuthServerRouteEndpointAccessibleController_EndpointUnavailable` and Degraded=True
//!   `OAuthServerRouteEndpointAccessibleController_SyncError`, the Go error quoted, with the
//!   controller's note when it says `:53: no such host`;
//! - console (console-operator's route health check, `GET https://console-openshift-console
//!   .apps.../health`): Available=False `RouteHealth_FailedGet`;
//! - ingress (cluster-ingress-operator's canary, `GET https://canary-openshift-ingress-canary
//!   .apps...`): the operator stays Available and turns Degraded=True `IngressDegraded`,
//!   quoting the default ingress controller's `CanaryChecksSucceeding=False`.

use super::cond::Cond;

/// What a failing check does to its operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Available=False (and, for authentication, Degraded=True).
    Unavailable,
    /// Degraded=True; still Available.
    Degraded,
}

/// One operator's route check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteCheck {
    pub operator: &'static str,
    /// The route's host before `.apps.<cluster>.<domain>` (`<route>-<namespace>`).
    pub prefix: &'static str,
    pub effect: Effect,
}

pub const ROUTE_CHECKS: [RouteCheck; 3] = [
    RouteCheck {
        operator: "authentication",
        prefix: "oauth-openshift",
        effect: Effect::Unavailable,
    },
    RouteCheck {
        operator: "console",
        prefix: "console-openshift-console",
        effect: Effect::Unavailable,
    },
    RouteCheck {
        operator: "ingress",
        prefix: "canary-openshift-ingress-canary",
        effect: Effect::Degraded,
    },
];

impl RouteCheck {
    pub fn host(&self, cluster: &str, domain: &str) -> String {
        format!("{}.apps.{cluster}.{domain}", self.prefix)
    }
}

/// The index in [`ROUTE_CHECKS`] of `operator`'s check, if it has one.
pub fn check_of(operator: &str) -> Option<usize> {
    ROUTE_CHECKS.iter().position(|c| c.operator == operator)
}

/// A failed lookup of a route's host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteFailure {
    pub host: String,
    /// As a pod's Go program says it: `lookup HOST on 172.30.0.10:53: no such host`.
    pub error: String,
}

/// What the route checks found so far, by [`ROUTE_CHECKS`] index.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RouteFacts {
    /// When the host first resolved (seconds since first start); kept from then on.
    pub resolved_at: [Option<f64>; 3],
    /// The latest failure before it resolved, if one did. A check that never ran or never
    /// failed holds nothing back.
    pub failure: [Option<RouteFailure>; 3],
}

impl RouteFacts {
    /// The failure check `i` shows at `at`: one was seen, and the host had not resolved by then.
    pub fn failing(&self, i: usize, at: f64) -> Option<&RouteFailure> {
        let f = self.failure[i].as_ref()?;
        match self.resolved_at[i] {
            Some(r) if r <= at => None,
            _ => Some(f),
        }
    }

    /// When check `i` stopped failing (`None`: it never failed, or fails still).
    pub fn cleared_at(&self, i: usize) -> Option<f64> {
        self.failure[i].as_ref()?;
        self.resolved_at[i]
    }

    /// `None` while a check of `effect` fails at `at`; else when the last of them cleared
    /// (0 when none ever failed).
    pub fn clear(&self, at: f64, effect: Effect) -> Option<f64> {
        let mut last = 0.0_f64;
        for (i, c) in ROUTE_CHECKS.iter().enumerate() {
            if c.effect != effect {
                continue;
            }
            if self.failing(i, at).is_some() {
                return None;
            }
            last = last.max(self.cleared_at(i).unwrap_or(0.0));
        }
        Some(last)
    }
}

fn go_get(url: &str, f: &RouteFailure) -> String {
    format!("Get \"{url}\": dial tcp: {}", f.error)
}

/// Replaces the Available and Degraded conditions of check `i`'s operator with what it reports
/// while `f` fails, from `since` (when it would have been Available).
pub fn apply_failure(i: usize, f: &RouteFailure, since: f64, conds: &mut [Cond]) {
    let set = |conds: &mut [Cond], type_: &str, status: bool, reason: &str, message: String| {
        if let Some(c) = conds.iter_mut().find(|c| c.type_ == type_) {
            c.status = if status { "True" } else { "False" };
            c.since_s = since;
            c.reason = reason.to_string();
            c.message = message;
        }
    };
    match ROUTE_CHECKS[i].operator {
        "authentication" => {
            let mut err = go_get(&format!("https://{}/healthz", f.host), f);
            // The controller's own gloss on a lookup that a DNS server answered negatively.
            if err.ends_with(":53: no such host") {
                err.push_str(" (this is likely result of malfunctioning DNS server)");
            }
            let c = "OAuthServerRouteEndpointAccessibleController";
            set(
                conds,
                "Available",
                false,
                &format!("{c}_EndpointUnavailable"),
                format!("{c}Available: {err}"),
            );
            set(
                conds,
                "Degraded",
                true,
                &format!("{c}_SyncError"),
                format!("{c}Degraded: {err}"),
            );
        }
        "console" => {
            let url = format!("https://{}/health", f.host);
            let message = format!(
                "RouteHealthAvailable: failed to GET route ({url}): {}",
                go_get(&url, f)
            );
            set(conds, "Available", false, "RouteHealth_FailedGet", message);
        }
        _ => {
            let err = go_get(&format!("https://{}", f.host), f);
            let message = format!(
                "The \"default\" ingress controller reports Degraded=True: DegradedConditions: One or more other status conditions indicate a degraded state: CanaryChecksSucceeding=False (CanaryChecksRepetitiveFailures: Canary route checks for the default ingress controller are failing. Last 1 error messages:\nerror sending canary HTTP request: DNS error: {err})"
            );
            set(conds, "Degraded", true, "IngressDegraded", message);
        }
    }
}
