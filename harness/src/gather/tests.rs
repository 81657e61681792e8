use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use super::*;

fn writes(name: &'static str, file: &'static str, text: &'static str) -> Collector {
    Collector::new(name, Duration::from_secs(10), move |sink| {
        Box::pin(async move {
            sink.write(file, text.as_bytes())?;
            Ok(None)
        })
    })
}

#[tokio::test]
async fn a_hung_or_failing_collector_hides_none_of_the_others() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("gather");
    let hang = Collector::new("hangs", Duration::from_millis(500), |sink| {
        Box::pin(async move {
            sink.write("partial.txt", b"before the hang")?;
            std::future::pending::<()>().await;
            Ok(None)
        })
    });
    let fails = Collector::new("fails", Duration::from_secs(10), |sink| {
        Box::pin(async move {
            sink.write("fails/half.txt", b"half")?;
            Err("the guest said no".into())
        })
    });
    let collectors = vec![
        hang,
        writes("one", "a/one.txt", "1"),
        fails,
        Collector::skipped("api", "the API did not answer".into()),
        Collector::new("panics", Duration::from_secs(10), |_| {
            Box::pin(async move { panic!("a bug in a collector") })
        }),
        writes("two", "a/two.txt", "22"),
    ];
    let index = run_all(&dir, When::OnFailure, collectors).await.unwrap();
    let status: Vec<(&str, Status)> = index
        .collectors
        .iter()
        .map(|c| (c.name.as_str(), c.status))
        .collect();
    assert_eq!(
        status,
        [
            ("hangs", Status::TimedOut),
            ("one", Status::Ok),
            ("fails", Status::Failed),
            ("api", Status::Skipped),
            ("panics", Status::Failed),
            ("two", Status::Ok),
        ]
    );
    let hung = &index.collectors[0];
    assert!(hung.ms >= 500, "{hung:?}");
    assert_eq!(hung.reason.as_deref(), Some("cut at its limit of 0.5 s"));
    // What a cut or failed collector wrote stays, and is listed.
    assert_eq!(hung.files[0].path, "partial.txt");
    assert_eq!(index.collectors[2].files[0].path, "fails/half.txt");
    assert_eq!(
        index.collectors[2].reason.as_deref(),
        Some("the guest said no")
    );
    assert_eq!(index.bytes, 15 + 1 + 4 + 2);
    assert_eq!(
        std::fs::read_to_string(dir.join("a/two.txt")).unwrap(),
        "22"
    );
    // index.json says the same, and everything is owner-only.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("index.json")).unwrap()).unwrap();
    assert_eq!(json["collectors"][0]["status"], "timed-out");
    assert_eq!(json["collectors"][3]["reason"], "the API did not answer");
    assert_eq!(json["when"], "on-failure");
    for (p, mode) in [
        ("", 0o700),
        ("a", 0o700),
        ("a/one.txt", 0o600),
        ("index.json", 0o600),
    ] {
        let m = std::fs::metadata(dir.join(p)).unwrap().permissions().mode() & 0o777;
        assert_eq!(m, mode, "{p}");
    }
    assert!(index
        .summary()
        .starts_with("6 collectors: 2 ok, 1 skipped, 2 failed, 1 timed out; "));
}

#[tokio::test]
async fn work_cut_loose_writes_nothing_after_its_limit() {
    let d = tempfile::tempdir().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let late = Collector::new("late", Duration::from_millis(200), move |sink| {
        Box::pin(async move {
            // Blocking work the guard cannot stop: it goes on after the limit.
            tokio::task::spawn_blocking(move || {
                std::thread::sleep(Duration::from_millis(600));
                tx.send(sink.write("late.txt", b"too late")).unwrap();
            })
            .await
            .map_err(|e| e.to_string())?;
            Ok(None)
        })
    });
    let index = run_all(d.path(), When::Always, vec![late]).await.unwrap();
    assert_eq!(index.collectors[0].status, Status::TimedOut);
    let wrote = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    let e = wrote.unwrap_err();
    assert!(matches!(e, SinkError::TimeUp), "{e:?}");
    assert_eq!(e.to_string(), "the collector's time is up");
    assert!(!d.path().join("late.txt").exists());
    assert!(index.collectors[0].files.is_empty());
}

#[test]
fn a_sink_writes_plain_relative_paths_only() {
    let d = tempfile::tempdir().unwrap();
    let sink = Sink::new(d.path().to_path_buf());
    for bad in ["", "/etc/passwd", "../x", "a/../../x", "./x"] {
        let e = sink.write(bad, b"x").unwrap_err();
        assert!(matches!(e, SinkError::NotAPlainPath(_)), "{bad:?}: {e:?}");
    }
    // A link planted where a file goes is replaced, never written through.
    let target = d.path().join("target");
    std::fs::write(&target, "untouched").unwrap();
    std::os::unix::fs::symlink(&target, d.path().join("f.txt")).unwrap();
    sink.write("f.txt", b"new").unwrap();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched");
    assert_eq!(
        std::fs::read_to_string(d.path().join("f.txt")).unwrap(),
        "new"
    );
}

#[test]
fn only_namespace_names_become_file_names() {
    for ok in ["openshift-etcd", "a", "x1-2"] {
        assert_eq!(sink::safe_component(ok), Some(ok));
    }
    for bad in ["", "..", "a/b", "-a", "a-", "A", "a.b", &"a".repeat(64)] {
        assert_eq!(sink::safe_component(bad), None, "{bad:?}");
    }
}

#[test]
fn gather_modes_parse_as_the_cli_spells_them() {
    assert_eq!("on-failure".parse::<When>(), Ok(When::OnFailure));
    assert_eq!("always".parse::<When>(), Ok(When::Always));
    assert_eq!("never".parse::<When>(), Ok(When::Never));
    let e = "sometimes".parse::<When>().unwrap_err();
    assert_eq!(e, UnknownWhen("sometimes".into()));
    assert!(
        e.to_string().contains("valid: on-failure, always, never"),
        "{e}"
    );
    assert!(When::OnFailure.applies(false) && !When::OnFailure.applies(true));
    assert!(When::Always.applies(true) && !When::Never.applies(false));
}

#[tokio::test]
async fn work_cut_below_the_guard_is_timed_out_not_failed() {
    let d = tempfile::tempdir().unwrap();
    let cut = Collector::new("cut", Duration::from_secs(10), |sink| {
        Box::pin(async move {
            sink.write("part.txt", b"what came before the cut")?;
            Err(Failure::Cut("cut at its limit in the guest of 30 s".into()))
        })
    });
    let index = run_all(d.path(), When::OnFailure, vec![cut]).await.unwrap();
    let c = &index.collectors[0];
    assert_eq!(c.status, Status::TimedOut);
    assert_eq!(
        c.reason.as_deref(),
        Some("cut at its limit in the guest of 30 s")
    );
    assert_eq!(c.files[0].path, "part.txt");
}
