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
