//! A PXE run on a shared host, attacked as the issue that brought the boot server's defences
//! found it could be: another local user (uid 65534) tries to take the live Ignition (the pull
//! secret, the bootstrap keys, the admin kubeconfig) by asking the boot server for it and by
//! reading every file of the run whose path it can learn (QEMU's command line is world-readable),
//! while a flood of half-sent and junk requests hits the boot server for the whole run, and the
//! harness itself has the common default of 1024 open files (more half-sent connections than
//! that once starved it). The run must pass, the attacker must get nothing, the boot server must
//! have counted what it refused, and nothing under `--out` may hold a secret.
//!
//! The attacker is a bash script run under another uid (bash's /dev/tcp is its HTTP client).

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
        "the other user got something (the attacker: {}; the run: {status}):\n{}{}",
        attacked.status,
        String::from_utf8_lossy(&attacked.stdout),
        String::from_utf8_lossy(&attacked.stderr)
    );
    eprintln!(
        "the attacker, as uid {NOBODY}:\n{}",
        String::from_utf8_lossy(&attacked.stdout)
    );
    eprintln!("the flood: {flooded}");
    if !status.success() {
        // Kept for its console and timeline: a failure under the flood (one in a CI rehearsal,
        // live-boot past its 4 minutes) says nothing of where the guest stood without them.
        let kept = work.keep();
        panic!(
            "the attacked run did not pass (its directory kept: {}):\n{said}",
            kept.display()
        );
    }
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

/// The attacker, as uid 65534 for about a minute while the run goes on: asks the boot server
/// for the files by their names, and reads (or lists) whatever file of the run it can learn
/// the path of: the private root, the run directory, and every path in a QEMU command line on
/// this host (world-readable) under them, with the names a PXE boot puts there. Exits 1, saying
/// what, when it got anything. bash's /dev/tcp is its HTTP client.
const ATTACKER: &str = r#"set -u
# A write to a connection the server has already closed (it evicts under the flood) must fail
# the write, not kill the attacker with SIGPIPE before it says what it tried.
trap '' PIPE
port=$1; out=$2; root=$3
got=0; tried=0; end=$((SECONDS + 60))
while [ "$SECONDS" -lt "$end" ]; do
  for name in ignition.img rootfs.img vmlinuz initrd.img boot.ipxe; do
    if { exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null; then
      printf 'GET /%s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' "$name" >&3
      IFS= read -r -t 5 status <&3 || status=
      exec 3<&-
      case $status in *" 200 "*) echo "GOT GET /$name: $status"; got=1;; esac
    fi
  done
  paths="$root $out/pxe-attacked/events.jsonl $out/pxe-attacked/serial.log"
  for c in /proc/[0-9]*/cmdline; do
    IFS= read -r -d '' argv0 < "$c" 2>/dev/null || continue
    case $argv0 in *qemu-system*) ;; *) continue;; esac
    cmd=$(tr '\0' ' ' < "$c" 2>/dev/null) || continue
    for w in $(printf '%s' "$cmd" | tr ' ,=' '\n\n\n'); do
      case $w in "$root"*|"$out"*)
        paths="$paths $w $w/boot.ipxe $w/ignition.img $w/ssh-key $w/assets/auth/kubeconfig";;
      esac
    done
  done
  for p in $paths; do
    tried=$((tried + 1))
    if [ -d "$p" ] && ls "$p" >/dev/null 2>&1; then
      echo "GOT a listing of $p ($(id -u), $(ls -ld "$p"))"; got=1
    fi
    if [ -f "$p" ] && head -c 64 "$p" >/dev/null 2>&1; then
      echo "GOT a read of $p ($(id -u), $(ls -l "$p"))"; got=1
    fi
  done
  [ "$got" = 1 ] && break
  sleep 2
done
echo "tried $tried reads and the server's paths for 60 s"
exit "$got"
"#;

fn attack_as_nobody(port: u16, out: &Path, private_root: &Path) -> std::process::Output {
    Command::new("bash")
        .args(["-c", ATTACKER, "attacker"])
        .arg(port.to_string())
        .arg(out)
        .arg(private_root)
        .current_dir("/")
        .uid(NOBODY)
        .gid(NOBODY)
        .output()
        .unwrap()
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
