//! The run's record turned into result.json's document.

use crate::flow::machine::Status;
use crate::flow::phase::Phase;
use crate::result::{
    self, DiskWrite, HostContext, InstallDeadline, LastSignal, PhaseResult, PhaseStatus, RunResult,
    Verdict,
};
use crate::scenario::Scenario;

use super::{RunOptions, RunRecord};

fn status(s: Status) -> PhaseStatus {
    match s {
        Status::Pending | Status::Running | Status::Skipped => PhaseStatus::NotReached,
        Status::Pass => PhaseStatus::Pass,
        Status::Fail => PhaseStatus::Fail,
        Status::Timeout => PhaseStatus::Timeout,
    }
}

pub fn host_context() -> HostContext {
    let qemu_version = std::process::Command::new(crate::vm::qemu::QEMU_BINARY)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.lines().next().map(str::to_string))
        .unwrap_or_default();
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    HostContext::of(qemu_version, cpu_model, kernel)
}

/// result.json's `boot`, for a boot other than the full live ISO's.
fn boot_record(s: &Scenario, rec: &RunRecord) -> Option<result::BootRecord> {
    if s.boot_source == crate::scenario::BootSource::LiveIso {
        return None;
    }
    let m = &rec.machine;
    let served = m
        .served
        .iter()
        .map(|(t_ms, r)| result::Served {
            t_ms: *t_ms,
            method: r.method.clone(),
            path: r.path.clone(),
            status: r.status,
            bytes: r.bytes,
            duration_ms: r.ms,
            mib_per_s: (r.bytes > 0 && r.ms > 0).then(|| {
                let mib_s = r.bytes as f64 / 1048576.0 / (r.ms as f64 / 1000.0);
                (mib_s * 10.0).round() / 10.0
            }),
        })
        .collect();
    let split = m.live_boot_split();
    Some(result::BootRecord {
        source: s.boot_source.as_str().into(),
        rootfs_url: rec.rootfs_url.clone(),
        served,
        live_boot_fetch_ms: split.map(|(f, _)| f),
        live_boot_rest_ms: split.map(|(_, r)| r),
        refused: rec.boot_server_refused.clone(),
    })
}

pub fn build_result(s: &Scenario, opts: &RunOptions, rec: &RunRecord) -> RunResult {
    let m = &rec.machine;
    let phases = Phase::ALL
        .iter()
        .map(|p| {
            let st = m.phase(*p);
            let status = status(st.status);
            let reached = status != PhaseStatus::NotReached;
            PhaseResult {
                name: p.name().to_string(),
                status,
                start_ms: if reached { st.start_ms } else { None },
                end_ms: if reached { st.end_ms } else { None },
                duration_ms: match (st.start_ms, st.end_ms) {
                    (Some(a), Some(b)) if reached => Some(b.saturating_sub(a)),
                    _ => None,
                },
                timeout_ms: Some(st.timeout.as_millis() as u64),
                detail: st.detail.clone(),
            }
        })
        .collect();
    let (verdict, failed_phase, reason) = match m.outcome() {
        Some(o) => (
            o.verdict,
            o.failed_phase.map(|p| p.name().to_string()),
            o.reason.clone(),
        ),
        None => (
            Verdict::Error,
            None,
            "the run ended without a verdict".to_string(),
        ),
    };
    let disk_write = rec.install_disk.as_ref().and_then(|d| {
        let ms = m.disk.duration_ms()?;
        Some(DiskWrite {
            disk: d.clone(),
            bytes: m.disk.written(),
            duration_ms: ms,
            mib_per_s: (m.disk.mib_per_s().unwrap_or(0.0) * 10.0).round() / 10.0,
            source: if opts.backend.can().block_stats {
                "qmp".into()
            } else {
                "coreos-installer progress".into()
            },
            image_bytes: None,
            deadline: m.install_projection().and_then(|p| {
                let start = m.phase(Phase::InstallToDisk).start_ms?;
                let s = |t: u64| (t.saturating_sub(start) as f64 / 100.0).round() / 10.0;
                Some(InstallDeadline {
                    nominal_s: s(p.nominal_deadline_ms),
                    adapted_s: s(p.deadline_ms),
                    projected_write_end_s: s(p.write_end_ms),
                })
            }),
            cache: crate::perf::model::InstallDisk::of(s).map(|d| d.cache.name().to_string()),
        })
    });
    RunResult {
        schema: result::SCHEMA.into(),
        id: opts.id.clone(),
        scenario: s.path.display().to_string(),
        params: opts.params.clone(),
        profile: s.profile.name().into(),
        backend: opts.backend.name().into(),
        libvirt_host: opts.backend.libvirt_host(),
        accel: rec.accel.to_string(),
        accel_reason: rec.accel_reason.clone(),
        verdict,
        failed_phase,
        reason,
        started_at: result::rfc3339(rec.started_at),
        duration_ms: rec.duration.as_millis() as u64,
        resets: m.resets,
        reset_causes: m.reset_causes.clone(),
        phases,
        node: m.node.as_ref().map(|n| result::NodeResult {
            name: n.name.clone(),
            name_problem: n.name_problem.clone(),
            addresses: n.addresses.clone(),
            address_problem: n.address_problem.clone(),
        }),
        disk_write,
        last_signals: m
            .last_signals()
            .map(|(t, source, sum)| LastSignal {
                t_ms: *t,
                source: source.name().into(),
                summary: sum.clone(),
            })
            .collect(),
        artifacts: rec.artifacts.clone(),
        replay: opts.replay.clone(),
        host: rec.vm_host.clone().unwrap_or_else(host_context),
        badness: m
            .badness()
            .hits
            .iter()
            .map(|h| result::BadnessLine {
                kind: serde_json::to_value(h.kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                source: h.source.clone(),
                line: h.line.clone(),
                t_ms: h.t_ms,
                allowed_by: h.allowed_by.clone(),
                warning: h.warning.clone(),
            })
            .collect(),
        etcd_rule: m
            .etcd_rule
            .as_ref()
            .map(|(required, why)| result::EtcdRuleApplied {
                required: *required,
                why: why.clone(),
            }),
        release_rules: m
            .release
            .as_deref()
            .map(|v| crate::flow::release_rules::applied(Some(v)))
            .unwrap_or_default(),
        overrides: s.overrides.clone(),
        authorized_keys: s
            .authorized_keys
            .iter()
            .map(|k| k.fingerprint.clone())
            .collect(),
        operators_rule: m
            .phase(Phase::ClusterReady)
            .start_ms
            .is_some()
            .then(|| s.operators_rule.as_str().to_string()),
        operator_warnings: m.operator_warnings.clone(),
        secure_boot: s.vm.firmware.is_uefi().then(|| m.secure_boot()),
        bootkube_restarts: (m.bootkube_restarts > 0).then(|| result::Restarts {
            count: m.bootkube_restarts,
            last_error: m.last_bootkube_error().map(str::to_string),
        }),
        assets: rec.assets.clone(),
        vm_left_running: rec.vm_left_running.and_then(|l| l.pid()),
        left_powered_on: rec.vm_left_running == Some(crate::vm::running::LeftRunning::PoweredOn),
        paused_ms: (!rec.paused.is_zero()).then_some(rec.paused.as_millis() as u64),
        boot: boot_record(s, rec),
        multipath: multipath_record(s, m),
        private: rec.private.clone(),
        lacks: opts.backend.can().lacks(),
    }
}

/// result.json's record of a multipath installation disk.
fn multipath_record(
    s: &Scenario,
    m: &crate::flow::machine::Machine,
) -> Option<result::MultipathResult> {
    use crate::flow::event::MultipathStep;
    let state = m.multipath()?;
    let root = state.root.as_ref().map(|(t_ms, r)| {
        let judged = r.judge(state.expected_paths);
        let (on_multipath, summary) = match judged {
            crate::flow::multipath::Judged::Good(s)
            | crate::flow::multipath::Judged::Waiting(s) => (true, s),
            crate::flow::multipath::Judged::NotMultipath(s) => (false, s),
        };
        let root_map = r
            .filesystems
            .iter()
            .find(|f| f.label == "root")
            .and_then(|f| f.map());
        let map = root_map.and_then(|dm| r.maps.iter().find(|x| x.dm == dm));
        result::MultipathRoot {
            t_ms: *t_ms,
            on_multipath,
            summary,
            filesystems: r
                .filesystems
                .iter()
                .map(|f| format!("{} on {} (mounted at {})", f.label, f.device, f.mounted_at))
                .collect(),
            map: map.map(|x| x.name.clone()),
            wwid: map.map(|x| x.wwid.clone()),
            paths: r
                .paths
                .iter()
                .map(|p| format!("{} {}/{}", p.device, p.dm_state, p.checker))
                .collect(),
        }
    });
    let path_events = state
        .path_events
        .iter()
        .map(|(t_ms, step)| result::MultipathEvent {
            t_ms: *t_ms,
            step: match step {
                MultipathStep::PathLost { .. } => "path-lost",
                MultipathStep::PathRestored { .. } => "path-restored",
                MultipathStep::PathFaultFailed { .. } => "path-fault-failed",
                MultipathStep::Root(_) => "root",
            }
            .to_string(),
            summary: step.describe(),
        })
        .collect();
    Some(result::MultipathResult {
        kargs: s.install.multipath_kargs.clone(),
        root,
        path_events,
    })
}
