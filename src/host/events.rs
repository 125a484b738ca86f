//! Reading Windows event logs: the XPath filter `EvtQuery` takes (Microsoft Learn, "Consuming
//! Events"), and an event as `EvtRender(EvtRenderEventXml)` gives it, read into its parts.

use super::error::HostResult;
use serde::{Deserialize, Serialize};

/// The most bytes of one event's XML that are read.
pub const MAX_EVENT_XML: usize = 64 * 1024;
/// The most data items kept of one event, and characters of each.
const MAX_DATA: usize = 16;
const MAX_DATUM: usize = 1024;

/// What to read from one event log, newest first.
#[derive(Clone, Copy, Debug)]
pub struct EventQuery<'a> {
    /// `System`, `Application`.
    pub channel: &'a str,
    /// The providers (any when empty).
    pub providers: &'a [&'a str],
    /// The event ids (any when empty).
    pub ids: &'a [u32],
}

/// One event read from a log.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LoggedEvent {
    /// `TimeCreated/@SystemTime`, as the log gives it (UTC, RFC 3339).
    pub time: String,
    pub provider: String,
    pub id: u32,
    /// The level: 1 critical, 2 error, 3 warning, 4 information (0: always logged).
    pub level: u8,
    /// The event's data, in order (`EventData/Data`, or `UserData`'s text).
    pub data: Vec<String>,
    /// `EventData/Binary` as UTF-16LE text up to its first NUL: the SCM's key name of the
    /// service (7031, 7034; `<key name>/<state>` for 7036).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<String>,
}

impl LoggedEvent {
    /// Whether any of its data or its binary text contains one of `needles`.
    pub fn mentions(&self, needles: &[&str]) -> bool {
        self.data
            .iter()
            .chain(self.binary.iter())
            .any(|d| needles.iter().any(|n| d.contains(n)))
    }
}

/// `EventData/Binary` (hex) as UTF-16LE text up to the first NUL; `None` when it is no text.
fn binary_text(hex: &str) -> Option<String> {
    let hex = hex.trim();
    if hex.is_empty() || !hex.len().is_multiple_of(4) || hex.len() > 4 * MAX_DATUM {
        return None;
    }
    let units: Vec<u16> = (0..hex.len())
        .step_by(4)
        .map(|i| {
            let lo = u8::from_str_radix(hex.get(i..i + 2)?, 16).ok()?;
            let hi = u8::from_str_radix(hex.get(i + 2..i + 4)?, 16).ok()?;
            Some(u16::from_le_bytes([lo, hi]))
        })
        .collect::<Option<_>>()?;
    let end = units.iter().position(|u| *u == 0).unwrap_or(units.len());
    let text = String::from_utf16(&units[..end]).ok()?;
    (!text.is_empty() && !text.chars().any(char::is_control)).then_some(text)
}

impl EventQuery<'_> {
    /// The XPath filter for `EvtQuery` (providers and channel are this program's constants).
    pub fn xpath(&self) -> String {
        let mut parts = Vec::new();
        let providers: Vec<String> = self
            .providers
            .iter()
            .map(|p| format!("Provider[@Name='{p}']"))
            .collect();
        if !providers.is_empty() {
            parts.push(format!("({})", providers.join(" or ")));
        }
        if !self.ids.is_empty() {
            let ids: Vec<String> = self.ids.iter().map(|i| format!("EventID={i}")).collect();
            parts.push(format!("({})", ids.join(" or ")));
        }
        if parts.is_empty() {
            "*".into()
        } else {
            format!("*[System[{}]]", parts.join(" and "))
        }
    }

    /// Whether an event answers this question (for a host that filters itself).
    pub fn matches(&self, provider: &str, id: u32) -> bool {
        (self.providers.is_empty() || self.providers.contains(&provider))
            && (self.ids.is_empty() || self.ids.contains(&id))
    }
}

/// An event from its XML (the `Event` element `EvtRender` gives); `None` without an id.
pub fn parse(xml: &str) -> Option<LoggedEvent> {
    let id = element_text(xml, "EventID")?.trim().parse().ok()?;
    let mut data = Vec::new();
    let mut rest = xml;
    while let Some(at) = rest.find("<Data") {
        rest = &rest[at + 5..];
        let Some(open_end) = rest.find('>') else {
            break;
        };
        if rest[..open_end].ends_with('/') {
            rest = &rest[open_end + 1..];
            continue;
        }
        let body = &rest[open_end + 1..];
        let Some(close) = body.find("</Data>") else {
            break;
        };
        if data.len() < MAX_DATA {
            data.push(unescape(&body[..close]).chars().take(MAX_DATUM).collect());
        }
        rest = &body[close..];
    }
    Some(LoggedEvent {
        time: attribute(xml, "TimeCreated", "SystemTime").unwrap_or_default(),
        provider: attribute(xml, "Provider", "Name").unwrap_or_default(),
        id,
        level: element_text(xml, "Level")
            .and_then(|l| l.trim().parse().ok())
            .unwrap_or(0),
        data,
        binary: element_text(xml, "Binary").and_then(binary_text),
    })
}

/// The text of the first `<name ...>text</name>`.
fn element_text<'a>(xml: &'a str, name: &str) -> Option<&'a str> {
    let start = xml.find(&format!("<{name}"))?;
    let after = &xml[start + name.len() + 1..];
    if !after.starts_with(['>', ' ']) {
        return None;
    }
    let open_end = after.find('>')?;
    let body = &after[open_end + 1..];
    Some(&body[..body.find(&format!("</{name}>"))?])
}

/// The value of `attr` on the first `<element ...>`, quoted with ' or ".
fn attribute(xml: &str, element: &str, attr: &str) -> Option<String> {
    let start = xml.find(&format!("<{element} "))?;
    let tag = &xml[start..start + xml[start..].find('>')?];
    let at = tag.find(&format!("{attr}="))? + attr.len() + 1;
    let quote = tag[at..]
        .chars()
        .next()
        .filter(|c| *c == '\'' || *c == '"')?;
    let value = &tag[at + 1..];
    Some(unescape(&value[..value.find(quote)?]))
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// How serious an event in the Application event log is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventLevel {
    Information,
    Warning,
    Error,
}

/// The Application event log, where the service bodies report start, stop and failure.
pub trait EventLog {
    /// Writes one event of `source` with `message` as its text.
    fn report_event(
        &self,
        source: &str,
        level: EventLevel,
        id: u32,
        message: &str,
    ) -> HostResult<()>;
    /// The newest `max` events of a log that answer `query` (`EvtQuery`), newest first.
    fn read_events(&self, query: &EventQuery, max: usize) -> HostResult<Vec<LoggedEvent>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The filter as Microsoft Learn's "Consuming Events" writes one.
    #[test]
    fn the_filter_is_xpath_as_evtquery_takes_it() {
        let q = EventQuery {
            channel: "System",
            providers: &["Service Control Manager"],
            ids: &[7031, 7034],
        };
        assert_eq!(
            q.xpath(),
            "*[System[(Provider[@Name='Service Control Manager']) and (EventID=7031 or EventID=7034)]]"
        );
        let any = EventQuery {
            channel: "System",
            providers: &[],
            ids: &[],
        };
        assert_eq!(any.xpath(), "*");
    }

    /// An event as Windows renders it (`wevtutil qe System /f:xml`): the SCM's 7031 names the
    /// service by display name in `param1` and by key name in `Binary` (UTF-16LE).
    #[test]
    fn an_events_xml_is_read_into_its_parts() {
        let xml = r#"<Event xmlns='http://schemas.microsoft.com/win/2004/08/events/event'><System><Provider Name='Service Control Manager' Guid='{555908d1-a6d7-4695-8e1e-26931d2012f4}' EventSourceName='Service Control Manager'/><EventID Qualifiers='49152'>7031</EventID><Version>0</Version><Level>2</Level><Task>0</Task><TimeCreated SystemTime='2026-11-24T10:00:01.1234567Z'/><Channel>System</Channel></System><EventData><Data Name='param1'>Calico Felix</Data><Data Name='param2'>1</Data><Data Name='param3'>60000</Data><Data Name='param4'>1</Data><Data Name='param5'>Restart the service &amp; wait</Data><Binary>430061006C00690063006F00460065006C0069007800</Binary></EventData></Event>"#;
        let e = parse(xml).expect("an event");
        assert_eq!(e.provider, "Service Control Manager");
        assert_eq!(e.id, 7031);
        assert_eq!(e.level, 2);
        assert_eq!(e.time, "2026-11-24T10:00:01.1234567Z");
        assert_eq!(
            e.data,
            [
                "Calico Felix",
                "1",
                "60000",
                "1",
                "Restart the service & wait"
            ]
        );
        assert_eq!(e.binary.as_deref(), Some("CalicoFelix"));
        assert!(e.mentions(&["CalicoFelix"]), "found by its key name");
        // 7036: `<key name>/<state>` and a NUL.
        assert_eq!(
            binary_text("430061006C00690063006F00460065006C00690078002F0034000000").as_deref(),
            Some("CalicoFelix/4")
        );
        for not_text in ["43", "zz00", "0100", ""] {
            assert_eq!(binary_text(not_text), None, "{not_text}");
        }
        assert_eq!(parse("<Event><System></System></Event>"), None);
    }
}
