use std::fs;

use super::*;
use crate::report::copy_run::Why;
use crate::report::junit::JunitFlavour;
use crate::report::run_dir::{summarise, write_reports_for};
use crate::result::tests::{sample_fail, sample_pass};
use crate::result::RunResult;

fn plan(ids: &[String]) -> PlanIdentity {
    PlanIdentity {
        matrix: "m".into(),
        files_sha256: "0".repeat(64),
        strategy: "full".into(),
        filter: None,
        ids: ids.to_vec(),
        shard: None,
        overrides: Vec::new(),
    }
}

/// A shard directory of `plan_ids` that ran `runs`, each in the directory named by its id
/// (or by `dir_of` when the id is no name).
fn shard(dir: &Path, plan_ids: &[String], runs: &[RunResult]) {
    fs::create_dir_all(dir).unwrap();
    for r in runs {
        let d = dir.join(dir_of(&r.id));
        fs::create_dir_all(&d).unwrap();
        // Not RunResult::write: its fsync would take minutes for the largest plan.
        fs::write(d.join(RESULT_FILE), r.to_json()).unwrap();
    }
    let located: Vec<LocatedRun> = runs.iter().cloned().map(LocatedRun::in_own_dir).collect();
    let mut s = Summary::build(&located, &[]);
    s.plan = Some(plan(plan_ids));
    fs::write(dir.join(SUMMARY_JSON_FILE), s.to_json()).unwrap();
}

/// Where a shard keeps a run whose id cannot be a directory name.
fn dir_of(id: &str) -> String {
    if permutation_id_problem(id).is_none() {
        id.to_string()
    } else {
        "hostile".into()
    }
}

fn ids(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[test]
fn ids_that_are_no_names_are_refused_naming_the_file() {
    let t = tempfile::tempdir().unwrap();
    let victim = t.path().join("victim");
    for bad in [
        victim.to_str().unwrap(),
        "../victim",
        "a/../../victim",
        "..",
        "summary.json",
    ] {
        // In the plan and run: the plan's summary.json is read first.
        let s1 = t.path().join("s1");
        let _ = fs::remove_dir_all(&s1);
        shard(&s1, &ids(&["a", bad]), &[sample_pass(bad)]);
        let e = merge(std::slice::from_ref(&s1), &t.path().join("out")).unwrap_err();
        let m = e.to_string();
        assert!(matches!(e, MergeError::BadId { .. }), "{bad}: {m}");
        assert!(
            m.starts_with(&format!("{}/summary.json:", s1.display())),
            "{m}"
        );
        assert!(m.contains(&format!("{bad:?}")), "{m}");
        // Only in a result.json: named there.
        fs::remove_dir_all(&s1).unwrap();
        shard(&s1, &ids(&["a"]), &[sample_pass(bad)]);
        let m = merge(std::slice::from_ref(&s1), &t.path().join("out"))
            .unwrap_err()
            .to_string();
        assert!(
            m.starts_with(&format!("{}/hostile/result.json:", s1.display())),
            "{m}"
        );
        assert!(m.contains(&format!("{bad:?} is")), "{m}");
    }
    assert!(!victim.exists());
}

#[test]
fn a_plan_naming_an_id_twice_or_too_many_ids_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let s1 = t.path().join("s1");
    shard(&s1, &ids(&["a", "b", "a"]), &[sample_pass("a")]);
    let e = merge(std::slice::from_ref(&s1), t.path()).unwrap_err();
    assert!(
        matches!(&e, MergeError::TwiceInPlan { id, .. } if id == "a"),
        "{e}"
    );
    assert!(e.to_string().contains("summary.json"), "{e}");
    let s2 = t.path().join("s2");
    let many: Vec<String> = (0..=MAX_PERMUTATIONS).map(|i| format!("p{i}")).collect();
    shard(&s2, &many, &[sample_pass("p1")]);
    let e = merge(&[s2], t.path()).unwrap_err();
    assert!(matches!(e, MergeError::PlanTooLarge { .. }), "{e}");
}

#[test]
fn copies_follow_no_link_of_an_earlier_permutation() {
    let t = tempfile::tempdir().unwrap();
    let ssh = t.path().join("ssh");
    fs::create_dir(&ssh).unwrap();
    let s1 = t.path().join("s1");
    shard(
        &s1,
        &ids(&["a", "b"]),
        &[sample_pass("a"), sample_pass("b")],
    );
    // A link in one permutation towards a directory the attacker wants written.
    std::os::unix::fs::symlink(&ssh, s1.join("a/keys")).unwrap();
    fs::create_dir(s1.join("b/keys")).unwrap();
    fs::write(s1.join("b/keys/authorized_keys"), "attacker").unwrap();
    let out = t.path().join("out");
    fs::create_dir(&out).unwrap();
    let mut merged = merge(&[s1], &out).unwrap();
    merged.check_copy().unwrap();
    let skipped = merged.copy_into(&out).unwrap();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0].path, Path::new("a/keys"));
    assert_eq!(skipped[0].why, Why::Link);
    assert_eq!(fs::read_dir(&ssh).unwrap().count(), 0);
    assert!(!out.join("a/keys").exists());
    assert!(out.join("b/keys/authorized_keys").is_file());
}

#[test]
fn a_linked_permutation_directory_is_refused_before_a_copy() {
    let t = tempfile::tempdir().unwrap();
    let s1 = t.path().join("s1");
    shard(&s1, &ids(&["a"]), &[]);
    let elsewhere = t.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    sample_pass("a").write(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, s1.join("a")).unwrap();
    let merged = merge(std::slice::from_ref(&s1), t.path()).unwrap();
    let e = merged.check_copy().unwrap_err();
    assert!(matches!(e, MergeError::LinkedRun { .. }), "{e}");
    assert!(
        e.to_string().contains(&format!("{}/a", s1.display())),
        "{e}"
    );
}

/// A plan of the most permutations a matrix may have (four axes of ten values), with the
/// longest ids, every run failing with a long reason, in shards deep in a CI system's
/// artifacts: its merged summary.json is read back whole, and `report` (which reads the
/// runs and that summary) of the copied merge keeps the plan.
#[test]
fn the_merged_summary_of_the_largest_plan_is_read_back() {
    let t = tempfile::tempdir().unwrap();
    let axes = [
        "disks.install.bus",
        "vm.firmware",
        "disks.install.sector_size",
        "vm.vcpus",
    ];
    // Labels of 62, 62, 62 and 61 characters: ids of the 250 a matrix allows.
    let label = |a: usize, digit: usize| {
        let width = if a == 3 { 61 } else { 62 };
        format!("{a}{digit}{}", "x".repeat(width - 2))
    };
    let labels_of = |i: usize| -> Vec<String> {
        (0..4)
            .map(|a| label(a, i / 10usize.pow(a as u32) % 10))
            .collect()
    };
    let plan_ids: Vec<String> = (0..MAX_PERMUTATIONS)
        .map(|i| labels_of(i).join("."))
        .collect();
    assert_eq!(plan_ids[0].len(), 250);
    // Longer than summary.json quotes (QUOTED_REASON): the summary is as large as it gets.
    let reason = "bootkube: the API did not answer; last seen ".repeat(25);
    let runs: Vec<RunResult> = (0..MAX_PERMUTATIONS)
        .map(|i| {
            let mut r = sample_fail(&plan_ids[i], &reason);
            r.params = axes
                .iter()
                .map(|k| k.to_string())
                .zip(labels_of(i))
                .collect();
            r
        })
        .collect();
    let (half_a, half_b) = runs.split_at(MAX_PERMUTATIONS / 2);
    let deep = t
        .path()
        .join("artifacts/from-the-ci-system/job-12345/shards");
    shard(&deep.join("shard-1"), &plan_ids, half_a);
    shard(&deep.join("shard-2"), &plan_ids, half_b);
    drop(runs);
    let inputs = [deep.join("shard-1"), deep.join("shard-2")];
    // Linked where they are: the longest paths.
    let linked = t.path().join("linked");
    let merged = merge(&inputs, &linked).unwrap();
    let mut summary = summarise(&merged.runs, &merged.axes);
    summary.plan = Some(merged.plan.clone());
    fs::create_dir(&linked).unwrap();
    let file = linked.join(SUMMARY_JSON_FILE);
    fs::write(&file, summary.to_json_readable().unwrap()).unwrap();
    let back = Summary::load(&file).unwrap();
    assert_eq!(back.permutations.len(), MAX_PERMUTATIONS);
    assert!(back.permutations[0].path.contains("job-12345"));
    assert_eq!(back.coverage[0].values.len(), 10);
    assert_eq!(back.plan.unwrap().ids, plan_ids);
    // Copied, as `report --merge --copy` writes it; then read as `report OUT` reads it: the
    // runs, and the plan from the summary.
    let out = t.path().join("copied");
    fs::create_dir(&out).unwrap();
    let mut merged = merge(&inputs, &out).unwrap();
    merged.copy_into(&out).unwrap();
    let plan = Some(&merged.plan);
    write_reports_for(
        &out,
        &merged.runs,
        &merged.axes,
        plan,
        JunitFlavour::Harness,
    )
    .unwrap();
    assert_eq!(load_run_dir(&out).unwrap().len(), MAX_PERMUTATIONS);
    let back = Summary::load(&out.join(SUMMARY_JSON_FILE)).unwrap();
    assert_eq!(back.plan.unwrap().ids, plan_ids);
}

/// Shards of an older matrix, whose permutations wrote junit.xml: copied into the merged
/// directory they bring no second file a `**/junit*.xml` collector counts.
#[test]
fn a_copied_merge_has_one_junit_file_for_a_collector() {
    use crate::report::run_dir::tests::{assert_each_case_once, collected_cases};
    let t = tempfile::tempdir().unwrap();
    let (s1, s2) = (t.path().join("s1"), t.path().join("s2"));
    let plan_ids = ids(&["a", "b"]);
    shard(&s1, &plan_ids, &[sample_pass("a")]);
    shard(&s2, &plan_ids, &[sample_fail("b", "bootkube timed out")]);
    for (dir, id) in [(&s1, "a"), (&s2, "b")] {
        let d = dir.join(id);
        let runs = load_run_dir(&d).unwrap();
        crate::report::junit::write_junit(
            &d.join("junit.xml"),
            &runs,
            &d,
            id,
            JunitFlavour::Harness,
        )
        .unwrap();
        fs::write(d.join("junit-extra.xml"), "<testsuites/>").unwrap();
    }
    let out = t.path().join("out");
    fs::create_dir(&out).unwrap();
    let mut merged = merge(&[s1, s2], &out).unwrap();
    merged.copy_into(&out).unwrap();
    write_reports_for(
        &out,
        &merged.runs,
        &merged.axes,
        Some(&merged.plan),
        JunitFlavour::Harness,
    )
    .unwrap();
    assert_each_case_once(&collected_cases(&out), 22);
    // The permutations' own JUnit files are kept, under names no collector globs.
    assert!(out.join("b/report.junit").is_file());
    assert!(out.join("b/junit-extra.junit").is_file());
}

#[test]
fn an_empty_shard_merges_as_the_shard_that_ran_none() {
    let tmp = tempfile::tempdir().unwrap();
    let all = ids(&["a", "b"]);
    shard(
        &tmp.path().join("s1"),
        &all,
        &[sample_pass("a"), sample_pass("b")],
    );
    shard(&tmp.path().join("s2"), &all, &[]);
    let inputs = [tmp.path().join("s1"), tmp.path().join("s2")];
    let merged = merge(&inputs, &tmp.path().join("out")).unwrap();
    assert_eq!(merged.runs.len(), 2);
    assert!(merged.missing.is_empty(), "{:?}", merged.missing);
    // A directory whose summary lists runs it does not hold is still refused.
    fs::remove_dir_all(tmp.path().join("s1/a")).unwrap();
    fs::remove_dir_all(tmp.path().join("s1/b")).unwrap();
    let err = merge(&inputs, &tmp.path().join("out")).unwrap_err();
    assert!(err.to_string().contains("not a run directory"), "{err}");
}
