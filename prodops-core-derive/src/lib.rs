//! `#[derive(ToSchema)]` that writes nothing, with the `#[schema(...)]` helper attribute
//! accepted: what `prodops-core` derives in place of utoipa's when its `openapi` feature is off
//! (the client's build), so that a client does not compile the OpenAPI schemas it never reads.

use proc_macro::TokenStream;

/// Writes nothing; the `#[schema(...)]` attributes of the type are accepted and ignored.
#[proc_macro_derive(ToSchema, attributes(schema))]
pub fn to_schema(_input: TokenStream) -> TokenStream {
    TokenStream::new()
}
