//! A running libvirt domain: started from the `VmSpec`'s domain XML, watched through libvirt's
//! event loop, queried through the QEMU monitor passthrough, destroyed on every path.
//!
//! The domain is transient and started with `VIR_DOMAIN_START_AUTODESTROY`: libvirtd destroys it
//! when the connection that started it closes, which is what the QEMU backend's parent-death
//! signal gives: if the harness is killed (even with SIGKILL) its socket to libvirtd closes and
//! the VM goes with it. `gc` is for what that cannot cover (libvirtd restarted, files). A run
//! that may leave its VM running for the user (`--keep`, `StartOptions::may_outlive`) starts
//! it without auto-destroy: killed, it leaves the domain to gc, which finds it by the name in
//! the run's registration.
//!
//! It is started paused, because libvirt's serial socket does not wait for a reader: the console
//! is attached first and the guest resumed after, so no output is lost.

use std::ffi::c_void;
use std::os::raw::c_int;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use virt::connect::Connect;
use virt::domain::Domain;
use virt_sys as sys;

use super::console_stream::{console_over_stream, ConsolePump};
use super::domain::{disk_id_from_qdev, domain_xml_for, SerialAt};
use super::error::other;
use super::error::LibvirtError;
use super::network::nat_network_xml;
use super::remote::remote_target;
use super::remote_run::RemoteRun;
use crate::flow::event::SignalTx;
use crate::flow::event::{Signal, Source};
use crate::guest::console::Console;
use crate::hw::Bus;
use crate::vm::qemu::qmp::{parse_block_stats, BlockStats};
use crate::vm::start::{RunMeta, StartOptions};
use crate::vm::VmSpec;

pub use super::paths::{take_qemu_log, DEFAULT_URI, QEMU_LOG_DIR};

/// libvirt delivers events only to a process that registered an event loop implementation
/// before it opened its connections, and only while something runs that loop: once per
/// process, a thread does.
fn ensure_event_loop() -> Result<(), LibvirtError> {
    static LOOP: OnceLock<Result<(), String>> = OnceLock::new();
    LOOP.get_or_init(|| {
        // libvirt's default error handler prints every error to stderr, including the ones
        // the harness expects and handles (a lookup that finds nothing).
        virt::error::clear_error_callback();
        virt::event::event_register_default_impl().map_err(|e| e.to_string())?;
        std::thread::Builder::new()
            .name("libvirt-events".into())
            .spawn(|| loop {
                if virt::event::event_run_default_impl().is_err() {
                    std::thread::sleep(Duration::from_millis(100));
                }
            })
            .map(|_| ())
            .map_err(|e| e.to_string())
    })
    .clone()
    .map_err(LibvirtError::EventLoop)
}

/// Where to look when a connection fails: the daemons here only matter for a local URI.
fn connect_hint(uri: &str) -> String {
    match super::remote::remote_target(uri) {
        Ok(None) => " (is libvirtd running? `virtlogd -d; libvirtd -d`)".into(),
        _ => format!(
            " (does `virsh -c '{uri}' version` work from here? It logs in with ssh as the harness does)"
        ),
    }
}

/// Opens a connection with the event loop in place, and keepalives so that a dead remote
/// libvirtd is noticed.
pub fn connect(uri: &str) -> Result<Connect, LibvirtError> {
    ensure_event_loop()?;
    let conn = Connect::open(Some(uri)).map_err(|e| LibvirtError::Connect {
        uri: uri.into(),
        message: e.to_string(),
        hint: connect_hint(uri),
    })?;
    let _ = conn.set_keep_alive(5, 3);
    Ok(conn)
}

/// Every directory from `/` to `path` must be traversable by others: libvirt runs QEMU as its
/// own user (`libvirt-qemu` on Debian), which opens the disks and the ISO by path.
fn check_reachable(path: &Path) -> Result<(), LibvirtError> {
    let abs = std::path::absolute(path).map_err(|e| other("resolving the run directory", e))?;
    for ancestor in abs.ancestors() {
        let Ok(meta) = std::fs::metadata(ancestor) else {
            continue;
        };
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o001 == 0 {
            return Err(LibvirtError::Unreachable {
                path: abs.clone(),
                ancestor: ancestor.to_path_buf(),
                mode,
            });
        }
    }
    Ok(())
}

/// NVMe disks reach QEMU through the command-line passthrough, which libvirt does not relabel
/// for its QEMU user: that user alone gets them (`qemu_user`), never the world (a disk holds the
/// cluster CA's key once installed).
fn give_nvme_disks_to_qemu(spec: &VmSpec) -> Result<(), LibvirtError> {
    let nvme: Vec<&Path> = spec
        .disks
        .iter()
        .filter(|d| d.bus == Bus::Nvme)
        .map(|d| d.path.as_path())
        .collect();
    if nvme.is_empty() {
        return Ok(());
    }
    let user = super::qemu_user::qemu_user()
        .map_err(|e| other("libvirt's QEMU user, for the NVMe disks", e))?;
    for path in nvme {
        super::qemu_user::grant(path, &user).map_err(|e| {
            other(
                &format!(
                    "giving libvirt's QEMU user {} {} (an NVMe disk, which libvirt does not relabel; a filesystem without POSIX ACLs cannot, unless the harness runs as root: give --out one with them)",
                    user.name,
                    path.display()
                ),
                e,
            )
        })?;
    }
    Ok(())
}

/// A PXE boot on the user network: QEMU's own TFTP serves the TFTP root, wrapped Ignition
/// included, and libvirt neither relabels it nor knows of it (it reaches QEMU through the
/// command-line passthrough). The directory becomes passable by name (never listable) and each
/// file libvirt's QEMU user's alone, as the NVMe disks are; nobody else gets them. On a NAT
/// network the network's dnsmasq serves the root, which holds the script only (see
/// assets::pxe) and keeps its own modes.
fn give_tftp_root_to_qemu(spec: &VmSpec, nat: bool) -> Result<(), LibvirtError> {
    let Some(netboot) = spec.netboot.as_ref().filter(|_| !nat) else {
        return Ok(());
    };
    let user = super::qemu_user::qemu_user()
        .map_err(|e| other("libvirt's QEMU user, for the PXE boot's TFTP root", e))?;
    let dir = &netboot.tftp_dir;
    crate::util::private::set_mode(dir, crate::util::private::DirAccess::Traverse.mode())
        .map_err(|e| other(&format!("chmod 711 {}", dir.display()), e))?;
    let entries = std::fs::read_dir(dir).map_err(|e| other(&dir.display().to_string(), e))?;
    for e in entries.flatten() {
        if e.file_type().is_ok_and(|t| t.is_file()) {
            super::qemu_user::grant(&e.path(), &user).map_err(|err| {
                other(
                    &format!(
                        "giving libvirt's QEMU user {} {}",
                        user.name,
                        e.path().display()
                    ),
                    err,
                )
            })?;
        }
    }
    Ok(())
}

/// What an event callback needs; owned by libvirt between registration and the free callback.
struct Sink {
    tx: SignalTx,
}

fn send(opaque: *mut c_void, name: &str, data: serde_json::Value) {
    // SAFETY: `opaque` is the `Box<Sink>` given at registration; libvirt frees it (through
    // `free_sink`) only after the callback can no longer run.
    let sink = unsafe { &*(opaque as *const Sink) };
    let _ = sink.tx.send((
        Source::Libvirt,
        Signal::Qmp {
            name: name.into(),
            data,
        },
    ));
}

/// libvirt's domain events as the QEMU events the state machine reads (the same names QMP
/// uses, so both backends drive the flow alike); `libvirt_event` keeps what libvirt said.
pub fn lifecycle_as_qemu_event(
    event: u32,
    detail: u32,
) -> Option<(&'static str, serde_json::Value)> {
    use serde_json::json;
    match event {
        sys::VIR_DOMAIN_EVENT_CRASHED => Some((
            "GUEST_PANICKED",
            json!({"libvirt_event": "crashed", "detail": detail}),
        )),
        // The guest finished an orderly shutdown (detail 0 = "guest"): not a reset.
        sys::VIR_DOMAIN_EVENT_SHUTDOWN if detail == sys::VIR_DOMAIN_EVENT_SHUTDOWN_FINISHED => {
            Some((
                "SHUTDOWN",
                json!({"guest": true, "reason": "guest-shutdown", "libvirt_event": "shutdown"}),
            ))
        }
        _ => None,
    }
}

/// libvirt's word that QEMU itself ended without being asked to (the emulator failed: an
/// assertion, a signal), as the QEMU backend's process exit: the VM is gone, and why. A
/// transient domain is gone from libvirtd right after, so this is the one place to learn it.
pub fn lifecycle_as_vm_exit(event: u32, detail: u32) -> Option<String> {
    if event != sys::VIR_DOMAIN_EVENT_STOPPED {
        return None;
    }
    let why = match detail {
        sys::VIR_DOMAIN_EVENT_STOPPED_FAILED => "failed",
        sys::VIR_DOMAIN_EVENT_STOPPED_CRASHED => "crashed",
        _ => return None,
    };
    Some(format!("libvirt: the domain stopped, its QEMU {why}"))
}

unsafe extern "C" fn on_lifecycle(
    _conn: sys::virConnectPtr,
    _dom: sys::virDomainPtr,
    event: c_int,
    detail: c_int,
    opaque: *mut c_void,
) -> c_int {
    if let Some((name, data)) = lifecycle_as_qemu_event(event as u32, detail as u32) {
        send(opaque, name, data);
    }
    if let Some(status) = lifecycle_as_vm_exit(event as u32, detail as u32) {
        // SAFETY: as in `send`.
        let sink = unsafe { &*(opaque as *const Sink) };
        let _ = sink.tx.send((Source::Libvirt, Signal::VmExited { status }));
    }
    0
}

unsafe extern "C" fn on_reboot(
    _conn: sys::virConnectPtr,
    _dom: sys::virDomainPtr,
    opaque: *mut c_void,
) {
    send(
        opaque,
        "RESET",
        serde_json::json!({"guest": true, "libvirt_event": "reboot"}),
    );
}

unsafe extern "C" fn on_io_error(
    _conn: sys::virConnectPtr,
    _dom: sys::virDomainPtr,
    src_path: *const std::os::raw::c_char,
    dev_alias: *const std::os::raw::c_char,
    action: c_int,
    opaque: *mut c_void,
) {
    let s = |p: *const std::os::raw::c_char| {
        if p.is_null() {
            String::new()
        } else {
            // SAFETY: libvirt passes NUL-terminated strings valid for the callback's duration.
            unsafe { std::ffi::CStr::from_ptr(p) }
                .to_string_lossy()
                .into_owned()
        }
    };
    send(
        opaque,
        "BLOCK_IO_ERROR",
        serde_json::json!({"device": s(dev_alias), "path": s(src_path), "action": action, "libvirt_event": "io-error"}),
    );
}

unsafe extern "C" fn free_sink(opaque: *mut c_void) {
    // SAFETY: made by `Box::into_raw` in `register`, freed once by libvirt.
    drop(unsafe { Box::from_raw(opaque as *mut Sink) });
}

/// Registers one event callback for `dom`; returns libvirt's callback id.
fn register(
    conn: &Connect,
    dom: &Domain,
    event_id: u32,
    callback: sys::virConnectDomainEventGenericCallback,
    tx: &SignalTx,
) -> Result<c_int, LibvirtError> {
    let sink = Box::into_raw(Box::new(Sink { tx: tx.clone() })) as *mut c_void;
    // SAFETY: valid connection and domain pointers; the callback's real signature matches the
    // event id, as libvirt's API requires (it casts through the generic type); libvirt owns
    // `sink` from here and frees it with `free_sink`.
    let id = unsafe {
        sys::virConnectDomainEventRegisterAny(
            conn.as_ptr(),
            dom.as_ptr(),
            event_id as c_int,
            callback,
            sink,
            Some(free_sink),
        )
    };
    if id < 0 {
        // SAFETY: registration failed, so libvirt did not take the box.
        unsafe { free_sink(sink) };
        return Err(other(
            "registering for domain events",
            virt::error::Error::last_error(),
        ));
    }
    Ok(id)
}

pub struct LibvirtVm {
    conn: Connect,
    dom: Option<Domain>,
    /// The run's own NAT network (`Nic::LibvirtNetwork`), destroyed after the domain.
    net: Option<virt::network::Network>,
    name: String,
    xml: String,
    callbacks: Vec<c_int>,
    /// A remote libvirtd: the run's pool and the SSH forwards (`remote_run`), and the thread
    /// that reads the console stream.
    remote: Option<RemoteRun>,
    console_pump: Option<ConsolePump>,
    keep_disks: bool,
    /// Started without auto-destroy: `detach` may leave it running after the harness.
    may_outlive: bool,
    /// Where the connection went: a lost one is opened again there to destroy the domain.
    uri: String,
    /// The run directory, where libvirt's log of the domain's QEMU ends up (local libvirtd).
    dir: PathBuf,
}

/// Domains started without auto-destroy and not yet handed on (`detach`) or destroyed, by URI
/// and name: a forced exit (a second Ctrl-C, which runs no drops) destroys them, as it kills a
/// QEMU started without its parent-death signal.
static OUTLIVING: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());

fn outliving() -> std::sync::MutexGuard<'static, Vec<(String, String)>> {
    OUTLIVING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Destroys every domain of this process's that could outlive it and was not handed on.
pub fn destroy_outliving() {
    for (uri, name) in outliving().drain(..) {
        let destroyed = connect(&uri).and_then(|c| {
            c.lookup_domain_by_name(&name)
                .and_then(|d| d.destroy())
                .map_err(|e| other("destroying the domain", e))
        });
        if let Err(e) = destroyed {
            tracing::warn!("forced exit: domain {name} left: {e} (`sno-harness gc` removes it)");
        }
    }
}

impl LibvirtVm {
    /// Creates the run's NAT network when there is one, then the domain (paused,
    /// auto-destroyed with this connection), subscribes to its events, attaches the serial
    /// console and lets the guest run.
    ///
    /// On a remote libvirtd (`qemu+ssh://`), the forwards to `opts.reach` are opened first, the
    /// run's files are uploaded into a storage pool of its own there, and the serial console
    /// is read through a libvirt stream.
    pub fn start(
        uri: &str,
        spec: &VmSpec,
        opts: StartOptions<'_>,
        meta: &RunMeta,
        dir: &Path,
        tx: &SignalTx,
    ) -> Result<(LibvirtVm, Console), LibvirtError> {
        let target = remote_target(uri).map_err(|e| other("the libvirt URI", e))?;
        if target.is_none() {
            // The VM's files (disks, ISO, sockets) are in the run's private directory.
            let files = spec.serial_socket.parent().unwrap_or(dir);
            check_reachable(files)?;
            // libvirt's QEMU binds the console's socket by its path; it cannot take the way
            // round a long one that the QEMU backend takes (util::socket_path).
            if !crate::util::socket_path::fits(&spec.serial_socket) {
                return Err(other(
                    "the serial console's socket",
                    format!(
                        "{} is {} bytes, more than the {} a Unix socket address holds: use a shorter --out",
                        spec.serial_socket.display(),
                        spec.serial_socket.as_os_str().len(),
                        crate::util::socket_path::MAX_SOCKET_PATH
                    ),
                ));
            }
            give_nvme_disks_to_qemu(spec)?;
            give_tftp_root_to_qemu(spec, opts.network.is_some())?;
        }
        let conn = connect(uri)?;
        let mut spec = spec.clone();
        let remote = match &target {
            Some(t) => Some(
                RemoteRun::prepare(&conn, t, &mut spec, opts.reach)
                    .map_err(|e| other("preparing the remote host", e))?,
            ),
            None => None,
        };
        let network = opts.network;
        // Transient: gone when destroyed, or when libvirtd restarts; a killed run's network is
        // gc's (it carries the run in its metadata).
        let net = match network {
            Some(n) => Some(conn.create_network_xml(&nat_network_xml(n)).map_err(|e| {
                LibvirtError::Network {
                    name: n.name.clone(),
                    message: e.to_string(),
                }
            })?),
            None => None,
        };
        let serial = if remote.is_some() {
            SerialAt::Pty
        } else {
            SerialAt::Socket
        };
        let xml = domain_xml_for(&spec, meta, serial);
        let may_outlive = opts.may_outlive && remote.is_none();
        let flags = match may_outlive {
            true => sys::VIR_DOMAIN_START_PAUSED,
            false => sys::VIR_DOMAIN_START_PAUSED | sys::VIR_DOMAIN_START_AUTODESTROY,
        };
        let dom = match conn.create_domain_xml(&xml, flags) {
            Ok(d) => d,
            Err(e) => {
                if let Some(net) = net {
                    let _ = net.destroy();
                }
                if remote.is_none() {
                    take_qemu_log(&spec.name, dir);
                }
                return Err(LibvirtError::Create(e.to_string()));
            }
        };
        let mut vm = LibvirtVm {
            conn,
            dom: Some(dom),
            net,
            remote,
            console_pump: None,
            keep_disks: opts.keep_disks,
            may_outlive,
            uri: uri.to_string(),
            dir: dir.to_path_buf(),
            name: spec.name.clone(),
            xml,
            callbacks: Vec::new(),
        };
        if may_outlive {
            outliving().push((uri.to_string(), spec.name.clone()));
        }
        // SAFETY (casts): each function has the signature libvirt documents for its event id.
        let subscriptions: [(u32, sys::virConnectDomainEventGenericCallback); 3] = unsafe {
            [
                (
                    sys::VIR_DOMAIN_EVENT_ID_LIFECYCLE,
                    Some(std::mem::transmute::<
                        unsafe extern "C" fn(
                            sys::virConnectPtr,
                            sys::virDomainPtr,
                            c_int,
                            c_int,
                            *mut c_void,
                        ) -> c_int,
                        unsafe extern "C" fn(sys::virConnectPtr, sys::virDomainPtr, *mut c_void),
                    >(on_lifecycle)),
                ),
                (sys::VIR_DOMAIN_EVENT_ID_REBOOT, Some(on_reboot)),
                (
                    sys::VIR_DOMAIN_EVENT_ID_IO_ERROR,
                    Some(std::mem::transmute::<
                        unsafe extern "C" fn(
                            sys::virConnectPtr,
                            sys::virDomainPtr,
                            *const std::os::raw::c_char,
                            *const std::os::raw::c_char,
                            c_int,
                            *mut c_void,
                        ),
                        unsafe extern "C" fn(sys::virConnectPtr, sys::virDomainPtr, *mut c_void),
                    >(on_io_error)),
                ),
            ]
        };
        for (id, cb) in subscriptions {
            let dom = vm.dom.as_ref().expect("just created");
            match register(&vm.conn, dom, id, cb, tx) {
                Ok(cb_id) => vm.callbacks.push(cb_id),
                Err(e) => {
                    vm.stop();
                    return Err(e);
                }
            }
        }
        let log = dir.join("serial.log");
        let attached = if vm.remote.is_some() {
            let dom = vm.dom.as_ref().expect("just created");
            console_over_stream(&vm.conn, dom, &log).map(|(console, pump)| {
                vm.console_pump = Some(pump);
                console
            })
        } else {
            vm.attach_console(&spec.serial_socket, &log)
        };
        let console = match attached {
            Ok(c) => c,
            Err(e) => {
                vm.stop();
                return Err(e);
            }
        };
        if let Err(e) = vm.domain().map(|d| d.resume()) {
            vm.stop();
            return Err(e);
        }
        Ok((vm, console))
    }

    fn domain(&self) -> Result<&Domain, LibvirtError> {
        self.dom
            .as_ref()
            .ok_or_else(|| other("the domain", "already destroyed"))
    }

    fn attach_console(&self, socket: &Path, log: &Path) -> Result<Console, LibvirtError> {
        let limit = Duration::from_secs(10);
        let started = Instant::now();
        let stream = loop {
            match UnixStream::connect(socket) {
                Ok(s) => break s,
                Err(_) if started.elapsed() < limit => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Err(_) => {
                    return Err(LibvirtError::SerialSocket {
                        path: socket.to_path_buf(),
                        secs: limit.as_secs(),
                    })
                }
            }
        };
        Console::attach(stream, log).map_err(|e| other("attaching the serial console", e))
    }

    /// The host context of a remote libvirt host, from what it says about itself; `None`
    /// when libvirtd runs on this host (whose own context is then the right one).
    pub fn remote_host_context(&self) -> Option<crate::result::HostContext> {
        self.remote.as_ref()?;
        let caps = self.conn.capabilities().ok();
        Some(super::host_facts::remote_host_context(
            self.conn.hostname().ok().as_deref(),
            self.conn.hyp_version().ok(),
            caps.as_deref(),
        ))
    }

    /// The domain XML it was started from (for `vm.txt`).
    pub fn xml(&self) -> &str {
        &self.xml
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where this host reaches the guest's `addr` (itself, unless libvirtd is remote).
    pub fn local_addr(&self, addr: std::net::SocketAddr) -> std::net::SocketAddr {
        match &self.remote {
            Some(r) => r.local_addr(addr),
            None => addr,
        }
    }

    /// QEMU's pid, when libvirtd runs on this host (its pid file).
    pub fn pid(&self) -> Option<u32> {
        if self.remote.is_some() {
            return None;
        }
        let text = std::fs::read_to_string(format!("/run/libvirt/qemu/{}.pid", self.name)).ok()?;
        text.trim().parse().ok()
    }

    /// Whether the domain runs; an error when libvirt cannot say (the connection to libvirtd
    /// is gone), which is not the domain's end. libvirtd answering that it knows no such
    /// domain is an answer: a transient domain whose QEMU died (crashed, or killed) is gone
    /// from libvirtd at once, and that is the VM's end, not the connection's.
    pub fn liveness(&self) -> Result<bool, LibvirtError> {
        use virt::error::ErrorNumber;
        match &self.dom {
            None => Ok(false),
            Some(d) => match d.is_active() {
                Ok(active) => Ok(active),
                Err(e) if e.code().known() == Some(ErrorNumber::NoDomain) => Ok(false),
                Err(e) => Err(other("asking libvirtd whether the domain runs", e)),
            },
        }
    }

    /// A raw QMP command through libvirt's monitor passthrough; returns `return`.
    pub fn monitor(&self, command: &serde_json::Value) -> Result<serde_json::Value, LibvirtError> {
        let reply = self
            .domain()?
            .qemu_monitor_command(&command.to_string(), 0)
            .map_err(|e| other("QEMU monitor command", e))?;
        let v: serde_json::Value =
            serde_json::from_str(&reply).map_err(|e| other("QEMU monitor reply", e))?;
        match v.get("return") {
            Some(r) => Ok(r.clone()),
            None => Err(other("QEMU monitor command", v)),
        }
    }

    /// Takes a device of the running domain away (`present` false) or gives it back, named by
    /// its XML: `virDomainDetachDeviceFlags` / `virDomainAttachDeviceFlags` on the live domain
    /// only (its persistent definition keeps the device).
    pub fn set_device(&self, xml: &str, present: bool) -> Result<(), LibvirtError> {
        let dom = self.domain()?;
        let live = sys::VIR_DOMAIN_AFFECT_LIVE;
        if present {
            dom.attach_device_flags(xml, live)
                .map_err(|e| other("virDomainAttachDeviceFlags", e))
        } else {
            dom.detach_device_flags(xml, live)
                .map_err(|e| other("virDomainDetachDeviceFlags", e))
        }
    }

    /// `query-blockstats` of one disk, keyed the way the QEMU backend names its devices: by
    /// disk id, or by path device id for a multipath disk (`qmp::disk_writes`).
    pub fn disk_writes(&self, disk_id: &str) -> Result<Vec<(String, u64)>, LibvirtError> {
        let reply = self.monitor(&serde_json::json!({"execute": "query-blockstats"}))?;
        let stats: Vec<BlockStats> =
            parse_block_stats(reply).map_err(|e| other("query-blockstats", e))?;
        Ok(crate::vm::qemu::qmp::disk_writes(&stats, disk_id, |b| {
            disk_id_from_qdev(&b.qdev)
        }))
    }

    /// The primary display as PNG at `png`, through `virDomainScreenshot` (QEMU itself runs as
    /// another user and may not write into the run directory).
    pub fn screenshot(&self, png: &Path) -> Result<(), LibvirtError> {
        let stream =
            virt::stream::Stream::new(&self.conn, 0).map_err(|e| other("opening a stream", e))?;
        self.domain()?
            .screenshot(&stream, 0, 0)
            .map_err(|e| other("virDomainScreenshot", e))?;
        let mut data = Vec::new();
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = stream
                .recv(&mut buf)
                .map_err(|e| other("reading the screenshot", e))?;
            if n <= 0 {
                break;
            }
            data.extend_from_slice(&buf[..n as usize]);
        }
        let _ = stream.finish();
        save_screenshot(&data, png)
    }

    /// Destroys the run's domain through a connection opened for it, when the run's own is
    /// lost; a failure is a warning naming what gc will do.
    fn destroy_over_a_new_connection(&self) {
        let destroyed = connect(&self.uri).and_then(|c| {
            let dom = c
                .lookup_domain_by_name(&self.name)
                .map_err(|e| other("finding the domain again", e))?;
            match dom.is_active() {
                Ok(true) => dom
                    .destroy()
                    .map(drop)
                    .map_err(|e| other("destroying the domain", e)),
                _ => Ok(()),
            }
        });
        if let Err(e) = destroyed {
            tracing::warn!(
                "the libvirt connection was lost and the domain {} could not be destroyed over a new one: {e} (`sno-harness gc` removes it)",
                self.name
            );
        }
    }

    /// Whether a remote host's cleanup keeps the run's disks: decided at the end, by the verdict
    /// (`--keep on-failure`).
    pub fn set_keep_disks(&mut self, keep: bool) {
        self.keep_disks = keep;
    }

    /// Leaves the domain (and the run's NAT network) running after the harness, for the user;
    /// its QEMU's pid. Only a domain started to outlive the run on this host: a remote one is
    /// reached through the harness's SSH forwards, which end with it.
    pub fn detach(&mut self) -> Result<u32, LibvirtError> {
        if !self.may_outlive {
            return Err(other(
                "leaving the domain running",
                "it was started to be destroyed with the harness's connection (auto-destroy)",
            ));
        }
        let pid = self.pid().ok_or_else(|| {
            other(
                "leaving the domain running",
                "libvirtd names no QEMU pid for it",
            )
        })?;
        for id in self.callbacks.drain(..) {
            // SAFETY: ids returned by virConnectDomainEventRegisterAny on this connection.
            unsafe { sys::virConnectDomainEventDeregisterAny(self.conn.as_ptr(), id) };
        }
        // The console's reader ends; the domain's serial socket stays for `console`.
        self.console_pump = None;
        // Dropped without destroying: the domain and the network are gc's from now on.
        outliving().retain(|(_, n)| *n != self.name);
        self.dom = None;
        self.net = None;
        Ok(pid)
    }

    /// Destroys the domain (idempotent) and drops the event subscriptions. Files stay: they
    /// are the run directory's.
    pub fn stop(&mut self) {
        for id in self.callbacks.drain(..) {
            // SAFETY: ids returned by virConnectDomainEventRegisterAny on this connection.
            unsafe { sys::virConnectDomainEventDeregisterAny(self.conn.as_ptr(), id) };
        }
        outliving().retain(|(_, n)| *n != self.name);
        if let Some(dom) = self.dom.take() {
            match dom.is_active() {
                Ok(true) => {
                    let _ = dom.destroy();
                }
                Ok(false) => {}
                // The connection is gone (libvirtd restarted): the domain is not, and a new
                // connection destroys it.
                Err(_) => self.destroy_over_a_new_connection(),
            }
        }
        // The stream ends with the domain; the pump's thread is joined here.
        self.console_pump = None;
        if self.remote.is_none() {
            take_qemu_log(&self.name, &self.dir);
        }
        if let Some(net) = self.net.take() {
            if let Err(e) = net.destroy() {
                tracing::warn!("destroying the run's network: {e} (`sno-harness gc` removes it)");
            }
        }
        if let Some(mut remote) = self.remote.take() {
            if let Err(e) = remote.finish(self.keep_disks) {
                tracing::warn!("{e} (`sno-harness gc` removes what is left)");
            }
        }
    }
}

/// libvirt hands the screen over in the format QEMU wrote it: PNG when QEMU can (libvirt 9
/// with QEMU 7.2 here), else PPM, which is converted.
fn save_screenshot(data: &[u8], png: &Path) -> Result<(), LibvirtError> {
    const PNG_MAGIC: &[u8] = b"\x89PNG\r\n\x1a\n";
    if data.starts_with(PNG_MAGIC) {
        return std::fs::write(png, data).map_err(|e| other("writing the screenshot", e));
    }
    super::ppm::write_png_from_ppm(data, png).map_err(|e| other("converting the screenshot", e))
}

impl Drop for LibvirtVm {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_screenshot_is_kept_as_png_whether_libvirt_sends_png_or_ppm() {
        let d = tempfile::tempdir().unwrap();
        let png = d.path().join("screen.png");
        // A PNG as QEMU writes it: kept byte for byte.
        let mut encoded = Vec::new();
        {
            let mut enc = ::png::Encoder::new(&mut encoded, 1, 1);
            enc.set_color(::png::ColorType::Rgb);
            enc.write_header()
                .unwrap()
                .write_image_data(&[1, 2, 3])
                .unwrap();
        }
        save_screenshot(&encoded, &png).unwrap();
        assert_eq!(std::fs::read(&png).unwrap(), encoded);
        // A PPM: converted.
        save_screenshot(b"P6\n1 1\n255\n\x01\x02\x03", &png).unwrap();
        assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
        assert!(save_screenshot(b"neither", &png).is_err());
    }

    #[test]
    fn libvirt_events_map_to_the_qemu_events_the_machine_reads() {
        let (name, data) = lifecycle_as_qemu_event(sys::VIR_DOMAIN_EVENT_CRASHED, 0).unwrap();
        assert_eq!(name, "GUEST_PANICKED");
        assert_eq!(data["libvirt_event"], "crashed");
        let (name, data) = lifecycle_as_qemu_event(
            sys::VIR_DOMAIN_EVENT_SHUTDOWN,
            sys::VIR_DOMAIN_EVENT_SHUTDOWN_FINISHED,
        )
        .unwrap();
        assert_eq!(name, "SHUTDOWN");
        assert_eq!(data["guest"], true);
        assert_ne!(data["reason"], "guest-reset");
        assert!(lifecycle_as_qemu_event(sys::VIR_DOMAIN_EVENT_STARTED, 0).is_none());
        assert!(lifecycle_as_qemu_event(sys::VIR_DOMAIN_EVENT_RESUMED, 0).is_none());
    }

    #[test]
    fn a_failed_connection_points_at_this_hosts_daemons_only_for_a_local_uri() {
        assert!(connect_hint("qemu:///system").contains("libvirtd -d"));
        let remote = connect_hint("qemu+ssh://root@lab/system");
        assert!(!remote.contains("libvirtd -d"), "{remote}");
        assert!(
            remote.contains("virsh -c 'qemu+ssh://root@lab/system' version"),
            "{remote}"
        );
    }

    #[test]
    fn qemu_failing_or_crashing_is_the_vms_end_and_an_asked_for_stop_is_not() {
        let stopped = |detail| lifecycle_as_vm_exit(sys::VIR_DOMAIN_EVENT_STOPPED, detail);
        let failed = stopped(sys::VIR_DOMAIN_EVENT_STOPPED_FAILED).unwrap();
        assert!(failed.contains("its QEMU failed"), "{failed}");
        let crashed = stopped(sys::VIR_DOMAIN_EVENT_STOPPED_CRASHED).unwrap();
        assert!(crashed.contains("its QEMU crashed"), "{crashed}");
        // The harness's own destroy, and a guest's poweroff (the machine reads its SHUTDOWN).
        assert_eq!(stopped(sys::VIR_DOMAIN_EVENT_STOPPED_DESTROYED), None);
        assert_eq!(stopped(sys::VIR_DOMAIN_EVENT_STOPPED_SHUTDOWN), None);
        let crashed_guest = sys::VIR_DOMAIN_EVENT_CRASHED;
        assert_eq!(
            lifecycle_as_vm_exit(crashed_guest, sys::VIR_DOMAIN_EVENT_STOPPED_FAILED),
            None
        );
    }

    #[test]
    fn a_run_directory_others_cannot_traverse_is_refused_with_the_culprit() {
        let top = tempfile::tempdir().unwrap();
        let closed = top.path().join("closed");
        let run = closed.join("run");
        std::fs::create_dir_all(&run).unwrap();
        std::fs::set_permissions(top.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
        let err = check_reachable(&run).unwrap_err();
        let LibvirtError::Unreachable { ancestor, mode, .. } = &err else {
            panic!("{err}")
        };
        assert_eq!(ancestor, &closed);
        assert_eq!(*mode, 0o700);
        assert!(err.to_string().contains("SNO_HARNESS_PRIVATE_DIR"), "{err}");
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o711)).unwrap();
        check_reachable(&run).unwrap();
    }
}
