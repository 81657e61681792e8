use std::path::Path;

use super::*;

/// A real certificate (the shipped proxy CA, not a real CA).
const CA: &str = include_str!("../../../../scenarios/data/proxy-ca.pem");
/// Stands for a secret in a file named by mistake: no message may contain it.
const CANARY: &str = "CANARY-b1e9";

fn at_line(text: &str) -> Option<usize> {
    check_trust_bundle(text).err().and_then(|(line, _)| line)
}

#[test]
fn certificates_with_blank_lines_between_them_are_a_bundle() {
    assert_eq!(check_trust_bundle(CA), Ok(()));
    let two = format!("\n{CA}\n\n{}", CA.replace('\n', "\r\n"));
    assert_eq!(check_trust_bundle(&two), Ok(()));
}

#[test]
fn anything_else_is_refused_at_its_line_without_being_quoted() {
    let cases = [
        (format!("root:$6${CANARY}:19000:0:99999:7:::\n"), 1),
        (format!("{CA}# {CANARY}\n"), 13),
        (format!("{CA}\nPATH=/bin\0SECRET={CANARY}\0"), 14),
        (
            format!("-----BEGIN PRIVATE KEY-----\n{CANARY}\n-----END PRIVATE KEY-----\n"),
            1,
        ),
        (
            format!("-----BEGIN {CANARY}-----\nAAAA\n-----END {CANARY}-----\n"),
            1,
        ),
        (CA.replacen("\nMII", &format!("\n{CANARY}.MII"), 1), 2),
        // The base64 of something that is not a certificate.
        (format!("{BEGIN_CERT}\nQ0FOQVJZLWIxZTk=\n{END_CERT}\n"), 1),
        (CA.replace(END_CERT, ""), 1),
        (format!("{END_CERT}\n"), 1),
    ];
    for (text, line) in &cases {
        let (got, why) = check_trust_bundle(text).unwrap_err();
        assert_eq!(got, Some(*line), "{why}\n{text}");
        assert!(!why.contains(CANARY), "{why}");
    }
    let (_, why) = check_trust_bundle(&cases[3].0).unwrap_err();
    assert!(why.starts_with("a private key, not a certificate"), "{why}");
    let (_, why) = check_trust_bundle(&cases[4].0).unwrap_err();
    assert!(why.starts_with("a PEM block of another type"), "{why}");
    let (_, why) = check_trust_bundle(&format!("{BEGIN_CERT}\nAAA\n")).unwrap_err();
    assert!(why.contains("no -----END CERTIFICATE----- line"), "{why}");
}

#[test]
fn a_bundle_without_certificates_is_refused_as_a_whole() {
    for text in ["", "\n\n  \n"] {
        let (line, why) = check_trust_bundle(text).unwrap_err();
        assert_eq!(line, None);
        assert!(why.contains("holds no certificate"), "{why}");
    }
    assert_eq!(at_line(CA), None);
}

#[test]
fn only_regular_files_are_read_and_never_beyond_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let e = read_trust_bundle(dir.path()).unwrap_err();
    assert!(
        matches!(
            e,
            FileError::NotRegular {
                kind: "a directory",
                ..
            }
        ),
        "{e}"
    );
    let e = read_trust_bundle(Path::new("/dev/zero")).unwrap_err();
    assert!(
        e.to_string()
            .ends_with("is a character device, not a regular file"),
        "{e}"
    );

    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let e = read_pull_secret(&fifo).unwrap_err();
    assert!(e.to_string().contains("is a FIFO"), "{e}");

    let big = dir.path().join("big.pem");
    std::fs::write(&big, CA.repeat((MAX_NAMED_FILE as usize / CA.len()) + 1)).unwrap();
    assert!(matches!(
        read_trust_bundle(&big),
        Err(FileError::TooLarge { .. })
    ));

    let binary = dir.path().join("bin.pem");
    std::fs::write(&binary, b"\n\n\xff\xfe").unwrap();
    let e = read_trust_bundle(&binary).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:3: not UTF-8 text; a trust bundle is text",
            binary.display()
        )
    );

    let e = read_trust_bundle(&dir.path().join("none.pem")).unwrap_err();
    assert!(
        e.to_string().contains("cannot read it: No such file"),
        "{e}"
    );
}

#[test]
fn proc_files_that_claim_no_size_are_read_and_refused() {
    // /proc/self/environ says it is empty; it holds this process's environment.
    let e = read_trust_bundle(Path::new("/proc/self/environ")).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("/proc/self/environ:1: not part of a certificate"),
        "{e}"
    );
}

#[test]
fn a_pull_secret_is_the_installers_shape_and_never_quoted() {
    assert_eq!(
        pull_secret_problem(r#"{"auths":{"quay.io":{"auth":"c2VjcmV0"}}}"#),
        None
    );
    assert_eq!(
        pull_secret_problem(r#" {"auths":{"r":{"credsStore":"x"}}} "#),
        None
    );
    for (text, says) in [
        (CANARY.to_string(), "not JSON (at line 1 column 1)"),
        (
            format!("{{\"auth\": \"{CANARY}\"}}"),
            "has no \"auths\" object",
        ),
        ("{\"auths\": {}}".to_string(), "names no registry"),
        (
            format!("{{\"auths\": {{\"r\": {{\"email\": \"{CANARY}\"}}}}}}"),
            "1 of its registries",
        ),
        (
            format!("{{\"auths\": \"{CANARY}\"}}"),
            "has no \"auths\" object",
        ),
    ] {
        let why = pull_secret_problem(&text).unwrap();
        assert!(why.contains(says), "{why}");
        assert!(!why.contains(CANARY), "{why}");
    }
}

#[test]
fn paths_are_relative_to_the_scenario_and_bare_programs_to_path() {
    let s = Path::new("dir/sub/s.toml");
    assert_eq!(resolve(s, Path::new("ca.pem")), Path::new("dir/sub/ca.pem"));
    assert_eq!(
        resolve(s, Path::new("../ca.pem")),
        Path::new("dir/sub/../ca.pem")
    );
    assert_eq!(
        resolve(s, Path::new("/etc/ca.pem")),
        Path::new("/etc/ca.pem")
    );
    assert_eq!(
        resolve(Path::new("s.toml"), Path::new("ca.pem")),
        Path::new("ca.pem")
    );
    assert_eq!(
        resolve_program(s, Path::new("openshift-install")),
        Path::new("openshift-install")
    );
    assert_eq!(
        resolve_program(s, Path::new("bin/openshift-install")),
        Path::new("dir/sub/bin/openshift-install")
    );
}
