use super::*;
use crate::host::Registry;
use crate::host::sim::SimHost;

/// 2009-06-15T13:45:30 on the local clock: the instant .NET's format documentation formats
/// (learn.microsoft.com/dotnet/standard/base-types/standard-date-and-time-format-strings).
const DOCS_INSTANT: i64 = 1_245_073_530;

fn general(name: &str, at: i64) -> String {
    Culture::known(name)
        .expect("known culture")
        .general(at)
        .expect("formats")
}

/// The "G" examples of .NET's documentation, culture by culture: "6/15/2009 1:45:30 PM
/// (en-US)"; de-DE, fr-FR and ja-JP are its "d" examples ("15.06.2009", "15/06/2009",
/// "2009/06/15") joined by a space to its "T" examples ("13:45:30").
#[test]
fn general_format_is_dotnets_for_each_culture() {
    // Past midnight a 12-hour clock says 12, and AM; ja-JP's H has no leading zero.
    let night = DOCS_INSTANT - 13 * 3600 - 40 * 60;
    for (culture, at, want) in [
        ("en-US", DOCS_INSTANT, "6/15/2009 1:45:30 PM"),
        ("de-DE", DOCS_INSTANT, "15.06.2009 13:45:30"),
        ("fr-FR", DOCS_INSTANT, "15/06/2009 13:45:30"),
        ("ja-JP", DOCS_INSTANT, "2009/06/15 13:45:30"),
        ("en-GB", DOCS_INSTANT, "15/06/2009 13:45:30"),
        ("en-US", night, "6/15/2009 12:05:30 AM"),
        ("ja-JP", night, "2009/06/15 0:05:30"),
        ("de-DE", night, "15.06.2009 00:05:30"),
    ] {
        assert_eq!(general(culture, at), want, "{culture} at {at}");
    }
}

fn international(host: &SimHost, values: &[(&str, &str)]) {
    for (k, v) in values {
        host.reg_set(SYSTEM_INTERNATIONAL, k, &RegValue::Sz((*v).into()))
            .expect("set");
    }
}

/// SYSTEM's own overrides win over the locale's patterns, as .NET's current culture takes
/// them; a locale named without patterns uses Windows' own.
#[test]
fn system_culture_takes_the_overrides_then_the_locale() {
    let host = SimHost::in_memory("ws2022").expect("host");
    let g = || {
        let c = system_culture(&host).expect("read").expect("known");
        c.general(DOCS_INSTANT).expect("g")
    };
    assert_eq!(g(), "6/15/2009 1:45:30 PM", "the profile's en-US");
    host.reg_delete_key(SYSTEM_INTERNATIONAL).expect("clear");
    international(&host, &[("LocaleName", "de-DE")]);
    assert_eq!(g(), "15.06.2009 13:45:30");
    international(
        &host,
        &[("sShortDate", "yyyy-MM-dd"), ("sTimeFormat", "HH:mm:ss")],
    );
    assert_eq!(g(), "2009-06-15 13:45:30");
    international(
        &host,
        &[
            ("sShortDate", "'Day' d M yy"),
            ("sTimeFormat", "hh:mm tt"),
            ("s1159", "vorm."),
            ("s2359", "nachm."),
        ],
    );
    assert_eq!(g(), "Day 15 6 09 01:45 nachm.");
}

/// What cannot be known is said, never guessed: no locale at all, a locale without patterns
/// that calicoctl-win does not know, and a pattern with names of months.
#[test]
fn unknown_cultures_are_refused() {
    let host = SimHost::in_memory("ws2022").expect("host");
    host.reg_delete_key(SYSTEM_INTERNATIONAL).expect("clear");
    let why = system_culture(&host).expect("read").expect_err("unknown");
    assert!(why.contains("neither LocaleName"), "{why}");
    international(&host, &[("LocaleName", "sw-KE")]);
    let why = system_culture(&host).expect("read").expect_err("unknown");
    assert!(why.contains("sw-KE"), "{why}");
    international(
        &host,
        &[("sShortDate", "dd-MMM-yy"), ("sTimeFormat", "HH:mm:ss")],
    );
    let c = system_culture(&host).expect("read").expect("patterns");
    let why = c.general(DOCS_INSTANT).expect_err("month names");
    assert!(why.contains("\"MMM\""), "{why}");
    let unclosed = Culture {
        short_date: "d 'of M".into(),
        ..c
    };
    assert!(unclosed.general(DOCS_INSTANT).is_err());
}
