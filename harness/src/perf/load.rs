//! Reading a perf directory back: `OUT/perf.json`, for `report` and `report --compare`.

use std::path::{Path, PathBuf};

use super::model::{PerfReport, PERF_JSON, SCHEMA};
use crate::util::input_file;

/// Whether `dir` is the output of `sno-harness perf`: it holds a perf.json (whatever its
/// state, even a FIFO or a directory: reading it is what tells whether it is usable, and says
/// why not).
pub fn is_perf_dir(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join(PERF_JSON)).is_ok()
}

/// Reading a perf.json failed; every case names the file and what is wrong with it.
#[derive(Debug, thiserror::Error)]
pub enum PerfJsonError {
    /// Missing, not a regular file, larger than a perf.json may be, not UTF-8.
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        source: input_file::Problem,
    },
    #[error("{path}: not JSON: {source}")]
    NotJson {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{path}: no \"schema\" string: not a perf.json (expected schema {SCHEMA:?})")]
    NoSchema { path: PathBuf },
    #[error("{path}: schema {found:?}, expected {SCHEMA:?} (written by another version of sno-harness?)")]
    Schema { path: PathBuf, found: String },
    #[error("{path}: not a valid {SCHEMA} document: {source}")]
    Invalid {
        path: PathBuf,
        source: serde_json::Error,
    },
}

/// `dir/perf.json`.
pub fn read_perf_dir(dir: &Path) -> Result<PerfReport, PerfJsonError> {
    read_perf_json(&dir.join(PERF_JSON))
}

/// Reads a perf.json, checking its schema tag before its shape: a document of another schema
/// version would otherwise fail on some field, and the message would hide the real cause.
pub fn read_perf_json(path: &Path) -> Result<PerfReport, PerfJsonError> {
    let text = input_file::read_text(path, input_file::PERF).map_err(|e| PerfJsonError::Read {
        path: e.path,
        source: e.problem,
    })?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|source| PerfJsonError::NotJson {
            path: path.to_owned(),
            source,
        })?;
    match value.get("schema").and_then(|s| s.as_str()) {
        None => {
            return Err(PerfJsonError::NoSchema {
                path: path.to_owned(),
            })
        }
        Some(s) if s != SCHEMA => {
            return Err(PerfJsonError::Schema {
                path: path.to_owned(),
                found: s.to_string(),
            })
        }
        Some(_) => {}
    }
    serde_json::from_value(value).map_err(|source| PerfJsonError::Invalid {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::testdata;

    #[test]
    fn reads_what_perf_writes() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!is_perf_dir(dir.path()));
        let rep = testdata::report(vec![testdata::perm("a", &[("assets", &[1.0, 2.0])])]);
        std::fs::write(dir.path().join(PERF_JSON), rep.to_json()).unwrap();
        assert!(is_perf_dir(dir.path()));
        assert_eq!(read_perf_dir(dir.path()).unwrap(), rep);
    }

    #[test]
    fn every_failure_names_the_file_and_the_cause() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(PERF_JSON);
        let err = |text: &str| {
            std::fs::write(&path, text).unwrap();
            let e = read_perf_json(&path).unwrap_err();
            assert!(e.to_string().contains(path.to_str().unwrap()), "{e}");
            e
        };
        assert!(matches!(err("{\"schema\":"), PerfJsonError::NotJson { .. }));
        assert!(matches!(err("[1, 2]"), PerfJsonError::NoSchema { .. }));
        let e = err(r#"{"schema": "sno-harness/perf/v2"}"#);
        assert!(matches!(e, PerfJsonError::Schema { .. }));
        assert!(e.to_string().contains("sno-harness/perf/v2"), "{e}");
        let e = err(r#"{"schema": "sno-harness/perf/v1", "repeat": "five"}"#);
        assert!(matches!(e, PerfJsonError::Invalid { .. }), "{e}");
        let missing = dir.path().join("nope").join(PERF_JSON);
        assert!(matches!(
            read_perf_json(&missing).unwrap_err(),
            PerfJsonError::Read { .. }
        ));
    }
}
