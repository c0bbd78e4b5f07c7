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
