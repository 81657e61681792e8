//! An emergency shell on the console, judged with its cause. On CoreOS a failed initramfs unit
//! (a network boot's rootfs fetch, Ignition) prints `[FAILED] Failed to start ...` and the
//! emergency target's lines first; only then does the emergency shell dump the failed units'
//! journals, after waiting up to 15 s (fedora-coreos-config's emergency shell setup; the
//! contract's "A failed network boot"). The unit's own words (the URL and the HTTP status of
//! coreos-livepxe-rootfs, rdcore's `hash mismatch at offset N`) are in that dump, so a verdict
//! taken at the first emergency line would name no cause. The machine therefore holds the
//! failure and keeps the console's lines for a bounded window, ending it early when the shell
//! shows its prompt.

use super::*;

/// How long the console is read after the emergency line before the run fails: the real
/// emergency shell waits up to 15 s before it dumps the failed units' journals; 10 s more for
/// the dump itself to cross a serial console under TCG.
pub const EMERGENCY_DUMP_WINDOW: Duration = Duration::from_secs(25);

/// At most this many lines of the dump are quoted in the reason (a unit's journal can be long;
/// its last lines say why it failed).
const QUOTED: usize = 12;

/// The emergency line's failure, held while the console may still show its cause.
#[derive(Debug, Clone)]
pub(super) struct Pending {
    since_ms: u64,
    reason: String,
    dump: VecDeque<String>,
}

/// The end of the dump: the shell's or sulogin's prompt (systemd's emergency.service, dracut's
/// emergency shell). Seen, the window ends at once.
fn ends_dump(line: &str) -> bool {
    let l = line.trim();
    l.starts_with("Press Enter to continue")
        || l.starts_with("Press Enter for maintenance")
        || l.starts_with("Give root password for maintenance")
        || l.starts_with("Cannot open access to console")
        || shell_prompt(l)
}

/// A bare shell prompt such as `sh-5.2#` or `:/#`.
fn shell_prompt(l: &str) -> bool {
    let body = l.trim_end_matches(['#', ' ']);
    l.ends_with('#')
        && (body == ":/"
            || body
                .strip_prefix("sh-")
                .or_else(|| body.strip_prefix("bash-"))
                .is_some_and(|v| {
                    !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.')
                }))
}

impl Machine {
    /// An emergency line on the console: the failure waits for the dump (see the module).
    pub(super) fn hold_emergency(&mut self, now_ms: u64, reason: String) {
        if self.emergency.is_none() {
            self.emergency = Some(Pending {
                since_ms: now_ms,
                reason,
                dump: VecDeque::new(),
            });
        }
    }

    /// A console line while an emergency is held: kept for the reason; the shell's prompt ends
    /// the window.
    pub(super) fn emergency_console(&mut self, line: &str, now_ms: u64, out: &mut Vec<Action>) {
        let Some(p) = self.emergency.as_mut() else {
            return;
        };
        if ends_dump(line) {
            self.end_emergency(now_ms, out);
            return;
        }
        let text = line.trim();
        if text.is_empty() || super::super::badness::scan(text).is_some() {
            return;
        }
        if p.dump.len() == QUOTED {
            p.dump.pop_front();
        }
        p.dump.push_back(text.chars().take(300).collect());
    }

    /// At a tick: the held emergency fails the run once its window has passed.
    pub(super) fn emergency_due(&mut self, now_ms: u64, out: &mut Vec<Action>) {
        let Some(p) = &self.emergency else { return };
        if now_ms.saturating_sub(p.since_ms) >= EMERGENCY_DUMP_WINDOW.as_millis() as u64 {
            self.end_emergency(now_ms, out);
        }
    }

    /// Whether an emergency is held (the run's other deadlines wait for it).
    pub(super) fn emergency_held(&self) -> bool {
        self.emergency.is_some()
    }

    fn end_emergency(&mut self, now_ms: u64, out: &mut Vec<Action>) {
        let Some(p) = self.emergency.take() else {
            return;
        };
        let reason = if p.dump.is_empty() {
            format!(
                "{}; the console showed nothing more within {} s of it",
                p.reason,
                now_ms.saturating_sub(p.since_ms).div_ceil(1000)
            )
        } else {
            let quoted: Vec<String> = p.dump.iter().map(|l| format!("{l:?}")).collect();
            format!(
                "{}; then the emergency shell showed the failed units' lines: {}",
                p.reason,
                quoted.join(" ")
            )
        };
        self.fail(now_ms, reason, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dump_ends_at_a_prompt_and_not_at_a_journal_line() {
        for l in [
            "Press Enter to continue.",
            "Give root password for maintenance",
            "sh-5.2#",
            "bash-5.1# ",
            ":/#",
        ] {
            assert!(ends_dump(l), "{l}");
        }
        for l in [
            "coreos-livepxe-rootfs[812]: Couldn't query the server for the rootfs specified by: http://x/rootfs.img",
            "#",
            "sh-#",
            "Displaying logs from failed units: coreos-livepxe-rootfs.service",
        ] {
            assert!(!ends_dump(l), "{l}");
        }
    }
}
