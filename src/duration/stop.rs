//! The stop request a service gets from the SCM (or Ctrl-C in `--console`), which every wait
//! of the service body watches (`poll_until`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Shared by the control handler that requests the stop and the body that waits; knows
/// whether the stop is the machine shutting down.
#[derive(Clone, Debug, Default)]
pub struct Stop(Arc<(Mutex<bool>, Condvar)>, Arc<AtomicBool>);

impl Stop {
    pub fn new() -> Self {
        Self::default()
    }

    /// A stop no one requests: for a command's wait, which has no service to stop.
    pub fn never() -> Self {
        Self::default()
    }

    pub fn request(&self) {
        let (flag, cv) = &*self.0;
        *flag.lock().unwrap_or_else(|p| p.into_inner()) = true;
        cv.notify_all();
    }

    /// The stop of a machine shutting down (`SERVICE_CONTROL_SHUTDOWN`).
    pub fn request_shutdown(&self) {
        self.1.store(true, Ordering::SeqCst);
        self.request();
    }

    pub fn is_shutdown(&self) -> bool {
        self.1.load(Ordering::SeqCst)
    }

    pub fn requested(&self) -> bool {
        *self.0.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sleeps up to `d`; returns true (at once) when a stop is requested.
    pub fn wait(&self, d: Duration) -> bool {
        let (flag, cv) = &*self.0;
        let deadline = Instant::now() + d;
        let mut stopped = flag.lock().unwrap_or_else(|p| p.into_inner());
        while !*stopped {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            stopped = cv
                .wait_timeout(stopped, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_ends_early_when_a_stop_is_requested() {
        let stop = Stop::new();
        assert!(!stop.wait(Duration::from_millis(20)));
        let other = stop.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            other.request();
        });
        let start = Instant::now();
        assert!(stop.wait(Duration::from_secs(30)));
        assert!(start.elapsed() < Duration::from_secs(20));
        assert!(stop.requested());
        t.join().expect("join");
    }
}
