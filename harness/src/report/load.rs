//! Reading a run directory back: the `result.json` of every permutation in it.

use std::io;
use std::path::{Path, PathBuf};

use crate::result::{ResultError, RunResult, RESULT_FILE};

/// A run's result and where its directory is, relative to the directory the reports go to:
/// the permutation id for a matrix (`OUT/<id>/`), `.` when the reports sit next to the one
/// result.json. Report links to artifacts start from here.
#[derive(Clone, Debug, PartialEq)]
pub struct LocatedRun {
    pub dir: String,
    pub result: RunResult,
}

impl LocatedRun {
    /// A run in the directory named after its id, as the run directory contract lays it out.
    pub fn in_own_dir(result: RunResult) -> Self {
        LocatedRun {
            dir: result.id.clone(),
            result,
        }
    }
}

/// Reading a run directory failed; every case is bad input naming the path at fault.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{path}: not a directory")]
    NotADirectory { path: PathBuf },
    #[error(
        "{path}: not a run directory: no {RESULT_FILE} in it nor in any directory directly under it"
    )]
    NoResults { path: PathBuf },
    #[error(transparent)]
    Result(#[from] ResultError),
}

/// The runs of a run directory: `DIR/result.json` when DIR is one run's directory, else every
/// `DIR/*/result.json`, sorted by directory name. Subdirectories without a result.json
/// (a permutation killed before it wrote one, or unrelated) are skipped; an unreadable or
/// invalid result.json is an error naming the file, never silently dropped.
pub fn load_run_dir(dir: &Path) -> Result<Vec<LocatedRun>, LoadError> {
    let io_err = |source| LoadError::Io {
        path: dir.to_owned(),
        source,
    };
    let meta = std::fs::metadata(dir).map_err(io_err)?;
    if !meta.is_dir() {
        return Err(LoadError::NotADirectory {
            path: dir.to_owned(),
        });
    }
    let single = dir.join(RESULT_FILE);
    if single.exists() {
        return Ok(vec![LocatedRun {
            dir: ".".into(),
            result: RunResult::read(&single)?,
        }]);
    }

    let mut subdirs: Vec<(String, PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io_err)? {
        let entry = entry.map_err(io_err)?;
        let name = entry.file_name();
        // Report links are relative hrefs: a name that is not UTF-8 could not be linked.
        let Some(name) = name.to_str() else { continue };
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        if path.is_dir() && path.join(RESULT_FILE).exists() {
            subdirs.push((name.to_string(), path.join(RESULT_FILE)));
        }
    }
    if subdirs.is_empty() {
        return Err(LoadError::NoResults {
            path: dir.to_owned(),
        });
    }
    subdirs.sort();
    subdirs
        .into_iter()
        .map(|(name, file)| {
            Ok(LocatedRun {
                dir: name,
                result: RunResult::read(&file)?,
            })
        })
        .collect()
}

/// The most raw journals named per run (a run that rebooted in a loop has many).
const MAX_RAW_JOURNALS: usize = 32;
/// The most directory entries looked at for them.
const MAX_ENTRIES: usize = 10_000;

/// The evidence a run leaves that its result.json does not list, found in its directory
/// `dir`: `harness.log` (a `run`'s own log) as `harness-log`, and each boot's raw journal
/// (`journal-<n>-<boot>.json.gz`, guest/journal.rs `RawJournal`) as `journal-raw-<n>`, in
/// boot order. Regular files only: a link or a FIFO planted there is no evidence to name.
pub fn files_on_disk(dir: &Path) -> Vec<(String, String)> {
    let regular = |name: &str| {
        std::fs::symlink_metadata(dir.join(name)).is_ok_and(|m| m.file_type().is_file())
    };
    let mut raw: Vec<(u32, String)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.take(MAX_ENTRIES).flatten() {
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            if let Some(n) = raw_journal_boot(&name) {
                if entry.file_type().is_ok_and(|t| t.is_file()) {
                    raw.push((n, name));
                }
            }
        }
    }
    raw.sort();
    raw.truncate(MAX_RAW_JOURNALS);
    let mut found: Vec<(String, String)> = raw
        .into_iter()
        .map(|(n, name)| (format!("journal-raw-{n}"), name))
        .collect();
    let log = crate::util::harness_log::HARNESS_LOG_FILE;
    if regular(log) {
        found.push(("harness-log".to_string(), log.to_string()));
    }
    found
}

/// The boot number of a raw journal's file name (`journal-<n>-<boot>.json.gz`).
fn raw_journal_boot(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("journal-")?.strip_suffix(".json.gz")?;
    let (n, boot) = rest.split_once('-')?;
    let ok = !boot.is_empty() && boot.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    ok.then(|| n.parse().ok()).flatten()
}

/// `runs` (their directories relative to `base`) with [`files_on_disk`] added to the
/// artifacts their result.json lists, so that the reports link them too. A matrix's
/// permutations log into the matrix's harness.log (`base/harness.log`): a permutation
/// directly under `base` without its own links that one.
pub fn with_files_on_disk(runs: &[LocatedRun], base: &Path) -> Vec<LocatedRun> {
    let log = crate::util::harness_log::HARNESS_LOG_FILE;
    let shared_log =
        std::fs::symlink_metadata(base.join(log)).is_ok_and(|m| m.file_type().is_file());
    runs.iter()
        .map(|r| {
            let mut r = r.clone();
            for (name, file) in files_on_disk(&base.join(&r.dir)) {
                r.result.artifacts.entry(name).or_insert(file);
            }
            let directly_under = Path::new(&r.dir).components().count() == 1
                && matches!(
                    Path::new(&r.dir).components().next(),
                    Some(std::path::Component::Normal(_))
                );
            if shared_log && directly_under {
                r.result
                    .artifacts
                    .entry("harness-log".into())
                    .or_insert_with(|| format!("../{log}"));
            }
            r
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::tests::{sample_fail, sample_pass};

    fn write_run(root: &Path, dir: &str, r: &RunResult) {
        let d = root.join(dir);
        std::fs::create_dir_all(&d).unwrap();
        r.write(&d).unwrap();
    }

    #[test]
    fn matrix_directory_sorted_skipping_dirs_without_result() {
        let out = tempfile::tempdir().unwrap();
        write_run(out.path(), "b.nvme", &sample_fail("b.nvme", "x"));
        write_run(out.path(), "a.virtio", &sample_pass("a.virtio"));
        std::fs::create_dir(out.path().join("killed-before-result")).unwrap();
        std::fs::write(out.path().join("summary.md"), "old").unwrap();
        let runs = load_run_dir(out.path()).unwrap();
        let dirs: Vec<&str> = runs.iter().map(|r| r.dir.as_str()).collect();
        assert_eq!(dirs, ["a.virtio", "b.nvme"]);
        assert_eq!(runs[1].result.id, "b.nvme");
    }

    #[test]
    fn single_run_directory_is_its_own_permutation() {
        let out = tempfile::tempdir().unwrap();
        sample_pass("smoke").write(out.path()).unwrap();
        let runs = load_run_dir(out.path()).unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].dir, ".");
    }

    #[test]
    fn bad_input_names_the_path() {
        let out = tempfile::tempdir().unwrap();
        let err = load_run_dir(out.path()).unwrap_err();
        assert!(matches!(err, LoadError::NoResults { .. }));
        assert!(err.to_string().contains("not a run directory"));

        let missing = out.path().join("nope");
        assert!(matches!(
            load_run_dir(&missing).unwrap_err(),
            LoadError::Io { .. }
        ));
        let file = out.path().join("file");
        std::fs::write(&file, "").unwrap();
        assert!(matches!(
            load_run_dir(&file).unwrap_err(),
            LoadError::NotADirectory { .. }
        ));

        write_run(out.path(), "good", &sample_pass("good"));
        std::fs::create_dir(out.path().join("broken")).unwrap();
        std::fs::write(out.path().join("broken").join(RESULT_FILE), "{\"schema\":").unwrap();
        let err = load_run_dir(out.path()).unwrap_err();
        assert!(matches!(err, LoadError::Result(ResultError::Json { .. })));
        assert!(
            err.to_string().contains("broken/result.json"),
            "names the file: {err}"
        );
    }

    #[test]
    fn a_permutation_links_the_matrixs_harness_log() {
        let out = tempfile::tempdir().unwrap();
        std::fs::write(out.path().join("harness.log"), "x").unwrap();
        std::fs::create_dir(out.path().join("a")).unwrap();
        let runs = [
            LocatedRun::in_own_dir(sample_pass("a")),
            LocatedRun {
                dir: ".".into(),
                result: sample_pass("alone"),
            },
        ];
        let found = with_files_on_disk(&runs, out.path());
        assert_eq!(found[0].result.artifacts["harness-log"], "../harness.log");
        assert!(out.path().join("a").join("../harness.log").is_file());
        // A run alone in the directory has it as its own.
        assert_eq!(found[1].result.artifacts["harness-log"], "harness.log");
    }

    #[test]
    fn the_files_a_result_does_not_list_are_found_on_disk() {
        let d = tempfile::tempdir().unwrap();
        for f in [
            "journal-2-0f1e.json.gz",
            "journal-1-ab12.json.gz",
            "journal-live.txt",
            "journal-x.json.gz",
            "harness.log",
        ] {
            std::fs::write(d.path().join(f), "x").unwrap();
        }
        std::os::unix::fs::symlink("/etc/passwd", d.path().join("journal-3-cd.json.gz")).unwrap();
        assert_eq!(
            files_on_disk(d.path()),
            [
                (
                    "journal-raw-1".to_string(),
                    "journal-1-ab12.json.gz".to_string()
                ),
                (
                    "journal-raw-2".to_string(),
                    "journal-2-0f1e.json.gz".to_string()
                ),
                ("harness-log".to_string(), "harness.log".to_string()),
            ]
        );
    }
}
