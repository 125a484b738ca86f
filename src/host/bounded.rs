//! A host call with no bound of its own (synchronous WMI: IWbemServices::ExecMethod), run on
//! its own thread and waited for at most a given time; past it, said timed out and left.

use crate::duration::{Look, Pauses, poll_quietly};
use crate::host::{HostError, HostResult};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// `within`, one call at a time of those `busy` marks: while a timed-out call still runs,
/// another is refused at once, not sent beside it.
pub fn one_at_a_time<T: Send + 'static>(
    busy: &'static AtomicBool,
    what: &str,
    bound: Duration,
    call: impl FnOnce() -> HostResult<T> + Send + 'static,
) -> HostResult<T> {
    if busy.swap(true, Ordering::SeqCst) {
        return Err(HostError::refused(
            what.to_owned(),
            "an earlier call of its kind has not returned yet (it timed out; its outcome is not known): none is sent beside it until it returns; if this stays, WMI's provider is hung: see whether 'Get-CimInstance Win32_NetworkAdapterConfiguration' answers, and reboot the machine when it does not (restarting CalicoNode would send the call again beside the hung one)",
        ));
    }
    // Cleared when the call returns, on its own thread, or when it never runs.
    let held = Held(busy);
    within(what, bound, move || {
        let _held = held;
        call()
    })
    .map_err(|e| match e {
        HostError::Timeout { what, after } => HostError::Timeout {
            what: format!("{what} (its outcome is not known: it may still take effect)"),
            after,
        },
        e => e,
    })
}

/// The mark of a call under way, cleared when dropped.
struct Held(&'static AtomicBool);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

/// Runs `call` on a thread of its own and waits for its answer until `within` has passed.
pub fn within<T: Send + 'static>(
    what: &str,
    within: Duration,
    call: impl FnOnce() -> HostResult<T> + Send + 'static,
) -> HostResult<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("bounded-host-call".into())
        .spawn(move || {
            // The waiter may have gone (timed out): then the answer has no one to take it.
            let _ = tx.send(call());
        })
        .map_err(|error| HostError::Io {
            op: format!("start a thread for {what}"),
            error,
        })?;
    poll_quietly(
        Instant::now() + within,
        Pauses::every(Duration::from_millis(20)),
        || match rx.try_recv() {
            Ok(answer) => answer.map(Look::Done),
            Err(std::sync::mpsc::TryRecvError::Empty) => Ok(Look::Pending(())),
            Err(std::sync::mpsc::TryRecvError::Disconnected) => Err(HostError::refused(
                what.to_owned(),
                "the call's thread ended without an answer",
            )),
        },
        |()| {
            Err(HostError::Timeout {
                what: what.to_owned(),
                after: within,
            })
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The call's answer in time, an error as it came; a call that panics is refused.
    #[test]
    fn an_answer_in_time_is_the_calls() {
        assert_eq!(
            within("a call", Duration::from_secs(30), || Ok(7)).ok(),
            Some(7)
        );
        let refused = within("a call", Duration::from_secs(30), || -> HostResult<()> {
            Err(HostError::not_found("x"))
        });
        assert!(matches!(refused, Err(HostError::NotFound { .. })));
        let answer = within("a call", Duration::from_secs(30), || -> HostResult<()> {
            panic!("the provider fell over")
        });
        assert!(
            matches!(answer, Err(HostError::Refused { .. })),
            "{answer:?}"
        );
    }

    /// A call that never answers is a timeout at the bound; while it runs, the next of its kind
    /// is refused; once it returns, the next runs.
    #[test]
    fn a_call_of_a_kind_is_refused_while_an_earlier_one_still_runs() {
        static BUSY: AtomicBool = AtomicBool::new(false);
        let (hold, held) = std::sync::mpsc::channel::<()>();
        let first = one_at_a_time(
            &BUSY,
            "a stuck call",
            Duration::from_millis(100),
            move || {
                let _ = held.recv();
                Ok(1)
            },
        );
        assert!(
            matches!(&first, Err(HostError::Timeout { what, after }) if what.starts_with("a stuck call") && what.contains("outcome is not known") && *after == Duration::from_millis(100)),
            "{first:?}"
        );
        let second = one_at_a_time(&BUSY, "the next call", Duration::from_secs(30), || Ok(2));
        assert!(
            matches!(second, Err(HostError::Refused { .. })),
            "{second:?}"
        );
        // The earlier call returns: the next one runs.
        drop(hold);
        let mut third = Err(HostError::not_found("not run"));
        for _ in 0..500 {
            third = one_at_a_time(&BUSY, "the next call", Duration::from_secs(30), || Ok(3));
            if third.is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(third.ok(), Some(3));
    }
}
