//! report.html in a real browser: headless Chromium loads the report of a synthetic matrix
//! (a pass, a failure with a hostile reason, a permutation that never ran), and the DOM it
//! builds and the screenshot it takes must show the charts and keep the reason as text.
//!
//! Chromium is a test dependency (ci/install-host-deps.sh installs it): without it these
//! tests fail rather than skip, so a CI host missing it cannot pass silently.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use report_fixtures::passed_run;
use sno_harness::report::html::colors;
use sno_harness::report::run_dir::write_reports;
use sno_harness::result::{phase_names, LastSignal, PhaseResult, PhaseStatus, RunResult, Verdict};

mod report_fixtures;

const HOSTILE_REASON: &str = "install-to-disk: coreos-installer exited 1: \
    <script>document.body.setAttribute('data-pwned','1')</script> & \"quoted\" <b>bold</b>";
const HOSTILE_VALUE: &str = "by-path \"/dev/<x>\" & co";
const CHROMIUM_TIMEOUT: Duration = Duration::from_secs(120);

/// The three permutations: virtio passed, nvme failed writing the disk, sata never ran.
fn results() -> Vec<RunResult> {
    let pass = passed_run("virtio.512", &[("bus", "virtio"), ("sector", "512")]);

    let mut fail = passed_run("nvme.4k", &[("bus", "nvme"), ("sector", "4k")]);
    fail.params.insert("disk".into(), HOSTILE_VALUE.into());
    fail.verdict = Verdict::Fail;
    fail.failed_phase = Some("install-to-disk".into());
    fail.reason = HOSTILE_REASON.into();
    fail.phases[3].status = PhaseStatus::Fail;
    fail.phases[3].detail = "exit status 1".into();
    for p in &mut fail.phases[4..] {
        *p = PhaseResult::not_reached(p.name.clone());
    }
    fail.duration_ms = fail.phases[3].end_ms.unwrap();
    fail.disk_write.as_mut().unwrap().mib_per_s = 31.4;
    fail.artifacts
        .insert("screenshot".into(), "screenshot-final.png".into());
    fail.last_signals = vec![LastSignal {
        t_ms: 20_000,
        source: "serial".into(),
        summary: "coreos-installer: Error: <disk> & friends".into(),
    }];

    let mut not_run = passed_run("sata.512", &[("bus", "sata"), ("sector", "512")]);
    not_run.verdict = Verdict::Error;
    not_run.reason = "cancelled before it started".into();
    not_run.phases = phase_names()
        .into_iter()
        .map(PhaseResult::not_reached)
        .collect();
    not_run.disk_write = None;
    not_run.duration_ms = 0;
    vec![pass, fail, not_run]
}

/// Writes the reports of [`results`] into a fresh directory; returns it and report.html.
fn build_report() -> (tempfile::TempDir, PathBuf) {
    let out = tempfile::Builder::new()
        .prefix("sno-report-html-")
        .tempdir()
        .unwrap();
    let axes = vec![
        (
            "bus".to_string(),
            ["virtio", "nvme", "sata", "scsi"]
                .map(String::from)
                .to_vec(),
        ),
        (
            "sector".to_string(),
            ["512", "4k"].map(String::from).to_vec(),
        ),
    ];
    write_reports(out.path(), &results(), &axes, None, Default::default()).unwrap();
    let html = out.path().join("report.html");
    assert!(html.is_file());
    (out, html)
}

fn chromium() -> PathBuf {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find_map(sno_harness::util::which)
        .unwrap_or_else(|| {
            panic!(
                "headless Chromium is needed to check report.html and is not installed: \
                 run ci/install-host-deps.sh (apt-get install chromium)"
            )
        })
}

/// Runs headless Chromium on `page` with `args`, in its own profile directory, and waits for
/// it up to [`CHROMIUM_TIMEOUT`].
fn run_chromium(profile: &Path, page: &Path, args: &[&str]) -> Output {
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium starts");
    // Read stdout on a thread: a large DOM would fill the pipe while we wait.
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut { stdout }, &mut buf).map(|_| buf)
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > CHROMIUM_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within {CHROMIUM_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut stderr = Vec::new();
    std::io::Read::read_to_end(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    let out = Output {
        status,
        stdout: reader.join().unwrap().unwrap(),
        stderr,
    };
    assert!(
        out.status.success(),
        "chromium failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The markup of every element that starts with `open`, up to its `close`.
fn elements<'a>(dom: &'a str, open: &str, close: &str) -> Vec<&'a str> {
    dom.match_indices(open)
        .map(|(i, _)| {
            let end = dom[i..].find(close).expect("element closes") + close.len();
            &dom[i..i + end]
        })
        .collect()
}

#[test]
fn report_html_dom_in_headless_chromium() {
    let (out, html) = build_report();
    let dom =
        String::from_utf8(run_chromium(&out.path().join("profile"), &html, &["--dump-dom"]).stdout)
            .expect("the DOM is UTF-8");
    assert!(dom.contains("<body"), "no document:\n{dom}");

    // A Gantt chart per permutation; bars for every phase reached.
    let gantts = elements(&dom, "<svg class=\"gantt\"", "</svg>");
    assert_eq!(gantts.len(), 3, "one timeline per permutation");
    let gantt = |id: &str| {
        *gantts
            .iter()
            .find(|g| g.contains(&format!("data-permutation=\"{id}\"")))
            .unwrap_or_else(|| panic!("no timeline for {id}"))
    };
    assert_eq!(
        gantt("virtio.512")
            .matches("<rect class=\"bar status-pass\"")
            .count(),
        11
    );
    assert_eq!(
        gantt("nvme.4k")
            .matches("<rect class=\"bar status-pass\"")
            .count(),
        3
    );
    assert_eq!(
        gantt("nvme.4k")
            .matches("<rect class=\"bar status-fail\"")
            .count(),
        1
    );
    assert_eq!(gantt("sata.512").matches("<rect").count(), 0);
    assert_eq!(gantt("sata.512").matches(">not reached<").count(), 11);
    for g in &gantts {
        assert!(g.contains("class=\"tick\""), "a time axis with ticks");
    }

    // Disk-write throughput: bars for the two runs that wrote.
    let throughput = elements(&dom, "<svg id=\"throughput\"", "</svg>");
    assert_eq!(throughput.len(), 1);
    assert_eq!(throughput[0].matches("<rect class=\"bar\"").count(), 2);
    assert!(throughput[0].contains("82.6 MiB/s") && throughput[0].contains("31.4 MiB/s"));

    // The coverage grid: 4 bus values + 2 sector values + 1 disk value.
    let coverage = elements(&dom, "<table id=\"coverage\"", "</table>");
    assert_eq!(coverage.len(), 1);
    let cov = coverage[0];
    assert_eq!(cov.matches("class=\"cov cov-").count(), 7);
    assert_eq!(
        cov.matches("class=\"cov cov-passed\"").count(),
        2,
        "virtio, 512"
    );
    assert_eq!(
        cov.matches("class=\"cov cov-failed\"").count(),
        3,
        "nvme, 4k, the disk"
    );
    assert_eq!(
        cov.matches("class=\"cov cov-not-run\"").count(),
        2,
        "sata, scsi"
    );

    // Failures first: the failure and the run that never ran, before the charts.
    let failures = dom.find("<section id=\"failures\"").unwrap();
    assert!(failures < dom.find("<svg id=\"throughput\"").unwrap());
    assert_eq!(dom.matches("<article class=\"failure").count(), 2);
    assert!(dom.contains("href=\"./nvme.4k/serial.log\""));
    assert!(dom.contains("href=\"./nvme.4k/screenshot-final.png\""));
    assert!(dom.contains("href=\"./nvme.4k/result.json\""));

    // The hostile reason is text: escaped in the DOM, no script or <b> element made of it, and
    // nothing ran.
    assert!(!dom.contains("<script"), "a script element was created");
    assert!(
        !dom.contains("<b>bold</b>"),
        "markup from the reason was parsed"
    );
    assert!(dom.contains(
        "&lt;script&gt;document.body.setAttribute('data-pwned','1')&lt;/script&gt; &amp; \"quoted\" &lt;b&gt;bold&lt;/b&gt;"
    ));
    assert!(!dom.contains("data-pwned=\"1\""), "the reason's script ran");
    assert!(dom.contains("Error: &lt;disk&gt; &amp; friends"));
}

#[test]
fn report_html_screenshot_in_headless_chromium() {
    let (out, html) = build_report();
    let png_path = out.path().join("report.png");
    run_chromium(
        &out.path().join("profile"),
        &html,
        &[
            &format!("--screenshot={}", png_path.display()),
            "--window-size=1280,2000",
        ],
    );
    let bytes = std::fs::read(&png_path).expect("chromium wrote the screenshot");

    // The size, from the IHDR chunk: signature (8 bytes), chunk length (4), type (4), then
    // width and height, big-endian.
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "a PNG file");
    assert_eq!(&bytes[12..16], b"IHDR");
    let width = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
    assert_eq!((width, height), (1280, 2000));

    // Not blank: many colours, among them the pass and fail colours of the charts.
    let mut decoder = png::Decoder::new(std::io::Cursor::new(&bytes));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    assert!(
        channels >= 3,
        "colour screenshot, got {:?}",
        info.color_type
    );
    let pixels: Vec<[u8; 3]> = buf[..info.buffer_size()]
        .chunks_exact(channels)
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    let distinct: HashSet<[u8; 3]> = pixels.iter().copied().collect();
    assert!(
        distinct.len() > 20,
        "only {} colours: blank page?",
        distinct.len()
    );
    for (name, hex) in [("pass", colors::PASS), ("fail", colors::FAIL)] {
        let want = rgb(hex);
        let n = pixels.iter().filter(|p| close_to(**p, want)).count();
        assert!(n > 200, "{name} colour {hex}: {n} pixels");
    }
}

fn rgb(hex: &str) -> [u8; 3] {
    let v = u32::from_str_radix(hex.trim_start_matches('#'), 16).unwrap();
    [(v >> 16) as u8, (v >> 8) as u8, v as u8]
}

/// Within 3 per channel: colour management may round a shade.
fn close_to(a: [u8; 3], b: [u8; 3]) -> bool {
    a.iter().zip(b).all(|(x, y)| x.abs_diff(y) <= 3)
}
