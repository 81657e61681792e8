//! `--shard K/N` through the real binary: `plan` lists a slice, `matrix` runs one and records
//! the plan and the slice in summary.json. The matrix runs here use a scenario whose installer
//! refuses at once (as perf_cli.rs's), with PATH holding only stand-ins that exit, so no VM
//! can start.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

mod fake_tools;
use fake_tools::fake_tools;
mod no_vm;
use no_vm::{harness_with, no_vm_matrix, repo_file, Ran};

/// `sno-harness ARGS` with the stand-ins on PATH and the registry under `tmp`.
fn harness(args: &[&str], tmp: &Path) -> Ran {
    harness_with(args, &fake_tools(tmp), &tmp.join("state"))
}

fn plan_ids(matrix: &Path, shard: Option<&str>, tmp: &Path) -> Vec<String> {
    let m = matrix.to_str().unwrap();
    let mut args = vec!["plan", "--json", m];
    if let Some(s) = shard {
        args.extend(["--shard", s]);
    }
    let r = harness(&args, tmp);
    assert_eq!(r.code, 0, "plan {args:?}: {}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    v["permutations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_shards_of_the_disks_matrix_are_disjoint_and_together_the_plan() {
    let tmp = tempfile::tempdir().unwrap();
    let disks = repo_file("scenarios/disks.toml");
    let all = plan_ids(&disks, None, tmp.path());
    assert!(all.len() > 4, "a plan worth splitting: {}", all.len());
    for n in 1..=4 {
        let mut seen = BTreeSet::new();
        let mut sizes = Vec::new();
        for k in 1..=n {
            let slice = plan_ids(&disks, Some(&format!("{k}/{n}")), tmp.path());
            sizes.push(slice.len());
            for id in slice {
                assert!(seen.insert(id.clone()), "{id} in two shards of {n}");
            }
        }
        let want: BTreeSet<String> = all.iter().cloned().collect();
        assert_eq!(seen, want, "the {n} shards together are the plan");
        if n > 1 {
            assert!(sizes.iter().all(|&s| s < all.len()), "{n}: {sizes:?}");
        }
    }
    // A slice keeps the plan's order.
    let slice = plan_ids(&disks, Some("2/3"), tmp.path());
    // For people: the slice's rows under the whole plan's counts.
    let r = harness(
        &["plan", disks.to_str().unwrap(), "--shard", "2/3"],
        tmp.path(),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let n = all.len();
    for line in [
        format!(
            "shard 2/3 (split by order): {} of the plan's {n} permutations",
            slice.len()
        ),
        format!("strategy pairwise: {n} permutations"),
    ] {
        assert!(r.stdout.contains(&line), "{line:?} not in\n{}", r.stdout);
    }
    for id in &all {
        let listed = r.stdout.lines().any(|l| l.starts_with(&format!("{id} ")));
        assert_eq!(listed, slice.contains(id), "{id}:\n{}", r.stdout);
    }
    let in_plan: Vec<&String> = all.iter().filter(|id| slice.contains(id)).collect();
    assert_eq!(slice.iter().collect::<Vec<_>>(), in_plan);
}

#[test]
fn a_bad_shard_is_refused_with_exit_2_before_anything_is_created() {
    let tmp = tempfile::tempdir().unwrap();
    let disks = repo_file("scenarios/disks.toml");
    let out = tmp.path().join("out");
    for (cmd, shard) in [
        ("matrix", "0/4"),
        ("matrix", "5/4"),
        ("perf", "1/x"),
        ("plan", "2"),
    ] {
        let mut args = vec![cmd, disks.to_str().unwrap(), "--shard", shard];
        if cmd != "plan" {
            args.extend(["--out", out.to_str().unwrap()]);
        }
        let r = harness(&args, tmp.path());
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains("K/N"), "{args:?}: {}", r.stderr);
        assert!(!out.exists(), "{args:?} created {}", out.display());
    }
    let smoke = repo_file("scenarios/smoke.toml");
    for flag in [
        ["--shard", "1/2"],
        ["--filter", "*"],
        ["--strategy", "full"],
    ] {
        let r = harness(
            &["plan", smoke.to_str().unwrap(), flag[0], flag[1]],
            tmp.path(),
        );
        assert_eq!(r.code, 2, "{flag:?}: {}", r.stderr);
        assert!(r.stderr.contains("is a scenario"), "{flag:?}: {}", r.stderr);
    }
    let r = harness(
        &["plan", disks.to_str().unwrap(), "--filter", "no-such.*"],
        tmp.path(),
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("no permutation"), "{}", r.stderr);
}

#[test]
fn plan_lists_what_matrix_runs_with_the_same_strategy_filter_and_shard() {
    let tmp = tempfile::tempdir().unwrap();
    let disks = repo_file("scenarios/disks.toml");
    let d = disks.to_str().unwrap();
    let ids = |extra: &[&str]| {
        let mut args = vec!["plan", "--json", d];
        args.extend(extra);
        let r = harness(&args, tmp.path());
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        let v: Value = serde_json::from_str(&r.stdout).unwrap();
        let ids: Vec<String> = v["permutations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["id"].as_str().unwrap().to_string())
            .collect();
        (ids, v["plan_count"].as_u64().unwrap())
    };
    let (pairwise, n) = ids(&[]);
    let (full, full_n) = ids(&["--strategy", "full"]);
    assert!(full_n > n && full.len() as u64 == full_n, "{n} {full_n}");
    let (virtio, _) = ids(&["--strategy", "full", "--filter", "virtio.*"]);
    assert!(!virtio.is_empty() && virtio.iter().all(|i| i.starts_with("virtio.")));
    assert_eq!(
        virtio,
        full.iter()
            .filter(|i| i.starts_with("virtio."))
            .cloned()
            .collect::<Vec<_>>()
    );
    let (half, _) = ids(&[
        "--strategy",
        "full",
        "--filter",
        "virtio.*",
        "--shard",
        "1/2",
    ]);
    let (other, _) = ids(&[
        "--strategy",
        "full",
        "--filter",
        "virtio.*",
        "--shard",
        "2/2",
    ]);
    let mut both: Vec<String> = half.iter().chain(&other).cloned().collect();
    both.sort();
    let mut want = virtio.clone();
    want.sort();
    assert_eq!(both, want, "the filtered plan's two shards");
    assert!(pairwise.len() < full.len());
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn each_shard_runs_its_slice_and_its_summary_names_the_plan_and_the_slice() {
    let tmp = tempfile::tempdir().unwrap();
    let m = no_vm_matrix(tmp.path());
    let all = plan_ids(&m, None, tmp.path());
    assert_eq!(all.len(), 8);
    let mut ran = BTreeSet::new();
    let mut digests = BTreeSet::new();
    for k in 1..=2 {
        let out = tmp.path().join(format!("shard-{k}"));
        let shard = format!("{k}/2");
        let r = harness(
            &[
                "matrix",
                m.to_str().unwrap(),
                "--shard",
                &shard,
                "--out",
                out.to_str().unwrap(),
            ],
            tmp.path(),
        );
        assert_eq!(r.code, 0, "shard {shard}: {}", r.stderr);
        let s = read_json(&out.join("summary.json"));
        let plan = &s["plan"];
        assert_eq!(plan["matrix"], "m");
        assert_eq!(plan["strategy"], "full");
        assert_eq!(
            plan["shard"],
            serde_json::json!({"index": k, "count": 2, "by": "order"})
        );
        let ids: Vec<&str> = plan["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(
            ids,
            all.iter().map(String::as_str).collect::<Vec<_>>(),
            "the whole plan"
        );
        digests.insert(plan["files_sha256"].as_str().unwrap().to_string());
        let slice = plan_ids(&m, Some(&shard), tmp.path());
        let this: Vec<String> = s["permutations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["id"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(this, slice, "shard {shard} ran what plan --shard lists");
        for id in this {
            assert!(out.join(&id).join("result.json").is_file(), "{id}");
            assert!(ran.insert(id.clone()), "{id} ran twice");
        }
    }
    assert_eq!(ran.len(), 8, "the two shards ran the plan");
    assert_eq!(digests.len(), 1, "one plan: {digests:?}");
}

#[test]
fn an_empty_shard_passes_and_still_names_the_plan() {
    let tmp = tempfile::tempdir().unwrap();
    let m = no_vm_matrix(tmp.path());
    let empty = (1..=40)
        .map(|k| format!("{k}/40"))
        .find(|s| plan_ids(&m, Some(s), tmp.path()).is_empty())
        .expect("eight ids leave most of 40 shards empty");
    let out = tmp.path().join("out");
    let r = harness(
        &[
            "matrix",
            m.to_str().unwrap(),
            "--shard",
            &empty,
            "--out",
            out.to_str().unwrap(),
        ],
        tmp.path(),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("holds none"), "{}", r.stderr);
    let s = read_json(&out.join("summary.json"));
    assert_eq!(s["counts"]["total"], 0);
    assert_eq!(s["plan"]["ids"].as_array().unwrap().len(), 8);
    assert_eq!(s["plan"]["shard"]["count"], 40);
}

fn run_matrix(m: &Path, extra: &[&str], out: &Path, tmp: &Path) {
    let mut args = vec![
        "matrix",
        m.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(extra);
    let r = harness(&args, tmp);
    assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
}

fn merge(inputs: &[&Path], out: &Path, extra: &[&str], tmp: &Path) -> Ran {
    let mut args = vec!["report", "--merge"];
    args.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    args.extend(["--out", out.to_str().unwrap()]);
    args.extend(extra);
    harness(&args, tmp)
}

#[test]
fn two_shards_merged_give_the_coverage_and_counts_of_one_whole_run() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let m = no_vm_matrix(t);
    run_matrix(&m, &[], &t.join("whole"), t);
    run_matrix(&m, &["--shard", "1/2"], &t.join("s1"), t);
    run_matrix(&m, &["--shard", "2/2"], &t.join("s2"), t);
    for (out, extra) in [("merged", &[][..]), ("copied", &["--copy"][..])] {
        let out = t.join(out);
        let r = merge(&[&t.join("s2"), &t.join("s1")], &out, extra, t);
        assert_eq!(r.code, 0, "{extra:?}: {}", r.stderr);
        assert!(r.stdout.contains("8 of 8 permutations"), "{}", r.stdout);
        let whole = read_json(&t.join("whole/summary.json"));
        let merged = read_json(&out.join("summary.json"));
        assert_eq!(merged["coverage"], whole["coverage"], "{extra:?}");
        assert_eq!(merged["counts"], whole["counts"], "{extra:?}");
        assert_eq!(merged["plan"]["ids"], whole["plan"]["ids"]);
        assert_eq!(merged["plan"]["shard"], Value::Null, "the whole plan");
        // In the plan's order, each path leading to that permutation's result.json.
        let perms = merged["permutations"].as_array().unwrap();
        let ids: Vec<&Value> = perms.iter().map(|p| &p["id"]).collect();
        assert_eq!(
            ids,
            whole["plan"]["ids"]
                .as_array()
                .unwrap()
                .iter()
                .collect::<Vec<_>>()
        );
        for p in perms {
            let path = out.join(p["path"].as_str().unwrap());
            let result = read_json(&path.join("result.json"));
            assert_eq!(result["id"], p["id"]);
            let inside = path
                .canonicalize()
                .unwrap()
                .starts_with(out.canonicalize().unwrap());
            assert_eq!(inside, !extra.is_empty(), "{extra:?}: {}", path.display());
        }
        for f in ["junit.xml", "summary.md", "report.html"] {
            assert!(out.join(f).is_file(), "{f}");
        }
    }
}

#[test]
fn merging_lists_missing_and_duplicated_permutations_with_exit_1() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let m = no_vm_matrix(t);
    run_matrix(&m, &["--shard", "1/2"], &t.join("s1"), t);
    run_matrix(&m, &["--shard", "1/2"], &t.join("s1-again"), t);
    let out = t.join("out");
    let r = merge(&[&t.join("s1"), &t.join("s1-again")], &out, &[], t);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let s1 = read_json(&t.join("s1/summary.json"));
    let ran: BTreeSet<&str> = s1["permutations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    let first_ran = ran.iter().next().unwrap();
    assert!(
        r.stderr
            .contains(&format!("duplicated: {first_ran} ran in")),
        "{}",
        r.stderr
    );
    let not_ran: Vec<String> = plan_ids(&m, None, t)
        .into_iter()
        .filter(|id| !ran.contains(id.as_str()))
        .collect();
    assert!(
        r.stderr.contains(&format!(
            "missing (no input ran them): {}",
            not_ran.join(", ")
        )),
        "{}",
        r.stderr
    );
    assert_eq!(
        read_json(&out.join("summary.json"))["counts"]["total"],
        ran.len()
    );
}

#[test]
fn merging_refuses_other_plans_and_a_used_out_dir_with_exit_2_writing_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let m = no_vm_matrix(t);
    run_matrix(&m, &["--shard", "1/2"], &t.join("s1"), t);
    run_matrix(
        &m,
        &["--shard", "2/2", "--filter", "*.virtio"],
        &t.join("filtered"),
        t,
    );
    let out = t.join("out");
    let r = merge(&[&t.join("s1"), &t.join("filtered")], &out, &[], t);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("another plan") && r.stderr.contains("--filter"),
        "{}",
        r.stderr
    );
    assert!(!out.exists());
    // The other half of the plan, split by hash: not the slices of one plan.
    run_matrix(
        &m,
        &["--shard", "2/2", "--shard-by", "hash"],
        &t.join("by-hash"),
        t,
    );
    let r = merge(&[&t.join("s1"), &t.join("by-hash")], &out, &[], t);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("shards split by hash against by order"),
        "{}",
        r.stderr
    );
    assert!(!out.exists());
    // The matrix file changed between the shards.
    let text = std::fs::read_to_string(&m).unwrap();
    // A comment: the same permutations (a changed value could ask more vCPUs than the
    // host has), another file.
    std::fs::write(&m, format!("{text}\n# changed\n")).unwrap();
    run_matrix(&m, &["--shard", "2/2"], &t.join("changed"), t);
    let r = merge(&[&t.join("s1"), &t.join("changed")], &out, &[], t);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("the matrix file or its base differ"),
        "{}",
        r.stderr
    );
    assert!(!out.exists());
    // Not a matrix output; an --out in use; --out without --merge.
    let r = merge(&[&t.join("s1"), t], &out, &[], t);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("no summary.json"), "{}", r.stderr);
    let r = merge(&[&t.join("s1")], &t.join("s1"), &[], t);
    assert_eq!(r.code, 2, "{}", r.stderr);
    let r = harness(
        &[
            "report",
            "--out",
            out.to_str().unwrap(),
            t.join("s1").to_str().unwrap(),
        ],
        t,
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(!out.exists());
}

/// The permutations of scenarios/install-config.toml the installer refuses at `assets`: the
/// fixture's installer stand-in answers them in well under a second each, with no VM.
const REJECTED: &str = "*OpenShiftSDN*,ipv6-first.*,*.fips.hostcrypt.*";

/// `sno-harness ARGS` with this process's PATH (the fixture's installer is built, or found
/// built, by the run, as ci/test.sh's `fixture build` leaves it).
fn harness_real_path(args: &[&str], tmp: &Path) -> Ran {
    let path = std::env::var_os("PATH").unwrap_or_default();
    harness_with(args, Path::new(&path), &tmp.join("state"))
}

#[test]
fn two_shards_of_the_install_config_rejections_merge_into_the_coverage_of_one_run() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let m = repo_file("scenarios/install-config.toml");
    let m = m.to_str().unwrap();
    let planned = harness_real_path(&["plan", "--json", m, "--filter", REJECTED], t);
    assert_eq!(planned.code, 0, "{}", planned.stderr);
    let planned: Value = serde_json::from_str(&planned.stdout).unwrap();
    let negative = planned["negative_count"].as_u64().unwrap();
    assert_eq!(planned["count"].as_u64(), Some(negative), "only rejections");
    assert!(negative >= 4, "{negative} rejections");
    let mut sizes = Vec::new();
    for (out, shard) in [("whole", None), ("s1", Some("1/2")), ("s2", Some("2/2"))] {
        let o = t.join(out);
        let mut args = vec![
            "matrix",
            m,
            "--filter",
            REJECTED,
            "--out",
            o.to_str().unwrap(),
        ];
        args.extend(shard.iter().flat_map(|s| ["--shard", *s]));
        let r = harness_real_path(&args, t);
        assert_eq!(
            r.code, 0,
            "{args:?}: every rejection as expected\n{}",
            r.stderr
        );
        sizes.push(read_json(&o.join("summary.json"))["counts"]["total"].clone());
    }
    assert_eq!(sizes[0].as_u64(), Some(negative));
    assert!(
        sizes[1].as_u64().unwrap() < negative,
        "a real split: {sizes:?}"
    );
    let merged = t.join("merged");
    let r = merge(&[&t.join("s1"), &t.join("s2")], &merged, &[], t);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let whole = read_json(&t.join("whole/summary.json"));
    let one = read_json(&merged.join("summary.json"));
    assert_eq!(one["coverage"], whole["coverage"]);
    assert_eq!(one["counts"], whole["counts"]);
    assert_eq!(
        one["counts"]["fail"].as_u64(),
        Some(negative),
        "refused, as expected"
    );
    assert_eq!(one["plan"]["ids"], whole["plan"]["ids"]);
    assert_eq!(one["plan"]["filter"], Value::String(REJECTED.into()));
}

fn edit_json(path: &Path, change: impl FnOnce(&mut Value)) {
    let mut v = read_json(path);
    change(&mut v);
    std::fs::write(path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

/// Two shards of the no-VM matrix in `t/s1` and `t/s2`, and the first permutation of s1.
fn two_shards(t: &Path) -> String {
    let m = no_vm_matrix(t);
    run_matrix(&m, &["--shard", "1/2"], &t.join("s1"), t);
    run_matrix(&m, &["--shard", "2/2"], &t.join("s2"), t);
    read_json(&t.join("s1/summary.json"))["permutations"][0]["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Renames permutation `id` to `to` in both shards' plans and in its result.json, in s1's
/// directory `dir`.
fn rename_permutation(t: &Path, dir: &str, id: &str, to: &str) {
    for s in ["s1", "s2"] {
        edit_json(&t.join(s).join("summary.json"), |v| {
            for i in v["plan"]["ids"].as_array_mut().unwrap() {
                if i == id {
                    *i = Value::String(to.into());
                }
            }
        });
    }
    edit_json(&t.join("s1").join(dir).join("result.json"), |v| {
        v["id"] = Value::String(to.into())
    });
}

#[test]
fn merging_refuses_ids_that_are_no_names_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let first = two_shards(t);
    // A directory an attacker wants written, reached by an absolute id, by '..', or through a
    // link the copy of an earlier permutation would have made.
    let victim = t.join("home/.ssh");
    std::fs::create_dir_all(&victim).unwrap();
    std::os::unix::fs::symlink(&victim, t.join("s1").join(&first).join("keys")).unwrap();
    let mut current = first.clone();
    for hostile in [
        victim.join("authorized_keys").to_str().unwrap().to_string(),
        "../../home/.ssh".to_string(),
        format!("{first}/keys"),
    ] {
        rename_permutation(t, &first, &current, &hostile);
        current = hostile.clone();
        let out = t.join("out");
        let r = merge(&[&t.join("s1"), &t.join("s2")], &out, &["--copy"], t);
        assert_eq!(r.code, 2, "{hostile}: {}\n{}", r.stdout, r.stderr);
        for said in [
            format!("{}/summary.json", t.join("s1").display()),
            format!("{hostile:?}"),
            "one directory name".to_string(),
        ] {
            assert!(r.stderr.contains(&said), "{said}: {}", r.stderr);
        }
        assert!(!out.exists(), "{hostile}");
        assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 0, "{hostile}");
    }
}

#[test]
fn a_plan_naming_an_id_twice_is_refused_with_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let first = two_shards(t);
    for s in ["s1", "s2"] {
        edit_json(&t.join(s).join("summary.json"), |v| {
            let ids = v["plan"]["ids"].as_array_mut().unwrap();
            ids.push(Value::String(first.clone()));
        });
    }
    let out = t.join("out");
    let r = merge(&[&t.join("s1"), &t.join("s2")], &out, &[], t);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains(&format!("the plan lists the permutation {first} twice")),
        "{}",
        r.stderr
    );
    assert!(!out.exists());
}

#[test]
fn a_copy_leaves_out_links_special_files_disks_and_assets_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let first = two_shards(t);
    let run = t.join("s1").join(&first);
    let outside = t.join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("secret"), "not evidence").unwrap();
    std::os::unix::fs::symlink(&outside, run.join("escape")).unwrap();
    std::fs::create_dir_all(run.join("disks")).unwrap();
    std::fs::write(run.join("disks/install.qcow2"), vec![1u8; 4096]).unwrap();
    std::fs::write(run.join("live.iso"), vec![1u8; 1024]).unwrap();
    std::fs::create_dir_all(run.join("assets/auth")).unwrap();
    std::fs::write(run.join("assets/auth/kubeconfig"), "key").unwrap();
    let _sock = std::os::unix::net::UnixListener::bind(run.join("qmp.sock")).unwrap();
    let out = t.join("out");
    let r = merge(&[&t.join("s1"), &t.join("s2")], &out, &["--copy"], t);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let copy = out.join(&first);
    assert!(copy.join("result.json").is_file());
    for gone in [
        "escape", "disks", "live.iso", "assets", "qmp.sock", "run.lock",
    ] {
        assert!(
            std::fs::symlink_metadata(copy.join(gone)).is_err(),
            "{gone} copied"
        );
    }
    let said = r
        .stdout
        .lines()
        .find(|l| l.starts_with("left out of the copies: "))
        .unwrap_or_else(|| panic!("{}", r.stdout));
    assert!(
        said.contains("1 symbolic link; 1 socket, FIFO or device"),
        "{said}"
    );
    assert!(
        r.stdout
            .contains(&format!("not copied, a symbolic link: {first}/escape")),
        "{}",
        r.stdout
    );
    // `report` of the merged directory reads it back, plan included.
    let r = harness(&["report", out.to_str().unwrap()], t);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("warning"), "{}", r.stderr);
    assert_eq!(
        read_json(&out.join("summary.json"))["plan"]["ids"]
            .as_array()
            .unwrap()
            .len(),
        8
    );
}

/// On GitHub Actions, `report --merge` appends the merged summary.md to the step summary
/// (after what is there) and prints an `::error` line per permutation that did not pass.
#[test]
fn a_merge_on_github_actions_appends_the_step_summary_and_annotates_each_failure() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let first = two_shards(t);
    // The matrix wrote its permutation's suite where no junit*.xml glob finds it.
    assert!(t.join("s1").join(&first).join("report.junit").is_file());
    assert!(!t.join("s1").join(&first).join("junit.xml").exists());
    let step = t.join("step_summary");
    std::fs::write(&step, "earlier step\n").unwrap();
    let out = t.join("merged");
    let mut args = vec!["report", "--merge"];
    let (s1, s2) = (t.join("s1"), t.join("s2"));
    args.extend([s1.to_str().unwrap(), s2.to_str().unwrap()]);
    args.extend(["--out", out.to_str().unwrap(), "--copy"]);
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .args(&args)
        .env("PATH", fake_tools(t))
        .env("SNO_HARNESS_STATE_DIR", t.join("state"))
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &step)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let summary_md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert_eq!(
        std::fs::read_to_string(&step).unwrap(),
        format!("earlier step\n{summary_md}")
    );
    // The no-VM scenario ends every permutation in error (as it expects; a merge does not
    // know the expectations): eight lines, each one line of GitHub's form.
    let errors: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("::error "))
        .collect();
    assert_eq!(errors.len(), 8, "{stdout}");
    for e in errors {
        assert!(e.starts_with("::error title=sno-harness error%3A "), "{e}");
        assert!(e.split_once("::").unwrap().1.contains("::"), "{e}");
    }
    // Each case once for a collector of junit*.xml, the copies included.
    let mut found = Vec::new();
    let mut dirs = vec![out.clone()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(d).unwrap().map(Result::unwrap) {
            let name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().unwrap().is_dir() {
                dirs.push(e.path());
            } else if name.starts_with("junit") && name.ends_with(".xml") {
                found.push(e.path());
            }
        }
    }
    assert_eq!(found, [out.join("junit.xml")]);
}
