//! The connections the metrics endpoint turns away past its caps: said in CalicoNode's log at
//! most once a `SAY_EVERY`, and counted (`installed::metrics::REFUSED_CONNECTIONS`).

use super::log::Log;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// How often the turned-away connections are said and counted.
const SAY_EVERY: Duration = Duration::from_secs(60);

/// Adds to the counter of a reason (`Full::word`).
pub type Count<'a> = &'a (dyn Fn(&str, u64) + Sync);

/// Why a connection was turned away: the metric's label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Full {
    /// `metrics_server::CONNECTIONS` were open.
    All,
    /// `metrics_server::PER_SOURCE` were open from its address.
    Source,
}

impl Full {
    pub fn word(self) -> &'static str {
        crate::installed::metrics::REFUSED_REASONS[usize::from(self == Full::Source)]
    }
}

/// The connections turned away and not yet said and counted.
pub struct TurnAway<'a> {
    /// By `Full`: all and per source, since the last said; the last source; when last said.
    unsaid: [u64; 2],
    last: Option<IpAddr>,
    said: Option<Instant>,
    log: &'a Log,
    count: Count<'a>,
}

impl<'a> TurnAway<'a> {
    pub fn new(log: &'a Log, count: Count<'a>) -> Self {
        Self {
            unsaid: [0; 2],
            last: None,
            said: None,
            log,
            count,
        }
    }

    /// Notes a connection from `source` turned away.
    pub fn away(&mut self, source: IpAddr, why: Full) {
        self.unsaid[usize::from(why == Full::Source)] += 1;
        self.last = Some(source);
        if self.said.is_none_or(|t| t.elapsed() >= SAY_EVERY) {
            self.say();
        }
    }

    /// Says and counts what is due.
    pub fn tend(&mut self) {
        if self.said.is_some_and(|t| t.elapsed() >= SAY_EVERY) {
            self.say();
        }
    }

    /// Says and counts the connections turned away since the last time (if any).
    pub fn say(&mut self) {
        let [all, source] = std::mem::take(&mut self.unsaid);
        if all + source == 0 {
            return;
        }
        self.said = Some(Instant::now());
        let last = self.last.map(|a| a.to_string()).unwrap_or_default();
        self.log.warn(&format!(
            "metrics endpoint: answered {} connection(s) 503 busy and closed them: {all} past the cap on all connections, {source} past the cap on one address's (the last from {last}; callers behind one address, as pods masqueraded to their node's, share its cap)",
            all + source
        ));
        for (n, why) in [(all, Full::All), (source, Full::Source)] {
            if n > 0 {
                (self.count)(why.word(), n);
            }
        }
    }
}
