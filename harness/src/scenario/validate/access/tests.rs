//! `[access] authorized_keys` in a scenario: the keys read, and each refusal at the entry's line
//! (and the key file's line).

use std::path::Path;

use crate::scenario::{parse_str, Scenario, ScenarioError};

const ED25519: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKS1GOM4iZ3Jw/8/Dy6E7UbT0+kyuGA0TF6+GbLmcpt6 me@ed25519";
const ED25519_SHA256: &str = "SHA256:3WR35Z7tU/ELQgfrW/0LuPANOHfoXjdLbNcljWgM/LY";
const P256: &str = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBGG6yaNWeOx0cnD4TYElzNOEuRksPzHXure5g6VLyb8vxV4owTxsFZX8MdrQF/crVA8C7mqVC5zbmM6pDnLwvus= me@ecdsab256";
const P256_SHA256: &str = "SHA256:vgSokjXusmNKQWTAl/NgZAL7bj2wd5qijlxLTh/oKoU";

/// A scenario at `dir/s.toml` whose line 7 is `authorized_keys = [entries]`.
fn scenario(dir: &Path, entries: &[&str], fips: bool) -> Result<Scenario, ScenarioError> {
    let list: Vec<String> = entries.iter().map(|e| format!("{e:?}")).collect();
    let text = format!(
        "name = \"a\"\nprofile = \"fixture\"\n[[disks]]\nid = \"install\"\nsize = \"8GiB\"\n[access]\nauthorized_keys = [{}]\n[install]\nfips = {fips}\n",
        list.join(", ")
    );
    parse_str(&dir.join("s.toml"), &text)
}

#[test]
fn keys_are_read_from_lines_and_files_in_order_without_repeats() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("keys")).unwrap();
    std::fs::write(d.path().join("keys/ci.pub"), format!("{P256}\n{ED25519}\n")).unwrap();
    let s = scenario(d.path(), &[ED25519, "keys/ci.pub"], false).unwrap();
    let prints: Vec<&str> = s
        .authorized_keys
        .iter()
        .map(|k| k.fingerprint.as_str())
        .collect();
    assert_eq!(prints, [ED25519_SHA256, P256_SHA256]);
    assert_eq!(s.authorized_keys[0].line, ED25519);
    assert_eq!(
        s.authorized_keys[1].from,
        format!("{}:1", d.path().join("keys/ci.pub").display())
    );
    assert!(scenario(d.path(), &[], false)
        .unwrap()
        .authorized_keys
        .is_empty());
}

#[test]
fn a_private_key_is_refused_at_the_entrys_line_and_the_files_line() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("id_ed25519"),
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----\n",
    )
    .unwrap();
    let e = scenario(d.path(), &[ED25519, "id_ed25519"], false).unwrap_err();
    assert_eq!(e.line, Some(7), "{e}");
    let file = d.path().join("id_ed25519");
    assert!(
        e.message.starts_with(&format!(
            "access.authorized_keys: {}:1: a private key, not a public key line",
            file.display()
        )),
        "{e}"
    );
    assert!(e.message.contains("or the path of a .pub file"), "{e}");
    assert!(!e.message.contains("b3BlbnNzaC1rZXkt"), "{e}");

    let e = scenario(d.path(), &["-----BEGIN RSA PRIVATE KEY-----"], false).unwrap_err();
    assert_eq!(e.line, Some(7), "{e}");
    assert!(
        e.message
            .starts_with("access.authorized_keys: a private key, not a public key line"),
        "{e}"
    );
}

#[test]
fn an_entry_that_is_no_key_says_what_a_valid_one_is() {
    let d = tempfile::tempdir().unwrap();
    for (entry, words) in [
        ("keys/missing.pub", "missing.pub: cannot read it"),
        ("ssh-ed25519 AAAA", "is not a ssh-ed25519 public key"),
        (
            "~nobody/k.pub",
            "only ~/ (the home directory, $HOME) is expanded",
        ),
    ] {
        let e = scenario(d.path(), &[entry], false).unwrap_err();
        assert_eq!(e.line, Some(7), "{entry}: {e}");
        assert!(e.message.contains(words), "{entry}: {e}");
        assert!(e.message.contains("TYPE BASE64 [COMMENT]"), "{entry}: {e}");
    }
}

#[test]
fn fips_refuses_an_ed25519_key_and_takes_an_ecdsa_one() {
    let d = tempfile::tempdir().unwrap();
    let e = scenario(d.path(), &[P256, ED25519], true).unwrap_err();
    assert_eq!(e.line, Some(7), "{e}");
    assert!(
        e.message
            .contains("an ed25519 key, which a FIPS node's sshd refuses"),
        "{e}"
    );
    assert_eq!(
        scenario(d.path(), &[P256], true)
            .unwrap()
            .authorized_keys
            .len(),
        1
    );
}

#[test]
fn access_takes_no_other_key() {
    let e = parse_str(
        Path::new("s.toml"),
        "name = \"a\"\nprofile = \"fixture\"\n[[disks]]\nid = \"install\"\nsize = \"8GiB\"\n[access]\nauthorized_key = []\n",
    )
    .unwrap_err();
    assert_eq!(e.line, Some(7), "{e}");
    assert!(e.message.contains("did you mean `authorized_keys`?"), "{e}");
}
