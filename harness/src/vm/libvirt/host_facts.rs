//! What a remote libvirt host says about itself, for the host context of a run's numbers: the
//! VM runs there, so this machine's QEMU version, CPU and kernel would describe the wrong host.
//! libvirt tells its hypervisor's version, the host's name and the CPU model it sees (its own
//! CPU model names, e.g. `EPYC-Rome`); it does not tell the kernel.

use quick_xml::events::Event;
use quick_xml::Reader;

use crate::result::HostContext;

/// A host's room now (`capacity` asks libvirtd for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeRoom {
    pub mem_available: u64,
    pub cpus: u32,
    pub disk_free: u64,
}

/// `virConnectGetVersion`'s number (major * 1,000,000 + minor * 1,000 + release) as text.
pub fn version_text(v: u32) -> String {
    format!("{}.{}.{}", v / 1_000_000, (v / 1_000) % 1_000, v % 1_000)
}

/// `<capabilities><host><cpu><model>` of `virConnectGetCapabilities`' XML.
pub fn cpu_model(capabilities_xml: &str) -> Option<String> {
    let mut reader = Reader::from_str(capabilities_xml);
    let mut path: Vec<String> = Vec::new();
    loop {
        match reader.read_event().ok()? {
            Event::Start(e) => {
                path.push(String::from_utf8_lossy(e.name().as_ref()).into_owned());
            }
            Event::End(_) => {
                path.pop();
            }
            Event::Text(t) if path == ["capabilities", "host", "cpu", "model"] => {
                let model = t.decode().ok()?.trim().to_string();
                return (!model.is_empty()).then_some(model);
            }
            Event::Eof => return None,
            _ => {}
        }
    }
}

/// The host context of a run on a remote libvirt host, from what its libvirtd said. A fact it
/// would not give is said to be unknown rather than left empty.
pub fn remote_host_context(
    hostname: Option<&str>,
    hypervisor_version: Option<u32>,
    capabilities_xml: Option<&str>,
) -> HostContext {
    let host = hostname.unwrap_or("the remote libvirt host");
    HostContext::of(
        match hypervisor_version {
            Some(v) => format!("QEMU {} (libvirt on {host})", version_text(v)),
            None => format!("unknown (libvirt on {host} did not say)"),
        },
        match capabilities_xml.and_then(cpu_model) {
            Some(m) => format!("{m} (libvirt's model of {host}'s CPU)"),
            None => format!("unknown (libvirt on {host} did not say)"),
        },
        format!("unknown ({host}: libvirt does not tell)"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAPS: &str = r#"<capabilities>
  <host>
    <uuid>2a3c</uuid>
    <cpu>
      <arch>x86_64</arch>
      <model>EPYC-Rome-v4</model>
      <vendor>AMD</vendor>
    </cpu>
  </host>
  <guest><arch name='x86_64'><domain type='qemu'/><domain type='kvm'/></arch></guest>
</capabilities>"#;

    #[test]
    fn versions_and_cpu_models_as_libvirt_gives_them() {
        assert_eq!(version_text(7_002_022), "7.2.22");
        assert_eq!(version_text(9_000_000), "9.0.0");
        assert_eq!(cpu_model(CAPS).as_deref(), Some("EPYC-Rome-v4"));
        // A model elsewhere (a guest's) is not the host's.
        assert_eq!(
            cpu_model("<capabilities><guest><cpu><model>x</model></cpu></guest></capabilities>"),
            None
        );
        assert_eq!(cpu_model("not xml <"), None);
    }

    #[test]
    fn the_remote_host_is_named_and_the_unknown_said_so() {
        let h = remote_host_context(Some("lab-7"), Some(7_002_022), Some(CAPS));
        assert_eq!(h.qemu_version, "QEMU 7.2.22 (libvirt on lab-7)");
        assert_eq!(h.cpu_model, "EPYC-Rome-v4 (libvirt's model of lab-7's CPU)");
        assert_eq!(h.kernel, "unknown (lab-7: libvirt does not tell)");
        assert_eq!(h.harness_version, env!("CARGO_PKG_VERSION"));
        let h = remote_host_context(None, None, None);
        assert!(h.qemu_version.starts_with("unknown"));
        assert!(h.cpu_model.contains("the remote libvirt host"));
    }
}
