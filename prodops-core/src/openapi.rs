//! The OpenAPI schemas of core's types, behind the `openapi` feature.
//!
//! With the feature (the server, the CLI), `ToSchema` is utoipa's trait and derive, and every
//! type describes its JSON schema. Without it (a client's build), `#[derive(ToSchema)]` writes
//! nothing and every type has the empty `ToSchema` below, so a program using the SDK does not
//! compile utoipa or the schemas. What reads schemas (the OpenAPI document, `filter_fields`,
//! `field_types`, `api::request_fields`) exists with the feature only.

#[cfg(feature = "openapi")]
pub use utoipa::ToSchema;
#[cfg(feature = "openapi")]
pub use utoipa::openapi::RefOr;
#[cfg(feature = "openapi")]
pub use utoipa::openapi::schema::Schema;

#[cfg(not(feature = "openapi"))]
pub use prodops_core_derive::ToSchema;

/// Without the `openapi` feature: what every type is, schema or not.
#[cfg(not(feature = "openapi"))]
pub trait ToSchema {}

#[cfg(not(feature = "openapi"))]
impl<T: ?Sized> ToSchema for T {}

/// Without the `openapi` feature no schema exists: this type has no value.
#[cfg(not(feature = "openapi"))]
#[derive(Debug, Clone)]
pub enum Schema {}

/// Without the `openapi` feature: a schema, never a reference (no schema exists).
#[cfg(not(feature = "openapi"))]
pub type RefOr<T> = T;

/// Unicode White_Space, what Rust's `trim` removes, spelled out as the inside of a regular
/// expression's character class: `\s` means different sets in different regex dialects
/// (Python's includes U+001C to U+001F, ECMA-262's U+FEFF), so a pattern built on it would not
/// say what core's trimming does.
pub const WS_CHARS: &str =
    r"\t\n\x0B\f\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000";

/// A pattern that text which is not blank matches: one character that is not White_Space.
pub fn nonblank_pattern() -> String {
    format!("[^{WS_CHARS}]")
}

/// The name of a record's create form in the OpenAPI document (`WorkerInput`).
pub fn create_form_name(record: &str) -> String {
    format!("{record}Input")
}

/// The name of a record's PATCH form in the OpenAPI document (`WorkerPatch`).
pub fn patch_form_name(record: &str) -> String {
    format!("{record}Patch")
}

/// The name of the filter object of a record's query bodies in the OpenAPI document
/// (`WorkerFilter`): field paths and the values they equal.
pub fn filter_name(record: &str) -> String {
    format!("{record}Filter")
}

/// A request form of a record, as the server derives it from the record's schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// What a create takes (`POST /r`, each record of a bulk PUT).
    Create,
    /// What a PATCH takes.
    Patch,
}

/// A reference to the schema named `name`.
#[cfg(feature = "openapi")]
pub fn named(name: &str) -> RefOr<Schema> {
    utoipa::openapi::Ref::from_schema_name(name).into()
}

/// `schema` or `null`.
#[cfg(feature = "openapi")]
pub fn or_null(schema: impl Into<RefOr<Schema>>) -> RefOr<Schema> {
    use utoipa::openapi::schema::{AnyOfBuilder, ObjectBuilder, Type};
    let either = AnyOfBuilder::new()
        .item(schema)
        .item(ObjectBuilder::new().schema_type(Type::Null))
        .build();
    RefOr::T(Schema::AnyOf(either))
}

/// A schema rule a type's derived schema cannot carry (a requirement across fields, the
/// closed variants of an internally tagged enum): the type's schema name and the rule, which
/// the document applies to the type's component.
#[cfg(feature = "openapi")]
#[derive(Clone, Copy)]
pub struct TypeRule {
    pub name: fn() -> std::borrow::Cow<'static, str>,
    pub apply: fn(&mut serde_json::Value),
}

/// The [`TypeRule`] of `T`.
#[cfg(feature = "openapi")]
pub const fn rule<T: ToSchema>(apply: fn(&mut serde_json::Value)) -> TypeRule {
    TypeRule {
        name: T::name,
        apply,
    }
}

/// The variants of an internally tagged enum that refuses unknown fields
/// (`deny_unknown_fields`) refuse them too (utoipa leaves that out of `oneOf` variants).
#[cfg(feature = "openapi")]
pub fn closed_variants(schema: &mut serde_json::Value) {
    if let Some(variants) = schema.get_mut("oneOf").and_then(|v| v.as_array_mut()) {
        for v in variants {
            v["additionalProperties"] = serde_json::json!(false);
        }
    }
}
