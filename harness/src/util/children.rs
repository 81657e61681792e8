//! Helper processes a run starts and waits for (the fixture build, the installer,
//! coreos-installer) in process groups of their own, recorded here, so that an interrupt can
//! stop them at once: a blocking wait cannot be cancelled, but the processes it waits for can be
//! killed, and then the wait returns.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::Mutex;

static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

fn groups() -> std::sync::MutexGuard<'static, Vec<i32>> {
    GROUPS.lock().unwrap_or_else(|e| e.into_inner())
}

/// A started child, its process group recorded until it is dropped (after the wait).
pub struct Tracked {
    child: Option<Child>,
    pgid: i32,
}

impl Tracked {
    pub fn child(&mut self) -> &mut Child {
        self.child
            .as_mut()
            .expect("present until waited for with output")
    }

    /// `Child::wait_with_output`, the group forgotten once it returns.
    pub fn wait_with_output(mut self) -> std::io::Result<std::process::Output> {
        self.child
            .take()
            .expect("present until waited for with output")
            .wait_with_output()
    }
}

/// How a wait with a deadline ended.
#[derive(Debug)]
pub enum Waited {
    /// The child exited (with whatever it printed).
    Exited(std::process::Output),
    /// The deadline passed first: the child's group was stopped (SIGTERM, SIGKILL after
    /// [`GRACE`]); what it had printed until then.
    Late(std::process::Output),
}

impl Tracked {
    /// Like [`Tracked::wait_with_output`], but when `deadline` passes first the child's process
    /// group is stopped, this child's only, not the other runs' helpers (a matrix runs several
    /// in one process). Its output is drained on threads meanwhile, so that a chatty child
    /// cannot block on a full pipe.
    pub fn wait_with_output_until(
        mut self,
        deadline: std::time::Instant,
    ) -> std::io::Result<Waited> {
        let mut child = self
            .child
            .take()
            .expect("present until waited for with output");
        let out = drain(child.stdout.take());
        let err = drain(child.stderr.take());
        let mut late = false;
        let status = loop {
            if let Some(st) = child.try_wait()? {
                break st;
            }
            if std::time::Instant::now() >= deadline {
                late = true;
                break stop_group(self.pgid, &mut child)?;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let output = std::process::Output {
            status,
            stdout: out.join().unwrap_or_default(),
            stderr: err.join().unwrap_or_default(),
        };
        Ok(if late {
            Waited::Late(output)
        } else {
            Waited::Exited(output)
        })
    }
}

/// Reads a pipe to its end on a thread of its own.
fn drain<R: std::io::Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
        }
        buf
    })
}

/// SIGTERM to one group, SIGKILL for what is left of it after [`GRACE`]; returns how its
/// leader, `child`, ended. The leader is reaped as soon as it exits: a zombie still counts as
/// a member of its group, and would hold the wait for the whole grace.
fn stop_group(pgid: i32, child: &mut Child) -> std::io::Result<std::process::ExitStatus> {
    // SAFETY: kill(2) on a process group this process created.
    unsafe { libc::kill(-pgid, libc::SIGTERM) };
    let deadline = std::time::Instant::now() + GRACE;
    let mut status = None;
    while std::time::Instant::now() < deadline {
        if status.is_none() {
            status = child.try_wait()?;
        }
        if let Some(st) = status.filter(|_| !group_alive(pgid)) {
            return Ok(st);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: as above.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    match status {
        Some(st) => Ok(st),
        None => child.wait(),
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        groups().retain(|g| *g != self.pgid);
    }
}

/// Spawns `cmd` as the leader of a new process group and records the group.
pub fn spawn(cmd: &mut Command) -> std::io::Result<Tracked> {
    cmd.process_group(0);
    let child = cmd.spawn()?;
    let pgid = child.id() as i32;
    groups().push(pgid);
    Ok(Tracked {
        child: Some(child),
        pgid,
    })
}

/// How long helpers get to clean up after SIGTERM (unmount, detach loop devices) before
/// SIGKILL. mmdebstrap and the image recipe undo their mounts on SIGTERM; killed outright they
/// would leave mounts inside the build directory.
pub const GRACE: std::time::Duration = std::time::Duration::from_secs(4);

fn group_alive(pgid: i32) -> bool {
    // SAFETY: signal 0 only probes.
    unsafe { libc::kill(-pgid, 0) == 0 }
}

/// Stops every recorded process group (the helpers and everything they started): SIGTERM,
/// then SIGKILL for what is left after `GRACE`. Returns how many groups there were.
pub fn kill_all() -> usize {
    let g = groups().clone();
    for pgid in &g {
        // SAFETY: kill(2) on a process group this process created.
        unsafe { libc::kill(-pgid, libc::SIGTERM) };
    }
    let deadline = std::time::Instant::now() + GRACE;
    while g.iter().any(|p| group_alive(*p)) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    for pgid in &g {
        // SAFETY: as above.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
    g.len()
}

/// Mount points at or below `dir` (from /proc/self/mountinfo).
pub fn mounts_below(dir: &std::path::Path) -> Vec<String> {
    let Ok(abs) = std::fs::canonicalize(dir) else {
        return Vec::new();
    };
    let prefix = abs.display().to_string();
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(|m| m.replace("\\040", " "))
        .filter(|m| m == &prefix || m.starts_with(&format!("{prefix}/")))
        .collect()
}

/// Why a build directory stays.
#[derive(Debug, thiserror::Error)]
pub enum RemoveBuildDirError {
    #[error("not removing {}: still mounted inside: {}", dir.display(), mounts.join(", "))]
    StillMounted {
        dir: std::path::PathBuf,
        mounts: Vec<String>,
    },
    #[error("removing {}: {source}", dir.display())]
    Io {
        dir: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// `remove_dir_all`, unless something is mounted inside (a killed chroot build can leave
/// /proc or /dev mounted there: removing through them would touch the host's). Then the
/// directory stays and the mounts are named.
pub fn remove_build_dir(dir: &std::path::Path) -> Result<(), RemoveBuildDirError> {
    let mounts = mounts_below(dir);
    if !mounts.is_empty() {
        return Err(RemoveBuildDirError::StillMounted {
            dir: dir.to_path_buf(),
            mounts,
        });
    }
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(RemoveBuildDirError::Io {
            dir: dir.to_path_buf(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn kill_all_stops_a_helper_and_its_children_and_the_wait_returns() {
        // A shell that starts a grandchild and waits: both must go.
        let mut t = spawn(Command::new("sh").args(["-c", "sleep 300 & wait"])).unwrap();
        let pgid = t.child().id() as i32;
        std::thread::sleep(Duration::from_millis(100));
        assert!(kill_all() >= 1);
        let start = Instant::now();
        let status = t.child().wait().unwrap();
        assert!(!status.success());
        assert!(start.elapsed() < Duration::from_secs(5));
        // Nothing of the group remains.
        std::thread::sleep(Duration::from_millis(100));
        assert!(!group_alive(pgid), "the grandchild survived");
        drop(t);
        assert!(!groups().contains(&pgid));
    }

    #[test]
    fn a_helper_that_ignores_sigterm_is_killed_after_the_grace() {
        let mut t =
            spawn(Command::new("sh").args(["-c", "trap '' TERM; sleep 300 & wait"])).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let start = Instant::now();
        kill_all();
        t.child().wait().unwrap();
        assert!(start.elapsed() >= GRACE - Duration::from_millis(100));
    }

    #[test]
    fn a_wait_past_its_deadline_stops_only_that_group_and_keeps_its_output() {
        let other = spawn(Command::new("sleep").arg("30")).unwrap();
        let late = spawn(
            Command::new("sh")
                .args(["-c", "echo started; sleep 300 & wait"])
                .stdout(std::process::Stdio::piped()),
        )
        .unwrap();
        let pgid = late.pgid;
        let start = Instant::now();
        let Waited::Late(out) = late
            .wait_with_output_until(Instant::now() + Duration::from_millis(300))
            .unwrap()
        else {
            panic!("a sleep of 300 s ended before a deadline of 300 ms");
        };
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "{:?}",
            start.elapsed()
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout), "started\n");
        std::thread::sleep(Duration::from_millis(100));
        assert!(!group_alive(pgid), "the grandchild survived the deadline");
        assert!(group_alive(other.pgid), "another run's helper was stopped");
        // SAFETY: the test's own child group.
        unsafe { libc::kill(-other.pgid, libc::SIGKILL) };
    }

    #[test]
    fn a_wait_that_ends_in_time_returns_the_exit_and_all_output() {
        let t = spawn(
            Command::new("sh")
                .args(["-c", "head -c 200000 /dev/zero | tr '\\0' x; exit 3"])
                .stdout(std::process::Stdio::piped()),
        )
        .unwrap();
        let Waited::Exited(out) = t
            .wait_with_output_until(Instant::now() + Duration::from_secs(30))
            .unwrap()
        else {
            panic!("late");
        };
        assert_eq!(out.status.code(), Some(3));
        // More than a pipe holds: drained while waiting.
        assert_eq!(out.stdout.len(), 200000);
    }

    #[test]
    fn a_build_dir_with_nothing_mounted_inside_is_removed() {
        let d = tempfile::tempdir().unwrap();
        let inner = d.path().join("partial");
        std::fs::create_dir_all(inner.join("rootfs/proc")).unwrap();
        assert!(mounts_below(&inner).is_empty());
        remove_build_dir(&inner).unwrap();
        assert!(!inner.exists());
        remove_build_dir(&inner).unwrap();
        // / always has mounts below it.
        assert!(!mounts_below(std::path::Path::new("/")).is_empty());
    }
}
