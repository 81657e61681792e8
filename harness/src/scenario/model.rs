//! The scenario file as written (serde types, unknown keys rejected) and the validated
//! `Scenario` the runner uses.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::de::{self, DeserializeOwned, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use toml::Spanned;

use crate::flow::phase::Phase;
pub use crate::hw::Disk;
use crate::hw::{AccelChoice, AioMode, Bus, CacheMode, Firmware, Sector};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// minisno, the fixture appliance.
    Fixture,
    /// Real OpenShift: `openshift-install` and the RHCOS live ISO.
    Openshift,
}

impl Profile {
    pub fn name(self) -> &'static str {
        match self {
            Profile::Fixture => "fixture",
            Profile::Openshift => "openshift",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum BootOrder {
    /// Install disk first, CD-ROM second: the empty disk falls through to the ISO, and after
    /// the install the disk wins.
    #[default]
    DiskFirst,
    /// CD-ROM first: after the install the live ISO boots again (fault F-BOOT-1).
    CdromFirst,
}

/// How the guest is networked (`[vm] network`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum GuestNetwork {
    /// QEMU's user-mode network: the guest is reached only through loopback port forwards.
    /// Works on every backend and host.
    #[default]
    User,
    /// A libvirt NAT network of the run's own (`--backend libvirt` only), laid out in the
    /// install-config's machine network: the node gets its reserved address by DHCP and the
    /// network's DNS answers the cluster's names, as on a real LAN. Created with the domain
    /// and removed with it; `gc` removes the network of a killed run.
    Nat,
}

/// Where the live system's root filesystem comes from (`[boot] source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum BootSource {
    /// The full live ISO, which carries the root filesystem.
    #[default]
    LiveIso,
    /// The minimal ISO that `coreos-installer iso extract minimal-iso` makes of the full one:
    /// the live system fetches its root filesystem from the harness over HTTP
    /// (`coreos.live.rootfs_url=`).
    MinimalIso,
    /// A network boot: the machine's iPXE (QEMU's NIC ROM, on SeaBIOS and OVMF) gets a script
    /// over the user network's TFTP and loads the kernel, the initramfs and the Ignition (as a
    /// second initramfs) from the harness over HTTP; the live system then fetches its root
    /// filesystem as the minimal ISO's does. `coreos-installer iso extract pxe` makes the
    /// files of the full ISO. No CD-ROM; the install disk is first in the boot order.
    Pxe,
}

impl BootSource {
    pub fn as_str(self) -> &'static str {
        match self {
            BootSource::LiveIso => "live-iso",
            BootSource::MinimalIso => "minimal-iso",
            BootSource::Pxe => "pxe",
        }
    }

    /// Whether the guest fetches its root filesystem from the harness.
    pub fn fetches_rootfs(self) -> bool {
        self != BootSource::LiveIso
    }

    /// Whether the machine boots from the network (no CD-ROM).
    pub fn is_pxe(self) -> bool {
        self == BootSource::Pxe
    }
}

/// Who writes the OS to the installation disk (`[install] mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum InstallMode {
    /// The live system's own install-to-disk.service, as the installer's Ignition has it.
    #[default]
    InstallToDisk,
    /// The assisted installer's way: install-to-disk.service is masked, and once bootkube
    /// has written `/opt/openshift/master.ign` the harness runs `coreos-installer install`
    /// over SSH with its own arguments, collects the live system's logs and reboots it.
    Assisted,
}

impl InstallMode {
    pub fn as_str(self) -> &'static str {
        match self {
            InstallMode::InstallToDisk => "install-to-disk",
            InstallMode::Assisted => "assisted",
        }
    }
}

/// `[install.assisted]`: the arguments the harness gives its own `coreos-installer install`
/// (besides the installation disk and `-i /opt/openshift/master.ign`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssistedSection {
    /// Each one an `--append-karg`.
    #[serde(default)]
    pub append_kargs: Vec<String>,
    /// `--copy-network`: the live system's NetworkManager profiles go to the installed one.
    #[serde(default)]
    pub copy_network: bool,
}

// ---- the file, as written ----------------------------------------------------------------

/// Deserializes a word from a fixed vocabulary (an enum of unit variants). serde's own error
/// for a value that is not a string ("wanted string or table") names neither what it found nor
/// the words that would do.
pub(crate) fn choice<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<T, D::Error> {
    match toml::Value::deserialize(d)? {
        toml::Value::String(s) => T::deserialize(de::value::StrDeserializer::<D::Error>::new(&s)),
        other => {
            // The words, as serde lists them for a word that is none of them.
            let probe = T::deserialize(de::value::StrDeserializer::<de::value::Error>::new(""))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            let words = probe.split_once("expected ").map_or("a string", |(_, w)| w);
            Err(de::Error::custom(format!(
                "invalid type: {} `{other}`, expected {words}",
                other.type_str()
            )))
        }
    }
}

/// `choice` for a field whose place in the file is kept.
pub(crate) fn spanned_choice<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    d: D,
) -> Result<Spanned<T>, D::Error> {
    struct Word<T>(T);
    impl<'de, T: DeserializeOwned> Deserialize<'de> for Word<T> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            choice(d).map(Word)
        }
    }
    let w = Spanned::<Word<T>>::deserialize(d)?;
    let span = w.span();
    Ok(Spanned::new(span, w.into_inner().0))
}

pub(crate) fn option_spanned_choice<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    d: D,
) -> Result<Option<Spanned<T>>, D::Error> {
    spanned_choice(d).map(Some)
}

/// A string that holds a value of its own syntax (a size, a duration): for a value of another
/// type, serde would say "expected a string", not what the string holds.
struct Text<const SIZE: bool>(String);

impl<'de, const SIZE: bool> Deserialize<'de> for Text<SIZE> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V(&'static str);
        impl Visitor<'_> for V {
            type Value = String;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(self.0)
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<String, E> {
                Ok(s.to_string())
            }
        }
        let what = if SIZE {
            "a size such as \"8GiB\" or \"512MiB\""
        } else {
            "a duration such as \"90s\", \"20m\" or \"1h30m\""
        };
        d.deserialize_str(V(what)).map(Text)
    }
}

fn unwrap_text<const SIZE: bool>(t: Spanned<Text<SIZE>>) -> Spanned<String> {
    let span = t.span();
    Spanned::new(span, t.into_inner().0)
}

fn size_text<'de, D: Deserializer<'de>>(d: D) -> Result<Spanned<String>, D::Error> {
    Spanned::<Text<true>>::deserialize(d).map(unwrap_text)
}

fn option_size_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Spanned<String>>, D::Error> {
    size_text(d).map(Some)
}

fn duration_texts<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<Spanned<String>, Spanned<TimeoutValue>>, D::Error> {
    BTreeMap::<Spanned<String>, Spanned<TimeoutValue>>::deserialize(d)
}

/// A list of `[[NAME]]` tables, whose error for a single `[NAME]` table says which to write;
/// serde's says "invalid type: map, expected a sequence".
pub(crate) fn entries<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
    name: &'static str,
) -> Result<Vec<T>, D::Error> {
    struct V<T>(&'static str, std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
        type Value = Vec<T>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(
                f,
                "a list of tables: write each one as [[{}]], not [{}]",
                self.0, self.0
            )
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
            let mut out = Vec::new();
            while let Some(x) = seq.next_element()? {
                out.push(x);
            }
            Ok(out)
        }
    }
    d.deserialize_seq(V(name, std::marker::PhantomData))
}

fn disk_entries<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Spanned<DiskSection>>, D::Error> {
    entries(d, "disks")
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    pub name: Spanned<String>,
    #[serde(deserialize_with = "spanned_choice")]
    pub profile: Spanned<Profile>,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub vm: VmSection,
    #[serde(default, deserialize_with = "disk_entries")]
    pub disks: Vec<Spanned<DiskSection>>,
    #[serde(default)]
    pub install: InstallSection,
    #[serde(default)]
    pub boot: BootSection,
    #[serde(default, deserialize_with = "duration_texts")]
    pub timeouts: BTreeMap<Spanned<String>, Spanned<TimeoutValue>>,
    pub fixture: Option<Spanned<FixtureSection>>,
    pub openshift: Option<Spanned<OpenshiftSection>>,
    pub expect: Option<Spanned<ExpectSection>>,
    #[serde(default)]
    pub badness: BadnessSection,
    #[serde(default)]
    pub checks: ChecksSection,
}

/// `[boot]`: how the live system boots.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BootSection {
    #[serde(default = "default_boot_source", deserialize_with = "spanned_choice")]
    pub source: Spanned<BootSource>,
}

impl Default for BootSection {
    fn default() -> Self {
        BootSection {
            source: default_boot_source(),
        }
    }
}

fn default_boot_source() -> Spanned<BootSource> {
    Spanned::new(0..0, BootSource::LiveIso)
}

/// `[badness]`: lines of the guest's logs that look like trouble but are expected in this
/// scenario (flow/badness.rs): they become warnings in result.json instead of failing the run.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BadnessSection {
    /// Regular expressions (Rust `regex` syntax) matched against the whole line.
    #[serde(default)]
    pub allow: Vec<Spanned<String>>,
    /// Whether a crash (OOM kill, segfault, Go panic, core dump) outside the bootstrap units
    /// fails the run (`fatal`, the fixture profile's default) or is a warning (`warning`, the
    /// openshift profile's).
    #[serde(default, deserialize_with = "option_choice")]
    pub process_crashes: Option<CrashSeverity>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CrashSeverity {
    Fatal,
    Warning,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VmSection {
    #[serde(default = "default_vcpus", deserialize_with = "vcpu_count")]
    pub vcpus: Spanned<u32>,
    #[serde(default = "default_memory", deserialize_with = "size_text")]
    pub memory: Spanned<String>,
    #[serde(default = "default_firmware", deserialize_with = "spanned_choice")]
    pub firmware: Spanned<Firmware>,
    #[serde(default, deserialize_with = "choice")]
    pub accel: AccelChoice,
    #[serde(default, deserialize_with = "choice")]
    pub boot_order: BootOrder,
    #[serde(default = "default_network", deserialize_with = "spanned_choice")]
    pub network: Spanned<GuestNetwork>,
}

/// The most vCPUs a scenario may give its VM: more than a single node ever gets is a typo.
pub const MAX_VCPUS: u32 = 64;

/// `vm.vcpus`: serde's "invalid type: string \"two\", expected u32" names a Rust type, not the
/// range, so every wrong value gets the same sentence, naming what the file says.
fn vcpu_count<'de, D: Deserializer<'de>>(d: D) -> Result<Spanned<u32>, D::Error> {
    struct Count(u32);
    impl<'de> Deserialize<'de> for Count {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_any(V).map(Count)
        }
    }
    struct V;
    impl V {
        fn refuse<E: de::Error>(got: impl std::fmt::Display) -> E {
            E::custom(format!(
                "vm.vcpus: expected an integer from 1 to {MAX_VCPUS}, got {got}"
            ))
        }
    }
    impl Visitor<'_> for V {
        type Value = u32;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(f, "an integer from 1 to {MAX_VCPUS} (vm.vcpus)")
        }
        fn visit_i64<E: de::Error>(self, n: i64) -> Result<u32, E> {
            match u32::try_from(n) {
                Ok(c) if (1..=MAX_VCPUS).contains(&c) => Ok(c),
                _ => Err(V::refuse(n)),
            }
        }
        fn visit_u64<E: de::Error>(self, n: u64) -> Result<u32, E> {
            match u32::try_from(n) {
                Ok(c) if (1..=MAX_VCPUS).contains(&c) => Ok(c),
                _ => Err(V::refuse(n)),
            }
        }
        fn visit_f64<E: de::Error>(self, n: f64) -> Result<u32, E> {
            Err(V::refuse(format_args!("the fraction {n}")))
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<u32, E> {
            Err(V::refuse(format_args!("the string {s:?}")))
        }
        fn visit_bool<E: de::Error>(self, b: bool) -> Result<u32, E> {
            Err(V::refuse(format_args!("the boolean {b}")))
        }
    }
    let c = Spanned::<Count>::deserialize(d)?;
    let span = c.span();
    Ok(Spanned::new(span, c.into_inner().0))
}

fn default_vcpus() -> Spanned<u32> {
    Spanned::new(0..0, 2)
}
fn default_memory() -> Spanned<String> {
    Spanned::new(0..0, "3GiB".into())
}
fn default_firmware() -> Spanned<Firmware> {
    Spanned::new(0..0, Firmware::Bios)
}
fn default_network() -> Spanned<GuestNetwork> {
    Spanned::new(0..0, GuestNetwork::User)
}

impl Default for VmSection {
    fn default() -> Self {
        VmSection {
            vcpus: default_vcpus(),
            memory: default_memory(),
            firmware: default_firmware(),
            accel: AccelChoice::Auto,
            boot_order: BootOrder::DiskFirst,
            network: default_network(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskSection {
    pub id: String,
    #[serde(deserialize_with = "size_text")]
    pub size: Spanned<String>,
    #[serde(default = "default_bus", deserialize_with = "choice")]
    pub bus: Bus,
    #[serde(default = "default_sector", deserialize_with = "choice")]
    pub sector: Sector,
    pub serial: Option<String>,
    /// Default `unsafe`.
    #[serde(default, deserialize_with = "option_spanned_choice")]
    pub cache: Option<Spanned<CacheMode>>,
    /// Default `threads`.
    #[serde(default, deserialize_with = "option_spanned_choice")]
    pub aio: Option<Spanned<AioMode>>,
    pub throttle: Option<Spanned<ThrottleSection>>,
}

/// `throttle = { bytes_per_s = "20MiB", iops = 500 }`: QEMU's I/O limits of one disk.
#[derive(Debug)]
pub struct ThrottleSection {
    pub bytes_per_s: Option<Spanned<String>>,
    pub iops: Option<Spanned<u64>>,
}

const THROTTLE_USAGE: &str =
    "a table of limits such as { bytes_per_s = \"20MiB\", iops = 500 } (either or both)";

// By hand around the derived fields: for a value that is not a table, serde's error would say
// "expected struct ThrottleSection".
impl<'de> Deserialize<'de> for ThrottleSection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Limits {
            #[serde(default, deserialize_with = "option_size_text")]
            bytes_per_s: Option<Spanned<String>>,
            #[serde(default, deserialize_with = "option_iops")]
            iops: Option<Spanned<u64>>,
        }

        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ThrottleSection;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(THROTTLE_USAGE)
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let l = Limits::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(ThrottleSection {
                    bytes_per_s: l.bytes_per_s,
                    iops: l.iops,
                })
            }
        }
        d.deserialize_map(V)
    }
}

/// I/O requests per second: serde's "expected u64" names neither the unit nor an example.
struct Iops(u64);

impl<'de> Deserialize<'de> for Iops {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = u64;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a whole number of I/O requests per second, such as 500")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
                Ok(v)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
                u64::try_from(v).map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
            }
        }
        d.deserialize_u64(V).map(Iops)
    }
}

fn option_iops<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Spanned<u64>>, D::Error> {
    let n = Spanned::<Iops>::deserialize(d)?;
    let span = n.span();
    Ok(Some(Spanned::new(span, n.into_inner().0)))
}

fn default_bus() -> Bus {
    Bus::Virtio
}
fn default_sector() -> Sector {
    Sector::S512
}

/// How the scenario names the installation disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstallationDiskSpec {
    /// A disk of the scenario, named as the guest sees it.
    Ref { by: DiskNaming, disk: String },
    /// Pasted into install-config as is (also how wrong disks are tested).
    Literal(String),
}

const INSTALLATION_DISK_USAGE: &str = "a device path such as \"/dev/vda\", or { by = \"id\" | \"name\" | \"path\", disk = \"<a [[disks]] id>\" }";

// By hand rather than `#[serde(untagged)]`, whose only error is "data did not match any
// variant", which tells the user neither which part is wrong nor what would be valid.
impl<'de> Deserialize<'de> for InstallationDiskSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct DiskRef {
            #[serde(deserialize_with = "choice")]
            by: DiskNaming,
            disk: String,
        }

        struct Spec;
        impl<'de> Visitor<'de> for Spec {
            type Value = InstallationDiskSpec;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(INSTALLATION_DISK_USAGE)
            }

            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(InstallationDiskSpec::Literal(s.to_string()))
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let r = DiskRef::deserialize(de::value::MapAccessDeserializer::new(map)).map_err(
                    |e| {
                        let e = e.to_string();
                        de::Error::custom(format!(
                            "installation_disk: {}; use {INSTALLATION_DISK_USAGE}",
                            e.trim().replace('\n', " ")
                        ))
                    },
                )?;
                Ok(InstallationDiskSpec::Ref {
                    by: r.by,
                    disk: r.disk,
                })
            }
        }
        d.deserialize_any(Spec)
    }
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum DiskNaming {
    /// `/dev/vda`, `/dev/sda`, `/dev/nvme0n1`.
    Name,
    /// `/dev/disk/by-id/...` from the disk's serial.
    Id,
    /// `/dev/disk/by-path/...` from its PCI address.
    Path,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstallSection {
    #[serde(default = "default_cluster")]
    pub cluster: String,
    #[serde(default = "default_base_domain")]
    pub base_domain: String,
    pub installation_disk: Option<Spanned<InstallationDiskSpec>>,
    #[serde(default = "default_network_type")]
    pub network_type: String,
    #[serde(default = "default_machine_network")]
    pub machine_network: Vec<String>,
    #[serde(default = "default_cluster_network")]
    pub cluster_network: Vec<ClusterNetworkEntry>,
    #[serde(default = "default_service_network")]
    pub service_network: Vec<String>,
    /// `controlPlane.replicas`; anything but 1 is rejected by the installer (a negative test).
    #[serde(default = "one")]
    pub control_plane_replicas: u32,
    /// Leave out `bootstrapInPlace` (a negative test).
    #[serde(default = "yes")]
    pub bootstrap_in_place: bool,
    pub pull_secret: Option<Spanned<SecretSource>>,
    pub proxy: Option<ProxySection>,
    /// A file with PEM certificates for `additionalTrustBundle`.
    pub additional_trust_bundle: Option<Spanned<PathBuf>>,
    /// `additionalTrustBundlePolicy`; left out, the installer's default (`Proxyonly`).
    #[serde(default, deserialize_with = "option_choice")]
    pub trust_bundle_policy: Option<TrustBundlePolicy>,
    #[serde(default)]
    pub fips: bool,
    /// Run the installer with `OPENSHIFT_INSTALL_SKIP_HOSTCRYPT_VALIDATION` set: it then
    /// accepts `fips: true` on a host without FIPS (docs/bip-contract.md §3).
    #[serde(default)]
    pub skip_hostcrypt_validation: bool,
    pub capabilities: Option<CapabilitiesSection>,
    #[serde(default = "default_install_mode", deserialize_with = "spanned_choice")]
    pub mode: Spanned<InstallMode>,
    pub assisted: Option<Spanned<AssistedSection>>,
}

fn default_install_mode() -> Spanned<InstallMode> {
    Spanned::new(0..0, InstallMode::InstallToDisk)
}

/// `additionalTrustBundlePolicy`: when the cluster's Proxy trusts the bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TrustBundlePolicy {
    /// Only with a proxy (the installer's default).
    Proxyonly,
    /// Always.
    Always,
}

impl TrustBundlePolicy {
    pub fn name(self) -> &'static str {
        match self {
            TrustBundlePolicy::Proxyonly => "Proxyonly",
            TrustBundlePolicy::Always => "Always",
        }
    }
}

fn option_choice<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    d: D,
) -> Result<Option<T>, D::Error> {
    choice(d).map(Some)
}

/// `[checks]`: how the checks after the pivot judge this scenario's cluster.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChecksSection {
    #[serde(default, deserialize_with = "choice")]
    pub etcd_bootstrap_member_removed: EtcdCheck,
}

impl Default for InstallSection {
    fn default() -> Self {
        InstallSection {
            cluster: default_cluster(),
            base_domain: default_base_domain(),
            installation_disk: None,
            network_type: default_network_type(),
            machine_network: default_machine_network(),
            cluster_network: default_cluster_network(),
            service_network: default_service_network(),
            control_plane_replicas: 1,
            bootstrap_in_place: true,
            pull_secret: None,
            proxy: None,
            additional_trust_bundle: None,
            trust_bundle_policy: None,
            fips: false,
            skip_hostcrypt_validation: false,
            capabilities: None,
            mode: default_install_mode(),
            assisted: None,
        }
    }
}

fn default_cluster() -> String {
    "sno".into()
}
fn default_base_domain() -> String {
    "example.test".into()
}
fn default_network_type() -> String {
    "OVNKubernetes".into()
}
fn default_machine_network() -> Vec<String> {
    // QEMU user networking's subnet: the node's IP is 10.0.2.15.
    vec!["10.0.2.0/24".into()]
}
fn default_cluster_network() -> Vec<ClusterNetworkEntry> {
    vec![ClusterNetworkEntry {
        cidr: "10.128.0.0/14".into(),
        host_prefix: 23,
    }]
}
fn default_service_network() -> Vec<String> {
    vec!["172.30.0.0/16".into()]
}
fn one() -> u32 {
    1
}
fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ClusterNetworkEntry {
    pub cidr: String,
    #[serde(rename = "host_prefix", alias = "hostPrefix")]
    pub host_prefix: u32,
}

/// Where a secret comes from; secrets never sit in scenario files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretSource {
    File(PathBuf),
    Env(String),
}

// By hand: as a serde enum, `{ file = "a", env = "B" }` fails with "wanted exactly 1 element,
// more than 1 element", which says nothing of what to write.
impl<'de> Deserialize<'de> for SecretSource {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Either {
            file: Option<PathBuf>,
            env: Option<String>,
        }
        const USAGE: &str = "use { file = \"PATH\" } or { env = \"VARIABLE\" }";
        let e = Either::deserialize(d)
            .map_err(|e| de::Error::custom(format!("{}; {USAGE}", e.to_string().trim())))?;
        match (e.file, e.env) {
            (Some(f), None) => Ok(SecretSource::File(f)),
            (None, Some(v)) => Ok(SecretSource::Env(v)),
            (Some(_), Some(_)) => Err(de::Error::custom(format!(
                "a secret comes from a file or a variable, not both: {USAGE}"
            ))),
            (None, None) => Err(de::Error::custom(format!("no source: {USAGE}"))),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ProxySection {
    pub http_proxy: Option<String>,
    pub https_proxy: Option<String>,
    pub no_proxy: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CapabilitiesSection {
    pub baseline_capability_set: String,
    #[serde(default)]
    pub additional_enabled_capabilities: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureSection {
    #[serde(default)]
    pub faults: Vec<Spanned<String>>,
    #[serde(default = "default_schedule")]
    pub schedule: String,
    /// The release minisno reports (`4.14.3`), with that release's etcd condition: its
    /// spelling, or none before 4.13 (docs/bip-contract.md §7). Default: minisno's own.
    pub version: Option<Spanned<String>>,
}

fn default_schedule() -> String {
    "fast".into()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenshiftSection {
    /// `openshift-install` to use; default: the one on PATH.
    pub installer: Option<PathBuf>,
    /// `OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE` for the installer.
    pub release_image: Option<String>,
    /// The live ISO to boot instead of the one the installer's stream metadata names: a path
    /// (relative to the scenario) or an http(s) URL.
    pub iso: Option<Spanned<String>>,
    /// The ISO's SHA-256 (64 hex digits); required with a URL.
    pub iso_sha256: Option<Spanned<String>>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ExpectSection {
    pub verdict: String,
    pub failed_phase: Option<String>,
    pub reason_contains: Option<String>,
    /// A badness line the scenario's `[badness] allow` turned into a warning must contain this.
    #[serde(default)]
    pub warning_contains: Option<String>,
}

// ---- the validated scenario ----------------------------------------------------------------

#[derive(Debug, Clone, Serialize)]
pub struct VmConfig {
    pub vcpus: u32,
    pub memory_mib: u64,
    pub firmware: Firmware,
    pub accel: AccelChoice,
    pub boot_order: BootOrder,
    pub network: GuestNetwork,
}

#[derive(Debug, Clone, Serialize)]
pub struct InstallSpec {
    pub cluster: String,
    pub base_domain: String,
    /// The value pasted into `bootstrapInPlace.installationDisk`.
    pub installation_disk: String,
    /// The scenario disk it names, when it names one (where disk writes are measured).
    pub install_disk_id: Option<String>,
    pub network_type: String,
    pub machine_network: Vec<String>,
    pub cluster_network: Vec<ClusterNetworkEntry>,
    pub service_network: Vec<String>,
    pub control_plane_replicas: u32,
    pub bootstrap_in_place: bool,
    #[serde(skip)]
    pub pull_secret: Option<SecretSource>,
    pub proxy: Option<ProxySection>,
    pub additional_trust_bundle: Option<PathBuf>,
    pub trust_bundle_policy: Option<TrustBundlePolicy>,
    pub fips: bool,
    pub skip_hostcrypt_validation: bool,
    pub capabilities: Option<CapabilitiesSection>,
    /// `[install] mode`.
    pub mode: InstallMode,
    /// `[install.assisted]` of an assisted install (its defaults when the section is absent).
    pub assisted: AssistedSection,
}

#[derive(Debug, Clone, Serialize)]
pub struct FixtureSpec {
    pub faults: Vec<String>,
    pub schedule: String,
    pub version: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct OpenshiftSpec {
    pub installer: Option<PathBuf>,
    pub release_image: Option<String>,
    /// `[openshift] iso`: None boots the ISO of the installer's stream metadata.
    pub iso: Option<OwnIso>,
}

/// A live ISO the scenario names, and its digest.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub enum OwnIso {
    /// A file on this host, resolved; without a digest it is hashed at the run.
    File {
        path: PathBuf,
        sha256: Option<String>,
    },
    /// An http(s) URL, downloaded into the ISO cache.
    Url { url: String, sha256: String },
}

/// A scenario that passed validation: everything the runner needs, resolved.
#[derive(Debug, Clone, Serialize)]
pub struct Scenario {
    pub name: String,
    pub path: PathBuf,
    pub profile: Profile,
    pub description: String,
    pub vm: VmConfig,
    pub disks: Vec<Disk>,
    pub install: InstallSpec,
    /// `[boot] source`.
    pub boot_source: BootSource,
    /// Per-phase overrides of the profile's default timeouts (before scaling).
    pub timeouts: BTreeMap<Phase, Duration>,
    /// `[timeouts] disk-write-stall`: no write to the install disk for this long while
    /// coreos-installer runs fails the run (default 2 minutes; scaled like the timeouts).
    pub disk_write_stall: Option<Duration>,
    /// `[timeouts] bootkube-restarts`: bootkube fails once its unit restarted this often
    /// (default: no limit, as the real unit; the phase's deadline ends it).
    pub bootkube_max_restarts: Option<u32>,
    pub fixture: Option<FixtureSpec>,
    pub openshift: Option<OpenshiftSpec>,
    pub expect: Option<ExpectSection>,
    /// `[checks] etcd_bootstrap_member_removed`.
    pub etcd_check: EtcdCheck,
    /// `[badness] process_crashes`, when the scenario sets it.
    pub process_crashes_fatal: Option<bool>,
    /// `[badness] allow`: patterns of log lines that are warnings, not failures.
    pub badness_allow: Vec<String>,
}

/// The `[timeouts]` key of the disk-write no-progress detector.
pub const DISK_WRITE_STALL_KEY: &str = "disk-write-stall";
/// `[checks] etcd_bootstrap_member_removed`: whether bootstrap-complete waits for etcd's
/// `EtcdBootstrapMemberRemoved`. `auto` (the default) follows the cluster's release, as the
/// installer of that release does (docs/bip-contract.md §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EtcdCheck {
    #[default]
    Auto,
    Required,
    Skipped,
}

/// The `[timeouts]` key of a limit on bootkube.service's restarts (a count, not a duration).
pub const BOOTKUBE_RESTARTS_KEY: &str = "bootkube-restarts";

/// A `[timeouts]` value: a duration (`"20m"`), or a count for `bootkube-restarts`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimeoutValue {
    Text(String),
    Count(i64),
}

impl<'de> Deserialize<'de> for TimeoutValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = TimeoutValue;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a duration such as \"90s\", \"20m\" or \"1h30m\" (bootkube-restarts: a whole number)")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<TimeoutValue, E> {
                Ok(TimeoutValue::Text(s.to_string()))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<TimeoutValue, E> {
                Ok(TimeoutValue::Count(n))
            }
        }
        d.deserialize_any(V)
    }
}

impl std::fmt::Display for TimeoutValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TimeoutValue::Text(t) => write!(f, "{t:?}"),
            TimeoutValue::Count(n) => write!(f, "{n}"),
        }
    }
}

/// Its default: a write stalled this long is stuck, not slow, even on slow hardware.
pub const DEFAULT_DISK_WRITE_STALL: Duration = Duration::from_secs(120);
