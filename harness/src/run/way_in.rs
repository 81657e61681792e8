//! How the user gets into a VM the run leaves for them: a kept VM that runs on after the
//! harness (`--keep`), or a failed run paused at its verdict (`--pause-on-failure`). The same
//! ways in for both: `sno-harness ssh` and `console` by the run's id, the plain ssh command
//! with the run's key, and the admin kubeconfig when the API answered.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use super::artifacts::{login_line, FORWARDED_KUBECONFIG};

/// Where a kept or paused run's VM is reached.
pub struct WayIn<'a> {
    pub run_id: &'a str,
    /// The run's private directory (its key, its kubeconfig).
    pub private: &'a Path,
    /// The guest's SSH as the harness reaches it (a loopback forward, or the node's address on
    /// a NAT network).
    pub ssh_at: SocketAddr,
    /// The admin kubeconfig pointed at the API as the harness reached it, when the API
    /// answered and it was written.
    pub kubeconfig: Option<PathBuf>,
}

impl WayIn<'_> {
    /// The lines that say how to get in, each indented under the caller's heading.
    pub fn lines(&self) -> Vec<String> {
        let private = crate::util::lexical_absolute(self.private);
        let mut lines = vec![
            format!(
                "  sno-harness ssh {}            (a shell as core; `-- journalctl -f -u bootkube` for one command)",
                self.run_id
            ),
            format!(
                "  sno-harness console {}        (the serial console, read-only; -i to type)",
                self.run_id
            ),
            login_line(&private, self.ssh_at, "  or, without sno-harness:"),
        ];
        match &self.kubeconfig {
            Some(k) => lines.push(format!(
                "  export KUBECONFIG={}   (the admin kubeconfig, to the API as the run reached it)",
                crate::util::lexical_absolute(k).display()
            )),
            None => lines.push("  (no kubeconfig: the API never answered)".into()),
        }
        lines
    }
}

/// The admin kubeconfig of the run's private directory, when it was written.
pub fn written_kubeconfig(private: &Path) -> Option<PathBuf> {
    let k = private.join(FORWARDED_KUBECONFIG);
    k.is_file().then_some(k)
}

/// What runs on after the harness exits.
pub enum LeftVm<'a> {
    /// QEMU started by the harness, by its pid.
    Qemu { pid: u32 },
    /// A libvirt domain, by its name (and its QEMU's pid).
    Domain { name: &'a str, pid: u32 },
    /// A machine its BMC leaves powered on.
    PoweredOn,
}

impl std::fmt::Display for LeftVm<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LeftVm::Qemu { pid } => write!(f, "QEMU pid {pid}"),
            LeftVm::Domain { name, pid } => write!(f, "libvirt domain {name}, QEMU pid {pid}"),
            LeftVm::PoweredOn => f.write_str("the machine, left powered on by its BMC"),
        }
    }
}

/// A VM the run leaves running: passed (the cluster is the user's to use) or failed (the node
/// is theirs to look into, `failed` saying where).
pub struct KeptVm<'a> {
    pub way_in: WayIn<'a>,
    pub vm: LeftVm<'a>,
    /// The phase and reason of a failed run; `None` when it passed.
    pub failed: Option<String>,
    pub install: &'a crate::scenario::model::InstallSpec,
}

/// What the user is told about a VM left running: why it runs on, how to get in (and, for a
/// passing run, what `openshift-install wait-for install-complete` tells: the console's URL
/// and the kubeadmin password's file), and how to stop it.
pub fn kept_vm_instructions(k: &KeptVm<'_>) -> String {
    let private = crate::util::lexical_absolute(k.way_in.private);
    let mut lines = vec![match &k.failed {
        None => format!(
            "sno-harness: --keep: the cluster runs on in its VM ({}); its API and SSH are forwarded as below.",
            k.vm
        ),
        Some(why) => format!(
            "sno-harness: --keep: the run failed ({why}); its VM runs on ({}) for you to look into.",
            k.vm
        ),
    }];
    lines.push("To get in:".into());
    lines.extend(k.way_in.lines());
    if k.failed.is_none() {
        let apps = format!("apps.{}.{}", k.install.cluster, k.install.base_domain);
        lines.push(format!(
            "  the console: https://console-openshift-console.{apps} (its name must reach the VM's ingress; only the API and SSH are forwarded here)"
        ));
        lines.push(format!(
            "  the kubeadmin password is in {}",
            private.join("assets/auth/kubeadmin-password").display()
        ));
    }
    lines.push(match k.vm {
        LeftVm::PoweredOn => format!(
            "When done, power the machine off with `sno-harness gc` (it asks the BMC; the run's secrets stay in {}, outside --out; remove it to free them).",
            private.display()
        ),
        _ => format!(
            "When done, stop the VM with `sno-harness gc` (its disks and secrets stay in {}, outside --out; remove it to free them).",
            private.display()
        ),
    });
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn install() -> crate::scenario::model::InstallSpec {
        crate::scenario::load(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/smoke.toml"),
        )
        .unwrap()
        .install
    }

    fn way_in(private: &Path, kubeconfig: Option<PathBuf>) -> WayIn<'_> {
        WayIn {
            run_id: "smoke",
            private,
            ssh_at: "127.0.0.1:40022".parse().unwrap(),
            kubeconfig,
        }
    }

    #[test]
    fn the_ways_in_name_the_runs_commands_its_key_and_port_and_the_kubeconfig_when_there_is_one() {
        let p = Path::new("/var/tmp/sno-harness-0/smoke-x");
        let text = way_in(p, Some(p.join(FORWARDED_KUBECONFIG)))
            .lines()
            .join("\n");
        assert!(text.contains("sno-harness ssh smoke "), "{text}");
        assert!(text.contains("sno-harness console smoke "), "{text}");
        assert!(
            text.contains("ssh -i /var/tmp/sno-harness-0/smoke-x/ssh-key -p 40022"),
            "{text}"
        );
        assert!(
            text.contains(
                "export KUBECONFIG=/var/tmp/sno-harness-0/smoke-x/assets/auth/kubeconfig-forwarded"
            ),
            "{text}"
        );
        let none = way_in(p, None).lines().join("\n");
        assert!(
            none.contains("no kubeconfig: the API never answered"),
            "{none}"
        );
        assert!(!none.contains("export KUBECONFIG"), "{none}");
    }

    #[test]
    fn a_failed_kept_vm_says_where_it_failed_and_a_passing_one_gives_the_clusters_console() {
        let p = Path::new("/r/private");
        let install = install();
        let failed = kept_vm_instructions(&KeptVm {
            way_in: way_in(p, None),
            vm: LeftVm::Domain {
                name: "sno-smoke-1",
                pid: 77,
            },
            failed: Some("install-to-disk: coreos-installer exited 1".into()),
            install: &install,
        });
        assert!(
            failed.starts_with("sno-harness: --keep: the run failed (install-to-disk: coreos-installer exited 1); its VM runs on (libvirt domain sno-smoke-1, QEMU pid 77)"),
            "{failed}"
        );
        assert!(!failed.contains("kubeadmin"), "{failed}");
        assert!(failed.ends_with("remove it to free them)."), "{failed}");
        assert!(failed.contains("`sno-harness gc`"), "{failed}");
        let passed = kept_vm_instructions(&KeptVm {
            way_in: way_in(p, Some(p.join(FORWARDED_KUBECONFIG))),
            vm: LeftVm::Qemu { pid: 12 },
            failed: None,
            install: &install,
        });
        assert!(
            passed.contains("the cluster runs on in its VM (QEMU pid 12)"),
            "{passed}"
        );
        assert!(
            passed.contains("/r/private/assets/auth/kubeadmin-password"),
            "{passed}"
        );
        assert!(
            passed.contains("console-openshift-console.apps."),
            "{passed}"
        );
    }
}
