//! `sno-harness gc`: collects what runs that did not end cleanly left behind (the harness
//! killed with SIGKILL, a second Ctrl-C, a crash, the host rebooted). This is the registry's
//! half; the libvirt objects are swept by `vm::libvirt::gc`.
//!
//! A run registers itself (`registry`) before it makes anything; a registration whose
//! process is gone marks a run to collect. For each: the VM (a QEMU process still holding the run
//! directory, a libvirt domain still carrying the run's id), the disks, the copy of the live ISO,
//! the sockets; the run directory keeps its logs and gets a `result.json` saying what happened
//! if it has none. Then every libvirt domain, NAT network and storage pool with the harness's
//! metadata whose run is not alive is destroyed too, so objects of runs that never registered
//! (or whose registry was lost) go.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super as registry;
use super::in_use;
use super::Entry;
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
fn disposable_files(dir: &Path) -> Vec<PathBuf> {
    [
        "disks",
        "live.iso",
        "serial.sock",
        "qmp.sock",
        crate::guest::console_input::SOCKET,
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
/// Returns the pid killed (with `dry_run`, the one that would be).
fn stop_qemu(e: &Entry, dry_run: bool, out: &mut Collected) -> Option<u32> {
    let holders = qemu_of_run(e);
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
    let q = recorded?;
    let what = format!("{}: kill QEMU process {}", e.id, q.pid);
    // SAFETY: kill(2) on the process the registration names, checked to be that very one
    // (pid and start time) a moment ago.
    if !dry_run && unsafe { libc::kill(q.pid as i32, libc::SIGKILL) } != 0 {
        out.errors
            .push(format!("{what}: {}", std::io::Error::last_os_error()));
        return None;
    }
    out.actions.push(what);
    Some(q.pid)
}

/// Everything of the run that gc removes: the disposable files of its directory and its
/// private directory.
fn removable(e: &Entry) -> Vec<PathBuf> {
    let mut all = disposable_files(&e.dir);
    all.extend(e.private.clone().filter(|p| p.symlink_metadata().is_ok()));
    all
}

/// The processes that still use the run's files: a QEMU known by its command line (one of
/// another user's is not seen by its descriptors), any process with one of them open. `killed`
/// is the QEMU gc just killed: its descriptors and then its command line go as it dies, waited
/// for a few seconds (past that, it counts like any other). Dry, it counts as gone.
fn users_of_files(e: &Entry, killed: Option<u32>, dry_run: bool) -> Vec<String> {
    let files = removable(e);
    if let (Some(pid), false) = (killed, dry_run) {
        let _ = crate::util::wait::wait_until_succeeds(
            "the killed QEMU's exit",
            Duration::from_secs(10),
            Duration::from_millis(50),
            // Gone from both views: a process between SIGKILL and its exit may hold no file
            // (its descriptors closed first, or it opened none) yet still show its command line.
            || match qemu_of_run(e).contains(&pid)
                || in_use::open_holders(&files, &[])
                    .iter()
                    .any(|h| h.pid == pid)
            {
                true => Err(()),
                false => Ok(()),
            },
        );
    }
    let except: Vec<u32> = killed.filter(|_| dry_run).into_iter().collect();
    let mut users: Vec<String> = qemu_of_run(e)
        .into_iter()
        .filter(|p| !except.contains(p))
        .map(|p| format!("QEMU process {p} runs a disk of the run"))
        .collect();
    users.extend(
        in_use::open_holders(&files, &except)
            .iter()
            .map(ToString::to_string),
    );
    users
}

/// The QEMU processes that run a disk of the run: in its private directory (where a run keeps
/// its disks), or in its run directory (where runs of older versions kept them).
fn qemu_of_run(e: &Entry) -> Vec<u32> {
    let mut pids = qemu_processes_of(&e.dir);
    if let Some(private) = &e.private {
        pids.extend(qemu_processes_of(private));
    }
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// Removes the run's private directory whole: only a directory (not a link) of this user.
fn remove_private(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let m = dir.symlink_metadata()?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if !m.is_dir() || m.uid() != me {
        return Err(std::io::Error::other(format!(
            "not a directory of this user (uid {me}): left as it is"
        )));
    }
    fs::remove_dir_all(dir)
}

/// Removes (or, dry, names) what a dead run leaves that is not evidence.
fn remove_leftovers(e: &Entry, dry_run: bool, out: &mut Collected) {
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
    let Some(private) = e.private.as_ref().filter(|p| p.symlink_metadata().is_ok()) else {
        return;
    };
    let what = format!(
        "{}: remove {} (the run's private directory)",
        e.id,
        private.display()
    );
    match dry_run {
        true => out.actions.push(what),
        false => match remove_private(private) {
            Ok(()) => out.actions.push(what),
            Err(err) => out.errors.push(format!("{what}: {err}")),
        },
    }
}

/// A machine its BMC booted for the run: powered off and its media ejected, the credentials
/// from the file recorded or the environment. A BMC that refuses is gc's error, quoted.
fn power_off_through(id: &str, b: &registry::BmcRecord, dry_run: bool, out: &mut Collected) {
    let what = format!(
        "{id}: power off the machine of the BMC {} and eject its media",
        b.url
    );
    if !dry_run {
        let done = b
            .trust()
            .and_then(|trust| {
                crate::vm::bmc_boot::settings_of(&b.url, b.credentials.as_deref(), trust)
            })
            .and_then(|s| crate::vm::bmc_boot::power_off_and_eject(&s));
        if let Err(err) = done {
            out.errors.push(format!("{what}: {err}"));
            return;
        }
    }
    out.actions.push(what);
}

/// Collects one dead run; `false` when a process still uses its files, which are left (and no
/// result.json written) for a later gc.
fn collect_run(e: &Entry, dry_run: bool, out: &mut Collected) -> bool {
    let killed = stop_qemu(e, dry_run, out);
    if let Some(b) = &e.bmc {
        power_off_through(&e.id, b, dry_run, out);
    }
    if let (Some(uri), Some(domain)) = (&e.uri, &e.domain) {
        collect_domains(uri, Some(domain), &BTreeSet::new(), dry_run, out);
        // The domain may have died with the harness (auto-destroy): its log is still there.
        if !dry_run && crate::vm::libvirt::paths::take_qemu_log(domain, &e.dir) {
            out.actions.push(format!(
                "{}: move the QEMU log of {domain} into the run",
                e.id
            ));
        }
        // A run's NAT network and (on a remote host) storage pool have its domain's name.
        collect_networks(uri, Some(domain), &BTreeSet::new(), dry_run, out);
        collect_pools(uri, Some(domain), &BTreeSet::new(), dry_run, out);
    }
    let users = users_of_files(e, killed, dry_run);
    if !users.is_empty() {
        out.errors.push(format!(
            "{}: its disks, ISO copy and sockets are left, and no result.json written, while a process uses them: {}; run gc again once it has ended",
            e.id,
            users.join("; ")
        ));
        return false;
    }
    if !e.keep {
        remove_leftovers(e, dry_run, out);
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
                return true;
            }
        }
        out.actions.push(what);
    }
    true
}

/// Collects the dead run of the registration `file`, unless its directory is held by a live
/// run: then the registration is stale (the directory was reused) and only it goes. The
/// directory's lock is kept while gc collects, so that no run claims it meanwhile.
fn collect_registered(file: &Path, e: &Entry, dry_run: bool, out: &mut Collected) {
    let _lock = match in_use::lock_run_dir(&e.dir) {
        Ok(lock) => lock,
        Err(held @ in_use::LockError::Held { .. }) => {
            out.alive.push(format!(
                "{}: {} is {held} (the registration, of the dead pid {}, is stale)",
                e.id,
                e.dir.display(),
                e.pid
            ));
            remove_registration(
                file,
                "stale: its run directory belongs to a live run now",
                dry_run,
                out,
            );
            return;
        }
        Err(err) => {
            out.errors.push(format!("{}: left alone: {err}", e.id));
            return;
        }
    };
    if collect_run(e, dry_run, out) {
        remove_registration(file, "", dry_run, out);
    }
}

/// Removes a registration file; `why` (when not empty) is said as an action.
fn remove_registration(file: &Path, why: &str, dry_run: bool, out: &mut Collected) {
    if !why.is_empty() {
        out.actions.push(format!(
            "remove the registration {} ({why})",
            file.display()
        ));
    }
    if dry_run {
        return;
    }
    if let Err(err) = fs::remove_file(file) {
        out.errors.push(format!("{}: {err}", file.display()));
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
                    "{}: unusable registration ({err}): not acted on; remove it by hand",
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
        collect_registered(&file, &e, dry_run, &mut out);
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
            paused: false,
            qemu: None,
            private: None,
            bmc: None,
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
            paused: false,
            qemu,
            private: None,
            bmc: None,
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
    fn the_registered_qemu_of_a_run_whose_disks_are_private_is_killed() {
        let (run, private) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut q = fake_qemu(private.path());
        let id = registry::ProcessId::of(q.id()).unwrap();
        let mut entry = dead_entry(run.path(), Some(id));
        entry.private = Some(private.path().to_path_buf());
        let mut out = Collected::default();
        stop_qemu(&entry, false, &mut out);
        assert_eq!(
            (out.actions, out.errors),
            (vec![format!("smoke: kill QEMU process {}", id.pid)], vec![])
        );
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

    /// Writes a registration of a run whose harness is dead.
    fn register_dead(reg: &Path, e: &Entry) -> std::path::PathBuf {
        let file = reg.join("1-smoke.json");
        fs::write(&file, serde_json::to_vec(e).unwrap()).unwrap();
        file
    }

    /// A run directory with what a run leaves: a disk, the ISO copy, a log.
    fn run_with_disk(dir: &Path) -> std::path::PathBuf {
        fs::create_dir_all(dir.join("disks")).unwrap();
        let disk = dir.join("disks/install.qcow2");
        fs::write(&disk, b"disk").unwrap();
        fs::write(dir.join("live.iso"), b"iso").unwrap();
        fs::write(dir.join("serial.log"), b"evidence").unwrap();
        disk
    }

    #[test]
    fn a_directory_a_live_run_holds_is_left_alone_under_a_stale_registration() {
        let reg = tempfile::tempdir().unwrap();
        let run = tempfile::tempdir().unwrap();
        let disk = run_with_disk(run.path());
        // A live run's claim: run.lock, flock'ed by an open file description of its own (this
        // test's, as the run's would be), holding its pid.
        let lock_path = run.path().join(super::super::run_dir::LOCK_FILE);
        fs::write(&lock_path, "4242\n").unwrap();
        let lock = fs::File::open(&lock_path).unwrap();
        lock.try_lock().unwrap();
        let file = register_dead(reg.path(), &dead_entry(run.path(), None));

        let dry = collect(reg.path(), &[], true);
        assert!(
            dry.actions.iter().all(|a| !a.contains("disks")),
            "{:?}",
            dry.actions
        );
        let c = collect(reg.path(), &[], false);
        assert!(disk.exists(), "the live run's disk was removed");
        assert!(run.path().join("live.iso").exists());
        assert!(
            !run.path().join("result.json").exists(),
            "a bogus result.json"
        );
        assert!(
            c.alive
                .iter()
                .any(|a| a.contains("held by a live run (pid 4242)")),
            "{:?}",
            c.alive
        );
        assert!(c.errors.is_empty(), "{:?}", c.errors);
        assert!(!file.exists(), "the stale registration stays");
        assert!(
            c.actions.iter().any(|a| a.contains("stale")),
            "{:?}",
            c.actions
        );
        drop(lock);
    }

    #[test]
    fn a_file_a_process_still_has_open_is_left_and_reported() {
        let reg = tempfile::tempdir().unwrap();
        let run = tempfile::tempdir().unwrap();
        let disk = run_with_disk(run.path());
        // Not a QEMU by its command line: only its open file says it uses the disk.
        let mut holder = std::process::Command::new("sleep")
            .arg("60")
            .stdin(fs::File::open(&disk).unwrap())
            .spawn()
            .unwrap();
        let file = register_dead(reg.path(), &dead_entry(run.path(), None));

        let c = collect(reg.path(), &[], false);
        assert!(
            disk.exists(),
            "removed while process {} has it open",
            holder.id()
        );
        assert!(run.path().join("live.iso").exists());
        assert!(!run.path().join("result.json").exists());
        let said = c.errors.join("\n");
        assert!(
            said.contains(&format!("process {}", holder.id())) && said.contains("install.qcow2"),
            "{said}"
        );
        assert!(
            file.exists(),
            "the registration goes before its run is collected"
        );

        holder.kill().unwrap();
        holder.wait().unwrap();
        let c = collect(reg.path(), &[], false);
        assert!(c.errors.is_empty(), "{:?}", c.errors);
        assert!(!run.path().join("disks").exists());
        assert!(run.path().join("result.json").exists());
        assert!(!file.exists());
    }

    #[test]
    fn a_dead_run_s_private_directory_goes_whole_unless_in_use_kept_or_not_its_own() {
        let reg = tempfile::tempdir().unwrap();
        let run = tempfile::tempdir().unwrap();
        let base = tempfile::tempdir().unwrap();
        let private = base.path().join("private");
        fs::create_dir_all(private.join("disks")).unwrap();
        let disk = private.join("disks/install.qcow2");
        fs::write(&disk, b"disk").unwrap();
        fs::write(private.join("live.iso"), b"iso").unwrap();
        let mut e = dead_entry(run.path(), None);
        e.private = Some(private.clone());

        // In use: left, said, and the registration stays for a later gc.
        let mut holder = std::process::Command::new("sleep")
            .arg("60")
            .stdin(fs::File::open(&disk).unwrap())
            .spawn()
            .unwrap();
        let file = register_dead(reg.path(), &e);
        let c = collect(reg.path(), &[], false);
        assert!(disk.exists());
        assert!(
            c.errors
                .join("\n")
                .contains(&format!("process {}", holder.id())),
            "{:?}",
            c.errors
        );
        assert!(file.exists());
        holder.kill().unwrap();
        holder.wait().unwrap();

        // Kept (--keep): the disks are wanted.
        e.keep = true;
        register_dead(reg.path(), &e);
        let c = collect(reg.path(), &[], false);
        assert!(c.errors.is_empty(), "{:?}", c.errors);
        assert!(disk.exists(), "a kept run's disks went");

        // A link where the directory was: the link's target is not the run's to remove.
        e.keep = false;
        let moved = base.path().join("someone-elses");
        fs::rename(&private, &moved).unwrap();
        std::os::unix::fs::symlink(&moved, &private).unwrap();
        register_dead(reg.path(), &e);
        let c = collect(reg.path(), &[], false);
        assert!(
            c.errors.join("\n").contains("not a directory of this user"),
            "{:?}",
            c.errors
        );
        assert!(moved.join("disks/install.qcow2").exists());
        fs::remove_file(&private).unwrap();
        fs::rename(&moved, &private).unwrap();

        // Dead, not kept, not in use: gone whole, the run directory's evidence stays.
        fs::write(run.path().join("serial.log"), b"evidence").unwrap();
        register_dead(reg.path(), &e);
        let dry = collect(reg.path(), &[], true);
        assert!(dry.actions.iter().any(|a| a.contains("private directory")));
        assert!(private.exists(), "a dry run changes nothing");
        let c = collect(reg.path(), &[], false);
        assert!(c.errors.is_empty(), "{:?}", c.errors);
        assert!(!private.exists());
        assert!(run.path().join("serial.log").exists());
        assert!(run.path().join("result.json").exists());
    }

    #[test]
    fn the_registered_qemu_is_killed_and_then_the_disks_go() {
        let reg = tempfile::tempdir().unwrap();
        let run = tempfile::tempdir().unwrap();
        run_with_disk(run.path());
        let mut q = fake_qemu(run.path());
        let id = registry::ProcessId::of(q.id()).unwrap();
        register_dead(reg.path(), &dead_entry(run.path(), Some(id)));
        // Dry, the QEMU it would kill does not hold the disks back.
        let dry = collect(reg.path(), &[], true);
        assert!(dry.errors.is_empty(), "{:?}", dry.errors);
        assert!(dry
            .actions
            .iter()
            .any(|a| a.contains("remove") && a.contains("disks")));
        assert!(id.alive());
        let c = collect(reg.path(), &[], false);
        assert!(c.errors.is_empty(), "{:?}", c.errors);
        assert!(!q.wait().unwrap().success());
        assert!(!run.path().join("disks").exists());
        // SAFETY: the test's own process group (whatever is left of it).
        unsafe { libc::kill(-(id.pid as i32), libc::SIGKILL) };
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
                paused: false,
                qemu: None,
                private: None,
                bmc: None,
            },
        )
        .unwrap();
        let c = collect(reg.path(), &[], false);
        assert!(c.actions.is_empty(), "{:?}", c.actions);
        assert_eq!(c.alive.len(), 1);
        assert!(run.path().join("disks").exists());
    }
}
