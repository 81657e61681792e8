//! A machine the harness boots through its BMC (`--backend redfish`): the run's live ISO is
//! served by a file server of this VM's own, at the address the BMC reaches the harness at,
//! under a random path; the BMC inserts it as virtual media, boots once from the CD and powers
//! the machine on. From then on the machine is judged as a machine the harness did not boot
//! (`external.rs`: SSH and the API at the addresses given, no console), with the BMC's power
//! state for whether it runs. Stopping powers it off and ejects the media.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::backend::{BmcMachine, ExternalMachine};
use super::error::VmError;
use super::external::ExternalVm;
use super::redfish::{Bmc, BmcSettings, Credentials, Limits, PowerState, ResetType, Trust};
use super::VmSpec;
use crate::guest::console::Console;
use crate::netboot::{FileServer, Peers};

/// The ISO's name on the server (its URL path is the server's token, then this).
pub const ISO_NAME: &str = "live.iso";

/// How often the BMC is asked whether the machine is powered.
const POWER_POLL: Duration = Duration::from_secs(5);

/// How many answers in a row the power poll may miss before the BMC counts as lost.
const POWER_MISSES: u32 = 3;

/// The whole of stopping: power off and eject, each within the client's own deadlines.
const STOP_DEADLINE: Duration = Duration::from_secs(120);

/// Held while the harness changes the machine's power itself (a restart the power poll must
/// not take for the machine's end).
type Busy = Arc<tokio::sync::Mutex<()>>;

/// What the power poll saw last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Power {
    On,
    Off,
    /// The BMC did not answer `POWER_MISSES` times in a row: the last error, quoted.
    Lost(String),
}

pub struct BmcVm {
    machine: BmcMachine,
    settings: BmcSettings,
    /// SSH and the API at the addresses given, and a console that says nothing.
    seen: ExternalVm,
    /// Serves the ISO while the machine may read it (a live system reads its CD on).
    _server: FileServer,
    /// The ISO's URL as the BMC was given it, with the server's token taken out.
    shown_url: String,
    /// How long the BMC took to fetch and insert the image, to boot once from the CD and to
    /// power on.
    took: BootTimes,
    power: Arc<Mutex<Power>>,
    /// The BMC as found at the start, shared with the power poll.
    bmc: Arc<Bmc>,
    busy: Busy,
    poll: Option<tokio::task::JoinHandle<()>>,
    stopped: bool,
}

impl BmcVm {
    /// Serves the ISO, has the BMC insert it, boot once from the CD and power the machine on
    /// (off first if it was on: it must boot the CD now). A BMC's refusal is the error,
    /// quoting its message; what was done is undone.
    pub async fn start(
        machine: &BmcMachine,
        spec: &VmSpec,
        reach: &[SocketAddr],
        dir: &Path,
    ) -> Result<(BmcVm, Console), VmError> {
        let settings = settings(machine)?;
        let iso = spec.cdrom.as_ref().ok_or_else(|| {
            VmError::Bmc("the run has no live ISO to boot the machine from".into())
        })?;
        let server = FileServer::start((machine.serve_at, 0).into(), None, Peers::Any)
            .await
            .map_err(|e| {
                VmError::Bmc(format!(
                    "serving the live ISO on {} (--bmc-serve-at): {e}",
                    machine.serve_at
                ))
            })?;
        server.serve(ISO_NAME, iso.path.clone());
        let path = server.path_of(ISO_NAME);
        let url = iso_url(server.addr(), &path);
        let shown_url = iso_url(server.addr(), &server.shown(&path));
        // A BMC's message may quote the URL it was given: the token is the run's own.
        let token = path
            .trim_end_matches(ISO_NAME)
            .trim_matches('/')
            .to_string();
        let hide = |text: String| hidden(&text, &token);
        let bmc = Bmc::connect(&settings)
            .await
            .map_err(|e| VmError::Bmc(hide(e.to_string())))?;
        let took = match boot_from(&bmc, &url).await {
            Ok(took) => took,
            Err(e) => {
                let _ = bmc.eject_media().await;
                return Err(VmError::Bmc(hide(e.to_string())));
            }
        };
        let external = ExternalMachine {
            ssh: machine.ssh,
            user: machine.user.clone(),
            api: machine.api,
            console: None,
        };
        let (seen, console) = ExternalVm::start(&external, reach, dir)
            .map_err(|e| VmError::Console(e.to_string()))?;
        let power = Arc::new(Mutex::new(Power::On));
        let bmc = Arc::new(bmc);
        let busy = Busy::default();
        let poll = tokio::spawn(watch_power(bmc.clone(), power.clone(), busy.clone()));
        let vm = BmcVm {
            machine: machine.clone(),
            settings,
            seen,
            _server: server,
            shown_url,
            took,
            power,
            bmc,
            busy,
            poll: Some(poll),
            stopped: false,
        };
        Ok((vm, console))
    }

    pub fn local_addr(&self, addr: SocketAddr) -> SocketAddr {
        self.seen.local_addr(addr)
    }

    /// For vm.txt: the BMC, the system, the ISO's URL (without its token), the addresses.
    pub fn describe(&self) -> String {
        format!(
            "a machine booted through its BMC {} from the live ISO at {} (the BMC fetched and inserted it in {:.1} s, powered the machine on in {:.1} s): SSH {}@{}, API {}, no console",
            self.machine.bmc,
            self.shown_url,
            self.took.insert.as_secs_f64(),
            self.took.power_on.as_secs_f64(),
            self.machine.user,
            self.machine.ssh,
            self.machine.api
        )
    }

    /// What the BMC said last of the machine's power.
    pub fn power(&self) -> Power {
        lock(&self.power).clone()
    }

    /// The install is on the disk: the media are ejected now, before the machine reboots into
    /// it (the reboot comes a minute after the install), for a BMC that keeps the CD first
    /// whatever "Once" asked (sushy-tools' emulator does). A refusal is logged: the reboot
    /// phase says what the machine booted.
    pub fn install_on_disk(&self) {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (bmc, at, busy) = (
            self.bmc.clone(),
            self.machine.bmc.clone(),
            self.busy.clone(),
        );
        rt.spawn(async move {
            // The power poll waits: a machine off for a moment here has not ended.
            let _held = busy.lock().await;
            match eject_for_the_disk(&bmc).await {
                Ok(said) => tracing::info!("the BMC {at}: {said}"),
                Err(e) => tracing::warn!("the BMC {at} did not eject the live ISO: {e}"),
            }
        });
    }

    /// Powers the machine off and ejects the media, once; what the BMC refuses is logged (the
    /// run's verdict is had by then). Runs on a thread of its own with its own runtime: the
    /// caller may be on the run's runtime or past it.
    pub fn stop(&mut self) {
        self.seen.stop();
        if let Some(p) = self.poll.take() {
            p.abort();
        }
        if std::mem::replace(&mut self.stopped, true) {
            return;
        }
        if let Err(e) = power_off_and_eject(&self.settings) {
            tracing::warn!("the BMC {}: {e}: the machine may run on", self.machine.bmc);
        }
    }
}

impl BmcVm {
    /// A kept run's end: the machine stays powered on for the user (gc powers it off through
    /// the BMC). The media are ejected: the harness's server, which they name, ends with it.
    pub fn leave_powered_on(&mut self) {
        self.seen.stop();
        if let Some(p) = self.poll.take() {
            p.abort();
        }
        if std::mem::replace(&mut self.stopped, true) {
            return;
        }
        if let Err(e) = eject_only(&self.settings) {
            tracing::warn!(
                "the BMC {}: {e}: its media may still name the harness's server",
                self.machine.bmc
            );
        }
    }
}

impl Drop for BmcVm {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The client's settings from the machine's: the credentials from the file or environment.
pub fn settings(machine: &BmcMachine) -> Result<BmcSettings, VmError> {
    settings_of(
        &machine.bmc,
        machine.credentials.as_deref(),
        machine.trust.clone(),
    )
    .map_err(VmError::Bmc)
}

/// The client's settings for the BMC at `url`, its credentials from `file` or, without one,
/// from the environment, trusting `trust` on https.
pub fn settings_of(url: &str, file: Option<&Path>, trust: Trust) -> Result<BmcSettings, String> {
    let credentials = match file {
        Some(file) => Credentials::from_file(file).map_err(|e| e.to_string())?,
        None => Credentials::from_env()
            .map_err(|e| e.to_string())?
            .ok_or_else(|| {
                "no BMC credentials: give --bmc-credentials FILE (USER:PASSWORD, owner-only) or set SNO_BMC_USER and SNO_BMC_PASSWORD".to_string()
            })?,
    };
    Ok(BmcSettings {
        url: url.to_string(),
        credentials,
        trust,
        limits: Limits::default(),
    })
}

/// The BMC's password, for the run's redactor: what the published files must not hold.
pub fn password(machine: &BmcMachine) -> Option<String> {
    settings(machine)
        .ok()
        .map(|s| s.credentials.password().to_string())
}

/// `text` without the server's `token`, wherever it is quoted.
fn hidden(text: &str, token: &str) -> String {
    match token.is_empty() {
        true => text.to_string(),
        false => text.replace(token, "<token>"),
    }
}

/// `http://ADDR/PATH`, an IPv6 address in brackets (as `SocketAddr` shows it).
fn iso_url(addr: SocketAddr, path: &str) -> String {
    format!("http://{addr}{path}")
}

/// How long the BMC took: the insertion (its fetch of the image, for a BMC that fetches before
/// it answers), and the boot override with the power on.
#[derive(Debug, Clone, Copy, Default)]
struct BootTimes {
    insert: Duration,
    power_on: Duration,
}

/// Insert, boot once from the CD, power on (a machine that is on is forced off first).
async fn boot_from(bmc: &Bmc, url: &str) -> Result<BootTimes, super::redfish::RedfishError> {
    let started = std::time::Instant::now();
    bmc.insert_media(url).await?;
    let insert = started.elapsed();
    bmc.boot_once_from_cd().await?;
    if bmc.power_state().await? != PowerState::Off {
        bmc.reset(ResetType::ForceOff).await?;
    }
    bmc.reset(ResetType::On).await?;
    Ok(BootTimes {
        insert,
        power_on: started.elapsed() - insert,
    })
}

/// Ejects the media; a BMC that keeps the CD in its boot order (it reports the override
/// `Continuous`, whatever "Once" asked, as sushy-tools' emulator does) changes the machine's
/// definition, not the running machine, whose reboot would boot the CD again: the machine is
/// started again (off, on) from the definition without it, the installed system's first boot.
async fn eject_for_the_disk(bmc: &Bmc) -> Result<&'static str, super::redfish::RedfishError> {
    bmc.eject_media().await?;
    let kept = bmc.boot_override().await?.enabled.as_deref() == Some("Continuous");
    if !kept {
        return Ok("the live ISO ejected: the install is on the disk");
    }
    bmc.reset(ResetType::ForceOff).await?;
    bmc.reset(ResetType::On).await?;
    Ok("the live ISO ejected and the machine started again, since the BMC keeps the CD in its boot order (\"Continuous\"): the install is on the disk")
}

/// Asks the BMC for the power state until aborted; a BMC that misses `POWER_MISSES` answers in
/// a row is lost.
async fn watch_power(bmc: Arc<Bmc>, power: Arc<Mutex<Power>>, busy: Busy) {
    let mut misses = 0;
    loop {
        tokio::time::sleep(POWER_POLL).await;
        let held = busy.lock().await;
        let answer = bmc.power_state().await;
        drop(held);
        let seen = match answer {
            Ok(PowerState::Off) => Power::Off,
            Ok(_) => Power::On,
            Err(e) => {
                misses += 1;
                if misses < POWER_MISSES {
                    continue;
                }
                Power::Lost(e.to_string())
            }
        };
        if !matches!(seen, Power::Lost(_)) {
            misses = 0;
        }
        *lock(&power) = seen;
    }
}

/// gc's and the run's end: the machine off, the media out. Both are tried; the first
/// refusal is the error. On a thread of its own with its own runtime: the caller may be on a
/// runtime (the run's end) or on none (gc).
pub fn power_off_and_eject(settings: &BmcSettings) -> Result<(), String> {
    on_own_thread(settings, true)
}

/// A kept run's end: the media out, the power left as it is.
fn eject_only(settings: &BmcSettings) -> Result<(), String> {
    on_own_thread(settings, false)
}

fn on_own_thread(settings: &BmcSettings, power_off: bool) -> Result<(), String> {
    let settings = settings.clone();
    std::thread::Builder::new()
        .name("bmc-off".into())
        .spawn(move || off_and_out(&settings, power_off))
        .map_err(|e| e.to_string())?
        .join()
        .unwrap_or_else(|_| Err("the BMC's thread ended early".into()))
}

fn off_and_out(settings: &BmcSettings, power_off: bool) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async {
        let work = async {
            let bmc = Bmc::connect(settings).await.map_err(|e| e.to_string())?;
            let off = match power_off {
                false => Ok(()),
                true => match bmc.power_state().await {
                    Ok(PowerState::Off) => Ok(()),
                    _ => bmc
                        .reset(ResetType::ForceOff)
                        .await
                        .map_err(|e| e.to_string()),
                },
            };
            let out = bmc.eject_media().await.map_err(|e| e.to_string());
            off.and(out)
        };
        tokio::time::timeout(STOP_DEADLINE, work)
            .await
            .unwrap_or_else(|_| Err(format!("no answer within {}s", STOP_DEADLINE.as_secs())))
    })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The client tests' in-process BMC, for this backend's own (a second copy of the module: the
/// client's tests keep theirs private to the client).
#[cfg(test)]
#[allow(dead_code, clippy::duplicate_mod)]
#[path = "redfish/tests/fake_bmc.rs"]
mod fake_bmc;

#[cfg(test)]
mod tests {
    use super::fake_bmc::{extended_error, FakeBmc, Faults, PASSWORD, USER};
    use super::*;
    use std::io::{Read, Write};
    use std::os::unix::fs::PermissionsExt;

    const ISO: &[u8] = b"a live ISO's bytes";

    /// A machine behind `fake`, its credentials in an owner-only file under `dir`, and a spec
    /// whose CD is an ISO there.
    fn machine_and_spec(fake: &FakeBmc, dir: &Path) -> (BmcMachine, VmSpec) {
        let creds = dir.join("bmc.creds");
        std::fs::write(&creds, format!("{USER}:{PASSWORD}\n")).unwrap();
        std::fs::set_permissions(&creds, std::fs::Permissions::from_mode(0o600)).unwrap();
        let iso = dir.join("live.iso");
        std::fs::write(&iso, ISO).unwrap();
        let s = crate::scenario::parse_str(
            &dir.join("s.toml"),
            "name = \"s\"\nprofile = \"fixture\"\n[[disks]]\nid = \"install\"\nsize = \"1GiB\"\n",
        )
        .unwrap();
        let spec = crate::run::vm_spec(&s, dir, &iso, crate::hw::Accel::Tcg, 1, 2);
        let machine = BmcMachine {
            bmc: fake.url("http"),
            credentials: Some(creds),
            serve_at: std::net::Ipv4Addr::LOCALHOST.into(),
            ssh: "127.0.0.1:2222".parse().unwrap(),
            user: "core".into(),
            api: "127.0.0.1:6443".parse().unwrap(),
            trust: Default::default(),
        };
        (machine, spec)
    }

    /// The body of a plain GET of `url` (http://127.0.0.1:PORT/PATH).
    fn fetch(url: &str) -> Vec<u8> {
        let rest = url.strip_prefix("http://").unwrap();
        let (authority, path) = rest.split_at(rest.find('/').unwrap());
        let mut s = std::net::TcpStream::connect(authority).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = Vec::new();
        s.read_to_end(&mut answer).unwrap();
        let at = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        answer[at + 4..].to_vec()
    }

    // Multi-threaded: stopping blocks one thread on the BMC, which answers on another.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn start_serves_the_iso_inserts_it_boots_the_cd_once_and_stop_powers_off_and_ejects() {
        let fake = FakeBmc::start(Faults::default(), None).await;
        let dir = tempfile::tempdir().unwrap();
        let (machine, spec) = machine_and_spec(&fake, dir.path());
        let planned: [SocketAddr; 2] = [
            "127.0.0.1:4001".parse().unwrap(),
            "127.0.0.1:4002".parse().unwrap(),
        ];
        let (mut vm, _console) = BmcVm::start(&machine, &spec, &planned, dir.path())
            .await
            .unwrap();
        let image = {
            let st = fake.state.lock().unwrap();
            assert!(st.power_on, "powered on");
            assert_eq!(st.boot, ("Cd".to_string(), "Once".to_string()));
            assert_eq!(st.write_protected, Some(true));
            st.image.clone().expect("an image inserted")
        };
        assert!(image.ends_with("/live.iso"), "{image}");
        let got = tokio::task::spawn_blocking(move || fetch(&image))
            .await
            .unwrap();
        assert_eq!(got, ISO, "the BMC's URL serves the run's ISO");
        assert_eq!(vm.local_addr(planned[0]), machine.ssh);
        assert_eq!(vm.local_addr(planned[1]), machine.api);
        let d = vm.describe();
        assert!(
            d.contains("http://127.0.0.1:")
                && d.contains("/live.iso")
                && d.contains(&fake.url("http")),
            "{d}"
        );
        assert_eq!(vm.power(), Power::On);
        // The install on the disk: the media go, the machine stays on to reboot into it.
        vm.install_on_disk();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while fake.state.lock().unwrap().image.is_some() && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        {
            let st = fake.state.lock().unwrap();
            assert!(st.image.is_none() && st.power_on, "ejected, still on");
        }
        fake.state.lock().unwrap().image = Some("put back to see the end eject it".into());
        let reset = |b: &serde_json::Value| b["ResetType"].as_str().map(str::to_string);
        vm.stop();
        {
            let st = fake.state.lock().unwrap();
            assert!(!st.power_on, "powered off at the end");
            assert!(st.image.is_none(), "the media ejected at the end");
            let resets: Vec<_> = st.seen.iter().filter_map(|s| reset(&s.body)).collect();
            assert_eq!(resets, ["On", "ForceOff"]);
        }
        let seen = fake.seen().len();
        vm.stop();
        assert_eq!(fake.seen().len(), seen, "stopping twice asks the BMC once");
    }

    /// A BMC that keeps the CD in its boot order ("Continuous") has the machine started again
    /// once the media are out; one that took "Once" is left to the machine's own reboot.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_bmc_that_keeps_the_cd_first_has_the_machine_started_again_from_the_disk() {
        let fake = FakeBmc::start(Faults::default(), None).await;
        let dir = tempfile::tempdir().unwrap();
        let (machine, spec) = machine_and_spec(&fake, dir.path());
        let (mut vm, _console) = BmcVm::start(&machine, &spec, &[], dir.path())
            .await
            .unwrap();
        let resets = |fake: &FakeBmc| -> Vec<String> {
            fake.seen()
                .iter()
                .filter_map(|s| s.body["ResetType"].as_str().map(str::to_string))
                .collect()
        };
        fake.state.lock().unwrap().boot = ("Cd".into(), "Continuous".into());
        vm.install_on_disk();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while resets(&fake).len() < 3 && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(resets(&fake), ["On", "ForceOff", "On"]);
        let st = fake.state.lock().unwrap();
        assert!(st.image.is_none() && st.power_on, "ejected, and on again");
        drop(st);
        assert_eq!(vm.power(), Power::On);
        vm.stop();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_machine_that_is_on_is_forced_off_before_it_boots_the_cd_and_off_is_its_end() {
        let fake = FakeBmc::start(Faults::default(), None).await;
        fake.state.lock().unwrap().power_on = true;
        let dir = tempfile::tempdir().unwrap();
        let (machine, spec) = machine_and_spec(&fake, dir.path());
        let (mut vm, _console) = BmcVm::start(&machine, &spec, &[], dir.path())
            .await
            .unwrap();
        let resets: Vec<_> = fake
            .seen()
            .iter()
            .filter_map(|s| s.body["ResetType"].as_str().map(str::to_string))
            .collect();
        assert_eq!(resets, ["ForceOff", "On"]);
        fake.state.lock().unwrap().power_on = false;
        let deadline = std::time::Instant::now() + POWER_POLL * 3;
        while vm.power() != Power::Off && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(
            vm.power(),
            Power::Off,
            "the BMC's power state says the machine ended"
        );
        vm.stop();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_refused_insert_is_the_error_quoting_the_bmc_and_what_was_done_is_undone() {
        let dir = tempfile::tempdir().unwrap();
        let fake = FakeBmc::start(Faults::default(), None).await;
        let (machine, spec) = machine_and_spec(&fake, dir.path());
        let quoted = "http://127.0.0.1:1/live.iso";
        fake.state.lock().unwrap().faults.refuse_insert = Some((
            400,
            extended_error(
                &format!("The image {quoted} could not be fetched"),
                "Base.1.8.ActionParameterValueError",
            ),
        ));
        let e = BmcVm::start(&machine, &spec, &[], dir.path())
            .await
            .err()
            .expect("refused");
        let text = e.to_string();
        assert!(matches!(e, VmError::Bmc(_)), "{text}");
        assert!(text.contains("could not be fetched"), "{text}");
        assert!(!fake.state.lock().unwrap().power_on, "not powered on");
        let ejected = fake
            .seen()
            .iter()
            .any(|s| s.path.ends_with("VirtualMedia.EjectMedia"));
        assert!(ejected, "what was done is undone");
    }

    /// gc of a run whose harness died: the machine its BMC booted is powered off and the media
    /// ejected, with the credentials from the file the registration names; a dry run asks
    /// nothing of the BMC.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn gc_powers_off_and_ejects_the_machine_of_a_dead_bmc_run() {
        let fake = FakeBmc::start(Faults::default(), None).await;
        let dir = tempfile::tempdir().unwrap();
        let (machine, _spec) = machine_and_spec(&fake, dir.path());
        {
            let mut st = fake.state.lock().unwrap();
            st.power_on = true;
            st.image = Some("http://127.0.0.1:1/x/live.iso".into());
        }
        let reg = tempfile::tempdir().unwrap();
        let run = dir.path().join("smoke");
        std::fs::create_dir(&run).unwrap();
        let e = crate::registry::Entry {
            id: "smoke".into(),
            pid: u32::MAX - 1,
            pid_start: 1,
            dir: run,
            backend: "redfish".into(),
            uri: None,
            domain: None,
            keep: false,
            paused: false,
            qemu: None,
            private: None,
            bmc: Some(crate::registry::BmcRecord::of(&machine)),
        };
        std::fs::write(
            reg.path().join("1-smoke.json"),
            serde_json::to_vec(&e).unwrap(),
        )
        .unwrap();
        let reg_dir = reg.path().to_path_buf();
        let collect = move |dry| crate::registry::gc::collect(&reg_dir, &[], dry);
        let c = collect.clone();
        let dry = tokio::task::spawn_blocking(move || c(true)).await.unwrap();
        assert!(
            dry.actions
                .iter()
                .any(|a| a.contains("power off the machine of the BMC")),
            "{:?}",
            dry.actions
        );
        assert!(fake.seen().is_empty(), "a dry run asks nothing");
        let done = tokio::task::spawn_blocking(move || collect(false))
            .await
            .unwrap();
        assert!(done.errors.is_empty(), "{:?}", done.errors);
        let st = fake.state.lock().unwrap();
        assert!(!st.power_on && st.image.is_none(), "off and ejected");
    }

    #[test]
    fn the_servers_token_is_hidden_wherever_a_message_quotes_it() {
        let said = "Unable to fetch http://192.0.2.1:8080/Zk3q/live.iso: /Zk3q/live.iso not found";
        assert_eq!(
            hidden(said, "Zk3q"),
            "Unable to fetch http://192.0.2.1:8080/<token>/live.iso: /<token>/live.iso not found"
        );
        assert_eq!(hidden(said, ""), said);
    }

    #[tokio::test]
    async fn no_credentials_is_said_with_the_ways_to_give_them() {
        let m = BmcMachine {
            bmc: "http://127.0.0.1:9".into(),
            credentials: Some("/nonexistent/bmc.creds".into()),
            serve_at: std::net::Ipv4Addr::LOCALHOST.into(),
            ssh: "127.0.0.1:22".parse().unwrap(),
            user: "core".into(),
            api: "127.0.0.1:6443".parse().unwrap(),
            trust: Default::default(),
        };
        let e = settings(&m).unwrap_err().to_string();
        assert!(e.contains("/nonexistent/bmc.creds"), "{e}");
        assert_eq!(password(&m), None);
        let dir = tempfile::tempdir().unwrap();
        let fake_at = BmcMachine {
            bmc: "http://127.0.0.1:9".into(),
            ..m
        };
        let creds = dir.path().join("c");
        std::fs::write(&creds, "admin:a-long-password\n").unwrap();
        std::fs::set_permissions(&creds, std::fs::Permissions::from_mode(0o600)).unwrap();
        let with = BmcMachine {
            credentials: Some(creds),
            ..fake_at
        };
        assert_eq!(password(&with).as_deref(), Some("a-long-password"));
    }
}
