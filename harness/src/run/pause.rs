//! `--pause-on-failure`: a failed run stops at its verdict with its VM alive, for the user to
//! look into, until Enter on the harness's terminal, SIGUSR1 (`sno-harness resume RUN` sends
//! it), Ctrl-C or the pause's limit; then it gathers and ends as any run. The pause is not the
//! run's time: result.json's duration leaves it out and `paused_ms` says how long it was
//! (the NixOS test driver and kola pause the same way, so that a failure is looked at in place
//! rather than reconstructed from artifacts).

use std::time::{Duration, Instant};

use tokio::signal::unix::{signal, SignalKind};

use super::context::Run;
use crate::flow::event::{Signal as Event, Source};
use crate::registry::Registration;
use crate::vm::running::{Liveness, RunningVm};

/// The longest a run stays paused: a forgotten pause must not hold a VM for ever.
pub const PAUSE_LIMIT: Duration = Duration::from_secs(24 * 3600);

/// What ended a pause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resumed {
    Enter,
    /// SIGUSR1, from `sno-harness resume RUN` or `kill -USR1`.
    Signal,
    /// Ctrl-C or SIGTERM: the run stops as any interrupted run.
    Interrupt,
    /// The pause's limit passed.
    Limit,
    /// The VM ended (shut down, or killed): nothing is left to look into.
    VmEnded,
}

impl Resumed {
    pub fn as_str(self) -> &'static str {
        match self {
            Resumed::Enter => "Enter",
            Resumed::Signal => "SIGUSR1 (sno-harness resume)",
            Resumed::Interrupt => "an interrupt",
            Resumed::Limit => "the pause's limit",
            Resumed::VmEnded => "the VM's end",
        }
    }
}

/// Installs the SIGUSR1 handler (replacing the default, which ends the process): called when a
/// run that may pause starts, so that a `resume` that comes a moment early or late never kills
/// the harness.
pub fn arm() -> std::io::Result<()> {
    signal(SignalKind::user_defined1()).map(drop)
}

/// Waits until the pause ends (or `vm_ended` resolves), and says what ended it and how long it
/// was.
pub async fn wait_for_resume(
    interrupt: &mut tokio::sync::watch::Receiver<bool>,
    limit: Duration,
    vm_ended: impl std::future::Future<Output = ()>,
) -> (Resumed, Duration) {
    let started = Instant::now();
    let (tx, enter) = tokio::sync::oneshot::channel();
    // A blocking read of stdin cannot be cancelled: it has a thread of its own, never joined,
    // which the process's end takes with it.
    let reader = std::thread::Builder::new()
        .name("pause-enter".into())
        .spawn(move || {
            let mut line = String::new();
            // End of input (no terminal after all) is no Enter: the sender is dropped.
            if let Ok(1..) = std::io::stdin().read_line(&mut line) {
                let _ = tx.send(());
            }
        });
    let enter = async {
        match reader {
            Ok(_) if enter.await.is_ok() => {}
            _ => std::future::pending().await,
        }
    };
    let usr1 = async {
        match signal(SignalKind::user_defined1()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    let why = tokio::select! {
        _ = enter => Resumed::Enter,
        _ = usr1 => Resumed::Signal,
        _ = super::until_interrupted(interrupt) => Resumed::Interrupt,
        _ = tokio::time::sleep(limit) => Resumed::Limit,
        _ = vm_ended => Resumed::VmEnded,
    };
    (why, started.elapsed())
}

/// Holds a failed run at its verdict: says how to get in (`failure`: where it failed; `way_in`:
/// the lines of `way_in::WayIn`) and how to go on, marks the registration paused (`status`,
/// `resume`), and waits; returns the pause's length.
pub async fn hold(
    run: &mut Run<'_>,
    (failure, way_in): (&str, Vec<String>),
    mut registration: Option<&mut Registration>,
    vm: &mut RunningVm,
) -> Duration {
    run.ui.finish();
    let mut text = vec![
        format!("sno-harness: paused at the failure ({failure}); the VM runs on and the run's clock is stopped."),
        "To get in:".to_string(),
    ];
    text.extend(way_in);
    text.push(format!(
        "To go on (gather the evidence, stop the VM, write the reports): press Enter here, or run `sno-harness resume {}`, or `kill -USR1 {}` (at most {} paused).",
        run.opts.id,
        std::process::id(),
        humantime::format_duration(PAUSE_LIMIT)
    ));
    run.ui.print(&text.join("\n"));
    mark(&mut registration, true);
    note(run, "paused at the failure".into());
    let mut interrupt = run.opts.interrupt.clone();
    let vm_ended = async move {
        while matches!(vm.liveness(), Liveness::Running) {
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    };
    let (why, long) = wait_for_resume(&mut interrupt, PAUSE_LIMIT, vm_ended).await;
    mark(&mut registration, false);
    let line = format!(
        "resumed by {} after {:.0} s paused; gathering",
        why.as_str(),
        long.as_secs_f64()
    );
    note(run, line.clone());
    run.ui.line(&line);
    long
}

/// Says in the run's registration whether it is paused; a failure is a warning (`resume` then
/// says the run is not paused, and SIGUSR1 or Enter still end the pause).
fn mark(registration: &mut Option<&mut Registration>, paused: bool) {
    if let Some(r) = registration.as_mut() {
        if let Err(e) = r.update(|e| e.paused = paused) {
            tracing::warn!("cannot mark the run paused={paused} in its registration: {e}");
        }
    }
}

fn note(run: &mut Run<'_>, text: String) {
    let _ = run.log.record(Source::Harness, Event::Note { text });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sigusr1_ends_a_pause_and_its_length_is_measured() {
        arm().unwrap();
        let (_tx, mut rx) = tokio::sync::watch::channel(false);
        let waiting = tokio::spawn(async move {
            wait_for_resume(&mut rx, PAUSE_LIMIT, std::future::pending()).await
        });
        // The handler is armed before the signal: a SIGUSR1 that comes before the wait only
        // wakes it at once, it never ends the process.
        tokio::time::sleep(Duration::from_millis(200)).await;
        rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::USR1)
            .unwrap();
        let (why, long) = tokio::time::timeout(Duration::from_secs(30), waiting)
            .await
            .expect("the pause ends on SIGUSR1")
            .unwrap();
        assert_eq!(why, Resumed::Signal);
        assert!(long >= Duration::from_millis(150), "{long:?}");
    }

    #[tokio::test]
    async fn an_interrupt_the_limit_or_the_vms_end_ends_a_pause() {
        let never = std::future::pending::<()>;
        let (tx, mut rx) = tokio::sync::watch::channel(false);
        tx.send(true).unwrap();
        let (why, _) = wait_for_resume(&mut rx, PAUSE_LIMIT, never()).await;
        assert_eq!(why, Resumed::Interrupt);
        let (_tx, mut rx) = tokio::sync::watch::channel(false);
        let (why, long) = wait_for_resume(&mut rx, Duration::from_millis(50), never()).await;
        assert_eq!(why, Resumed::Limit);
        assert!(long >= Duration::from_millis(50));
        let (why, _) = wait_for_resume(&mut rx, PAUSE_LIMIT, async {}).await;
        assert_eq!(why, Resumed::VmEnded);
    }
}
