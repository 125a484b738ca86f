//! A rename or delete that another process's open handle blocks for a moment, tried again
//! for about two seconds: Go opens files without `FILE_SHARE_DELETE` (golang/go
//! `src/syscall/syscall_windows.go`, `Open`), giving ERROR_SHARING_VIOLATION (32) or, pending
//! delete, ERROR_ACCESS_DENIED (5).

use std::time::Duration;

/// `ERROR_SHARING_VIOLATION`: another handle was opened without the sharing this needs.
pub const ERROR_SHARING_VIOLATION: i32 = 32;
/// `ERROR_ACCESS_DENIED`: also what a file pending delete answers.
pub const ERROR_ACCESS_DENIED: i32 = 5;

/// The pauses between tries: doubling from 10 ms, at most 800 ms each, 2.07 s in all.
pub const PAUSES: [Duration; 8] = [
    Duration::from_millis(10),
    Duration::from_millis(20),
    Duration::from_millis(40),
    Duration::from_millis(80),
    Duration::from_millis(160),
    Duration::from_millis(320),
    Duration::from_millis(640),
    Duration::from_millis(800),
];

/// Whether a Windows error is one a reader's handle gives for a moment (32 or 5).
pub fn is_transient(code: Option<i32>) -> bool {
    matches!(code, Some(ERROR_SHARING_VIOLATION | ERROR_ACCESS_DENIED))
}

/// Runs `op` until it succeeds, fails with an error `transient` does not accept, or the pauses
/// are spent; the last error is returned as it was.
pub fn retried<T>(
    mut op: impl FnMut() -> std::io::Result<T>,
    transient: impl Fn(&std::io::Error) -> bool,
    pause: &mut dyn FnMut(Duration),
) -> std::io::Result<T> {
    let mut pauses = PAUSES.iter();
    loop {
        match op() {
            Err(e) if transient(&e) => match pauses.next() {
                Some(d) => pause(*d),
                None => return Err(e),
            },
            other => return other,
        }
    }
}

/// `retried` with Windows' transient errors and real sleeps; on any other platform, one try.
pub fn on_windows<T>(op: impl FnMut() -> std::io::Result<T>) -> std::io::Result<T> {
    retried(
        op,
        |e| cfg!(windows) && is_transient(e.raw_os_error()),
        &mut std::thread::sleep,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Error, ErrorKind};

    fn sharing() -> Error {
        Error::from_raw_os_error(ERROR_SHARING_VIOLATION)
    }

    fn transient(e: &Error) -> bool {
        is_transient(e.raw_os_error())
    }

    /// A reader that lets go after three tries: the rename succeeds, after 10 + 20 + 40 ms.
    #[test]
    fn a_sharing_violation_is_tried_again_until_the_reader_lets_go() {
        let mut tries = 0;
        let mut slept = Vec::new();
        let out = retried(
            || {
                tries += 1;
                if tries <= 3 {
                    Err(sharing())
                } else {
                    Ok(tries)
                }
            },
            transient,
            &mut |d| slept.push(d),
        );
        assert_eq!(out.expect("renamed"), 4);
        assert_eq!(slept, PAUSES[..3]);
    }

    /// A reader that never lets go: about two seconds of tries, then its error, as it was.
    #[test]
    fn a_handle_held_for_good_fails_after_about_two_seconds() {
        let mut tries = 0;
        let mut slept = Duration::ZERO;
        let err = retried(
            || -> std::io::Result<()> {
                tries += 1;
                Err(Error::from_raw_os_error(ERROR_ACCESS_DENIED))
            },
            transient,
            &mut |d| slept += d,
        )
        .expect_err("still held");
        assert_eq!(err.raw_os_error(), Some(ERROR_ACCESS_DENIED));
        assert_eq!(tries, PAUSES.len() + 1);
        assert!(
            slept >= Duration::from_secs(2) && slept < Duration::from_secs(3),
            "{slept:?}"
        );
    }

    /// Any other error (a missing file, a full disk) is not tried again.
    #[test]
    fn other_errors_fail_at_once() {
        let mut tries = 0;
        let err = retried(
            || -> std::io::Result<()> {
                tries += 1;
                Err(Error::from(ErrorKind::NotFound))
            },
            transient,
            &mut |_| panic!("no pause"),
        )
        .expect_err("missing");
        assert_eq!(err.kind(), ErrorKind::NotFound);
        assert_eq!(tries, 1);
        assert!(!is_transient(Some(2)) && !is_transient(None));
    }
}
