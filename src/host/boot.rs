//! When the machine booted, as a value that a clock step does not move.
//!
//! `NtQuerySystemInformation(SystemTimeOfDayInformation)` gives `BootTime`, which the kernel
//! moves with every change of the system time, and `BootTimeBias`, the sum of those moves:
//! `KeSetSystemTime` adds the same delta to both ("Update the boot time to reflect the delta.
//! This keeps time based on boot time constant ... Track the overall bias applied to the boot
//! time", ReactOS `ntoskrnl/ke/clock.c`, after NT's). So `BootTime - BootTimeBias` is the same
//! for the whole boot, whatever w32time, an admin or a resumed VM does to the clock; `BootTime`
//! alone changes at every step, and CalicoNode would take the next start for a reboot (and make
//! the HNS networks again, dropping every pod's network).

/// FILETIME ticks (100 ns since 1601) to Unix seconds.
fn unix(ticks: i64) -> i64 {
    ticks / 10_000_000 - 11_644_473_600
}

/// The boot instant in Unix seconds (the same in every culture and time zone), and the same
/// instant on the local wall clock, from the three fields of SYSTEM_TIMEOFDAY_INFORMATION;
/// `None` when the kernel gave no boot time.
pub fn boot_instant(
    boot_time: i64,
    boot_time_bias: u64,
    time_zone_bias: i64,
) -> Option<(i64, i64)> {
    let bias = i64::try_from(boot_time_bias).ok()?;
    let boot = boot_time.checked_sub(bias).filter(|b| *b > 0)?;
    Some((unix(boot), unix(boot.checked_sub(time_zone_bias)?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-24T00:00:00Z in FILETIME ticks.
    const BOOT: i64 = (1_763_942_400 + 11_644_473_600) * 10_000_000;
    const HOUR: i64 = 3600 * 10_000_000;

    #[test]
    fn a_clock_step_does_not_move_the_boot_instant() {
        let before = boot_instant(BOOT, 0, 0);
        assert_eq!(before, Some((1_763_942_400, 1_763_942_400)));
        // The clock set an hour ahead, then 90 s back: KeSetSystemTime moves BootTime and
        // BootTimeBias by the same delta each time.
        for delta in [HOUR, HOUR - 900_000_000] {
            let after = boot_instant(BOOT + delta, delta as u64, 0);
            assert_eq!(after, before, "a step of {delta} ticks moved the boot");
            // Reading BootTime alone, as before, would have: the bug this fixes.
            assert_ne!(Some(unix(BOOT + delta)), before.map(|b| b.0));
        }
        // A time zone moves only the local reading.
        assert_eq!(
            boot_instant(BOOT, 0, -HOUR),
            Some((1_763_942_400, 1_763_946_000))
        );
        assert_eq!(boot_instant(0, 0, 0), None);
        assert_eq!(boot_instant(BOOT, u64::MAX, 0), None);
    }
}
