//! `sno-harness console RUN`: the serial console of a registered run, read-only, from the
//! console log the run writes (`serial.log` in its run directory): the run itself holds the
//! VM's console socket, so a second reader never takes it from the run.

use std::io::{Read, Seek, SeekFrom, Write};
use std::time::Duration;

use sno_harness::exit;

use super::error::{bad, Outcome};

/// How much of the log is read at a time, and how often it is looked at again.
const CHUNK: u64 = 64 * 1024;
const POLL: Duration = Duration::from_millis(250);

/// Follow the serial console of a running run (the live boot's kernel and systemd lines, the
/// emergency shell, the installed system's), read-only, until the run ends or Ctrl-C; the
/// console so far first. RUN is a registered run's id or its run directory.
#[derive(clap::Args)]
pub struct ConsoleArgs {
    /// A registered run's id or its run directory.
    run: String,
    /// Print the console so far and stop, without following it.
    #[arg(long)]
    no_follow: bool,
}

pub fn console(a: ConsoleArgs) -> Outcome {
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
