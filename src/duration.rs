//! Durations on the command line: `90s`, `15m`, `12h`, `30d`, `1y` (365 days), or sums like
//! `1h30m`.

use std::time::Duration;

mod stop;
mod wait;

pub use stop::Stop;
pub use wait::{
    Look, NO_LIMIT, Pauses, SAY_EVERY, STILL_WAITING, Stopped, Wait, poll_quietly, poll_until,
};

/// The longest duration accepted: 100 years. Any longer one is a typo, and a bound keeps
/// every `Instant + Duration` and every timestamp computed from a flag from overflowing.
pub const MAX: Duration = Duration::from_secs(100 * 365 * 86_400);

/// Now, in seconds since the Unix epoch.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// A Unix time as RFC 3339 (`2026-11-22T10:00:00Z`).
pub fn time_text(unix: i64) -> String {
    jiff::Timestamp::from_second(unix).map_or_else(|_| unix.to_string(), |t| t.to_string())
}

/// Parses a duration; the error says what is accepted.
pub fn parse(text: &str) -> Result<Duration, String> {
    let bad = || {
        format!(
            "{text:?} is not a duration: use a number with a unit s, m, h, d or y, like 90s, 12h, 30d or 1h30m"
        )
    };
    let mut total: u64 = 0;
    let mut number = String::new();
    for c in text.trim().chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let n: u64 = number.parse().map_err(|_| bad())?;
        number.clear();
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            'y' => 365 * 86_400,
            _ => return Err(bad()),
        };
        total = total
            .checked_add(n.checked_mul(unit).ok_or_else(bad)?)
            .ok_or_else(bad)?;
    }
    if !number.is_empty() {
        return Err(bad());
    }
    if total == 0 {
        return Err(format!(
            "{text:?} is no time at all: give a duration longer than zero, like 90s, 2h or 30d"
        ));
    }
    let d = Duration::from_secs(total);
    if d > MAX {
        return Err(format!(
            "{text:?} is longer than the longest duration accepted, 100y"
        ));
    }
    Ok(d)
}

/// A duration of hours or less as an admin gives a token's lifetime: hours, minutes and
/// seconds, never days (`25h`, not `1d1h`).
pub fn show_hours(d: Duration) -> String {
    let s = d.as_secs();
    let mut out = String::new();
    for (unit, size, of) in [("h", 3600, u64::MAX), ("m", 60, 60), ("s", 1, 60)] {
        let n = (s / size) % of;
        if n > 0 {
            out.push_str(&format!("{n}{unit}"));
        }
    }
    if out.is_empty() { "0s".into() } else { out }
}

/// A duration as people write it: the largest units first, like `8760h` → `365d`.
pub fn show(d: Duration) -> String {
    let mut s = d.as_secs();
    let mut out = String::new();
    for (unit, size) in [("d", 86_400), ("h", 3600), ("m", 60), ("s", 1)] {
        if s >= size {
            out.push_str(&format!("{}{unit}", s / size));
            s %= size;
        }
    }
    if out.is_empty() { "0s".into() } else { out }
}

/// Durations in JSON as text (`"5s"`, `"1d"`), never serde's `{"secs", "nanos"}`; read back
/// from text, from whole seconds, or from `{"secs", "nanos"}` as records and journals written
/// by earlier versions hold them. `#[serde(with = "crate::duration::text")]`.
pub mod text {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Written {
        Text(String),
        Secs(u64),
        Serde { secs: u64, nanos: u32 },
    }

    impl Written {
        fn duration<E: serde::de::Error>(self) -> Result<Duration, E> {
            match self {
                Self::Text(t) => super::parse(&t).map_err(E::custom),
                Self::Secs(s) => Ok(Duration::from_secs(s)),
                Self::Serde { secs, nanos } => Ok(Duration::new(secs, nanos)),
            }
        }
    }

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::show(*d))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Written::deserialize(d)?.duration()
    }

    /// The same for a list of durations.
    pub mod list {
        use super::Written;
        use serde::{Deserialize, Deserializer, Serializer, ser::SerializeSeq};
        use std::time::Duration;

        pub fn serialize<S: Serializer>(v: &[Duration], s: S) -> Result<S::Ok, S::Error> {
            let mut seq = s.serialize_seq(Some(v.len()))?;
            for d in v {
                seq.serialize_element(&super::super::show(*d))?;
            }
            seq.end()
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Duration>, D::Error> {
            Vec::<Written>::deserialize(d)?
                .into_iter()
                .map(Written::duration)
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
    struct Held {
        #[serde(with = "text")]
        one: Duration,
        #[serde(with = "text::list")]
        many: Vec<Duration>,
    }

    #[test]
    fn durations_are_text_in_json_and_read_back_from_what_earlier_versions_wrote() {
        let held = Held {
            one: Duration::from_secs(86_400),
            many: vec![Duration::from_secs(5), Duration::from_secs(90)],
        };
        let json = serde_json::to_string(&held).expect("serialise");
        assert_eq!(json, r#"{"one":"1d","many":["5s","1m30s"]}"#);
        assert_eq!(serde_json::from_str::<Held>(&json).expect("read"), held);
        let old = r#"{"one":{"secs":86400,"nanos":0},"many":[5,{"secs":90,"nanos":0}]}"#;
        assert_eq!(serde_json::from_str::<Held>(old).expect("read old"), held);
        assert!(serde_json::from_str::<Held>(r#"{"one":"soon","many":[]}"#).is_err());
    }

    #[test]
    fn units_and_sums() {
        assert_eq!(parse("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("1y"), Ok(Duration::from_secs(31_536_000)));
        assert_eq!(parse("30d"), Ok(Duration::from_secs(2_592_000)));
        for bad in ["", "10", "h", "5w", "0s", "99999999999999999999y", "-1h"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert_eq!(parse("100y"), Ok(MAX));
        for huge in ["101y", "18446744073709551615s", "3650001d"] {
            assert!(parse(huge).is_err_and(|e| e.contains("100y")), "{huge}");
        }
        assert_eq!(show(Duration::from_secs(31_536_000)), "365d");
        assert_eq!(show(Duration::from_secs(5400)), "1h30m");
        // Zero is said as zero; hours stay hours.
        let e = parse("0s").expect_err("zero");
        assert!(e.contains("no time at all"), "{e}");
        assert!(parse("1x").expect_err("unit").contains("not a duration"));
        assert_eq!(show_hours(Duration::from_secs(25 * 3600)), "25h");
        assert_eq!(show_hours(Duration::from_secs(90 * 60)), "1h30m");
        assert_eq!(show_hours(Duration::from_secs(5)), "5s");
    }
}
