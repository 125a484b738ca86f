//! Inputs a sixth review ran: secrets under a key in shapes and cuts the rounds before missed.

use super::review5_tests::never_leaks;

/// Go's `%v` and `%#v` of a `url.Values` (`map[string][]string`) with a secret's key: the
/// key's list items go, another key's stay.
#[test]
fn a_go_string_list_map_loses_a_secret_keys_items_only() {
    let pad = "x".repeat(40);
    never_leaks(
        &format!("{pad} form=map[password:[hunter2x] username:[KEEP]] done"),
        "hunter2x",
        &["username:[KEEP]] done"],
    );
    never_leaks(
        &format!(
            r#"{pad} form=url.Values{{"password":[]string{{"hunter2x"}}, "username":[]string{{"KEEP"}}}} done"#
        ),
        "hunter2x",
        &[r#""username":[]string{"KEEP"}} done"#],
    );
}

/// JSON in a JSON string in a JSON string (a log line holding a record holding a request):
/// a secret's value under its key, and a credential header's list, in quotes escaped twice,
/// go; the text after them stays.
#[test]
fn a_secret_in_json_escaped_twice_goes() {
    let pad = "x".repeat(40);
    never_leaks(
        &format!(r#"{pad} {{"log":"{{\"msg\":\"{{\\\"password\\\":\\\"QQ3\\\"}}\"}} KEEP"}}"#),
        "QQ3",
        &["} KEEP\"}"],
    );
    never_leaks(
        &format!(
            r#"{pad} {{"log":"{{\"msg\":\"{{\\\"Cookie\\\":[\\\"QQ2\\\"],\\\"Accept\\\":[\\\"KEEP\\\"]}}\"}} done"}}"#
        ),
        "QQ2",
        &[r#"\\\"Accept\\\":[\\\"KEEP\\\"]}\"} done"}"#],
    );
}

/// A credential header's quoted value after `=` (logrus' and klog's `key="value"`, a
/// PowerShell hashtable's `@{ Cookie = "X" }`) goes to its closing quote; what follows stays.
#[test]
fn a_credential_headers_quoted_value_after_an_equals_sign_goes() {
    let pad = "x".repeat(40);
    for (text, kept) in [
        (r#"msg=req Cookie="s=QQ1" k=KEEP"#, " k=KEEP"),
        (r#"msg=req cookie="s=QQ1 t=QQ1" k=KEEP"#, " k=KEEP"),
        (
            r#"@{ Cookie = "session=QQ1"; Accept = 'KEEP' }"#,
            "; Accept = 'KEEP' }",
        ),
    ] {
        never_leaks(&format!("{pad} {text}"), "QQ1", &[kept]);
    }
    // A piece ending at a single-quoted value's `'` may end inside a `''`: the rest of the
    // line goes, as after a header's value cut anywhere.
    never_leaks(
        &format!("{pad} -Headers @{{ Cookie = 'session=QQ1' }} KEEP"),
        "QQ1",
        &[],
    );
}

/// A Felix line whose escaped JSON key naming a secret ends a piece as `logs` cuts it
/// (`installed::logs::cut`: before the words leading into a value, `\"password\"` one of
/// them): no value shows in the pieces, the text before the cut stays.
#[test]
fn a_piece_cut_after_an_escaped_secret_key_shows_no_value() {
    let text = format!(
        r#"{} felix/x.go 1: body="{{\"password\":\"QQ1\",\"token\":\"QQ2\"}}" next=KEEP"#,
        "x".repeat(40)
    );
    let key = text.find(r#"\"password\""#).unwrap_or(0) + r#"\"password\""#.len();
    let at = crate::installed::logs::cut(&text.as_bytes()[..key]);
    // Before the key's word, as before an unescaped one's.
    let word = text.find("password").unwrap_or(0);
    assert!(at <= word, "cut at {at}, after the key's word at {word}");
    let out = super::review4_tests::cut_at(&text, at);
    assert!(
        !out.contains("QQ1") && !out.contains("QQ2"),
        "cut at {at}: {out}"
    );
    assert!(out.contains("felix/x.go 1: body="), "cut at {at}: {out}");
    // Cut there however `logs` cuts, the next piece shows no value.
    let out = super::review4_tests::cut_at(&text, key);
    assert!(
        !out.contains("QQ1") && !out.contains("QQ2"),
        "cut at {key}: {out}"
    );
}

/// A plain value of many words beginning its line (`password: x`, `Format-List`'s
/// `Token : x`) cut by a piece's end: the rest of its line goes too.
#[test]
fn a_plain_value_beginning_its_line_cut_by_a_piece_goes_to_the_lines_end() {
    for (text, at) in [("password: QQ3 QQ4 QQ5", 14), ("Token : QQ3 QQ4", 12)] {
        let out = super::review4_tests::cut_at(text, at);
        assert!(
            !out.contains("QQ3") && !out.contains("QQ4") && !out.contains("QQ5"),
            "cut at {at}: {out}"
        );
    }
}

/// PowerShell's escaped quote (`` `" ``, about_Special_Characters) inside a double-quoted
/// `Authorization` value or a secret's value after `=` does not end it: all of it goes.
#[test]
fn a_powershell_backtick_quote_does_not_end_an_authorization_or_secret_value() {
    let pad = "x".repeat(40);
    for text in [
        "$h = @{ Authorization = \"Bearer QQ1`\"QQ2\" }; KEEP",
        "$password = \"QQ1`\"QQ2\"; KEEP",
    ] {
        never_leaks(&format!("{pad} {text}"), "QQ2", &["; KEEP"]);
    }
}

/// A seventh review's: Go's `%v` prints a list's items raw, so a secret holding a quote or a
/// backslash is no quoted item (`map[password:[hunter"2]]`): every word goes.
#[test]
fn a_raw_list_item_holding_a_quote_or_backslash_goes() {
    let pad = "x".repeat(40);
    for (line, secret) in [
        (
            format!("{pad} form=map[password:[hun\"ter2x] username:[KEEP]] done"),
            "ter2x",
        ),
        (
            format!("{pad} form=map[password:[it's-secret] username:[KEEP]] done"),
            "s-secret",
        ),
        (
            format!("{pad} form=map[password:[CORP\\pw9x] username:[KEEP]] done"),
            "pw9x",
        ),
    ] {
        never_leaks(&line, secret, &["username:[KEEP]] done"]);
    }
}

/// A backtick escapes only the quote after it (PowerShell's `` `" ``): in JSON or logrus' `%q`
/// a value holding a backtick before an escaped quote (`` `\" ``) goes on past that quote.
#[test]
fn a_backtick_before_an_escaped_quote_does_not_end_the_value() {
    let pad = "x".repeat(40);
    never_leaks(
        &format!("{pad} password=\"ab`\\\"SECRET9\" user=KEEP"),
        "SECRET9",
        &["user=KEEP"],
    );
    never_leaks(
        &format!("{pad} {{\"password\":\"ab`\\\"SECRET9\",\"user\":\"KEEP\"}}"),
        "SECRET9",
        &["\"user\":\"KEEP\"}"],
    );
}
