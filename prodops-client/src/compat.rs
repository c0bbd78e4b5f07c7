//! Reading answers of a newer server: fields this client's types do not know are set aside,
//! never an error.
//!
//! Core's types refuse unknown fields (`deny_unknown_fields`): the server must refuse a request
//! that names a field it does not know. A client must not refuse an answer for the same reason,
//! or every client built before a server release that adds a field breaks. So every answer this
//! client reads goes through [`from_slice`]: the type's own (strict) reading first, which costs
//! nothing when client and server agree; when that fails, the answer is read again with every
//! field a struct does not declare set aside, at any depth, under its JSON Pointer
//! ([`Unknown`]). [`Lenient<T>`] keeps them for a caller who wants them.
//!
//! ```
//! use prodops_client::compat::{self, Lenient};
//! use prodops_client::worker::Worker;
//! let text = br#"{"id":"0191c3a8-0000-7000-8000-000000000001",
//!   "organizationId":"0191c3a8-0000-7000-8000-000000000002","name":"Ann",
//!   "createdAt":"2025-01-01T00:00:00Z","updatedAt":"2025-01-01T00:00:00Z",
//!   "badgeColour":"red"}"#;
//! let worker: Worker = compat::from_slice(text).unwrap();
//! assert_eq!(worker.name, "Ann");
//! let kept: Lenient<Worker> = compat::from_slice(text).unwrap();
//! assert_eq!(kept.unknown["/badgeColour"], "red");
//! assert_eq!(kept.name, "Ann"); // derefs to the record
//! ```

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::{Deref, DerefMut};

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, IntoDeserializer, MapAccess,
    SeqAccess, VariantAccess, Visitor,
};
use serde::{Deserialize, Serialize};
use serde_json::{Error, Map, Value};

/// The fields an answer carried that this client's types do not declare, each under its JSON
/// Pointer in the answer (`/newField`, `/values/3/computed/newField`).
pub type Unknown = BTreeMap<String, Value>;

/// Reads an answer as `T`, setting aside the fields `T` does not declare (at any depth).
///
/// ```
/// #[derive(serde::Deserialize)]
/// #[serde(deny_unknown_fields)]
/// struct Point { x: i32 }
/// let p: Point = prodops_client::compat::from_slice(br#"{"x":1,"y":2}"#).unwrap();
/// assert_eq!(p.x, 1);
/// ```
pub fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Error> {
    match serde_json::from_slice::<T>(bytes) {
        Ok(value) => Ok(value),
        Err(strict) => {
            // Not JSON at all: the strict error says where.
            let value: Value = serde_json::from_slice(bytes).map_err(|_| strict)?;
            from_value_keeping(&value).map(|(t, _)| t)
        }
    }
}

/// Reads `value` as `T`, answering the fields `T` does not declare beside it.
///
/// ```
/// #[derive(serde::Deserialize)]
/// #[serde(deny_unknown_fields)]
/// struct Point { x: i32 }
/// let (p, unknown) = prodops_client::compat::from_value_keeping::<Point>(
///     &serde_json::json!({"x": 1, "y": 2})).unwrap();
/// assert_eq!((p.x, &unknown["/y"]), (1, &serde_json::json!(2)));
/// ```
pub fn from_value_keeping<T: DeserializeOwned>(value: &Value) -> Result<(T, Unknown), Error> {
    let mut dropped = BTreeSet::new();
    // Each round sets aside one more field that a buffering reader (a flattened struct, an
    // internally tagged enum) refused: those see whole objects, not the fields they declare.
    for _ in 0..256 {
        let state = RefCell::new(State {
            unknown: Unknown::new(),
            opaque: Vec::new(),
            dropped: &dropped,
        });
        let result = T::deserialize(Lenient_ {
            value,
            path: String::new(),
            state: &state,
        });
        let state = state.into_inner();
        match result {
            Ok(t) => return Ok((t, state.unknown)),
            Err(e) => {
                let message = e.to_string();
                let Some(field) = message
                    .strip_prefix("unknown field `")
                    .and_then(|rest| rest.split('`').next())
                else {
                    return Err(e);
                };
                let mut found = false;
                for path in state.opaque {
                    let holds = pointer(value, &path)
                        .and_then(Value::as_object)
                        .is_some_and(|o| o.contains_key(field));
                    if holds && dropped.insert((path, field.to_string())) {
                        found = true;
                    }
                }
                if !found {
                    return Err(e);
                }
            }
        }
    }
    Err(de::Error::custom("too many unknown fields"))
}

/// [`from_slice`] as core's [`JsonReader`](prodops_core::api::JsonReader): how the client reads
/// every declared action's answer.
pub struct Reader;

impl prodops_core::api::JsonReader for Reader {
    fn read<T: DeserializeOwned>(body: &[u8]) -> Result<T, Error> {
        from_slice(body)
    }
}

/// A value read leniently with the fields its type does not declare kept beside it. Derefs to
/// the value; serializes as the value alone.
///
/// ```no_run
/// # async fn run(client: prodops_client::Client) -> prodops_client::Result<()> {
/// use prodops_client::{ListParams, worker::Worker};
/// use futures::TryStreamExt;
/// let workers = client.resource::<Worker>().keeping_unknown();
/// let all: Vec<_> = workers.list(ListParams::new()).try_collect().await?;
/// for w in &all {
///     println!("{} {:?}", w.name, w.unknown.get("/badgeColour"));
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Lenient<T> {
    /// The value, as far as this client's type reads it.
    pub value: T,
    /// What the answer carried beyond it, by JSON Pointer relative to the value.
    pub unknown: Unknown,
}

impl<T> Deref for Lenient<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T> DerefMut for Lenient<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.value
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let (value, unknown) = from_value_keeping(&value).map_err(de::Error::custom)?;
        Ok(Lenient { value, unknown })
    }
}

impl<T: Serialize> Serialize for Lenient<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(serializer)
    }
}

struct State<'d> {
    unknown: Unknown,
    /// Objects handed out whole (to a `deserialize_any` or `deserialize_map`), by pointer.
    opaque: Vec<String>,
    /// `(object pointer, key)` set aside in this reading.
    dropped: &'d BTreeSet<(String, String)>,
}

fn pointer<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    if path.is_empty() {
        Some(value)
    } else {
        value.pointer(path)
    }
}

fn child(path: &str, key: &str) -> String {
    format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// The lenient deserializer over one node of a JSON value.
struct Lenient_<'a, 's, 'd> {
    value: &'a Value,
    path: String,
    state: &'s RefCell<State<'d>>,
}

impl<'a, 's, 'd> Lenient_<'a, 's, 'd> {
    fn at(&self, value: &'a Value, path: String) -> Lenient_<'a, 's, 'd> {
        Lenient_ {
            value,
            path,
            state: self.state,
        }
    }

    fn visit_object<V: Visitor<'a>>(
        self,
        map: &'a Map<String, Value>,
        fields: Option<&'static [&'static str]>,
        visitor: V,
    ) -> Result<V::Value, Error> {
        let mut entries = Vec::with_capacity(map.len());
        {
            let mut state = self.state.borrow_mut();
            if fields.is_none() {
                state.opaque.push(self.path.clone());
            }
            for (k, v) in map {
                let known = match fields {
                    Some(fields) => fields.contains(&k.as_str()),
                    None => !state.dropped.contains(&(self.path.clone(), k.clone())),
                };
                if known {
                    entries.push((k, v));
                } else {
                    state.unknown.insert(child(&self.path, k), v.clone());
                }
            }
        }
        visitor.visit_map(ObjectAccess {
            entries: entries.into_iter(),
            value: None,
            parent: self,
        })
    }

    fn visit_array<V: Visitor<'a>>(
        self,
        items: &'a [Value],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let len = items.len();
        let mut access = ArrayAccess {
            items: items.iter().enumerate(),
            parent: &self,
        };
        let out = visitor.visit_seq(&mut access)?;
        if access.items.len() == 0 {
            Ok(out)
        } else {
            Err(de::Error::invalid_length(len, &"fewer elements in array"))
        }
    }
}

struct ObjectAccess<'a, 's, 'd> {
    entries: std::vec::IntoIter<(&'a String, &'a Value)>,
    value: Option<(&'a String, &'a Value)>,
    parent: Lenient_<'a, 's, 'd>,
}

impl<'de, 's, 'd> MapAccess<'de> for ObjectAccess<'de, 's, 'd> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        match self.entries.next() {
            Some((k, v)) => {
                self.value = Some((k, v));
                seed.deserialize(k.as_str().into_deserializer()).map(Some)
            }
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let (k, v) = self
            .value
            .take()
            .ok_or_else(|| <Error as de::Error>::custom("value is missing"))?;
        seed.deserialize(self.parent.at(v, child(&self.parent.path, k)))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

struct ArrayAccess<'a, 'p, 's, 'd> {
    items: std::iter::Enumerate<std::slice::Iter<'a, Value>>,
    parent: &'p Lenient_<'a, 's, 'd>,
}

impl<'de, 'p, 's, 'd> SeqAccess<'de> for &mut ArrayAccess<'de, 'p, 's, 'd> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        match self.items.next() {
            Some((i, v)) => seed
                .deserialize(self.parent.at(v, format!("{}/{i}", self.parent.path)))
                .map(Some),
            None => Ok(None),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

struct Variant<'a, 's, 'd> {
    name: &'a str,
    content: Option<Lenient_<'a, 's, 'd>>,
}

impl<'de, 's, 'd> EnumAccess<'de> for Variant<'de, 's, 'd> {
    type Error = Error;
    type Variant = Self;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self), Error> {
        let name = seed.deserialize(self.name.into_deserializer())?;
        Ok((name, self))
    }
}

impl<'de, 's, 'd> VariantAccess<'de> for Variant<'de, 's, 'd> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        match self.content {
            None => Ok(()),
            Some(content) => Deserialize::deserialize(content),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        match self.content {
            Some(content) => seed.deserialize(content),
            None => Err(de::Error::invalid_type(
                de::Unexpected::UnitVariant,
                &"newtype variant",
            )),
        }
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        match self.content {
            Some(content) => content.deserialize_seq(visitor),
            None => Err(de::Error::invalid_type(
                de::Unexpected::UnitVariant,
                &"tuple variant",
            )),
        }
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.content {
            Some(content) => content.deserialize_struct("", fields, visitor),
            None => Err(de::Error::invalid_type(
                de::Unexpected::UnitVariant,
                &"struct variant",
            )),
        }
    }
}

macro_rules! delegate {
    ($($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                self.value.$method(visitor)
            }
        )*
    };
}

impl<'de, 's, 'd> Deserializer<'de> for Lenient_<'de, 's, 'd> {
    type Error = Error;

    delegate! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
        deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char deserialize_str
        deserialize_string deserialize_unit deserialize_identifier deserialize_ignored_any
    }

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Array(items) => self.visit_array(items, visitor),
            Value::Object(map) => self.visit_object(map, None, visitor),
            other => other.deserialize_any(visitor),
        }
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Array(items) => self.visit_array(items, visitor),
            other => other.deserialize_bytes(visitor),
        }
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.value.deserialize_unit_struct(name, visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        if name == "$serde_json::private::RawValue" {
            return self.value.deserialize_newtype_struct(name, visitor);
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Array(items) => self.visit_array(items, visitor),
            other => other.deserialize_seq(visitor),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Object(map) => self.visit_object(map, None, visitor),
            other => other.deserialize_map(visitor),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.value {
            Value::Object(map) => self.visit_object(map, Some(fields), visitor),
            Value::Array(items) => self.visit_array(items, visitor),
            other => other.deserialize_struct(name, fields, visitor),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.value {
            Value::String(s) => visitor.visit_enum(Variant {
                name: s,
                content: None,
            }),
            Value::Object(map) if map.len() == 1 => {
                let (k, v) = map.iter().next().expect("one entry");
                let content = self.at(v, child(&self.path, k));
                visitor.visit_enum(Variant {
                    name: k,
                    content: Some(content),
                })
            }
            other => other.deserialize_enum(name, variants, visitor),
        }
    }

    fn is_human_readable(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Inner {
        a: u32,
        #[serde(default)]
        tags: Vec<String>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Totals {
        n: f64,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Row {
        id: String,
        #[serde(flatten)]
        totals: Totals,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
    enum Tagged {
        One { x: u32 },
        Two,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Outer {
        inner: Inner,
        list: Vec<Inner>,
        maybe: Option<Inner>,
        rows: Vec<Row>,
        tagged: Tagged,
        free: Value,
        map: BTreeMap<String, Inner>,
    }

    #[test]
    fn unknown_fields_at_every_level_are_set_aside() {
        let v = json!({
            "inner": {"a": 1, "new": 1},
            "list": [{"a": 2}, {"a": 3, "new": {"deep": true}}],
            "maybe": {"a": 4, "new/x": 2},
            "rows": [{"id": "r", "n": 1.5, "new": 3}],
            "tagged": {"type": "one", "x": 5, "new": 4},
            "free": {"anything": 1},
            "map": {"k": {"a": 6, "new": 5}},
            "new": 6
        });
        let (outer, unknown) = from_value_keeping::<Outer>(&v).unwrap();
        assert_eq!(outer.list[1].a, 3);
        assert_eq!(outer.rows[0].totals.n, 1.5);
        assert_eq!(outer.tagged, Tagged::One { x: 5 });
        assert_eq!(outer.free, json!({"anything": 1}));
        let keys: Vec<&str> = unknown.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "/inner/new",
                "/list/1/new",
                "/map/k/new",
                "/maybe/new~1x",
                "/new",
                "/rows/0/new",
                "/tagged/new"
            ]
        );
        // The strict reading is unchanged for what it reads.
        assert!(serde_json::from_value::<Outer>(v).is_err());
        assert_eq!(
            from_slice::<Tagged>(br#"{"type":"two","later":1}"#).unwrap(),
            Tagged::Two
        );
    }

    #[test]
    fn wrong_types_are_still_errors() {
        let e = from_slice::<Inner>(br#"{"a":"x","new":1}"#).unwrap_err();
        assert!(e.to_string().contains("invalid type"), "{e}");
        assert!(from_slice::<Inner>(br#"{"new":1}"#).is_err());
        assert!(from_slice::<Inner>(b"{").is_err());
    }
}
