//! `sno-harness console RUN`: the serial console of a registered run, read-only, from the
//! console log the run writes (`serial.log` in its run directory): the run itself holds the
//! VM's console socket, so a second reader never takes it from the run. With `--interactive`,
//! the terminal on the console (console_session).

use std::io::{Read, Seek, SeekFrom, Write};
use std::time::Duration;

use sno_harness::exit;

use super::console_text::EscapeKey;
use super::error::{bad, Outcome};

/// How much of the log is read at a time, and how often it is looked at again.
const CHUNK: u64 = 64 * 1024;
const POLL: Duration = Duration::from_millis(250);

/// Follow the serial console of a running run (the live boot's kernel and systemd lines, the
/// emergency shell, the installed system's), read-only, until the run ends or Ctrl-C; the
/// console so far first. With --interactive, type into it. RUN is a registered run's id or its
/// run directory.
#[derive(clap::Args)]
pub struct ConsoleArgs {
    /// A registered run's id or its run directory.
    run: String,
    /// Print the console so far and stop, without following it.
    #[arg(long, conflicts_with = "interactive")]
    no_follow: bool,
    /// Type into the console from this terminal (raw: every key goes to the guest) and see its
    /// output as it comes, until the escape key; while the run goes on, or on the VM a kept
    /// run left running (QEMU, a local libvirt domain). Needs a terminal on stdin.
    #[arg(short, long)]
    interactive: bool,
    /// The key that ends an interactive session, written ^] (Ctrl-], the default, as virsh
    /// console and telnet have it) or ^x (Ctrl-X).
    #[arg(long, value_name = "KEY", requires = "interactive")]
    escape: Option<EscapeKey>,
}

pub fn console(a: ConsoleArgs) -> Outcome {
    if a.interactive {
        if !super::console_session::stdin_is_terminal() {
            return Err(bad(
                "console --interactive types from a terminal, and stdin is not one; without \
                 --interactive the console is followed read-only",
            ));
        }
        let entry = super::ssh::find(&a.run)?;
        return super::console_session::interactive(&entry, a.escape.unwrap_or_default());
    }
    let entry = super::ssh::find(&a.run)?;
    let path = entry.dir.join("serial.log");
    let mut f = std::fs::File::open(&path).map_err(|e| {
        bad(format!(
            "run {}: no console log yet ({}: {e})",
            entry.id,
            path.display()
        ))
    })?;
    let mut at = 0u64;
    let mut out = std::io::stdout().lock();
    loop {
        let len = f.metadata().map(|m| m.len()).unwrap_or(at);
        if len > at {
            f.seek(SeekFrom::Start(at))
                .map_err(|e| bad(e.to_string()))?;
            let mut buf = Vec::new();
            let n = (&mut f).take(CHUNK).read_to_end(&mut buf).unwrap_or(0);
            at += n as u64;
            // The guest writes what it likes: no control sequence of its reaches the terminal.
            let text: String = String::from_utf8_lossy(&buf)
                .chars()
                .map(|c| match c {
                    '\n' | '\t' => c,
                    c if c.is_control() => ' ',
                    c => c,
                })
                .collect();
            if out
                .write_all(text.as_bytes())
                .and_then(|_| out.flush())
                .is_err()
            {
                return Ok(exit::OK); // the reader went away (a closed pipe)
            }
            continue;
        }
        if a.no_follow || !entry.owner_alive() {
            return Ok(exit::OK);
        }
        std::thread::sleep(POLL);
    }
}
