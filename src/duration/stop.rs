//! The stop request a service gets from the SCM (or Ctrl-C in `--console`), or a command from
//! Ctrl-C (`host::stop::on_stop`), which every wait watches (`poll_until`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Shared by the control handler that requests the stop and the body that waits; knows
/// whether the stop is the machine shutting down.
#[derive(Clone, Debug, Default)]
pub struct Stop {
    /// Set by `request` only, so that every waiter is woken.
    asked: Arc<AtomicBool>,
    /// The flags of the stops this one is part of (`part`): their request is this one's too.
    whole: Vec<Arc<AtomicBool>>,
    /// Wakes the waiters: `request` sets `asked`, then notifies under the lock.
    wake: Arc<(Mutex<()>, Condvar)>,
    shutdown: Arc<AtomicBool>,
}

impl Stop {
    pub fn new() -> Self {
        Self::default()
    }

    /// A stop no one requests: for a command's wait, which has no service to stop.
    pub fn never() -> Self {
        Self::default()
    }

    /// A stop of its own that is also requested when this one is (both share the waiters'
    /// wake-up, so a request of either wakes a wait on the other): one `verify` run stopped
    /// alone, by a lease it lost, while Ctrl-C stops every run.
    pub fn part(&self) -> Self {
        let mut whole = self.whole.clone();
        whole.push(self.asked.clone());
        Self {
            asked: Arc::new(AtomicBool::new(false)),
            whole,
            wake: self.wake.clone(),
            shutdown: self.shutdown.clone(),
        }
    }

    pub fn request(&self) {
        self.asked.store(true, Ordering::SeqCst);
        // Notified under the lock: a waiter that saw no request is waiting by then.
        let (lock, cv) = &*self.wake;
        let _held = lock.lock().unwrap_or_else(|p| p.into_inner());
        cv.notify_all();
    }

    /// The stop of a machine shutting down (`SERVICE_CONTROL_SHUTDOWN`).
    pub fn request_shutdown(&self) {
        self.shutdown.store(true, Ordering::SeqCst);
        self.request();
    }

    pub fn is_shutdown(&self) -> bool {
        self.shutdown.load(Ordering::SeqCst)
    }

    pub fn requested(&self) -> bool {
        self.asked.load(Ordering::SeqCst) || self.whole.iter().any(|w| w.load(Ordering::SeqCst))
    }

    /// Sleeps up to `d`; returns true (at once) when a stop is requested.
    pub fn wait(&self, d: Duration) -> bool {
        let (lock, cv) = &*self.wake;
        let deadline = Instant::now().checked_add(d);
        let mut held = lock.lock().unwrap_or_else(|p| p.into_inner());
        while !self.requested() {
            let left = deadline.map_or(Duration::from_secs(86_400), |at| {
                at.saturating_duration_since(Instant::now())
            });
            if left.is_zero() {
                return false;
            }
            held = cv
                .wait_timeout(held, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A part is stopped with its whole (a wait on it woken), and alone without stopping the
    /// whole or another part.
    #[test]
    fn a_part_stops_with_its_whole_and_alone() {
        let whole = Stop::new();
        let (a, b) = (whole.part(), whole.part());
        let inner = a.part();
        a.request();
        assert!(a.requested() && inner.requested());
        assert!(!whole.requested() && !b.requested());
        let waiter = std::thread::spawn(move || b.wait(Duration::from_secs(3600)));
        whole.request();
        assert!(waiter.join().expect("join"), "woken by the whole's request");
    }
}
