//! Commands the assisted steps run on the live system: every argument one shell word, as root,
//! under a time limit on the guest (coreutils' `timeout`) and on the SSH session, and at most
//! [`OUTPUT_CAP`] bytes of output read back. The agent runs the same tools as root on the host
//! it installs (assisted-installer's `src/ops/ops.go`, ExecPrivilegeCommand).

use std::time::Duration;

use crate::guest::ssh::SshSession;

/// What a cleanup or boot-entry command may print that the harness reads: lists of volume
/// groups, arrays and partitions are a few lines.
pub const OUTPUT_CAP: u64 = 64 << 10;
/// How long one such command may take on the guest: `vgremove` or `mdadm --stop` on a loaded
/// TCG guest takes seconds, a hung device never ends.
pub const COMMAND_LIMIT: Duration = Duration::from_secs(120);
/// `timeout`'s exit code when it ended the command.
const TIMED_OUT: i32 = 124;

/// One word for `sh -c`, whatever it holds.
pub fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/-_.=:,+@".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// `args` as root under [`COMMAND_LIMIT`], stderr with stdout.
pub fn as_root(args: &[&str]) -> String {
    let words: Vec<String> = args.iter().map(|a| quote(a)).collect();
    format!(
        "sudo -n timeout {} {} 2>&1",
        COMMAND_LIMIT.as_secs(),
        words.join(" ")
    )
}

/// What a command printed and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    pub status: i32,
    pub output: String,
}

impl Ran {
    /// Its last non-empty line, for a failure's message.
    pub fn last_line(&self) -> &str {
        self.output
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("no output")
    }
}

/// Runs `args` as root (see [`as_root`]); an error is the session's, or the time limit.
pub fn run(s: &SshSession, args: &[&str]) -> Result<Ran, String> {
    let command = as_root(args);
    // The session's reads may wait as long as the guest lets the command run.
    let out = s
        .with_io_timeout(COMMAND_LIMIT + Duration::from_secs(15), |s| {
            s.exec_bytes(&command, OUTPUT_CAP)
        })
        .map_err(|e| format!("`{}`: {e}", args.join(" ")))?;
    if out.status == TIMED_OUT {
        return Err(format!(
            "`{}` did not end within {} s",
            args.join(" "),
            COMMAND_LIMIT.as_secs()
        ));
    }
    Ok(Ran {
        status: out.status,
        output: String::from_utf8_lossy(&out.stdout).into_owned(),
    })
}

/// Runs `args` as root; anything but exit 0 is an error quoting its last line.
pub fn succeed(s: &SshSession, args: &[&str]) -> Result<String, String> {
    let ran = run(s, args)?;
    if ran.status != 0 {
        return Err(format!(
            "`{}` exited {}: {}",
            args.join(" "),
            ran.status,
            ran.last_line()
        ));
    }
    Ok(ran.output)
}

/// Whether the live system has `program` on root's PATH.
pub fn has_program(s: &SshSession, program: &str) -> Result<bool, String> {
    Ok(run(s, &["sh", "-c", &format!("command -v {}", quote(program))])?.status == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hostile_word_stays_one_word() {
        assert_eq!(quote("/dev/vda"), "/dev/vda");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("x'; rm -rf /; '"), r"'x'\''; rm -rf /; '\'''");
        assert_eq!(quote("$(reboot)"), "'$(reboot)'");
        assert_eq!(quote(""), "''");
    }

    #[test]
    fn a_root_command_has_a_time_limit_and_its_words_quoted() {
        assert_eq!(
            as_root(&[
                "efibootmgr",
                "-L",
                "Red Hat Enterprise Linux",
                "-l",
                r"\EFI\BOOT\BOOTX64.EFI"
            ]),
            r"sudo -n timeout 120 efibootmgr -L 'Red Hat Enterprise Linux' -l '\EFI\BOOT\BOOTX64.EFI' 2>&1"
        );
    }

    #[test]
    fn the_last_line_skips_blank_ones() {
        let ran = Ran {
            status: 5,
            output: "  Logical volume x in use.\n  Error: busy\n\n".into(),
        };
        assert_eq!(ran.last_line(), "Error: busy");
        let silent = Ran {
            status: 1,
            output: String::new(),
        };
        assert_eq!(silent.last_line(), "no output");
    }
}
