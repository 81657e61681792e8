//! Per-run storage on the libvirt host: a storage pool holding a run's disks and live ISO.
//!
//! With a remote libvirtd the run directory does not exist where QEMU runs, so disks cannot
//! be files the harness makes itself: they are volumes of a `dir` pool named `sno-<run id>`,
//! created (`virStorageVolCreateXML`), filled (`virStorageVolUpload`) and, when the user asks
//! to keep a disk, fetched back (`virStorageVolDownload`) through libvirt. The same code
//! serves a local libvirtd.
//!
//! The pool is transient (created, never defined): a run that dies leaves no definition that
//! libvirtd would bring back. Its directory outlives it, though, and libvirt deletes a pool's
//! directory (`virStoragePoolDelete`) only for a defined pool that is not running (measured on
//! libvirt 9.0: "storage pool is still active" while it runs, and a destroyed transient pool
//! is gone). So `remove` deletes the volumes, destroys the pool, defines it again just long
//! enough to delete its directory, and undefines it. `gc` finds what a killed run left with
//! [`leftover_pools`].
//!
//! Pool and volume XML are typed structs serialised by quick-xml, as the domain XML.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::raw::{c_char, c_longlong, c_uint};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::Serialize;
use virt::connect::Connect;
use virt::storage_pool::StoragePool;
use virt::storage_vol::StorageVol;
use virt::stream::Stream;
use virt_sys as sys;

/// Every pool the harness makes is named `sno-<run id>`.
pub const POOL_PREFIX: &str = "sno-";
/// Upload chunk size.
const CHUNK: usize = 1 << 20;

/// A volume's on-disk format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VolumeFormat {
    Raw,
    Qcow2,
}

impl VolumeFormat {
    /// libvirt's (and QEMU's) name.
    pub fn as_str(self) -> &'static str {
        match self {
            VolumeFormat::Raw => "raw",
            VolumeFormat::Qcow2 => "qcow2",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("{what} {value:?}: use letters, digits, '.', '_' and '-', not starting with '.'")]
    Name { what: &'static str, value: String },
    #[error("the storage base {0:?} must be an absolute path on the libvirt host")]
    Base(String),
    #[error("a storage pool named {name} already exists on the libvirt host: another run has the same id, or a killed run left it (`sno-harness gc`, or `virsh pool-destroy {name}`)")]
    Exists { name: String },
    #[error("{file} ({size} bytes) does not fit the volume {volume} ({capacity} bytes)")]
    TooLarge {
        file: PathBuf,
        size: u64,
        volume: String,
        capacity: u64,
    },
    #[error("{what}: {message}")]
    Libvirt { what: String, message: String },
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn libvirt(what: impl Into<String>, e: impl std::fmt::Display) -> StorageError {
    StorageError::Libvirt {
        what: what.into(),
        message: e.to_string(),
    }
}

/// A run's storage pool. `remove` (or dropping it) deletes its volumes and directory.
pub struct RunPool {
    /// `None` once removed.
    pool: Option<StoragePool>,
    name: String,
    dir: String,
    /// libvirt's QEMU user on that host (uid, gid), which owns the volumes; None when the host
    /// does not say (no DAC security driver).
    qemu_owner: Option<(u32, u32)>,
}

impl RunPool {
    /// Creates and builds (makes the directory of) the transient pool `sno-<run_id>` at
    /// `<base>/sno-<run_id>` on the libvirt host. Fails with `Exists`, touching nothing,
    /// when a pool of that name is there already.
    pub fn create(conn: &Connect, run_id: &str, base: &str) -> Result<RunPool, StorageError> {
        check_name("run id", run_id)?;
        if !base.starts_with('/') {
            return Err(StorageError::Base(base.into()));
        }
        let name = format!("{POOL_PREFIX}{run_id}");
        let dir = format!("{}/{name}", base.trim_end_matches('/'));
        let qemu_owner = conn.capabilities().ok().and_then(|c| qemu_owner(&c));
        let xml = pool_xml(&name, &dir)?;
        match conn.create_storage_pool_xml(&xml, sys::VIR_STORAGE_POOL_CREATE_WITH_BUILD) {
            Ok(pool) => Ok(RunPool {
                pool: Some(pool),
                name,
                dir,
                qemu_owner,
            }),
            Err(_) if conn.lookup_storage_pool_by_name(&name).is_ok() => {
                Err(StorageError::Exists { name })
            }
            Err(e) => Err(libvirt(
                format!("creating the storage pool {name} at {dir}"),
                e,
            )),
        }
    }

    /// The existing pool `name` (`sno-...`), to remove what a killed run left (`gc`).
    pub fn adopt(conn: &Connect, name: &str) -> Result<RunPool, StorageError> {
        if !name.starts_with(POOL_PREFIX) {
            return Err(StorageError::Name {
                what: "pool name",
                value: name.into(),
            });
        }
        let pool = conn
            .lookup_storage_pool_by_name(name)
            .map_err(|e| libvirt(format!("the storage pool {name}"), e))?;
        let xml = pool
            .xml_desc(0)
            .map_err(|e| libvirt(format!("the XML of {name}"), e))?;
        let dir = xml
            .split_once("<path>")
            .and_then(|(_, rest)| rest.split_once("</path>"))
            .map(|(path, _)| path.trim().to_string())
            .filter(|p| p.starts_with('/'))
            .ok_or_else(|| libvirt(format!("the directory of {name}"), "no <target><path>"))?;
        Ok(RunPool {
            pool: Some(pool),
            name: name.into(),
            dir,
            // gc only removes an adopted pool; it makes no volume in it.
            qemu_owner: None,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The pool's directory on the libvirt host.
    pub fn dir(&self) -> &str {
        &self.dir
    }

    fn pool(&self) -> Result<&StoragePool, StorageError> {
        self.pool
            .as_ref()
            .ok_or_else(|| libvirt(format!("the storage pool {}", self.name), "removed"))
    }

    fn volume(&self, name: &str) -> Result<StorageVol, StorageError> {
        check_name("volume name", name)?;
        self.pool()?
            .lookup_storage_vol_by_name(name)
            .map_err(|e| libvirt(format!("the volume {name} in {}", self.name), e))
    }

    /// A new volume of `capacity_bytes` (sparse where the format allows); returns its path on
    /// the libvirt host. Owned by libvirt's QEMU user, mode 0600: volumes reach QEMU also
    /// through command-line passthrough (NVMe), which libvirt does not relabel for that user,
    /// and they hold the installed system's secrets. A host that names no QEMU user gets 0666,
    /// as the only mode that works there, with a warning.
    pub fn create_volume(
        &self,
        name: &str,
        capacity_bytes: u64,
        format: VolumeFormat,
    ) -> Result<PathBuf, StorageError> {
        check_name("volume name", name)?;
        if self.qemu_owner.is_none() {
            tracing::warn!(
                "the libvirt host names no QEMU user (no DAC security driver): volume {name} is made 0666"
            );
        }
        let xml = volume_xml(name, capacity_bytes, format, self.qemu_owner)?;
        let vol = StorageVol::create_xml(self.pool()?, &xml, 0)
            .map_err(|e| libvirt(format!("creating the volume {name} in {}", self.name), e))?;
        vol.path()
            .map(PathBuf::from)
            .map_err(|e| libvirt(format!("the path of the volume {name}"), e))
    }

    /// The path of volume `name` on the libvirt host.
    pub fn path(&self, name: &str) -> Result<PathBuf, StorageError> {
        self.volume(name)?
            .path()
            .map(PathBuf::from)
            .map_err(|e| libvirt(format!("the path of the volume {name}"), e))
    }

    /// Writes `local_file` to the start of volume `name`; returns the bytes sent.
    pub fn upload(&self, name: &str, local_file: &Path) -> Result<u64, StorageError> {
        let vol = self.volume(name)?;
        let io = |what, source| StorageError::Io {
            what,
            path: local_file.to_path_buf(),
            source,
        };
        let mut file = File::open(local_file).map_err(|e| io("opening", e))?;
        let size = file.metadata().map_err(|e| io("reading", e))?.len();
        let capacity = vol
            .info()
            .map_err(|e| libvirt(format!("the size of the volume {name}"), e))?
            .capacity;
        if size > capacity {
            return Err(StorageError::TooLarge {
                file: local_file.to_path_buf(),
                size,
                volume: name.into(),
                capacity,
            });
        }
        let stream = self.stream()?;
        vol.upload(&stream, 0, size, 0)
            .map_err(|e| libvirt(format!("starting the upload to {name}"), e))?;
        let mut sent = 0u64;
        let mut buf = vec![0u8; CHUNK];
        let result = loop {
            let n = match file.read(&mut buf) {
                Ok(0) => break Ok(()),
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => break Err(io("reading", e)),
            };
            if let Err(e) = send_all(&stream, &buf[..n]) {
                break Err(libvirt(format!("uploading to {name}"), e));
            }
            sent += n as u64;
        };
        let result = result.and_then(|()| {
            if sent == size {
                Ok(())
            } else {
                Err(io(
                    "reading",
                    std::io::Error::other(format!(
                        "changed size while uploading ({sent} of {size} bytes)"
                    )),
                ))
            }
        });
        match result {
            Ok(()) => stream
                .finish()
                .map(|()| sent)
                .map_err(|e| libvirt(format!("finishing the upload to {name}"), e)),
            Err(e) => {
                let _ = stream.abort();
                Err(e)
            }
        }
    }

    /// Copies volume `name` into `local_file` (replaced), keeping its holes as holes: a
    /// mostly empty 100 GiB raw disk costs what it holds. Returns its size.
    pub fn download(&self, name: &str, local_file: &Path) -> Result<u64, StorageError> {
        let vol = self.volume(name)?;
        let io = |what, source| StorageError::Io {
            what,
            path: local_file.to_path_buf(),
            source,
        };
        // Owner-only: a disk holds the cluster's keys once installed (util::private).
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(crate::util::private::PRIVATE_FILE)
            .open(local_file)
            .and_then(|f| {
                crate::util::private::set_mode(local_file, crate::util::private::PRIVATE_FILE)
                    .map(|()| f)
            })
            .map_err(|e| io("creating", e))?;
        let stream = self.stream()?;
        vol.download(&stream, 0, 0, sys::VIR_STORAGE_VOL_DOWNLOAD_SPARSE_STREAM)
            .map_err(|e| libvirt(format!("starting the download of {name}"), e))?;
        let mut buf = vec![0u8; CHUNK];
        let mut offset = 0u64;
        let result = loop {
            // SAFETY: a live stream; `buf` is writable for its length.
            let n = unsafe {
                sys::virStreamRecvFlags(
                    stream.as_ptr(),
                    buf.as_mut_ptr() as *mut c_char,
                    buf.len(),
                    sys::VIR_STREAM_RECV_STOP_AT_HOLE as c_uint,
                )
            };
            match n {
                0 => break Ok(()),
                // The stream stopped at a hole: skip it.
                -3 => {
                    let mut len: c_longlong = 0;
                    // SAFETY: a live stream; `len` is a valid out-parameter.
                    if unsafe { sys::virStreamRecvHole(stream.as_ptr(), &mut len, 0) } < 0 {
                        break Err(libvirt(
                            format!("downloading {name}"),
                            virt::error::Error::last_error(),
                        ));
                    }
                    offset += len.max(0) as u64;
                    if let Err(e) = file.seek(SeekFrom::Start(offset)) {
                        break Err(io("writing", e));
                    }
                }
                n if n < 0 => {
                    break Err(libvirt(
                        format!("downloading {name}"),
                        virt::error::Error::last_error(),
                    ))
                }
                n => {
                    if let Err(e) = file.write_all(&buf[..n as usize]) {
                        break Err(io("writing", e));
                    }
                    offset += n as u64;
                }
            }
        };
        // A trailing hole is only a seek: the length makes it part of the file.
        let result = result.and_then(|()| file.set_len(offset).map_err(|e| io("writing", e)));
        match result {
            Ok(()) => stream
                .finish()
                .map(|()| offset)
                .map_err(|e| libvirt(format!("finishing the download of {name}"), e)),
            Err(e) => {
                let _ = stream.abort();
                Err(e)
            }
        }
    }

    fn stream(&self) -> Result<Stream, StorageError> {
        let conn = self
            .pool()?
            .connect()
            .map_err(|e| libvirt("the pool's connection", e))?;
        Stream::new(&conn, 0).map_err(|e| libvirt("opening a stream", e))
    }

    /// Deletes every volume, the pool and its directory.
    pub fn remove(mut self) -> Result<(), StorageError> {
        match self.pool.take() {
            Some(pool) => remove_pool(pool, &self.name, &self.dir),
            None => Ok(()),
        }
    }
}

impl Drop for RunPool {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            if let Err(e) = remove_pool(pool, &self.name, &self.dir) {
                tracing::warn!("removing the storage pool {}: {e}", self.name);
            }
        }
    }
}

/// Deletes the volumes, the pool and its directory; best effort through every step, the
/// first error is returned. Works also when libvirtd has lost the transient pool (restarted):
/// the pool is then defined and started again, to see its volumes.
fn remove_pool(pool: StoragePool, name: &str, dir: &str) -> Result<(), StorageError> {
    let conn = pool
        .connect()
        .map_err(|e| libvirt(format!("the connection of {name}"), e))?;
    let mut first_err = None;
    let mut note = |r: Result<(), StorageError>| {
        if let Err(e) = r {
            first_err.get_or_insert(e);
        }
    };
    let pool = if pool.is_active().unwrap_or(false) {
        Some(pool)
    } else {
        drop(pool);
        match define(&conn, name, dir) {
            Ok(p) => {
                note(
                    p.create(0)
                        .map_err(|e| libvirt(format!("starting {name}"), e)),
                );
                Some(p)
            }
            Err(e) => {
                note(Err(e));
                None
            }
        }
    };
    if let Some(pool) = pool.filter(|p| p.is_active().unwrap_or(false)) {
        let _ = pool.refresh(0);
        match pool.list_all_volumes(0) {
            Ok(vols) => {
                for vol in vols {
                    let vol_name = vol.name().unwrap_or_default();
                    note(vol.delete(0).map_err(|e| {
                        libvirt(format!("deleting the volume {vol_name} of {name}"), e)
                    }));
                }
            }
            Err(e) => note(Err(libvirt(format!("listing the volumes of {name}"), e))),
        }
        note(
            pool.destroy()
                .map_err(|e| libvirt(format!("stopping the storage pool {name}"), e)),
        );
    }
    // Destroyed, a transient pool is gone; a defined one (above) is still there.
    let defined = match conn.lookup_storage_pool_by_name(name) {
        Ok(p) if p.is_persistent().unwrap_or(false) => Ok(p),
        _ => define(&conn, name, dir),
    };
    match defined {
        Ok(defined) => {
            note(
                defined
                    .delete(sys::VIR_STORAGE_POOL_DELETE_NORMAL)
                    .map_err(|e| libvirt(format!("deleting the directory {dir}"), e)),
            );
            note(
                defined
                    .undefine()
                    .map_err(|e| libvirt(format!("undefining {name}"), e)),
            );
        }
        Err(e) => note(Err(e)),
    }
    first_err.map_or(Ok(()), Err)
}

/// Defines (not starts) the pool: libvirt deletes the directory only of a defined, stopped
/// pool.
fn define(conn: &Connect, name: &str, dir: &str) -> Result<StoragePool, StorageError> {
    conn.define_storage_pool_xml(&pool_xml(name, dir)?, 0)
        .map_err(|e| libvirt(format!("defining {name} to delete its directory"), e))
}

/// Names of the pools on this connection that the harness made (`sno-*`), running or not.
pub fn leftover_pools(conn: &Connect) -> Vec<String> {
    match conn.list_all_storage_pools(0) {
        Ok(pools) => pools
            .iter()
            .filter_map(|p| p.name().ok())
            .filter(|n| n.starts_with(POOL_PREFIX))
            .collect(),
        Err(e) => {
            tracing::warn!("listing storage pools: {e}");
            Vec::new()
        }
    }
}

/// `virStreamSend` may take less than it is given.
fn send_all(stream: &Stream, mut data: &[u8]) -> Result<(), virt::error::Error> {
    while !data.is_empty() {
        let n = stream.send(data)?;
        if n <= 0 {
            // A blocking stream never asks to retry; anything else is an error.
            return Err(virt::error::Error::last_error());
        }
        data = &data[n as usize..];
    }
    Ok(())
}

/// Names that are safe as file names on the libvirt host and in XML.
fn check_name(what: &'static str, value: &str) -> Result<(), StorageError> {
    let ok = !value.is_empty()
        && !value.starts_with('.')
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(StorageError::Name {
            what,
            value: value.into(),
        })
    }
}

// ----- Pool and volume XML: field names are libvirt's element names, `@x` attribute `x`,
// `$text` the element's text.

#[derive(Serialize)]
#[serde(rename = "pool")]
struct PoolXml<'a> {
    #[serde(rename = "@type")]
    kind: &'static str,
    name: &'a str,
    target: PoolTarget<'a>,
}

#[derive(Serialize)]
struct PoolTarget<'a> {
    path: &'a str,
    /// 0711: QEMU runs as libvirt's own user and must reach the volumes by path; nobody else
    /// needs to list them.
    permissions: Permissions,
}

#[derive(Serialize)]
struct Permissions {
    mode: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    owner: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    group: Option<u32>,
}

impl Permissions {
    fn mode(mode: &'static str) -> Permissions {
        Permissions {
            mode,
            owner: None,
            group: None,
        }
    }
}

/// libvirt's QEMU user from the host's capabilities: the DAC security model's base label
/// (`<baselabel type='kvm'>+64055:+64055</baselabel>`), as uid and gid.
pub fn qemu_owner(capabilities: &str) -> Option<(u32, u32)> {
    let dac = capabilities
        .split("<secmodel>")
        .skip(1)
        .map(|s| s.split("</secmodel>").next().unwrap_or(""))
        .find(|s| s.contains("<model>dac</model>"))?;
    let label = dac.split("<baselabel").nth(1)?;
    let text = label.split_once('>')?.1.split('<').next()?;
    let (uid, gid) = text.trim().split_once(':')?;
    let id = |s: &str| s.trim_start_matches('+').parse::<u32>().ok();
    Some((id(uid)?, id(gid)?))
}

#[derive(Serialize)]
#[serde(rename = "volume")]
struct VolumeXml<'a> {
    name: &'a str,
    capacity: Bytes,
    /// 0: allocate nothing up front (a sparse file).
    allocation: Bytes,
    target: VolumeTarget,
}

#[derive(Serialize)]
struct Bytes {
    #[serde(rename = "@unit")]
    unit: &'static str,
    #[serde(rename = "$text")]
    value: u64,
}

#[derive(Serialize)]
struct VolumeTarget {
    format: Format,
    permissions: Permissions,
}

#[derive(Serialize)]
struct Format {
    #[serde(rename = "@type")]
    kind: &'static str,
}

fn to_xml(value: &impl Serialize) -> Result<String, StorageError> {
    let mut out = String::new();
    let mut ser = quick_xml::se::Serializer::new(&mut out);
    ser.indent(' ', 2);
    value
        .serialize(ser)
        .map_err(|e| libvirt("writing storage XML", e))?;
    out.push('\n');
    Ok(out)
}

fn pool_xml(name: &str, dir: &str) -> Result<String, StorageError> {
    to_xml(&PoolXml {
        kind: "dir",
        name,
        target: PoolTarget {
            path: dir,
            permissions: Permissions::mode("0711"),
        },
    })
}

fn volume_xml(
    name: &str,
    capacity: u64,
    format: VolumeFormat,
    owner: Option<(u32, u32)>,
) -> Result<String, StorageError> {
    to_xml(&VolumeXml {
        name,
        capacity: Bytes {
            unit: "bytes",
            value: capacity,
        },
        allocation: Bytes {
            unit: "bytes",
            value: 0,
        },
        target: VolumeTarget {
            format: Format {
                kind: format.as_str(),
            },
            permissions: match owner {
                Some((uid, gid)) => Permissions {
                    mode: "0600",
                    owner: Some(uid),
                    group: Some(gid),
                },
                None => Permissions::mode("0666"),
            },
        },
    })
}

#[cfg(test)]
mod tests;
