//! What the answers of CalicoNode's metrics endpoint share (`metrics_server`, and
//! `diags_server`'s `GET /diags`): reads bounded by a deadline, and the lingering close.

use std::io::Read;
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// How long an answer without a bundle (the metrics' text, a refusal) may take to send.
pub const ANSWER_TIME: Duration = Duration::from_secs(5);
/// The longest a lingering close waits for the client to close after its answer.
pub const LINGER: Duration = Duration::from_secs(2);

/// A lingering close (RFC 9112 9.6): what the client still sends is read (up to 64 KiB, by
/// `deadline` and at most `LINGER`) and dropped, so that closing with unread data does not
/// reset the answer away.
pub fn linger(conn: &TcpStream, deadline: Instant) -> std::io::Result<()> {
    conn.shutdown(std::net::Shutdown::Write)?;
    let deadline = deadline.min(Instant::now() + LINGER);
    let (mut r, mut buf, mut drained) = (conn, [0u8; 1024], 0);
    while drained < 64 * 1024 {
        match read_by(&mut r, &mut buf, deadline)? {
            0 => break,
            n => drained += n,
        }
    }
    Ok(())
}

/// The time left before `deadline`; none left is a timeout.
pub fn left(deadline: Instant) -> std::io::Result<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(std::io::ErrorKind::TimedOut.into());
    }
    Ok(left)
}

/// One read, given only the time left before `deadline`.
pub fn read_by(conn: &mut &TcpStream, buf: &mut [u8], deadline: Instant) -> std::io::Result<usize> {
    conn.set_read_timeout(Some(left(deadline)?))?;
    conn.read(buf)
}
