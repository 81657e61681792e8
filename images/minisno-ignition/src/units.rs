//! systemd.units: contents, dropins, masking, and `systemctl enable`-like
//! symlinks computed from the unit's [Install] section.

use std::fs;

use crate::config::Unit;
use crate::error::{io_err, Result};
use crate::nodes::{ensure_symlink, lstat, mkdir_parents, write_atomic};
use crate::Applier;

const SYSDIR: &str = "/etc/systemd/system";
const UNIT_DIRS: [&str; 3] = [SYSDIR, "/usr/lib/systemd/system", "/lib/systemd/system"];
const PRESET: &str = "/etc/systemd/system-preset/20-ignition.preset";

/// The parts of an [Install] section that `systemctl enable` acts on.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Install {
    pub wanted_by: Vec<String>,
    pub required_by: Vec<String>,
    pub alias: Vec<String>,
    pub also: Vec<String>,
}

/// Parse a unit's [Install] section (`None` if it has none): comments, `\`
/// continuations, repeated keys, space-separated lists, empty resets.
pub fn parse_install(text: &str) -> Option<Install> {
    let (mut inst, mut found, mut in_install) = (Install::default(), false, false);
    let mut buf = String::new();
    for line in text.lines().map(str::trim) {
        if buf.is_empty() && (line.starts_with('#') || line.starts_with(';')) {
            continue;
        }
        if let Some(cont) = line.strip_suffix('\\') {
            buf.push_str(cont);
            buf.push(' ');
            continue;
        }
        buf.push_str(line);
        let logical = std::mem::take(&mut buf);
        if logical.starts_with('[') {
            in_install = logical.trim() == "[Install]";
            found |= in_install;
        }
        let Some((key, value)) = logical.split_once('=').filter(|_| in_install) else {
            continue;
        };
        let list = match key.trim() {
            "WantedBy" => &mut inst.wanted_by,
            "RequiredBy" => &mut inst.required_by,
            "Alias" => &mut inst.alias,
            "Also" => &mut inst.also,
            _ => continue,
        };
        if value.trim().is_empty() {
            list.clear();
        }
        list.extend(value.split_whitespace().map(str::to_string));
    }
    found.then_some(inst)
}

/// `foo@bar.service` -> `foo@.service`.
fn template_of(name: &str) -> Option<String> {
    let (prefix, rest) = name.split_once('@')?;
    Some(format!("{prefix}@{}", &rest[rest.rfind('.')?..]))
}

impl Applier<'_> {
    /// Find the unit file like systemd: returns (in-root path, text, masked).
    fn find_unit(&self, jp: &str, name: &str) -> Result<(Option<(String, String)>, bool)> {
        let mut masked = false;
        let candidates: Vec<String> = std::iter::once(name.to_string())
            .chain(template_of(name))
            .collect();
        for shown in UNIT_DIRS
            .iter()
            .flat_map(|d| candidates.iter().map(move |c| format!("{d}/{c}")))
        {
            let mut host = self.host(&shown);
            let Some(meta) = lstat(&host).map_err(io_err(jp, "inspect", &shown))? else {
                continue;
            };
            if meta.file_type().is_symlink() {
                let target = fs::read_link(&host).map_err(io_err(jp, "readlink", &shown))?;
                if target.as_os_str() == "/dev/null" {
                    masked = true;
                    continue;
                }
                // Resolve the link inside the root, not on the host.
                host = match target.to_str() {
                    Some(t) if t.starts_with('/') => self.host(t),
                    _ => host.with_file_name(target),
                };
            }
            let text = fs::read_to_string(&host).map_err(io_err(jp, "read", &shown))?;
            return Ok((Some((shown, text)), masked));
        }
        Ok((None, masked))
    }

    /// The links `systemctl enable` would create: (path under SYSDIR, label).
    fn install_links(&self, jp: &str, name: &str, inst: &Install) -> Result<Vec<(String, String)>> {
        let lists = [
            (&inst.wanted_by, ".wants"),
            (&inst.required_by, ".requires"),
        ];
        let mut links: Vec<(String, String)> = Vec::new();
        for (list, suffix) in lists {
            links.extend(
                list.iter()
                    .map(|t| (format!("{t}{suffix}/{name}"), format!("{t}{suffix}"))),
            );
        }
        links.extend(inst.alias.iter().map(|a| (a.clone(), format!("alias {a}"))));
        for (rel, _) in &links {
            let odd = rel.contains('%') || rel.contains("..") || rel.starts_with('/');
            ensure!(
                !odd,
                jp,
                "[Install] entry {rel:?} of {name} uses specifiers or odd paths (unsupported)"
            );
        }
        Ok(links)
    }

    fn enable(&mut self, jp: &str, name: &str) -> Result<()> {
        if name.contains("@.") {
            fail!(Apply, jp, "enabling template unit {name} (DefaultInstance=) is not supported; enable an instance such as foo@bar.service");
        }
        let (found, masked) = self.find_unit(jp, name)?;
        if masked {
            fail!(Apply, jp, "unit {name} is masked; cannot enable");
        }
        let Some((target, text)) = found else {
            fail!(
                Apply,
                jp,
                "unit {name} not found in {}; cannot enable",
                UNIT_DIRS.join(", ")
            );
        };
        let Some(inst) = parse_install(&text) else {
            fail!(
                Apply,
                jp,
                "unit {name} has no [Install] section; cannot enable"
            );
        };
        let links = self.install_links(jp, name, &inst)?;
        if links.is_empty() {
            fail!(
                Apply,
                jp,
                "unit {name} has no WantedBy=/RequiredBy=/Alias=; cannot enable"
            );
        }
        for (rel, label) in links {
            let shown = format!("{SYSDIR}/{rel}");
            ensure_symlink(&self.host(&shown), &target).map_err(io_err(jp, "symlink", &shown))?;
            self.log(format!("enabled {name} ({label})"));
        }
        for also in &inst.also {
            self.log(format!(
                "note: Also={also} of {name} is not followed; enable it explicitly"
            ));
        }
        Ok(())
    }

    fn disable(&mut self, jp: &str, name: &str) -> Result<()> {
        let inst = self
            .find_unit(jp, name)?
            .0
            .and_then(|(_, text)| parse_install(&text));
        let mut removed = false;
        for (rel, label) in self.install_links(jp, name, &inst.unwrap_or_default())? {
            let shown = format!("{SYSDIR}/{rel}");
            let meta = lstat(&self.host(&shown)).map_err(io_err(jp, "inspect", &shown))?;
            if meta.is_some_and(|m| m.file_type().is_symlink()) {
                fs::remove_file(self.host(&shown)).map_err(io_err(jp, "remove", &shown))?;
                self.log(format!("disabled {name} (removed {label})"));
                removed = true;
            }
        }
        if !removed {
            self.log(format!(
                "disabled {name} (no enablement symlinks to remove)"
            ));
        }
        Ok(())
    }

    fn write_unit_file(&mut self, jp: &str, shown: &str, contents: &str) -> Result<()> {
        let (host, (uid, gid)) = (self.host(shown), self.default_owner);
        mkdir_parents(&host).map_err(io_err(jp, "create parents of", shown))?;
        write_atomic(&host, contents.as_bytes(), 0o644, uid, gid)
            .map_err(io_err(jp, "write", shown))?;
        self.log(format!("wrote {shown} (mode 0644)"));
        Ok(())
    }

    pub(crate) fn apply_units(&mut self, units: &[Unit]) -> Result<()> {
        let mut presets = String::new();
        for (i, u) in units.iter().enumerate() {
            let (jp, name) = (format!("systemd.units[{i}]"), &u.name);
            let shown = format!("{SYSDIR}/{name}");
            if let Some(c) = &u.contents {
                self.write_unit_file(&jp, &shown, c)?;
            }
            for (j, d) in u.dropins.iter().flatten().enumerate() {
                let dropin = format!("{shown}.d/{}", d.name);
                match &d.contents {
                    Some(c) => self.write_unit_file(&format!("{jp}.dropins[{j}]"), &dropin, c)?,
                    None => self.log(format!("dropin {dropin} has no contents; nothing written")),
                }
            }
            let (jm, host) = (format!("{jp}.mask"), self.host(&shown));
            let is_masked = fs::read_link(&host).is_ok_and(|t| t.as_os_str() == "/dev/null");
            match u.mask {
                Some(true) => {
                    ensure_symlink(&host, "/dev/null").map_err(io_err(&jm, "symlink", &shown))?;
                    self.log(format!("masked {name} ({shown} -> /dev/null)"));
                }
                Some(false) if is_masked => {
                    fs::remove_file(&host).map_err(io_err(&jm, "remove", &shown))?;
                    self.log(format!("unmasked {name}"));
                }
                _ => {}
            }
            let je = format!("{jp}.enabled");
            match u.enabled {
                Some(true) => self.enable(&je, name)?,
                Some(false) => self.disable(&je, name)?,
                None => continue,
            }
            let verb = if u.enabled == Some(true) {
                "enable"
            } else {
                "disable"
            };
            presets.push_str(&format!("{verb} {name}\n"));
        }
        if !presets.is_empty() {
            self.write_unit_file("systemd.units", PRESET, &presets)?;
        }
        Ok(())
    }
}
