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
