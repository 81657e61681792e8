//! Records written from the format of bootstrap-service-record.sh (pkg/gather/service/entry.go's
//! fields), not recorded; the conclusions are analyze.go's words for them.

use super::*;

fn messages(c: &[Conclusion]) -> Vec<(&str, &str)> {
    c.iter().map(|c| (c.level, c.message.as_str())).collect()
}

const RELEASE_OK: &str = r#"[
{"timestamp":"2026-11-30T09:43:01Z","phase":"service start"},
{"timestamp":"2026-11-30T09:43:02Z","phase":"stage start","stage":"pull-release-image"},
{"timestamp":"2026-11-30T09:43:09Z","phase":"stage end","stage":"pull-release-image","result":"success"},
{"timestamp":"2026-11-30T09:43:09Z","phase":"service end","result":"success"}
]"#;

#[test]
fn a_failed_release_image_pull_quotes_its_error_lines_and_stops_there() {
    let failed = analyze(
        "release-image",
        "b/bootstrap/services/release-image.json",
        br#"[
{"timestamp":"2026-11-30T09:43:01Z","phase":"service start"},
{"timestamp":"2026-11-30T09:43:02Z","phase":"stage start","stage":"pull-release-image"},
{"timestamp":"2026-11-30T09:43:05Z","phase":"stage end","stage":"pull-release-image","result":"failure","errorLine":"31 main","errorMessage":"Pulling quay.io/x...\nError: unauthorized\nPull failed. Retrying quay.io/x..."}
]"#,
    );
    assert_eq!(failed.starts, 1);
    assert!(!failed.successful && failed.failed());
    assert_eq!(failed.failing_stage.as_deref(), Some("pull-release-image"));
    let bootkube = analyze("bootkube", "b/bootstrap/services/bootkube.json", b"[]");
    assert_eq!(
        messages(&conclusions(&[failed.clone(), bootkube])),
        [
            (
                "error",
                "The bootstrap machine failed to download the release image"
            ),
            ("info", "Pulling quay.io/x..."),
            ("info", "Error: unauthorized"),
            ("info", "Pull failed. Retrying quay.io/x..."),
        ]
    );
    let reason = failure_reason(&failed);
    assert!(
        reason.starts_with(
            "release-image.service failed at stage \"pull-release-image\" (at 31 main)"
        ),
        "{reason}"
    );
    assert!(reason.contains("Error: unauthorized"), "{reason}");
}

#[test]
fn a_bootkube_failing_stage_is_kept_over_the_service_end_it_caused() {
    let release = analyze("release-image", "r.json", RELEASE_OK.as_bytes());
    let bootkube = analyze(
        "bootkube",
        "k.json",
        br#"[
{"phase":"service start"},
{"phase":"stage start","stage":"kube-apiserver-bootstrap"},
{"phase":"stage end","stage":"kube-apiserver-bootstrap","result":"success"},
{"phase":"stage start","stage":"konnectivity-certs"},
{"phase":"stage end","stage":"konnectivity-certs","result":"failure","errorMessage":"openssl: error"},
{"phase":"service end","result":"failure","errorMessage":"exit status 1"}
]"#,
    );
    assert_eq!(
        bootkube.failing_stage.as_deref(),
        Some("konnectivity-certs")
    );
    assert_eq!(bootkube.last_error.as_deref(), Some("exit status 1"));
    assert!(!bootkube.running);
    assert_eq!(
        messages(&conclusions(&[release, bootkube.clone()])),
        [
            (
                "error",
                "The bootstrap machine failed to generate konnectivity certificates"
            ),
            ("info", "exit status 1"),
        ]
    );
    let mut other = bootkube;
    other.failing_stage = Some("cvo-bootstrap".into());
    assert_eq!(
        messages(&conclusions(&[
            analyze("release-image", "r", RELEASE_OK.as_bytes()),
            other
        ]))[0],
        (
            "error",
            "The bootkube service failed at stage \"cvo-bootstrap\""
        )
    );
}

#[test]
fn an_empty_or_malformed_record_cannot_be_analysed_and_its_service_did_not_run() {
    for (bytes, why) in [
        (&b""[..], "does not begin with a token"),
        (&b"  \n"[..], "does not begin with a token"),
        (&b"{}"[..], "does not begin with an array"),
        (&b"[{\"phase\": 3}]"[..], "could not decode an entry"),
        (
            &b"[{\"phase\":\"service start\"},"[..],
            "could not decode an entry",
        ),
    ] {
        let a = analyze("release-image", "r.json", bytes);
        let c = conclusions(&[a]);
        assert_eq!(c[0].level, "info");
        assert!(
            c[0].message
                .starts_with("Could not analyze the release-image.service: ")
                && c[0].message.contains(why),
            "{:?}",
            c[0]
        );
        assert_eq!(
            (c[1].level, c[1].message.as_str()),
            (
                "error",
                "The bootstrap machine did not execute the release-image.service systemd unit"
            )
        );
    }
    assert_eq!(
        messages(&conclusions(&[])),
        [("error", "Invalid log bundle or the bootstrap machine could not be reached and bootstrap logs were not collected")]
    );
}

#[test]
fn a_record_still_running_says_its_stage_and_a_restart_after_a_failure_stays_failed() {
    let running = analyze(
        "bootkube",
        "k.json",
        br#"[{"phase":"service start"},{"phase":"stage start","stage":"bip-gather"}]"#,
    );
    assert!(running.running && !running.failed());
    assert_eq!(running.current_stage.as_deref(), Some("bip-gather"));
    let c = conclusions(&[
        analyze("release-image", "r", RELEASE_OK.as_bytes()),
        running,
    ]);
    assert_eq!(
        messages(&c),
        [(
            "info",
            "The bootkube.service was still running when its record ends, in stage \"bip-gather\""
        )]
    );
    // Restarted after a failure and failing again in the same stage: the installer's analysis
    // keeps the failure (the last entry is no successful end).
    let restarted = analyze(
        "bootkube",
        "k.json",
        br#"[{"phase":"service start"},{"phase":"stage start","stage":"cb-bootstrap"},
{"phase":"stage end","stage":"cb-bootstrap","result":"failure","errorMessage":"timed out waiting for the condition"},
{"phase":"service end","result":"failure","errorMessage":"exit status 1"},
{"phase":"service start"},{"phase":"stage start","stage":"cb-bootstrap"}]"#,
    );
    assert_eq!(restarted.starts, 2);
    assert!(restarted.failed() && restarted.running);
    let reason = failure_reason(&restarted);
    assert!(
        reason.contains("started 2 times; its last run was still in stage \"cb-bootstrap\""),
        "{reason}"
    );
    // Another service's failure is said as well: every record, not two.
    let install = analyze(
        "install-to-disk",
        "i.json",
        br#"[{"phase":"service start"},{"phase":"stage start","stage":"write"},{"phase":"stage end","stage":"write","result":"failure","errorMessage":"Error: no space"}]"#,
    );
    let c = conclusions(&[
        analyze("release-image", "r", RELEASE_OK.as_bytes()),
        analyze(
            "bootkube",
            "k",
            b"[{\"phase\":\"service start\"},{\"phase\":\"service end\",\"result\":\"success\"}]",
        ),
        install,
    ]);
    assert_eq!(
        messages(&c),
        [
            (
                "error",
                "The install-to-disk service failed at stage \"write\""
            ),
            ("info", "Error: no space")
        ]
    );
}
