//! `matrix --hosts FILE`: the libvirt hosts a matrix spreads its permutations over, each with
//! optional limits of its own. TOML:
//!
//! ```toml
//! [[host]]
//! uri = "qemu+ssh://root@lab-1/system"
//! jobs = 2            # at most this many runs at once there [default: its CPUs]
//! memory = "48GiB"    # at most this much guest memory reserved there at once
//! cpus = 16           # count the host as having this many CPUs
//! ```
//!
//! Like a scenario, the file is input that may be hostile: every error names the file, the
//! line and what would be valid.

use std::fmt::Display;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use crate::scenario::{units::parse_size, Ctx, ScenarioError};
use crate::util::input_file;

/// One host of the file, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostEntry {
    /// A libvirt URI the harness can use (`qemu:///system`, `qemu+ssh://...`).
    pub uri: String,
    pub limits: HostLimits,
}

/// What the user allows the harness on one host, on top of what the host has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostLimits {
    pub jobs: Option<u32>,
    pub memory_bytes: Option<u64>,
    pub cpus: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    host: Option<Vec<Spanned<RawHost>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHost {
    uri: Spanned<String>,
    jobs: Option<Spanned<i64>>,
    memory: Option<Spanned<String>>,
    cpus: Option<Spanned<i64>>,
}

/// At most this many hosts: each is probed every few seconds while a matrix runs.
pub const MAX_HOSTS: usize = 64;
const MAX_JOBS: i64 = 256;
const MAX_CPUS: i64 = 4096;
const MIN_MEMORY: u64 = 1 << 30;

/// Reads and checks a hosts file; `check_uri` says what is wrong with a URI (its error shown
/// at the URI's line), or which daemon it reaches (two hosts of one daemon are refused).
pub fn load<D: PartialEq + Display, E: Display>(
    path: &Path,
    check_uri: impl Fn(&str) -> Result<D, E>,
) -> Result<Vec<HostEntry>, ScenarioError> {
    let whole = |message: String| ScenarioError {
        file: path.to_path_buf(),
        line: None,
        column: None,
        message,
    };
    let bytes = input_file::read_bytes(path, input_file::SCENARIO)
        .map_err(|e| whole(format!("cannot read the hosts file: {}", e.problem)))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| whole("not UTF-8: a hosts file is TOML text ([[host]] uri = ...)".into()))?;
    parse_str(path, &text, check_uri)
}

/// Parses and checks the text of a hosts file; `check_uri` as for [`load`].
pub fn parse_str<D: PartialEq + Display, E: Display>(
    path: &Path,
    text: &str,
    check_uri: impl Fn(&str) -> Result<D, E>,
) -> Result<Vec<HostEntry>, ScenarioError> {
    let cx = Ctx { file: path, text };
    let raw: RawFile = toml::from_str(text)
        .map_err(|e| cx.err(e.span(), e.message().trim().replace('\n', "; ")))?;
    let hosts = raw.host.unwrap_or_default();
    if hosts.is_empty() {
        return Err(cx.err(
            None,
            "no host: give one [[host]] table per libvirt host, each with uri = \"qemu+ssh://user@host/system\"",
        ));
    }
    if hosts.len() > MAX_HOSTS {
        return Err(cx.err(
            Some(hosts[MAX_HOSTS].span()),
            format!("{} hosts; at most {MAX_HOSTS}", hosts.len()),
        ));
    }
    let mut out: Vec<(HostEntry, D)> = Vec::new();
    for h in hosts {
        let h = h.into_inner();
        let span = h.uri.span();
        let (entry, daemon) = host(&cx, h, &check_uri)?;
        let twice = |message: String| Err(cx.err(Some(span.clone()), message));
        match out.iter().find(|(_, d)| *d == daemon) {
            Some((o, _)) if o.uri == entry.uri => {
                return twice(format!("host {:?} is listed twice", entry.uri))
            }
            Some((o, _)) => {
                return twice(format!(
                    "host {:?} reaches the same libvirt daemon as host {:?} ({daemon}): list each host once",
                    entry.uri, o.uri
                ))
            }
            None => out.push((entry, daemon)),
        }
    }
    Ok(out.into_iter().map(|(h, _)| h).collect())
}

fn host<D, E: Display>(
    cx: &Ctx,
    h: RawHost,
    check_uri: &impl Fn(&str) -> Result<D, E>,
) -> Result<(HostEntry, D), ScenarioError> {
    let daemon = check_uri(h.uri.get_ref()).map_err(|e| cx.err(Some(h.uri.span()), e))?;
    let count =
        |v: &Option<Spanned<i64>>, key: &str, max: i64| -> Result<Option<u32>, ScenarioError> {
            let Some(v) = v else { return Ok(None) };
            let n = *v.get_ref();
            if !(1..=max).contains(&n) {
                return Err(cx.err(Some(v.span()), format!("{key} = {n}: from 1 to {max}")));
            }
            Ok(Some(n as u32))
        };
    let memory_bytes = match &h.memory {
        None => None,
        Some(m) => {
            let b = parse_size(m.get_ref()).map_err(|e| cx.err(Some(m.span()), e))?;
            if b < MIN_MEMORY {
                return Err(cx.err(
                    Some(m.span()),
                    format!(
                        "memory = {:?}: at least 1GiB (a VM needs more)",
                        m.get_ref()
                    ),
                ));
            }
            Some(b)
        }
    };
    let limits = HostLimits {
        jobs: count(&h.jobs, "jobs", MAX_JOBS)?,
        memory_bytes,
        cpus: count(&h.cpus, "cpus", MAX_CPUS)?,
    };
    let entry = HostEntry {
        uri: h.uri.into_inner(),
        limits,
    };
    Ok((entry, daemon))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<HostEntry>, String> {
        // The daemon of a test URI: the URI without its parameters.
        let check = |u: &str| {
            if u.starts_with("qemu") {
                Ok(u.split('?').next().unwrap_or(u).to_string())
            } else {
                Err(format!("{u:?} is not a libvirt URI"))
            }
        };
        parse_str(Path::new("hosts.toml"), text, check).map_err(|e| e.to_string())
    }

    #[test]
    fn hosts_with_and_without_limits() {
        let hosts = parse(
            "[[host]]\nuri = \"qemu+ssh://root@a/system\"\njobs = 2\nmemory = \"16GiB\"\ncpus = 8\n\n[[host]]\nuri = \"qemu:///system\"\n",
        )
        .unwrap();
        assert_eq!(hosts.len(), 2);
        assert_eq!(
            hosts[0].limits,
            HostLimits {
                jobs: Some(2),
                memory_bytes: Some(16 << 30),
                cpus: Some(8)
            }
        );
        assert_eq!(hosts[1].uri, "qemu:///system");
        assert_eq!(hosts[1].limits, HostLimits::default());
    }

    #[test]
    fn bad_files_name_the_line_and_what_is_valid() {
        let cases = [
            ("", "hosts.toml: no host"),
            (
                "[[host]]\nuri = \"ftp://x\"\n",
                "hosts.toml:2:7: \"ftp://x\" is not a libvirt URI",
            ),
            (
                "[[host]]\nuri = \"qemu:///system\"\njobs = 0\n",
                "hosts.toml:3:8: jobs = 0: from 1 to 256",
            ),
            (
                "[[host]]\nuri = \"qemu:///system\"\ncpus = -3\n",
                "hosts.toml:3:8: cpus = -3",
            ),
            (
                "[[host]]\nuri = \"qemu:///system\"\nmemory = \"12\"\n",
                "at least 1GiB",
            ),
            (
                "[[host]]\nuri = \"qemu:///system\"\nmemory = \"lots\"\n",
                "hosts.toml:3:10: \"lots\" is not a size",
            ),
            (
                "[[host]]\nuri = \"qemu:///system\"\nweight = 3\n",
                "hosts.toml:3:1: unknown field `weight`",
            ),
            ("[[host]]\njobs = 1\n", "missing field `uri`"),
            (
                "[[host]]\nuri = \"qemu:///system\"\n[[host]]\nuri = \"qemu:///system\"\n",
                "hosts.toml:4:7: host \"qemu:///system\" is listed twice",
            ),
            (
                "[[host]]\nuri = \"qemu:///system\"\n[[host]]\nuri = \"qemu:///system?x=1\"\n",
                "hosts.toml:4:7: host \"qemu:///system?x=1\" reaches the same libvirt daemon as host \"qemu:///system\" (qemu:///system)",
            ),
            ("host = 3\n", "hosts.toml:1:8"),
        ];
        for (text, want) in cases {
            let got = parse(text).unwrap_err();
            assert!(got.contains(want), "{text:?}: {got}");
        }
    }

    #[test]
    fn the_example_on_the_format_page_loads() {
        let page = include_str!("../../../docs/scenario-format.md");
        let block = page
            .split("```toml\n")
            .filter_map(|b| b.split("```").next())
            .find(|b| b.contains("[[host]]"))
            .expect("docs/scenario-format.md has a hosts example");
        let hosts = parse(block).unwrap();
        assert_eq!(hosts.len(), 3);
        assert_eq!(hosts[0].limits.jobs, Some(2));
        assert_eq!(hosts[0].limits.memory_bytes, Some(48 << 30));
        assert_eq!(hosts[1].limits, HostLimits::default());
        // A bare ~/.ssh/config alias is a host like any other.
        assert_eq!(hosts[2].uri, "qemu+ssh://lab-3/system");
    }

    #[test]
    fn too_many_hosts_are_refused() {
        let text: String = (0..=MAX_HOSTS)
            .map(|i| format!("[[host]]\nuri = \"qemu+ssh://h{i}/system\"\n"))
            .collect();
        assert!(parse(&text).unwrap_err().contains("at most 64"));
    }
}
