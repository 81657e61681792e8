//! Facts about processes read from /proc: how a run, a domain's metadata and gc tell a live
//! owner from a pid that has been reused.

/// Whether the process `pid` that started at `start` (see [`process_start`]) still runs: it
/// exists, is that same process, and is not a zombie waiting to be reaped.
pub fn still_runs(pid: u32, start: u64) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
        return false;
    };
    let mut fields = after.split_whitespace();
    let state = fields.next().unwrap_or("X");
    let started = fields.nth(18).and_then(|s| s.parse::<u64>().ok());
    !matches!(state, "Z" | "X" | "x") && started == Some(start)
}

/// The start time of a process (field 22 of /proc/PID/stat, in clock ticks since boot), None
/// when it does not exist. A pid and its start time together name one process for good.
pub fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may contain spaces: count after it.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}
