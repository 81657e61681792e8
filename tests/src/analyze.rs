//! After each scenario's run: `sno-harness analyze` of the run directory must give the run's
//! own verdict and failed phase, and of every log bundle the run gathered (the live system's,
//! made by its installer-gather.sh; the installed system's log-bundle-bootstrap) a verdict that
//! agrees as far as the bundle's evidence reaches: the same verdict and phase, or no verdict
//! with the failed phase beyond what it saw. So every fault the suite runs tests `analyze`.

use std::path::{Path, PathBuf};

use serde_json::Value;
use sno_harness::flow::phase::Phase;
use sno_harness::result::RunResult;

/// The binary, beside this test's (nextest builds the workspace's binaries first).
fn harness_binary() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("sno-harness"))
        .ok_or("no directory above the test binary")?;
    match bin.is_file() {
        true => Ok(bin),
        false => Err(format!(
            "{} is not built (cargo build -p sno-harness)",
            bin.display()
        )),
    }
}

/// `sno-harness analyze PATH --json`: its exit code and report (None when it refused the
/// input, with its stderr).
fn analyze(path: &Path) -> Result<(i32, Result<Value, String>), String> {
    let out = std::process::Command::new(harness_binary()?)
        .arg("analyze")
        .arg(path)
        .arg("--json")
        .output()
        .map_err(|e| format!("sno-harness analyze: {e}"))?;
    let code = out.status.code().unwrap_or(-1);
    if code == 2 {
        return Ok((code, Err(String::from_utf8_lossy(&out.stderr).into_owned())));
    }
    let report = serde_json::from_slice(&out.stdout).map_err(|e| {
        format!(
            "analyze {}: not JSON ({e}): {}",
            path.display(),
            String::from_utf8_lossy(&out.stdout)
        )
    })?;
    Ok((code, Ok(report)))
}

fn verdict_code(verdict: &str) -> i32 {
    match verdict {
        "pass" => 0,
        "fail" => 1,
        "error" => 4,
        _ => 5,
    }
}

/// The run directory's replay and every gathered bundle's analysis, checked against the run.
pub fn check(dir: &Path, faults: &[String], r: &RunResult) -> Result<String, String> {
    let mut said = vec![check_run_dir(dir, r)?];
    for bundle in [
        "gather/live/log-bundle.tar.gz",
        "gather/installed/log-bundle-bootstrap.tar.gz",
    ] {
        let path = dir.join(bundle);
        if path.is_file() {
            said.push(check_bundle(&path, faults, r)?);
        }
    }
    Ok(said.join("; "))
}

fn check_run_dir(dir: &Path, r: &RunResult) -> Result<String, String> {
    let (code, report) = analyze(dir)?;
    let report = report.map_err(|e| format!("analyze refused the run directory: {e}"))?;
    let verdict = report["verdict"].as_str().unwrap_or("");
    let phase = report["failed_phase"].as_str();
    let agrees = report["recorded"]["agrees"] == true;
    if verdict != r.verdict.as_str()
        || phase != r.failed_phase.as_deref()
        || !agrees
        || code != verdict_code(verdict)
    {
        return Err(format!(
            "analyze of the run directory: {verdict} at {phase:?} (exit {code}, agrees {agrees}), the run: {} at {:?}; notes: {}",
            r.verdict, r.failed_phase, report["notes"]
        ));
    }
    Ok(format!(
        "analyze of the run directory: {verdict}{}",
        at(phase)
    ))
}

fn at(phase: Option<&str>) -> String {
    phase.map(|p| format!(" at {p}")).unwrap_or_default()
}

/// A bundle's analysis agrees with the run as far as it sees: the same verdict and phase, or
/// no verdict with every phase it saw pass before the run's failed phase, which it must not
/// claim. The gather-hang fault leaves a FIFO among the records, which a bundle cannot hold:
/// analyze must refuse it, naming the member.
fn check_bundle(path: &Path, faults: &[String], r: &RunResult) -> Result<String, String> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (code, report) = analyze(path)?;
    let report = match report {
        Ok(rep) => rep,
        Err(stderr)
            if faults.iter().any(|f| f == "gather-hang")
                && stderr.contains("minisno-stalled.json")
                && stderr.contains("a FIFO") =>
        {
            return Ok(format!("analyze refused {name}: its FIFO record"));
        }
        Err(stderr) => return Err(format!("analyze refused {name} (exit {code}): {stderr}")),
    };
    if report["services"].as_array().is_none_or(|s| s.is_empty()) {
        return Err(format!(
            "analyze of {name} found no service records: {}",
            report["evidence"]
        ));
    }
    let verdict = report["verdict"].as_str().unwrap_or("");
    let phase = report["failed_phase"].as_str();
    if verdict == r.verdict.as_str() && phase == r.failed_phase.as_deref() {
        return Ok(format!("analyze of {name}: {verdict}{}", at(phase)));
    }
    let failed = r.failed_phase.as_deref().and_then(Phase::from_name);
    let seen = |status: &str| -> Vec<Phase> {
        report["phases"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["status"] == status)
            .filter_map(|p| p["name"].as_str().and_then(Phase::from_name))
            .collect()
    };
    let passed = seen("pass");
    let short = verdict == "no-verdict"
        && failed
            .is_some_and(|f| passed.iter().all(|p| *p < f) && seen("no-evidence").contains(&f));
    if !short || code != 5 {
        return Err(format!(
            "analyze of {name}: {verdict}{} (exit {code}), the run: {}{}; phases passed {passed:?}; reason: {}",
            at(phase),
            r.verdict,
            at(r.failed_phase.as_deref()),
            report["reason"]
        ));
    }
    let last = passed.last().map_or("none".to_string(), |p| p.to_string());
    Ok(format!(
        "analyze of {name}: no verdict, its evidence ends after {last}"
    ))
}
