//! `--backend redfish`'s own flags: the BMC, where its credentials are (never on the command
//! line: other users see a process's arguments), the address the BMC reaches the harness at,
//! and the machine's SSH and API as `observe` takes them.

use std::path::PathBuf;

use sno_harness::vm::backend::{BackendError, BmcMachine, REDFISH};
use sno_harness::vm::redfish::{Fingerprint, Trust};

use super::error::{bad, CliError};
use super::observe_inputs as inputs;

#[derive(clap::Args, Default, Clone)]
pub struct BmcFlags {
    /// `--backend redfish`: the machine's BMC, `http[s]://HOST[:PORT]` or
    /// `.../redfish/v1/Systems/ID` naming its system. Its user and password come from
    /// --bmc-credentials or SNO_BMC_USER and SNO_BMC_PASSWORD.
    #[arg(long, value_name = "URL")]
    pub bmc: Option<String>,
    /// `--backend redfish`: an owner-only file holding the BMC's `USER:PASSWORD`.
    #[arg(long, value_name = "FILE")]
    pub bmc_credentials: Option<PathBuf>,
    /// `--backend redfish`: trust the BMC's https certificate when a CA of this PEM file signed
    /// it for the URL's host (BMCs mostly carry self-signed certificates).
    #[arg(long, value_name = "FILE", conflicts_with = "bmc_fingerprint")]
    pub bmc_ca_file: Option<PathBuf>,
    /// `--backend redfish`: trust the BMC's https certificate that has this SHA-256 fingerprint
    /// (`openssl x509 -noout -fingerprint -sha256`: 32 pairs such as AB:CD:...), whatever its
    /// names and dates.
    #[arg(long, value_name = "SHA256")]
    pub bmc_fingerprint: Option<String>,
    /// `--backend redfish`: the address of this host the BMC fetches the live ISO from
    /// [default: 127.0.0.1, a BMC emulator on this host].
    #[arg(long, value_name = "IP")]
    pub bmc_serve_at: Option<std::net::IpAddr>,
    /// `--backend redfish`: where this host reaches the machine's SSH, USER@HOST[:PORT].
    #[arg(long, value_name = "USER@HOST[:PORT]")]
    pub ssh: Option<String>,
    /// `--backend redfish`: where this host reaches the machine's API, HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    pub api: Option<String>,
}

impl BmcFlags {
    /// The flags given, by name, for a refusal.
    fn given(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        let named = [
            ("--bmc", self.bmc.is_some()),
            ("--bmc-credentials", self.bmc_credentials.is_some()),
            ("--bmc-ca-file", self.bmc_ca_file.is_some()),
            ("--bmc-fingerprint", self.bmc_fingerprint.is_some()),
            ("--bmc-serve-at", self.bmc_serve_at.is_some()),
            ("--ssh", self.ssh.is_some()),
            ("--api", self.api.is_some()),
        ];
        for (name, is) in named {
            if is {
                out.push(name);
            }
        }
        out
    }

    /// The machine `--backend redfish` boots; for another backend, none of these flags may be
    /// given.
    pub fn machine(&self, backend: &str) -> Result<Option<BmcMachine>, CliError> {
        if backend != REDFISH {
            return match self.given().first() {
                Some(flag) => Err(bad(format!(
                    "{flag} is --backend redfish's: give --backend redfish with it, or leave it out"
                ))),
                None => Ok(None),
            };
        }
        let (Some(bmc), Some(ssh), Some(api)) = (&self.bmc, &self.ssh, &self.api) else {
            return Err(bad(BackendError::RedfishWithoutMachine));
        };
        if let Some(f) = &self.bmc_credentials {
            if !f.is_file() {
                return Err(bad(format!(
                    "--bmc-credentials {}: not a file; give an owner-only file holding USER:PASSWORD",
                    f.display()
                )));
            }
        }
        let trust = self.trust()?;
        let (user, ssh) = inputs::ssh_target(ssh)?;
        let api = inputs::api_address(Some(api), "", "--api")?;
        Ok(Some(BmcMachine {
            bmc: bmc.clone(),
            credentials: self.bmc_credentials.clone(),
            serve_at: self
                .bmc_serve_at
                .unwrap_or(std::net::Ipv4Addr::LOCALHOST.into()),
            ssh,
            user,
            api,
            trust,
        }))
    }

    /// Whom the client trusts on https: a CA file that is a regular readable file, or a
    /// fingerprint that parses; else the system's roots.
    fn trust(&self) -> Result<Trust, CliError> {
        if let Some(f) = &self.bmc_ca_file {
            if !f.is_file() {
                return Err(bad(format!(
                    "--bmc-ca-file {}: not a file; give a PEM file of the CA that signed the BMC's certificate",
                    f.display()
                )));
            }
            return Ok(Trust::CaFile(f.clone()));
        }
        match &self.bmc_fingerprint {
            Some(f) => Fingerprint::parse(f)
                .map(Trust::Fingerprint)
                .map_err(|e| bad(format!("--bmc-fingerprint: {e}"))),
            None => Ok(Trust::System),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_are_redfishs_alone() {
        let none = BmcFlags::default();
        assert!(none.machine("qemu").unwrap().is_none());
        let stray = BmcFlags {
            bmc: Some("http://127.0.0.1:8000".into()),
            ..Default::default()
        };
        let e = stray.machine("libvirt").unwrap_err();
        assert_eq!(e.code(), 2);
        assert!(
            e.message().contains("--bmc is --backend redfish's"),
            "{}",
            e.message()
        );
        let e = stray.machine(REDFISH).unwrap_err();
        assert!(
            e.message().contains("--ssh USER@HOST[:PORT]"),
            "{}",
            e.message()
        );
    }

    #[test]
    fn a_redfish_machine_is_its_bmc_and_its_addresses() {
        let flags = BmcFlags {
            bmc: Some("http://127.0.0.1:8000/redfish/v1/Systems/x".into()),
            ssh: Some("core@127.0.0.1:2222".into()),
            api: Some("127.0.0.1:6443".into()),
            ..Default::default()
        };
        let m = flags.machine(REDFISH).unwrap().unwrap();
        assert_eq!(m.user, "core");
        assert_eq!(m.ssh, "127.0.0.1:2222".parse().unwrap());
        assert_eq!(m.api, "127.0.0.1:6443".parse().unwrap());
        assert_eq!(m.serve_at, std::net::IpAddr::from([127, 0, 0, 1]));
        assert_eq!(
            m.flags(),
            " --backend redfish --bmc http://127.0.0.1:8000/redfish/v1/Systems/x --bmc-serve-at 127.0.0.1 --ssh core@127.0.0.1:2222 --api 127.0.0.1:6443"
        );
        let bad_ssh = BmcFlags {
            ssh: Some("127.0.0.1".into()),
            ..flags
        };
        assert!(bad_ssh
            .machine(REDFISH)
            .unwrap_err()
            .message()
            .contains("--ssh"));
    }

    #[test]
    fn the_bmcs_certificate_is_trusted_by_a_ca_file_or_a_fingerprint_and_bad_ones_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("bmc-ca.pem");
        std::fs::write(&ca, "-----BEGIN CERTIFICATE-----\n").unwrap();
        let base = BmcFlags {
            bmc: Some("https://192.0.2.9".into()),
            ssh: Some("core@192.0.2.10".into()),
            api: Some("192.0.2.10:6443".into()),
            ..Default::default()
        };
        let with_ca = BmcFlags {
            bmc_ca_file: Some(ca.clone()),
            ..base.clone()
        };
        let m = with_ca.machine(REDFISH).unwrap().unwrap();
        assert_eq!(m.trust, Trust::CaFile(ca.clone()));
        assert!(m
            .flags()
            .contains(&format!(" --bmc-ca-file {}", ca.display())));
        let record = sno_harness::registry::BmcRecord::of(&m);
        assert_eq!(
            record.trust().unwrap(),
            m.trust,
            "gc trusts what the run did"
        );

        let pairs = vec!["ab"; 32].join(":");
        let with_fp = BmcFlags {
            bmc_fingerprint: Some(pairs.clone()),
            ..base.clone()
        };
        let m = with_fp.machine(REDFISH).unwrap().unwrap();
        assert!(matches!(m.trust, Trust::Fingerprint(_)));
        assert!(m
            .flags()
            .contains(&format!(" --bmc-fingerprint {}", pairs.to_uppercase())));
        let record = sno_harness::registry::BmcRecord::of(&m);
        assert_eq!(record.trust().unwrap(), m.trust);

        let missing = BmcFlags {
            bmc_ca_file: Some(dir.path().join("none.pem")),
            ..base.clone()
        };
        let e = missing.machine(REDFISH).unwrap_err();
        assert_eq!(e.code(), 2);
        assert!(e.message().contains("--bmc-ca-file"), "{}", e.message());
        let short = BmcFlags {
            bmc_fingerprint: Some("AB:CD".into()),
            ..base
        };
        let e = short.machine(REDFISH).unwrap_err();
        assert_eq!(e.code(), 2);
        assert!(e.message().contains("--bmc-fingerprint"), "{}", e.message());
        assert!(e.message().contains("64 hex digits"), "{}", e.message());
        let stray = BmcFlags {
            bmc_fingerprint: Some(pairs),
            ..Default::default()
        };
        assert!(stray
            .machine("qemu")
            .unwrap_err()
            .message()
            .contains("--bmc-fingerprint is --backend redfish's"));
    }
}
