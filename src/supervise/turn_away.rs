//! A connection CalicoNode's metrics endpoint turns away past its caps (`metrics_server`): it
//! is answered `503` with `Retry-After` and the mark `diags_server` gives its own busy answer
//! (`calicoctl-win-diags: busy`), so that `fleet diags`, through the API server's pod proxy,
//! names the node `node-busy` rather than unreachable (a connection closed unanswered is the
//! proxy's `503 error trying to reach service: EOF`: k8s.io/apimachinery
//! `pkg/util/proxy/transport.go`). All on the accepting thread and never blocking it: the answer
//! is one write on a non-blocking socket (a fresh socket's send buffer takes it whole), and the
//! lingering close (RFC 9112 9.6) is a look at each turned-away socket on each turn of the
//! accept loop, at most `HELD` of them and each at most `LINGER`. Said in CalicoNode's log at
//! most once a `SAY_EVERY` with how many and why, and counted in the node's metrics
//! (`installed::metrics::REFUSED_CONNECTIONS`, by reason) when it is said.

use super::answer_close::LINGER;
use super::diags_server::RETRY_AFTER;
use super::log::Log;
use crate::cluster::diags_gather::ANSWER_HEADER;
use std::io::{Read, Write};
use std::net::{IpAddr, TcpStream};
use std::time::{Duration, Instant};

/// The most turned-away sockets kept for their lingering close; one more is closed at once.
const HELD: usize = 32;
/// The most read from a turned-away socket before it is closed.
const DRAIN: usize = 16 * 1024;
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

/// The connections turned away: those lingering, and those not yet said and counted.
pub struct TurnAway<'a> {
    held: Vec<(TcpStream, Instant, usize)>,
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
            held: Vec::new(),
            unsaid: [0; 2],
            last: None,
            said: None,
            log,
            count,
        }
    }

    /// Answers `conn` from `source` busy and keeps it for its lingering close.
    pub fn away(&mut self, conn: TcpStream, source: IpAddr, why: Full) {
        if conn.set_nonblocking(true).is_ok() {
            // As `diags_server`'s busy answer, without a body. One write that cannot block; a
            // short one (never seen) is a cut answer, no hang.
            let busy = format!(
                "HTTP/1.1 503 Service Unavailable\r\nRetry-After: {RETRY_AFTER}\r\n{ANSWER_HEADER}: busy\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            let _ = (&conn).write(busy.as_bytes());
            let _ = conn.shutdown(std::net::Shutdown::Write);
            if self.held.len() < HELD {
                self.held.push((conn, Instant::now(), 0));
            }
        }
        self.unsaid[usize::from(why == Full::Source)] += 1;
        self.last = Some(source);
        if self.said.is_none_or(|t| t.elapsed() >= SAY_EVERY) {
            self.say();
        }
    }

    /// Reads and drops what each lingering socket's client still sends, closing those that
    /// closed, sent `DRAIN` or lingered `LINGER`; says and counts what is due.
    pub fn tend(&mut self) {
        let mut buf = [0u8; 1024];
        self.held.retain_mut(|(conn, since, drained)| {
            if since.elapsed() >= LINGER {
                return false;
            }
            while *drained < DRAIN {
                match conn.read(&mut buf) {
                    Ok(0) => return false,
                    Ok(n) => *drained += n,
                    Err(e) => return e.kind() == std::io::ErrorKind::WouldBlock,
                }
            }
            false
        });
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
