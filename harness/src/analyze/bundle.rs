//! An installer's log bundle, in either of its layouts, read for what judges the install: the
//! service records and the journals.
//!
//! openshift/installer's data/data/bootstrap/files/usr/local/bin/installer-gather.sh writes
//! `log-bundle-<id>/` with `bootstrap/services/<service>.json` (a copy of
//! /var/log/openshift), `bootstrap/journals/<unit>.log` (`journalctl --boot --output=short
//! --unit=<unit>`), `failed-units.txt`, `unit-status/`, `bootstrap/network/`,
//! `bootstrap/containers/`, `bootstrap/pods/`, `rendered-assets/` and `resources/`. In
//! bootstrap-in-place the live system runs it as `--id bootstrap` before the install
//! (bootstrap-in-place.sh), so its bundle is `log-bundle-bootstrap/bootstrap/...` and travels
//! to the installed system as /var/log/log-bundle-bootstrap.tar.gz; a gather there unpacks it
//! inside its own, giving `log-bundle-<id>/log-bundle-bootstrap/bootstrap/...`, with the
//! post-reboot script's journal in `bootstrap-in-place/journals/`. pkg/gather/service/analyze.go
//! finds the records of both by the suffix `/bootstrap/services/<service>.json`; so does this.

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use super::archive::{self, Member};
use super::journal::{self, ShortContext};
use super::limits::Limits;
use super::records::{self, ServiceAnalysis};
use super::AnalyzeError;

/// The boot the bundle's bootstrap journals come from (`--boot` of the bootstrap host, which
/// is the live system in bootstrap-in-place).
pub const BOOTSTRAP_BOOT: &str = "log-bundle:bootstrap";
/// The boot of the post-reboot script's journal (the installed system).
pub const INSTALLED_BOOT: &str = "log-bundle:installed";

static RECORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(^|/)bootstrap/services/([^./]+)\.json$").expect("the pattern is valid")
});
static JOURNAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(^|/)(bootstrap|bootstrap-in-place)/journals/([^/]+)\.log$")
        .expect("the pattern is valid")
});

/// What a bundle holds for the analysis.
#[derive(Debug, Default)]
pub struct Contents {
    pub layout: String,
    pub services: Vec<ServiceAnalysis>,
    /// Each journal member and its entries.
    pub journals: Vec<(String, journal::Read)>,
}

/// Reads the bundle at `path`.
pub fn read(path: &Path, limits: &Limits) -> Result<Contents, AnalyzeError> {
    let members = archive::read(path, limits, |name| {
        RECORD.is_match(name) || JOURNAL.is_match(name)
    })?;
    contents(path, &members, limits)
}

/// The records and journals among the kept members.
pub fn contents(
    path: &Path,
    members: &[Member],
    limits: &Limits,
) -> Result<Contents, AnalyzeError> {
    let mut out = Contents {
        layout: layout(members),
        ..Default::default()
    };
    for m in members {
        if let Some(c) = RECORD.captures(&m.name) {
            out.services
                .push(records::analyze(&c[2], &m.name, &m.bytes));
        }
    }
    out.services
        .sort_by(|a, b| a.service.cmp(&b.service).then(a.file.cmp(&b.file)));
    // Gathered on the installed system, the bundle's own journals are that system's, and the
    // live system's are those of the bundle inside it.
    let post_pivot = members
        .iter()
        .any(|m| m.name.contains("log-bundle-bootstrap/"))
        && !members
            .iter()
            .all(|m| m.name.starts_with("log-bundle-bootstrap/"));
    for m in members {
        let Some(c) = JOURNAL.captures(&m.name) else {
            continue;
        };
        let inner = m.name.contains("log-bundle-bootstrap/");
        let installed = &c[2] == "bootstrap-in-place" || (post_pivot && !inner);
        let ctx = ShortContext {
            // The post-reboot script runs as the installed system's bootkube.service.
            unit: match &c[2] {
                "bootstrap-in-place" => "bootkube.service".to_string(),
                _ => format!("{}.service", &c[3]),
            },
            boot_id: match installed {
                true => INSTALLED_BOOT,
                false => BOOTSTRAP_BOOT,
            }
            .to_string(),
            year: journal::year_of(m.mtime),
        };
        let text = String::from_utf8_lossy(&m.bytes);
        let where_ = path.join(&m.name);
        let read = journal::parse_short(&where_, &text, &ctx, limits)?;
        out.journals.push((m.name.clone(), read));
    }
    Ok(out)
}

/// Which layout the members follow, in words.
fn layout(members: &[Member]) -> String {
    let names = || members.iter().map(|m| m.name.as_str());
    if names().any(|n| n.contains("/log-bundle-bootstrap/bootstrap/")) {
        "bootstrap-in-place, gathered on the installed system (the live system's log-bundle-bootstrap inside)".into()
    } else if names()
        .any(|n| n.starts_with("log-bundle-bootstrap/") || n.starts_with("./log-bundle-bootstrap/"))
    {
        "bootstrap-in-place, the live system's own bundle (log-bundle-bootstrap)".into()
    } else if members.is_empty() {
        "no service records and no journals".into()
    } else {
        "a bootstrap host's (installer-gather.sh)".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(name: &str, text: &str) -> Member {
        Member {
            name: name.into(),
            bytes: text.as_bytes().to_vec(),
            // 2026-11-30
            mtime: 1_795_996_800,
        }
    }

    // Written from the formats (bootstrap-service-record.sh, journalctl -o short), not recorded.
    const BOOTKUBE_RECORD: &str = r#"[
{"timestamp":"2026-11-30T09:43:20Z","phase":"service start"},
{"timestamp":"2026-11-30T09:43:21Z","phase":"stage start","stage":"cb-bootstrap"},
{"timestamp":"2026-11-30T09:43:25Z","phase":"stage end","stage":"cb-bootstrap","result":"failure","errorLine":"77 stage","errorMessage":"timed out waiting for the condition"},
{"timestamp":"2026-11-30T09:43:25Z","phase":"service end","result":"failure","errorLine":"77 stage","errorMessage":"exit status 1"}
]"#;

    #[test]
    fn both_layouts_give_the_records_and_the_journals_with_their_units_and_boots() {
        let normal = [
            member(
                "log-bundle-20261130/bootstrap/services/bootkube.json",
                BOOTKUBE_RECORD,
            ),
            member(
                "log-bundle-20261130/bootstrap/journals/bootkube.log",
                "Nov 30 09:43:21 host bootkube.sh[812]: Starting cluster-bootstrap...\n",
            ),
        ];
        let c = contents(Path::new("b.tar.gz"), &normal, &Limits::default()).unwrap();
        assert!(c.layout.starts_with("a bootstrap host's"), "{}", c.layout);
        assert_eq!(c.services.len(), 1);
        assert_eq!(c.services[0].service, "bootkube");
        assert_eq!(c.services[0].failing_stage.as_deref(), Some("cb-bootstrap"));
        let entries = &c.journals[0].1.entries;
        assert_eq!(entries.len(), 1);
        let crate::flow::event::Signal::Journal {
            unit,
            boot_id,
            identifier,
            ..
        } = &entries[0].signal
        else {
            panic!("a journal signal")
        };
        assert_eq!(
            (unit.as_str(), boot_id.as_str(), identifier.as_str()),
            ("bootkube.service", BOOTSTRAP_BOOT, "bootkube.sh")
        );

        let bip = [
            member("log-bundle-x/log-bundle-bootstrap/bootstrap/services/release-image.json", "[]"),
            member(
                "log-bundle-x/bootstrap-in-place/journals/bootstrap-in-place-post-reboot.log",
                "Nov 30 10:01:00 host bootstrap-in-place-post-reboot.sh[900]: Waiting for api ...\n",
            ),
        ];
        let c = contents(Path::new("b.tar.gz"), &bip, &Limits::default()).unwrap();
        assert!(
            c.layout.contains("gathered on the installed system"),
            "{}",
            c.layout
        );
        assert_eq!(c.services[0].service, "release-image");
        assert_eq!(c.services[0].starts, 0);
        let crate::flow::event::Signal::Journal { unit, boot_id, .. } =
            &c.journals[0].1.entries[0].signal
        else {
            panic!("a journal signal")
        };
        assert_eq!(
            (unit.as_str(), boot_id.as_str()),
            ("bootkube.service", INSTALLED_BOOT)
        );

        let live = [member(
            "log-bundle-bootstrap/bootstrap/services/bootkube.json",
            BOOTKUBE_RECORD,
        )];
        let c = contents(Path::new("b.tar.gz"), &live, &Limits::default()).unwrap();
        assert!(
            c.layout.contains("the live system's own bundle"),
            "{}",
            c.layout
        );
    }
}
