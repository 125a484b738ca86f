//! Inputs a seventh review ran: header lists over lines, PowerShell's views and quotes, and
//! cuts the rounds before missed.

use super::review_tests::{by_line, whole};

/// `text` redacted whole and a line at a time: no `secrets` show, each of `kept` does.
fn hides(text: &str, secrets: &[&str], kept: &[&str]) {
    for (how, out) in [("whole", whole(text)), ("by line", by_line(text))] {
        for s in secrets {
            assert!(!out.contains(s), "{how} showed {s}: {out}");
        }
        for k in kept {
            assert!(out.contains(k), "{how} lost {k}: {out}");
        }
    }
}

/// A credential header's list spread over lines (Go's `json.MarshalIndent` of an http.Header,
/// YAML's block list): its items go, the next key's stay.
#[test]
fn a_credential_headers_list_over_lines_loses_its_items() {
    hides(
        "{\n  \"Cookie\": [\n    \"session=QQ1\"\n  ],\n  \"Accept\": [\n    \"KEEP\"\n  ]\n}\n",
        &["QQ1"],
        &["KEEP"],
    );
    hides(
        "{\n  \"Authorization\": [\n    \"Basic QQ3\",\n    \"QQ4\"\n  ],\n  \"Accept\": [\n    \"KEEP\"\n  ]\n}\n",
        &["QQ3", "QQ4"],
        &["KEEP"],
    );
    hides(
        "headers:\n  Cookie:\n  - session=QQ1\n  - QQ2\n  Accept:\n  - KEEP\n",
        &["QQ1", "QQ2"],
        &["KEEP"],
    );
    hides(
        "headers:\n  Authorization:\n    - Basic QQ3\n    - QQ4\n  Accept:\n    - KEEP\n",
        &["QQ3", "QQ4"],
        &["KEEP"],
    );
}
/// PowerShell's list view of a headers hashtable (`$h.GetEnumerator() | Format-List`): the
/// `Value` of a credential header's entry goes, wrapped or not; another's stays.
#[test]
fn a_powershell_list_view_of_headers_loses_a_credentials_value() {
    hides(
        "Name  : Cookie\nKey   : Cookie\nValue : session=QQ1\n\nName  : Accept\nKey   : Accept\nValue : KEEP\n",
        &["QQ1"],
        &["KEEP"],
    );
    hides(
        "Key   : Cookie\nValue : session=QQ1\n\nKey   : Accept\nValue : KEEP\n",
        &["QQ1"],
        &["KEEP"],
    );
    hides(
        "Key   : Authorization\nValue : Basic QQ3\n        QQ4\n\nKey   : Accept\nValue : KEEP\n",
        &["QQ3", "QQ4"],
        &["KEEP"],
    );
}

/// PowerShell's table view of a headers hashtable (`$h` at the prompt): a credential
/// header's row's `Value` goes, another's stays.
#[test]
fn a_powershell_table_view_of_headers_loses_a_credentials_value() {
    hides(
        "Name                           Value\n----                           -----\nCookie                         session=QQ1\nAccept                         KEEP\n",
        &["QQ1"],
        &["KEEP"],
    );
}

/// PowerShell's `""` inside a double-quoted string is a quote in it: the whole value goes.
#[test]
fn a_powershell_doubled_quote_does_not_end_a_secrets_value() {
    hides(
        r#"@{ Cookie = "s=""QQ1"" QQ2"; Accept = 'KEEP' }"#,
        &["QQ1", "QQ2"],
        &["Accept = 'KEEP'"],
    );
    hides(r#"$env:TOKEN = "a""QQ3""#, &["QQ3"], &[]);
    hides(
        r#"Invoke-RestMethod -Headers @{Authorization = "Basic ""QQ4"""} -Uri KEEP"#,
        &["QQ4"],
        &["-Uri KEEP"],
    );
    // JSON never doubles a quote: an empty string and the next key stay.
    hides(
        r#"{"token":"" , "b":"KEEP"}"#,
        &[],
        &[r#""" , "b":"KEEP"}"#],
    );
}

/// Every name `NAMES` makes a secret's, alone and at a longer name's end, leads into its
/// value (`leads_into_value`): `logs` never cuts a long line between it and its value
/// (`accesskey: ` then the key in the next piece).
#[test]
fn every_secret_name_leads_into_its_value() {
    let names = regex::Regex::new(&format!("(?i)^[A-Za-z0-9_.-]*{}$", super::names::NAMES))
        .expect("NAMES is a valid regex");
    for name in [
        "token",
        "password",
        "passwd",
        "passphrase",
        "apikey",
        "api_key",
        "api-key",
        "accesskey",
        "access_key",
        "access-key",
        "privatekey",
        "private_key",
        "private-key",
        "key-data",
        "etcd_key",
        "credential",
        "credentials",
        "secret",
        "secret_name",
    ] {
        for word in [name.to_owned(), format!("aws_{name}")] {
            assert!(names.is_match(&word), "NAMES lost {word}");
            assert!(super::leads_into_value(word.as_bytes()), "{word}");
        }
    }
}

/// A review's inputs after the table and list views: a `Value :` with nothing after it does
/// not panic, and a table view ends at the first line that is no row of it, so a secret's
/// value over lines after it goes and a log's next line keeps its words.
#[test]
fn a_table_view_ends_at_a_line_that_is_no_row() {
    hides("Name  : token\nValue : \nNext", &[], &["Next"]);
    hides("name: token\nvalue: \nKEEP", &[], &["KEEP"]);
    hides(
        "Name      Value\n----      -----\nAccept    KEEP\nx\nETCD_PASSWORD: \"QQ7\n  QQ8\"\n",
        &["QQ7", "QQ8"],
        &["Accept    KEEP"],
    );
    hides(
        "Name                           Value\n----                           -----\nAccept                         KEEP\n  password: |\n    QQ9\ntoken refresh failed: token expired for sa KEEP2\n",
        &["QQ9"],
        &["token refresh failed: token expired for sa KEEP2"],
    );
}

/// A quoted key ending in `Cookie` in camelCase (`sessionCookie`) is a cookie's: its value
/// goes (a name that only ends in a header's letters, `XsrfCookie`, goes too: hiding a
/// setting's value is the lesser fault).
#[test]
fn a_camel_case_cookie_key_loses_its_value() {
    hides(
        r#"{"sessionCookie":"QQ1","authCookie":"QQ2","n":"KEEP"}"#,
        &["QQ1", "QQ2"],
        &["KEEP"],
    );
}

/// A credential header's list whose first items stand on the line that opens it (Python's
/// `pprint`, YAML's flow list over lines, JSON written so), and a YAML comment after the
/// header's name before its block list: every item goes, what follows the list stays.
#[test]
fn a_header_list_opened_with_items_or_a_comment_loses_every_item() {
    hides(
        "{\n  \"Cookie\": [\"a=QQ1\",\n    \"b=QQ2\"\n  ],\n  \"Accept\": [\"KEEP\"]\n}\n",
        &["QQ1", "QQ2"],
        &["\"Accept\": [\"KEEP\"]"],
    );
    hides(
        "headers:\n  Cookie: [a=QQ1,\n    b=QQ2]\n  Accept: KEEP\n",
        &["QQ1", "QQ2"],
        &["Accept: KEEP"],
    );
    hides(
        "{'Cookie': ['a=QQ1',\n            'b=QQ2'],\n 'Accept': ['KEEP']}\n",
        &["QQ1", "QQ2"],
        &["'Accept': ['KEEP']"],
    );
    hides(
        "headers:\n  Cookie: # sent\n  - a=QQ1\n  - b=QQ2\n  Accept: KEEP\n",
        &["QQ1", "QQ2"],
        &["Accept: KEEP"],
    );
}
