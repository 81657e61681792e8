//! The shared state of a running apiserver: configuration, parsed faults, persisted state and
//! the clock that everything simulated is measured against.

use std::hash::{Hash, Hasher};
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;

use crate::config::{Config, ConfigError, Faults};
use crate::pod_dns::PodDns;
use crate::schedule::{Facts, Timeline, ROUTE_CHECKS};
use crate::state::{now_unix_ms, State, StateError};

/// How often the simulated kubelet tries its lookup of api-int while it fails.
const API_INT_LOOKUP_INTERVAL: Duration = Duration::from_millis(500);

/// The route checks' lookups (crate::route_checks): when the last round was, and the latest
/// failure of each check (kept in memory: after a restart the next round finds them again
/// within seconds).
#[derive(Debug, Default)]
pub struct RouteLookups {
    pub(crate) last: Option<std::time::Instant>,
    pub(crate) failures: [Option<crate::schedule::RouteFailure>; 3],
    /// What was last logged of each check's failure, to log each different one once.
    pub(crate) logged: [Option<String>; 3],
}

/// The simulated kubelet's lookups of api-int, until one succeeds.
#[derive(Debug, Default)]
struct Lookups {
    last: Option<Instant>,
    failure_logged: bool,
}

pub struct App {
    pub config: Config,
    /// The node's name: the configured one, else the hostname when the server started, as the
    /// kubelet takes it (see [`node_name`]).
    pub node_name: String,
    /// The pods' DNS, which the operators' route checks go through.
    pub pod_dns: PodDns,
    /// The cluster DNS service the pods ask, which their lookup errors name.
    pub cluster_dns_service: SocketAddr,
    pub faults: Faults,
    /// Fault names from the config that this component does not handle.
    pub ignored_faults: Vec<String>,
    /// The install-config as JSON (`null` when none was given).
    pub install_config: serde_json::Value,
    /// The node's InternalIPs, the cluster's primary family first (`node_ip`).
    pub node_ips: Vec<IpAddr>,
    pub first_start_ms: i64,
    /// Whether this start created the state (the very first start).
    pub fresh: bool,
    state: Mutex<State>,
    /// PEM certificate requests of the two simulated kubelet CSRs.
    pub csr_requests: [String; 2],
    lookups: Mutex<Lookups>,
    pub(crate) route_lookups: Mutex<RouteLookups>,
    /// The facts of the state, mirrored so that the timeline can be read while the state is
    /// locked (object metadata needs it inside state reads).
    facts: Mutex<Facts>,
}

fn facts_of(s: &State) -> Facts {
    let mut facts = Facts {
        api_int_resolved_at: s.api_int_resolved_at_s,
        bootstrap_complete_at: s.bootstrap_complete_at_s,
        ..Facts::default()
    };
    for (i, c) in ROUTE_CHECKS.iter().enumerate() {
        facts.routes.resolved_at[i] = s.routes_resolved_at_s.get(c.operator).copied();
    }
    facts
}

/// The name the kubelet registers its node under when nothing overrides it: the hostname
/// (`/proc/sys/kernel/hostname`) at its start, lowercased and trimmed (Kubernetes's
/// `nodeutil.GetHostname`), "localhost" if that cannot be read.
pub fn node_name(configured: Option<&str>) -> String {
    if let Some(name) = configured {
        return name.to_string();
    }
    match std::fs::read_to_string("/proc/sys/kernel/hostname") {
        Ok(h) if !h.trim().is_empty() => h.trim().to_lowercase(),
        _ => "localhost".to_string(),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    State(#[from] StateError),
    #[error("making the simulated CSRs: {0}")]
    Csr(#[from] rcgen::Error),
}

fn kubelet_csr(node: &str, serving: bool) -> Result<String, rcgen::Error> {
    let mut params = rcgen::CertificateParams::default();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, format!("system:node:{node}"));
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "system:nodes");
    if serving {
        params.subject_alt_names = vec![rcgen::SanType::DnsName(node.to_string().try_into()?)];
    }
    let key = rcgen::KeyPair::generate()?;
    params.serialize_request(&key)?.pem()
}

impl App {
    /// Loads (or creates) the persisted state and seeds the built-in configmaps. The node's
    /// addresses are chosen on `host` as the kubelet's are (`node_ip`); none without one.
    pub fn new(config: Config, host: Option<&crate::node_ip::Host>) -> Result<App, AppError> {
        let (faults, ignored_faults) = Faults::parse(&config.faults);
        let install_config = config.install_config()?;
        let node_ips = host
            .map(|h| h.node_ips(&crate::node_ip::machine_networks(&install_config)))
            .unwrap_or_default();
        let (state, fresh) = State::load_or_init(&config.state_dir)?;
        let state_snapshot = state.clone();
        let node_name = node_name(config.node_name.as_deref());
        let csr_requests = [
            kubelet_csr(&node_name, false)?,
            kubelet_csr(&node_name, true)?,
        ];
        let app = App {
            node_name,
            pod_dns: PodDns::new(config.cluster_dns.clone()),
            cluster_dns_service: crate::pod_dns::cluster_dns_service(&install_config),
            route_lookups: Mutex::new(RouteLookups::default()),
            first_start_ms: state.first_start_unix_ms,
            faults,
            ignored_faults,
            install_config,
            node_ips,
            fresh,
            state: Mutex::new(state),
            csr_requests,
            config,
            lookups: Mutex::new(Lookups::default()),
            facts: Mutex::new(facts_of(&state_snapshot)),
        };
        app.seed_builtin_configmaps()?;
        Ok(app)
    }

    /// Seconds since the very first start (never negative).
    pub fn elapsed(&self) -> f64 {
        ((now_unix_ms() - self.first_start_ms) as f64 / 1000.0).max(0.0)
    }

    /// The wall-clock time `secs` after the first start.
    pub fn time_at(&self, secs: f64) -> Time {
        let ms = self.first_start_ms + (secs * 1000.0).round() as i64;
        Time(Timestamp::from_millisecond(ms).unwrap_or(Timestamp::UNIX_EPOCH))
    }

    pub fn generation(&self) -> u64 {
        self.timeline().generation(self.elapsed())
    }

    /// What has happened so far on the node and through the API. No I/O and no state lock.
    pub fn facts(&self) -> Facts {
        let mut facts = self.facts.lock().unwrap_or_else(|e| e.into_inner()).clone();
        facts.routes.failure = self.route_failures();
        facts.no_bootstrap_configmap = !self.config.release.creates_bootstrap_configmap();
        facts
    }

    /// When each milestone is reached, as things stand now.
    pub fn timeline(&self) -> Timeline {
        Timeline::new(&self.config.schedule, &self.faults, &self.facts())
    }

    /// The simulated kubelet's lookup of api-int, through the node's resolver, at most every
    /// [`API_INT_LOOKUP_INTERVAL`] until it first succeeds (the answer is then kept: the
    /// node, once registered, stays so). A failure is logged once. The server calls it several
    /// times a second; it must not be called while the state is locked.
    pub fn look_up_api_int(&self) {
        if self.facts().api_int_resolved_at.is_some() {
            return;
        }
        let mut lookups = self.lookups.lock().unwrap_or_else(|e| e.into_inner());
        if lookups
            .last
            .is_some_and(|t| t.elapsed() < API_INT_LOOKUP_INTERVAL)
        {
            return;
        }
        lookups.last = Some(Instant::now());
        let host = self.config.api_int_host();
        match self.config.resolver.resolve(&host) {
            Ok(addrs) => {
                let at = self.elapsed();
                let saved = self.update(|s| {
                    s.api_int_resolved_at_s.get_or_insert(at);
                    Ok::<_, std::convert::Infallible>(())
                });
                if saved.is_ok() {
                    let list: Vec<String> = addrs.iter().map(IpAddr::to_string).collect();
                    crate::log::log(format!("{host} resolves to {} on this node: the kubelet can reach the API and register the node", list.join(", ")));
                }
            }
            Err(why) if !lookups.failure_logged => {
                lookups.failure_logged = true;
                crate::log::log(format!("{host} does not resolve on this node ({why}): the kubelet cannot reach the API, so the node does not register until the name resolves"));
            }
            Err(_) => {}
        }
    }

    /// A stable UUID-shaped id for an object, derived from what identifies it and the cluster's
    /// first start (so a new cluster gets new uids, a restart keeps them).
    pub fn uid(&self, seed: &str) -> String {
        let half = |salt: u8| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            (salt, seed, self.first_start_ms).hash(&mut h);
            h.finish()
        };
        let (a, b) = (half(1), half(2));
        format!(
            "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            0x8000 | ((b >> 48) & 0x3fff),
            b & 0xffff_ffff_ffff
        )
    }

    /// Reads the state.
    pub fn read<R>(&self, f: impl FnOnce(&State) -> R) -> R {
        let guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f(&guard)
    }

    /// Changes the state: `f` works on a copy, which is saved to disk and only then becomes
    /// the state. `f` returning `Err` changes nothing.
    pub fn update<R, E>(
        &self,
        f: impl FnOnce(&mut State) -> Result<R, E>,
    ) -> Result<R, UpdateError<E>> {
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut next = guard.clone();
        let r = f(&mut next).map_err(UpdateError::Rejected)?;
        next.save(&self.config.state_dir)
            .map_err(UpdateError::Save)?;
        *self.facts.lock().unwrap_or_else(|e| e.into_inner()) = facts_of(&next);
        *guard = next;
        Ok(r)
    }

    fn builtin_configmap(
        &self,
        namespace: &str,
        name: &str,
        key: &str,
        value: String,
    ) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                namespace: Some(namespace.to_string()),
                uid: Some(self.uid(&format!("ConfigMap/{namespace}/{name}"))),
                resource_version: Some("1".to_string()),
                creation_timestamp: Some(self.time_at(0.0)),
                ..Default::default()
            },
            data: Some([(key.to_string(), value)].into_iter().collect()),
            ..Default::default()
        }
    }

    fn seed_builtin_configmaps(&self) -> Result<(), StateError> {
        let mut seeds = vec![(
            "kube-system/cluster-config-v1".to_string(),
            self.builtin_configmap(
                "kube-system",
                "cluster-config-v1",
                "install-config",
                self.config.install_config_yaml.clone(),
            ),
        )];
        if let Some(bundle) = self.install_config["additionalTrustBundle"].as_str() {
            seeds.push((
                "openshift-config/user-ca-bundle".to_string(),
                self.builtin_configmap(
                    "openshift-config",
                    "user-ca-bundle",
                    "ca-bundle.crt",
                    bundle.to_string(),
                ),
            ));
        }
        let missing = self.read(|s| seeds.iter().any(|(k, _)| !s.configmaps.contains_key(k)));
        if !missing {
            return Ok(());
        }
        self.update(|s| {
            for (key, cm) in seeds {
                s.configmaps
                    .entry(key)
                    .or_insert_with(|| serde_json::to_value(cm).expect("configmap serializes"));
            }
            Ok::<_, std::convert::Infallible>(())
        })
        .map_err(|e| match e {
            UpdateError::Save(e) => e,
            UpdateError::Rejected(never) => match never {},
        })
    }
}

#[derive(Debug)]
pub enum UpdateError<E> {
    /// The change itself was refused (e.g. AlreadyExists).
    Rejected(E),
    /// The state could not be written.
    Save(StateError),
}

#[cfg(test)]
mod tests {
    use super::node_name;

    #[test]
    fn the_node_is_named_by_the_hostname_unless_configured() {
        assert_eq!(node_name(Some("sno-master-0")), "sno-master-0");
        let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        let name = node_name(None);
        assert_eq!(name, hostname.trim().to_lowercase());
        assert!(!name.is_empty() && !name.ends_with('\n'));
    }
}
