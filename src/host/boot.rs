//! When the machine booted, as a value that a clock step does not move: `BootTime -
//! BootTimeBias` from `NtQuerySystemInformation(SystemTimeOfDayInformation)`, as
//! `KeSetSystemTime` moves both alike (ReactOS `ntoskrnl/ke/clock.c`). `BootTime` alone moves
//! at every step, and CalicoNode would take the next start for a reboot.

/// FILETIME ticks (100 ns since 1601) to Unix seconds.
pub fn unix(ticks: i64) -> i64 {
    ticks / 10_000_000 - 11_644_473_600
}

/// The boot instant in Unix seconds, and on the local wall clock, from
/// SYSTEM_TIMEOFDAY_INFORMATION; `None` without a boot time. `BootTimeBias` wraps negative
/// after a backward step (ReactOS `KeSetSystemTime`), so it is subtracted wrapping.
pub fn boot_instant(
    boot_time: i64,
    boot_time_bias: u64,
    time_zone_bias: i64,
) -> Option<(i64, i64)> {
    // Two's complement: the same bits read as the signed delta the kernel accumulated.
    let bias = boot_time_bias as i64;
    let boot = boot_time.wrapping_sub(bias);
    if boot <= 0 {
        return None;
    }
    Some((unix(boot), unix(boot.checked_sub(time_zone_bias)?)))
}

/// The boot time on the local wall clock as Windows reports it now (`BootTime` less the time
/// zone's bias): WMI's `LastBootUpTime`, which Calico's `calico.psm1` `Get-LastBootTime` reads.
pub fn reported_local(boot_time: i64, time_zone_bias: i64) -> Option<i64> {
    if boot_time <= 0 {
        return None;
    }
    boot_time.checked_sub(time_zone_bias).map(unix)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-24T00:00:00Z in FILETIME ticks.
    const BOOT: i64 = (1_763_942_400 + 11_644_473_600) * 10_000_000;
    const HOUR: i64 = 3600 * 10_000_000;

    /// A clock step moves `BootTime` and `BootTimeBias` alike; a net backward step wraps the
    /// bias above `i64::MAX`. The boot instant stays.
    #[test]
    fn a_clock_step_does_not_move_the_boot_instant() {
        let before = boot_instant(BOOT, 0, 0);
        assert_eq!(before, Some((1_763_942_400, 1_763_942_400)));
        for delta in [HOUR, HOUR - 900_000_000, -1, -HOUR, -90 * 10_000_000] {
            let after = boot_instant(BOOT + delta, delta as u64, 0);
            assert_eq!(after, before, "a step of {delta} ticks moved the boot");
            // Reading BootTime alone, as before, would have: the bug this fixes.
            assert_ne!(Some(unix(BOOT + delta)), before.map(|b| b.0));
        }
        // Forward then back past zero: the wrapped sum is the net delta.
        let bias = (HOUR as u64).wrapping_add((-2 * HOUR) as u64);
        assert_eq!(boot_instant(BOOT - HOUR, bias, 0), before);
        // A time zone moves only the local reading.
        assert_eq!(
            boot_instant(BOOT, 0, -HOUR),
            Some((1_763_942_400, 1_763_946_000))
        );
        // What Windows reports (and Calico's scripts compare) moves with every step.
        assert_eq!(reported_local(BOOT, 0), Some(1_763_942_400));
        assert_eq!(
            reported_local(BOOT + HOUR, -HOUR),
            Some(1_763_942_400 + 7200)
        );
        assert_eq!(reported_local(0, 0), None);
        assert_eq!(boot_instant(0, 0, 0), None);
        // A boot time before 1601 is no boot time.
        assert_eq!(boot_instant(HOUR, (2 * HOUR) as u64, 0), None);
    }
}
