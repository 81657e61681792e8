//! The run's gather, between the observers' stop and the VM's: asks which system the guest is
//! in and whether the API answers, then runs the collectors that can (see `crate::gather`),
//! and links gather/index.json from result.json's artifacts. An interrupt cuts it short.

use std::time::Duration;

use super::context::Run;
use crate::flow::event::{Signal, Source};
use crate::gather::{self, api, guest, Collector};
use crate::guest::ssh::SshTarget;
use crate::health::ApiEndpoint;
use crate::vm::running::RunningVm;

/// How long the guest's SSH and the API get to answer before their collectors are given up.
const PROBE: Duration = Duration::from_secs(15);

/// What the gather reaches.
pub struct Reach<'a> {
    pub vm: &'a RunningVm,
    pub guest: &'a SshTarget,
    pub api: &'a ApiEndpoint,
}

pub async fn gather(run: &mut Run<'_>, reach: Reach<'_>, passed: bool) {
    let settings = run.opts.gather;
    if !settings.when.applies(passed) || *run.opts.interrupt.borrow() {
        return;
    }
    let dir = run.opts.dir.join("gather");
    run.ui.line(&format!(
        "gather: the guest's, the API's and the VM's evidence into {} (each collector at most {} s)",
        dir.display(),
        settings.limit.as_secs()
    ));
    let collectors = collectors(&reach, &run.opts.backend.can(), settings.limit).await;
    let mut interrupt = run.opts.interrupt.clone();
    let index = tokio::select! {
        index = gather::run_all(&dir, settings.when, collectors) => index,
        _ = super::until_interrupted(&mut interrupt) => {
            note(run, "gather interrupted; gather/ is incomplete and has no index".into());
            return;
        }
    };
    match index {
        Ok(index) => {
            run.artifacts
                .insert("gather".into(), "gather/index.json".into());
            if let Some(shot) = index
                .collectors
                .iter()
                .flat_map(|c| &c.files)
                .find(|f| f.path.starts_with("vm/screenshot."))
            {
                run.artifacts
                    .insert("screenshot".into(), format!("gather/{}", shot.path));
            }
            note(run, format!("gather: {}", index.summary()));
        }
        Err(e) => note(run, format!("gather: writing {}: {e}", dir.display())),
    }
}

fn note(run: &mut Run<'_>, text: String) {
    run.ui.line(&text);
    let _ = run.log.record(Source::Harness, Signal::Note { text });
}

/// The VM's collectors always; the guest's of the system it is in, when SSH answers; the
/// API's, when it answers. What does not answer is one entry of the index saying so.
async fn collectors(
    reach: &Reach<'_>,
    can: &crate::vm::Capabilities,
    limit: Duration,
) -> Vec<Collector> {
    let (system, cluster) = tokio::join!(
        guest::probe(reach.guest, PROBE),
        api::probe(reach.api, PROBE)
    );
    let mut all = gather::vm::collectors(reach.vm.handle(), (reach.vm.describe(), can), limit);
    match system {
        Ok(live) => all.extend(guest::collectors(reach.guest, live, limit)),
        Err(e) => all.push(Collector::failed(
            "guest",
            format!("the guest did not answer over SSH: {e}"),
        )),
    }
    match cluster {
        Ok(client) => all.extend(api::collectors(client, limit)),
        Err(e) => all.push(Collector::skipped(
            "api",
            format!("the API did not answer: {e}"),
        )),
    }
    all
}
