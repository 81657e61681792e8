//! `sno-harness list`: what ships with the harness. The scenarios (with their description and
//! faults), the matrices (with their size under each strategy) and the fixture's faults, read
//! from the checkout (`$SNO_HARNESS_SRC`, else the one the binary was built from).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use sno_harness::exit;
use sno_harness::scenario::{self, matrix};

use super::error::Outcome;

/// List the shipped scenarios, matrices (with their permutation counts) and fixture faults.
#[derive(clap::Args)]
pub struct ListArgs {
    /// Print JSON: {"scenarios": [...], "matrices": [...], "faults": [...]}.
    #[arg(long)]
    json: bool,
}

pub fn list(a: ListArgs) -> Outcome {
    let root = sno_harness::fixture::source_dir().join("scenarios");
    let listing = listing(&root);
    if a.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&listing).expect("serialisable")
        );
    } else {
        print_text(&listing);
    }
    Ok(exit::OK)
}

/// Every `.toml` under `root` and `root/faults`, sorted, as scenarios or matrices; a file that
/// does not load is listed with its error, not left out.
fn listing(root: &Path) -> Value {
    let (mut scenarios, mut matrices) = (Vec::new(), Vec::new());
    for path in toml_files(root) {
        let shown = path
            .strip_prefix(root.parent().unwrap_or(root))
            .unwrap_or(&path);
        let file = shown.display().to_string();
        if matrix::is_matrix_file(&path) {
            matrices.push(match matrix::load(&path) {
                Ok(m) => json!({
                    "file": file, "name": m.name, "description": m.description,
                    "strategy": m.strategy.name(), "permutations": m.permutations.len(),
                    "full_product": m.full_count,
                    "axes": m.axes.iter().map(|x| json!({"key": x.key, "values": x.labels.len()})).collect::<Vec<_>>(),
                }),
                Err(e) => json!({"file": file, "error": e.to_string()}),
            });
        } else {
            scenarios.push(match scenario::load(&path) {
                Ok(s) => json!({
                    "file": file, "name": s.name, "description": s.description,
                    "profile": s.profile.name(),
                    "faults": s.fixture.as_ref().map(|f| f.faults.clone()).unwrap_or_default(),
                    "expect": s.expect.as_ref().map_or("pass", |e| e.verdict.as_str()),
                    "expectation": s.expect.as_ref().map(|e| e.summary()),
                }),
                Err(e) => json!({"file": file, "error": e.to_string()}),
            });
        }
    }
    let faults: Vec<Value> = sno_fixture_faults::FAULTS
        .iter()
        .map(|f| json!({"name": f.form(), "summary": f.summary}))
        .collect();
    json!({"scenarios": scenarios, "matrices": matrices, "faults": faults})
}

fn toml_files(root: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = [root.to_path_buf(), root.join("faults")]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|d| d.flatten().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
}

fn print_text(listing: &Value) {
    let empty = Vec::new();
    let items = |k: &str| listing[k].as_array().unwrap_or(&empty).clone();
    let s = |v: &Value, k: &str| v[k].as_str().unwrap_or("").to_string();
    // One column for all three lists, as wide as the longest name: a name is never cut, and
    // the second column starts at the same place on every line.
    let width = ["scenarios", "matrices"]
        .iter()
        .flat_map(|k| items(k))
        .map(|v| s(&v, "file"))
        .chain(items("faults").iter().map(|f| s(f, "name")))
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0);
    outln!("scenarios:");
    for sc in items("scenarios") {
        outln!("  {:<width$}  {}", s(&sc, "file"), scenario_text(&sc));
    }
    outln!("matrices:");
    for m in items("matrices") {
        let what = match s(&m, "error") {
            e if !e.is_empty() => format!("does not load: {e}"),
            _ => format!(
                "{} permutations ({}; the full product has {})",
                m["permutations"],
                s(&m, "strategy"),
                m["full_product"]
            ),
        };
        outln!("  {:<width$}  {what}", s(&m, "file"));
    }
    outln!("fixture faults:");
    for f in items("faults") {
        outln!("  {:<width$}  {}", s(&f, "name"), s(&f, "summary"));
    }
}

/// A scenario's second column: its faults and whole expectation when it has either (a fault
/// scenario), else its description.
fn scenario_text(sc: &Value) -> String {
    if let Some(e) = sc["error"].as_str() {
        return format!("does not load: {e}");
    }
    let faults: Vec<&str> = sc["faults"]
        .as_array()
        .map(|f| f.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let faults = if faults.is_empty() {
        String::new()
    } else {
        format!("faults {}, ", faults.join(", "))
    };
    match sc["expectation"].as_str() {
        Some(e) => format!("{faults}expects {e}"),
        None if !faults.is_empty() => format!("{faults}expects pass"),
        None => sc["description"].as_str().unwrap_or("").to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_files_are_listed_with_their_faults_and_sizes() {
        let root = sno_harness::fixture::source_dir().join("scenarios");
        let l = listing(&root);
        let scenarios = l["scenarios"].as_array().unwrap();
        let smoke = scenarios
            .iter()
            .find(|s| s["file"] == "scenarios/smoke.toml")
            .expect("smoke listed");
        assert_eq!(smoke["name"], "smoke");
        assert_eq!(smoke["expect"], "pass");
        let cut = scenarios
            .iter()
            .find(|s| s["file"] == "scenarios/faults/journal-cut.toml")
            .expect("a fault scenario listed");
        assert_eq!(cut["faults"], json!(["journal-cut"]));
        // The [network] example is among the scenarios that load (all of them, below).
        assert!(scenarios.iter().any(
            |s| s["file"] == "scenarios/static-ipv4-nat.toml" && s["name"] == "static-ipv4-nat"
        ));
        assert!(
            scenarios.iter().all(|s| s["error"].is_null()),
            "{scenarios:?}"
        );
        let disks = l["matrices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["file"] == "scenarios/disks.toml")
            .expect("the disks matrix");
        assert!(disks["permutations"].as_u64().unwrap() > 0);
        assert_eq!(
            l["faults"].as_array().unwrap().len(),
            sno_fixture_faults::FAULTS.len()
        );
    }

    #[test]
    fn a_file_that_does_not_load_is_listed_with_its_error() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("broken.toml"), "name = [").unwrap();
        let l = listing(d.path());
        let broken = &l["scenarios"][0];
        assert!(
            broken["error"].as_str().unwrap().contains("broken.toml"),
            "{broken}"
        );
    }
}
