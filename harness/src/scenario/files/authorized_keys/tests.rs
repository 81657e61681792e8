//! Key lines and key files: each accepted type with the fingerprint `ssh-keygen -l` prints for
//! it, and each refusal naming the file and the line.

use super::*;

// Public keys made with ssh-keygen (the sk- ones built from the same key data, as a security
// key's would be), with what `ssh-keygen -l -f` prints as their fingerprints.
const ED25519: (&str, &str) = (
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKS1GOM4iZ3Jw/8/Dy6E7UbT0+kyuGA0TF6+GbLmcpt6 me@ed25519",
    "SHA256:3WR35Z7tU/ELQgfrW/0LuPANOHfoXjdLbNcljWgM/LY",
);
const RSA: (&str, &str) = (
    "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQDIJqghEIIsqB7j49cVdGVL4/TTmmXf24BoiZc/2SPF8l5CSazNbH6wVjCZI5iRix6b2J4UU8aYJV3L6xQPtvUiUPgiMlzZKK8Y387ZVcKbvvdv4ZvniLTOwGPjsEUKw11JBZBtPZx8NAosVVi9CnrgY1BOGmQbnKHTdzz9+QA1TDOiOuIsMKIENCSNqlhNoiFCv13pt4vWbPYQhucXCzq7UMJ5244MsRs7E9QRVgdEHu4/IN5nViRheyJ5KKWtRoFxmi1YfIigkA399k9KlNNoxWOpPNpZ3zb/QSlqgAHh6yzDf/p4RnzGJKLwefpjaC9tDX4g6b9gIFYujh8MDSTb me@rsab2048",
    "SHA256:qbqPQgitGHz5VDMo9dricB0u8zWyachiG4PP5VFci3k",
);
const P256: (&str, &str) = (
    "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBGG6yaNWeOx0cnD4TYElzNOEuRksPzHXure5g6VLyb8vxV4owTxsFZX8MdrQF/crVA8C7mqVC5zbmM6pDnLwvus= me@ecdsab256",
    "SHA256:vgSokjXusmNKQWTAl/NgZAL7bj2wd5qijlxLTh/oKoU",
);
const P384: (&str, &str) = (
    "ecdsa-sha2-nistp384 AAAAE2VjZHNhLXNoYTItbmlzdHAzODQAAAAIbmlzdHAzODQAAABhBC4oU4QsUkqmwSZ89Cnzvq9Rs+oY89hJZVt2fZuHqqhcN3PnDTSvg1cwq3o7ZWB64XY0g304XGi/7FHUIluB0Bl4DRGMWvgXtKnm952stGONCxAX15n5CZh0AplKOHv8qg== me@ecdsab384",
    "SHA256:tb1KQ9almHms1+5+EYuwSWHY/vCtcnQa/uc43gg3O9c",
);
const P521: (&str, &str) = (
    "ecdsa-sha2-nistp521 AAAAE2VjZHNhLXNoYTItbmlzdHA1MjEAAAAIbmlzdHA1MjEAAACFBAHuLFubysqj/c8Js1jVlzVDAX9MxvEkfiNeNzL7qnoAGyyTMX4eOzPUNO3yPGJvUFWDV5Gxsl9vY5LoSTxIypq7XwHJUKkuUftvx8NrUen5a4Dt6m3aerEepQnb+rf7btFxFMidfox/ucTFkXrJ8HrLY3vMU5uHiiragWd63Z+xnoTuGg== me@ecdsab521",
    "SHA256:PH7PIDXplAkbAMzUzChoWOVQwySsmmNbpaJoxfG1LRw",
);
const SK_ED25519: (&str, &str) = (
    "sk-ssh-ed25519@openssh.com AAAAGnNrLXNzaC1lZDI1NTE5QG9wZW5zc2guY29tAAAAIKS1GOM4iZ3Jw/8/Dy6E7UbT0+kyuGA0TF6+GbLmcpt6AAAABHNzaDo= me@sk",
    "SHA256:h4m07aGbo1AZB/knrawFwXksx49ZD8/sFpRyuR1SMdI",
);
const SK_P256: (&str, &str) = (
    "sk-ecdsa-sha2-nistp256@openssh.com AAAAInNrLWVjZHNhLXNoYTItbmlzdHAyNTZAb3BlbnNzaC5jb20AAAAIbmlzdHAyNTYAAABBBGG6yaNWeOx0cnD4TYElzNOEuRksPzHXure5g6VLyb8vxV4owTxsFZX8MdrQF/crVA8C7mqVC5zbmM6pDnLwvusAAAAEc3NoOg== me@skec",
    "SHA256:vaDRvq0PGy9kbPcfb4DuzSNdwM4T9NdyqZqkmsT/reA",
);
const DSA: (&str, &str) = (
    "ssh-dss AAAAB3NzaC1kc3MAAACBAK5SG688d9DVp6dvQw0ZGuhB/9/KjgLETHWP8Z4e/PM6mZ4+iClXZyo/oMBHbNFqrPbusRdyETNc0BIOXXy1WPXx74l2fUyINnsXvKRkLLEBeaUa/xM9kQPlqwChl5NouCDbX/s0oOC1mfKeISttBgFMMWmLZ40eOEBLSuoOUwnTAAAAFQDoCNlsT1dPn2ERlGO2E7eYxARKAQAAAIAEaGofEHDQ67GtlmNWvbmBSvfeid9wA+a2G1FmbkQFJLALsLPs8Bvoyw0xfqqdSJnXFqm01y8TnRCZ7+W9RO4FbyJIHjOHf9JVAur+JdK+iKPzK2KgVTcbm5qfoDlTcq8Z4kiH/c8Dzd6Br1CbuLCQNwRZ0KGDTMV6IpCrA+iHPwAAAIEAiJI8YhqBhIEsAcKI1TgO3NV+BMAZMxmvIccxK/JguQYg6oWm5dqF34ZR+F330AVipWflxzfaN9Ks0U9QxTLBRuvXtELuD0J6wCIhkLuU6qITq8Pb9TwWXPvT1Vg24t0T7S98Imf7CnMWJXoCjnHAd02gVkCsENgMrQMpF58cW9M= root@vm",
    "SHA256:z+PeT86YPLZPxZK+3d78BfjnbjTv4NXN6ik04MVvHFM",
);

/// A private key's first lines, as ssh-keygen writes them (not a key of any use).
const PRIVATE: &str = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----\n";

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn every_accepted_type_parses_with_the_fingerprint_ssh_keygen_prints() {
    for (line, fingerprint) in [ED25519, RSA, P256, P384, P521, SK_ED25519, SK_P256] {
        let k = parse_line(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert_eq!(k.fingerprint, fingerprint, "{line}");
        assert_eq!(k.line, line);
    }
}

#[test]
fn a_line_is_kept_as_type_data_and_comment_with_the_spaces_around_them_dropped() {
    let (line, _) = ED25519;
    let spaced = format!("  {}\t", line.replacen(' ', "   ", 1));
    assert_eq!(parse_line(&spaced).unwrap().line, line);
    let bare: Vec<&str> = line.split(' ').take(2).collect();
    assert_eq!(parse_line(&bare.join(" ")).unwrap().line, bare.join(" "));
}

#[test]
fn what_is_not_a_public_key_is_refused_without_being_quoted() {
    let (ed, _) = ED25519;
    let data = ed.split(' ').nth(1).unwrap();
    let cases = [
        (
            PRIVATE.lines().next().unwrap().to_string(),
            "a private key, not a public key line",
        ),
        (
            "-----BEGIN CERTIFICATE-----".into(),
            "a PEM block, not a public key line",
        ),
        (DSA.0.into(), "a DSA key (ssh-dss)"),
        (
            format!("ecdsa-sha2-nistp999 {data}"),
            "\"ecdsa-sha2-nistp999\" is not a key type",
        ),
        (
            format!("ssh-rsa {data} x"),
            "the base64 after ssh-rsa is not a ssh-rsa public key",
        ),
        (
            format!("ssh-ed25519 {}", &data[..30]),
            "is not a ssh-ed25519 public key",
        ),
        ("ssh-ed25519 !!!".into(), "is not a ssh-ed25519 public key"),
        (format!("{ed}\u{1b}[2J"), "a control character"),
        (data.into(), "it does not start with a key type"),
    ];
    for (line, want) in cases {
        let e = parse_line(&line).unwrap_err();
        assert!(e.contains(want), "{line:?}: {e}");
        assert!(!e.contains(&data[..20]), "{line:?} quoted: {e}");
    }
}

#[test]
fn a_key_file_gives_each_key_line_with_its_place_skipping_blank_and_comment_lines() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "keys.pub",
        &format!("# mine\n\n{}\n  {}  \n", ED25519.0, RSA.0),
    );
    let keys = read_key_file(&p).unwrap();
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0].line, ED25519.0);
    assert_eq!(keys[0].from, format!("{}:3", p.display()));
    assert_eq!(keys[1].fingerprint, RSA.1);
    assert_eq!(keys[1].from, format!("{}:4", p.display()));
}

#[test]
fn a_private_key_file_or_a_bad_line_in_a_key_file_is_named_by_file_and_line() {
    let d = tempfile::tempdir().unwrap();
    let private = write(d.path(), "id_ed25519", PRIVATE);
    let e = read_key_file(&private).unwrap_err();
    assert!(matches!(&e, FileError::AtLine { line: 1, .. }), "{e:?}");
    let shown = e.to_string();
    assert!(
        shown.starts_with(&format!("{}:1: a private key", private.display())),
        "{shown}"
    );
    assert!(!shown.contains("b3BlbnNzaC1rZXkt"), "{shown}");
    let mixed = write(
        d.path(),
        "k.pub",
        &format!("{}\n\nssh-ed25519 AAAA\n", ED25519.0),
    );
    let e = read_key_file(&mixed).unwrap_err();
    assert!(matches!(&e, FileError::AtLine { line: 3, .. }), "{e:?}");
}

#[test]
fn an_empty_a_large_or_a_binary_key_file_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let empty = write(d.path(), "e.pub", "# nothing\n\n");
    assert!(read_key_file(&empty)
        .unwrap_err()
        .to_string()
        .contains("holds no public key"));
    let big = write(d.path(), "b.pub", &format!("{}\n", ED25519.0).repeat(1000));
    let e = read_key_file(&big).unwrap_err().to_string();
    assert!(e.contains("more than 65536 bytes"), "{e}");
    std::fs::write(d.path().join("bin.pub"), b"\xff\xfe").unwrap();
    let e = read_key_file(&d.path().join("bin.pub")).unwrap_err();
    assert!(matches!(e, FileError::NotText { line: 1, .. }), "{e:?}");
    let e = read_key_file(d.path()).unwrap_err();
    assert!(matches!(e, FileError::NotRegular { .. }), "{e:?}");
}

#[test]
fn an_entry_is_a_key_line_or_a_path_relative_to_the_scenario() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("keys")).unwrap();
    let p = write(&d.path().join("keys"), "ci.pub", &format!("{}\n", P256.0));
    let scenario = d.path().join("s.toml");
    let from_file = entry_keys(&scenario, "keys/ci.pub").unwrap();
    assert_eq!(from_file[0].fingerprint, P256.1);
    assert_eq!(from_file[0].from, format!("{}:1", p.display()));
    let inline = entry_keys(&scenario, ED25519.0).unwrap();
    assert_eq!(inline[0].from, IN_THE_SCENARIO);
    // An unknown type written as a key line is refused as one, not looked for as a file.
    let e = entry_keys(&scenario, DSA.0).unwrap_err();
    assert!(matches!(e, KeyError::Line(_)), "{e:?}");
    let e = entry_keys(&scenario, " ").unwrap_err();
    assert_eq!(e, KeyError::Line("an empty entry".into()));
    let e = entry_keys(&scenario, "keys/none.pub")
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot read it"), "{e}");
    assert!(e.contains("or the path of a .pub file"), "{e}");
}

#[test]
fn only_tilde_slash_is_expanded_and_it_needs_home() {
    let home = || Some(std::ffi::OsString::from("/home/me"));
    assert_eq!(
        expand_home("~/.ssh/id.pub", home()).unwrap(),
        Path::new("/home/me/.ssh/id.pub")
    );
    assert_eq!(expand_home("k.pub", None).unwrap(), Path::new("k.pub"));
    assert!(matches!(
        expand_home("~bob/k.pub", home()),
        Err(KeyError::Tilde(_))
    ));
    assert!(matches!(
        expand_home("~/k.pub", None),
        Err(KeyError::NoHome(_))
    ));
    assert!(matches!(
        expand_home("~/k.pub", Some("".into())),
        Err(KeyError::NoHome(_))
    ));
}

#[test]
fn fips_refuses_the_ed25519_types_only() {
    for (line, refused) in [
        (ED25519.0, true),
        (SK_ED25519.0, true),
        (RSA.0, false),
        (P384.0, false),
    ] {
        assert_eq!(
            refused_by_fips(&parse_line(line).unwrap()),
            refused,
            "{line}"
        );
    }
}
