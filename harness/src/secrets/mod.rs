//! The run's secrets as text to look for: what must never reach a published file (the pull
//! secret, the kubeadmin password, the run's SSH private key, the admin client key, any private
//! key at all), a redactor for the text the harness copies out of its private directory (the
//! installer's log), and a scan of a published directory for any of them (a run checks its
//! own run directory before it ends: a leak is the harness's error, never a quiet upload).

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

pub mod ignition;

/// What no published file may hold, whatever run it comes from: a private key in PEM, plainly,
/// percent-encoded (an Ignition data URL) or in base64 (a kubeconfig's `client-key-data`, a
/// base64 data URL).
const MARKERS: &[(&str, &str)] = &[
    ("a PEM private key", "PRIVATE KEY-----"),
    ("a percent-encoded PEM private key", "PRIVATE%20KEY-----"),
    // base64 of "-----BEGIN RSA PRIVATE KEY", "-----BEGIN EC PRIVATE KEY",
    // "-----BEGIN PRIVATE KEY" and "-----BEGIN OPENSSH PRIVATE KEY", as they start a value.
    (
        "a base64 PEM private key",
        "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRV",
    ),
    (
        "a base64 PEM private key",
        "LS0tLS1CRUdJTiBFQyBQUklWQVRFIEtFW",
    ),
    ("a base64 PEM private key", "LS0tLS1CRUdJTiBQUklWQVRFIEtFW"),
    (
        "a base64 PEM private key",
        "LS0tLS1CRUdJTiBPUEVOU1NIIFBSSVZBVEUgS0VZ",
    ),
];

/// The shortest secret looked for: shorter ones would be found by chance.
const MIN_NEEDLE: usize = 12;

/// How much of one file the scan reads (a run's journals and console are a few MiB).
const SCAN_CAP: u64 = 512 << 20;

/// One run's secrets, each with what it is.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    needles: Vec<(String, String)>,
}

impl Secrets {
    /// Adds `value` as `what`, when long enough to be told from chance.
    pub fn add(&mut self, what: &str, value: &str) {
        let v = value.trim();
        if v.len() >= MIN_NEEDLE && !self.needles.iter().any(|(_, n)| n == v) {
            self.needles.push((what.to_string(), v.to_string()));
        }
    }

    /// The pull secret: the whole text, and each registry's `auth` and `password`.
    pub fn add_pull_secret(&mut self, text: &str) {
        self.add("the pull secret", text);
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(text) {
            for reg in v["auths"].as_object().into_iter().flat_map(|m| m.values()) {
                for key in ["auth", "password", "identitytoken"] {
                    if let Some(s) = reg[key].as_str() {
                        self.add("the pull secret's credentials", s);
                    }
                }
            }
        }
    }

    /// A kubeconfig's client keys (`client-key-data`: base64 of a whole PEM key). A key's body
    /// lines are not taken one by one: the public half of a key (an RSA modulus, an EC point,
    /// the public part of an OpenSSH key) stands in certificates, CSRs and `authorized_keys`,
    /// which may be published; a leaked key is found by its PEM header, in any encoding.
    pub fn add_kubeconfig(&mut self, what: &str, text: &str) {
        for b64 in text
            .lines()
            .filter_map(|l| l.trim().strip_prefix("client-key-data:"))
            .map(|v| v.trim().trim_matches('"'))
        {
            self.add(what, b64);
        }
    }

    /// What a run's private directory holds of them: the kubeadmin password and the admin
    /// kubeconfig's client key (files that are missing are skipped). The run's SSH key, as
    /// every private key, is found by its PEM header.
    pub fn add_private_dir(&mut self, private: &Path) {
        let read = |rel: &str| fs::read_to_string(private.join(rel)).unwrap_or_default();
        self.add(
            "the kubeadmin password",
            &read("assets/auth/kubeadmin-password"),
        );
        self.add_kubeconfig("the admin client key", &read("assets/auth/kubeconfig"));
    }

    pub fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }

    /// `text` with every secret and every PEM private key block replaced by a marker.
    pub fn redact(&self, text: &str) -> String {
        let mut out = redact_pem_blocks(text);
        for (what, needle) in &self.needles {
            out = out.replace(needle.as_str(), &format!("<redacted: {what}>"));
        }
        out
    }

    /// What of the secrets (or of any private key) `bytes` holds, as what they are.
    pub fn found_in(&self, bytes: &[u8]) -> Vec<String> {
        let text = String::from_utf8_lossy(bytes);
        let mut found: Vec<String> = Vec::new();
        let all = self
            .needles
            .iter()
            .map(|(w, n)| (w.as_str(), n.as_str()))
            .chain(MARKERS.iter().copied());
        for (what, needle) in all {
            if text.contains(needle) && !found.iter().any(|f| f == what) {
                found.push(what.to_string());
            }
        }
        found
    }

    /// Every file under `dir` (links not followed, gzip read through) that holds a secret.
    pub fn scan(&self, dir: &Path) -> Vec<Leak> {
        let mut leaks = Vec::new();
        let mut files = Vec::new();
        files_under(dir, &mut files);
        for f in files {
            let Ok(bytes) = read_capped(&f) else { continue };
            let found = self.found_in(&bytes);
            if !found.is_empty() {
                leaks.push(Leak { file: f, found });
            }
        }
        leaks
    }
}

/// A published file that holds a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leak {
    pub file: PathBuf,
    /// What it holds (`the pull secret`, `a PEM private key`).
    pub found: Vec<String>,
}

impl std::fmt::Display for Leak {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} in {}", self.found.join(", "), self.file.display())
    }
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let Ok(t) = e.file_type() else { continue };
        if t.is_dir() {
            files_under(&e.path(), out);
        } else if t.is_file() {
            out.push(e.path());
        }
    }
}

/// A file's bytes (at most `SCAN_CAP`), through gzip for `.gz` files.
fn read_capped(path: &Path) -> std::io::Result<Vec<u8>> {
    let file = fs::File::open(path)?;
    let mut bytes = Vec::new();
    if path.extension().is_some_and(|x| x == "gz") {
        flate2::read::MultiGzDecoder::new(file)
            .take(SCAN_CAP)
            .read_to_end(&mut bytes)?;
    } else {
        file.take(SCAN_CAP).read_to_end(&mut bytes)?;
    }
    Ok(bytes)
}

/// Every `-----BEGIN ... PRIVATE KEY-----` ... `-----END ...-----` block as one marker.
fn redact_pem_blocks(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("-----BEGIN") {
        let header_end = rest[start..].find('\n').map_or(rest.len(), |i| start + i);
        if !rest[start..header_end].contains("PRIVATE KEY") {
            out.push_str(&rest[..header_end]);
            rest = &rest[header_end..];
            continue;
        }
        out.push_str(&rest[..start]);
        out.push_str("<redacted: a private key>");
        rest = match rest[start..].find("-----END") {
            Some(e) => {
                let tail = &rest[start + e + "-----END".len()..];
                tail.find("-----").map_or("", |i| &tail[i + 5..])
            }
            None => "",
        };
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nAAAAC3NzaC1lZDI1NTE5AAAAIExampleExample\n-----END OPENSSH PRIVATE KEY-----\n";

    fn secrets() -> Secrets {
        let mut s = Secrets::default();
        s.add_pull_secret(r#"{"auths":{"r.example":{"auth":"Y2FuYXJ5OnNlY3JldC12YWx1ZQ=="}}}"#);
        s.add("the kubeadmin password", "abcde-fghij-klmno-pqrst\n");
        s.add_kubeconfig(
            "the admin client key",
            "users:\n- user:\n    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlF\n",
        );
        s.add("too short", "abc");
        s
    }

    #[test]
    fn each_secret_is_found_by_what_it_is_and_short_values_are_not_taken() {
        let s = secrets();
        assert!(!s.needles.iter().any(|(w, _)| w == "too short"));
        let found =
            s.found_in(b"login: abcde-fghij-klmno-pqrst; auth Y2FuYXJ5OnNlY3JldC12YWx1ZQ==");
        assert_eq!(
            found,
            ["the pull secret's credentials", "the kubeadmin password"]
        );
        assert_eq!(s.found_in(KEY.as_bytes()), ["a PEM private key"]);
        assert_eq!(
            s.found_in(b"client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlF")[0],
            "the admin client key"
        );
        // The public half of a key, as authorized_keys and certificates carry it, is no leak.
        assert!(s
            .found_in(b"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExampleExample")
            .is_empty());
        assert!(s.found_in(b"nothing of it here").is_empty());
    }

    #[test]
    fn any_private_key_is_found_plain_percent_encoded_or_in_base64() {
        let none = Secrets::default();
        for text in [
            "x -----BEGIN RSA PRIVATE KEY----- y",
            "data:,-----BEGIN%20EC%20PRIVATE%20KEY-----%0A",
            "client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQo=",
            "data:;base64,LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCg==",
        ] {
            assert!(!none.found_in(text.as_bytes()).is_empty(), "{text}");
        }
        assert!(none.found_in(b"-----BEGIN CERTIFICATE-----").is_empty());
    }

    #[test]
    fn redaction_takes_out_secrets_and_whole_key_blocks_and_keeps_the_rest() {
        let s = secrets();
        let text = format!("before\n{KEY}middle abcde-fghij-klmno-pqrst\n-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\nend");
        let r = s.redact(&text);
        assert!(s.found_in(r.as_bytes()).is_empty(), "{r}");
        assert!(
            r.contains(
                "before\n<redacted: a private key>\nmiddle <redacted: the kubeadmin password>"
            ),
            "{r}"
        );
        assert!(r.contains("-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\nend"));
    }

    #[test]
    fn the_scan_reads_gzip_and_nested_files_and_names_each_leak() {
        let t = tempfile::tempdir().unwrap();
        let s = secrets();
        fs::create_dir_all(t.path().join("gather/api")).unwrap();
        fs::write(t.path().join("clean.txt"), "nothing").unwrap();
        fs::write(
            t.path().join("gather/api/x.json"),
            "abcde-fghij-klmno-pqrst",
        )
        .unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, KEY.as_bytes()).unwrap();
        fs::write(t.path().join("journal.json.gz"), gz.finish().unwrap()).unwrap();
        let outside = tempfile::NamedTempFile::new().unwrap();
        fs::write(outside.path(), "abcde-fghij-klmno-pqrst").unwrap();
        std::os::unix::fs::symlink(outside.path(), t.path().join("link")).unwrap();
        let mut leaks: Vec<String> = s.scan(t.path()).iter().map(|l| l.to_string()).collect();
        leaks.sort();
        assert_eq!(leaks.len(), 2, "{leaks:?}");
        assert!(
            leaks[1].starts_with("the kubeadmin password in "),
            "{leaks:?}"
        );
        assert!(
            leaks[0].starts_with("a PEM private key in ") && leaks[0].contains("journal.json.gz"),
            "{leaks:?}"
        );
    }
}
