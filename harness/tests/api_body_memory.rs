//! The memory an endless response body takes from the API client (every run's and `check`'s),
//! measured as this process's peak resident set (VmHWM): the only test in this binary, so no
//! other test's memory is in the measurement.

mod fake_api;

use std::time::{Duration, Instant};

use fake_api::{kubeconfig, Behaviour, Ca, FakeApi, ENDLESS_MAX};
use sno_harness::health::{ApiEndpoint, ClusterApi};

/// This process's peak resident set so far, in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib << 10
}

/// The body cap of the harness, as its error names it (32 MiB): the peak grows by less than
/// twice that (kube keeps the body as it comes and would copy it once into the text). Before
/// the fix the client read all the server sent ([`ENDLESS_MAX`], 256 MiB) and kept it.
#[test]
fn an_endless_body_costs_the_client_at_most_its_cap() {
    let cap: u64 = 32 << 20;
    let ca = Ca::new("cluster CA");
    let api = FakeApi::start(Behaviour::Endless, Some(ca.server(None)));
    let dir = tempfile::tempdir().unwrap();
    let ep = ApiEndpoint {
        kubeconfig: kubeconfig(dir.path(), &api.url, &ca, None),
        server: None,
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let client = rt.block_on(ClusterApi::connect(&ep)).unwrap();
    // From here, the peak is what the request adds (Linux: 5 resets VmHWM to the current RSS).
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let before = peak_rss();
    let started = Instant::now();
    let answer = rt.block_on(client.readyz());
    let took = started.elapsed();
    let grown = peak_rss().saturating_sub(before);
    eprintln!(
        "peak grew by {} KiB; the server sent {} KiB",
        grown >> 10,
        api.sent() >> 10
    );
    let text = match &answer {
        Ok(ready) => format!("answered: ready {ready}"),
        Err(e) => e.to_string(),
    };
    assert!(
        grown < 2 * cap,
        "the peak grew by {} MiB (the server sent {} MiB of at most {} MiB): {text}",
        grown >> 20,
        api.sent() >> 20,
        ENDLESS_MAX >> 20
    );
    assert!(
        text.contains(&format!("longer than the {} MiB", cap >> 20)),
        "{text}"
    );
    assert!(took < Duration::from_secs(20), "{took:?}: {text}");
}
