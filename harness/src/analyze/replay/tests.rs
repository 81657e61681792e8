//! Timelines written from the formats (journalctl, bootstrap-service-record.sh, the console),
//! not recorded, each judged through `analyze` as the command does.

use super::*;
use crate::analyze::{analyze as analyze_paths, Options};
use std::io::Write;

const LIVE: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const DISK: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
/// 2026-11-30T09:43:00Z
const T0: u64 = 1_795_995_780_000_000;

fn entry(s: u64, boot: &str, unit: &str, ident: &str, msg: &str) -> String {
    serde_json::json!({
        "__REALTIME_TIMESTAMP": (T0 + s * 1_000_000).to_string(),
        "_BOOT_ID": boot,
        "_SYSTEMD_UNIT": unit,
        "SYSLOG_IDENTIFIER": ident,
        "MESSAGE": msg,
    })
    .to_string()
}

/// systemd's own line about a unit: from init.scope, the unit in UNIT.
fn systemd_about(s: u64, boot: &str, unit: &str, msg: &str) -> String {
    serde_json::json!({
        "__REALTIME_TIMESTAMP": (T0 + s * 1_000_000).to_string(),
        "_BOOT_ID": boot,
        "_SYSTEMD_UNIT": "init.scope",
        "UNIT": unit,
        "SYSLOG_IDENTIFIER": "systemd",
        "MESSAGE": msg,
    })
    .to_string()
}

fn live_until_reboot() -> Vec<String> {
    vec![
        entry(10, LIVE, "bootkube.service", "bootkube.sh", "Rendering MCO manifests..."),
        entry(20, LIVE, "bootkube.service", "bootkube.sh", "bootkube.service complete"),
        entry(21, LIVE, "install-to-disk.service", "install-to-disk.sh", "Executing coreos-installer with the following options: install -i /opt/openshift/master.ign /dev/vda"),
        entry(40, LIVE, "install-to-disk.service", "install-to-disk.sh", "Install complete."),
        entry(41, LIVE, "install-to-disk.service", "install-to-disk.sh", "Going to reboot"),
    ]
}

fn write(dir: &Path, name: &str, lines: &[String]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    p
}

fn run(paths: &[PathBuf]) -> Report {
    analyze_paths(paths, &Options::default()).unwrap()
}

fn status<'a>(r: &'a Report, phase: &str) -> &'a str {
    &r.phases.iter().find(|p| p.name == phase).unwrap().status
}

#[test]
fn both_boots_journals_show_a_failed_post_reboot_unit_as_bootstrap_cleanups_failure() {
    let d = tempfile::tempdir().unwrap();
    let live = write(d.path(), "live.json", &live_until_reboot());
    let s = IDENTIFIER;
    let disk = write(
        d.path(),
        "disk.json",
        &[
            entry(
                80,
                DISK,
                "bootkube.service",
                s,
                "Running bootkube bootstrap-in-place post reboot",
            ),
            entry(81, DISK, "bootkube.service", s, "Waiting for api ..."),
            entry(
                90,
                DISK,
                "bootkube.service",
                s,
                "Creating bootstrap configmap ...",
            ),
            entry(
                95,
                DISK,
                "bootkube.service",
                s,
                "Waiting for node to report ready status",
            ),
            entry(96, DISK, "bootkube.service", s, "node is ready"),
            systemd_about(
                97,
                DISK,
                "bootkube.service",
                "bootkube.service: Failed with result 'exit-code'.",
            ),
        ],
    );
    let r = run(&[live, disk]);
    assert_eq!(r.verdict, Judged::Fail, "{}", r.text());
    assert_eq!(r.failed_phase.as_deref(), Some("bootstrap-cleanup"));
    assert!(
        r.reason
            .contains("the post-reboot bootkube.service failed (failed/failed/exit-code)"),
        "{}",
        r.reason
    );
    for (phase, want) in [
        ("bootkube", "pass"),
        ("install-to-disk", "pass"),
        ("reboot", "pass"),
        ("disk-boot", "pass"),
        ("api-ready", "pass"),
        ("node-ready", "pass"),
        // etcd's bootstrap member removal is in no journal.
        ("bootstrap-complete", "no-evidence"),
        ("cluster-ready", "no-evidence"),
        ("bootstrap-cleanup", "fail"),
    ] {
        assert_eq!(status(&r, phase), want, "{phase}: {}", r.text());
    }
}

#[test]
fn coreos_installers_error_in_the_journal_fails_install_to_disk() {
    let d = tempfile::tempdir().unwrap();
    let mut lines = live_until_reboot();
    lines.truncate(3);
    lines.push(entry(
        25,
        LIVE,
        "install-to-disk.service",
        "install-to-disk.sh",
        "Error: writing image to disk: No space left on device",
    ));
    let p = write(d.path(), "live.json", &lines);
    let r = run(&[p]);
    assert_eq!(
        (r.verdict, r.failed_phase.as_deref()),
        (Judged::Fail, Some("install-to-disk")),
        "{}",
        r.text()
    );
    assert!(r.reason.contains("coreos-installer failed"), "{}", r.reason);
    assert_eq!(status(&r, "reboot"), "not-reached");
}

#[test]
fn a_journal_that_ends_in_bootkube_is_no_verdict_and_says_where_it_stops() {
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), "live.json", &live_until_reboot()[..1]);
    let r = run(&[p]);
    assert_eq!(r.verdict, Judged::NoVerdict, "{}", r.text());
    assert!(
        r.reason.contains("the evidence ends while bootkube runs"),
        "{}",
        r.reason
    );
    assert_eq!(status(&r, "live-boot"), "pass");
    assert_eq!(status(&r, "bootkube"), "no-evidence");
    assert_eq!(status(&r, "bootstrap-cleanup"), "no-evidence");
}

fn bundle(dir: &Path, members: &[(&str, &str)]) -> PathBuf {
    let mut b = tar::Builder::new(Vec::new());
    for (name, text) in members {
        let mut h = tar::Header::new_gnu();
        h.set_size(text.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(T0 / 1_000_000);
        h.set_cksum();
        b.append_data(&mut h, name, text.as_bytes()).unwrap();
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&b.into_inner().unwrap()).unwrap();
    let p = dir.join("log-bundle-bootstrap.tar.gz");
    std::fs::write(&p, gz.finish().unwrap()).unwrap();
    p
}

#[test]
fn a_bundles_failed_bootkube_record_fails_bootkube_quoting_its_stage_and_error() {
    let d = tempfile::tempdir().unwrap();
    let p = bundle(
        d.path(),
        &[
            (
                "log-bundle-bootstrap/bootstrap/services/release-image.json",
                r#"[{"timestamp":"2026-11-30T09:43:01Z","phase":"service start"},{"timestamp":"2026-11-30T09:43:05Z","phase":"service end","result":"success"}]"#,
            ),
            (
                "log-bundle-bootstrap/bootstrap/services/bootkube.json",
                r#"[{"timestamp":"2026-11-30T09:43:10Z","phase":"service start"},
{"timestamp":"2026-11-30T09:43:20Z","phase":"stage start","stage":"cb-bootstrap"},
{"timestamp":"2026-11-30T09:43:25Z","phase":"stage end","stage":"cb-bootstrap","result":"failure","errorLine":"88 stage","errorMessage":"timed out waiting for the condition"},
{"timestamp":"2026-11-30T09:43:25Z","phase":"service end","result":"failure","errorLine":"88 stage","errorMessage":"exit status 1"},
{"timestamp":"2026-11-30T09:43:31Z","phase":"service start"}]"#,
            ),
            // install-to-disk.service starts beside bootkube and waits for it: no evidence
            // that bootkube is done (a bundle of the bootkube-fail fault has this).
            (
                "log-bundle-bootstrap/bootstrap/services/install-to-disk.json",
                r#"[{"timestamp":"2026-11-30T09:43:11Z","phase":"service start"},
{"timestamp":"2026-11-30T09:43:12Z","phase":"stage start","stage":"wait-for-bootkube"}]"#,
            ),
            (
                "log-bundle-bootstrap/bootstrap/journals/bootkube.log",
                "Nov 30 09:43:20 minisno bootkube.sh[812]: Starting cluster-bootstrap...\nNov 30 09:43:25 minisno bootkube.sh[812]: Error: timed out waiting for the condition\nNov 30 09:43:30 minisno systemd[1]: bootkube.service: Scheduled restart job, restart counter is at 1.\n",
            ),
        ],
    );
    let r = run(&[p]);
    assert_eq!(
        (r.verdict, r.failed_phase.as_deref()),
        (Judged::Fail, Some("bootkube")),
        "{}",
        r.text()
    );
    assert!(
        r.reason
            .contains("bootkube.service failed at stage \"cb-bootstrap\""),
        "{}",
        r.reason
    );
    assert!(r.reason.contains("started 2 times"), "{}", r.reason);
    assert_eq!(status(&r, "live-boot"), "pass");
    let said: Vec<&str> = r
        .installer_analysis
        .iter()
        .map(|c| c.message.as_str())
        .collect();
    assert_eq!(
        said,
        [
            "The bootkube service failed at stage \"cb-bootstrap\"",
            "exit status 1",
            "The install-to-disk.service was still running when its record ends, in stage \"wait-for-bootkube\""
        ]
    );
    assert!(
        r.evidence[0].read.contains("the live system's own bundle"),
        "{:?}",
        r.evidence
    );
}

#[test]
fn a_serial_log_alone_places_a_panic_in_the_installed_systems_boot() {
    let d = tempfile::tempdir().unwrap();
    let lines: Vec<String> = [
        "[    0.000000] Linux version 6.1.0-50-amd64 (debian-kernel@lists.debian.org)",
        "[    0.000000] Command line: BOOT_IMAGE=/images/pxeboot/vmlinuz coreos.liveiso=minisno-live ignition.firstboot",
        "minisno live system up",
        "[    0.000000] Linux version 6.1.0-50-amd64 (debian-kernel@lists.debian.org)",
        "[    0.000000] Command line: BOOT_IMAGE=/boot/vmlinuz root=LABEL=root console=ttyS0",
        "[    3.100000] Kernel panic - not syncing: sysrq triggered crash",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let p = write(d.path(), "console.txt", &lines);
    let r = run(&[p]);
    assert_eq!(
        (r.verdict, r.failed_phase.as_deref()),
        (Judged::Fail, Some("disk-boot")),
        "{}",
        r.text()
    );
    assert!(r.reason.to_lowercase().contains("panic"), "{}", r.reason);
    assert!(r
        .phases
        .iter()
        .find(|p| p.name == "install-to-disk")
        .unwrap()
        .detail
        .contains("the installed system booted"));
}

#[test]
fn the_live_iso_booting_again_after_the_install_fails_disk_boot() {
    let d = tempfile::tempdir().unwrap();
    let mut lines = live_until_reboot();
    let again = "cccccccccccccccccccccccccccccccc";
    lines.push(entry(
        70,
        again,
        "bootkube.service",
        "bootkube.sh",
        "Rendering MCO manifests...",
    ));
    let p = write(d.path(), "j.json", &lines);
    let r = run(&[p]);
    assert_eq!(
        (r.verdict, r.failed_phase.as_deref()),
        (Judged::Fail, Some("disk-boot")),
        "{}",
        r.text()
    );
    assert!(
        r.reason.contains("the live ISO booted again"),
        "{}",
        r.reason
    );
}

#[test]
fn a_run_directory_with_other_evidence_is_refused() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("events.jsonl"), "").unwrap();
    let j = write(d.path(), "j.json", &live_until_reboot());
    let e = analyze_paths(&[d.path().to_path_buf(), j], &Options::default()).unwrap_err();
    assert!(
        e.to_string().contains("a run directory is analysed alone"),
        "{e}"
    );
}
