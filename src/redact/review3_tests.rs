//! Inputs a third review ran: text an operator needs that was hidden, and values that left.

use super::review_tests::same;

/// A line of prose ending in a secret's name above a row of dashes is no table's header: the
/// lines after the dashes (a stack trace) stay. A table's secret column loses only its own span.
#[test]
fn prose_above_a_row_of_dashes_is_no_table() {
    let text = "Refreshing the service account token\n------------------------------------\ngoroutine 1 [running]:\nmain.main()\n\t/go/src/main.go:10\nimportant line\n";
    same(text, text);
    same(
        "Name  Token  Port\n----  -----  ----\nfoo   abcde  5473\n",
        "Name  Token  Port\n----  -----  ----\nfoo   <redacted> 5473\n",
    );
}

/// A plain value's continuation (YAML 1.2 7.3.3) is the lines indented more than its key,
/// up to a blank line or an entry of their own: a list item's sibling keys and the lines after
/// a blank one stay.
#[test]
fn a_plain_values_continuation_ends_at_its_keys_siblings_and_a_blank_line() {
    same(
        "- password: x\n  user: admin\n  host: db.example\n",
        "- password: <redacted>\n  user: admin\n  host: db.example\n",
    );
    same(
        "token: abc\n  note: something\n\n  after blank\n",
        "token: <redacted>\n  note: something\n\n  after blank\n",
    );
    same(
        "- password: two words\n    more words\n  user: admin\n",
        "- password: <redacted>\n    <redacted>\n  user: admin\n",
    );
}
