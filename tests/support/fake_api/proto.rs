//! Just enough of Kubernetes' protobuf encoding to read what `kubectl`'s typed clients send
//! (`application/vnd.kubernetes.protobuf`): the `k8s\0` envelope, object metadata, and a
//! TokenRequest's spec. Answers are always JSON, which clients accept.

use serde_json::{Value, json};

enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

fn varint(b: &[u8], i: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*i)?;
        *i += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

fn fields(b: &[u8]) -> Option<Vec<(u64, Wire<'_>)>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let key = varint(b, &mut i)?;
        let wire = match key & 7 {
            0 => Wire::Varint(varint(b, &mut i)?),
            2 => {
                let len = usize::try_from(varint(b, &mut i)?).ok()?;
                let s = b.get(i..i + len)?;
                i += len;
                Wire::Bytes(s)
            }
            1 => {
                i += 8;
                continue;
            }
            5 => {
                i += 4;
                continue;
            }
            _ => return None,
        };
        out.push((key >> 3, wire));
    }
    Some(out)
}

fn text(w: &Wire) -> Value {
    match w {
        Wire::Bytes(b) => json!(String::from_utf8_lossy(b)),
        Wire::Varint(v) => json!(v),
    }
}

fn message<'a>(w: &Wire<'a>) -> Vec<(u64, Wire<'a>)> {
    match w {
        Wire::Bytes(b) => fields(b).unwrap_or_default(),
        Wire::Varint(_) => Vec::new(),
    }
}

fn map_entry(w: &Wire) -> (String, Value) {
    let f = message(w);
    let get = |n| {
        f.iter()
            .find(|(k, _)| *k == n)
            .map_or(json!(""), |(_, v)| text(v))
    };
    (get(1).as_str().unwrap_or_default().to_owned(), get(2))
}

fn metadata(w: &Wire) -> Value {
    let mut m = json!({});
    for (k, v) in message(w) {
        match k {
            1 => m["name"] = text(&v),
            3 => m["namespace"] = text(&v),
            11 | 12 => {
                let key = if k == 11 { "labels" } else { "annotations" };
                let (name, value) = map_entry(&v);
                if !m[key].is_object() {
                    m[key] = json!({});
                }
                m[key][name] = value;
            }
            _ => {}
        }
    }
    m
}

/// The JSON form of a protobuf request body, or `None` when it is not one.
pub fn decode(body: &[u8]) -> Option<Value> {
    let unknown = fields(body.strip_prefix(b"k8s\0")?)?;
    let kind = unknown
        .iter()
        .find(|(k, _)| *k == 1)
        .map(|(_, t)| message(t))
        .and_then(|t| t.iter().find(|(k, _)| *k == 2).map(|(_, v)| text(v)))
        .unwrap_or(json!(""));
    let raw = unknown.iter().find(|(k, _)| *k == 2)?;
    let mut object = json!({"kind": kind});
    for (k, v) in message(&raw.1) {
        match (k, kind.as_str()) {
            (1, _) => object["metadata"] = metadata(&v),
            (2, Some("TokenRequest")) => {
                let mut spec = json!({"audiences": []});
                for (k, v) in message(&v) {
                    match (k, v) {
                        (1, w @ Wire::Bytes(_)) => {
                            if let Some(a) = spec["audiences"].as_array_mut() {
                                a.push(text(&w));
                            }
                        }
                        (4, Wire::Varint(s)) => spec["expirationSeconds"] = json!(s),
                        _ => {}
                    }
                }
                object["spec"] = spec;
            }
            _ => {}
        }
    }
    Some(object)
}
