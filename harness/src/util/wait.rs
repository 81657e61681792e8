//! Polling with a deadline that reports the last error, not a bare "timed out".

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A condition that never held before its deadline.
#[derive(Debug)]
pub struct WaitTimeout<E> {
    /// What was being waited for, in words.
    pub what: String,
    pub elapsed: Duration,
    pub attempts: u32,
    /// The error of the last attempt: usually the best clue to what went wrong.
    pub last_error: E,
}

impl<E: fmt::Display> fmt::Display for WaitTimeout<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} did not happen within {:.1} s ({} attempts); last error: {}",
            self.what,
            self.elapsed.as_secs_f64(),
            self.attempts,
            self.last_error
        )
    }
}

impl<E: fmt::Debug + fmt::Display> std::error::Error for WaitTimeout<E> {}

/// Calls `attempt` every `interval` until it returns `Ok` or `timeout` has passed.
/// The last call is made at or after the deadline, so a condition that becomes true just in
/// time is still seen.
pub fn wait_until_succeeds<T, E>(
    what: impl Into<String>,
    timeout: Duration,
    interval: Duration,
    mut attempt: impl FnMut() -> Result<T, E>,
) -> Result<T, WaitTimeout<E>> {
    let start = Instant::now();
    let mut attempts = 0;
    loop {
        attempts += 1;
        match attempt() {
            Ok(v) => return Ok(v),
            Err(e) => {
                let elapsed = start.elapsed();
                if elapsed >= timeout {
                    return Err(WaitTimeout {
                        what: what.into(),
                        elapsed,
                        attempts,
                        last_error: e,
                    });
                }
                std::thread::sleep(interval.min(timeout - elapsed));
            }
        }
    }
}

/// Sleeps for `d`, or less once `stop` is set: a loop on its own thread that must stop
/// promptly waits this way between attempts.
pub fn sleep_unless_stopped(stop: &AtomicBool, d: Duration) {
    let step = Duration::from_millis(100);
    let mut left = d;
    while !stop.load(Ordering::SeqCst) && !left.is_zero() {
        let s = step.min(left);
        std::thread::sleep(s);
        left -= s;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_the_value_once_the_condition_holds() {
        let mut n = 0;
        let v = wait_until_succeeds(
            "n reaches 3",
            Duration::from_secs(5),
            Duration::ZERO,
            || {
                n += 1;
                if n >= 3 {
                    Ok(n)
                } else {
                    Err(format!("n is {n}"))
                }
            },
        )
        .unwrap();
        assert_eq!(v, 3);
    }

    #[test]
    fn timeout_carries_the_last_error_and_the_attempt_count() {
        let mut n = 0;
        let err = wait_until_succeeds(
            "never",
            Duration::from_millis(30),
            Duration::from_millis(5),
            || -> Result<(), String> {
                n += 1;
                Err(format!("attempt {n} failed"))
            },
        )
        .unwrap_err();
        assert_eq!(err.last_error, format!("attempt {} failed", err.attempts));
        assert!(err.attempts >= 2);
        assert!(err.to_string().contains("never did not happen within"));
    }
}
