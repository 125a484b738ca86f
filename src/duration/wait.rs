//! The one poll loop: a service's wait (`poll_until`) says what it waits for, times out with
//! the caller's error and ends with `Stopped` at its stop; `poll_quietly` is the same loop
//! silent, for waits no stop reaches.

use super::stop::Stop;
use std::convert::Infallible;
use std::time::{Duration, Instant};

/// One look of a wait: done with a value, or still waiting for what it says; `Again` also
/// says when to look next (a server's Retry-After, a retry's own pace) instead of `Pauses`.
pub enum Look<T, P> {
    Done(T),
    Pending(P),
    Again(P, Duration),
}

/// The pauses between looks: `first`, doubling up to `most`.
#[derive(Clone, Copy, Debug)]
pub struct Pauses {
    pub first: Duration,
    pub most: Duration,
}

impl Pauses {
    /// The same pause every time.
    pub const fn every(d: Duration) -> Self {
        Self { first: d, most: d }
    }

    /// The pause after the `n`th look that was not done (counting from 1): `first`, doubling
    /// up to `most`. A wait that says its next pause (a retry with backoff) reads it here.
    pub fn after(self, n: u32) -> Duration {
        let most = self.most.max(self.first);
        2_u32
            .checked_pow(n.saturating_sub(1))
            .and_then(|f| self.first.checked_mul(f))
            .map_or(most, |d| d.min(most))
    }
}

/// The timeout of a wait that has no time limit by design (it warns on its own instead):
/// its log lines say so rather than give a deadline.
pub const NO_LIMIT: Duration = Duration::MAX;

/// A wait the stop ended (a service's, or a command's Ctrl-C): not a timeout, and no failure
/// of what was awaited.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("stopped while waiting: a stop was requested (the service's stop, or Ctrl-C)")]
pub struct Stopped;

/// How often a wait says that it is still waiting, at most.
pub const SAY_EVERY: Duration = Duration::from_secs(30);

/// How the line that says a wait still waits begins.
pub const STILL_WAITING: &str = "still waiting for ";

/// A service's wait: what it waits for (in words, for its log lines), for how long, how often
/// it looks, the stop that ends it and where it says how it goes.
pub struct Wait<'a> {
    pub what: &'a str,
    pub timeout: Duration,
    pub pauses: Pauses,
    pub stop: &'a Stop,
    pub say: &'a mut dyn FnMut(&str),
}

/// How a wait's loop ended: its value, what it still waited for at the deadline, or the stop.
enum End<T, P, C> {
    Done(T),
    TimedOut(P),
    Stopped(C),
}

/// Looks until `look` is done (or fails), else until the timeout, when `timed_out` gets what the
/// last look still waited for; a stop ends it at once with `Stopped`, before the first look too.
/// It says what it waits for, that it still waits (at most every `SAY_EVERY`), and how it ended.
pub fn poll_until<T, P, E: From<Stopped>>(
    wait: Wait<'_>,
    look: impl FnMut() -> Result<Look<T, P>, E>,
    timed_out: impl FnOnce(P) -> Result<T, E>,
) -> Result<T, E> {
    let Wait {
        what,
        timeout,
        pauses,
        stop,
        say,
    } = wait;
    let started = Instant::now();
    // `NO_LIMIT` (an agent's run, which may last longer than any stand-in deadline: a year once
    // made CalicoFelix stop and start again) adds to no `Instant`, so it is no deadline; nor is
    // a timeout too long for the clock to add.
    let deadline = started.checked_add(timeout);
    let mut last_said: Option<Instant> = None;
    let mut looks = 0_u32;
    let of = (timeout != NO_LIMIT).then(|| format!(" of {timeout:?}"));
    let mut pending = |now: Instant| {
        looks += 1;
        let waited = millis(now.duration_since(started));
        match last_said {
            None if of.is_none() => say(&format!("waiting for {what} (no time limit)")),
            None => say(&format!("waiting up to {timeout:?} for {what}")),
            Some(at) if now.duration_since(at) >= SAY_EVERY => say(&format!(
                "{STILL_WAITING}{what}: look {looks}, {waited:?}{}",
                of.as_deref().unwrap_or_default()
            )),
            Some(_) => return,
        }
        last_said = Some(now);
    };
    // A stop requested before the wait (during the step before it) ends it before any look.
    let end = if stop.requested() {
        End::Stopped(Stopped)
    } else {
        run(
            deadline,
            pauses,
            |d| stop.wait(d).then_some(Stopped),
            &mut pending,
            look,
        )?
    };
    let waited = millis(started.elapsed());
    match end {
        End::Done(v) => {
            if last_said.is_some() {
                say(&format!("waited {waited:?} for {what}"));
            }
            Ok(v)
        }
        End::TimedOut(p) => {
            say(&format!("gave up waiting for {what} after {timeout:?}"));
            timed_out(p)
        }
        End::Stopped(s) => {
            say(&format!(
                "stopped waiting for {what} after {waited:?}: a stop was requested"
            ));
            Err(s.into())
        }
    }
}

/// The same loop for a wait no service stop reaches (a host call's own bound, a command's
/// step), which says nothing: until `deadline`, with `timed_out` as in `poll_until`.
pub fn poll_quietly<T, P, E>(
    deadline: Instant,
    pauses: Pauses,
    look: impl FnMut() -> Result<Look<T, P>, E>,
    timed_out: impl FnOnce(P) -> Result<T, E>,
) -> Result<T, E> {
    let sleep = |d| {
        std::thread::sleep(d);
        None::<Infallible>
    };
    match run(Some(deadline), pauses, sleep, &mut |_| {}, look)? {
        End::Done(v) => Ok(v),
        End::TimedOut(p) => timed_out(p),
        End::Stopped(never) => match never {},
    }
}

/// The loop: a look, then (unless done or at the deadline) a pause that `pause` may cut with
/// `C`. No pause outlasts the deadline, and there is always one last look at it. Measured by
/// the monotonic clock (`Instant`), so a clock step neither ends a wait early nor prolongs it.
fn run<T, P, E, C>(
    deadline: Option<Instant>,
    pauses: Pauses,
    mut pause: impl FnMut(Duration) -> Option<C>,
    pending: &mut dyn FnMut(Instant),
    mut look: impl FnMut() -> Result<Look<T, P>, E>,
) -> Result<End<T, P, C>, E> {
    let mut pending_looks = 0_u32;
    loop {
        let (waiting_for, asked) = match look()? {
            Look::Done(v) => return Ok(End::Done(v)),
            Look::Pending(p) => (p, None),
            Look::Again(p, next) => (p, Some(next)),
        };
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            // A stop requested by then is how the wait ends, not the timeout.
            return Ok(match pause(Duration::ZERO) {
                Some(cut) => End::Stopped(cut),
                None => End::TimedOut(waiting_for),
            });
        }
        pending(now);
        pending_looks = pending_looks.saturating_add(1);
        let next = asked.unwrap_or_else(|| pauses.after(pending_looks));
        let left = deadline.map_or(next, |d| d.saturating_duration_since(now));
        if let Some(cut) = pause(next.min(left)) {
            return Ok(End::Stopped(cut));
        }
    }
}

/// A duration to the millisecond, as a log line shows it.
fn millis(d: Duration) -> Duration {
    Duration::from_millis(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the tests' waits end with.
    #[derive(Debug, PartialEq, Eq)]
    enum Ended {
        Stopped,
        TimedOut(u32),
        Broken,
    }

    impl From<Stopped> for Ended {
        fn from(_: Stopped) -> Self {
            Self::Stopped
        }
    }

    const HOUR: Duration = Duration::from_secs(3600);

    /// A wait for the node, with the same pause every time.
    fn node<'a>(
        timeout: Duration,
        pause: Duration,
        stop: &'a Stop,
        say: &'a mut dyn FnMut(&str),
    ) -> Wait<'a> {
        Wait {
            what: "the node",
            timeout,
            pauses: Pauses::every(pause),
            stop,
            say,
        }
    }

    /// A look that is done at the third time, with its count.
    fn third<E>(n: &mut u32) -> Result<Look<u32, u32>, E> {
        *n += 1;
        Ok(if *n == 3 {
            Look::Done(*n)
        } else {
            Look::Pending(*n)
        })
    }

    /// A quiet wait fails at the first failure, and at its deadline hands what it still waited
    /// for to `timed_out`, after a last look. One done at a look is every caller's (the release
    /// tests' `comes_to`), and `run`'s, which `poll_until` shares, is proven below.
    #[test]
    fn a_quiet_poll_ends_failed_or_timed_out() {
        use std::time::Instant;
        let failed: Result<(), String> = poll_quietly(
            Instant::now() + Duration::from_secs(60),
            Pauses::every(Duration::from_millis(1)),
            || Err::<Look<(), ()>, _>("broken".to_owned()),
            |()| Ok(()),
        );
        assert_eq!(failed.unwrap_err(), "broken");
        let mut looks = 0;
        let timed_out: Result<u32, String> = poll_quietly(
            Instant::now(),
            Pauses::every(HOUR),
            || {
                looks += 1;
                Ok(Look::Pending("the node"))
            },
            |p| Err(format!("still waiting for {p}")),
        );
        assert_eq!(timed_out.unwrap_err(), "still waiting for the node");
        assert_eq!(
            looks, 1,
            "a deadline already passed gets one look and no pause"
        );
    }

    /// A service's wait: done at the first look that is, saying what it waited for (within its
    /// limit, or with none) and how long. A look that says when to look next (`Look::Again`) is
    /// taken at its word, not at the `Pauses`: an hour's pause would run into the minute's
    /// timeout.
    #[test]
    fn a_wait_that_succeeds_says_what_it_waited_for_and_how_long() {
        let stop = Stop::new();
        let quick = Duration::from_millis(1);
        for (timeout, pause, again, first) in [
            (
                Duration::from_secs(60),
                quick,
                false,
                "waiting up to 60s for the node",
            ),
            (
                NO_LIMIT,
                quick,
                false,
                "waiting for the node (no time limit)",
            ),
            (
                Duration::from_secs(60),
                HOUR,
                true,
                "waiting up to 60s for the node",
            ),
        ] {
            let mut said = Vec::new();
            let mut n = 0;
            let done: Result<u32, Ended> = poll_until(
                node(timeout, pause, &stop, &mut |l| said.push(l.to_owned())),
                || match third(&mut n) {
                    Ok(Look::Pending(p)) if again => Ok(Look::Again(p, quick)),
                    other => other,
                },
                |p| Err(Ended::TimedOut(p)),
            );
            assert_eq!(done, Ok(3), "{first}");
            assert_eq!(said.len(), 2, "{said:?}");
            assert_eq!(said[0], first);
            assert!(said[1].starts_with("waited ") && said[1].ends_with(" for the node"));
        }
        let broken: Result<(), Ended> = poll_until(
            node(HOUR, HOUR, &stop, &mut |_| {}),
            || Err::<Look<(), u32>, _>(Ended::Broken),
            |_| Ok(()),
        );
        assert_eq!(broken, Err(Ended::Broken));
    }

    /// At its timeout a wait hands what it still waited for to `timed_out`, after a last look,
    /// and says that it gave up.
    #[test]
    fn a_wait_times_out_with_what_it_still_waited_for() {
        let stop = Stop::new();
        let mut said = Vec::new();
        let mut looks = 0;
        let out: Result<(), Ended> = poll_until(
            node(Duration::from_millis(30), HOUR, &stop, &mut |l| {
                said.push(l.to_owned())
            }),
            || {
                looks += 1;
                Ok(Look::Pending(looks))
            },
            |p| Err(Ended::TimedOut(p)),
        );
        assert_eq!(
            out,
            Err(Ended::TimedOut(2)),
            "a pause cut to the deadline, then a last look"
        );
        assert_eq!(
            said,
            [
                "waiting up to 30ms for the node",
                "gave up waiting for the node after 30ms"
            ]
        );
    }

    /// A stop requested before the wait (during the caller's previous step) ends it at once,
    /// with no look; one requested between looks ends it before the next look, the pause (an
    /// hour, cut to the 200ms left) not slept, and one by the last look at the deadline too:
    /// each with `Stopped`, not a timeout, and said.
    #[test]
    fn a_stop_before_the_wait_or_between_looks_ends_it_with_stopped() {
        for (before, timeout, pause, want_looks) in [
            (true, HOUR, Duration::from_millis(1), 0),
            (false, Duration::from_millis(200), HOUR, 2),
        ] {
            let stop = Stop::new();
            if before {
                stop.request();
            }
            let mut said = Vec::new();
            let mut looks = 0;
            let out: Result<(), Ended> = poll_until(
                node(timeout, pause, &stop, &mut |l| said.push(l.to_owned())),
                || {
                    looks += 1;
                    if before {
                        return Ok(Look::Done(()));
                    }
                    if looks == 2 {
                        stop.request();
                    }
                    Ok(Look::Pending(looks))
                },
                |p| Err(Ended::TimedOut(p)),
            );
            assert_eq!(out, Err(Ended::Stopped), "before: {before}");
            assert_eq!(looks, want_looks, "no look after the stop");
            assert!(
                said.last()
                    .is_some_and(|l| l.starts_with("stopped waiting for the node after ")),
                "{said:?}"
            );
        }
    }

    /// The pauses double from the first up to the most (a retry's backoff says them so).
    #[test]
    fn pauses_double_up_to_the_most() {
        let p = Pauses {
            first: Duration::from_millis(10),
            most: Duration::from_millis(50),
        };
        let got: Vec<u128> = [1, 2, 3, 4, 40, u32::MAX]
            .map(|n| p.after(n).as_millis())
            .into();
        assert_eq!(got, [10, 20, 40, 50, 50, 50]);
    }

    /// A stop requested by another thread while the wait pauses ends the pause at once: the
    /// wait ends with `Stopped` long before its minute.
    #[test]
    fn a_stop_during_a_pause_ends_the_wait_with_stopped() {
        let stop = Stop::new();
        let (tx, rx) = std::sync::mpsc::channel();
        let other = stop.clone();
        let requester = std::thread::spawn(move || {
            if rx.recv().is_ok() {
                other.request();
            }
        });
        let mut looks = 0;
        let out: Result<(), Ended> = poll_until(
            node(Duration::from_secs(60), HOUR, &stop, &mut |_| {
                let _ = tx.send(());
            }),
            || {
                looks += 1;
                Ok(Look::Pending(looks))
            },
            |p| Err(Ended::TimedOut(p)),
        );
        requester.join().expect("join");
        assert_eq!(out, Err(Ended::Stopped));
        assert_eq!(looks, 1);
    }
}
