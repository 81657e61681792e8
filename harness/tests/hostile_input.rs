//! Hostile input. Every file under tests/data/malformed/ is refused by the real binary with
//! exit code 2 and a message that names the file, the line when the error has one, and what
//! would be valid; without a panic and without leaving anything behind in --out or the working
//! directory. And the scenario and matrix parsers never panic, whatever they are given: random
//! bytes, TOML-ish token soup, random documents over the schema's keys, and mutations of the
//! shipped scenario and matrix files.
//!
//! Corpus layout: `scenario/` (run with `plan` and `run --out`), `matrix/` (`plan` and
//! `matrix --out`), `other/` (not TOML or not UTF-8: `plan` and `run --out`); `bases/` holds
//! the base scenarios the matrices name and is not a case itself. A case's first lines say
//! `# expect: <part of the message>` and, when the error has a line, `# line: N` (the line
//! ends in `#<-`); a file that cannot carry a comment has them in `NAME.expect`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::sample::{select, Index};

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/malformed");
const SHIPPED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios");
const BIN: &str = env!("CARGO_BIN_EXE_sno-harness");
/// Refusing bad input takes milliseconds; a minute means it is reading a device or waiting.
const BIN_TIMEOUT: Duration = Duration::from_secs(60);
/// Stands for a secret: every file under named-files/ holds it, and so does the binary's
/// environment (`/proc/self/environ`). A message that quotes a refused file would show it.
const CANARY: &str = "CANARYx4c1dx";

// ---- the corpus ------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Scenario,
    Matrix,
    Other,
}

impl Kind {
    fn dir(self) -> PathBuf {
        Path::new(CORPUS).join(match self {
            Kind::Scenario => "scenario",
            Kind::Matrix => "matrix",
            Kind::Other => "other",
        })
    }
}

struct Case {
    path: PathBuf,
    expect: String,
    line: Option<usize>,
}

fn files(kind: Kind) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(kind.dir())
        .unwrap_or_else(|e| panic!("{}: {e}", kind.dir().display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.extension().is_none_or(|x| x != "expect"))
        .collect();
    out.sort();
    out
}

/// The `# expect:` and `# line:` lines of a case, from its first lines or its NAME.expect.
fn case(path: &Path) -> Result<Case, String> {
    let mut side = path.as_os_str().to_owned();
    side.push(".expect");
    let side = PathBuf::from(side);
    let from = if side.exists() { &side } else { path };
    let bytes = std::fs::read(from).map_err(|e| format!("{}: {e}", from.display()))?;
    let text = String::from_utf8_lossy(&bytes);
    let mut expect = None;
    let mut line = None;
    for l in text.lines().take(3) {
        if let Some(e) = l.strip_prefix("# expect: ") {
            expect = Some(e.to_string());
        } else if let Some(n) = l.strip_prefix("# line: ") {
            line = Some(
                n.trim()
                    .parse()
                    .map_err(|_| format!("`# line: {n}` in {}", from.display()))?,
            );
        }
    }
    let expect = expect.filter(|e| !e.trim().is_empty()).ok_or_else(|| {
        format!(
            "{}: no `# expect: <part of the message>` line",
            from.display()
        )
    })?;
    Ok(Case {
        path: path.to_path_buf(),
        expect,
        line,
    })
}

// ---- running the binary ----------------------------------------------------------------

struct Outcome {
    code: Option<i32>,
    stderr: String,
}

/// Runs the binary in `cwd` with stderr into `stderr_file` (outside `cwd`, whose emptiness is
/// checked afterwards); kills it after BIN_TIMEOUT.
fn run_bin(args: &[OsString], cwd: &Path, stderr_file: &Path) -> Result<Outcome, String> {
    let err = std::fs::File::create(stderr_file).map_err(|e| e.to_string())?;
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .env_remove("ARTIFACT_DIR")
        .env("SNO_HARNESS_LOG", "warn")
        .env("HOSTILE_INPUT_SECRET", CANARY)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err)
        .spawn()
        .map_err(|e| format!("starting {BIN}: {e}"))?;
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break s;
        }
        if started.elapsed() > BIN_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("still running after {BIN_TIMEOUT:?}; killed"));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let stderr =
        String::from_utf8_lossy(&std::fs::read(stderr_file).unwrap_or_default()).into_owned();
    Ok(Outcome {
        code: status.code(),
        stderr,
    })
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Everything wrong with how the binary treats one case; empty when nothing is.
fn check(kind: Kind, c: &Case) -> Vec<String> {
    let mut problems = Vec::new();
    // A case the parser accepts would make `run` or `matrix` boot VMs: never hand it over.
    let loads = match kind {
        Kind::Matrix => sno_harness::scenario::matrix::load(&c.path).is_ok(),
        Kind::Scenario | Kind::Other => sno_harness::scenario::load(&c.path).is_ok(),
    };
    if loads {
        return vec!["the parser accepts it (not run, to boot no VM)".into()];
    }
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let cwd = scratch.path().join("cwd");
    let out = scratch.path().join("out");
    std::fs::create_dir(&cwd).unwrap();
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("already-here"), "").unwrap();
    let file: OsString = c.path.clone().into();
    let execute = match kind {
        Kind::Matrix => "matrix",
        Kind::Scenario | Kind::Other => "run",
    };
    let commands: [Vec<OsString>; 2] = [
        vec!["plan".into(), file.clone()],
        vec![execute.into(), file, "--out".into(), out.clone().into()],
    ];
    let shown = c.path.display().to_string();
    for args in &commands {
        let cmd = args[0].to_string_lossy().into_owned();
        let o = match run_bin(args, &cwd, &scratch.path().join("stderr")) {
            Ok(o) => o,
            Err(e) => {
                problems.push(format!("`{cmd}`: {e}"));
                continue;
            }
        };
        let mut fail = |what: String| {
            problems.push(format!("`{cmd}`: {what}; stderr:\n{}", o.stderr.trim_end()))
        };
        if o.code != Some(2) {
            fail(format!("exit code {:?}, not 2", o.code));
        }
        if o.stderr.contains("panicked") {
            fail("it panicked".into());
        }
        if !o.stderr.contains(&shown) {
            fail("stderr does not name the file".into());
        }
        if o.stderr.contains(CANARY) {
            fail("stderr quotes a file the scenario names (the canary)".into());
        }
        if !o.stderr.contains(&c.expect) {
            fail(format!("stderr does not say {:?}", c.expect));
        }
        if let Some(line) = c.line {
            let at = format!("{shown}:{line}:");
            if !o.stderr.contains(&at) {
                fail(format!("stderr does not point at line {line} ({at})"));
            }
        }
    }
    if listing(&out) != ["already-here"] {
        problems.push(format!("--out has new entries: {:?}", listing(&out)));
    }
    if !listing(&cwd).is_empty() {
        problems.push(format!(
            "the working directory has new entries: {:?}",
            listing(&cwd)
        ));
    }
    problems
}

/// Checks every case of `kind` (in parallel) and fails naming each file that went wrong.
fn refuse_all(kind: Kind, at_least: usize) {
    let paths = files(kind);
    assert!(
        paths.len() >= at_least,
        "{}: {} cases, fewer than {at_least}",
        kind.dir().display(),
        paths.len()
    );
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get().min(8));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(path) = paths.get(i) else { break };
                let problems = match case(path) {
                    Ok(c) => check(kind, &c),
                    Err(e) => vec![e],
                };
                if !problems.is_empty() {
                    failures.lock().unwrap().push(format!(
                        "{}:\n  {}",
                        path.display(),
                        problems.join("\n  ")
                    ));
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap();
    failures.sort();
    assert!(
        failures.is_empty(),
        "{} of {} {kind:?} cases went wrong:\n\n{}",
        failures.len(),
        paths.len(),
        failures.join("\n\n")
    );
}

#[test]
fn malformed_scenarios_are_refused_with_file_line_and_what_is_valid() {
    refuse_all(Kind::Scenario, 20);
}

#[test]
fn malformed_matrices_are_refused_with_file_line_and_what_is_valid() {
    refuse_all(Kind::Matrix, 15);
}

#[test]
fn files_that_are_not_toml_or_not_utf8_are_refused() {
    refuse_all(Kind::Other, 3);
}

/// The canary check above means something only if the files the cases name hold it.
#[test]
fn the_files_the_cases_name_hold_the_canary() {
    let dir = Path::new(CORPUS).join("named-files");
    let mut named = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x != "md") {
            let text = std::fs::read_to_string(&p).unwrap();
            assert!(text.contains(CANARY), "{} has no canary", p.display());
            named += 1;
        }
    }
    assert!(named >= 4, "{}: {named} files", dir.display());
}

/// The matrices must fail for their own reason, not because their base does.
#[test]
fn the_base_the_malformed_matrices_name_is_valid() {
    let good = Path::new(CORPUS).join("bases/good.toml");
    if let Err(e) = sno_harness::scenario::load(&good) {
        panic!("{e}");
    }
}

/// The limits the corpus probes must not refuse what the project ships.
#[test]
fn the_shipped_scenarios_and_matrices_still_load() {
    let mut refused = Vec::new();
    for (path, text) in shipped() {
        let loaded = if sno_harness::scenario::matrix::looks_like_matrix(text) {
            sno_harness::scenario::matrix::load(path)
                .map(drop)
                .map_err(|e| e.to_string())
        } else {
            sno_harness::scenario::load(path)
                .map(drop)
                .map_err(|e| e.to_string())
        };
        if let Err(e) = loaded {
            refused.push(e);
        }
    }
    assert!(refused.is_empty(), "{}", refused.join("\n"));
}

// ---- the parsers never panic -------------------------------------------------------------

/// Where fuzzed text claims to live: next to the shipped scenarios, so `base = "smoke.toml"`
/// and `data/proxy-ca.pem` resolve and matrices get as far as expanding.
fn fuzz_path() -> PathBuf {
    Path::new(SHIPPED).join("fuzz.toml")
}

fn parse_both(text: &str) {
    let path = fuzz_path();
    let _ = sno_harness::scenario::parse_str(&path, text);
    let _ = sno_harness::scenario::matrix::parse_str(&path, text);
    let _ = sno_harness::scenario::matrix::looks_like_matrix(text);
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 2000,
        ..ProptestConfig::default()
    }
}

/// The shipped scenario and matrix files, as (path, text).
fn shipped() -> &'static [(PathBuf, String)] {
    static FILES: std::sync::OnceLock<Vec<(PathBuf, String)>> = std::sync::OnceLock::new();
    FILES.get_or_init(|| {
        let mut out = Vec::new();
        for dir in [
            Path::new(SHIPPED).to_path_buf(),
            Path::new(SHIPPED).join("faults"),
        ] {
            for e in std::fs::read_dir(&dir).unwrap() {
                let p = e.unwrap().path();
                if p.extension().is_some_and(|x| x == "toml") {
                    let text = std::fs::read_to_string(&p).unwrap();
                    out.push((p, text));
                }
            }
        }
        out.sort();
        assert!(out.len() >= 10, "the shipped scenarios went missing");
        out
    })
}

/// Tokens that make TOML, and the words and values the schemas know.
#[rustfmt::skip]
const TOKENS: &[&str] = &[
    "[", "]", "[[", "]]", "{", "}", "=", ",", ".", "\n", "\n", "\n", " ", "\"", "'", "\"\"\"",
    "#", "\\", "\\u", "name", "profile", "base", "strategy", "axis", "exclude", "expect",
    "when", "key", "values", "label", "value", "verdict", "failed_phase", "vm", "vcpus",
    "memory", "firmware", "accel", "boot_order", "disks", "id", "size", "bus", "sector",
    "serial", "install", "installation_disk", "by", "disk", "timeouts", "fixture", "faults",
    "schedule", "\"smoke.toml\"", "\"fuzz.toml\"", "\"install\"", "\"8GiB\"", "\"0GiB\"",
    "\"9999TiB\"", "\"-1\"", "\"virtio\"", "\"sata\"", "\"4k\"", "\"bios\"", "\"uefi\"",
    "\"fixture\"", "\"openshift\"", "\"pairwise\"", "\"full\"", "\"disks.install.bus\"",
    "\"vm.firmware\"", "\"disks.layout\"", "\"3-last\"", "\"install.network_stack\"",
    "\"ipv6-first\"", "\"5m\"", "\"0s\"", "\"fail\"", "\"assets\"", "0", "-1", "1", "2",
    "64", "4096", "9223372036854775807", "-9223372036854775808", "1.5", "nan", "inf",
    "-inf", "true", "false", "1979-05-27T07:32:00Z", "1979-05-27", "07:32:00", "é", "\u{0}",
    "\u{feff}", "\r", "\t", "network", "ipv4", "ipv6", "dns", "bond", "\"static\"",
    "\"10.0.2.15/24\"", "\"10.0.2.2\"",
];

/// Each key's vocabulary as TOML: values it takes, and near misses that find the validators'
/// corners. Keys are matched by their last part (`disks.install.bus` is `bus`).
#[rustfmt::skip]
const VOCABULARY: &[(&str, &[&str], &[&str])] = &[
    ("name", &[r#""hostile""#, r#""smoke.1_x""#], &[r#""Smoke""#, r#""""#]),
    ("profile", &[r#""fixture""#, r#""fixture""#, r#""fixture""#, r#""openshift""#], &[r#""production""#]),
    ("description", &[r#""d""#], &["1"]),
    ("vcpus", &["1", "2", "64"], &["0", "65", "-1", r#""two""#]),
    ("memory", &[r#""3GiB""#, r#""512MiB""#, r#""16TiB""#, r#""1.5GiB""#], &[r#""511MiB""#, r#""17TiB""#, r#""0GiB""#, "3"]),
    ("firmware", &[r#""bios""#, r#""uefi""#], &[r#""coreboot""#, "1"]),
    ("accel", &[r#""auto""#, r#""kvm""#, r#""tcg""#], &[r#""hvf""#]),
    ("boot_order", &[r#""disk-first""#, r#""cdrom-first""#], &[r#""net""#]),
    ("id", &[r#""install""#, r#""install""#, r#""data""#, r#""d1""#], &[r#""Install""#, r#""""#]),
    ("size", &[r#""8GiB""#, r#""64MiB""#, r#""2048TiB""#], &[r#""63MiB""#, r#""2049TiB""#, r#""0GiB""#, r#""-1""#, r#""8 GiB""#, "8"]),
    ("bus", &[r#""virtio""#, r#""scsi""#, r#""nvme""#, r#""sata""#], &[r#""floppy""#]),
    ("sector", &[r#""512""#, r#""512e""#, r#""4k""#], &[r#""1k""#, "512"]),
    ("cache", &[r#""unsafe""#, r#""writeback""#, r#""none""#, r#""directsync""#], &[r#""writethrough""#, "1"]),
    ("aio", &[r#""threads""#, r#""native""#, r#""io_uring""#], &[r#""posix""#]),
    ("throttle", &[
        r#"{ bytes_per_s = "8MiB" }"#, r#"{ iops = 500 }"#, r#"{ bytes_per_s = "20MiB", iops = 500 }"#,
    ], &["{}", r#"{ iops = 0 }"#, r#"{ bytes_per_s = "0" }"#, r#"{ iops = -1 }"#, r#"{ bps = 1 }"#, r#""8MiB""#, r#"{ iops = 1000000000000001 }"#]),
    ("serial", &[r#""sno-install""#, r#""same""#], &[r#""""#, r#""aaaaaaaaaaaaaaaaaaaaaaaa""#, r#""a b""#]),
    ("installation_disk", &[
        r#"{ by = "id", disk = "install" }"#, r#"{ by = "name", disk = "install" }"#,
        r#"{ by = "path", disk = "install" }"#, r#"{ by = "path", disk = "data" }"#,
        r#"{ by = "name", disk = "data" }"#, r#""/dev/vda""#, r#""""#,
    ], &[r#"{ by = "uuid", disk = "install" }"#, r#"{ by = "id" }"#, "5"]),
    ("by", &[r#""id""#, r#""name""#, r#""path""#], &[r#""uuid""#]),
    ("network_type", &[r#""OVNKubernetes""#, r#""OpenShiftSDN""#], &[]),
    ("machine_network", &[r#"["10.0.2.0/24"]"#, r#"["fd00::/64"]"#, r#"["10.0.2.0/24", "fec0::/64"]"#, "[]"], &[r#""10.0.2.0/24""#]),
    ("cluster_network", &[r#"[{ cidr = "10.128.0.0/14", host_prefix = 23 }]"#, r#"[{ cidr = "fd01::/48", hostPrefix = 64 }]"#, "[]"], &[r#"[{ cidr = "x" }]"#]),
    ("service_network", &[r#"["172.30.0.0/16"]"#, r#"["fd02::/112"]"#, "[]"], &[]),
    ("control_plane_replicas", &["1", "3"], &["-1"]),
    ("bootstrap_in_place", &["true", "false"], &[r#""yes""#]),
    ("fips", &["true", "false"], &[]),
    ("pull_secret", &[r#"{ env = "PULL_SECRET" }"#], &[r#"{ file = "/dev/null" }"#, r#"{ file = "data/proxy-ca.pem" }"#, r#"{ env = "" }"#, r#"{ env = "A", file = "b" }"#, "{}", r#""secret""#]),
    ("proxy", &["{}", r#"{ http_proxy = "http://p:3128" }"#], &[r#"{ ftp_proxy = "x" }"#]),
    ("additional_trust_bundle", &[r#""data/proxy-ca.pem""#, r#""""#], &[r#""missing.pem""#, r#"".""#, r#""/dev/null""#, r#""smoke.toml""#, r#""/proc/self/environ""#]),
    ("capabilities", &[r#"{ baseline_capability_set = "None" }"#, r#"{ baseline_capability_set = "vCurrent", additional_enabled_capabilities = ["marketplace"] }"#], &["{}"]),
    ("timeout", &[r#""5m""#, r#""1s""#, r#""7d""#], &[r#""8d""#, r#""0s""#, r#""500ms""#, r#""soon""#, r#""500000000000y""#, "300"]),
    ("faults", &["[]", r#"["operator-degraded:ingress"]"#, r#"["bootkube-fail", "install-fail"]"#], &[r#"["nope"]"#]),
    ("schedule", &[r#""fast""#, r#""normal""#], &[r#""slow""#]),
    ("installer", &[r#""/nonexistent/openshift-install""#], &[]),
    ("release_image", &[r#""quay.io/x:1""#], &[]),
    ("verdict", &[r#""pass""#, r#""fail""#, r#""error""#], &[r#""maybe""#]),
    ("failed_phase", &[r#""assets""#, r#""bootkube""#], &[r#""teatime""#]),
    ("reason_contains", &[r#""x""#], &[]),
    ("layout", &[r#""1""#, r#""2-second""#, r#""3-last""#, r#""8-eighth""#], &[r#""9""#, r#""2-third""#, "2"]),
    ("network_stack", &[r#""ipv4""#, r#""ipv6""#, r#""dual-stack""#, r#""ipv6-first""#], &[r#""ipv7""#]),
    ("network", &[r#""user""#, r#""user""#, r#""nat""#], &[r#""bridge""#]),
    ("mode", &[r#""static""#, r#""static""#, r#""dhcp""#], &[r#""manual""#, "1"]),
    ("ipv4", &[
        r#"{ address = "10.0.2.15/24", gateway = "10.0.2.2" }"#, r#"{ address = "10.0.2.0/24", gateway = "10.0.2.2" }"#,
        r#"{ address = "10.0.2.15/32", gateway = "10.0.2.2" }"#, r#"{ address = "10.0.2.15/31", gateway = "10.0.2.14" }"#,
    ], &[r#"{ address = "10.0.2.15/99", gateway = "10.0.2.2" }"#, r#"{ address = "fd00::1/64", gateway = "x" }"#, r#"{ address = "10.0.2.15" }"#, r#""10.0.2.15/24""#]),
    ("ipv6", &[
        r#"{ address = "fd00::10/64", gateway = "fd00::1" }"#, r#"{ address = "fd00::/128", gateway = "fd00::" }"#,
        r#"{ address = "::/1", gateway = "::1" }"#,
    ], &[r#"{ address = "fd00::10/129", gateway = "fd00::1" }"#, r#"{ address = "10.0.2.15/24", gateway = "10.0.2.2" }"#]),
    ("dns", &[r#"["10.0.2.3"]"#, r#"["10.0.2.3", "fd00::1"]"#, "[]"], &[r#"["x"]"#, r#""10.0.2.3""#, r#"["10.0.2.3", "10.0.2.3"]"#]),
    ("bond", &[r#"{ mode = "active-backup" }"#, r#"{ mode = "active-backup", interfaces = 2 }"#], &[r#"{ mode = "802.3ad" }"#, r#"{ mode = "active-backup", interfaces = 9223372036854775807 }"#, r#"{ interfaces = -1 }"#, "true"]),
];

/// Anything, for a key of no vocabulary or the odd wrong value.
#[rustfmt::skip]
const ANY_VALUE: &[&str] = &[
    "0", "-1", "9223372036854775807", "1.5", "nan", "inf", "true", "1979-05-27T07:32:00Z",
    "\"\"", "\"x\"", "[]", "[[[[1]]]]", "[1, \"a\"]", "{}", "{ a = { b = 1 } }",
];

/// The values `key` takes and its near misses.
fn vocabulary(key: &str) -> (&'static [&'static str], &'static [&'static str]) {
    let last = key.rsplit('.').next().unwrap_or(key);
    let timeout = key.starts_with("timeouts.")
        || ["bootkube", "assets", "reboot", "disk-write-stall"].contains(&last);
    let last = if timeout { "timeout" } else { last };
    VOCABULARY
        .iter()
        .find(|(k, _, _)| *k == last)
        .map_or((ANY_VALUE, ANY_VALUE), |(_, good, bad)| (good, bad))
}

/// A value for `key`: one it takes mostly, so that documents get past the schema to the
/// validators; else a near miss, anything, or a random string.
fn value_for(key: &str, roll: u8, pick: Index, text: &str) -> String {
    let (good, bad) = vocabulary(key);
    match roll {
        0..=91 => pick.get(good).to_string(),
        92..=95 if !bad.is_empty() => pick.get(bad).to_string(),
        92..=97 => pick.get(ANY_VALUE).to_string(),
        // toml writes any string as valid TOML.
        _ => toml::Value::String(text.to_string()).to_string(),
    }
}

type Pick = (u8, Index, String);

fn pick() -> impl Strategy<Value = Pick> {
    (0u8..100, any::<Index>(), ".{0,8}")
}

/// The scenario keys by section ("" is the top level), with how often each is written.
#[rustfmt::skip]
const SCENARIO_KEYS: &[(&str, &[(&str, u8)])] = &[
    ("", &[("name", 97), ("profile", 97), ("description", 10), ("colour", 2)]),
    ("vm", &[("vcpus", 30), ("memory", 30), ("firmware", 40), ("accel", 20), ("boot_order", 20), ("network", 15)]),
    ("install", &[
        ("installation_disk", 60), ("network_type", 20), ("machine_network", 20),
        ("cluster_network", 15), ("service_network", 15), ("control_plane_replicas", 10),
        ("bootstrap_in_place", 10), ("pull_secret", 30), ("proxy", 15),
        ("additional_trust_bundle", 20), ("fips", 10), ("capabilities", 10),
    ]),
    ("timeouts", &[("bootkube", 20), ("assets", 10), ("reboot", 10), ("disk-write-stall", 15), ("bootcamp", 2)]),
    ("fixture", &[("faults", 30), ("schedule", 30)]),
    ("openshift", &[("installer", 5), ("release_image", 5)]),
    ("expect", &[("verdict", 20), ("failed_phase", 8), ("reason_contains", 5)]),
    ("network", &[("mode", 15), ("ipv4", 12), ("ipv6", 8), ("dns", 12), ("bond", 8)]),
];

#[rustfmt::skip]
const DISK_KEYS: &[(&str, u8)] = &[
    ("id", 99), ("size", 98), ("bus", 60), ("sector", 50), ("serial", 30), ("cache", 25),
    ("aio", 25), ("throttle", 20), ("colour", 1),
];

/// A scenario over the schema: each key written or not, with a value from its vocabulary
/// mostly; up to 4 disks.
fn scenario_doc() -> impl Strategy<Value = String> {
    let n: usize = SCENARIO_KEYS.iter().map(|(_, keys)| keys.len()).sum();
    (
        prop::collection::vec((0u8..100, pick()), n),
        prop::collection::vec(
            prop::collection::vec((0u8..100, pick()), DISK_KEYS.len()),
            1..5,
        ),
        0u8..100,
    )
        .prop_map(|(rolls, mut disks, diskless)| {
            if diskless < 5 {
                disks.clear();
            }
            let mut rolls = rolls.into_iter();
            let mut sections = Vec::new();
            for (section, keys) in SCENARIO_KEYS {
                let mut text = String::new();
                for (key, often) in keys.iter() {
                    let (roll, (r, p, s)) = rolls.next().expect("one roll a key");
                    if roll < *often {
                        text += &format!("{key} = {}\n", value_for(key, r, p, &s));
                    }
                }
                sections.push((section, text));
            }
            let mut doc = sections[0].1.clone();
            for (i, d) in disks.into_iter().enumerate() {
                doc += "[[disks]]\n";
                for ((key, often), (roll, (r, p, s))) in DISK_KEYS.iter().zip(d) {
                    if roll >= *often {
                        continue;
                    }
                    // Ids by position mostly: the validator's other checks are behind the
                    // one for duplicate ids.
                    let v = if *key == "id" && r < 90 {
                        format!("{:?}", ["install", "data", "d1", "d2", "d3"][i])
                    } else if *key == "serial" && r < 90 {
                        format!("\"sno-s{i}\"")
                    } else {
                        value_for(key, r, p, &s)
                    };
                    doc += &format!("{key} = {v}\n");
                }
            }
            for (section, text) in &sections[1..] {
                // Without its one required key, [expect] is refused before anything else.
                let headless = **section == "expect" && !text.contains("verdict =");
                if !text.is_empty() && !headless {
                    doc += &format!("[{section}]\n{text}");
                }
            }
            doc
        })
}

#[rustfmt::skip]
const AXIS_KEYS: &[&str] = &[
    "vm.firmware", "vm.vcpus", "vm.memory", "vm.accel", "vm.boot_order", "disks.install.bus",
    "disks.install.sector", "disks.install.size", "disks.install.serial", "disks.install.cache",
    "disks.install.aio", "disks.install.throttle", "disks.layout",
    "install.network_stack", "install.installation_disk", "install.installation_disk.by",
    "install.additional_trust_bundle", "install.proxy", "install.fips", "install.network_type",
    "install.pull_secret", "timeouts.bootkube", "timeouts.disk-write-stall",
    "fixture.schedule", "fixture.faults", "profile",
];

/// Keys no axis may have.
#[rustfmt::skip]
const ODD_AXIS_KEYS: &[&str] = &[
    "vm.colour", "disks.data.bus", "disks", "name", "expect.verdict", "vm..x", "hardware.cpus",
];

/// A matrix on the shipped smoke scenario mostly: 1 to 4 axes over known keys with values
/// from their vocabularies (labelled when they are not scalars), and rules naming them.
fn matrix_doc() -> impl Strategy<Value = String> {
    let base = prop_oneof![
        12 => Just("\"smoke.toml\""),
        1 => Just("\"faults/small-disk.toml\""),
        1 => Just("\"faults/cdrom-first.toml\""),
        1 => select(&["\"disks.toml\"", "\"fuzz.toml\"", "\"\"", "\"data\"", "1"][..]),
    ];
    let strategy = prop_oneof![
        10 => select(&["", "strategy = \"full\"\n", "strategy = \"pairwise\"\n"][..]),
        1 => Just("strategy = \"pairwize\"\n"),
    ];
    let key = prop_oneof![12 => select(AXIS_KEYS), 1 => select(ODD_AXIS_KEYS)];
    let values = prop_oneof![
        20 => prop::collection::vec((pick(), 0u8..100), 1..5),
        1 => Just(Vec::new()),
    ];
    let axes = prop::collection::vec((key, values), 1..5);
    let rules = prop::collection::vec(
        (
            any::<bool>(),
            prop::collection::vec((any::<Index>(), any::<Index>()), 1..3),
            0usize..4,
        ),
        0..3,
    );
    (base, strategy, axes, rules).prop_map(|(base, strategy, axes, rules)| {
        let mut doc = format!("name = \"fuzz\"\nbase = {base}\n{strategy}");
        // Per axis: its key and the labels its values go by in rules.
        let mut written: Vec<(&str, Vec<String>)> = Vec::new();
        for (key, values) in axes {
            let mut items: Vec<String> = Vec::new();
            let mut labels = Vec::new();
            let mut seen = Vec::new();
            for (i, ((r, p, s), bare)) in values.into_iter().enumerate() {
                let v = value_for(key, r, p, &s);
                // A value twice is refused before anything else; one case of it is enough.
                if seen.contains(&v) && bare > 0 {
                    continue;
                }
                seen.push(v.clone());
                let scalar = !(v.starts_with('[') || v.starts_with('{') || v == "\"\"");
                // Scalars label themselves; anything else needs a label, which a few lack.
                if (scalar && bare < 70) || bare < 3 {
                    labels.push(v.clone());
                    items.push(v);
                } else {
                    let label = format!("\"v{i}\"");
                    items.push(format!("{{ label = {label}, value = {v} }}"));
                    labels.push(label);
                }
            }
            doc += &format!("[[axis]]\nkey = {key:?}\nvalues = [{}]\n", items.join(", "));
            written.push((key, labels));
        }
        for (exclude, conditions, verdict) in rules {
            let mut named: Vec<&str> = Vec::new();
            let mut when: Vec<String> = Vec::new();
            for (a, v) in conditions {
                let (key, labels) = a.get(&written);
                // A key twice in one table is a TOML error, found already.
                if named.contains(key) {
                    continue;
                }
                named.push(key);
                let label = if labels.is_empty() {
                    "\"none\"".to_string()
                } else {
                    v.get(labels).clone()
                };
                when.push(format!("{key:?} = {label}"));
            }
            if exclude {
                doc += &format!("[[exclude]]\n{}\n", when.join("\n"));
            } else {
                let verdict = ["\"pass\"", "\"fail\"", "\"error\"", "\"maybe\""][verdict];
                doc += &format!(
                    "[[expect]]\nwhen = {{ {} }}\nverdict = {verdict}\nfailed_phase = \"assets\"\n",
                    when.join(", ")
                );
            }
        }
        doc
    })
}

#[derive(Debug, Clone)]
enum Mutation {
    DeleteLine(Index),
    DuplicateLine(Index),
    SwapValues(Index, Index),
    Truncate(Index),
    /// A value from the vocabulary of the line's key.
    SetValue(Index, Pick),
    InsertToken(Index, &'static str),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<Index>().prop_map(Mutation::DeleteLine),
        any::<Index>().prop_map(Mutation::DuplicateLine),
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::SwapValues(a, b)),
        any::<Index>().prop_map(Mutation::Truncate),
        (any::<Index>(), pick()).prop_map(|(a, v)| Mutation::SetValue(a, v)),
        (any::<Index>(), select(TOKENS)).prop_map(|(a, t)| Mutation::InsertToken(a, t)),
    ]
}

fn mutate(text: &str, m: &Mutation) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if lines.is_empty() {
        return text.to_string();
    }
    // The lines that set a key, as (line index, position of '=').
    let assignments: Vec<(usize, usize)> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with('#'))
        .filter_map(|(i, l)| l.find(" = ").map(|at| (i, at)))
        .collect();
    match m {
        Mutation::DeleteLine(i) => {
            lines.remove(i.index(lines.len()));
        }
        Mutation::DuplicateLine(i) => {
            let i = i.index(lines.len());
            lines.insert(i, lines[i].clone());
        }
        Mutation::SwapValues(a, b) if !assignments.is_empty() => {
            let (la, ea) = assignments[a.index(assignments.len())];
            let (lb, eb) = assignments[b.index(assignments.len())];
            let va = lines[la][ea + 3..].to_string();
            let vb = lines[lb][eb + 3..].to_string();
            lines[la].replace_range(ea + 3.., &vb);
            lines[lb].replace_range(eb + 3.., &va);
        }
        Mutation::SetValue(a, (r, p, s)) if !assignments.is_empty() => {
            let (l, e) = assignments[a.index(assignments.len())];
            let v = value_for(lines[l][..e].trim().trim_matches('"'), *r, *p, s);
            lines[l].replace_range(e + 3.., &v);
        }
        Mutation::Truncate(at) => {
            let mut cut = at.index(text.len() + 1);
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            return text[..cut].to_string();
        }
        Mutation::InsertToken(at, token) => {
            let mut at = at.index(text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            return format!("{}{token}{}", &text[..at], &text[at..]);
        }
        Mutation::SwapValues(..) | Mutation::SetValue(..) => {}
    }
    lines.join("\n") + "\n"
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..1024)) {
        parse_both(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn random_bytes_from_a_file_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        // Through the loaders too: they read bytes, not text.
        let mut f = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut f, &bytes).unwrap();
        let _ = sno_harness::scenario::load(f.path());
        let _ = sno_harness::scenario::matrix::load(f.path());
    }

    #[test]
    fn token_soup_never_panics(tokens in prop::collection::vec(select(TOKENS), 0..120)) {
        parse_both(&tokens.concat());
    }

    #[test]
    fn random_scenarios_never_panic(doc in scenario_doc()) {
        parse_both(&doc);
    }

    #[test]
    fn random_matrices_never_panic(doc in matrix_doc()) {
        parse_both(&doc);
    }

    #[test]
    fn mutated_shipped_files_never_panic(
        file in any::<Index>(),
        mutations in prop::collection::vec(mutation(), 1..4),
    ) {
        let (path, text) = file.get(shipped());
        let mut text = text.clone();
        for m in &mutations {
            text = mutate(&text, m);
        }
        // As the file itself, so the base and trust bundle paths resolve as they do for it.
        let _ = sno_harness::scenario::parse_str(path, &text);
        let _ = sno_harness::scenario::matrix::parse_str(path, &text);
    }
}
