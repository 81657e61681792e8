//! A PXE run on a shared host, attacked as the issue that brought the boot server's defences
//! found it could be: another local user (uid 65534) tries to take the live Ignition (the pull
//! secret, the bootstrap keys, the admin kubeconfig) by asking the boot server for it and by
//! reading every file of the run whose path it can learn (QEMU's command line is world-readable),
//! while a flood of half-sent and junk requests hits the boot server for the whole run, and the
//! harness itself has the common default of 1024 open files (more half-sent connections than
//! that once starved it). The run must pass, the attacker must get nothing, the boot server must
//! have counted what it refused, and nothing under `--out` may hold a secret.
//!
//! The attacker runs as this test binary's ignored test `attacker`, under another uid.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The uid and gid the attacker runs as (Debian's `nobody`).
const NOBODY: u32 = 65534;

/// Half-sent requests held open at once: more than the harness's 1024 open files.
const HALF_SENT: usize = 1100;

fn pxe_scenario(into: &Path) -> PathBuf {
    let smoke = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/smoke.toml"),
    )
    .unwrap();
    let text = smoke
        .replace("name = \"smoke\"", "name = \"pxe-attacked\"")
        .replace("firmware = \"bios\"", "firmware = \"uefi\"")
        + "\n[boot]\nsource = \"pxe\"\n";
    let path = into.join("pxe-attacked.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_pxe_run_under_attack_keeps_its_ignition_and_its_verdict() {
    let work = tempfile::Builder::new()
        .prefix("sno-attacked-")
        .tempdir()
        .unwrap();
    let scenario = pxe_scenario(work.path());
    let out = work.path().join("out");
    let private_root = work.path().join("private");
    // The harness with the usual default limit of open files.
    let mut child = Command::new("sh")
        .args(["-c", "ulimit -n 1024 && exec \"$@\"", "sh"])
        .arg(env!("CARGO_BIN_EXE_sno-harness"))
        .arg("run")
        .arg(&scenario)
        .arg("--out")
        .arg(&out)
        .env("SNO_HARNESS_PRIVATE_DIR", &private_root)
        .env("SNO_HARNESS_STATE_DIR", work.path().join("state"))
        .env("SNO_HARNESS_PROGRESS", "plain")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The run's lines (plain, on stderr) name the boot server's port.
    let (lines, port) = watch_for_the_boot_server(child.stderr.take().unwrap());
    let stdout = child.stdout.take().unwrap();
    let stdout = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = BufReader::new(stdout).read_to_string(&mut s);
        s
    });
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let stop = Arc::new(AtomicBool::new(false));
    let flood = {
        let stop = stop.clone();
        std::thread::spawn(move || flood(addr, &stop))
    };
    let attacked = attack_as_nobody(port, &out, &private_root);
    let status = child.wait().unwrap();
    stop.store(true, Ordering::SeqCst);
    let flooded = flood.join().unwrap();
    let said = format!(
        "{}\n{}",
        lines.join().unwrap().join("\n"),
        stdout.join().unwrap()
    );
    assert!(
        attacked.status.success(),
        "the other user got something (the run: {status}):\n{}{}",
        String::from_utf8_lossy(&attacked.stdout),
        String::from_utf8_lossy(&attacked.stderr)
    );
    eprintln!(
        "the attacker, as uid {NOBODY}:\n{}",
        String::from_utf8_lossy(&attacked.stdout)
    );
    eprintln!("the flood: {flooded}");
    assert!(status.success(), "the attacked run did not pass:\n{said}");
    the_run_says_what_it_refused_and_fetched_the_ignition_by_tftp(&out.join("pxe-attacked"));
    nothing_under_out_holds_a_private_key_or_the_pull_secret(&out);
}

/// Reads the harness's output in a thread until the boot server's line names its port; the
/// thread keeps reading (and returns every line) until the harness closes its output.
fn watch_for_the_boot_server(
    output: std::process::ChildStderr,
) -> (std::thread::JoinHandle<Vec<String>>, u16) {
    let (tx, rx) = std::sync::mpsc::channel();
    let lines = std::thread::spawn(move || {
        let mut all = Vec::new();
        for line in BufReader::new(output).lines().map_while(Result::ok) {
            if let Some(port) = boot_server_port(&line) {
                let _ = tx.send(port);
            }
            all.push(line);
        }
        all
    });
    let port = rx
        .recv_timeout(Duration::from_secs(300))
        .expect("the run never said where its boot server listens");
    (lines, port)
}

/// `... boot server on 127.0.0.1:PORT: ...` → PORT.
fn boot_server_port(line: &str) -> Option<u16> {
    let rest = line.split("boot server on 127.0.0.1:").nth(1)?;
    rest.split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// Until `stop`: 1100 half-sent requests held open (renewed as the server closes them, at most
/// 200 a second), and bursts of complete requests for paths the server does not serve.
fn flood(addr: SocketAddr, stop: &AtomicBool) -> String {
    let mut held: Vec<TcpStream> = Vec::new();
    let (mut opened, mut junk) = (0u64, 0u64);
    while !stop.load(Ordering::SeqCst) {
        let second = Instant::now();
        held.retain(still_open);
        let mut renewed = 0;
        while held.len() < HALF_SENT && renewed < 200 {
            let Ok(mut s) = TcpStream::connect(addr) else {
                break;
            };
            let _ = s.write_all(b"GET /rootfs.img HTTP/1.1\r\nHost: x\r\nX-Slow: ");
            held.push(s);
            (opened, renewed) = (opened + 1, renewed + 1);
        }
        for i in 0..50 {
            if let Ok(mut s) = TcpStream::connect(addr) {
                let req = format!(
                    "GET /junk/{i}/ignition.img HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                );
                let _ = s.write_all(req.as_bytes());
                junk += 1;
            }
        }
        std::thread::sleep(Duration::from_secs(1).saturating_sub(second.elapsed()));
    }
    format!("{opened} half-sent requests opened, {junk} junk requests sent")
}

/// Whether the server still holds the connection open (a read would block).
fn still_open(s: &TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let mut b = [0u8; 1];
    let open = matches!(s.peek(&mut b), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
    s.set_nonblocking(false).unwrap();
    open
}

/// Runs `attacker` as uid 65534 while the run goes on; it tries for about a minute.
fn attack_as_nobody(port: u16, out: &Path, private_root: &Path) -> std::process::Output {
    let me = std::env::current_exe().unwrap();
    Command::new(me)
        .args(["--exact", "attacker", "--include-ignored", "--nocapture"])
        .env("ATTACK_PORT", port.to_string())
        .env("ATTACK_OUT", out)
        .env("ATTACK_PRIVATE_ROOT", private_root)
        .uid(NOBODY)
        .gid(NOBODY)
        .output()
        .unwrap()
}

/// The attacker: asks the boot server for the files by their names, and reads whatever file
/// of the run it can learn the path of. Passes when it got nothing.
#[test]
#[ignore = "run by a_pxe_run_under_attack_keeps_its_ignition_and_its_verdict as another user"]
fn attacker() {
    let Ok(port) = std::env::var("ATTACK_PORT") else {
        return;
    };
    let port: u16 = port.parse().unwrap();
    let out = PathBuf::from(std::env::var("ATTACK_OUT").unwrap());
    let private_root = PathBuf::from(std::env::var("ATTACK_PRIVATE_ROOT").unwrap());
    let mut got = Vec::new();
    let until = Instant::now() + Duration::from_secs(60);
    let mut tried = 0;
    while Instant::now() < until {
        for name in [
            "ignition.img",
            "rootfs.img",
            "vmlinuz",
            "initrd.img",
            "boot.ipxe",
        ] {
            if let Some(status) = http_status(port, &format!("/{name}")) {
                if status == 200 {
                    got.push(format!("GET /{name}: 200"));
                }
            }
        }
        let mut paths = vec![
            private_root.clone(),
            out.join("pxe-attacked/events.jsonl"),
            out.join("pxe-attacked/serial.log"),
        ];
        // The run's own files among them (QEMU also names the firmware, /dev/urandom...).
        paths.extend(
            paths_qemu_names()
                .into_iter()
                .filter(|p| p.starts_with(&private_root) || p.starts_with(&out)),
        );
        for p in &paths {
            tried += 1;
            if let Some(what) = readable(p) {
                got.push(format!("{}: {what}", p.display()));
            }
        }
        if !got.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_secs(2));
    }
    println!("tried {tried} reads and the server's paths for 60 s");
    assert!(got.is_empty(), "the attacker got:\n{}", got.join("\n"));
}

fn http_status(port: u16, path: &str) -> Option<u16> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut head = [0u8; 12];
    s.read_exact(&mut head).ok()?;
    String::from_utf8_lossy(&head[9..12]).parse().ok()
}

/// Every path in a QEMU command line on this host (its disks, its ISO, its TFTP root, its
/// sockets), and the files of the directories among them.
fn paths_qemu_names() -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if !cmd.contains("qemu-system") {
            continue;
        }
        for word in cmd.split([' ', ',', '=']) {
            if word.starts_with('/') {
                let p = PathBuf::from(word);
                for f in [
                    "boot.ipxe",
                    "ignition.img",
                    "assets/auth/kubeconfig",
                    "ssh-key",
                ] {
                    paths.push(p.join(f));
                }
                paths.push(p);
            }
        }
    }
    paths
}

/// What of `p` this user can read: a file's first bytes, a directory's listing.
fn readable(p: &Path) -> Option<String> {
    if let Ok(entries) = std::fs::read_dir(p) {
        let names: Vec<String> = entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        return Some(format!("listed: {names:?}"));
    }
    let mut f = std::fs::File::open(p).ok()?;
    let mut b = [0u8; 64];
    let n = f.read(&mut b).ok()?;
    Some(format!("read {n} bytes"))
}

fn the_run_says_what_it_refused_and_fetched_the_ignition_by_tftp(dir: &Path) {
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("result.json")).unwrap()).unwrap();
    assert_eq!(result["verdict"], "pass", "{result}");
    let boot = &result["boot"];
    let refused = boot["refused"].as_str().unwrap_or_default();
    assert!(
        refused.contains("requests for paths it does not serve") && refused.contains("evicted"),
        "{boot}"
    );
    let paths: Vec<&str> = boot["served"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap())
        .collect();
    for p in ["/vmlinuz", "/initrd.img", "/rootfs.img"] {
        assert!(paths.contains(&p), "{p} not fetched: {paths:?}");
    }
    assert!(
        !paths.contains(&"/ignition.img"),
        "the Ignition came over HTTP: {paths:?}"
    );
    let url = boot["rootfs_url"].as_str().unwrap();
    assert!(
        url.ends_with("/<token>/rootfs.img"),
        "the published URL names no token: {url}"
    );
}

fn nothing_under_out_holds_a_private_key_or_the_pull_secret(out: &Path) {
    let mut secrets = sno_harness::secrets::Secrets::default();
    secrets.add_pull_secret(sno_harness::assets::FIXTURE_PULL_SECRET);
    let leaks = secrets.scan(out);
    assert!(leaks.is_empty(), "{leaks:?}");
}
