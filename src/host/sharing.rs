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

    /// A reader that lets go after three tries: done after 10 + 20 + 40 ms. One that never
    /// does: about two seconds of tries, then its error as it was. Any other error (a missing
    /// file, a full disk): no second try.
    #[test]
    fn a_held_handle_is_tried_again_for_about_two_seconds_and_no_other_error_is() {
        let sharing = || Error::from_raw_os_error(ERROR_SHARING_VIOLATION);
        let denied = || Error::from_raw_os_error(ERROR_ACCESS_DENIED);
        let missing = || Error::from(ErrorKind::NotFound);
        type Make = fn() -> Error;
        // The error, how many tries give it (then success), the tries and pauses made.
        let cases: [(Make, usize, usize, &[Duration]); 3] = [
            (sharing, 3, 4, &PAUSES[..3]),
            (denied, usize::MAX, PAUSES.len() + 1, &PAUSES),
            (missing, usize::MAX, 1, &[]),
        ];
        for (error, failing, want_tries, want_slept) in cases {
            let (mut tries, mut slept) = (0, Vec::new());
            let out = retried(
                || {
                    tries += 1;
                    if tries <= failing {
                        Err(error())
                    } else {
                        Ok(())
                    }
                },
                |e| is_transient(e.raw_os_error()),
                &mut |d| slept.push(d),
            );
            let want = if failing == usize::MAX {
                Err(error().to_string())
            } else {
                Ok(())
            };
            assert_eq!(out.map_err(|e| e.to_string()), want);
            assert_eq!((tries, &slept[..]), (want_tries, want_slept));
        }
        let total: Duration = PAUSES.iter().sum();
        assert!(total >= Duration::from_secs(2) && total < Duration::from_secs(3));
        assert!(!is_transient(Some(2)) && !is_transient(None));
    }
}
