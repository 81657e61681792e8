//! `[vm]` and `[[disks]]` as written, and the validated VM.

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use toml::Spanned;

use super::syntax::{choice, option_size_text, option_spanned_choice, size_text, spanned_choice};
use crate::hw::{AccelChoice, AioMode, Bus, CacheMode, Firmware, Sector};

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
    /// Two paths to the disk (`hw::multipath`); only the installation disk, on SCSI.
    pub multipath: Option<Spanned<bool>>,
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

/// The harness's multipath faults (`[fixture] faults`): one path of the multipath
/// installation disk taken away during the write to disk (`run::multipath`), and the install's
/// multipath kernel arguments withheld (`InstallSpec::multipath_kargs`).
pub const MULTIPATH_PATH_LOST_FAULT: &str = "multipath-path-lost";
pub const MULTIPATH_NO_KARGS_FAULT: &str = "multipath-no-kargs";

fn default_bus() -> Bus {
    Bus::Virtio
}
fn default_sector() -> Sector {
    Sector::S512
}

#[derive(Debug, Clone, Serialize)]
pub struct VmConfig {
    pub vcpus: u32,
    pub memory_mib: u64,
    pub firmware: Firmware,
    pub accel: AccelChoice,
    pub boot_order: BootOrder,
    pub network: GuestNetwork,
}
