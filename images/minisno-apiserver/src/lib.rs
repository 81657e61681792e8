//! minisno-apiserver: a control-plane simulator for minisno, the test-fixture appliance that
//! imitates OpenShift single-node bootstrap-in-place. It serves, over mutual TLS, the
//! Kubernetes/OpenShift JSON that `openshift-install wait-for` and a harness poll after the
//! pivot, converging on a configurable schedule, with injectable faults. It is a test fixture
//! and says so (`/version` gitVersion ends in `-minisno`).

pub mod app;
pub mod config;
pub mod log;
pub mod node_ip;
pub mod pod_dns;
pub mod resolver;
pub mod resources;
pub mod route_checks;
pub mod router;
pub mod schedule;
pub mod server;
pub mod state;
pub mod tls;

pub use config::{Config, Schedule};
pub use server::{start, Running};
