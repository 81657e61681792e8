//! The operators' route checks (authentication, console, the ingress canary), as their pods
//! make them: each looks its route's host up through the pods' DNS (crate::pod_dns), never
//! through the node's /etc/hosts. Until a host resolves, its operator reports the failure
//! (crate::schedule::routes); once it has, that is kept, as the kubelet's api-int is: minisno
//! does not model DNS that breaks later.

use std::time::{Duration, Instant};

use crate::app::App;
use crate::log::log;
use crate::schedule::{RouteFailure, ROUTE_CHECKS};

/// How often the checks look again while a host does not resolve.
pub const ROUTE_LOOKUP_INTERVAL: Duration = Duration::from_secs(2);

impl App {
    /// The latest failure of each check.
    pub fn route_failures(&self) -> [Option<RouteFailure>; 3] {
        self.route_lookups
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .failures
            .clone()
    }

    /// One round of the checks whose host has not resolved yet, at most every
    /// [`ROUTE_LOOKUP_INTERVAL`]. Blocking (DNS questions with deadlines); must not be called
    /// while the state is locked.
    pub fn check_routes(&self) {
        let facts = self.facts();
        let pending: Vec<usize> = (0..ROUTE_CHECKS.len())
            .filter(|i| facts.routes.resolved_at[*i].is_none())
            .collect();
        if pending.is_empty() {
            return;
        }
        {
            let mut l = self.route_lookups.lock().unwrap_or_else(|e| e.into_inner());
            if l.last.is_some_and(|t| t.elapsed() < ROUTE_LOOKUP_INTERVAL) {
                return;
            }
            l.last = Some(Instant::now());
        }
        for i in pending {
            self.check_route(i);
        }
    }

    fn check_route(&self, i: usize) {
        let check = &ROUTE_CHECKS[i];
        let host = check.host(&self.config.cluster_name, &self.config.base_domain);
        match self.pod_dns.lookup(&host) {
            Ok(addrs) => {
                let at = self.elapsed();
                let saved = self.update(|s| {
                    s.routes_resolved_at_s
                        .entry(check.operator.to_string())
                        .or_insert(at);
                    Ok::<_, std::convert::Infallible>(())
                });
                if saved.is_ok() {
                    let list: Vec<String> = addrs.iter().map(|a| a.to_string()).collect();
                    log(format!(
                        "{host} resolves to {} through the pods' DNS: the {} operator's route check can reach it",
                        list.join(", "),
                        check.operator
                    ));
                }
            }
            Err(e) => {
                let failure = RouteFailure {
                    error: e.go_error(&host, self.cluster_dns_service),
                    host,
                };
                let note = format!(
                    "the {} operator's route check fails: {} (the pods' DNS forwards to the node's nameservers: {})",
                    check.operator,
                    failure.error,
                    e.trail.join("; ")
                );
                let mut l = self.route_lookups.lock().unwrap_or_else(|e| e.into_inner());
                if l.logged[i].as_deref() != Some(note.as_str()) {
                    log(note.clone());
                    l.logged[i] = Some(note);
                }
                l.failures[i] = Some(failure);
            }
        }
    }
}
