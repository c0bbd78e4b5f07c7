//! Whole numbers in JSON: JSON does not tell `5` from `5.0`, and neither does the OpenAPI
//! document's `type: integer`, so an integer field takes either (and refuses `5.5`). Integer
//! fields hold at most [`MAX_SAFE`] in size, the integers every JSON reader (a JavaScript
//! client's included) reads exactly; the OpenAPI document says so as `minimum`/`maximum`.

/// The largest integer an integer field holds (2^53 - 1); the smallest is its negation.
pub const MAX_SAFE: i64 = 9_007_199_254_740_991;

use serde::de::{self, Deserializer, Visitor};

struct Whole;

impl Visitor<'_> for Whole {
    type Value = i64;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a whole number from -(2^53 - 1) to 2^53 - 1")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<i64, E> {
        if (-MAX_SAFE..=MAX_SAFE).contains(&v) {
            Ok(v)
        } else {
            Err(E::invalid_value(de::Unexpected::Signed(v), &self))
        }
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<i64, E> {
        match i64::try_from(v) {
            Ok(n) if n <= MAX_SAFE => Ok(n),
            _ => Err(E::invalid_value(de::Unexpected::Unsigned(v), &self)),
        }
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<i64, E> {
        // Every whole f64 within the safe range is exact.
        if v.fract() == 0.0 && v.abs() <= MAX_SAFE as f64 {
            Ok(v as i64)
        } else {
            Err(E::invalid_value(de::Unexpected::Float(v), &self))
        }
    }
}

/// `#[serde(deserialize_with = "crate::number::whole")]` on an integer field.
pub fn whole<'de, D: Deserializer<'de>, T: TryFrom<i64>>(d: D) -> Result<T, D::Error> {
    let n = d.deserialize_any(Whole)?;
    T::try_from(n).map_err(|_| {
        de::Error::invalid_value(de::Unexpected::Signed(n), &"a whole number in range")
    })
}

/// [`whole`] of an optional integer field (null or absent is `None`).
pub fn whole_opt<'de, D: Deserializer<'de>, T: TryFrom<i64>>(d: D) -> Result<Option<T>, D::Error> {
    struct Opt;
    impl<'de> Visitor<'de> for Opt {
        type Value = Option<i64>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a whole number or null")
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(Whole).map(Some)
        }
    }
    match d.deserialize_option(Opt)? {
        None => Ok(None),
        Some(n) => T::try_from(n).map(Some).map_err(|_| {
            de::Error::invalid_value(de::Unexpected::Signed(n), &"a whole number in range")
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Deserialize, Debug, PartialEq)]
    struct T {
        #[serde(default, deserialize_with = "super::whole")]
        n: i64,
        #[serde(default, deserialize_with = "super::whole_opt")]
        m: Option<u64>,
    }

    #[test]
    fn whole_floats_read_as_integers() {
        let t: T = serde_json::from_value(json!({"n": 5.0, "m": 7.0})).unwrap();
        assert_eq!(t, T { n: 5, m: Some(7) });
        let t: T = serde_json::from_str(r#"{"n": -3, "m": null}"#).unwrap();
        assert_eq!(t, T { n: -3, m: None });
        assert!(serde_json::from_value::<T>(json!({"n": 5.5})).is_err());
        assert!(serde_json::from_value::<T>(json!({"n": "5"})).is_err());
        assert!(serde_json::from_value::<T>(json!({"m": -1})).is_err());
        assert!(serde_json::from_value::<T>(json!({"n": 1e30})).is_err());
        assert!(serde_json::from_str::<T>(r#"{"n": 9007199254740992}"#).is_err());
        assert!(serde_json::from_str::<T>(r#"{"n": -9007199254740992}"#).is_err());
        assert!(serde_json::from_str::<T>(r#"{"n": -9223372036854775809}"#).is_err());
        let t: T = serde_json::from_str(r#"{"n": 9007199254740991}"#).unwrap();
        assert_eq!(t.n, super::MAX_SAFE);
        let t: T = serde_json::from_value(json!({})).unwrap();
        assert_eq!(t, T { n: 0, m: None });
    }
}
