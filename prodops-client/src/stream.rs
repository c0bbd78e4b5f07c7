//! Reading a `{"values": [...], ...}` answer as it arrives, one value at a time, without holding
//! the whole answer: for answers too large to buffer (a deliverable hierarchy of 100,000 nodes
//! is over 100 MB with its computed fields).
//!
//! [`Framer`] finds where each element of the `values` array begins and ends in the bytes as
//! they come (by brackets and quotes, strings skipped), so that each value's JSON text can be
//! parsed from one contiguous slice; `totalCount` is read from the rest.

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};

use crate::error::{Error, Result};

/// Splits the bytes of a `{"values": [{...}, ...], ...}` answer, fed in pieces of any size,
/// into the texts of the objects of its `values` array.
#[derive(Debug, Default)]
pub struct Framer {
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// Inside the `values` array.
    in_values: bool,
    /// Inside one of its values (the bytes so far are in `value`), at this depth of braces.
    in_value: bool,
    braces: usize,
    value: BytesMut,
    /// The answer's text outside nested values (its keys, `totalCount`, ...).
    top: Vec<u8>,
    done: bool,
    total_count: Option<u64>,
    ready: VecDeque<Bytes>,
}

fn bad(what: &str) -> Error {
    Error::Decode(format!("the answer is not a list of values: {what}"))
}

impl Framer {
    pub fn new() -> Framer {
        Framer::default()
    }

    /// The next complete value, if one was read.
    pub fn next_value(&mut self) -> Option<Bytes> {
        self.ready.pop_front()
    }

    /// The answer's `totalCount`, once the whole answer was read.
    pub fn total_count(&self) -> Option<u64> {
        self.total_count
    }

    /// Whether the whole answer was read.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Whether the top-level text read so far ends with the key `values` and its colon.
    fn at_values_key(&self) -> bool {
        let t = self.top.trim_ascii_end();
        let Some(t) = t.strip_suffix(b"[") else {
            return false;
        };
        let Some(t) = t.trim_ascii_end().strip_suffix(b":") else {
            return false;
        };
        t.trim_ascii_end().ends_with(b"\"values\"")
    }

    fn read_total_count(&mut self) {
        let key = b"\"totalCount\"";
        let Some(at) = self.top.windows(key.len()).position(|w| w == key) else {
            return;
        };
        let rest = self.top[at + key.len()..].trim_ascii_start();
        let Some(rest) = rest.strip_prefix(b":") else {
            return;
        };
        let rest = rest.trim_ascii_start();
        let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
        self.total_count = std::str::from_utf8(&rest[..digits])
            .ok()
            .and_then(|d| d.parse().ok());
    }

    /// Takes the next bytes of the answer.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<()> {
        // Where the bytes of the value in progress start in this chunk.
        let mut start = self.in_value.then_some(0);
        let mut j = 0;
        while j < chunk.len() {
            if self.in_value {
                // Inside a value only its end matters: its braces outside strings (arrays
                // balance on their own), found a run at a time.
                if self.escaped {
                    self.escaped = false;
                    j += 1;
                } else if self.in_string {
                    match memchr::memchr2(b'"', b'\\', &chunk[j..]) {
                        None => j = chunk.len(),
                        Some(k) if chunk[j + k] == b'\\' => {
                            self.escaped = true;
                            j += k + 1;
                        }
                        Some(k) => {
                            self.in_string = false;
                            j += k + 1;
                        }
                    }
                } else {
                    match memchr::memchr3(b'"', b'{', b'}', &chunk[j..]) {
                        None => j = chunk.len(),
                        Some(k) => {
                            let at = j + k;
                            j = at + 1;
                            match chunk[at] {
                                b'"' => self.in_string = true,
                                b'{' => self.braces += 1,
                                _ => {
                                    self.braces -= 1;
                                    if self.braces == 0 {
                                        let s = start.take().unwrap_or(0);
                                        self.value.extend_from_slice(&chunk[s..=at]);
                                        self.ready.push_back(self.value.split().freeze());
                                        self.in_value = false;
                                    }
                                }
                            }
                        }
                    }
                }
                continue;
            }
            let c = chunk[j];
            j += 1;
            if self.done {
                if c.is_ascii_whitespace() {
                    continue;
                }
                return Err(bad("bytes after its end"));
            }
            if self.depth == 1 {
                self.top.push(c);
            }
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if c == b'\\' {
                    self.escaped = true;
                } else if c == b'"' {
                    self.in_string = false;
                }
                continue;
            }
            match c {
                b'"' => {
                    if self.depth == 2 && self.in_values {
                        return Err(bad("a value that is not an object"));
                    }
                    self.in_string = true;
                }
                b'{' | b'[' => match self.depth {
                    0 if c != b'{' => return Err(bad("not an object")),
                    1 if c == b'[' && self.at_values_key() => {
                        self.in_values = true;
                        self.depth += 1;
                    }
                    2 if self.in_values => {
                        if c != b'{' {
                            return Err(bad("a value that is not an object"));
                        }
                        self.in_value = true;
                        self.braces = 1;
                        start = Some(j - 1);
                    }
                    _ => self.depth += 1,
                },
                b'}' | b']' => {
                    if self.depth == 0 {
                        return Err(bad("unbalanced brackets"));
                    }
                    self.depth -= 1;
                    match self.depth {
                        1 if self.in_values => self.in_values = false,
                        0 => {
                            self.done = true;
                            self.read_total_count();
                        }
                        _ => {}
                    }
                }
                b',' => {}
                _ if c.is_ascii_whitespace() => {}
                _ if self.depth == 2 && self.in_values => {
                    return Err(bad("a value that is not an object"));
                }
                _ if self.depth == 0 => return Err(bad("not an object")),
                _ => {}
            }
        }
        if let Some(s) = start
            && self.in_value
        {
            self.value.extend_from_slice(&chunk[s..]);
        }
        Ok(())
    }
}

/// A `{"values": [...], ...}` answer being read: its values' JSON texts in turn, as they
/// arrive ([`crate::Client::values_stream`]).
pub struct ValuesStream {
    response: reqwest::Response,
    framer: Framer,
}

impl ValuesStream {
    pub(crate) fn new(response: reqwest::Response) -> ValuesStream {
        ValuesStream {
            response,
            framer: Framer::new(),
        }
    }

    /// The JSON text of the next value, `None` after the last. An answer cut short (the
    /// connection closed, the server failed while sending) is an error, never a short list.
    pub async fn next_value(&mut self) -> Result<Option<Bytes>> {
        loop {
            if let Some(v) = self.framer.next_value() {
                return Ok(Some(v));
            }
            if self.framer.is_done() {
                return Ok(None);
            }
            match self
                .response
                .chunk()
                .await
                .map_err(|e| Error::Network(crate::NetworkError::from_reqwest(e)))?
            {
                Some(chunk) => self.framer.feed(&chunk)?,
                None => return Err(bad("it ended before its last value")),
            }
        }
    }

    /// The answer's `totalCount`, once every value was read.
    pub fn total_count(&self) -> Option<u64> {
        self.framer.total_count()
    }

    /// The feed cursor the answer is consistent with, from its `Prodops-Feed-Cursor` header
    /// (an export, `GET /r/export`): `GET /event?after=` it continues exactly where the answer
    /// ends (docs/events.md, "Exports").
    pub fn feed_cursor(&self) -> Option<&str> {
        self.response
            .headers()
            .get(prodops_core::event::FEED_CURSOR_HEADER)
            .and_then(|v| v.to_str().ok())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn frame(text: &[u8], piece: usize) -> Result<(Vec<Value>, Option<u64>, bool)> {
        let mut f = Framer::new();
        let mut out = Vec::new();
        for chunk in text.chunks(piece.max(1)) {
            f.feed(chunk)?;
            while let Some(v) = f.next_value() {
                out.push(serde_json::from_slice(&v).expect("a whole value"));
            }
        }
        Ok((out, f.total_count(), f.is_done()))
    }

    #[test]
    fn values_are_split_whatever_the_pieces() {
        let answer = json!({
            "values": [
                {"id": "a", "name": "brackets } ] { [ in \"strings\"", "computed": {"x": [[1], {"y": {}}]}},
                {"id": "b", "data": {}, "tags": [], "escaped": "back\\\\slash\\\"", "n": -1.5e-3},
                {}
            ],
            "totalCount": 3,
            "nextCursor": null
        });
        for text in [
            serde_json::to_vec(&answer).unwrap(),
            serde_json::to_vec_pretty(&answer).unwrap(),
        ] {
            for piece in [1, 2, 3, 7, 64, text.len()] {
                let (values, total, done) = frame(&text, piece).unwrap();
                assert_eq!(Value::Array(values), answer["values"], "pieces of {piece}");
                assert_eq!(total, Some(3));
                assert!(done);
            }
        }
    }

    #[test]
    fn other_members_and_key_order_do_not_matter() {
        let text =
            br#"{"totalCount": 2, "other": {"values": [1, 2]}, "values": [{"a": 1}, {"b": [2]}]}"#;
        let (values, total, done) = frame(text, 5).unwrap();
        assert_eq!(values, [json!({"a": 1}), json!({"b": [2]})]);
        assert_eq!(total, Some(2));
        assert!(done);
        let (values, _, done) = frame(br#"{"values": []}"#, 1).unwrap();
        assert!(values.is_empty() && done);
    }

    #[test]
    fn malformed_answers_are_errors_and_a_cut_answer_is_not_done() {
        for bad in [
            &b"[1, 2]"[..],
            br#"{"values": [1, 2]}"#,
            br#"{"values": ["a"]}"#,
            br#"{"values": []}} "#,
            br#"{"values": []} x"#,
        ] {
            assert!(frame(bad, 3).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        let (values, _, done) = frame(br#"{"values": [{"a": 1}, {"b": "#, 4).unwrap();
        assert_eq!(values.len(), 1);
        assert!(!done);
    }
}
