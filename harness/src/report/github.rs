//! GitHub Actions (docs/ci.md): when `$GITHUB_STEP_SUMMARY` names a file, a run's, matrix's or
//! merge's summary.md is appended to it (the job's summary page); when `$GITHUB_ACTIONS` is
//! `true`, each run that did not pass is an `::error` annotation on stdout, so the failures
//! show on the workflow run's page without opening an artifact.

use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::result::{RunResult, Verdict};

/// GitHub shows at most 1 MiB of a step's summary (and refuses the step's whole summary when
/// it is larger): a longer summary.md is cut below that, at a line, saying where the rest is.
pub const MAX_STEP_SUMMARY: usize = 1024 * 1024 - 4096;

/// What the environment asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GithubEnv {
    /// `$GITHUB_STEP_SUMMARY`: the file the runner turns into the job's summary.
    pub step_summary: Option<PathBuf>,
    /// `$GITHUB_ACTIONS=true`: stdout is read for workflow commands.
    pub annotate: bool,
}

impl GithubEnv {
    pub fn from_env() -> GithubEnv {
        GithubEnv {
            step_summary: std::env::var_os("GITHUB_STEP_SUMMARY")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            annotate: std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true"),
        }
    }
}

/// The step summary could not be appended to.
#[derive(Debug, thiserror::Error)]
pub enum StepSummaryError {
    #[error("$GITHUB_STEP_SUMMARY {}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("$GITHUB_STEP_SUMMARY {}: not a regular file; nothing appended", path.display())]
    NotAFile { path: PathBuf },
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
}

/// Appends `markdown` to the file `path` names: opened to append (never truncated), created
/// when absent, without following a link at its name and without waiting on a FIFO; anything
/// but a regular file is refused. At most [`MAX_STEP_SUMMARY`] bytes go in.
pub fn append_step_summary(path: &Path, markdown: &str) -> Result<(), StepSummaryError> {
    let io_err = |source| StepSummaryError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(io_err)?;
    if !file.metadata().map_err(io_err)?.file_type().is_file() {
        return Err(StepSummaryError::NotAFile {
            path: path.to_path_buf(),
        });
    }
    let mut text = cut(markdown, MAX_STEP_SUMMARY);
    if !text.ends_with('\n') {
        text.push('\n');
    }
    file.write_all(text.as_bytes()).map_err(io_err)
}

/// `markdown` whole when it fits in `max` bytes, else its lines that do and a note.
fn cut(markdown: &str, max: usize) -> String {
    if markdown.len() <= max {
        return markdown.to_string();
    }
    const NOTE: &str = "\n\n*(cut here: the whole summary is summary.md in the run directory)*\n";
    let room = max.saturating_sub(NOTE.len());
    let end = markdown[..room].rfind('\n').unwrap_or(0);
    format!("{}{NOTE}", &markdown[..end])
}

/// Appends the summary.md file `summary_md` to the step summary: read up to the limit (a
/// larger one is cut).
pub fn append_summary_file(step_summary: &Path, summary_md: &Path) -> Result<(), StepSummaryError> {
    let read_err = |source| StepSummaryError::Read {
        path: summary_md.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(summary_md).map_err(read_err)?;
    let mut bytes = Vec::new();
    file.take(MAX_STEP_SUMMARY as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(read_err)?;
    append_step_summary(step_summary, &String::from_utf8_lossy(&bytes))
}

/// A workflow command's message: `%`, CR and LF escaped as GitHub's runner unescapes them.
pub fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property value: as a message, and `:` and `,` too (they end it).
pub fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// The `::error` line of each run that did not pass, in order.
pub fn annotations(results: &[RunResult]) -> Vec<String> {
    results
        .iter()
        .filter(|r| r.verdict != Verdict::Pass)
        .map(annotation)
        .collect()
}

fn annotation(r: &RunResult) -> String {
    let title = match &r.failed_phase {
        Some(p) => format!("sno-harness {}: {} {}", r.verdict, r.id, p),
        None => format!("sno-harness {}: {}", r.verdict, r.id),
    };
    let reason = if r.reason.is_empty() {
        format!("run ended with verdict {}", r.verdict)
    } else {
        r.reason.clone()
    };
    format!(
        "::error title={}::{}",
        escape_property(&title),
        escape_data(&reason)
    )
}

/// What `env` asks for, for `results` whose summary.md is `summary_md`: the summary appended
/// (a failure to is returned, to be said: the run's verdict stands) and the annotation lines
/// to print on stdout.
pub fn publish(
    env: &GithubEnv,
    summary_md: &Path,
    results: &[RunResult],
) -> (Vec<String>, Option<StepSummaryError>) {
    let failed = env
        .step_summary
        .as_deref()
        .and_then(|to| append_summary_file(to, summary_md).err());
    let lines = if env.annotate {
        annotations(results)
    } else {
        Vec::new()
    };
    (lines, failed)
}

/// [`publish`] as the environment asks: the annotations printed, a summary that could not be
/// appended said as a warning.
pub fn publish_from_env(summary_md: &Path, results: &[RunResult]) {
    let (lines, failed) = publish(&GithubEnv::from_env(), summary_md, results);
    for line in lines {
        outln!("{line}");
    }
    if let Some(e) = failed {
        errln!("sno-harness: warning: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::tests::{sample_fail, sample_pass};

    #[test]
    fn messages_and_properties_are_escaped_as_the_runner_unescapes_them() {
        assert_eq!(
            escape_data("50% done\r\nnext: a,b"),
            "50%25 done%0D%0Anext: a,b"
        );
        assert_eq!(escape_property("a: b, 5%\n"), "a%3A b%2C 5%25%0A");
    }

    #[test]
    fn each_run_that_did_not_pass_is_one_error_line() {
        let mut err = sample_pass("b");
        err.verdict = Verdict::Error;
        err.reason = "qemu died:\nexit 1, 100%".into();
        let lines = annotations(&[
            sample_pass("a"),
            sample_fail("n,v:me", "bootkube timed out"),
            err,
        ]);
        assert_eq!(
            lines,
            [
                "::error title=sno-harness fail%3A n%2Cv%3Ame bootkube::bootkube timed out",
                "::error title=sno-harness error%3A b::qemu died:%0Aexit 1, 100%25",
            ]
        );
        assert!(lines.iter().all(|l| !l.contains('\n')));
    }

    #[test]
    fn the_summary_is_appended_never_truncating() {
        let d = tempfile::tempdir().unwrap();
        let step = d.path().join("step_summary");
        std::fs::write(&step, "earlier step\n").unwrap();
        let md = d.path().join("summary.md");
        std::fs::write(&md, "# run\n| a | b |").unwrap();
        let env = GithubEnv {
            step_summary: Some(step.clone()),
            annotate: false,
        };
        let (lines, failed) = publish(&env, &md, &[sample_fail("x", "y")]);
        assert!(lines.is_empty() && failed.is_none(), "{failed:?}");
        publish(&env, &md, &[]);
        assert_eq!(
            std::fs::read_to_string(&step).unwrap(),
            "earlier step\n# run\n| a | b |\n# run\n| a | b |\n"
        );
        // Absent: created.
        let new = d.path().join("new");
        append_step_summary(&new, "x").unwrap();
        assert_eq!(std::fs::read_to_string(&new).unwrap(), "x\n");
    }

    #[test]
    fn a_link_or_a_fifo_in_place_of_the_summary_is_not_written_through() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        assert!(append_step_summary(&link, "x").is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        let fifo = d.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        // No reader: an open that waited would hang here; a FIFO is no summary anyway.
        let e = append_step_summary(&fifo, "x").unwrap_err();
        assert!(e.to_string().contains("fifo"), "{e}");
    }

    #[test]
    fn a_summary_larger_than_github_shows_is_cut_at_a_line() {
        let line = "| permutation | fail | bootkube timed out |\n";
        let big = line.repeat(MAX_STEP_SUMMARY / line.len() + 10);
        let d = tempfile::tempdir().unwrap();
        let step = d.path().join("s");
        append_step_summary(&step, &big).unwrap();
        let got = std::fs::read_to_string(&step).unwrap();
        assert!(got.len() <= MAX_STEP_SUMMARY + 1, "{}", got.len());
        assert!(got.ends_with("the whole summary is summary.md in the run directory)*\n"));
        assert!(got
            .split("\n\n*(cut")
            .next()
            .unwrap()
            .ends_with("timed out |"));
    }
}
