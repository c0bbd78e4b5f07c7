//! Reads of stored JSON text without parsing it: the top-level members of a record, and the
//! projection of a record onto selected fields (`select`), copying the selected values' text.
//!
//! The server stores every record as JSON text it wrote itself (valid, an object at the top).
//! A large read that needs only some fields of each record (a hierarchy read with `select`)
//! would spend most of its time parsing and re-serializing what it then throws away; walking
//! the text's structure instead finds each member's value by its brackets and quotes, and the
//! selected values are copied as they are.

use serde_json::Value;

/// The top-level members of a JSON object's text, in order: each key's text (between its
/// quotes, escapes kept as written) and its value's text. `None` when `text` is not an object;
/// the walk trusts the text to be valid JSON (text this server stored), and stops at the first
/// thing that does not fit.
pub fn members(text: &str) -> Option<Members<'_>> {
    let b = text.as_bytes();
    let i = skip_ws(b, 0);
    (b.get(i) == Some(&b'{')).then_some(Members {
        text,
        pos: i + 1,
        done: false,
    })
}

/// See [`members`].
pub struct Members<'a> {
    text: &'a str,
    pos: usize,
    done: bool,
}

impl<'a> Iterator for Members<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<(&'a str, &'a str)> {
        if self.done {
            return None;
        }
        let b = self.text.as_bytes();
        let mut i = skip_ws(b, self.pos);
        if b.get(i) == Some(&b',') {
            i = skip_ws(b, i + 1);
        }
        if b.get(i) != Some(&b'"') {
            self.done = true;
            return None;
        }
        let key_end = string_end(b, i)?;
        let key = &self.text[i + 1..key_end - 1];
        i = skip_ws(b, key_end);
        if b.get(i) != Some(&b':') {
            self.done = true;
            return None;
        }
        let start = skip_ws(b, i + 1);
        let end = value_end(b, start)?;
        self.pos = end;
        Some((key, &self.text[start..end]))
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\n' | b'\r' | b'\t') {
        i += 1;
    }
    i
}

/// The index just past the string starting at `b[i] == '"'`.
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        let k = memchr::memchr2(b'"', b'\\', &b[j..])?;
        if b[j + k] == b'"' {
            return Some(j + k + 1);
        }
        j += k + 2;
        if j > b.len() {
            return None;
        }
    }
}

/// The index just past the value starting at `b[i]`.
fn value_end(b: &[u8], i: usize) -> Option<usize> {
    let (open, close) = match *b.get(i)? {
        b'"' => return string_end(b, i),
        b'{' => (b'{', b'}'),
        b'[' => (b'[', b']'),
        _ => {
            // A number, true, false or null: up to the next delimiter.
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t')
            {
                j += 1;
            }
            return (j > i).then_some(j);
        }
    };
    // Brackets of one kind balance on their own in valid JSON; only strings can hide them.
    let mut depth = 0usize;
    let mut j = i;
    loop {
        let k = memchr::memchr3(b'"', open, close, &b[j..])?;
        let at = j + k;
        match b[at] {
            b'"' => {
                j = string_end(b, at)?;
                continue;
            }
            c if c == open => depth += 1,
            _ => {
                depth -= 1;
                if depth == 0 {
                    return Some(at + 1);
                }
            }
        }
        j = at + 1;
    }
}

/// One selected field: the key it is answered under and its path in the record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selected {
    /// The answer's key (`dataPropertiesArea` for `data.properties.area`).
    pub name: String,
    /// The record's top-level member holding it.
    pub top: String,
    /// The rest of the path inside that member (empty for a top-level field).
    pub rest: Vec<String>,
}

impl Selected {
    /// A field selected by its dotted path, answered under `name`.
    pub fn new(name: String, path: &str) -> Selected {
        let mut parts = path.split('.').map(str::to_string);
        let top = parts.next().unwrap_or_default();
        Selected {
            name,
            top,
            rest: parts.collect(),
        }
    }
}

/// A projection of records onto `id` and selected fields, as `POST /r/query` answers with
/// `select`: `{"id": .., "<name>": <value or null>, ...}` in the order selected.
#[derive(Debug, Clone)]
pub struct Projection {
    fields: Vec<Selected>,
    /// The top-level members to find, each once (`id` first).
    tops: Vec<String>,
    /// Each field's index in `tops`.
    field_top: Vec<usize>,
    /// The JSON text of each field's name followed by a colon.
    keys: Vec<Vec<u8>>,
}

impl Projection {
    /// `fields` in the order asked; a field named `id` is answered once, first.
    pub fn new(fields: Vec<Selected>) -> Projection {
        let mut fields: Vec<Selected> = fields
            .into_iter()
            .filter(|f| !(f.top == "id" && f.rest.is_empty()))
            .collect();
        let mut seen = std::collections::HashSet::new();
        fields.retain(|f| seen.insert(f.name.clone()));
        fields.insert(0, Selected::new("id".into(), "id"));
        let mut tops: Vec<String> = Vec::new();
        let mut field_top = Vec::with_capacity(fields.len());
        for f in &fields {
            let i = match tops.iter().position(|t| *t == f.top) {
                Some(i) => i,
                None => {
                    tops.push(f.top.clone());
                    tops.len() - 1
                }
            };
            field_top.push(i);
        }
        let keys = fields
            .iter()
            .map(|f| {
                let mut k = serde_json::to_vec(&f.name).expect("a string serializes");
                k.push(b':');
                k
            })
            .collect();
        Projection {
            fields,
            tops,
            field_top,
            keys,
        }
    }

    /// Appends the projection of the stored record `text` to `out`.
    pub fn write(&self, text: &str, out: &mut Vec<u8>) {
        let mut found: Vec<Option<&str>> = vec![None; self.tops.len()];
        let mut left = self.tops.len();
        if let Some(members) = members(text) {
            for (key, value) in members {
                if let Some(i) = self.tops.iter().position(|t| t == key)
                    && found[i].is_none()
                {
                    found[i] = Some(value);
                    left -= 1;
                    if left == 0 {
                        break;
                    }
                }
            }
        }
        out.push(b'{');
        for (n, f) in self.fields.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            out.extend_from_slice(&self.keys[n]);
            match found[self.field_top[n]] {
                None => out.extend_from_slice(b"null"),
                Some(v) if f.rest.is_empty() => out.extend_from_slice(v.as_bytes()),
                Some(v) => {
                    // A nested field: only its top-level member is parsed.
                    let inner = serde_json::from_str::<Value>(v).ok().and_then(|top| {
                        f.rest
                            .iter()
                            .try_fold(&top, |v, seg| v.get(seg.as_str()))
                            .map(|x| serde_json::to_vec(x).expect("a value serializes"))
                    });
                    match inner {
                        Some(bytes) => out.extend_from_slice(&bytes),
                        None => out.extend_from_slice(b"null"),
                    }
                }
            }
        }
        out.push(b'}');
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Map, json};

    use super::*;

    #[test]
    fn members_are_found_by_structure() {
        let text = r#" { "a" : 1, "b":{"x":[1,{"y":"}]"}],"z":"q\"}"},"c":"s,\\","d":[],"e":null ,"f":-1.5e3} "#;
        let got: Vec<(&str, &str)> = members(text).unwrap().collect();
        assert_eq!(
            got,
            [
                ("a", "1"),
                ("b", r#"{"x":[1,{"y":"}]"}],"z":"q\"}"}"#),
                ("c", r#""s,\\""#),
                ("d", "[]"),
                ("e", "null"),
                ("f", "-1.5e3"),
            ]
        );
        assert!(members("[1]").is_none());
        assert_eq!(members("{}").unwrap().count(), 0);
    }

    #[test]
    fn a_projection_answers_like_a_query_select() {
        let p = Projection::new(vec![
            Selected::new("name".into(), "name"),
            Selected::new("id".into(), "id"),
            Selected::new("progressStatus".into(), "progress.status"),
            Selected::new("dataPropertiesArea".into(), "data.properties.area"),
            Selected::new("missing".into(), "missing"),
            Selected::new("progress".into(), "progress"),
        ]);
        let text = r#"{"id":"i1","name":"N \"1\"","data":{"properties":{"area":12.5}},"progress":{"status":"wip"},"computed":{"big":[1,2,3]}}"#;
        let mut out = Vec::new();
        p.write(text, &mut out);
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            v,
            json!({"id": "i1", "name": "N \"1\"", "progressStatus": "wip", "dataPropertiesArea": 12.5,
                   "missing": null, "progress": {"status": "wip"}})
        );
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys[0], "id");
    }

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            (-1e9f64..1e9).prop_map(|f| json!(f)),
            ".{0,12}".prop_map(Value::String),
        ]
    }

    fn value() -> impl Strategy<Value = Value> {
        leaf().prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::vec((".{0,8}", inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
            ]
        })
    }

    proptest! {
        /// Walking the text finds exactly what parsing finds, for any object serde_json writes
        /// (compact or pretty).
        #[test]
        fn members_agree_with_a_parse(
            obj in proptest::collection::vec((".{0,8}", value()), 0..8),
            pretty in any::<bool>(),
        ) {
            let obj: Map<String, Value> = obj.into_iter().collect();
            let text = if pretty {
                serde_json::to_string_pretty(&obj).unwrap()
            } else {
                serde_json::to_string(&obj).unwrap()
            };
            let got: Vec<(String, Value)> = members(&text)
                .unwrap()
                .map(|(k, v)| {
                    let key: String = serde_json::from_str(&format!("\"{k}\"")).unwrap();
                    (key, serde_json::from_str(v).unwrap())
                })
                .collect();
            // Both sides through the same parse (serde_json's float parsing is not exact).
            let want: Vec<(String, Value)> = obj
                .into_iter()
                .map(|(k, v)| (k, serde_json::from_str(&v.to_string()).unwrap()))
                .collect();
            prop_assert_eq!(got, want);
        }
    }
}
