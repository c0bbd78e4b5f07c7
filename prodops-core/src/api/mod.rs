//! The action endpoints of the API (spec 4.2 to 4.13), each declared once.
//!
//! The standard endpoints of a resource follow from its [`ResourceDesc`](crate::ResourceDesc).
//! Everything else the API serves (produce, consume, progress, schedule, receive, allocate,
//! versions, links, member actions, ...) is an *action*, declared here by one type that
//! implements [`Endpoint`]: its method and path with named parameters, the permissions a key
//! needs, its path, query, request and answer types, its success status, its summary, and its
//! command-line form. From that one declaration come:
//!
//! - the server's route (`prodops-server` binds a handler to each endpoint type; an endpoint
//!   without a handler does not compile, see [`for_each_action!`](crate::for_each_action));
//! - the OpenAPI operation (path parameters, query parameters, request and answer schemas from
//!   the types' `ToSchema`, the status, the summary);
//! - the typed client method (`prodops_client::Client::call::<E>`, and the named methods built
//!   on it);
//! - the CLI command (`prodops <command> <verb>`, one positional argument per path parameter,
//!   one flag per query parameter and per field of the request type; [`Cli::flags`] only
//!   renames or explains a flag where that reads better).
//!
//! The declarations live with their resource family (`api::production`, `api::delivery`, ...);
//! [`ACTIONS`] lists them all, and the agreement tests of each crate walk it.
//!
//! ```
//! use prodops_core::api::{self, Endpoint};
//! let produce = &api::production::Produce::DESC;
//! assert_eq!(produce.method.as_str(), "POST");
//! assert_eq!(produce.path, "/production/produce");
//! assert!(api::ACTIONS.iter().any(|a| a.operation_id == "production_produce"));
//! ```

use std::fmt::Write as _;

use crate::openapi::ToSchema;
use crate::openapi::{RefOr, Schema};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub mod bom;
pub mod deliverable;
pub mod delivery;
pub mod document;
pub mod event;
pub mod inventory;
pub mod member;
pub mod notification;
pub mod production;
pub mod qc;
pub mod webhook;

/// The schemas a document collects while it describes operations: `(name, schema)`.
pub type Schemas = Vec<(String, RefOr<Schema>)>;

/// Adds a type's schema (and those it names) to `schemas`; answers a reference to it.
pub type SchemaFn = fn(&mut Schemas) -> RefOr<Schema>;

/// [`SchemaFn`] of a type with a `ToSchema`.
#[cfg(feature = "openapi")]
pub fn schema_of<T: ToSchema>(schemas: &mut Schemas) -> RefOr<Schema> {
    T::schemas(schemas);
    schemas.push((T::name().into_owned(), T::schema()));
    utoipa::openapi::Ref::from_schema_name(T::name()).into()
}

/// Without the `openapi` feature no schema exists; a declaration still names this function.
#[cfg(not(feature = "openapi"))]
pub fn schema_of<T: ?Sized>(_: &mut Schemas) -> RefOr<Schema> {
    panic!("prodops-core is built without its `openapi` feature")
}

/// An HTTP method of an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HttpMethod {
    Get,
    Post,
    Patch,
    Delete,
}

impl HttpMethod {
    /// `GET`, `POST`, ...
    pub const fn as_str(self) -> &'static str {
        match self {
            HttpMethod::Get => "GET",
            HttpMethod::Post => "POST",
            HttpMethod::Patch => "PATCH",
            HttpMethod::Delete => "DELETE",
        }
    }
}

/// One of the four actions of a permission (`Item.Update`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Perm {
    Read,
    Create,
    Update,
    Delete,
}

impl Perm {
    /// `Read`, `Create`, `Update` or `Delete`, as permissions spell them.
    pub const fn as_str(self) -> &'static str {
        match self {
            Perm::Read => "Read",
            Perm::Create => "Create",
            Perm::Update => "Update",
            Perm::Delete => "Delete",
        }
    }
}

/// Who may call an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// An API key holding every one of these permissions (`("Item", Perm::Update)`). The
    /// server checks them before the handler runs; a handler checks only what depends on the
    /// request (named in the action's description).
    Key(&'static [(&'static str, Perm)]),
    /// An API key; what it needs depends on the request, and the handler checks it (the
    /// description says what).
    KeyChecked,
    /// An API key of an administrator (the `admin` permission).
    Admin,
    /// No API key: the request carries its own credential (an invitation token, a signed link).
    Open,
}

/// The request body of an action.
#[derive(Debug, Clone, Copy)]
pub enum RequestBody {
    /// None is read.
    None,
    /// JSON; `schema` is `None` where the server describes the schema itself (a shape no core
    /// type has). `required: false`: the body may be left out.
    Json {
        schema: Option<SchemaFn>,
        required: bool,
    },
    /// The raw bytes of a file, with its `Content-Type`.
    Bytes,
}

/// The successful answer of an action.
#[derive(Debug, Clone, Copy)]
pub enum AnswerBody {
    /// No body (204).
    Empty,
    /// A JSON value; `None`: a shape the server describes itself.
    Json(Option<SchemaFn>),
    /// `{"value": ...}`, how the production and BOM actions answer (spec 4.4, 4.5).
    Value(SchemaFn),
    /// `{"values": [...], "totalCount": N}`; `None`: free-form values.
    Page(Option<SchemaFn>),
    /// Raw bytes (a file).
    Bytes,
}

/// What a path, query or flag value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// A UUID.
    Uuid,
    /// UUIDs: a query parameter repeated (or comma-separated), a JSON array in a body.
    UuidList,
    /// A whole number.
    Integer,
    /// Text.
    Text,
}

/// One query parameter of an action.
#[derive(Debug, Clone, Copy)]
pub struct QueryParam {
    pub name: &'static str,
    pub kind: ParamKind,
    pub required: bool,
    pub description: &'static str,
    /// The values it takes beyond its kind, as the OpenAPI document states them (the server
    /// refuses others with 400).
    pub values: ParamValues,
}

/// The values a query parameter takes beyond its [`ParamKind`]. The last five stand for what
/// the server's standard endpoints take (their bounds, patterns and wording are the engine's,
/// built from the registry), so that an action reading the same parameters is described as
/// they are.
#[derive(Debug, Clone, Copy)]
pub enum ParamValues {
    /// Any value of its kind.
    Any,
    /// A whole number from `min` to `max`.
    Range { min: u64, max: u64 },
    /// One of these words.
    OneOf(&'static [&'static str]),
    /// Text matching the regular expression this function builds (a pattern computed from
    /// core's rules or the registry).
    Pattern(fn() -> String),
    /// `page` of a standard list.
    Page,
    /// `pageSize` of a standard list.
    PageSize,
    /// `search` over the search columns of the resource at this path, as its list takes it.
    SearchOf(&'static str),
    /// `sort` by the stored fields of the resource at this path, as its list takes it.
    SortOf(&'static str),
    /// Field paths of the resource at this path, comma-separated, naming at least one (a
    /// `select`, as its query takes it).
    FieldsOf(&'static str),
}

/// An answer of an action beside its success and the error answers every operation has (a
/// feed's 410, say), for the OpenAPI document.
#[derive(Debug, Clone, Copy)]
pub struct OtherAnswer {
    pub status: u16,
    /// What it means and what to do.
    pub description: &'static str,
    /// Its body's JSON schema.
    pub schema: fn() -> serde_json::Value,
}

/// The command-line form of an action: `prodops <command> <verb>`.
#[derive(Debug, Clone, Copy)]
pub struct Cli {
    /// The command it hangs under (`production`, `delivery`, ...).
    pub command: &'static str,
    pub verb: &'static str,
    /// One line for `--help`.
    pub about: &'static str,
    /// A whole example command line.
    pub example: &'static str,
    /// Flags that read better under another name or with other help than their field gives
    /// (a flag for each field of the request type and each query parameter exists anyway).
    pub flags: &'static [CliFlag],
}

/// A flag's name and help, where the field's own do not read well.
#[derive(Debug, Clone, Copy)]
pub struct CliFlag {
    /// The request field or query parameter (`orderedDeliverableIds`).
    pub field: &'static str,
    /// `--name` (`ids`).
    pub flag: &'static str,
    pub help: &'static str,
}

/// `CliFlag { field, flag, help }`, shorter.
pub const fn flag(field: &'static str, flag: &'static str, help: &'static str) -> CliFlag {
    CliFlag { field, flag, help }
}

/// Everything the server, the OpenAPI document, the client and the CLI know of one action.
#[derive(Debug, Clone, Copy)]
pub struct ActionDesc {
    /// The OpenAPI `operationId`; unique.
    pub operation_id: &'static str,
    /// The OpenAPI tag: the resource path the action belongs to.
    pub tag: &'static str,
    pub method: HttpMethod,
    /// Relative to `/api/v2`, with `{name}` path parameters.
    pub path: &'static str,
    /// The path parameters' kinds, in order (from the path type).
    pub path_kinds: &'static [ParamKind],
    pub access: Access,
    pub query: &'static [QueryParam],
    /// `Some(path)`: the query also takes the equality filters of the resource at `path`, one
    /// parameter per stored field, as its list does (`QueryArgs::FILTERS_OF`).
    pub query_filters: Option<&'static str>,
    pub request: RequestBody,
    /// The schema the OpenAPI document gives the JSON body where the server reads more than
    /// the body type says (the record's create form, a field the type leaves optional that
    /// this action requires); `None`: the body type's. A client sends the body type either way.
    pub body_schema: Option<SchemaFn>,
    pub answer: AnswerBody,
    /// The success status.
    pub status: u16,
    /// Answers beside the success and the common errors (docs/contract.md).
    pub other_answers: &'static [OtherAnswer],
    /// What the success answer is, in a few words (`The delivery`, `Done`).
    pub outcome: &'static str,
    pub summary: &'static str,
    /// Rules the schemas cannot say; empty when there are none.
    pub description: &'static str,
    pub cli: Cli,
}

impl ActionDesc {
    /// The `{name}` path parameters, in order.
    ///
    /// ```
    /// use prodops_core::api::{Endpoint, deliverable::Progress};
    /// assert_eq!(Progress::DESC.path_params(), ["rootId", "id"]);
    /// ```
    pub fn path_params(&self) -> Vec<&'static str> {
        path_params(self.path)
    }

    /// The path with its parameters filled in (each percent-encoded as a path segment).
    ///
    /// ```
    /// use prodops_core::api::{Endpoint, document::Unlink};
    /// assert_eq!(Unlink::DESC.fill(&["d".into(), "a b".into()]), "/document/d/links/a%20b");
    /// ```
    pub fn fill(&self, segments: &[String]) -> String {
        let mut out = String::with_capacity(self.path.len() + 40 * segments.len());
        let mut args = segments.iter();
        for (i, part) in self.path.split('/').enumerate() {
            if i > 0 {
                out.push('/');
            }
            if part.starts_with('{') && part.ends_with('}') {
                if let Some(arg) = args.next() {
                    encode_segment(arg, &mut out);
                }
            } else {
                out.push_str(part);
            }
        }
        out
    }

    /// Whether the request has a JSON body.
    pub fn takes_json(&self) -> bool {
        matches!(self.request, RequestBody::Json { .. })
    }
}

/// The `{name}` segments of a path template, in order.
pub fn path_params(path: &'static str) -> Vec<&'static str> {
    path.split('/')
        .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .collect()
}

/// Percent-encodes a path segment: everything but RFC 3986 unreserved characters.
fn encode_segment(text: &str, out: &mut String) {
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
}

/// One action endpoint, as a type: what it takes and answers. Declared with [`action!`]
/// (crate-internal) in its family's module.
pub trait Endpoint {
    /// The path parameters: `()`, `Uuid`, `(Uuid, Uuid)`, `(Uuid, String)`.
    type Path: PathArgs;
    /// The query parameters (`()` for none).
    type Query: QueryArgs;
    /// The request body: [`NoBody`], [`Json<T>`], [`OptionalJson<T>`], [`FreeJson`] or [`RawFile`].
    type Body: BodyKind;
    /// The answer: [`Empty`], [`Json<T>`], [`ValueOf<T>`], [`PageOf<T>`], [`FreeJson`] or
    /// [`RawFile`].
    type Answer: AnswerKind;
    /// The declaration.
    const DESC: ActionDesc;
}

/// The path parameters of an action, as values.
pub trait PathArgs {
    const KINDS: &'static [ParamKind];
    /// The segments, in order.
    fn segments(&self) -> Vec<String>;
}

impl PathArgs for () {
    const KINDS: &'static [ParamKind] = &[];
    fn segments(&self) -> Vec<String> {
        Vec::new()
    }
}

impl PathArgs for Uuid {
    const KINDS: &'static [ParamKind] = &[ParamKind::Uuid];
    fn segments(&self) -> Vec<String> {
        vec![self.to_string()]
    }
}

impl PathArgs for (Uuid, Uuid) {
    const KINDS: &'static [ParamKind] = &[ParamKind::Uuid, ParamKind::Uuid];
    fn segments(&self) -> Vec<String> {
        vec![self.0.to_string(), self.1.to_string()]
    }
}

impl PathArgs for (Uuid, String) {
    const KINDS: &'static [ParamKind] = &[ParamKind::Uuid, ParamKind::Text];
    fn segments(&self) -> Vec<String> {
        vec![self.0.to_string(), self.1.clone()]
    }
}

/// The query parameters of an action, as values.
pub trait QueryArgs {
    const PARAMS: &'static [QueryParam];
    /// `Some(path)`: beside [`PARAMS`](QueryArgs::PARAMS), the equality filters of the
    /// resource at `path` (`field=value`), as its list takes them.
    const FILTERS_OF: Option<&'static str> = None;
    /// `(name, value)` pairs, in order; a list parameter repeats.
    fn pairs(&self) -> Vec<(String, String)>;
}

impl QueryArgs for () {
    const PARAMS: &'static [QueryParam] = &[];
    fn pairs(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}

/// What a request body is, for the description and for a client that sends one.
pub trait BodyKind {
    /// What the caller hands over.
    type Send: Serialize + ?Sized;
    const REQUEST: RequestBody;
}

/// What an answer is, for the description and for a client that reads one.
pub trait AnswerKind {
    /// What the caller gets.
    type Out: DeserializeOwned;
    const ANSWER: AnswerBody;
    /// Reads the answer's body (empty for a 204) with serde's own (strict) reading.
    fn decode(body: &[u8]) -> Result<Self::Out, serde_json::Error> {
        Self::decode_with::<StrictJson>(body)
    }
    /// Reads the answer's body, its JSON read by `R` (a client reads answers of a newer server
    /// leniently, with fields it does not know set aside).
    fn decode_with<R: JsonReader>(body: &[u8]) -> Result<Self::Out, serde_json::Error>;
}

/// How JSON text becomes a value: [`StrictJson`] is `serde_json::from_slice`.
pub trait JsonReader {
    fn read<T: DeserializeOwned>(body: &[u8]) -> Result<T, serde_json::Error>;
}

/// `serde_json::from_slice`: unknown fields are refused where the type says so.
pub struct StrictJson;

impl JsonReader for StrictJson {
    fn read<T: DeserializeOwned>(body: &[u8]) -> Result<T, serde_json::Error> {
        serde_json::from_slice(body)
    }
}

/// [`SchemaFn`] of a list of a type with a `ToSchema` (inline: an array of references).
#[cfg(feature = "openapi")]
pub fn list_schema_of<T: ToSchema>(schemas: &mut Schemas) -> RefOr<Schema> {
    let item = schema_of::<T>(schemas);
    utoipa::openapi::schema::ArrayBuilder::new()
        .items(item)
        .build()
        .into()
}

/// Without the `openapi` feature no schema exists; a declaration still names this function.
#[cfg(not(feature = "openapi"))]
pub fn list_schema_of<T: ?Sized>(_: &mut Schemas) -> RefOr<Schema> {
    panic!("prodops-core is built without its `openapi` feature")
}

/// No request body.
pub struct NoBody;

impl BodyKind for NoBody {
    type Send = ();
    const REQUEST: RequestBody = RequestBody::None;
}

/// A JSON body or answer of type `T`.
pub struct Json<T>(std::marker::PhantomData<T>);

impl<T: ToSchema + Serialize> BodyKind for Json<T> {
    type Send = T;
    const REQUEST: RequestBody = RequestBody::Json {
        schema: Some(schema_of::<T>),
        required: true,
    };
}

impl<T: ToSchema + DeserializeOwned> AnswerKind for Json<T> {
    type Out = T;
    const ANSWER: AnswerBody = AnswerBody::Json(Some(schema_of::<T>));
    fn decode_with<R: JsonReader>(body: &[u8]) -> Result<T, serde_json::Error> {
        R::read(body)
    }
}

/// A JSON array of `T`.
pub struct JsonList<T>(std::marker::PhantomData<T>);

impl<T: ToSchema + Serialize> BodyKind for JsonList<T> {
    type Send = [T];
    const REQUEST: RequestBody = RequestBody::Json {
        schema: Some(list_schema_of::<T>),
        required: true,
    };
}

/// A JSON body of type `T` that may be left out.
pub struct OptionalJson<T>(std::marker::PhantomData<T>);

impl<T: ToSchema + Serialize> BodyKind for OptionalJson<T> {
    type Send = T;
    const REQUEST: RequestBody = RequestBody::Json {
        schema: Some(schema_of::<T>),
        required: false,
    };
}

/// A body that names nothing: `{}` (an action that takes no fields but accepts an empty
/// object, or `null`, or no body).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NoFields {}

/// JSON whose shape no core type describes (the server's document describes it).
pub struct FreeJson;

impl BodyKind for FreeJson {
    type Send = serde_json::Value;
    const REQUEST: RequestBody = RequestBody::Json {
        schema: None,
        required: true,
    };
}

impl AnswerKind for FreeJson {
    type Out = serde_json::Value;
    const ANSWER: AnswerBody = AnswerBody::Json(None);
    fn decode_with<R: JsonReader>(body: &[u8]) -> Result<serde_json::Value, serde_json::Error> {
        R::read(body)
    }
}

/// The bytes of a file.
pub struct RawFile;

/// A file to send: its bytes and media type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileBody {
    pub bytes: Vec<u8>,
    pub content_type: String,
}

impl BodyKind for RawFile {
    type Send = FileBody;
    const REQUEST: RequestBody = RequestBody::Bytes;
}

impl AnswerKind for RawFile {
    type Out = Vec<u8>;
    const ANSWER: AnswerBody = AnswerBody::Bytes;
    fn decode_with<R: JsonReader>(body: &[u8]) -> Result<Vec<u8>, serde_json::Error> {
        Ok(body.to_vec())
    }
}

/// No answer body (204).
pub struct Empty;

impl AnswerKind for Empty {
    type Out = ();
    const ANSWER: AnswerBody = AnswerBody::Empty;
    fn decode_with<R: JsonReader>(_: &[u8]) -> Result<(), serde_json::Error> {
        Ok(())
    }
}

/// `{"value": T}`, answered as `T`.
pub struct ValueOf<T>(std::marker::PhantomData<T>);

/// `{ "value": ... }`, how the production and BOM actions answer (spec 4.4, 4.5).
///
/// ```
/// let v: prodops_core::api::ValueAnswer<u32> = serde_json::from_str(r#"{"value":2}"#).unwrap();
/// assert_eq!(v.value, 2);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValueAnswer<T = serde_json::Value> {
    /// What the action did.
    pub value: T,
}

impl<T: ToSchema + DeserializeOwned> AnswerKind for ValueOf<T> {
    type Out = T;
    const ANSWER: AnswerBody = AnswerBody::Value(schema_of::<T>);
    fn decode_with<R: JsonReader>(body: &[u8]) -> Result<T, serde_json::Error> {
        R::read::<ValueAnswer<T>>(body).map(|v| v.value)
    }
}

/// `{"value": [T, ...]}`, answered as `Vec<T>`.
pub struct ValueList<T>(std::marker::PhantomData<T>);

impl<T: ToSchema + DeserializeOwned> AnswerKind for ValueList<T> {
    type Out = Vec<T>;
    const ANSWER: AnswerBody = AnswerBody::Value(list_schema_of::<T>);
    fn decode_with<R: JsonReader>(body: &[u8]) -> Result<Vec<T>, serde_json::Error> {
        R::read::<ValueAnswer<Vec<T>>>(body).map(|v| v.value)
    }
}

/// One page of values: `{"values": [...], "totalCount": N}`.
///
/// ```
/// let page: prodops_core::api::Page<serde_json::Value> =
///     serde_json::from_str(r#"{"values":[{"id":"a"}],"totalCount":7}"#).unwrap();
/// assert_eq!(page.total_count, 7);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Page<T> {
    /// The records of this page.
    pub values: Vec<T>,
    /// How many records match in all.
    pub total_count: u64,
    /// On `GET /r` in the default order: the cursor of the page after this one (`null` on a
    /// page that is not full). Absent from query answers and from lists with a `sort`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// A page of `T`.
pub struct PageOf<T>(std::marker::PhantomData<T>);

impl<T: ToSchema + DeserializeOwned> AnswerKind for PageOf<T> {
    type Out = Page<T>;
    const ANSWER: AnswerBody = AnswerBody::Page(Some(schema_of::<T>));
    fn decode_with<R: JsonReader>(body: &[u8]) -> Result<Page<T>, serde_json::Error> {
        R::read(body)
    }
}

/// A page of values whose shape the server describes.
pub struct FreePage;

impl AnswerKind for FreePage {
    type Out = Page<serde_json::Value>;
    const ANSWER: AnswerBody = AnswerBody::Page(None);
    fn decode_with<R: JsonReader>(
        body: &[u8],
    ) -> Result<Page<serde_json::Value>, serde_json::Error> {
        R::read(body)
    }
}

/// `page` and `pageSize`, the paging of an action's list.
///
/// ```
/// use prodops_core::api::{PageQuery, QueryArgs};
/// let q = PageQuery { page: Some(2), page_size: None };
/// assert_eq!(q.pairs(), [("page".to_string(), "2".to_string())]);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PageQuery {
    /// Page (1-based).
    pub page: Option<u64>,
    /// Page size.
    pub page_size: Option<u64>,
}

/// The query parameters `page` and `pageSize`, as the standard lists take them.
pub const PAGING: [QueryParam; 2] = [
    QueryParam {
        name: "page",
        kind: ParamKind::Integer,
        required: false,
        description: "Page (default 1)",
        values: ParamValues::Page,
    },
    QueryParam {
        name: "pageSize",
        kind: ParamKind::Integer,
        required: false,
        description: "Rows per page",
        values: ParamValues::PageSize,
    },
];

impl QueryArgs for PageQuery {
    const PARAMS: &'static [QueryParam] = &PAGING;
    fn pairs(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        push(&mut out, "page", self.page);
        push(&mut out, "pageSize", self.page_size);
        out
    }
}

/// Adds `name=value` when there is a value.
pub(crate) fn push<T: ToString>(out: &mut Vec<(String, String)>, name: &str, value: Option<T>) {
    if let Some(v) = value {
        out.push((name.to_string(), v.to_string()));
    }
}

/// A declaration's `body_schema`, given (`[schema]`) or not (`[]`).
pub const fn given_schema(given: &[SchemaFn]) -> Option<SchemaFn> {
    match given {
        [schema] => Some(*schema),
        _ => None,
    }
}

/// A declaration's `other_answers`, given (`[answers]`) or not (`[]`).
pub const fn other_answers(given: &[&'static [OtherAnswer]]) -> &'static [OtherAnswer] {
    match given {
        [answers] => answers,
        _ => &[],
    }
}

/// Declares one action endpoint: a unit type implementing [`Endpoint`], its `DESC` built from
/// the types it names, so the description and the types cannot disagree.
macro_rules! action {
    (
        $(#[$doc:meta])*
        $name:ident: $method:ident $path:literal {
            operation: $op:literal,
            tag: $tag:literal,
            access: $access:expr,
            path: $path_ty:ty,
            query: $query_ty:ty,
            body: $body_ty:ty,
            answer: $answer_ty:ty,
            status: $status:literal,
            outcome: $outcome:literal,
            summary: $summary:literal,
            description: $description:expr,
            $(body_schema: $body_schema:expr,)?
            $(other_answers: $other_answers:expr,)?
            cli: $cli:expr $(,)?
        }
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;

        impl $crate::api::Endpoint for $name {
            type Path = $path_ty;
            type Query = $query_ty;
            type Body = $body_ty;
            type Answer = $answer_ty;
            const DESC: $crate::api::ActionDesc = $crate::api::ActionDesc {
                operation_id: $op,
                tag: $tag,
                method: $crate::api::HttpMethod::$method,
                path: $path,
                path_kinds: <$path_ty as $crate::api::PathArgs>::KINDS,
                access: $access,
                query: <$query_ty as $crate::api::QueryArgs>::PARAMS,
                query_filters: <$query_ty as $crate::api::QueryArgs>::FILTERS_OF,
                request: <$body_ty as $crate::api::BodyKind>::REQUEST,
                body_schema: $crate::api::given_schema(&[$($body_schema as $crate::api::SchemaFn)?]),
                answer: <$answer_ty as $crate::api::AnswerKind>::ANSWER,
                status: $status,
                other_answers: $crate::api::other_answers(&[$($other_answers)?]),
                outcome: $outcome,
                summary: $summary,
                description: $description,
                cli: $cli,
            };
        }
    };
}
pub(crate) use action;

/// Calls `$callback!` with the path of every action endpoint type, once:
/// `for_each_action!(my_macro)` expands to `my_macro! { api::production::Produce, ... }`. The
/// server generates its routes with it (so an endpoint without a handler does not compile), and
/// [`ACTIONS`] is built with it.
#[macro_export]
macro_rules! for_each_action {
    ($callback:ident) => {
        $callback! {
            $crate::api::deliverable::Hierarchy,
            $crate::api::deliverable::Roots,
            $crate::api::deliverable::Groups,
            $crate::api::deliverable::CrewTime,
            $crate::api::deliverable::Reorder,
            $crate::api::deliverable::Progress,
            $crate::api::deliverable::Schedule,
            $crate::api::deliverable::ScheduleBatch,
            $crate::api::deliverable::SaveWorkSessions,
            $crate::api::deliverable::StopWorkSessions,
            $crate::api::production::Produce,
            $crate::api::production::Consume,
            $crate::api::production::AdjustActual,
            $crate::api::production::OrderStatus,
            $crate::api::production::OrderEntries,
            $crate::api::production::ApplyTemplate,
            $crate::api::bom::Prepopulate,
            $crate::api::bom::AllocateOrder,
            $crate::api::bom::AllocateProject,
            $crate::api::bom::DemandRollup,
            $crate::api::bom::MaterialsRollup,
            $crate::api::inventory::PostTransaction,
            $crate::api::inventory::StockList,
            $crate::api::inventory::Count,
            $crate::api::document::Upload,
            $crate::api::document::Download,
            $crate::api::document::CreateVersion,
            $crate::api::document::AddVersion,
            $crate::api::document::HubBulkUpload,
            $crate::api::document::CountsByDeliverable,
            $crate::api::document::Link,
            $crate::api::document::Unlink,
            $crate::api::document::SetCopyMode,
            $crate::api::qc::PublishVersion,
            $crate::api::qc::UpdateTemplate,
            $crate::api::member::Invite,
            $crate::api::member::AcceptInvitation,
            $crate::api::member::ResendInvitation,
            $crate::api::member::Deactivate,
            $crate::api::member::Reactivate,
            $crate::api::member::Outbox,
            $crate::api::notification::ReadChannelComments,
            $crate::api::notification::ReadDeliverableDocuments,
            $crate::api::delivery::CreateOutbound,
            $crate::api::delivery::PatchOutbound,
            $crate::api::delivery::Start,
            $crate::api::delivery::Complete,
            $crate::api::delivery::Cancel,
            $crate::api::delivery::Receive,
            $crate::api::delivery::CloseShort,
            $crate::api::delivery::Archive,
            $crate::api::delivery::Restore,
            $crate::api::delivery::Itinerary,
            $crate::api::delivery::CargoPlan,
            $crate::api::event::List,
            $crate::api::webhook::Redeliver,
            $crate::api::webhook::Test,
            $crate::api::webhook::Deliveries,
        }
    };
}

macro_rules! descs {
    ($($e:path),* $(,)?) => {
        &[$(<$e as Endpoint>::DESC),*]
    };
}

/// Every action endpoint's description, in the order of the specification.
pub const ACTIONS: &[ActionDesc] = for_each_action!(descs);

/// The description with this `operationId`.
pub fn by_operation(id: &str) -> Option<&'static ActionDesc> {
    ACTIONS.iter().find(|a| a.operation_id == id)
}

/// The top-level fields of an action's JSON request type, from its schema (empty for a body
/// without a core type): the properties of the object, or of every variant of a `oneOf`,
/// `anyOf` or `allOf`, in order, each once. The CLI makes a flag of each.
///
/// ```
/// use prodops_core::api::{Endpoint, Schemas, production::Produce, request_fields};
/// let fields = request_fields(&Produce::DESC, &mut Schemas::new());
/// assert!(fields.iter().any(|f| f == "deliverableId"));
/// ```
#[cfg(feature = "openapi")]
pub fn request_fields(a: &ActionDesc, schemas: &mut Schemas) -> Vec<String> {
    let RequestBody::Json {
        schema: Some(schema),
        ..
    } = a.request
    else {
        return Vec::new();
    };
    let root = serde_json::to_value(schema(schemas)).unwrap_or_default();
    let named: serde_json::Map<String, serde_json::Value> = schemas
        .iter()
        .map(|(n, s)| (n.clone(), serde_json::to_value(s).unwrap_or_default()))
        .collect();
    let mut fields = Vec::new();
    collect_fields(&root, &named, &mut fields, 0);
    fields
}

#[cfg(feature = "openapi")]
fn collect_fields(
    schema: &serde_json::Value,
    named: &serde_json::Map<String, serde_json::Value>,
    out: &mut Vec<String>,
    depth: usize,
) {
    if depth > 8 {
        return;
    }
    if let Some(r) = schema["$ref"].as_str() {
        let name = r.rsplit('/').next().unwrap_or_default();
        if let Some(s) = named.get(name) {
            collect_fields(s, named, out, depth + 1);
        }
        return;
    }
    if let Some(props) = schema["properties"].as_object() {
        for k in props.keys() {
            if !out.contains(k) {
                out.push(k.clone());
            }
        }
    }
    for key in ["oneOf", "anyOf", "allOf"] {
        if let Some(variants) = schema[key].as_array() {
            for v in variants {
                collect_fields(v, named, out, depth + 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn operations_commands_and_routes_are_unique() {
        let mut ops = HashSet::new();
        let mut commands = HashSet::new();
        let mut routes = HashSet::new();
        for a in ACTIONS {
            assert!(ops.insert(a.operation_id), "{}", a.operation_id);
            assert!(
                commands.insert((a.cli.command, a.cli.verb)),
                "{} {}",
                a.cli.command,
                a.cli.verb
            );
            assert!(routes.insert((a.method, a.path)), "{}", a.path);
        }
    }

    #[test]
    fn paths_name_as_many_parameters_as_their_type_has() {
        for a in ACTIONS {
            assert!(a.path.starts_with('/'), "{}", a.path);
            assert_eq!(
                a.path_params().len(),
                a.path_kinds.len(),
                "{}: the path names {:?}",
                a.operation_id,
                a.path_params()
            );
        }
    }

    #[test]
    fn examples_run_their_own_command() {
        for a in ACTIONS {
            let start = format!("prodops {} {}", a.cli.command, a.cli.verb);
            assert!(a.cli.example.starts_with(&start), "{}", a.cli.example);
            assert!(!a.summary.is_empty(), "{}", a.operation_id);
        }
    }

    #[test]
    fn a_204_answers_nothing_and_only_it() {
        for a in ACTIONS {
            let empty = matches!(a.answer, AnswerBody::Empty);
            assert_eq!(empty, a.status == 204, "{}", a.operation_id);
        }
    }

    #[test]
    fn gets_and_deletes_take_no_body() {
        for a in ACTIONS {
            if matches!(a.method, HttpMethod::Get | HttpMethod::Delete) {
                assert!(matches!(a.request, RequestBody::None), "{}", a.operation_id);
            }
        }
    }

    #[test]
    fn cli_flags_name_a_field_of_the_request_or_a_query_parameter() {
        for a in ACTIONS {
            let mut schemas = Schemas::new();
            let fields = request_fields(a, &mut schemas);
            for f in a.cli.flags {
                let known = fields.iter().any(|x| x == f.field)
                    || a.query.iter().any(|q| q.name == f.field);
                assert!(
                    known,
                    "{} {}: --{} names {:?}, which is neither a field of the request nor a query parameter (fields: {fields:?})",
                    a.cli.command, a.cli.verb, f.flag, f.field
                );
            }
        }
    }

    #[test]
    fn fill_percent_encodes_segments() {
        let a = &document::Download::DESC;
        assert_eq!(
            a.fill(&["o".into(), "k/ü".into()]),
            "/document/file/o/k%2F%C3%BC"
        );
    }
}
