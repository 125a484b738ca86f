//! CalicoNode's init-done marker (`BootId` under Calico's key): the boot it last finished
//! initialising in, which CalicoFelix and CalicoConfd wait for and install's wait reads. Kept
//! here, with what install leaves and the services report, so that the executor (`apply`)
//! reads it without importing the service bodies (`supervise`).

use crate::host::{Host, HostResult, RegValue};
use crate::layout::BOOT_ID_VALUE;

/// Whether CalicoNode has finished initialising in the current boot; never while the boot is
/// unknown (an empty identity once matched an empty marker and hid a real reboot).
pub fn init_done(host: &dyn Host) -> HostResult<bool> {
    let Some(boot) = host.system_facts()?.boot_id else {
        return Ok(false);
    };
    Ok(stored_boot(host)?.as_deref() == Some(boot.as_str()))
}

/// The boot CalicoNode last initialised in; an empty value (written by an older version when
/// the boot was unknown) is none.
pub fn stored_boot(host: &dyn Host) -> HostResult<Option<String>> {
    super::calico_text(host, BOOT_ID_VALUE)
}

/// The boot time as Calico's scripts store and compare it (`LastBootTime`, calico.psm1
/// `Get-LastBootTime`: `LastBootUpTime.ToString("G")`, run as SYSTEM by the operator's
/// HostProcess containers): in SYSTEM's culture, else en-US where that cannot be known (the
/// handover to the operator refuses that case: `migrate`). calicoctl-win compares `BootId`.
pub fn legacy_value(host: &dyn Host, local_seconds: i64) -> HostResult<String> {
    let system = system_culture(host)?
        .ok()
        .and_then(|c| c.general(local_seconds).ok());
    Ok(system
        .or_else(|| Culture::known("en-US").and_then(|c| c.general(local_seconds).ok()))
        .unwrap_or_default())
}

/// `LastBootTime` as Calico's scripts (or CalicoNode) last wrote it.
pub fn stored_legacy(host: &dyn Host) -> HostResult<Option<String>> {
    super::calico_text(host, crate::layout::LEGACY_BOOT_VALUE)
}

/// SYSTEM's regional settings. SYSTEM's profile is `HKEY_USERS\.DEFAULT` ("the .Default user is
/// the LocalSystem account's profile": devblogs.microsoft.com/oldnewthing/20070302-00), and
/// `Control Panel\International` holds the locale and the user's overrides of its patterns,
/// which .NET's current culture takes (`CultureInfo.UseUserOverride`).
pub use crate::layout::SYSTEM_INTERNATIONAL;

/// The patterns .NET's `DateTime.ToString("G")` joins for a culture: "a combination of the
/// short date ("d") and long time ("T") patterns, separated by a space"
/// (learn.microsoft.com/dotnet/standard/base-types/standard-date-and-time-format-strings).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Culture {
    /// `LocaleName` (`en-US`), when the registry names it.
    pub name: Option<String>,
    /// `sShortDate`: Windows' short date pattern (`M/d/yyyy`).
    pub short_date: String,
    /// `sTimeFormat`: Windows' long time pattern (`h:mm:ss tt`).
    pub long_time: String,
    /// `s1159` and `s2359`: what `tt` prints before and after noon.
    pub am: String,
    pub pm: String,
}

/// Windows' own patterns of the cultures a node is likely set to, as NLS gives them
/// (`GetLocaleInfoEx` `LOCALE_SSHORTDATE`, `LOCALE_STIMEFORMAT`, `LOCALE_S1159`, `LOCALE_S2359`),
/// for a profile that names its locale without writing the patterns out. The 24-hour ones
/// print no designator, so none is claimed for them.
const KNOWN: &[(&str, &str, &str, &str, &str)] = &[
    ("en-US", "M/d/yyyy", "h:mm:ss tt", "AM", "PM"),
    ("en-GB", "dd/MM/yyyy", "HH:mm:ss", "", ""),
    ("de-DE", "dd.MM.yyyy", "HH:mm:ss", "", ""),
    ("fr-FR", "dd/MM/yyyy", "HH:mm:ss", "", ""),
    ("ja-JP", "yyyy/MM/dd", "H:mm:ss", "", ""),
];

impl Culture {
    /// One of `KNOWN` by its name.
    pub fn known(name: &str) -> Option<Self> {
        KNOWN
            .iter()
            .find(|k| k.0.eq_ignore_ascii_case(name))
            .map(|&(n, d, t, am, pm)| Self {
                name: Some(n.to_owned()),
                short_date: d.to_owned(),
                long_time: t.to_owned(),
                am: am.to_owned(),
                pm: pm.to_owned(),
            })
    }

    /// `DateTime.ToString("G")` of a local wall-clock time in this culture; `Err` names the
    /// part of a pattern this formatter cannot follow (names of days and months, eras), so a
    /// marker is never written in a form the operator's script would read as another boot.
    pub fn general(&self, local_seconds: i64) -> Result<String, String> {
        let t = jiff::Timestamp::from_second(local_seconds)
            .map_err(|e| format!("boot time {local_seconds}: {e}"))?
            .to_zoned(jiff::tz::TimeZone::UTC)
            .datetime();
        let date = format_pattern(&self.short_date, t, self)?;
        let time = format_pattern(&self.long_time, t, self)?;
        Ok(format!("{date} {time}"))
    }
}

/// The culture SYSTEM's PowerShell formats dates in: the patterns of `SYSTEM_INTERNATIONAL`,
/// else those of its `LocaleName` when `KNOWN`; `Err` says why it cannot be known.
pub fn system_culture(host: &dyn Host) -> HostResult<Result<Culture, String>> {
    let text = |name: &str| -> HostResult<Option<String>> {
        Ok(match host.reg_get(SYSTEM_INTERNATIONAL, name)? {
            Some(RegValue::Sz(s)) if !s.is_empty() && s.len() <= 80 => Some(s),
            _ => None,
        })
    };
    let name = text("LocaleName")?;
    let known = name.as_deref().and_then(Culture::known);
    let (date, time) = (text("sShortDate")?, text("sTimeFormat")?);
    let (Some(short_date), Some(long_time)) = (
        date.or_else(|| known.as_ref().map(|k| k.short_date.clone())),
        time.or_else(|| known.as_ref().map(|k| k.long_time.clone())),
    ) else {
        return Ok(Err(match name {
            Some(n) => format!(
                "{SYSTEM_INTERNATIONAL} names locale {n} without sShortDate and sTimeFormat, and calicoctl-win does not know that locale's patterns"
            ),
            None => format!("{SYSTEM_INTERNATIONAL} holds neither LocaleName nor sShortDate"),
        }));
    };
    let designator = |value: Option<String>, fallback: fn(&Culture) -> &str| {
        value
            .or_else(|| known.as_ref().map(|k| fallback(k).to_owned()))
            .unwrap_or_default()
    };
    let am = designator(text("s1159")?, |k| &k.am);
    let pm = designator(text("s2359")?, |k| &k.pm);
    Ok(Ok(Culture {
        name,
        short_date,
        long_time,
        am,
        pm,
    }))
}

/// A Windows date or time pattern applied to `t` as .NET's custom format specifiers read it
/// (learn.microsoft.com/dotnet/standard/base-types/custom-date-and-time-format-strings): `d`,
/// `dd`, `M`, `MM`, `y`, `yy`, `yyyy`, `h`, `hh`, `H`, `HH`, `m`, `mm`, `s`, `ss`, `t`, `tt`,
/// text in single quotes; any other character is itself (the separators `/` and `:` print as
/// the culture's separators, which .NET takes from these same patterns).
fn format_pattern(pattern: &str, t: jiff::civil::DateTime, c: &Culture) -> Result<String, String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let ch = chars[i];
        let run = chars[i..].iter().take_while(|&&c2| c2 == ch).count();
        let hour12 = match t.hour() % 12 {
            0 => 12,
            h => h,
        };
        let pad = |v: i64, n: usize| format!("{v:0n$}");
        let value = match (ch, run) {
            ('\'', _) => {
                let end = chars[i + 1..]
                    .iter()
                    .position(|&c2| c2 == '\'')
                    .ok_or_else(|| format!("pattern {pattern:?} has an unclosed quote"))?;
                out.extend(&chars[i + 1..i + 1 + end]);
                i += end + 2;
                continue;
            }
            ('d', 1 | 2) => pad(t.day().into(), run),
            ('M', 1 | 2) => pad(t.month().into(), run),
            ('y', 2) => pad(i64::from(t.year()) % 100, 2),
            ('y', 1) => (i64::from(t.year()) % 100).to_string(),
            ('y', 3..=5) => pad(t.year().into(), run),
            ('h', 1 | 2) => pad(hour12.into(), run),
            ('H', 1 | 2) => pad(t.hour().into(), run),
            ('m', 1 | 2) => pad(t.minute().into(), run),
            ('s', 1 | 2) => pad(t.second().into(), run),
            ('t', 1 | 2) => {
                let d = if t.hour() < 12 { &c.am } else { &c.pm };
                d.chars()
                    .take(if run == 1 { 1 } else { usize::MAX })
                    .collect()
            }
            (c2, _) if c2.is_ascii_alphabetic() || c2 == '\\' || c2 == '"' || c2 == '%' => {
                return Err(format!(
                    "pattern {pattern:?} has {:?}, which calicoctl-win does not format",
                    chars[i..i + run].iter().collect::<String>()
                ));
            }
            _ => chars[i..i + run].iter().collect(),
        };
        out.push_str(&value);
        i += run;
    }
    Ok(out)
}

#[cfg(test)]
#[path = "boot_marker_tests.rs"]
mod tests;
