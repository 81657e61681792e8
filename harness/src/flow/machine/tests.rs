//! Tests of `machine`.

use super::*;
use crate::flow::event::Source;

fn machine() -> Machine {
    machine_with_restart_limit(None)
}

fn machine_with_restart_limit(limit: Option<u32>) -> Machine {
    let timeouts = Phase::ALL
        .iter()
        .map(|p| (*p, Duration::from_secs(100)))
        .collect();
    let mut m = Machine::new(Config {
        timeouts,
        write_stall: Duration::from_secs(20),
        bootkube_max_restarts: limit,
        adaptive_install: None,
    });
    m.start(0);
    m
}

/// An event from the observer that would have sent this signal.
fn ev(t_ms: u64, signal: Signal) -> Event {
    let source = match &signal {
        Signal::Journal { .. } => Source::Journal,
        Signal::Qmp { .. } => Source::Qmp,
        Signal::Console { .. } => Source::Serial,
        Signal::DiskWrite { .. } => Source::Disk,
        Signal::GuestStatus(_) => Source::Guest,
        Signal::Api { .. } => Source::Api,
        _ => Source::Harness,
    };
    Event {
        time: String::new(),
        t_ms,
        source,
        signal,
    }
}

fn journal(unit: &str, msg: &str) -> Signal {
    Signal::Journal {
        unit: unit.into(),
        identifier: String::new(),
        message: msg.into(),
        guest_usec: 0,
        boot_id: String::new(),
    }
}

fn guest(boot: &str, live: bool) -> GuestStatus {
    GuestStatus {
        boot_id: boot.into(),
        live,
        bootkube_enabled: "enabled".into(),
        bootstrap_files: vec!["/opt/openshift".into()],
        ..Default::default()
    }
}

fn api(check: ApiCheck, ok: bool, detail: &str) -> Signal {
    Signal::Api {
        check,
        ok,
        detail: detail.into(),
    }
}

fn feed(m: &mut Machine, events: Vec<(u64, Signal)>) -> Vec<Action> {
    events
        .into_iter()
        .flat_map(|(t, s)| m.on_event(&ev(t, s)))
        .collect()
}

#[test]
fn a_saving_run_passes_once_bootkube_is_done_and_goes_no_further() {
    let mut m = machine();
    m.stop_after(Phase::Bootkube);
    feed(
        &mut m,
        vec![
            (1000, Signal::AssetsReady),
            (1100, Signal::VmStarted { pid: 1 }),
            (20_000, Signal::GuestStatus(guest("live", true))),
            (
                30_000,
                journal("bootkube.service", "bootkube.service complete"),
            ),
        ],
    );
    assert_eq!(m.current(), None);
    let o = m.outcome().expect("finished");
    assert_eq!(o.verdict, Verdict::Pass);
    assert_eq!(m.phase(Phase::Bootkube).status, Status::Pass);
    assert_eq!(m.phase(Phase::InstallToDisk).status, Status::Pending);
    // The harness then fails to save: a harness error, the phases as they were.
    m.error_after_pass("saving the VM state: disk full".into());
    let o = m.outcome().unwrap();
    assert_eq!(o.verdict, Verdict::Error);
    assert_eq!(o.reason, "saving the VM state: disk full");
    assert_eq!(m.phase(Phase::Bootkube).status, Status::Pass);
}

#[test]
fn error_after_pass_leaves_a_failure_alone() {
    let mut m = machine();
    m.fail_now(10, "the installer said no".into());
    m.error_after_pass("saving".into());
    assert_eq!(m.outcome().unwrap().verdict, Verdict::Fail);
}

#[test]
fn a_resumed_run_starts_at_install_to_disk_and_ends_after_it() {
    let timeouts = Phase::ALL
        .iter()
        .map(|p| (*p, Duration::from_secs(100)))
        .collect();
    let mut m = Machine::new(Config {
        timeouts,
        write_stall: Duration::from_secs(20),
        bootkube_max_restarts: None,
        adaptive_install: None,
    });
    m.stop_after(Phase::InstallToDisk);
    let started = m.start_at(Phase::InstallToDisk, 0, "ran in the run that saved /s");
    assert_eq!(started, [Action::PhaseStarted(Phase::InstallToDisk)]);
    for p in [Phase::Assets, Phase::LiveBoot, Phase::Bootkube] {
        assert_eq!(m.phase(p).status, Status::Skipped, "{p}");
        assert_eq!(m.phase(p).detail, "ran in the run that saved /s");
    }
    // The VM starting does not begin live-boot again; the guest answering changes nothing.
    let actions = feed(
        &mut m,
        vec![
            (1000, Signal::VmStarted { pid: 1 }),
            (2000, Signal::GuestStatus(guest("live", true))),
            (3000, Signal::DiskWrite { bytes: 0 }),
        ],
    );
    assert!(actions.is_empty(), "{actions:?}");
    assert_eq!(m.current(), Some(Phase::InstallToDisk));
    let actions = feed(
        &mut m,
        vec![
            (
                9000,
                journal(
                    "install-to-disk.service",
                    "Executing coreos-installer with the following options: install -i /opt/openshift/master.ign /dev/vda",
                ),
            ),
            (20_000, Signal::DiskWrite { bytes: 300 << 20 }),
            (35_000, journal("install-to-disk.service", "Install complete.")),
            (35_100, journal("install-to-disk.service", "Going to reboot")),
        ],
    );
    assert!(actions.contains(&Action::Finished(Outcome {
        verdict: Verdict::Pass,
        failed_phase: None,
        reason: String::new(),
    })));
    // Measured from coreos-installer's start, as in a full run.
    assert_eq!(m.phase(Phase::InstallToDisk).start_ms, Some(9000));
    assert_eq!(m.disk.duration_ms(), Some(26_000));
    assert_eq!(m.disk.written(), 300 << 20);
    assert_eq!(m.phase(Phase::Reboot).status, Status::Pending);
}

/// A run up to the end of bootkube.
fn through_bootkube(m: &mut Machine) {
    feed(
        m,
        vec![
            (1000, Signal::AssetsReady),
            (1100, Signal::VmStarted { pid: 1 }),
            (20_000, Signal::GuestStatus(guest("live", true))),
            (
                25_000,
                journal("bootkube.service", "Rendering MCO manifests..."),
            ),
            (
                30_000,
                journal("bootkube.service", "bootkube.service complete"),
            ),
        ],
    );
    assert_eq!(m.current(), Some(Phase::InstallToDisk));
}

#[test]
fn coreos_installer_progress_lines_give_the_percent_of_the_image() {
    assert_eq!(
        installer_progress_percent("Read disk 43.0 MiB/86.8 MiB (49%)"),
        Some(49.0)
    );
    assert_eq!(
        installer_progress_percent("> Read disk 3.4 GiB/3.5 GiB (97%)\r"),
        Some(97.0)
    );
    assert_eq!(
        installer_progress_percent("Read disk 86.8 MiB/86.8 MiB (100%)"),
        Some(100.0)
    );
    for not_progress in [
        "Copying image from /run/media/iso/images/metal-512.raw.zst",
        "Read disk 1 MiB (140%)",
        "Reading signature from x (5%)",
        "Read disk (abc%)",
    ] {
        assert_eq!(
            installer_progress_percent(not_progress),
            None,
            "{not_progress}"
        );
    }
}

#[test]
fn the_disk_write_is_described_while_it_runs() {
    let mut m = machine();
    through_bootkube(&mut m);
    assert_eq!(
        m.disk.describe(31_000),
        None,
        "nothing before the write starts"
    );
    feed(&mut m, vec![
        (31_000, Signal::DiskWrite { bytes: 5 * 1048576 }),
        (32_000, journal("install-to-disk.service", "Executing coreos-installer with the following options: install -i /opt/openshift/master.ign /dev/vda")),
        (33_000, journal("install-to-disk.service", "Read disk 12.0 MiB/86.8 MiB (13%)")),
        (36_000, Signal::DiskWrite { bytes: 5 * 1048576 + 80 * 1048576 }),
        (36_500, journal("install-to-disk.service", "Read disk 43.0 MiB/86.8 MiB (49%)")),
    ]);
    assert_eq!(m.disk.image_percent, Some(49.0));
    assert_eq!(
        m.disk.describe(37_000).unwrap(),
        "49% of the image, 80 MiB written, 16.0 MiB/s"
    );
}

/// A machine whose install-to-disk deadline follows the write (nominal timeout 100 s).
fn adaptive_machine() -> Machine {
    let mut m = machine();
    m.cfg.adaptive_install = Some(AdaptiveDeadline::around(Duration::from_secs(100)));
    m
}

fn progress_line(t: u64, percent: u32) -> (u64, Signal) {
    (
        t,
        journal(
            "install-to-disk.service",
            &format!("Read disk {percent}.0 MiB/100.0 MiB ({percent}%)"),
        ),
    )
}

fn installer_started(m: &mut Machine) {
    through_bootkube(m);
    feed(m, vec![
        (31_000, Signal::DiskWrite { bytes: 0 }),
        (32_000, journal("install-to-disk.service", "Executing coreos-installer with the following options: install -i /opt/openshift/master.ign /dev/vda")),
    ]);
}

#[test]
fn a_slow_write_gets_past_the_nominal_timeout_up_to_six_times_it() {
    let mut m = adaptive_machine();
    installer_started(&mut m);
    // 5 % in 50 s: a 1000 s write, far past the nominal 100 s.
    feed(&mut m, vec![progress_line(82_000, 5)]);
    let p = m.install_projection().expect("a projection");
    assert_eq!(p.write_end_ms, 32_000 + 1_000_000);
    assert_eq!(p.nominal_deadline_ms, 132_000);
    assert_eq!(p.deadline_ms, 32_000 + 600_000, "capped at 6 x 100 s");
    for t in (90_000..632_000).step_by(10_000) {
        // The write goes on: the stall detector stays quiet.
        feed(&mut m, vec![(t, Signal::DiskWrite { bytes: t * 100 })]);
        assert!(m.tick(t).is_empty(), "no timeout at {t} ms");
    }
    let actions = m.tick(632_001);
    assert!(
        actions.contains(&Action::PhaseEnded(Phase::InstallToDisk, Status::Timeout)),
        "{actions:?}"
    );
    let reason = &m.outcome().unwrap().reason;
    assert!(reason.contains("within 10m"), "{reason}");
    assert!(reason.contains("followed the disk write"), "{reason}");
    assert!(
        reason.contains("the scenario's timeout is 1m 40s"),
        "{reason}"
    );
}

#[test]
fn a_fast_write_that_then_hangs_fails_before_the_nominal_timeout() {
    let mut m = adaptive_machine();
    m.cfg.adaptive_install = Some(AdaptiveDeadline::around(Duration::from_secs(1000)));
    m.phases.get_mut(&Phase::InstallToDisk).unwrap().timeout = Duration::from_secs(1000);
    installer_started(&mut m);
    // Done in 10 s: deadline = 10 s x 1.5 + 120 s = 135 s after the write started.
    feed(
        &mut m,
        vec![
            progress_line(37_000, 50),
            progress_line(42_000, 100),
            (42_000, Signal::DiskWrite { bytes: 100 << 20 }),
        ],
    );
    let p = m.install_projection().unwrap();
    assert_eq!(p.write_end_ms, 42_000);
    assert_eq!(p.deadline_ms, 32_000 + 135_000);
    // The write counter stays put after the write: only the deadline can end this.
    m.cfg.write_stall = Duration::from_secs(3600);
    assert!(m.tick(167_000).is_empty());
    let actions = m.tick(167_001);
    assert!(
        actions.contains(&Action::PhaseEnded(Phase::InstallToDisk, Status::Timeout)),
        "{actions:?}"
    );
    assert!(m.outcome().unwrap().reason.contains("within 2m 15s"));
}

/// What a throttled disk looked like: coreos-installer read all of the image in 10 s (100 %
/// at 42 s), the disk went on taking it until 390 s, without a timeout meanwhile.
fn page_cache_write() -> Machine {
    let mut m = adaptive_machine();
    installer_started(&mut m);
    feed(
        &mut m,
        vec![progress_line(37_000, 50), progress_line(42_000, 100)],
    );
    for t in (50_000..400_000).step_by(10_000) {
        feed(&mut m, vec![(t, Signal::DiskWrite { bytes: t * 1000 })]);
        assert!(
            m.tick(t).is_empty(),
            "no timeout at {t} ms while the disk writes"
        );
    }
    m
}

#[test]
fn a_disk_still_taking_the_page_cache_after_the_image_is_read_keeps_its_deadline() {
    let mut m = page_cache_write();
    // Then the writes stop: the deadline is 2 minutes after the last one (the stall
    // detector, which would fire first, is set aside here).
    m.cfg.write_stall = Duration::from_secs(3600);
    let p = m.install_projection().unwrap();
    assert_eq!(p.deadline_ms, 390_000 + 120_000);
    assert!(m.tick(510_000).is_empty());
    assert!(!m.tick(510_001).is_empty());
}

#[test]
fn the_reported_deadline_of_a_write_that_outlived_its_projection_is_the_one_in_force() {
    // A write that ends long after coreos-installer's 100 %: what result.json reports is
    // the deadline at the end, past the end, not the projection from the percent alone.
    let mut m = page_cache_write();
    feed(
        &mut m,
        vec![
            (
                400_500,
                journal("install-to-disk.service", "Install complete."),
            ),
            (
                400_600,
                journal("install-to-disk.service", "Going to reboot"),
            ),
        ],
    );
    assert_eq!(m.phase(Phase::InstallToDisk).status, Status::Pass);
    let p = m.install_projection().unwrap();
    assert_eq!(p.deadline_ms, 390_000 + 120_000);
    assert!(p.deadline_ms > 400_500 && p.deadline_ms > p.nominal_deadline_ms);
}

#[test]
fn without_progress_lines_or_with_too_little_the_nominal_timeout_holds() {
    let mut m = adaptive_machine();
    installer_started(&mut m);
    assert_eq!(m.install_projection(), None, "no progress yet");
    // 1 % is too little to project from, and so is progress within 5 s of the start.
    feed(&mut m, vec![progress_line(60_000, 1)]);
    assert_eq!(m.install_projection(), None);
    let mut early = adaptive_machine();
    installer_started(&mut early);
    feed(&mut early, vec![progress_line(35_000, 40)]);
    assert_eq!(early.install_projection(), None);
    // Without the option, never.
    let mut fixed = machine();
    installer_started(&mut fixed);
    feed(&mut fixed, vec![progress_line(82_000, 5)]);
    assert_eq!(fixed.install_projection(), None);
    assert!(!fixed.tick(132_001).is_empty(), "the nominal 100 s");
}

#[test]
fn a_clean_run_passes_every_phase_in_order() {
    let mut m = machine();
    through_bootkube(&mut m);
    let mut done = guest("disk", false);
    feed(&mut m, vec![
        (31_000, Signal::DiskWrite { bytes: 1000 }),
        (32_000, journal("install-to-disk.service", "Executing coreos-installer with the following options: install -i /opt/openshift/master.ign /dev/vda")),
        (33_000, Signal::DiskWrite { bytes: 1000 + 100 * 1048576 }),
        (36_000, Signal::DiskWrite { bytes: 1000 + 300 * 1048576 }),
        (37_000, journal("install-to-disk.service", "Install complete.")),
        (38_000, Signal::Qmp { name: "RESET".into(), data: serde_json::json!({"guest": true}) }),
        // The old live system may still answer before the reset takes effect: ignored.
        (38_100, Signal::GuestStatus(guest("live", true))),
        (55_000, Signal::GuestStatus(guest("disk", false))),
        (57_000, api(ApiCheck::Readyz, true, "ok")),
        (58_000, api(ApiCheck::BootstrapConfigmap, true, "complete")),
        (58_500, api(ApiCheck::EtcdBootstrapMemberRemoved, true, "True")),
        (59_000, api(ApiCheck::NodeReady, true, "Ready")),
        (60_000, api(ApiCheck::ClusterVersion, true, "Available")),
        (60_500, api(ApiCheck::InstallConfigApplied, true, "install-config applied")),
        (90_000, api(ApiCheck::ClusterOperators, true, "settled")),
    ]);
    assert_eq!(m.current(), Some(Phase::BootstrapCleanup));
    done.bootkube_enabled = "disabled".into();
    done.bootstrap_files.clear();
    let actions = feed(&mut m, vec![(95_000, Signal::GuestStatus(done))]);
    assert!(matches!(
        actions.last(),
        Some(Action::Finished(Outcome {
            verdict: Verdict::Pass,
            ..
        }))
    ));
    for p in Phase::ALL {
        assert_eq!(m.phase(p).status, Status::Pass, "{p}");
    }
    assert_eq!(m.phase(Phase::InstallToDisk).start_ms, Some(32_000));
    assert_eq!(m.resets, 1);
    assert_eq!(m.disk.written(), 300 * 1048576);
    assert_eq!(m.disk.duration_ms(), Some(5000));
    assert!((m.disk.mib_per_s().unwrap() - 60.0).abs() < 1e-9);
}

/// Through the pivot up to node-ready: the API answers, bootstrap completes.
fn up_to_node_ready(m: &mut Machine) {
    through_bootkube(m);
    feed(m, vec![
        (32_000, journal("install-to-disk.service", "Executing coreos-installer with the following options: install -i /opt/openshift/master.ign /dev/vda")),
        (37_000, journal("install-to-disk.service", "Install complete.")),
        (38_000, Signal::Qmp { name: "RESET".into(), data: serde_json::json!({"guest": true}) }),
        (55_000, Signal::GuestStatus(guest("disk", false))),
        (57_000, api(ApiCheck::Readyz, true, "ok")),
        (58_000, api(ApiCheck::BootstrapConfigmap, true, "complete")),
        (58_500, api(ApiCheck::EtcdBootstrapMemberRemoved, true, "True")),
    ]);
}

#[test]
fn a_node_registered_under_no_hostname_fails_node_ready_at_once_naming_it() {
    let mut m = machine();
    up_to_node_ready(&mut m);
    assert_eq!(m.current(), Some(Phase::NodeReady));
    let problem =
        crate::health::judge::node_name_problem("localhost.localdomain", Some("sno-master-0"));
    let a = feed(
        &mut m,
        vec![(
            60_000,
            Signal::NodeSeen(crate::flow::event::NodeSeen {
                name: "localhost.localdomain".into(),
                name_problem: problem,
                ..Default::default()
            }),
        )],
    );
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert_eq!(
        (o.verdict, o.failed_phase),
        (Verdict::Fail, Some(Phase::NodeReady))
    );
    assert!(
        o.reason.contains("the node registered as \"localhost.localdomain\": it got no hostname (DHCP gave none, no reverse DNS) instead of sno-master-0"),
        "{}",
        o.reason
    );
    // A node under the name DHCP gave goes on to be judged on its Ready condition.
    let mut m = machine();
    up_to_node_ready(&mut m);
    feed(
        &mut m,
        vec![
            (
                60_000,
                Signal::NodeSeen(crate::flow::event::NodeSeen {
                    name: "sno-master-0".into(),
                    name_problem: None,
                    addresses: vec!["10.0.2.15".into()],
                    address_problem: None,
                }),
            ),
            (
                61_000,
                api(ApiCheck::NodeReady, true, "node sno-master-0 Ready"),
            ),
        ],
    );
    assert_eq!(m.current(), Some(Phase::ClusterReady));
    assert_eq!(m.node.as_ref().unwrap().name, "sno-master-0");
}

#[test]
fn a_coreos_installer_error_fails_install_to_disk_at_once() {
    let mut m = machine();
    through_bootkube(&mut m);
    let a = feed(&mut m, vec![
        (32_000, journal("install-to-disk.service", "Executing coreos-installer with the following options: install -i /opt/openshift/master.ign /dev/vdz")),
        (32_500, journal("install-to-disk.service", "Error: opening /dev/vdz")),
    ]);
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert_eq!(o.failed_phase, Some(Phase::InstallToDisk));
    assert!(o.reason.contains("Error: opening /dev/vdz"), "{}", o.reason);
    assert_eq!(m.phase(Phase::Reboot).status, Status::Pending);
}

#[test]
fn the_live_iso_booting_again_fails_disk_boot() {
    let mut m = machine();
    through_bootkube(&mut m);
    feed(
        &mut m,
        vec![
            (
                32_000,
                journal("install-to-disk.service", "Install complete."),
            ),
            (
                38_000,
                Signal::Qmp {
                    name: "RESET".into(),
                    data: serde_json::json!({}),
                },
            ),
        ],
    );
    let a = feed(
        &mut m,
        vec![(60_000, Signal::GuestStatus(guest("live-again", true)))],
    );
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert_eq!(o.failed_phase, Some(Phase::DiskBoot));
    assert!(o.reason.contains("live ISO booted again"), "{}", o.reason);
}

#[test]
fn a_panic_fails_the_current_phase() {
    let mut m = machine();
    through_bootkube(&mut m);
    let a = feed(
        &mut m,
        vec![(
            31_000,
            Signal::Qmp {
                name: "GUEST_PANICKED".into(),
                data: serde_json::json!({"action": "pause"}),
            },
        )],
    );
    assert!(matches!(
        a.last(),
        Some(Action::Finished(Outcome {
            failed_phase: Some(Phase::InstallToDisk),
            ..
        }))
    ));
    let mut m = machine();
    through_bootkube(&mut m);
    let a = feed(
        &mut m,
        vec![(
            31_000,
            Signal::Console {
                line: "[ 3.1] Kernel panic - not syncing: sysrq triggered crash".into(),
            },
        )],
    );
    let Some(Action::Finished(o)) = a.last() else {
        panic!()
    };
    assert!(o.reason.contains("sysrq triggered crash"), "{}", o.reason);
}

#[test]
fn a_host_key_that_changes_within_a_boot_is_an_error_and_a_new_boot_may_change_it() {
    let with_key = |boot: &str, live: bool, key: &str| {
        Signal::GuestStatus(GuestStatus {
            host_key: key.into(),
            ..guest(boot, live)
        })
    };
    let mut m = machine();
    through_bootkube(&mut m);
    // The same boot, written with dashes or without, and the same key: nothing happens.
    let a = feed(&mut m, vec![(31_000, with_key("live", true, "aaaa"))]);
    assert!(a.is_empty(), "{a:?}");
    let a = feed(&mut m, vec![(32_000, with_key("live", true, "bbbb"))]);
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert_eq!(o.verdict, Verdict::Error);
    assert!(
        o.reason.contains("host key changed within boot live"),
        "{}",
        o.reason
    );
    // Another boot (the installed system) has its own key.
    let mut m = machine();
    through_bootkube(&mut m);
    feed(&mut m, vec![(31_000, with_key("live", true, "aaaa"))]);
    feed(&mut m, vec![(40_000, with_key("disk", false, "cccc"))]);
    assert!(m.outcome().is_none_or(|o| o.verdict != Verdict::Error));
}

#[test]
fn a_lost_instrument_is_the_harness_error_naming_it_not_the_systems_failure() {
    for instrument in ["QMP connection", "libvirt connection", "serial console"] {
        let mut m = machine();
        through_bootkube(&mut m);
        let a = feed(
            &mut m,
            vec![(
                31_000,
                Signal::InstrumentLost {
                    instrument: instrument.into(),
                    detail: "closed".into(),
                },
            )],
        );
        let Some(Action::Finished(o)) = a.last() else {
            panic!("{a:?}")
        };
        assert_eq!(o.verdict, Verdict::Error, "{instrument}");
        assert_eq!(o.failed_phase, Some(Phase::InstallToDisk));
        assert!(
            o.reason
                .starts_with(&format!("lost the {instrument} while the VM runs (closed)")),
            "{}",
            o.reason
        );
        // What comes after (the VM's end at teardown) changes nothing.
        let a = feed(
            &mut m,
            vec![(
                32_000,
                Signal::VmExited {
                    status: "killed".into(),
                },
            )],
        );
        assert!(a.is_empty());
        assert_eq!(m.outcome().unwrap().verdict, Verdict::Error);
    }
}

#[test]
fn a_timeout_quotes_the_last_signal_and_what_was_missing() {
    let mut m = machine();
    through_bootkube(&mut m);
    feed(
        &mut m,
        through_reboot_signals()
            .into_iter()
            .chain(vec![(
                60_000,
                api(ApiCheck::Readyz, false, "readyz answered 503"),
            )])
            .collect(),
    );
    assert!(m.tick(100_000).is_empty());
    let a = m.tick(155_001);
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert_eq!(o.failed_phase, Some(Phase::ApiReady));
    assert_eq!(m.phase(Phase::ApiReady).status, Status::Timeout);
    assert!(o.reason.contains("within 1m 40s"), "{}", o.reason);
    assert!(o.reason.contains("readyz answered 503"), "{}", o.reason);
    assert!(o.reason.contains("s ago"), "{}", o.reason);
}

/// A write that stopped growing at 33 s fails once the 20 s stall limit has passed, not before.
fn assert_the_write_stall_fails(m: &mut Machine) {
    assert!(m.tick(50_000).is_empty());
    let a = m.tick(53_500);
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert!(
        o.reason.contains("no write to the install disk for 20 s"),
        "{}",
        o.reason
    );
}

#[test]
fn a_write_stall_is_a_failure() {
    let mut m = machine();
    through_bootkube(&mut m);
    feed(
        &mut m,
        vec![
            (
                32_000,
                journal(
                    "install-to-disk.service",
                    "Executing coreos-installer with the following options: install -i x /dev/vda",
                ),
            ),
            (33_000, Signal::DiskWrite { bytes: 5 << 20 }),
            (40_000, Signal::DiskWrite { bytes: 5 << 20 }),
        ],
    );
    assert_the_write_stall_fails(&mut m);
}

#[test]
fn bootkube_failing_repeatedly_fails_fast_with_its_error() {
    // With the scenario's limit ([timeouts] bootkube-restarts = 3).
    let mut m = machine_with_restart_limit(Some(3));
    feed(
        &mut m,
        vec![
            (1000, Signal::AssetsReady),
            (1100, Signal::VmStarted { pid: 1 }),
            (20_000, Signal::GuestStatus(guest("live", true))),
            (
                21_000,
                journal(
                    "bootkube.service",
                    "Error: error while checking pod status: timed out waiting for the condition",
                ),
            ),
        ],
    );
    let mut s = guest("live", true);
    s.bootkube_restarts = 3;
    s.bootkube_state = "activating/exit-code".into();
    let a = feed(&mut m, vec![(40_000, Signal::GuestStatus(s))]);
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert_eq!(o.failed_phase, Some(Phase::Bootkube));
    assert!(
        o.reason.contains("timed out waiting for the condition"),
        "{}",
        o.reason
    );
}

#[test]
fn a_failed_post_reboot_unit_fails_bootstrap_cleanup() {
    let mut m = machine();
    through_bootkube(&mut m);
    let mut failed = guest("disk", false);
    failed.bootkube_state = "failed/exit-code".into();
    let a = feed(
        &mut m,
        through_reboot_signals()
            .into_iter()
            .chain(vec![
                (56_000, Signal::GuestStatus(failed)),
                (57_000, api(ApiCheck::Readyz, true, "ok")),
                (58_000, api(ApiCheck::BootstrapConfigmap, true, "complete")),
                (
                    58_500,
                    api(ApiCheck::EtcdBootstrapMemberRemoved, true, "True"),
                ),
                (59_000, api(ApiCheck::NodeReady, true, "Ready")),
                (60_000, api(ApiCheck::ClusterVersion, true, "Available")),
                (60_500, api(ApiCheck::InstallConfigApplied, true, "applied")),
                (61_000, api(ApiCheck::ClusterOperators, true, "settled")),
            ])
            .collect(),
    );
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert_eq!(o.failed_phase, Some(Phase::BootstrapCleanup));
    assert!(
        o.reason.contains("post-reboot bootkube.service failed"),
        "{}",
        o.reason
    );
}

/// The install finishes, the VM resets, the installed system answers.
fn through_reboot_signals() -> Vec<(u64, Signal)> {
    vec![
        (
            32_000,
            journal("install-to-disk.service", "Install complete."),
        ),
        (
            38_000,
            Signal::Qmp {
                name: "RESET".into(),
                data: serde_json::json!({}),
            },
        ),
        (55_000, Signal::GuestStatus(guest("disk", false))),
    ]
}

/// Up to cluster-ready with every check but the install-config one passing.
fn to_a_settled_cluster(m: &mut Machine) {
    through_bootkube(m);
    feed(
        m,
        through_reboot_signals()
            .into_iter()
            .chain(vec![
                (57_000, api(ApiCheck::Readyz, true, "ok")),
                (58_000, api(ApiCheck::BootstrapConfigmap, true, "complete")),
                (
                    58_500,
                    api(ApiCheck::EtcdBootstrapMemberRemoved, true, "True"),
                ),
                (59_000, api(ApiCheck::NodeReady, true, "Ready")),
            ])
            .collect(),
    );
    assert_eq!(m.current(), Some(Phase::ClusterReady));
}

#[test]
fn cluster_ready_waits_for_the_install_config_check() {
    let mut m = machine();
    to_a_settled_cluster(&mut m);
    feed(
        &mut m,
        vec![
            (60_000, api(ApiCheck::ClusterVersion, true, "Available")),
            (61_000, api(ApiCheck::ClusterOperators, true, "settled")),
        ],
    );
    assert_eq!(
        m.current(),
        Some(Phase::ClusterReady),
        "no config answer yet"
    );
    feed(
        &mut m,
        vec![(62_000, api(ApiCheck::InstallConfigApplied, true, "applied"))],
    );
    assert_eq!(m.current(), Some(Phase::BootstrapCleanup));
}

#[test]
fn operator_warnings_are_kept_as_they_were_when_cluster_ready_ended() {
    let mut m = machine();
    to_a_settled_cluster(&mut m);
    let degraded = "ingress: Available=True Degraded=True Progressing=False (canary failing)";
    let warn = |ws: &[&str]| Signal::OperatorWarnings {
        warnings: ws.iter().map(|w| w.to_string()).collect(),
    };
    feed(
        &mut m,
        vec![
            (60_000, warn(&["console: Available=False", degraded])),
            (60_500, warn(&[degraded])),
            (61_000, api(ApiCheck::ClusterVersion, true, "Available")),
            (61_500, api(ApiCheck::ClusterOperators, true, "settled")),
            (62_000, api(ApiCheck::InstallConfigApplied, true, "applied")),
        ],
    );
    assert_eq!(
        m.current(),
        Some(Phase::BootstrapCleanup),
        "the warning does not hold it"
    );
    assert_eq!(m.operator_warnings, [degraded]);
    // The operator recovering later does not unsay what the install completed with.
    feed(&mut m, vec![(63_000, warn(&[]))]);
    assert_eq!(m.operator_warnings, [degraded]);
}

#[test]
fn a_config_difference_waits_while_operators_progress_and_fails_once_they_settle() {
    let mut m = machine();
    to_a_settled_cluster(&mut m);
    let differs = "the cluster does not report the install-config: networks.config.openshift.io/cluster status.networkType: asked \"OVNKubernetes\", cluster reports \"OpenShiftSDN\"";
    feed(
        &mut m,
        vec![
            (60_000, api(ApiCheck::InstallConfigApplied, false, differs)),
            (61_000, api(ApiCheck::ClusterVersion, true, "Available")),
        ],
    );
    assert!(
        m.outcome().is_none(),
        "operators are still progressing: keep waiting"
    );
    let a = feed(
        &mut m,
        vec![(62_000, api(ApiCheck::ClusterOperators, true, "settled"))],
    );
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert_eq!(o.verdict, Verdict::Fail);
    assert_eq!(o.failed_phase, Some(Phase::ClusterReady));
    assert_eq!(o.reason, format!("cluster-ready: {differs}"));
}

#[test]
fn a_cluster_ready_timeout_quotes_the_config_difference() {
    let mut m = machine();
    to_a_settled_cluster(&mut m);
    feed(
        &mut m,
        vec![
            (
                60_000,
                api(
                    ApiCheck::ClusterVersion,
                    false,
                    "ClusterVersion 4.17.0: Available=False",
                ),
            ),
            (
                60_500,
                api(
                    ApiCheck::InstallConfigApplied,
                    false,
                    "the cluster does not report the install-config: fips",
                ),
            ),
        ],
    );
    let a = m.tick(59_000 + 3_600_000);
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert!(
        o.reason
            .contains("Available=False; the cluster does not report the install-config: fips"),
        "{}",
        o.reason
    );
}

#[test]
fn badness_in_a_journal_fails_the_current_phase_quoting_the_line() {
    let mut m = machine();
    through_bootkube(&mut m);
    let a = feed(
        &mut m,
        vec![(
            31_500,
            journal(
                "crio.service",
                "crio.service: A process of this unit has been killed by the OOM killer.",
            ),
        )],
    );
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert_eq!(o.verdict, Verdict::Fail);
    assert_eq!(o.failed_phase, Some(Phase::InstallToDisk));
    assert_eq!(
        o.reason,
        "install-to-disk: OOM kill in the journal of crio.service at 31.5 s: \"crio.service: A process of this unit has been killed by the OOM killer.\""
    );
    assert_eq!(m.badness().hits.len(), 1);
}

#[test]
fn allowed_badness_is_kept_as_a_warning_and_the_run_goes_on() {
    let mut m = machine();
    m.allow_badness(AllowList::new(&[r"Killed process \d+ \(tail\)".into()]).unwrap());
    through_bootkube(&mut m);
    let a = feed(&mut m, vec![(
        31_500,
        Signal::Console { line: "[ 40.2] Memory cgroup out of memory: Killed process 812 (tail) total-vm:40000kB".into() },
    )]);
    assert!(a.is_empty(), "{a:?}");
    assert!(m.outcome().is_none());
    assert_eq!(m.current(), Some(Phase::InstallToDisk));
    let w: Vec<_> = m.badness().warnings().collect();
    assert_eq!(w.len(), 1);
    assert_eq!(
        w[0].allowed_by.as_deref(),
        Some(r"Killed process \d+ \(tail\)")
    );
}

#[test]
fn bootkube_restarts_without_a_limit_recover_or_end_at_the_deadline_quoting_them() {
    let start = vec![
        (1000, Signal::AssetsReady),
        (1100, Signal::VmStarted { pid: 1 }),
        (20_000, Signal::GuestStatus(guest("live", true))),
        (
            21_000,
            journal(
                "bootkube.service",
                "Error: error while checking pod status: timed out waiting for the condition",
            ),
        ),
    ];
    // Two failures, then the stages resume from their markers and bootkube is done.
    let mut m = machine();
    feed(&mut m, start.clone());
    let mut s = guest("live", true);
    s.bootkube_restarts = 2;
    feed(&mut m, vec![(40_000, Signal::GuestStatus(s.clone()))]);
    assert_eq!(m.phase(Phase::Bootkube).status, Status::Running);
    s.bootkube_done = true;
    feed(&mut m, vec![(50_000, Signal::GuestStatus(s))]);
    assert_eq!(m.phase(Phase::Bootkube).status, Status::Pass);
    assert_eq!(m.bootkube_restarts, 2);
    // Failing for ever: the phase ends at its deadline, quoting the restarts.
    let mut m = machine();
    feed(&mut m, start);
    let mut s = guest("live", true);
    s.bootkube_restarts = 40;
    feed(&mut m, vec![(60_000, Signal::GuestStatus(s))]);
    assert!(m.outcome().is_none());
    let a = m.tick(200_000);
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert_eq!(o.failed_phase, Some(Phase::Bootkube));
    assert!(
        o.reason.contains("bootkube.service restarted 40 times"),
        "{}",
        o.reason
    );
    assert!(
        o.reason.contains("timed out waiting for the condition"),
        "{}",
        o.reason
    );
}

#[test]
fn a_timeout_after_a_soft_lockup_under_tcg_quotes_the_lockup_not_the_traces_last_line() {
    let mut m = machine();
    m.scope_badness(crate::flow::badness::Policy {
        process_crashes_fatal: true,
        tcg: true,
        kernel_warnings_fatal: true,
    });
    through_bootkube(&mut m);
    let lockup = "[   65.2] watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [kworker/1:2:88]";
    let a = feed(
        &mut m,
        vec![
            (
                40_000,
                Signal::Console {
                    line: lockup.into(),
                },
            ),
            (
                40_100,
                Signal::Console {
                    line: "[   65.3]  </TASK>".into(),
                },
            ),
        ],
    );
    assert!(
        m.outcome().is_none(),
        "a lockup under TCG is a warning: {a:?}"
    );
    m.tick(3_600_000);
    let o = m.outcome().unwrap();
    assert!(
        o.reason.contains("did not finish within")
            && o.reason
                .contains("the guest warned meanwhile: soft lockup in the serial console")
            && o.reason.contains("CPU#1 stuck for 22s"),
        "{}",
        o.reason
    );
    // Without the warning, the reason says no such thing.
    let mut m = machine();
    through_bootkube(&mut m);
    m.tick(3_600_000);
    assert!(!m.outcome().unwrap().reason.contains("warned"));
}

#[test]
fn on_the_openshift_profile_a_crash_outside_the_bootstrap_units_is_a_warning() {
    let mut m = machine();
    m.scope_badness(crate::flow::badness::Policy {
        process_crashes_fatal: false,
        tcg: true,
        kernel_warnings_fatal: true,
    });
    through_bootkube(&mut m);
    let a = feed(
        &mut m,
        vec![(
            31_500,
            journal(
                "crio.service",
                "crio.service: A process of this unit has been killed by the OOM killer.",
            ),
        )],
    );
    assert!(m.outcome().is_none(), "{a:?}");
    let w = m.badness().warnings().next().unwrap();
    assert!(w
        .warning
        .as_deref()
        .unwrap()
        .contains("crio.service, not a bootstrap unit"));
    // The same crash in a bootstrap unit fails.
    let a = feed(
        &mut m,
        vec![(
            32_000,
            journal(
                "install-to-disk.service",
                "install-to-disk.service: A process of this unit has been killed by the OOM killer.",
            ),
        )],
    );
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert_eq!(o.failed_phase, Some(Phase::InstallToDisk));
    assert!(
        o.reason
            .contains("OOM kill in the journal of install-to-disk.service"),
        "{}",
        o.reason
    );
}

fn qmp(name: &str) -> Signal {
    Signal::Qmp {
        name: name.into(),
        data: serde_json::json!({"guest": true, "reason": "guest-reset"}),
    }
}

#[test]
fn evidence_of_a_later_phase_ends_the_earlier_ones_when_the_followers_lag() {
    // The status poll never answered and bootkube's last line was missed: the install disk's
    // writes (from the VM, not the guest) end the live boot and bootkube.
    let mut m = machine();
    feed(
        &mut m,
        vec![
            (1000, Signal::AssetsReady),
            (1100, Signal::VmStarted { pid: 1 }),
            (60_000, Signal::DiskWrite { bytes: 0 }),
            (61_000, Signal::DiskWrite { bytes: 8 << 20 }),
        ],
    );
    assert_eq!(m.phase(Phase::LiveBoot).status, Status::Pass);
    assert_eq!(m.phase(Phase::Bootkube).status, Status::Pass);
    assert!(m
        .phase(Phase::Bootkube)
        .detail
        .contains("install disk is being written"));
    assert_eq!(m.current(), Some(Phase::InstallToDisk));
    assert_eq!(m.disk.start_ms, Some(61_000));
    // "Install complete." while bootkube still waits ends both; install-to-disk goes on to
    // its reboot command.
    let mut m = machine();
    feed(
        &mut m,
        vec![
            (1000, Signal::AssetsReady),
            (1100, Signal::VmStarted { pid: 1 }),
            (20_000, Signal::GuestStatus(guest("live", true))),
            (
                50_000,
                journal("install-to-disk.service", "Install complete."),
            ),
        ],
    );
    assert_eq!(m.phase(Phase::Bootkube).status, Status::Pass);
    assert_eq!(m.current(), Some(Phase::InstallToDisk));
    feed(
        &mut m,
        vec![(
            50_100,
            journal("install-to-disk.service", "Going to reboot"),
        )],
    );
    assert_eq!(m.phase(Phase::InstallToDisk).status, Status::Pass);
    assert_eq!(m.current(), Some(Phase::Reboot));
    // The live system's bootkube lines end the live boot when the status poll is late.
    let mut m = machine();
    feed(
        &mut m,
        vec![
            (1000, Signal::AssetsReady),
            (1100, Signal::VmStarted { pid: 1 }),
            (
                30_000,
                journal("bootkube.service", "Rendering MCO manifests..."),
            ),
        ],
    );
    assert_eq!(m.phase(Phase::LiveBoot).status, Status::Pass);
    assert_eq!(m.current(), Some(Phase::Bootkube));
}

#[test]
fn install_to_disk_ends_on_its_marker_or_a_reset_after_a_whole_write_and_fails_on_an_early_reset() {
    // The marker install-to-disk.sh leaves after its reboot command.
    let mut m = machine();
    through_bootkube(&mut m);
    let mut s = guest("live", true);
    s.install_to_disk_done = true;
    feed(&mut m, vec![(40_000, Signal::GuestStatus(s))]);
    assert_eq!(m.phase(Phase::InstallToDisk).status, Status::Pass);
    assert_eq!(
        m.phase(Phase::InstallToDisk).detail,
        "/opt/openshift/.install-to-disk.done"
    );
    // coreos-installer's marker says the disk is written: the reset that follows is the
    // reboot, though its command's line was lost with the live system.
    let mut m = machine();
    through_bootkube(&mut m);
    let mut s = guest("live", true);
    s.coreos_installer_done = true;
    feed(&mut m, vec![(40_000, Signal::GuestStatus(s))]);
    assert_eq!(m.current(), Some(Phase::InstallToDisk));
    feed(&mut m, vec![(41_000, qmp("RESET"))]);
    assert_eq!(m.phase(Phase::InstallToDisk).status, Status::Pass);
    assert_eq!(
        m.phase(Phase::InstallToDisk).detail,
        "/opt/openshift/coreos-installer.done, then the VM reset before the reboot command's line was read"
    );
    assert_eq!(m.current(), Some(Phase::DiskBoot));
    // A reset once coreos-installer said 100 % and the disk went quiet: the reboot.
    let mut m = machine();
    through_bootkube(&mut m);
    feed(
        &mut m,
        vec![
            (31_000, Signal::DiskWrite { bytes: 280 << 20 }),
            (
                31_000,
                journal(
                    "install-to-disk.service",
                    "Read disk 86.8 MiB/86.8 MiB (100%)",
                ),
            ),
            (32_000, Signal::DiskWrite { bytes: 290 << 20 }),
            (52_000, qmp("RESET")),
        ],
    );
    assert_eq!(m.phase(Phase::InstallToDisk).status, Status::Pass);
    assert!(
        m.phase(Phase::InstallToDisk)
            .detail
            .contains("quiet for 20 s"),
        "{}",
        m.phase(Phase::InstallToDisk).detail
    );
    assert_eq!(m.phase(Phase::Reboot).status, Status::Pass);
    assert_eq!(m.current(), Some(Phase::DiskBoot));
    // The whole image read, the disk busy to the end, but systemd rebooting in order on the
    // console first (the fast schedule reboots at once): the reboot.
    let mut m = machine();
    through_bootkube(&mut m);
    feed(
        &mut m,
        vec![
            (31_000, Signal::DiskWrite { bytes: 40 << 20 }),
            (
                32_000,
                journal(
                    "install-to-disk.service",
                    "Read disk 86.8 MiB/86.8 MiB (100%)",
                ),
            ),
            (33_000, Signal::DiskWrite { bytes: 60 << 20 }),
            (
                33_100,
                Signal::Console {
                    line: "[  OK  ] Reached target reboot.target - System Reboot.".into(),
                },
            ),
            (33_500, qmp("RESET")),
        ],
    );
    assert_eq!(m.phase(Phase::InstallToDisk).status, Status::Pass);
    assert!(
        m.phase(Phase::InstallToDisk)
            .detail
            .contains("rebooted in order"),
        "{}",
        m.phase(Phase::InstallToDisk).detail
    );
    // The whole image read, but still being written when the reset came (what is read waits
    // in the guest's page cache): lost, the install did not finish.
    let mut m = machine();
    through_bootkube(&mut m);
    let a = feed(
        &mut m,
        vec![
            (31_000, Signal::DiskWrite { bytes: 40 << 20 }),
            (
                32_000,
                journal(
                    "install-to-disk.service",
                    "Read disk 86.8 MiB/86.8 MiB (100%)",
                ),
            ),
            (33_000, Signal::DiskWrite { bytes: 60 << 20 }),
            (33_500, qmp("RESET")),
        ],
    );
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert_eq!(o.failed_phase, Some(Phase::InstallToDisk));
    assert!(
        o.reason.contains(
            "100% of the image read but the disk still being written 0.5 s before the reset"
        ),
        "{}",
        o.reason
    );
    // A reset halfway: the install did not finish.
    let mut m = machine();
    through_bootkube(&mut m);
    let a = feed(
        &mut m,
        vec![
            (
                31_000,
                journal(
                    "install-to-disk.service",
                    "Read disk 43.0 MiB/86.8 MiB (49%)",
                ),
            ),
            (40_000, qmp("RESET")),
        ],
    );
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert_eq!(o.failed_phase, Some(Phase::InstallToDisk));
    assert!(
        o.reason
            .contains("the VM reset during install-to-disk before the install was seen complete"),
        "{}",
        o.reason
    );
    assert!(o.reason.contains("49% of the image"), "{}", o.reason);
}

#[test]
fn a_burst_of_reset_events_is_one_reset_with_its_cause() {
    let mut m = machine();
    through_bootkube(&mut m);
    let mut s = guest("live", true);
    s.coreos_installer_done = true;
    feed(
        &mut m,
        vec![
            (40_000, Signal::GuestStatus(s)),
            // QEMU 7.2 sends three RESET events for one reboot, within some 20 ms.
            (50_000, qmp("RESET")),
            (50_021, qmp("RESET")),
            (50_023, qmp("RESET")),
        ],
    );
    assert_eq!(m.resets, 1);
    assert_eq!(m.reset_causes, ["guest reboot"]);
    assert_eq!(m.current(), Some(Phase::DiskBoot));
    // A later reset (the harness's own system_reset here) counts again, with its cause.
    feed(
        &mut m,
        vec![(
            90_000,
            Signal::Qmp {
                name: "RESET".into(),
                data: serde_json::json!({"guest": false, "reason": "host-qmp-system-reset"}),
            },
        )],
    );
    assert_eq!(m.resets, 2);
    assert_eq!(m.reset_causes[1], "the harness (QMP system_reset)");
}

#[test]
fn the_last_signals_name_their_source() {
    let mut m = machine();
    through_bootkube(&mut m);
    let sources: Vec<Source> = m.last_signals().map(|(_, s, _)| *s).collect();
    assert!(sources.contains(&Source::Journal), "{sources:?}");
    assert!(sources.iter().all(|s| !s.name().is_empty()), "{sources:?}");
}

fn served(method: &str, status: u16, bytes: u64, ms: u64) -> Signal {
    Signal::Served(crate::flow::event::Served {
        method: method.into(),
        path: "/rootfs.img".into(),
        status,
        bytes,
        ms,
    })
}

#[test]
fn live_boot_splits_into_the_rootfs_fetch_within_it_and_the_rest() {
    let mut m = machine();
    feed(
        &mut m,
        vec![
            (1000, Signal::AssetsReady),
            (1100, Signal::VmStarted { pid: 1 }),
            (5000, served("HEAD", 200, 0, 5)),
            (9000, served("GET", 200, 80 << 20, 4000)),
            (20_000, Signal::GuestStatus(guest("live", true))),
            // After live-boot: not its time.
            (25_000, served("GET", 200, 80 << 20, 3000)),
        ],
    );
    assert_eq!(m.phase(Phase::LiveBoot).status, Status::Pass);
    assert_eq!(m.served.len(), 3, "every answer is kept");
    assert_eq!(m.live_boot_split(), Some((4000, 20_000 - 1100 - 4000)));
}

#[test]
fn live_boot_s_deadline_leaves_out_the_time_spent_sending_files_but_not_a_stalled_one() {
    let mut m = machine();
    feed(
        &mut m,
        vec![
            (1000, Signal::AssetsReady),
            (1100, Signal::VmStarted { pid: 1 }),
            // Finished answers: 30 s of sending in all. Before the phase: not its time.
            (500, served("GET", 200, 8 << 20, 400)),
            (20_000, served("GET", 200, 8 << 20, 5000)),
            (60_000, served("GET", 200, 249 << 20, 25_000)),
        ],
    );
    // The timeout is 100 s from 1.1 s; the fetches move it to 131.1 s.
    assert!(
        m.tick(125_000).is_empty(),
        "within the timeout plus the fetch"
    );
    m.tick(131_200);
    let o = m.outcome().expect("timed out past the credited deadline");
    assert_eq!(o.failed_phase, Some(Phase::LiveBoot));
    for quoted in ["within 2m 10s", "left out the 30.0 s", "timeout is 1m 40s"] {
        assert!(o.reason.contains(quoted), "{quoted:?} not in {}", o.reason);
    }
}

#[test]
fn a_boot_server_that_sends_forever_does_not_hold_live_boot_open_forever() {
    let mut m = machine();
    feed(
        &mut m,
        vec![
            (1000, Signal::AssetsReady),
            (1100, Signal::VmStarted { pid: 1 }),
            (50_000, served("GET", 200, 1 << 30, 40_000)),
            (190_000, served("GET", 200, 1 << 30, 140_000)),
        ],
    );
    // 180 s of sending, credited only up to the timeout: the deadline is 201.1 s.
    assert!(m.tick(201_000).is_empty());
    m.tick(201_200);
    assert_eq!(
        m.outcome().expect("timed out").failed_phase,
        Some(Phase::LiveBoot)
    );
}

#[test]
fn other_phases_get_no_fetch_credit() {
    let mut m = machine();
    feed(
        &mut m,
        vec![
            (1000, Signal::AssetsReady),
            (1100, Signal::VmStarted { pid: 1 }),
            (20_000, Signal::GuestStatus(guest("live", true))),
            (30_000, served("GET", 200, 249 << 20, 50_000)),
        ],
    );
    assert_eq!(m.phase(Phase::LiveBoot).status, Status::Pass);
    let bootkube = m.phase(Phase::Bootkube).start_ms.expect("bootkube began");
    m.tick(bootkube + 100_100);
    assert_eq!(
        m.outcome().expect("timed out").failed_phase,
        Some(Phase::Bootkube)
    );
}

#[test]
fn a_boot_that_fetched_nothing_has_no_split() {
    let mut m = machine();
    feed(
        &mut m,
        vec![
            (1000, Signal::AssetsReady),
            (1100, Signal::VmStarted { pid: 1 }),
            (20_000, Signal::GuestStatus(guest("live", true))),
        ],
    );
    assert_eq!(m.live_boot_split(), None);
}

/// A network boot whose rootfs fetch failed, as CoreOS's console shows it (the contract's "A
/// failed network boot"): the unit's failure and the emergency target first, then, after the
/// emergency shell's wait, the failed unit's journal lines and the shell's prompt.
fn rootfs_404_console(dump_at: Option<u64>) -> Vec<(u64, Signal)> {
    let console = |line: &str| Signal::Console { line: line.into() };
    let mut lines = vec![
        (1000, Signal::AssetsReady),
        (1100, Signal::VmStarted { pid: 1 }),
        (3000, console("[    2.1] virtio_net virtio0 eth0: renamed")),
        (
            4000,
            console("[FAILED] Failed to start coreos-livepxe-rootfs.service - Acquire live PXE rootfs image."),
        ),
        (4001, console("Entering emergency mode. Exit the shell to continue.")),
    ];
    if let Some(t) = dump_at {
        lines.extend([
            (t, console("Displaying logs from failed units: coreos-livepxe-rootfs.service")),
            (
                t + 1,
                console("coreos-livepxe-rootfs[812]: Couldn't query the server for the rootfs specified by: http://10.0.2.2:4000/rootfs.img"),
            ),
            (t + 2, console("coreos-livepxe-rootfs[812]: HTTP/1.1 404 Not Found")),
        ]);
    }
    lines
}

#[test]
fn an_emergency_shell_in_the_live_boot_fails_quoting_the_failed_units_lines_dumped_after_it() {
    let mut m = machine();
    feed(&mut m, rootfs_404_console(Some(15_000)));
    assert!(
        m.outcome().is_none(),
        "held while the shell may still dump its cause"
    );
    m.on_event(&ev(
        15_010,
        Signal::Console {
            line: "Press Enter to continue.".into(),
        },
    ));
    let o = m.outcome().expect("the prompt ends the window");
    assert_eq!(o.verdict, Verdict::Fail);
    assert_eq!(o.failed_phase, Some(Phase::LiveBoot));
    for quoted in [
        "emergency shell",
        "Failed to start coreos-livepxe-rootfs.service",
        "rootfs specified by: http://10.0.2.2:4000/rootfs.img",
        "404 Not Found",
        "renamed",
    ] {
        assert!(o.reason.contains(quoted), "{quoted:?} not in {}", o.reason);
    }
}

#[test]
fn an_emergency_without_a_dump_fails_once_its_window_has_passed_and_not_before() {
    let mut m = machine();
    feed(&mut m, rootfs_404_console(None));
    let window = super::emergency::EMERGENCY_DUMP_WINDOW.as_millis() as u64;
    m.tick(4001 + window - 1);
    assert!(m.outcome().is_none());
    m.tick(4001 + window);
    let o = m.outcome().expect("failed after the window");
    assert_eq!(o.failed_phase, Some(Phase::LiveBoot));
    assert!(o.reason.contains("emergency shell"), "{}", o.reason);
    assert!(
        o.reason
            .contains("the console showed nothing more within 25 s"),
        "{}",
        o.reason
    );
}

#[test]
fn a_dump_without_a_prompt_is_quoted_when_the_window_ends() {
    let mut m = machine();
    feed(&mut m, rootfs_404_console(Some(19_000)));
    let window = super::emergency::EMERGENCY_DUMP_WINDOW.as_millis() as u64;
    m.tick(4001 + window);
    let o = m.outcome().expect("failed after the window");
    assert!(o.reason.contains("404 Not Found"), "{}", o.reason);
}

fn assisted(step: AssistedStep) -> Signal {
    Signal::Assisted(step)
}

fn output(line: &str) -> Signal {
    assisted(AssistedStep::Output { line: line.into() })
}

#[test]
fn an_assisted_install_is_timed_and_ended_by_the_harnesss_own_coreos_installer() {
    let mut m = machine();
    through_bootkube(&mut m);
    feed(&mut m, vec![
        (31_000, Signal::DiskWrite { bytes: 0 }),
        (33_000, assisted(AssistedStep::Started { command: "sudo -n coreos-installer install -i /opt/openshift/master.ign /dev/vda 2>&1".into() })),
        (34_000, output("Read disk 40.0 MiB/80.0 MiB (50%)")),
        (35_000, Signal::DiskWrite { bytes: 60 * 1048576 }),
        (36_000, output("Read disk 80.0 MiB/80.0 MiB (100%)")),
        (36_500, output("Install complete.")),
    ]);
    // Its lines give the progress; its exit, not a line, ends the phase.
    assert_eq!(m.disk.image_percent, Some(100.0));
    assert_eq!(m.current(), Some(Phase::InstallToDisk));
    // The exit says the disk is written; the agent's log upload and reboot follow, and the
    // reboot command ends the phase.
    feed(
        &mut m,
        vec![
            (37_000, assisted(AssistedStep::Exited { code: 0 })),
            (37_000, assisted(AssistedStep::CollectingLogs)),
        ],
    );
    assert_eq!(m.current(), Some(Phase::InstallToDisk));
    assert_eq!(m.disk.end_ms, Some(37_000));
    feed(
        &mut m,
        vec![
            (
                49_500,
                assisted(AssistedStep::LogsCollected {
                    detail: "logs collected".into(),
                }),
            ),
            (49_600, assisted(AssistedStep::Rebooting)),
        ],
    );
    assert_eq!(m.current(), Some(Phase::Reboot));
    let st = m.phase(Phase::InstallToDisk);
    assert_eq!(
        (st.status, st.start_ms, st.end_ms),
        (Status::Pass, Some(33_000), Some(49_600))
    );
    for said in [
        "run by the harness over SSH (assisted install), exited 0",
        "the live system's logs collected in 12.5 s",
        "the harness asked the live system to reboot",
    ] {
        assert!(st.detail.contains(said), "{said:?} in {}", st.detail);
    }
    assert_eq!(m.phase(Phase::Reboot).start_ms, Some(49_600));
    assert_eq!(m.disk.start_ms, Some(33_000));
    // The reboot it asks for ends the next phase as any reboot does.
    feed(
        &mut m,
        vec![(
            45_000,
            Signal::Qmp {
                name: "RESET".into(),
                data: serde_json::json!({"guest": true}),
            },
        )],
    );
    assert_eq!(m.current(), Some(Phase::DiskBoot));
}

#[test]
fn an_assisted_coreos_installer_that_fails_fails_install_to_disk_quoting_it() {
    let mut m = machine();
    through_bootkube(&mut m);
    let a = feed(&mut m, vec![
        (33_000, assisted(AssistedStep::Started { command: "sudo -n coreos-installer install -i /opt/openshift/master.ign /dev/disk/by-id/nope 2>&1".into() })),
        (33_200, output("Error: getting sector size of /dev/disk/by-id/nope")),
        (33_300, output("Caused by: No such file or directory (os error 2)")),
        (34_000, assisted(AssistedStep::Exited { code: 1 })),
    ]);
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert_eq!(o.failed_phase, Some(Phase::InstallToDisk));
    assert_eq!(
        o.reason,
        "install-to-disk: coreos-installer, run by the harness over SSH (assisted install) exited 1: \"Error: getting sector size of /dev/disk/by-id/nope\""
    );
}

fn started(at: u64) -> (u64, Signal) {
    let command =
        "sudo -n coreos-installer install --insecure -i /opt/openshift/master.ign /dev/vda 2>&1";
    (
        at,
        assisted(AssistedStep::Started {
            command: command.into(),
        }),
    )
}

fn retrying(at: u64, attempt: u32, error: &str) -> (u64, Signal) {
    let step = AssistedStep::Retrying {
        attempt,
        code: 1,
        error: Some(error.into()),
    };
    (at, assisted(step))
}

/// The agent's steps before coreos-installer (the device resolved, its old metadata cleaned,
/// a failed cleanup, the host Ignition merged) and the boot entry after it are in the
/// timeline; none ends or fails the phase.
#[test]
fn the_assisted_steps_around_coreos_installer_leave_the_phase_running() {
    let mut m = machine();
    through_bootkube(&mut m);
    // A write before the harness's steps (a fault's old metadata) is not the install's.
    feed(
        &mut m,
        vec![
            (30_500, Signal::DiskWrite { bytes: 0 }),
            (30_600, Signal::DiskWrite { bytes: 8 << 20 }),
        ],
    );
    let steps = [
        AssistedStep::DeviceResolved {
            link: "/dev/disk/by-id/virtio-sno-install".into(),
            device: "/dev/vda".into(),
        },
        AssistedStep::LvmCleaned {
            detail: "LVM on /dev/vda: volume groups [stale] deactivated and removed".into(),
        },
        AssistedStep::CleanupFailed {
            what: "MD RAID".into(),
            detail: "`mdadm --stop /dev/md127` exited 1: busy".into(),
        },
        AssistedStep::SignaturesWiped {
            detail: "wipefs erased 3 signature(s)".into(),
        },
        AssistedStep::IgnitionMerged {
            detail: "host.ign merged".into(),
        },
    ];
    let mut t = 31_000;
    for step in steps {
        t += 100;
        let a = feed(&mut m, vec![(t, assisted(step))]);
        assert!(a.is_empty(), "{a:?}");
    }
    assert_eq!(m.current(), Some(Phase::InstallToDisk));
    assert_eq!(m.disk.start_ms, None);
    // No stall while the harness prepares: the write has not begun.
    assert!(m.tick(31_000 + 60_000).is_empty());
    feed(
        &mut m,
        vec![
            started(93_000),
            (93_500, Signal::DiskWrite { bytes: 40 << 20 }),
        ],
    );
    assert_eq!(m.disk.start_ms, Some(93_000));
    assert_eq!(m.disk.written(), 32 << 20);
    feed(
        &mut m,
        vec![
            (96_000, assisted(AssistedStep::Exited { code: 0 })),
            (
                96_500,
                assisted(AssistedStep::BootEntryNotSet {
                    detail: "efibootmgr is not on the live system".into(),
                }),
            ),
        ],
    );
    assert_eq!(m.current(), Some(Phase::InstallToDisk));
    assert_eq!(m.outcome(), None);
    let said = AssistedStep::CleanupFailed {
        what: "MD RAID".into(),
        detail: "busy".into(),
    }
    .describe();
    assert_eq!(
        said,
        "assisted install: cleaning the install device (MD RAID) failed, the install goes on: busy"
    );
}

/// A failed attempt is retried: the phase keeps its start, the write restarts, and the phase
/// passes when a later attempt succeeds.
#[test]
fn an_assisted_coreos_installer_that_fails_once_is_retried_and_passes() {
    let mut m = machine();
    through_bootkube(&mut m);
    let a = feed(
        &mut m,
        vec![
            started(33_000),
            (33_500, output("Read disk 20.0 MiB/80.0 MiB (25%)")),
            (
                34_000,
                output("Error: checking for exclusive access to /dev/vda"),
            ),
            retrying(
                34_100,
                1,
                "Error: checking for exclusive access to /dev/vda",
            ),
        ],
    );
    assert!(a.is_empty(), "{a:?}");
    assert_eq!(m.current(), Some(Phase::InstallToDisk));
    assert_eq!(m.disk.image_percent, None);
    feed(
        &mut m,
        vec![
            started(35_100),
            (36_000, output("Read disk 80.0 MiB/80.0 MiB (100%)")),
            (37_000, assisted(AssistedStep::Exited { code: 0 })),
            (37_500, assisted(AssistedStep::Rebooting)),
        ],
    );
    let st = m.phase(Phase::InstallToDisk);
    assert_eq!((st.status, st.start_ms), (Status::Pass, Some(33_000)));
    assert_eq!(m.disk.start_ms, Some(35_100));
    assert_eq!(
        AssistedStep::Retrying {
            attempt: 1,
            code: 1,
            error: Some("Error: x".into())
        }
        .describe(),
        "assisted install: coreos-installer attempt 1 of 3 exited 1: \"Error: x\"; trying again"
    );
}

/// Only the third failure fails install-to-disk, and its reason quotes every attempt.
#[test]
fn the_third_failed_attempt_fails_install_to_disk_quoting_each() {
    let mut m = machine();
    through_bootkube(&mut m);
    let a = feed(
        &mut m,
        vec![
            started(33_000),
            (33_100, output("Error: found busy partitions")),
            retrying(33_200, 1, "Error: found busy partitions"),
            started(34_200),
            (34_300, output("Error: found busy partitions")),
            retrying(34_400, 2, "Error: found busy partitions"),
            started(35_400),
        ],
    );
    assert!(a.is_empty(), "{a:?}");
    let a = feed(
        &mut m,
        vec![
            (35_500, output("Error: writing the image: I/O error")),
            (35_600, assisted(AssistedStep::Exited { code: 1 })),
        ],
    );
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert_eq!(o.failed_phase, Some(Phase::InstallToDisk));
    assert_eq!(
        o.reason,
        "install-to-disk: coreos-installer, run by the harness over SSH (assisted install) failed 3 times; attempt 3 exited 1: \"Error: writing the image: I/O error\"; earlier: attempt 1 exited 1: \"Error: found busy partitions\"; attempt 2 exited 1: \"Error: found busy partitions\""
    );
}

#[test]
fn an_assisted_install_that_cannot_run_or_reboot_fails_where_it_stands() {
    let mut m = machine();
    through_bootkube(&mut m);
    let a = feed(&mut m, vec![(40_000, assisted(AssistedStep::Broken { detail: "/opt/openshift/master.ign, which bootkube writes for the install, is not on the live system".into() }))]);
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert_eq!(o.failed_phase, Some(Phase::InstallToDisk));
    assert!(o.reason.contains("master.ign"), "{}", o.reason);

    let mut m = machine();
    through_bootkube(&mut m);
    feed(
        &mut m,
        vec![
            (37_000, assisted(AssistedStep::Exited { code: 0 })),
            (37_500, assisted(AssistedStep::Rebooting)),
        ],
    );
    let a = feed(
        &mut m,
        vec![(
            38_000,
            assisted(AssistedStep::Broken {
                detail: "`sudo -n systemctl reboot` exited 1: denied".into(),
            }),
        )],
    );
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert_eq!(o.failed_phase, Some(Phase::Reboot));
    // A step that comes after the phases it concerns changes nothing.
    let before = m.outcome().cloned();
    feed(&mut m, vec![(39_000, output("Error: late"))]);
    assert_eq!(m.outcome().cloned(), before);
}

#[test]
fn the_assisted_installs_write_gets_the_same_deadline_and_stall_detector() {
    // The adaptive deadline follows the harness's coreos-installer's progress lines.
    let mut m = adaptive_machine();
    through_bootkube(&mut m);
    feed(
        &mut m,
        vec![
            (31_000, Signal::DiskWrite { bytes: 0 }),
            (
                32_000,
                assisted(AssistedStep::Started {
                    command: "coreos-installer install".into(),
                }),
            ),
            (82_000, output("Read disk 5.0 MiB/100.0 MiB (5%)")),
        ],
    );
    let p = m.install_projection().expect("a projection");
    assert_eq!(p.write_end_ms, 32_000 + 1_000_000);
    assert_eq!(p.deadline_ms, 32_000 + 600_000, "capped at 6 x 100 s");
    // And a disk that stops taking writes fails it, as under install-to-disk.service.
    let mut m = machine();
    through_bootkube(&mut m);
    feed(
        &mut m,
        vec![
            (
                32_000,
                assisted(AssistedStep::Started {
                    command: "coreos-installer install".into(),
                }),
            ),
            (33_000, Signal::DiskWrite { bytes: 5 << 20 }),
            (40_000, Signal::DiskWrite { bytes: 5 << 20 }),
        ],
    );
    assert_the_write_stall_fails(&mut m);
}

#[test]
fn a_live_boot_that_fails_while_the_boot_server_was_strained_is_the_hosts_error() {
    let strained = |m: &mut Machine| {
        feed(
            m,
            vec![
                (1000, Signal::AssetsReady),
                (1100, Signal::VmStarted { pid: 1 }),
                (
                    5000,
                    Signal::BootServerStrained {
                        detail: "1100 idle connections evicted at its limit".into(),
                    },
                ),
            ],
        );
    };
    // Timed out under strain: error, naming the server and what it refused.
    let mut m = machine();
    strained(&mut m);
    m.tick(200_000);
    let o = m.outcome().unwrap();
    assert_eq!(
        (o.verdict, o.failed_phase),
        (Verdict::Error, Some(Phase::LiveBoot))
    );
    assert!(
        o.reason.starts_with("live-boot did not finish within")
            && o.reason.contains(
                "while the harness's boot server was under strain: 1100 idle connections evicted"
            ),
        "{}",
        o.reason
    );
    // The same timeout without strain is the system's failure.
    let mut m = machine();
    feed(
        &mut m,
        vec![
            (1000, Signal::AssetsReady),
            (1100, Signal::VmStarted { pid: 1 }),
        ],
    );
    m.tick(200_000);
    assert_eq!(m.outcome().unwrap().verdict, Verdict::Fail);
    // Strain during live-boot does not excuse a later phase's failure.
    let mut m = machine();
    strained(&mut m);
    through_bootkube(&mut m);
    let o = m.fail_now(400_000, "bootkube failed".into());
    assert!(!o.is_empty());
    assert_eq!(m.outcome().unwrap().verdict, Verdict::Fail);
}

/// A NetworkManager activation line of boot `boot`.
fn nm_activation(boot: &str, profile: &str) -> Signal {
    Signal::Journal {
        unit: "NetworkManager.service".into(),
        identifier: "NetworkManager".into(),
        message: format!(
            "<info>  [1733472000.1234] device (enp0s2): Activation: starting connection '{profile}' (6b1f0c2e)"
        ),
        guest_usec: 0,
        boot_id: boot.into(),
    }
}

#[test]
fn a_static_node_that_brings_its_nic_up_with_its_keyfile_goes_on() {
    let mut m = machine();
    m.expect_network_profiles(vec!["nic0".into()]);
    through_bootkube(&mut m);
    let actions = feed(
        &mut m,
        vec![
            (31_000, nm_activation("live", "nic0")),
            (31_500, nm_activation("live", "lo")),
        ],
    );
    assert!(actions.is_empty(), "{actions:?}");
    assert_eq!(m.current(), Some(Phase::InstallToDisk));
}

#[test]
fn an_installed_system_without_the_live_systems_keyfiles_fails_naming_the_copy() {
    let mut m = machine();
    m.expect_network_profiles(vec!["bond0".into(), "bond0-port0".into()]);
    through_bootkube(&mut m);
    feed(&mut m, vec![(31_000, nm_activation("live", "bond0-port0"))]);
    let actions = feed(
        &mut m,
        vec![(40_000, nm_activation("disk-boot", "Wired connection 1"))],
    );
    let Some(Action::Finished(o)) = actions.last() else {
        panic!("{actions:?}")
    };
    assert_eq!(o.verdict, Verdict::Fail);
    assert!(o.reason.contains("the installed system brought up enp0s2 with NetworkManager's profile 'Wired connection 1', not the scenario's static profiles (bond0, bond0-port0)"), "{}", o.reason);
    assert!(
        o.reason.contains("coreos-installer install -n"),
        "{}",
        o.reason
    );
}

#[test]
fn a_live_system_without_the_embedded_keyfiles_fails_naming_the_embed() {
    let mut m = machine();
    m.expect_network_profiles(vec!["nic0".into()]);
    feed(
        &mut m,
        vec![
            (1000, Signal::AssetsReady),
            (1100, Signal::VmStarted { pid: 1 }),
        ],
    );
    let actions = feed(
        &mut m,
        vec![(15_000, nm_activation("live", "Wired connection 1"))],
    );
    let Some(Action::Finished(o)) = actions.last() else {
        panic!("{actions:?}")
    };
    assert_eq!(o.failed_phase, Some(Phase::LiveBoot));
    assert!(
        o.reason.contains("the live system brought up enp0s2"),
        "{}",
        o.reason
    );
    assert!(o.reason.contains("iso network embed"), "{}", o.reason);
}

#[test]
fn without_static_profiles_any_activation_is_fine() {
    let mut m = machine();
    through_bootkube(&mut m);
    let actions = feed(
        &mut m,
        vec![(31_000, nm_activation("live", "Wired connection 1"))],
    );
    assert!(actions.is_empty(), "{actions:?}");
}

#[test]
fn a_static_node_registered_at_another_address_fails_node_ready_naming_both() {
    let mut m = machine();
    up_to_node_ready(&mut m);
    let wanted: Vec<std::net::IpAddr> = vec!["10.0.2.15".parse().unwrap()];
    let have = vec!["10.0.2.16".to_string()];
    let a = feed(
        &mut m,
        vec![(
            60_000,
            Signal::NodeSeen(crate::flow::event::NodeSeen {
                name: "sno-master-0".into(),
                address_problem: crate::health::judge::node_address_problem(&have, &wanted),
                addresses: have,
                ..Default::default()
            }),
        )],
    );
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert_eq!(o.failed_phase, Some(Phase::NodeReady));
    assert!(
        o.reason.contains("the node \"sno-master-0\" registered with InternalIP 10.0.2.16, not its static 10.0.2.15"),
        "{}",
        o.reason
    );
}

/// A machine whose bootstrap-complete budget is 300 s and every other timeout 100 s.
fn machine_with_a_longer_bootstrap_budget() -> Machine {
    let mut m = machine();
    m.phases.get_mut(&Phase::BootstrapComplete).unwrap().timeout = Duration::from_secs(300);
    m
}

#[test]
fn node_ready_has_no_deadline_of_its_own_only_bootstrap_completes_budget_from_its_start() {
    let mut m = machine_with_a_longer_bootstrap_budget();
    up_to_node_ready(&mut m);
    assert_eq!(m.current(), Some(Phase::NodeReady));
    let start = m.phase(Phase::NodeReady).start_ms.unwrap();
    // Past node-ready's own 100 s, well within the shared 300 s: still waiting.
    assert!(m.tick(start + 200_000).is_empty());
    assert!(m.tick(start + 300_000).is_empty());
    let a = m.tick(start + 300_001);
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert_eq!(o.failed_phase, Some(Phase::NodeReady));
    for quoted in [
        "node-ready did not finish within 5m",
        "the budget node-ready and bootstrap-complete share from node-ready's start",
        "bootstrap-complete's timeout is 5m",
    ] {
        assert!(o.reason.contains(quoted), "{quoted:?} in {}", o.reason);
    }
}

#[test]
fn bootstrap_complete_gets_what_node_ready_left_of_the_shared_budget() {
    let mut m = machine_with_a_longer_bootstrap_budget();
    through_bootkube(&mut m);
    feed(&mut m, vec![
        (32_000, journal("install-to-disk.service", "Executing coreos-installer with the following options: install -i /opt/openshift/master.ign /dev/vda")),
        (37_000, journal("install-to-disk.service", "Install complete.")),
        (38_000, Signal::Qmp { name: "RESET".into(), data: serde_json::json!({"guest": true}) }),
        (55_000, Signal::GuestStatus(guest("disk", false))),
        (57_000, api(ApiCheck::Readyz, true, "ok")),
    ]);
    let start = m.phase(Phase::NodeReady).start_ms.unwrap();
    // The node takes 250 s: bootstrap-complete has 50 s left, not its whole 300 s.
    feed(
        &mut m,
        vec![(start + 250_000, api(ApiCheck::NodeReady, true, "Ready"))],
    );
    assert_eq!(m.current(), Some(Phase::BootstrapComplete));
    assert!(m.tick(start + 300_000).is_empty());
    let a = m.tick(start + 300_001);
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert_eq!(o.failed_phase, Some(Phase::BootstrapComplete));
    assert!(o.reason.contains("within 5m"), "{}", o.reason);
    assert_eq!(
        m.deadline_window(Phase::BootstrapComplete),
        Some((start, Duration::from_secs(300)))
    );
}

/// A line of the installed system's post-reboot script, as the journal follower sends it.
fn script(msg: &str) -> Signal {
    Signal::Journal {
        unit: "bootkube.service".into(),
        identifier: crate::flow::post_reboot::IDENTIFIER.into(),
        message: msg.into(),
        guest_usec: 0,
        boot_id: "disk".into(),
    }
}

/// Through the pivot to `phase`, the API checks before it passing.
fn to_phase_after_the_pivot(m: &mut Machine, phase: Phase) {
    through_bootkube(m);
    let checks = [
        (Phase::NodeReady, api(ApiCheck::Readyz, true, "ok")),
        (
            Phase::BootstrapComplete,
            api(ApiCheck::NodeReady, true, "Ready"),
        ),
        (
            Phase::ClusterReady,
            api(ApiCheck::BootstrapConfigmap, true, "complete"),
        ),
        (
            Phase::ClusterReady,
            api(ApiCheck::EtcdBootstrapMemberRemoved, true, "True"),
        ),
        (
            Phase::BootstrapCleanup,
            api(ApiCheck::ClusterVersion, true, "Available"),
        ),
        (
            Phase::BootstrapCleanup,
            api(ApiCheck::InstallConfigApplied, true, "applied"),
        ),
        (
            Phase::BootstrapCleanup,
            api(ApiCheck::ClusterOperators, true, "settled"),
        ),
    ];
    let passing = checks
        .into_iter()
        .filter(|(reached, _)| *reached <= phase)
        .map(|(_, s)| (57_000, s));
    feed(
        m,
        through_reboot_signals()
            .into_iter()
            .chain(passing)
            .collect(),
    );
    assert_eq!(m.current(), Some(phase));
}

/// The script's lines up to the loop `id` and three rounds of it at 100, 110 and 120 s: each
/// earlier loop goes round once and ends with the line the real script prints next.
fn script_into(id: &str) -> Vec<(u64, Signal)> {
    use crate::flow::post_reboot::LOOPS;
    let mut lines = vec!["Running bootkube bootstrap-in-place post reboot"];
    for l in LOOPS.iter().take_while(|l| l.id != id) {
        lines.extend(l.opens.iter().chain(l.rounds.first()));
        match l.id {
            "csr" => lines.push("node is ready"),
            "kube-apiserver-operator" | "static-pod" => lines.push("Restarting kubelet"),
            _ => {}
        }
    }
    let target = crate::flow::post_reboot::by_id(id).unwrap();
    let mut out: Vec<(u64, Signal)> = lines
        .into_iter()
        .enumerate()
        .map(|(i, l)| (60_000 + i as u64 * 1000, script(l)))
        .collect();
    out.extend(target.opens.iter().map(|l| (95_000, script(l))));
    for t in [100_000, 110_000, 120_000] {
        out.push((t, script(target.rounds[0])));
    }
    out
}

/// A timeout of `phase` while the script spins in loop `id` names the loop, since when, how
/// often it went round and what it waits for.
fn a_timeout_names_the_loop(id: &str, phase: Phase) -> String {
    let target = crate::flow::post_reboot::by_id(id).unwrap();
    let mut m = machine();
    to_phase_after_the_pivot(&mut m, phase);
    feed(&mut m, script_into(id));
    let a = m.tick(170_000);
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert_eq!(o.failed_phase, Some(phase));
    let since = if target.opens.is_empty() { 100 } else { 95 };
    let expected = format!(
        "the post-reboot script (bootstrap-in-place-post-reboot.sh) is {} (loop `{id}`) for {} s, since {since} s into the run (3 rounds of `{}`, the last 50 s ago): it waits for {}",
        target.name,
        170 - since,
        target.rounds[0],
        target.waits_for
    );
    assert!(o.reason.contains(&expected), "{}", o.reason);
    // Named before the last signal, which on a real node is a kubelet or crio line.
    let at = o.reason.find(&expected).unwrap();
    assert!(o.reason[at..].contains("; last signal"), "{}", o.reason);
    o.reason.clone()
}

#[test]
fn an_api_ready_timeout_names_the_wait_for_the_api() {
    a_timeout_names_the_loop("api", Phase::ApiReady);
}

#[test]
fn a_node_ready_timeout_names_the_bootstrap_configmap_loop() {
    let r = a_timeout_names_the_loop("bootstrap-configmap", Phase::NodeReady);
    assert!(
        r.contains("configmap kube-system/bootstrap to exist"),
        "{r}"
    );
}

#[test]
fn a_node_ready_timeout_names_the_cvo_lease_loop() {
    a_timeout_names_the_loop("cvo-lease", Phase::NodeReady);
}

#[test]
fn a_node_ready_timeout_names_the_cluster_policy_controller_lease_loop() {
    a_timeout_names_the_loop("cpc-lease", Phase::NodeReady);
}

#[test]
fn a_node_ready_timeout_names_the_cvo_overrides_loop() {
    a_timeout_names_the_loop("cvo-overrides", Phase::NodeReady);
}

#[test]
fn a_node_ready_timeout_names_the_csr_approval_loop() {
    let r = a_timeout_names_the_loop("csr", Phase::NodeReady);
    assert!(r.contains("approving CSRs (loop `csr`)"), "{r}");
}

#[test]
fn a_cluster_ready_timeout_names_the_kube_apiserver_operator_loop() {
    a_timeout_names_the_loop("kube-apiserver-operator", Phase::ClusterReady);
}

#[test]
fn a_cluster_ready_timeout_names_the_static_pod_loop() {
    a_timeout_names_the_loop("static-pod", Phase::ClusterReady);
}

#[test]
fn a_bootstrap_complete_timeout_names_the_loop_too() {
    a_timeout_names_the_loop("cvo-lease", Phase::BootstrapComplete);
}

#[test]
fn a_bootstrap_cleanup_timeout_names_the_cvo_loop_the_units_state_and_the_files_left() {
    let mut m = machine();
    to_phase_after_the_pivot(&mut m, Phase::BootstrapCleanup);
    let mut status = guest("disk", false);
    status.bootkube_state = "activating/start/success".into();
    status.bootstrap_files = vec![
        "/etc/kubernetes/bootstrap-secrets".into(),
        "/opt/openshift".into(),
    ];
    feed(&mut m, vec![(125_000, Signal::GuestStatus(status))]);
    let r = a_timeout_names_the_loop_in(&mut m, "cvo");
    assert!(r.contains("; on the installed system bootkube.service is activating/start/success (ActiveState/SubState/Result) and enabled; bootstrap files still there: /etc/kubernetes/bootstrap-secrets, /opt/openshift"), "{r}");
}

/// As `a_timeout_names_the_loop`, on a machine already in bootstrap-cleanup.
fn a_timeout_names_the_loop_in(m: &mut Machine, id: &str) -> String {
    feed(m, script_into(id));
    feed(
        m,
        vec![(
            121_000,
            script("console: Available=False RouteHealthDegraded"),
        )],
    );
    let a = m.tick(170_000);
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert_eq!(o.failed_phase, Some(Phase::BootstrapCleanup));
    assert!(
        o.reason.contains("is waiting for the CVO (loop `cvo`) for 75 s, since 95 s into the run (3 rounds of `Still waiting for cvo ...`, the last 50 s ago)"),
        "{}",
        o.reason
    );
    assert!(
        o.reason
            .contains("it last said \"console: Available=False RouteHealthDegraded\""),
        "{}",
        o.reason
    );
    o.reason.clone()
}

#[test]
fn a_script_that_ended_is_not_said_to_be_in_its_last_loop() {
    let mut m = machine();
    to_phase_after_the_pivot(&mut m, Phase::BootstrapCleanup);
    feed(&mut m, script_into("cvo"));
    let mut ended = guest("disk", false);
    ended.bootkube_state = "inactive/dead/success".into();
    ended.bootkube_enabled = "enabled".into();
    ended.bootstrap_files = vec!["/opt/openshift".into()];
    feed(&mut m, vec![(130_000, Signal::GuestStatus(ended))]);
    let a = m.tick(170_000);
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert!(!o.reason.contains("loop `cvo`"), "{}", o.reason);
    assert!(
        o.reason.contains("bootkube.service is inactive/dead/success (ActiveState/SubState/Result) and enabled; bootstrap files still there: /opt/openshift"),
        "{}",
        o.reason
    );
}

#[test]
fn the_live_systems_bootkube_lines_are_not_the_post_reboot_scripts() {
    let mut m = machine();
    to_phase_after_the_pivot(&mut m, Phase::ApiReady);
    let live_line = Signal::Journal {
        unit: "bootkube.service".into(),
        identifier: "bootkube.sh".into(),
        message: "Waiting for api ...".into(),
        guest_usec: 0,
        boot_id: "live".into(),
    };
    feed(&mut m, vec![(100_000, live_line)]);
    let a = m.tick(170_000);
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert!(!o.reason.contains("post-reboot script"), "{}", o.reason);
    // The installed system's bootkube.service counts even where the identifier is another.
    let mut m = machine();
    to_phase_after_the_pivot(&mut m, Phase::ApiReady);
    let installed_line = Signal::Journal {
        unit: "bootkube.service".into(),
        identifier: "bash".into(),
        message: "Waiting for api ...".into(),
        guest_usec: 0,
        boot_id: "disk".into(),
    };
    feed(&mut m, vec![(100_000, installed_line)]);
    let a = m.tick(170_000);
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert!(
        o.reason.contains("waiting for the API (loop `api`)"),
        "{}",
        o.reason
    );
}

/// The journal entry `message` of install-to-disk.service, at guest time `guest_s` seconds
/// past 2026-12-06T18:19:00Z.
fn install_to_disk_at(message: &str, guest_s: u64) -> Signal {
    let base = humantime::parse_rfc3339("2026-12-06T18:19:00Z").unwrap();
    let usec = base
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64;
    Signal::Journal {
        unit: "install-to-disk.service".into(),
        identifier: "install-to-disk.sh".into(),
        message: message.into(),
        guest_usec: usec + guest_s * 1_000_000,
        boot_id: "live-boot".into(),
    }
}

#[test]
fn the_reboot_starts_at_the_reboot_command_and_its_budget_covers_the_scheduled_delay() {
    let mut m = machine();
    through_bootkube(&mut m);
    feed(&mut m, vec![
        (32_000, journal("install-to-disk.service", "Executing coreos-installer with the following options: install -i /opt/openshift/master.ign /dev/vda")),
        (37_000, journal("install-to-disk.service", "Install complete.")),
    ]);
    // coreos-installer is done, the script is not: no reboot yet.
    assert_eq!(m.current(), Some(Phase::InstallToDisk));
    feed(
        &mut m,
        vec![
            (38_000, install_to_disk_at("Going to reboot", 0)),
            (
                38_100,
                install_to_disk_at(
                    "Reboot scheduled for Sun 2026-12-06 18:20:00 UTC, use 'shutdown -c' to cancel.",
                    0,
                ),
            ),
        ],
    );
    assert_eq!(m.current(), Some(Phase::Reboot));
    assert_eq!(m.phase(Phase::Reboot).start_ms, Some(38_000));
    assert!(m
        .phase(Phase::InstallToDisk)
        .detail
        .contains("Going to reboot"));
    // 100 s of timeout and the 60 s shutdown waits: no timeout until 198 s.
    assert!(m.tick(38_000 + 160_000).is_empty());
    let a = m.tick(38_000 + 160_001);
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert_eq!(o.failed_phase, Some(Phase::Reboot));
    assert!(
        o.reason
            .contains("the deadline added the 60 s `shutdown` scheduled the reboot for"),
        "{}",
        o.reason
    );
}

#[test]
fn the_assisted_log_collection_is_timed_apart_from_the_write_and_named_when_it_hangs() {
    let mut m = adaptive_machine();
    through_bootkube(&mut m);
    feed(
        &mut m,
        vec![
            (
                32_000,
                assisted(AssistedStep::Started {
                    command: "coreos-installer install".into(),
                }),
            ),
            (33_000, Signal::DiskWrite { bytes: 1 << 20 }),
            (40_000, output("Read disk 100.0 MiB/100.0 MiB (100%)")),
            (41_000, assisted(AssistedStep::Exited { code: 0 })),
            (41_000, assisted(AssistedStep::CollectingLogs)),
        ],
    );
    let limit = reboot::ASSISTED_LOG_COLLECTION_LIMIT.as_millis() as u64;
    assert!(
        m.tick(41_000 + limit).is_empty(),
        "the collection has its own limit"
    );
    let a = m.tick(41_000 + limit + 1);
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert_eq!(o.failed_phase, Some(Phase::InstallToDisk));
    assert!(
        o.reason.contains(
            "the harness was still collecting the live system's logs (assisted install), for 300 s"
        ),
        "{}",
        o.reason
    );
}

/// Bootstrap-cleanup of a cluster of `release` (None: never named) whose post-reboot unit
/// finished, disabled itself and left only /opt/openshift.
fn cleanup_leaving_opt_openshift(release: Option<&str>) -> Machine {
    let mut m = machine();
    to_a_settled_cluster(&mut m);
    let mut signals = vec![];
    if let Some(v) = release {
        signals.push((59_500, Signal::Release { version: v.into() }));
    }
    signals.extend([
        (60_000, api(ApiCheck::ClusterVersion, true, "Available")),
        (60_500, api(ApiCheck::InstallConfigApplied, true, "applied")),
        (61_000, api(ApiCheck::ClusterOperators, true, "settled")),
    ]);
    feed(&mut m, signals);
    assert_eq!(m.current(), Some(Phase::BootstrapCleanup));
    let mut left = guest("disk", false);
    left.bootkube_enabled = "disabled".into();
    feed(&mut m, vec![(62_000, Signal::GuestStatus(left))]);
    m
}

#[test]
fn opt_openshift_must_be_gone_from_4_13_on_but_not_before() {
    for v in ["4.11.0", "4.12.0", "4.12.80"] {
        let m = cleanup_leaving_opt_openshift(Some(v));
        let cleanup = m.phase(Phase::BootstrapCleanup);
        assert_eq!(cleanup.status, Status::Pass, "{v}");
        assert!(
            cleanup.detail.contains(&format!(
                "/opt/openshift stays, as the post-reboot script of release {v} leaves it"
            )),
            "{v}: {}",
            cleanup.detail
        );
        assert_eq!(m.release.as_deref(), Some(v));
    }
    for v in [Some("4.13.0"), Some("4.16.1"), None] {
        let m = cleanup_leaving_opt_openshift(v);
        assert_eq!(m.current(), Some(Phase::BootstrapCleanup), "{v:?}");
    }
}

#[test]
fn a_cleanup_timeout_before_4_13_does_not_count_opt_openshift_among_the_files_left() {
    let mut m = machine();
    feed(
        &mut m,
        vec![(
            1,
            Signal::Release {
                version: "4.12.9".into(),
            },
        )],
    );
    to_phase_after_the_pivot(&mut m, Phase::BootstrapCleanup);
    let mut left = guest("disk", false);
    left.bootkube_state = "inactive/dead/success".into();
    left.bootkube_enabled = "enabled".into();
    left.bootstrap_files = vec!["/opt/openshift".into()];
    feed(&mut m, vec![(130_000, Signal::GuestStatus(left))]);
    let a = m.tick(170_000);
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert!(
        o.reason
            .contains("and enabled; none of the bootstrap files its release removes is left"),
        "{}",
        o.reason
    );
}

/// The probe's answer of the installed system: root on `mpatha` with `active` of two paths
/// active, or (`on_map` false) on one path.
fn multipath_root(boot: &str, on_map: bool, active: usize) -> Signal {
    let text = if on_map {
        let path = |d: &str, ok: bool| {
            let state = if ok { "active|ready" } else { "failed|faulty" };
            format!("path|35a|{d}|{state}\n")
        };
        format!(
            "boot|{boot}|0\nfs|root|/sysroot|/dev/mapper/mpatha4|dm-4:part,dm-0:mpath,sda:disk,sdb:disk,\nfs|boot|/boot|/dev/mapper/mpatha3|dm-3:part,dm-0:mpath,sda:disk,sdb:disk,\nmap|mpatha|35a|dm-0\n{}{}",
            path("sda", active >= 1),
            path("sdb", active >= 2)
        )
    } else {
        format!("boot|{boot}|0\nfs|root|/sysroot|/dev/sdb4|sdb4:part,sdb:disk,\n")
    };
    let r = crate::flow::multipath::RootDevices::parse(&text).unwrap();
    Signal::Multipath(crate::flow::event::MultipathStep::Root(r))
}

/// A multipath install up to the installed system answering SSH.
fn multipath_to_disk_boot(m: &mut Machine) {
    m.expect_multipath(2);
    through_bootkube(m);
    feed(m, through_reboot_signals());
    assert_eq!(
        m.current(),
        Some(Phase::DiskBoot),
        "SSH alone does not end it"
    );
}

#[test]
fn disk_boot_of_a_multipath_install_waits_for_both_paths_active() {
    let mut m = machine();
    multipath_to_disk_boot(&mut m);
    feed(&mut m, vec![(56_000, multipath_root("disk", true, 1))]);
    assert_eq!(
        m.current(),
        Some(Phase::DiskBoot),
        "one path active: waiting"
    );
    // A late answer of the live system counts for nothing.
    feed(&mut m, vec![(57_000, multipath_root("live", false, 0))]);
    assert_eq!(m.current(), Some(Phase::DiskBoot));
    feed(&mut m, vec![(58_000, multipath_root("disk", true, 2))]);
    assert_eq!(m.phase(Phase::DiskBoot).status, Status::Pass);
    assert!(
        m.phase(Phase::DiskBoot)
            .detail
            .contains("is on multipath device mpatha (dm-0, WWID 35a): 2 of 2 paths active"),
        "{}",
        m.phase(Phase::DiskBoot).detail
    );
    assert_eq!(m.current(), Some(Phase::ApiReady));
}

#[test]
fn a_multipath_install_whose_root_is_on_one_path_fails_disk_boot_at_once() {
    let mut m = machine();
    multipath_to_disk_boot(&mut m);
    let a = feed(&mut m, vec![(56_000, multipath_root("disk", false, 0))]);
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert_eq!(o.failed_phase, Some(Phase::DiskBoot));
    assert!(
        o.reason.contains("the root filesystem is not on the multipath device: it is mounted from /dev/sdb4 on sdb"),
        "{}",
        o.reason
    );
}

#[test]
fn an_answer_before_ssh_waits_for_it_and_a_timeout_quotes_the_last_one() {
    let mut m = machine();
    m.expect_multipath(2);
    through_bootkube(&mut m);
    let mut early = through_reboot_signals();
    let ssh = early.pop().unwrap();
    feed(&mut m, early);
    feed(&mut m, vec![(50_000, multipath_root("disk", true, 2))]);
    assert_eq!(m.current(), Some(Phase::DiskBoot), "no SSH answer yet");
    feed(&mut m, vec![ssh]);
    assert_eq!(m.phase(Phase::DiskBoot).status, Status::Pass);

    let mut late = machine();
    multipath_to_disk_boot(&mut late);
    feed(&mut late, vec![(56_000, multipath_root("disk", true, 1))]);
    let a = late.tick(10_000_000);
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert!(
        o.reason.contains("multipath: the root filesystem (/dev/mapper/mpatha4) is on multipath device mpatha (dm-0, WWID 35a): 1 of 2 paths active (sda active/ready, sdb failed/faulty)"),
        "{}",
        o.reason
    );
}

#[test]
fn a_write_that_stopped_while_a_path_was_gone_fails_and_one_that_went_on_passes() {
    use crate::flow::event::MultipathStep;
    let lost = |t| {
        (
            t,
            Signal::Multipath(MultipathStep::PathLost {
                device: "install_path1".into(),
                written: 16 << 20,
            }),
        )
    };
    let restored = |t, written| {
        (
            t,
            Signal::Multipath(MultipathStep::PathRestored {
                device: "install_path1".into(),
                written_while_lost: written,
            }),
        )
    };
    let mut m = machine();
    m.expect_multipath(2);
    through_bootkube(&mut m);
    feed(&mut m, vec![lost(31_000), restored(33_000, 64 << 20)]);
    assert!(m.outcome().is_none());
    assert_eq!(m.multipath().unwrap().path_events.len(), 2);

    let mut stuck = machine();
    stuck.expect_multipath(2);
    through_bootkube(&mut stuck);
    let a = feed(&mut stuck, vec![lost(31_000), restored(52_000, 0)]);
    let Some(Action::Finished(o)) = a.last() else {
        panic!("{a:?}")
    };
    assert_eq!(o.failed_phase, Some(Phase::InstallToDisk));
    assert!(o.reason.contains("I/O did not fail over"), "{}", o.reason);

    let mut broken = machine();
    broken.expect_multipath(2);
    through_bootkube(&mut broken);
    feed(
        &mut broken,
        vec![(
            31_000,
            Signal::Multipath(MultipathStep::PathFaultFailed {
                detail: "QMP device_del failed".into(),
            }),
        )],
    );
    assert_eq!(broken.outcome().unwrap().verdict, Verdict::Error);
}

#[test]
fn an_end_between_the_assets_and_the_vm_is_live_boots_not_the_assets() {
    let mut m = machine();
    m.on_event(&ev(30_000, Signal::AssetsReady));
    assert_eq!(m.current(), None, "live-boot waits for the VM");
    let actions = m.begin_next_pending(34_000);
    assert_eq!(actions, vec![Action::PhaseStarted(Phase::LiveBoot)]);
    m.error(34_000, "the BMC refused the media".into());
    let o = m.outcome().unwrap();
    assert_eq!(
        (o.verdict, o.failed_phase),
        (Verdict::Error, Some(Phase::LiveBoot))
    );
    assert_eq!(m.phase(Phase::Assets).status, Status::Pass);
    assert_eq!(m.phase(Phase::LiveBoot).start_ms, Some(34_000));
}
