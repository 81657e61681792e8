//! What a run on a remote libvirtd (`qemu+ssh://...`) needs that a local one gets from its run
//! directory: the disks, the live ISO, the UEFI variables and a PXE boot's TFTP files as
//! volumes of a per-run storage pool on the remote host (uploaded through libvirt streams),
//! and the guest's addresses
//! (the remote host's loopback forwards, or the node on a NAT network there) forwarded to this
//! host's loopback over SSH. The serial console comes through `console_stream`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use virt::connect::Connect;

use super::remote::RemoteTarget;
use super::storage::{RunPool, VolumeFormat};
use super::tunnel::Tunnel;
use crate::vm::VmSpec;

pub use super::paths::REMOTE_POOL_BASE;

/// What went wrong with the run's presence on the remote host.
#[derive(Debug, thiserror::Error)]
pub enum RemoteRunError {
    #[error("SSH forwards to {target}: {source}")]
    Forwards {
        target: String,
        #[source]
        source: super::tunnel::TunnelError,
    },
    #[error("the run's storage pool on {target}: {source}")]
    Pool {
        target: String,
        #[source]
        source: super::storage::StorageError,
    },
    #[error("{}: {source}", .path.display())]
    Local {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("uploading {}: {source}", .path.display())]
    Upload {
        path: PathBuf,
        #[source]
        source: super::storage::StorageError,
    },
    #[error("{}: no file name", .0.display())]
    NoFileName(PathBuf),
    #[error("downloading the disk {name}: {source}")]
    Download {
        name: String,
        #[source]
        source: super::storage::StorageError,
    },
    #[error("removing the run's storage pool: {0}")]
    Remove(#[source] super::storage::StorageError),
}

/// The run's objects on the remote host and the forwards to it.
pub struct RemoteRun {
    /// Taken by `finish`; removed on drop otherwise.
    pool: Option<RunPool>,
    /// (volume name, local path) of each disk: what `--keep` downloads back.
    disks: Vec<(String, PathBuf)>,
    tunnel: Tunnel,
}

impl RemoteRun {
    /// Opens the forwards to `reach` first (a wrong key or host key fails before anything is
    /// made), then uploads the run's files and points `spec` at their remote copies.
    pub fn prepare(
        conn: &Connect,
        target: &RemoteTarget,
        spec: &mut VmSpec,
        reach: &[SocketAddr],
    ) -> Result<RemoteRun, RemoteRunError> {
        let tunnel = Tunnel::open(target, reach).map_err(|source| RemoteRunError::Forwards {
            target: target.to_string(),
            source,
        })?;
        let run = spec.name.strip_prefix("sno-").unwrap_or(&spec.name);
        let pool = RunPool::create(conn, run, REMOTE_POOL_BASE).map_err(|source| {
            RemoteRunError::Pool {
                target: target.to_string(),
                source,
            }
        })?;
        let mut remote = RemoteRun {
            pool: Some(pool),
            disks: Vec::new(),
            tunnel,
        };
        for d in &mut spec.disks {
            let local = d.path.clone();
            d.path = remote.upload(&local)?;
            remote.disks.push((volume_name(&local)?, local));
        }
        if let Some(cd) = &mut spec.cdrom {
            cd.path = remote.upload(&cd.path.clone())?;
        }
        if let Some(vars) = &mut spec.uefi_vars {
            *vars = remote.upload(&vars.clone())?;
        }
        if let Some(netboot) = &mut spec.netboot {
            netboot.tftp_dir = remote.upload_tftp(&netboot.tftp_dir.clone())?;
        }
        Ok(remote)
    }

    /// A raw volume of the file's size, filled from the file (a qcow2 file stays qcow2: the
    /// domain names the format). Returns the volume's path on the remote host.
    fn upload(&self, local: &Path) -> Result<PathBuf, RemoteRunError> {
        let pool = self.pool.as_ref().expect("prepared");
        let name = volume_name(local)?;
        let size = std::fs::metadata(local)
            .map_err(|source| RemoteRunError::Local {
                path: local.to_path_buf(),
                source,
            })?
            .len();
        pool.create_volume(&name, size, VolumeFormat::Raw)
            .and_then(|_| pool.upload(&name, local))
            .and_then(|_| pool.path(&name))
            .map_err(|source| RemoteRunError::Upload {
                path: local.to_path_buf(),
                source,
            })
    }

    /// A PXE boot's TFTP directory (the iPXE script): QEMU's user network serves it from
    /// the host QEMU runs on, so its files become volumes of the run's pool, and the pool's
    /// directory the TFTP root. Returns that directory on the remote host.
    fn upload_tftp(&self, local_dir: &Path) -> Result<PathBuf, RemoteRunError> {
        let local = |source| RemoteRunError::Local {
            path: local_dir.to_path_buf(),
            source,
        };
        for entry in std::fs::read_dir(local_dir).map_err(local)? {
            let entry = entry.map_err(local)?;
            if entry.file_type().is_ok_and(|t| t.is_file()) {
                self.upload(&entry.path())?;
            }
        }
        Ok(PathBuf::from(self.pool.as_ref().expect("prepared").dir()))
    }

    /// Where this host reaches `addr` of the remote side.
    pub fn local_addr(&self, addr: SocketAddr) -> SocketAddr {
        match self.tunnel.local_port(addr) {
            Some(port) => SocketAddr::from(([127, 0, 0, 1], port)),
            None => addr,
        }
    }

    /// Ends the run's presence on the remote host: with `keep`, the disks come back into the
    /// run directory first (so the kept VM boots here, as after a local run); then the pool
    /// and its volumes go.
    pub fn finish(&mut self, keep: bool) -> Result<(), RemoteRunError> {
        let Some(pool) = self.pool.take() else {
            return Ok(());
        };
        let mut first_err = None;
        if keep {
            for (name, local) in &self.disks {
                if let Err(source) = pool.download(name, local) {
                    first_err.get_or_insert(RemoteRunError::Download {
                        name: name.clone(),
                        source,
                    });
                }
            }
        }
        if let Err(e) = pool.remove() {
            first_err.get_or_insert(RemoteRunError::Remove(e));
        }
        first_err.map_or(Ok(()), Err)
    }
}

fn volume_name(local: &Path) -> Result<String, RemoteRunError> {
    local
        .file_name()
        .and_then(|n| n.to_str())
        .map(str::to_string)
        .ok_or_else(|| RemoteRunError::NoFileName(local.to_path_buf()))
}
