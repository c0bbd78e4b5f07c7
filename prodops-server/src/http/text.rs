//! What text the server takes (decisions.md, docs/limits.md): every text that enters is Unicode
//! without U+0000, on both databases alike.
//!
//! - U+0000 (NUL) is refused with 400 `VALIDATION_ERROR` naming where it was: PostgreSQL
//!   cannot store it in text (nor read it back out of `json` as text), so rather than a
//!   behaviour that differs between the databases, neither takes it.
//! - A lone surrogate (`\ud800` in JSON, `%ED%A0%80` in a URL) is not a Unicode character:
//!   refused the same way.
//!
//! The checks are central: [`check_json`] runs on every JSON request body before it is parsed
//! (`http/app.rs`: the body extractors, the bulk PUT's raw body included), [`check_uri`] on the path
//! and query string of every request (the gateway), so no handler can forget them. Headers
//! the server reads as text (`Idempotency-Key`, `X-Request-Id`) take visible ASCII only.
//!
//! Fields the database indexes by their text (unique keys, `customerIdentifier`, a
//! deliverable's `identifier`) hold at most [`MAX_INDEXED_TEXT`] characters
//! ([`check_indexed_lengths`]): PostgreSQL refuses an index row past about 2,700 bytes.

use prodops_core::ResourceDesc;
use prodops_core::Violation;
use serde_json::Value;

use crate::http::error::{ApiError, ApiResult};

/// The most characters a text field the database indexes may hold (4 bytes a character at
/// most, so two of them and the organization id stay inside PostgreSQL's index row limit).
pub const MAX_INDEXED_TEXT: usize = 256;

/// The most characters a `search` text may hold (SQLite refuses a LIKE pattern past 50,000
/// bytes; a search for a longer text than any stored field holds finds nothing anyway).
pub const MAX_SEARCH_TEXT: usize = 1000;

/// Refuses a `search` text longer than [`MAX_SEARCH_TEXT`] characters.
pub fn check_search(text: &str) -> ApiResult<()> {
    if text.len() > MAX_SEARCH_TEXT && text.chars().count() > MAX_SEARCH_TEXT {
        return Err(ApiError::field(
            "search",
            format!("holds at most {MAX_SEARCH_TEXT} characters"),
        ));
    }
    Ok(())
}

/// Text fields indexed beyond the resources' unique keys: `(resource path, field)`.
const INDEXED_FIELDS: &[(&str, &str)] = &[
    ("worker", "customerIdentifier"),
    ("deliverable", "identifier"),
];

const NUL_MESSAGE: &str = "text must not contain the NUL character (U+0000)";
const SURROGATE_MESSAGE: &str = "text must not contain a lone surrogate (\\ud800 to \\udfff without its pair): it is not a Unicode character";

/// What is wrong at a place in a JSON text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bad {
    Nul,
    Surrogate,
}

impl Bad {
    fn message(self) -> &'static str {
        match self {
            Bad::Nul => NUL_MESSAGE,
            Bad::Surrogate => SURROGATE_MESSAGE,
        }
    }
}

fn hex4(bytes: &[u8]) -> Option<u32> {
    let digits = bytes.get(..4)?;
    let text = std::str::from_utf8(digits).ok()?;
    u32::from_str_radix(text, 16).ok()
}

/// The first `\u` escape of a JSON text that is NUL or a lone surrogate: its byte offset and
/// what it is. A backslash appears in valid JSON only inside strings, always starting an
/// escape, so the escapes are found without parsing (text that is not JSON is left for the
/// parser to refuse).
fn first_bad_escape(bytes: &[u8]) -> Option<(usize, Bad)> {
    let mut i = 0;
    while let Some(found) = memchr::memchr(b'\\', &bytes[i..]) {
        let at = i + found;
        match bytes.get(at + 1) {
            Some(b'u') => {
                let Some(unit) = hex4(&bytes[at + 2..]) else {
                    i = at + 2;
                    continue;
                };
                match unit {
                    0 => return Some((at, Bad::Nul)),
                    0xD800..=0xDBFF => {
                        let low = (bytes.get(at + 6..at + 8) == Some(b"\\u"))
                            .then(|| hex4(&bytes[at + 8..]))
                            .flatten();
                        match low {
                            Some(0xDC00..=0xDFFF) => i = at + 12,
                            _ => return Some((at, Bad::Surrogate)),
                        }
                    }
                    0xDC00..=0xDFFF => return Some((at, Bad::Surrogate)),
                    _ => i = at + 6,
                }
            }
            Some(_) => i = at + 2,
            None => return None,
        }
    }
    None
}

/// One step of the path to a place in a JSON text.
enum Step {
    /// In an object: the last key read, and whether the next string is a key.
    Object(Option<String>, bool),
    /// In an array: the index of the current element.
    Array(usize),
}

/// Where byte `pos` of a JSON text is: the index of the element of a top-level array it is in
/// (a bulk PUT's record), and the field path inside it (`name`, `data.tags[2]`). A key that
/// holds the place names itself.
fn locate(bytes: &[u8], pos: usize) -> (Option<usize>, Option<String>) {
    let mut stack: Vec<Step> = Vec::new();
    let mut i = 0;
    while i < pos.min(bytes.len()) {
        match bytes[i] {
            b'"' => {
                // The string's end: the next quote not escaped.
                let mut j = i + 1;
                while j < bytes.len() && bytes[j] != b'"' {
                    j += if bytes[j] == b'\\' { 2 } else { 1 };
                }
                let inside = pos < j;
                if let Some(Step::Object(key, expecting)) = stack.last_mut()
                    && *expecting
                {
                    let text = String::from_utf8_lossy(&bytes[i + 1..j.min(bytes.len())]);
                    *key = Some(text.into_owned());
                    *expecting = false;
                }
                if inside {
                    break;
                }
                i = j + 1;
                continue;
            }
            b'{' => stack.push(Step::Object(None, true)),
            b'[' => stack.push(Step::Array(0)),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => match stack.last_mut() {
                Some(Step::Object(_, expecting)) => *expecting = true,
                Some(Step::Array(n)) => *n += 1,
                None => {}
            },
            _ => {}
        }
        i += 1;
    }
    let mut steps = stack.iter();
    let mut index = None;
    if let Some(Step::Array(n)) = stack.first() {
        index = Some(*n);
        steps.next();
    }
    let mut path = String::new();
    for step in steps {
        match step {
            Step::Object(Some(key), _) => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
            }
            Step::Object(None, _) => {}
            Step::Array(n) => path.push_str(&format!("[{n}]")),
        }
    }
    (index, (!path.is_empty()).then_some(path))
}

/// Refuses a JSON request body holding U+0000 or a lone surrogate (as `\u` escapes: raw
/// control characters and invalid UTF-8 are already malformed JSON), naming the field and,
/// in a top-level array, the element's index.
pub fn check_json(bytes: &[u8]) -> ApiResult<()> {
    let Some((at, bad)) = first_bad_escape(bytes) else {
        return Ok(());
    };
    let (index, field) = locate(bytes, at);
    let mut err = ApiError::violations(vec![Violation {
        field: field.or_else(|| index.is_none().then(|| "body".to_string())),
        index,
        message: bad.message().to_string(),
    }]);
    if index.is_some() {
        err.message = format!(
            "the batch was rejected and nothing was written: {}",
            err.message
        );
    }
    Err(err)
}

/// Percent-decodes a part of a URL (`+` as a space when `plus` is set).
fn percent_decode(raw: &str, plus: bool) -> Vec<u8> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 3 <= bytes.len() => {
                match std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                {
                    Some(b) => {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                    None => out.push(b'%'),
                }
            }
            b'+' if plus => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    out
}

/// What is wrong with decoded URL text, if anything.
fn bad_text(decoded: &[u8]) -> Option<Bad> {
    if memchr::memchr(0, decoded).is_some() {
        return Some(Bad::Nul);
    }
    // Invalid UTF-8 (a lone surrogate's `%ED%A0%80` among it) is no text.
    std::str::from_utf8(decoded).err().map(|_| Bad::Surrogate)
}

fn bad_url_text(field: &str, bad: Bad) -> ApiError {
    let message = match bad {
        Bad::Nul => NUL_MESSAGE,
        Bad::Surrogate => "must be UTF-8 text (a lone surrogate, such as %ED%A0%80, is not)",
    };
    ApiError::field(field, message)
}

/// Refuses a request whose path or query string decodes to text with U+0000 or bytes that
/// are not UTF-8, naming the query parameter (or `path`).
pub fn check_uri(uri: &axum::http::Uri) -> ApiResult<()> {
    if let Some(bad) = bad_text(&percent_decode(uri.path(), false)) {
        return Err(bad_url_text("path", bad));
    }
    let Some(query) = uri.query() else {
        return Ok(());
    };
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let name = percent_decode(name, true);
        if let Some(bad) = bad_text(&name) {
            return Err(bad_url_text("query string", bad));
        }
        if let Some(bad) = bad_text(&percent_decode(value, true)) {
            let name = String::from_utf8_lossy(&name);
            return Err(bad_url_text(&name, bad));
        }
    }
    Ok(())
}

/// The fields of a resource the database indexes by their text: its unique keys' fields and
/// [`INDEXED_FIELDS`].
pub fn indexed_fields(desc: &ResourceDesc) -> impl Iterator<Item = &'static str> + '_ {
    desc.unique
        .iter()
        .flat_map(|key| key.fields.iter().copied())
        .chain(
            INDEXED_FIELDS
                .iter()
                .filter(move |(path, _)| *path == desc.path)
                .map(|(_, field)| *field),
        )
}

fn field_value<'v>(record: &'v Value, dotted: &str) -> Option<&'v Value> {
    dotted.split('.').try_fold(record, |v, seg| v.get(seg))
}

/// The violation of a text over [`MAX_INDEXED_TEXT`] characters.
pub fn too_long(field: &str) -> Violation {
    Violation::field(
        field,
        format!("{field} holds at most {MAX_INDEXED_TEXT} characters"),
    )
}

/// Whether `text` is longer than [`MAX_INDEXED_TEXT`] characters (counted only past that
/// many bytes).
pub fn over_limit(text: &str) -> bool {
    text.len() > MAX_INDEXED_TEXT && text.chars().count() > MAX_INDEXED_TEXT
}

/// Refuses a record (as it is about to be stored) whose indexed text fields are too long; on
/// an update (`old`), only among the fields it changes, so a record stored before the limit
/// keeps taking changes of its other fields.
pub fn check_indexed_lengths(
    desc: &ResourceDesc,
    old: Option<&Value>,
    record: &Value,
) -> ApiResult<()> {
    let violations: Vec<Violation> = indexed_fields(desc)
        .filter(|f| {
            let new = field_value(record, f);
            new.and_then(Value::as_str).is_some_and(over_limit)
                && old.is_none_or(|old| field_value(old, f) != new)
        })
        .map(too_long)
        .collect();
    if violations.is_empty() {
        Ok(())
    } else {
        Err(ApiError::violations(violations))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bad(json: &str) -> Option<(Option<usize>, Option<String>, Bad)> {
        first_bad_escape(json.as_bytes()).map(|(at, b)| {
            let (i, f) = locate(json.as_bytes(), at);
            (i, f, b)
        })
    }

    #[test]
    fn nul_and_lone_surrogates_are_found_with_their_place() {
        assert_eq!(
            bad(r#"{"name": "a\u0000b"}"#),
            Some((None, Some("name".into()), Bad::Nul))
        );
        assert_eq!(
            bad(r#"[{"name": "ok"}, {"data": {"tags": ["x", "\ud800"]}}]"#),
            Some((Some(1), Some("data.tags[1]".into()), Bad::Surrogate))
        );
        assert_eq!(
            bad(r#"{"a\u0000": 1}"#),
            Some((None, Some("a\\u0000".into()), Bad::Nul))
        );
        assert_eq!(bad(r#"{"x": "\udc00"}"#).map(|b| b.2), Some(Bad::Surrogate));
        assert_eq!(bad(r#"{"x": "\ud83d\ude00 \\u0000 \u00e9 \"\\\""}"#), None);
        assert_eq!(bad(r#"{"x": "\ud83d"}"#).map(|b| b.2), Some(Bad::Surrogate));
        assert_eq!(
            bad(r#"{"x": "\ud83d\u0041"}"#).map(|b| b.2),
            Some(Bad::Surrogate)
        );
        assert_eq!(
            bad(r#"{"x": "\u0"}"#),
            None,
            "malformed escapes are the parser's"
        );
    }

    #[test]
    fn urls_with_nul_or_non_utf8_are_refused_naming_the_parameter() {
        let check =
            |u: &str| check_uri(&u.parse().unwrap()).map_err(|e| e.details[0].field.clone());
        assert!(check("/api/v2/worker?search=%25_%5C%27%22%3B--&name=a+b").is_ok());
        assert_eq!(
            check("/api/v2/worker?search=%00"),
            Err(Some("search".into()))
        );
        assert_eq!(
            check("/api/v2/worker?name=%ED%A0%80"),
            Err(Some("name".into()))
        );
        assert_eq!(check("/api/v2/worker/%00"), Err(Some("path".into())));
        assert_eq!(
            check("/api/v2/worker?%00=1"),
            Err(Some("query string".into()))
        );
        assert!(check("/api/v2/worker?name=%E2%9C%93%&x=%zz").is_ok());
    }
}
