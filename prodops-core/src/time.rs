//! Timestamps on the wire: RFC 3339 in UTC, as chrono writes and reads them, with a fast path
//! for the one form the API itself writes (`2024-01-02T08:00:00.123Z`).
//!
//! Every record carries two or three timestamps, and bulk writes and imports read and write
//! every record: chrono's general parser and its formatter (one `write_char` per character)
//! were a sixth of the CPU of a worker import. The fast paths give exactly what chrono gives
//! (the tests compare them), and anything else goes to chrono.
//!
//! Use on a field: `#[serde(with = "crate::time::iso")]`, or for an optional one
//! `#[serde(default, with = "crate::time::iso_opt")]`.

use chrono::{DateTime, Datelike, FixedOffset, NaiveDate, Timelike, Utc};
use serde::de::{self, Visitor};
use serde::{Deserializer, Serializer};

/// Writes `t` as chrono's `Serialize` does (RFC 3339, `Z`, as many fraction digits as needed:
/// none, 3, 6 or 9) into `buf`, answering the text; `None` for what the fast path does not
/// cover (years outside 0..=9999, leap seconds).
pub fn format_into<'b>(t: &DateTime<Utc>, buf: &'b mut [u8; 32]) -> Option<&'b str> {
    let year = t.year();
    let nanos = t.nanosecond();
    if !(0..=9999).contains(&year) || nanos >= 1_000_000_000 {
        return None;
    }
    // Writes `value` as `digits` decimal digits at `at`.
    fn put(buf: &mut [u8; 32], at: usize, mut value: u32, digits: usize) {
        for i in (at..at + digits).rev() {
            buf[i] = b'0' + (value % 10) as u8;
            value /= 10;
        }
    }
    buf[..20].copy_from_slice(b"0000-00-00T00:00:00.");
    put(buf, 0, year as u32, 4);
    put(buf, 5, t.month(), 2);
    put(buf, 8, t.day(), 2);
    put(buf, 11, t.hour(), 2);
    put(buf, 14, t.minute(), 2);
    put(buf, 17, t.second(), 2);
    let (fraction, digits) = if nanos == 0 {
        (0, 0)
    } else if nanos.is_multiple_of(1_000_000) {
        (nanos / 1_000_000, 3)
    } else if nanos.is_multiple_of(1_000) {
        (nanos / 1_000, 6)
    } else {
        (nanos, 9)
    };
    let mut n = 19;
    if digits > 0 {
        put(buf, 20, fraction, digits);
        n = 20 + digits;
    }
    buf[n] = b'Z';
    n += 1;
    std::str::from_utf8(&buf[..n]).ok()
}

/// Reads the text chrono's `Deserialize` reads, with a fast path for
/// `YYYY-MM-DDTHH:MM:SS[.fraction]Z`.
pub fn parse(text: &str) -> Result<DateTime<Utc>, chrono::ParseError> {
    if let Some(t) = parse_plain(text.as_bytes()) {
        return Ok(t);
    }
    text.parse::<DateTime<FixedOffset>>()
        .map(|t| t.with_timezone(&Utc))
}

fn parse_plain(b: &[u8]) -> Option<DateTime<Utc>> {
    if b.len() < 20 || b[b.len() - 1] != b'Z' {
        return None;
    }
    let digits = |range: std::ops::Range<usize>| -> Option<u32> {
        let mut v = 0u32;
        for &c in &b[range] {
            if !c.is_ascii_digit() {
                return None;
            }
            v = v * 10 + u32::from(c - b'0');
        }
        Some(v)
    };
    if b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let nanos = match b.len() {
        20 => 0,
        22..=30 if b[19] == b'.' => {
            let fraction = &b[20..b.len() - 1];
            digits(20..b.len() - 1)? * 10u32.pow(9 - fraction.len() as u32)
        }
        _ => return None,
    };
    let date = NaiveDate::from_ymd_opt(digits(0..4)? as i32, digits(5..7)?, digits(8..10)?)?;
    let time = date.and_hms_nano_opt(digits(11..13)?, digits(14..16)?, digits(17..19)?, nanos)?;
    Some(time.and_utc())
}

struct TimeVisitor;

impl Visitor<'_> for TimeVisitor {
    type Value = DateTime<Utc>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an RFC 3339 formatted date and time string")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        parse(v).map_err(E::custom)
    }
}

/// `#[serde(with = "crate::time::iso")]` for a `DateTime<Utc>`.
pub mod iso {
    use super::*;

    pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        let mut buf = [0u8; 32];
        match format_into(t, &mut buf) {
            Some(text) => s.serialize_str(text),
            None => serde::Serialize::serialize(t, s),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        d.deserialize_str(TimeVisitor)
    }
}

/// `#[serde(default, with = "crate::time::iso_opt")]` for an `Option<DateTime<Utc>>`.
pub mod iso_opt {
    use super::*;

    pub fn serialize<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_some(&Wrapped(t)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
        struct OptVisitor;
        impl<'de> Visitor<'de> for OptVisitor {
            type Value = Option<DateTime<Utc>>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an RFC 3339 formatted date and time string or null")
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_str(TimeVisitor).map(Some)
            }
        }
        d.deserialize_option(OptVisitor)
    }

    struct Wrapped<'a>(&'a DateTime<Utc>);

    impl serde::Serialize for Wrapped<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            super::iso::serialize(self.0, s)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use proptest::prelude::*;

    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    struct Fast {
        #[serde(with = "iso")]
        t: DateTime<Utc>,
        #[serde(default, with = "iso_opt")]
        o: Option<DateTime<Utc>>,
    }

    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    struct Chrono {
        t: DateTime<Utc>,
        o: Option<DateTime<Utc>>,
    }

    proptest! {
        #[test]
        fn writes_and_reads_as_chrono_does(
            secs in -80_000_000_000i64..300_000_000_000i64,
            nanos in prop_oneof![Just(0u32), (0u32..1000).prop_map(|m| m * 1_000_000),
                                 (0u32..1_000_000).prop_map(|u| u * 1000), 0u32..1_000_000_000],
            some in any::<bool>(),
        ) {
            let t = Utc.timestamp_opt(secs, nanos).single().unwrap();
            let fast = Fast { t, o: some.then_some(t) };
            let reference = Chrono { t, o: some.then_some(t) };
            let text = serde_json::to_string(&fast).unwrap();
            prop_assert_eq!(&text, &serde_json::to_string(&reference).unwrap());
            let back: Fast = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(back, fast);
        }

        #[test]
        fn reads_any_text_as_chrono_does(text in "[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{0,11})?([Zz]|[+-][0-9]{2}:[0-9]{2})") {
            let reference = text.parse::<DateTime<FixedOffset>>().map(|t| t.with_timezone(&Utc));
            prop_assert_eq!(parse(&text).ok(), reference.ok());
        }
    }

    #[test]
    fn missing_and_null_optional_fields_read_as_none() {
        let f: Fast = serde_json::from_str(r#"{"t":"2024-01-02T08:00:00.123Z"}"#).unwrap();
        assert_eq!(f.o, None);
        let f: Fast = serde_json::from_str(r#"{"t":"2024-01-02T08:00:00Z","o":null}"#).unwrap();
        assert_eq!(f.o, None);
        assert!(serde_json::from_str::<Fast>(r#"{"t":"2024-13-02T08:00:00Z"}"#).is_err());
        assert!(serde_json::from_str::<Fast>(r#"{"t":"yesterday"}"#).is_err());
    }
}
