//! The vocabulary of an action's declaration: the [`Endpoint`] trait and its [`ActionDesc`],
//! access, path, query, body and answer kinds, the command-line form, and the `action!` macro
//! that declares one endpoint. `api/mod.rs` re-exports all of it (`prodops_core::api::Endpoint`
//! and so on) and lists the declarations; the declaring modules (`api/production.rs`, ...) use
//! this file, not `mod.rs`, so that the list and the declarations do not depend on each other.

use std::fmt::Write as _;

use crate::openapi::ToSchema;
use crate::openapi::{RefOr, Schema};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

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

/// A [`SchemaFn`](SchemaFn) naming a record's create form, which the server's
/// document derives from the record (a declaration's `body_schema` where an action takes it).
#[cfg(feature = "openapi")]
pub fn create_form_of<T: ToSchema>(_: &mut Schemas) -> RefOr<Schema> {
    crate::openapi::named(&crate::openapi::create_form_name(&T::name()))
}

/// Without the `openapi` feature no schema exists; a declaration still names this function.
#[cfg(not(feature = "openapi"))]
pub fn create_form_of<T: ?Sized>(_: &mut Schemas) -> RefOr<Schema> {
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
    /// Whether the success answer names its snapshot's feed cursor ([`AnswerKind::NAMES_FEED_CURSOR`]).
    pub names_feed_cursor: bool,
    /// The success status.
    pub status: u16,
    /// Answers beside the success and the common errors (docs/contract.md).
    pub other_answers: &'static [OtherAnswer],
    /// What the success answer is, in a few words (`The delivery`, `Done`).
    pub outcome: &'static str,
    pub summary: &'static str,
    /// Rules the schemas cannot say; empty when there are none.
    pub description: &'static str,
    /// `Some(why)`: the action takes no `dryRun` (what it does is not a write that can be
    /// rolled back, such as sending a test delivery); `None`: a write takes it
    /// ([`ActionDesc::takes_dry_run`]).
    pub no_dry_run: Option<&'static str>,
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

    /// Whether the action takes `?dryRun=true` (docs/api.md, "Dry runs"): every action that
    /// writes, that is, every one but a `GET`, one that a key with read permissions alone may
    /// call, one without a key, one answering a file, and one that declares `no_dry_run`.
    ///
    /// ```
    /// use prodops_core::api::{Endpoint, production::Produce, webhook::Test, deliverable::Groups};
    /// assert!(Produce::DESC.takes_dry_run());
    /// assert!(!Test::DESC.takes_dry_run());
    /// assert!(!Groups::DESC.takes_dry_run());
    /// ```
    pub fn takes_dry_run(&self) -> bool {
        let reads = match self.access {
            Access::Key(perms) => perms.iter().all(|(_, p)| *p == Perm::Read),
            Access::Open => true,
            Access::KeyChecked | Access::Admin => false,
        };
        self.method != HttpMethod::Get
            && !reads
            && !matches!(self.answer, AnswerBody::Bytes)
            && self.no_dry_run.is_none()
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
    /// The answer: [`Empty`], [`Json<T>`], [`ValueOf<T>`], [`PageOf<T>`], [`FreeJson`], or
    /// one sent as it is produced: [`RawFile`], [`StreamedPageAtCursor`], [`StreamedJson<T>`].
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
    /// Whether the success answer is read in one snapshot and names that snapshot's feed
    /// cursor in the `Prodops-Feed-Cursor` header ([`crate::event::FEED_CURSOR_HEADER`]): the
    /// events after it are exactly the changes the answer does not hold.
    const NAMES_FEED_CURSOR: bool = false;
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

/// A JSON body of shape `T` that the server reads as the record it writes, with the resource's
/// own checks (their messages name the fields), not as a `T`.
pub struct RecordJson<T>(std::marker::PhantomData<T>);

impl<T: ToSchema + Serialize> BodyKind for RecordJson<T> {
    type Send = T;
    const REQUEST: RequestBody = RequestBody::Json {
        schema: Some(schema_of::<T>),
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

/// A page of values whose shape the server describes, read in one snapshot and sent as it is
/// read (the server writes it in parts; it is read as one page like [`FreePage`]). The answer
/// names the snapshot's feed cursor in the `Prodops-Feed-Cursor` header: the events after that
/// cursor are exactly the changes the page does not hold (docs/events.md, "Reads that name
/// their cursor").
pub struct StreamedPageAtCursor;

impl AnswerKind for StreamedPageAtCursor {
    type Out = Page<serde_json::Value>;
    const ANSWER: AnswerBody = AnswerBody::Page(None);
    const NAMES_FEED_CURSOR: bool = true;
    fn decode_with<R: JsonReader>(
        body: &[u8],
    ) -> Result<Page<serde_json::Value>, serde_json::Error> {
        R::read(body)
    }
}

/// A JSON value of shape `T` that the server writes while it reads, sent in parts: documented
/// and decoded as [`Json<T>`]; only how the server sends it differs.
pub struct StreamedJson<T>(std::marker::PhantomData<T>);

impl<T: ToSchema + DeserializeOwned> AnswerKind for StreamedJson<T> {
    type Out = T;
    const ANSWER: AnswerBody = AnswerBody::Json(Some(schema_of::<T>));
    fn decode_with<R: JsonReader>(body: &[u8]) -> Result<T, serde_json::Error> {
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
/// The reason an `action!` gives for taking no `dryRun`, if it gives one.
pub const fn no_dry_run(given: &[&'static str]) -> Option<&'static str> {
    match given {
        [why] => Some(why),
        _ => None,
    }
}

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
            $(no_dry_run: $no_dry_run:literal,)?
            cli: $cli:expr $(,)?
        }
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;

        impl $crate::api::endpoint::Endpoint for $name {
            type Path = $path_ty;
            type Query = $query_ty;
            type Body = $body_ty;
            type Answer = $answer_ty;
            const DESC: $crate::api::endpoint::ActionDesc = $crate::api::endpoint::ActionDesc {
                operation_id: $op,
                tag: $tag,
                method: $crate::api::endpoint::HttpMethod::$method,
                path: $path,
                path_kinds: <$path_ty as $crate::api::endpoint::PathArgs>::KINDS,
                access: $access,
                query: <$query_ty as $crate::api::endpoint::QueryArgs>::PARAMS,
                query_filters: <$query_ty as $crate::api::endpoint::QueryArgs>::FILTERS_OF,
                request: <$body_ty as $crate::api::endpoint::BodyKind>::REQUEST,
                body_schema: $crate::api::endpoint::given_schema(&[$($body_schema as $crate::api::endpoint::SchemaFn)?]),
                answer: <$answer_ty as $crate::api::endpoint::AnswerKind>::ANSWER,
                names_feed_cursor: <$answer_ty as $crate::api::endpoint::AnswerKind>::NAMES_FEED_CURSOR,
                status: $status,
                other_answers: $crate::api::endpoint::other_answers(&[$($other_answers)?]),
                outcome: $outcome,
                summary: $summary,
                description: $description,
                no_dry_run: $crate::api::endpoint::no_dry_run(&[$($no_dry_run)?]),
                cli: $cli,
            };
        }
    };
}
pub(crate) use action;
