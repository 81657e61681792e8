//! docs/scenario-format.md against the real binary. Every key the parser knows is on the page:
//! the keys come from the parser itself, because an unknown key makes `plan` list the keys
//! valid where it stands. And the page's complete examples are files `plan` accepts.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn page() -> String {
    std::fs::read_to_string(root().join("docs/scenario-format.md")).unwrap()
}

/// `plan` of a file holding `text`: its exit code and stderr.
fn plan(text: &str) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f.toml");
    std::fs::write(&file, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .args(["plan", file.to_str().unwrap()])
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The keys an "unknown field `zzz`, expected ..." error lists (or `[timeouts]`'s own "the
/// keys are the phases with a deadline of their own (...), ... and ...").
fn keys_listed(err: &str) -> Vec<String> {
    // "the keys are the phases with a deadline of their own (...)": the words before the list
    // are not keys.
    let phases = err
        .split_once("the keys are the phases")
        .and_then(|(_, r)| r.split_once('('));
    if let Some((_, rest)) = phases {
        return rest
            .split(|c: char| !(c.is_ascii_lowercase() || c == '-'))
            .filter(|w| !w.is_empty() && *w != "and")
            .map(str::to_string)
            .collect();
    }
    let Some((_, rest)) = err.split_once("expected") else {
        panic!("no list of keys in: {err}");
    };
    let rest = rest.split(';').next().unwrap_or(rest);
    rest.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

const SCENARIO_HEAD: &str = "name = \"x\"\nprofile = \"fixture\"\n";
const DISK: &str = "[[disks]]\nid = \"install\"\nsize = \"8GiB\"\n";
const MATRIX_HEAD: &str = "name = \"x\"\nbase = \"BASE\"\n";

/// Where an unknown key goes, in a file that is valid but for it: each table the two formats
/// have, and each inline table.
fn probes() -> Vec<(&'static str, String)> {
    let s = |body: &str| format!("{SCENARIO_HEAD}{body}");
    let base = root().join("scenarios/smoke.toml");
    let m = |body: &str| format!("{MATRIX_HEAD}{body}").replace("BASE", base.to_str().unwrap());
    vec![
        ("scenario", s(&format!("zzz = 1\n{DISK}"))),
        ("[vm]", s(&format!("{DISK}[vm]\nzzz = 1\n"))),
        ("[[disks]]", s(&format!("{DISK}zzz = 1\n"))),
        ("throttle", s(&format!("{DISK}throttle = {{ zzz = 1 }}\n"))),
        ("[install]", s(&format!("{DISK}[install]\nzzz = 1\n"))),
        (
            "installation_disk",
            s(&format!(
                "{DISK}[install]\ninstallation_disk = {{ zzz = 1 }}\n"
            )),
        ),
        (
            "pull_secret",
            s(&format!(
                "{DISK}[install]\npull_secret = {{ zzz = \"a\" }}\n"
            )),
        ),
        (
            "proxy",
            s(&format!("{DISK}[install]\nproxy = {{ zzz = \"a\" }}\n")),
        ),
        (
            "capabilities",
            s(&format!(
                "{DISK}[install]\ncapabilities = {{ zzz = \"a\" }}\n"
            )),
        ),
        (
            "cluster_network",
            s(&format!(
                "{DISK}[install]\ncluster_network = [{{ zzz = 1 }}]\n"
            )),
        ),
        (
            "[install.assisted]",
            s(&format!(
                "{DISK}[install]\nmode = \"assisted\"\n[install.assisted]\nzzz = 1\n"
            )),
        ),
        ("[network]", s(&format!("{DISK}[network]\nzzz = 1\n"))),
        (
            "ipv4",
            s(&format!("{DISK}[network]\nipv4 = {{ zzz = 1 }}\n")),
        ),
        (
            "bond",
            s(&format!("{DISK}[network]\nbond = {{ zzz = 1 }}\n")),
        ),
        (
            "[timeouts]",
            s(&format!("{DISK}[timeouts]\nzzz = \"1m\"\n")),
        ),
        ("[fixture]", s(&format!("{DISK}[fixture]\nzzz = 1\n"))),
        ("[openshift]", s(&format!("{DISK}[openshift]\nzzz = 1\n"))),
        ("[expect]", s(&format!("{DISK}[expect]\nzzz = 1\n"))),
        ("[badness]", s(&format!("{DISK}[badness]\nzzz = 1\n"))),
        ("[checks]", s(&format!("{DISK}[checks]\nzzz = 1\n"))),
        ("[access]", s(&format!("{DISK}[access]\nzzz = 1\n"))),
        ("matrix", m("zzz = 1\n")),
        (
            "[[axis]]",
            m("[[axis]]\nkey = \"vm.firmware\"\nvalues = [\"bios\"]\nzzz = 1\n"),
        ),
        ("matrix [[expect]]", m("[[expect]]\nzzz = 1\n")),
    ]
}

#[test]
fn every_key_the_parser_knows_is_on_the_page() {
    let page = page();
    let mut missing = Vec::new();
    for (place, text) in probes() {
        let (code, err) = plan(&text);
        assert_eq!(code, 2, "{place}: {err}");
        let keys = keys_listed(&err);
        assert!(!keys.is_empty(), "{place}: {err}");
        for k in keys {
            let shown = [
                format!("`{k}`"),
                format!("[{k}]"),
                format!("[[{k}]]"),
                format!("{k} ="),
            ];
            if !shown.iter().any(|s| page.contains(s.as_str())) {
                missing.push(format!("{place}: {k}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "keys not on docs/scenario-format.md: {missing:?}"
    );
}

#[test]
fn the_complete_examples_on_the_page_plan() {
    let page = page();
    let base = root().join("scenarios/smoke.toml");
    let blocks: Vec<&str> = page
        .split("```toml\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .filter(|b| b.contains("[[disks]]") || b.contains("[[axis]]"))
        .collect();
    assert_eq!(blocks.len(), 2, "one scenario and one matrix example");
    for b in blocks {
        let text = b.replace("base = \"smoke.toml\"", &format!("base = {base:?}"));
        let (code, err) = plan(&text);
        assert_eq!(code, 0, "{err}\n{text}");
    }
}

/// The README's "Shipped matrices" list: one item per matrix file under scenarios/, each with
/// the counts line `plan` prints for it ("strategy pairwise: 15 permutations (...)"), so the
/// counts cannot drift from the files again (the README once said 11 of 128 for 15 of 512).
#[test]
fn the_readme_names_every_shipped_matrix_with_the_counts_plan_prints() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let items = shipped_matrix_items(&readme);
    let mut shipped = Vec::new();
    for entry in std::fs::read_dir(root().join("scenarios")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if path.extension().is_none_or(|x| x != "toml") || !text.contains("[[axis]]") {
            continue;
        }
        let file = format!("scenarios/{}", path.file_name().unwrap().to_str().unwrap());
        let out = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
            .args(["plan", path.to_str().unwrap()])
            .output()
            .unwrap();
        let plan = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "plan {file}: {plan}");
        let counts = plan
            .lines()
            .find(|l| l.starts_with("strategy "))
            .unwrap_or_else(|| panic!("plan {file} prints no counts:\n{plan}"));
        let item = items
            .iter()
            .find(|(f, _)| *f == file)
            .unwrap_or_else(|| panic!("the README's shipped matrices do not name {file}"));
        assert!(
            item.1.contains(counts),
            "the README says of {file}:\n  {}\nbut plan prints:\n  {counts}",
            item.1
        );
        shipped.push(file);
    }
    assert!(shipped.len() >= 4, "{shipped:?}");
    for (file, _) in &items {
        assert!(
            shipped.contains(file),
            "the README names {file}, not a shipped matrix"
        );
    }
}

/// The items of the README's "Shipped matrices:" list: (file, the item's text on one line).
fn shipped_matrix_items(readme: &str) -> Vec<(String, String)> {
    let start = readme
        .find("\nShipped matrices")
        .expect("the README has a \"Shipped matrices\" list");
    let mut items: Vec<(String, String)> = Vec::new();
    let list = readme[start + 1..]
        .lines()
        .skip_while(|l| !l.starts_with("- `"));
    for line in list {
        if let Some(rest) = line.strip_prefix("- `") {
            let file = rest.split('`').next().unwrap_or_default().to_string();
            items.push((file, line.to_string()));
        } else if line.starts_with("  ") && !items.is_empty() {
            let last = items.last_mut().unwrap();
            last.1.push(' ');
            last.1.push_str(line.trim());
        } else {
            break;
        }
    }
    items
}
