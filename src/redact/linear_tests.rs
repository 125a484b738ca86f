//! Redaction is one pass over its input, whatever it holds: `diags` redacts whole files and
//! `logs` 64 KiB pieces, and a line made of names whose values never close must not cost a
//! pass per name.

use super::{Pending, Redactor};

#[test]
fn a_line_of_many_open_values_is_redacted_in_one_pass() {
    let r = Redactor::new(&[]);
    for unit in [
        "password:\"",
        "--token '",
        "{Name:X_TOKEN,Value:",
        "\"name\":\"X_TOKEN\",\"value\":\"",
        "ConvertTo-SecureString \"",
        "Authorization: Bearer \"",
    ] {
        let text = unit.repeat(500_000 / unit.len()) + " token=lastsecret";
        let started = std::time::Instant::now();
        let out = r.redact(text.as_bytes());
        r.redact_piece(Pending::None, &text.as_bytes()[..64 * 1024]);
        // Seconds for one pass of 500 KB; a pass per name would take hours.
        assert!(started.elapsed().as_secs() < 20, "{unit}");
        assert!(
            !String::from_utf8_lossy(&out).contains("lastsecret"),
            "{unit}"
        );
    }
}
