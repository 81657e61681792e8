//! `sno-harness gc`: collects what runs that did not end cleanly left behind (the harness
//! killed with SIGKILL, a second Ctrl-C, a crash, the host rebooted). This is the registry's
//! half; the libvirt objects are swept by `vm::libvirt::gc`.
//!
//! A run registers itself (`run::registry`) before it makes anything; a registration whose
//! process is gone marks a run to collect. For each: the VM (a QEMU process still holding the run
//! directory, a libvirt domain still carrying the run's id), the disks, the copy of the live ISO,
//! the sockets; the run directory keeps its logs and gets a `result.json` saying what happened
//! if it has none. Then every libvirt domain, NAT network and storage pool with the harness's
//! metadata whose run is not alive is destroyed too, so objects of runs that never registered
//! (or whose registry was lost) go.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use super::registry::{self, Entry};
use crate::result::RunResult;
use crate::vm::libvirt::gc::{collect_domains, collect_networks, collect_pools, sweep, Collected};

/// QEMU processes that run this run's VM: their command line opens a disk of `dir`.
fn qemu_processes_of(dir: &Path) -> Vec<u32> {
    let Ok(procs) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(cmd) = fs::read(format!("/proc/{pid}/cmdline")) else {
                return false;
            };
            let args: Vec<String> = cmd
                .split(|b| *b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            // A relative disk path (a relative --out) is relative to QEMU's working directory.
            let cwd = fs::read_link(format!("/proc/{pid}/cwd")).unwrap_or_default();
            runs_vm_of(&args, &cwd, dir)
        })
        .collect()
}

/// Whether a command line is a QEMU of the run in `dir`: one of its `file=` arguments (a disk)
/// lies in `dir/disks/`. Compared by whole path components, not as a substring: the QEMU of
/// `.../smoke-2` is not `.../smoke`'s, and a registration of `/` names no QEMU.
fn runs_vm_of(args: &[String], cwd: &Path, dir: &Path) -> bool {
    let is_qemu = args
        .first()
        .and_then(|a| Path::new(a).file_name())
        .is_some_and(|n| n.to_string_lossy().starts_with("qemu-system"));
    if !is_qemu || !dir.is_absolute() || dir.parent().is_none() {
        return false;
    }
    let disks = dir.join("disks");
    args.iter()
        .flat_map(|a| qemu_options(a))
        .filter_map(|part| part.strip_prefix("file=").map(str::to_string))
        .any(|file| crate::util::lexical_absolute(&cwd.join(file)).starts_with(&disks))
}

/// The options of one QEMU option argument: split at single commas, a doubled one being a
/// comma of the value (as QEMU reads them, and as the harness writes paths).
fn qemu_options(arg: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = arg.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ',' if chars.peek() == Some(&',') => {
                chars.next();
                out.last_mut().expect("never empty").push(',');
            }
            ',' => out.push(String::new()),
            c => out.last_mut().expect("never empty").push(c),
        }
    }
    out
}

/// The files a run makes that are not evidence: disks (GiBs), the ISO copy, sockets.
fn disposable_files(dir: &Path) -> Vec<std::path::PathBuf> {
    [
        "disks",
        "live.iso",
        "serial.sock",
        "qmp.sock",
        "OVMF_VARS.fd",
    ]
    .iter()
    .map(|n| dir.join(n))
    .filter(|p| p.symlink_metadata().is_ok())
    .collect()
}

/// Removes one of `disposable_files`: a link as a link, never what it points at; `disks/`
/// only as far as it holds what runs put there (`<disk id>.qcow2` files), so a registration
/// that names another directory costs that directory nothing else.
fn remove(path: &Path) -> std::io::Result<()> {
    let meta = path.symlink_metadata()?;
    if !meta.is_dir() {
        return fs::remove_file(path);
    }
    for entry in fs::read_dir(path)? {
        let entry = entry?;
        let is_disk =
            entry.file_type()?.is_file() && entry.file_name().to_string_lossy().ends_with(".qcow2");
        if is_disk {
            fs::remove_file(entry.path())?;
        }
    }
    fs::remove_dir(path).map_err(|e| {
        std::io::Error::other(format!(
            "{e}: it holds files that are no run's disks, which gc leaves"
        ))
    })
}

/// Stops the run's QEMU: the process the registration names, when it is still that process
/// (same start time) and still runs a disk of the run. A QEMU found only by the run's disks
/// (the registration names none: the harness died as QEMU started) is reported, not killed.
fn stop_qemu(e: &Entry, dry_run: bool, out: &mut Collected) {
    let holders = qemu_processes_of(&e.dir);
    let recorded = e.qemu.filter(|q| q.alive() && holders.contains(&q.pid));
    for pid in holders
        .iter()
        .filter(|p| recorded.is_none_or(|q| q.pid != **p))
    {
        out.errors.push(format!(
            "{}: QEMU process {pid} uses the run's disks but is not the QEMU the run registered: not killed (stop it yourself if it is a leftover)",
            e.id
        ));
    }
    let Some(q) = recorded else { return };
    let what = format!("{}: kill QEMU process {}", e.id, q.pid);
    // SAFETY: kill(2) on the process the registration names, checked to be that very one
    // (pid and start time) a moment ago.
    if !dry_run && unsafe { libc::kill(q.pid as i32, libc::SIGKILL) } != 0 {
        out.errors
            .push(format!("{what}: {}", std::io::Error::last_os_error()));
        return;
    }
    out.actions.push(what);
}

/// Collects one dead run.
fn collect_run(e: &Entry, dry_run: bool, out: &mut Collected) {
    stop_qemu(e, dry_run, out);
    if let (Some(uri), Some(domain)) = (&e.uri, &e.domain) {
        collect_domains(uri, Some(domain), &BTreeSet::new(), dry_run, out);
        // The domain may have died with the harness (auto-destroy): its log is still there.
        if !dry_run && crate::vm::libvirt::runtime::take_qemu_log(domain, &e.dir) {
            out.actions.push(format!(
                "{}: move the QEMU log of {domain} into the run",
                e.id
            ));
        }
        // A run's NAT network and (on a remote host) storage pool have its domain's name.
        collect_networks(uri, Some(domain), &BTreeSet::new(), dry_run, out);
        collect_pools(uri, Some(domain), &BTreeSet::new(), dry_run, out);
    }
    if !e.keep {
        for f in disposable_files(&e.dir) {
            let what = format!("{}: remove {}", e.id, f.display());
            if dry_run {
                out.actions.push(what);
            } else {
                match remove(&f) {
                    Ok(()) => out.actions.push(what),
                    Err(err) => out.errors.push(format!("{what}: {err}")),
                }
            }
        }
    }
    let result = e.dir.join("result.json");
    if e.dir.is_dir() && !result.exists() {
        let what = format!("{}: write {} (verdict error)", e.id, result.display());
        if !dry_run {
            let mut r = RunResult::unreached_error(
                &e.id,
                "the harness stopped before the run ended (killed or crashed); `sno-harness gc` collected what it left",
            );
            r.backend = e.backend.clone();
            if let Err(err) = r.write(&e.dir) {
                out.errors.push(format!("{what}: {err}"));
                return;
            }
        }
        out.actions.push(what);
    }
}

/// Collects every dead run in `registry_dir`, then the harness's domains on `uris` that no live
/// run owns.
pub fn collect(registry_dir: &Path, uris: &[String], dry_run: bool) -> Collected {
    let mut out = Collected::default();
    let mut alive_domains = BTreeSet::new();
    for (file, entry) in registry::entries(registry_dir) {
        let e = match entry {
            Ok(e) => e,
            Err(err) => {
                out.errors.push(format!(
                    "{}: unreadable registration ({err}); remove it by hand",
                    file.display()
                ));
                continue;
            }
        };
        if e.owner_alive() {
            out.alive.push(format!("{} (pid {})", e.id, e.pid));
            alive_domains.extend(e.domain.clone());
            continue;
        }
        collect_run(&e, dry_run, &mut out);
        if !dry_run {
            if let Err(err) = fs::remove_file(&file) {
                out.errors.push(format!("{}: {err}", file.display()));
            }
        }
    }
    for uri in uris {
        sweep(uri, None, &alive_domains, dry_run, &mut out);
    }
    collect_tunnel_dirs(dry_run, &mut out);
    out
}

/// The directories of SSH forwards whose harness was killed: the `ssh` processes died with it
/// (their parent-death signal), the control socket's directory did not.
fn collect_tunnel_dirs(dry_run: bool, out: &mut Collected) {
    let base = Path::new(crate::vm::libvirt::tunnel::CONTROL_BASE);
    for dir in crate::vm::libvirt::tunnel::stale_control_dirs(base) {
        let what = format!("remove {} (a dead SSH control connection's)", dir.display());
        if dry_run {
            out.actions.push(what);
            continue;
        }
        match fs::remove_dir_all(&dir) {
            Ok(()) => out.actions.push(what),
            Err(err) => out.errors.push(format!("{what}: {err}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::time::Duration;

    #[test]
    fn only_a_run_s_own_files_are_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let run = tmp.path().join("run");
        let disks = run.join("disks");
        fs::create_dir_all(&disks).unwrap();
        fs::write(disks.join("install.qcow2"), "x").unwrap();
        fs::write(disks.join("notes.txt"), "mine").unwrap();
        let outside = tmp.path().join("outside");
        fs::write(&outside, "keep").unwrap();
        std::os::unix::fs::symlink(&outside, run.join("live.iso")).unwrap();
        let err = remove(&disks).unwrap_err().to_string();
        assert!(err.contains("no run's disks"), "{err}");
        assert!(!disks.join("install.qcow2").exists());
        assert!(disks.join("notes.txt").exists(), "not a file runs make");
        remove(&run.join("live.iso")).unwrap();
        assert_eq!(
            fs::read_to_string(&outside).unwrap(),
            "keep",
            "the link went, not its target"
        );
    }

    #[test]
    fn a_run_s_qemu_is_told_by_its_own_disks_not_by_a_substring() {
        let argv = |dir: &str| -> Vec<String> {
            vec![
                "/usr/bin/qemu-system-x86_64".into(),
                "-drive".into(),
                format!(
                    "if=none,id=install,format=qcow2,file={dir}/disks/install.qcow2,cache=none"
                ),
            ]
        };
        let (cwd, smoke) = (Path::new("/home/u"), Path::new("/out/smoke"));
        assert!(runs_vm_of(&argv("/out/smoke"), cwd, smoke));
        assert!(
            !runs_vm_of(&argv("/out/smoke-2"), cwd, smoke),
            "another run's QEMU"
        );
        assert!(
            !runs_vm_of(&argv("/out/smoke"), cwd, Path::new("/")),
            "a registration of /"
        );
        assert!(!runs_vm_of(&argv("/out/smoke"), cwd, Path::new("/out")));
        // A relative --out: QEMU got the path as given, the registry holds it absolute.
        let relative = Path::new("/home/u/runs/smoke");
        assert!(runs_vm_of(&argv("runs/smoke"), cwd, relative));
        assert!(!runs_vm_of(
            &argv("runs/smoke"),
            Path::new("/elsewhere"),
            relative
        ));
        // --out ../runs: registered with the `..` resolved, as here.
        assert!(runs_vm_of(&argv("../u/runs/smoke"), cwd, relative));
        let mut not_qemu = argv("/out/smoke");
        not_qemu[0] = "/usr/bin/vim".into();
        assert!(!runs_vm_of(&not_qemu, cwd, smoke));
    }

    #[test]
    fn a_dead_runs_leftovers_go_and_its_evidence_stays() {
        let reg = tempfile::tempdir().unwrap();
        let run = tempfile::tempdir().unwrap();
        fs::create_dir_all(run.path().join("disks")).unwrap();
        fs::write(run.path().join("disks/install.qcow2"), b"x").unwrap();
        fs::write(run.path().join("live.iso"), b"x").unwrap();
        fs::write(run.path().join("serial.log"), b"evidence").unwrap();
        fs::write(run.path().join("events.jsonl"), b"{}").unwrap();
        // A registration of a process that no longer runs.
        let e = Entry {
            id: "smoke".into(),
            pid: u32::MAX - 1,
            pid_start: 1,
            dir: run.path().to_path_buf(),
            backend: "qemu".into(),
            uri: None,
            domain: None,
            keep: false,
            qemu: None,
        };
        fs::write(
            reg.path().join("1-smoke.json"),
            serde_json::to_vec(&e).unwrap(),
        )
        .unwrap();

        let dry = collect(reg.path(), &[], true);
        assert!(dry
            .actions
            .iter()
            .any(|a| a.contains("remove") && a.contains("disks")));
        assert!(
            run.path().join("disks").exists(),
            "a dry run changes nothing"
        );

        let done = collect(reg.path(), &[], false);
        assert!(done.errors.is_empty(), "{:?}", done.errors);
        assert!(!run.path().join("disks").exists());
        assert!(!run.path().join("live.iso").exists());
        assert!(run.path().join("serial.log").exists());
        let r: serde_json::Value =
            serde_json::from_slice(&fs::read(run.path().join("result.json")).unwrap()).unwrap();
        assert_eq!(r["verdict"], "error");
        assert!(r["reason"].as_str().unwrap().contains("gc"));
        assert!(registry::entries(reg.path()).is_empty());
        // Nothing left to do.
        assert!(collect(reg.path(), &[], false).actions.is_empty());
    }

    /// A process whose command line looks like the QEMU of a run in `dir` (argv[0]
    /// `qemu-system-x86_64`, a disk under `dir/disks`); bash stays (the `; :` keeps it from
    /// exec'ing sleep) so the command line stays too.
    fn fake_qemu(dir: &Path) -> std::process::Child {
        let disk = format!("file={}/disks/install.qcow2", dir.display());
        // It waits with bash's builtin read on a pipe this test holds, never forking: a child
        // between fork and exec carries the same command line, and gc would see two QEMUs
        // (it did, once, under load). The pipe's close (the Child dropped) ends it.
        let child = std::process::Command::new("bash")
            .args([
                "-c",
                "exec -a qemu-system-x86_64 bash -c 'read -r -t 60 _; :' x -drive \"$0\"",
                &disk,
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        // Until the exec has happened, the command line is bash's.
        let pid = child.id();
        crate::util::wait::wait_until_succeeds(
            "the fake QEMU's exec",
            Duration::from_secs(10),
            Duration::from_millis(20),
            || match qemu_processes_of(dir).contains(&pid) {
                true => Ok(()),
                false => Err(format!("pid {pid} is not a QEMU of {} yet", dir.display())),
            },
        )
        .unwrap();
        child
    }

    fn dead_entry(dir: &Path, qemu: Option<registry::ProcessId>) -> Entry {
        Entry {
            id: "smoke".into(),
            pid: u32::MAX - 1,
            pid_start: 1,
            dir: dir.to_path_buf(),
            backend: "qemu".into(),
            uri: None,
            domain: None,
            keep: false,
            qemu,
        }
    }

    #[test]
    fn a_disk_path_with_a_comma_is_read_as_qemu_reads_it() {
        assert_eq!(
            qemu_options("file=/o/a,,b/disks/x.qcow2,format=qcow2"),
            vec!["file=/o/a,b/disks/x.qcow2", "format=qcow2"]
        );
        let args: Vec<String> = [
            "qemu-system-x86_64",
            "-drive",
            "file=/o/a,,b/disks/x.qcow2,if=none",
        ]
        .map(String::from)
        .into();
        assert!(runs_vm_of(&args, Path::new("/"), Path::new("/o/a,b")));
        assert!(!runs_vm_of(&args, Path::new("/"), Path::new("/o/a")));
    }

    #[test]
    fn gc_kills_exactly_the_qemu_the_run_registered() {
        let run = tempfile::tempdir().unwrap();
        let mut q = fake_qemu(run.path());
        let id = registry::ProcessId::of(q.id()).unwrap();
        let mut out = Collected::default();
        stop_qemu(&dead_entry(run.path(), Some(id)), true, &mut out);
        assert_eq!(
            out.actions,
            vec![format!("smoke: kill QEMU process {}", id.pid)]
        );
        assert!(id.alive(), "a dry run killed it");
        let mut out = Collected::default();
        stop_qemu(&dead_entry(run.path(), Some(id)), false, &mut out);
        assert!(out.errors.is_empty(), "{:?}", out.errors);
        assert!(!q.wait().unwrap().success());
        // SAFETY: the test's own process group (whatever is left of it).
        unsafe { libc::kill(-(id.pid as i32), libc::SIGKILL) };
    }

    #[test]
    fn a_qemu_the_registration_does_not_name_is_reported_not_killed() {
        let run = tempfile::tempdir().unwrap();
        let mut q = fake_qemu(run.path());
        let me = registry::ProcessId::of(q.id()).unwrap();
        // No QEMU recorded, and one recorded whose pid was reused (another start time).
        let reused = registry::ProcessId {
            pid: me.pid,
            start: me.start + 1,
        };
        for recorded in [None, Some(reused)] {
            let mut out = Collected::default();
            stop_qemu(&dead_entry(run.path(), recorded), false, &mut out);
            assert!(out.actions.is_empty(), "{:?}", out.actions);
            assert_eq!(out.errors.len(), 1, "{:?}", out.errors);
            assert!(out.errors[0].contains("not the QEMU the run registered"));
            assert!(me.alive(), "killed with {recorded:?}");
        }
        // SAFETY: the test's own process group (the fake QEMU's bash).
        unsafe { libc::kill(-(me.pid as i32), libc::SIGKILL) };
        q.wait().unwrap();
    }

    #[test]
    fn a_live_run_is_left_alone() {
        let reg = tempfile::tempdir().unwrap();
        let run = tempfile::tempdir().unwrap();
        fs::create_dir_all(run.path().join("disks")).unwrap();
        let _guard = registry::register(
            reg.path(),
            Entry {
                id: "live".into(),
                pid: 0,
                pid_start: 0,
                dir: run.path().to_path_buf(),
                backend: "qemu".into(),
                uri: None,
                domain: None,
                keep: false,
                qemu: None,
            },
        )
        .unwrap();
        let c = collect(reg.path(), &[], false);
        assert!(c.actions.is_empty(), "{:?}", c.actions);
        assert_eq!(c.alive.len(), 1);
        assert!(run.path().join("disks").exists());
    }
}
