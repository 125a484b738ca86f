//! PowerShell's `Format-Table` output with a column named as a secret: a header row, a row of
//! dashes under each column's name, then a row per object, a blank line after the last
//! (PowerShell's `TableView`: each column's dashes as wide as the column, its values under
//! them). The values in such a column go, the other columns stay.

use super::names::NAMES;
use regex::bytes::Regex;

/// The secrets' words a column's name ends in that a narrow column cuts (PowerShell's
/// `TableView` ends a name too long for its column with `...` in Windows PowerShell, `…` in
/// PowerShell 7): `ClientSec...`, `Passw…`.
const CUT_WORDS: [&str; 9] = [
    "token",
    "password",
    "passphrase",
    "apikey",
    "accesskey",
    "privatekey",
    "credential",
    "secret",
    "secrettext",
];

/// The names of columns that hold secrets whole (`Get-AzADServicePrincipal`'s and an app
/// registration's, a credential object's) besides `CUT_WORDS`: what a narrow column shows of
/// one (`ServicePrinc…`, `ClientSe...`) names a secret's column though the secret's word was
/// cut away.
const SECRET_COLUMNS: [&str; 3] = ["serviceprincipalsecret", "clientsecret", "accesstoken"];

/// A column's name naming a secret (`Password`, `ClientSecret`, `Token`, `SecretText`),
/// whole or cut by its column's width: after three letters of its secret's word at least
/// (`MyPassw…`), or after four letters of a name of `SECRET_COLUMNS` or `CUT_WORDS`
/// (`ServicePrinc…`, `Pass...`).
pub(super) fn column_name() -> String {
    let cut: Vec<String> = CUT_WORDS.iter().map(|w| prefixes(w, 3)).collect();
    let cut = cut.join("|");
    // Four letters at least: fewer (`Pr…`, `Ac…`, `S…`) begin ordinary columns' names as
    // often (Profile, Action, Status), and a table's secret columns hide those between them.
    let whole: Vec<String> = SECRET_COLUMNS
        .iter()
        .chain(CUT_WORDS.iter())
        .map(|w| prefixes(w, w.len().min(4)))
        .collect();
    let whole = whole.join("|");
    format!(
        r"(?i-u)^(?:[A-Za-z0-9_.]*(?:{NAMES}|secrettext|(?:{cut})(?:\.\.\.|\xE2\x80\xA6))|(?:{whole})(?:\.\.\.|\xE2\x80\xA6))$"
    )
}

/// `word`'s first `head` letters and then each longer start of it, as a regex.
fn prefixes(word: &str, head: usize) -> String {
    let (head, tail) = word.split_at(head);
    let mut opt = String::new();
    for c in tail.chars().rev() {
        opt = format!("(?:{c}{opt})?");
    }
    format!("{head}{opt}")
}

/// Where the columns named as secrets stand on a line that may be a table's header (words
/// between blanks, no `:`, `=` or quote, none a flag): the first one's start and the last
/// one's end.
pub(super) fn header(name: &Regex, line: &[u8]) -> Option<(u16, u16)> {
    if line.iter().any(|b| b"\"':=".contains(b)) {
        return None;
    }
    let mut found: Option<(usize, usize)> = None;
    let mut at = 0;
    for word in line.split(|b| b.is_ascii_whitespace()) {
        if name.is_match(word) && !word.is_empty() {
            found = Some((found.map_or(at, |f| f.0), at + word.len()));
        }
        at += word.len() + 1;
    }
    let (start, end) = found?;
    Some((u16::try_from(start).ok()?, u16::try_from(end).ok()?))
}

/// The part of each row a header's secret columns (`start`..`end` on it) hold, from the row
/// of dashes under the header: from the start of the dashes under the first to the start of
/// the next column's after the last (`u16::MAX`: to the row's end). None when `line` is no
/// row of dashes under them, or under a line of one column.
pub(super) fn columns(line: &[u8], start: u16, end: u16) -> Option<(u16, u16)> {
    let text = line.trim_ascii_end();
    if text.is_empty() || !text.iter().all(|b| matches!(b, b'-' | b' ')) {
        return None;
    }
    let runs: Vec<(usize, usize)> = text
        .split(|b| *b == b' ')
        .scan(0usize, |at, run| {
            let r = (*at, *at + run.len());
            *at += run.len() + 1;
            Some(r)
        })
        .filter(|(s, e)| e > s)
        .collect();
    let (start, end) = (usize::from(start), usize::from(end));
    // One row of dashes under a line of prose (a title underlined, a separator) is no table's;
    // one column's table (`Select-Object Password`) is: its name starts where its dashes do
    // and they run under all of it, as `TableView` writes them.
    if let [(s, e)] = runs[..]
        && (s != start || e < end)
    {
        return None;
    }
    let first = runs.iter().position(|(s, e)| start < *e && end > *s)?;
    let last = runs.iter().rposition(|(s, e)| start < *e && end > *s)?;
    let to = runs
        .get(last + 1)
        .map_or(Some(u16::MAX), |(s, _)| u16::try_from(*s).ok())?;
    Some((u16::try_from(runs[first].0).ok()?, to))
}
