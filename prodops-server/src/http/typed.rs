//! What a declared action's handler takes and answers, from its declaration
//! (`prodops_core::api::Endpoint`): the path parameters as `E::Path`, the query as the value
//! its query type reads to ([`ServedQuery`]), the body as the value its body kind reads to
//! ([`ServedBody`]), and the answer as the value its answer kind says ([`ServedAnswer`]),
//! sent with the declaration's status. The reading (size limit, text checks, strict parsing
//! with the offending field named) happens here, once, before the handler runs; the handler
//! neither parses a body nor picks a status. Only streamed answers ([`Streamed`]), which their
//! declaration names as such, build their response themselves.

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{FromRequestParts, Path, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use prodops_core::api::{
    ActionDesc, Empty, Endpoint, FreeJson, FreePage, Json, JsonList, NoBody, NoFields,
    OptionalJson, Page, PageOf, RawFile, RecordJson, StreamedJson, StreamedPageAtCursor,
    ValueAnswer, ValueList, ValueOf,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::http::app::{AppState, Reply, read_body, read_json, read_optional_json, write_reply};
use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult};
use crate::store::Tx;

/// An id given in a path or body, parsed as a UUID (400 naming `id` when it is not one).
pub fn parse_id(raw: &str) -> ApiResult<Uuid> {
    Uuid::parse_str(raw).map_err(|_| ApiError::field("id", format!("'{raw}' is not a UUID")))
}

/// The path parameters of a declaration, read from the request's path.
pub trait ServedPath: Sized + Send + 'static {
    fn from_path(parts: &mut Parts) -> impl Future<Output = ApiResult<Self>> + Send;
}

impl ServedPath for () {
    async fn from_path(_: &mut Parts) -> ApiResult<()> {
        Ok(())
    }
}

/// `{id}`: 400 naming `id` when it is not a UUID (as `PathId`).
impl ServedPath for Uuid {
    async fn from_path(parts: &mut Parts) -> ApiResult<Uuid> {
        let Path(raw) = Path::<String>::from_request_parts(parts, &())
            .await
            .map_err(|_| ApiError::field("id", "the path must end in an id"))?;
        parse_id(&raw)
    }
}

/// Two segments of the route (the route matched, so both are there).
async fn two_segments(parts: &mut Parts) -> ApiResult<(String, String)> {
    let Path(pair) = Path::<(String, String)>::from_request_parts(parts, &())
        .await
        .map_err(|_| ApiError::field("id", "the path must end in an id"))?;
    Ok(pair)
}

/// `{a}/.../{b}`: each a UUID, 400 naming `id` when one is not.
impl ServedPath for (Uuid, Uuid) {
    async fn from_path(parts: &mut Parts) -> ApiResult<(Uuid, Uuid)> {
        let (a, b) = two_segments(parts).await?;
        Ok((parse_id(&a)?, parse_id(&b)?))
    }
}

/// A UUID and a text segment.
impl ServedPath for (Uuid, String) {
    async fn from_path(parts: &mut Parts) -> ApiResult<(Uuid, String)> {
        let (a, b) = two_segments(parts).await?;
        Ok((parse_id(&a)?, b))
    }
}

/// The query of a declaration, read from the query string: what the handler gets. Each query
/// type reads itself as its handler always did (its errors name the parameter); a query type
/// whose reading is the standard list's hands over the text that reading takes.
pub trait ServedQuery {
    type Value: Send + 'static;
    fn from_query(query: Option<&str>) -> ApiResult<Self::Value>;
}

/// No query parameters: whatever the query string holds is not read (as before).
impl ServedQuery for () {
    type Value = ();
    fn from_query(_: Option<&str>) -> ApiResult<()> {
        Ok(())
    }
}

/// The request body of a declaration, in two steps: [`read`](ServedBody::read) takes the bytes
/// with the size limit, the text checks (`text::check_json`) and the JSON syntax;
/// [`parse`](ServedBody::parse) reads the value strictly (`prodops_core::resource::parse`,
/// whose errors name the field) into what the handler gets. What the handler starts from
/// (`Call`, a family's gate) is checked between the two, as it always was.
pub trait ServedBody {
    /// What the reading gives.
    type Read: Send + 'static;
    /// What the handler gets.
    type Value: Send + 'static;
    fn read(headers: &HeaderMap, body: Body) -> impl Future<Output = ApiResult<Self::Read>> + Send;
    fn parse(read: Self::Read, desc: &'static ActionDesc) -> ApiResult<Self::Value>;
}

/// A body read as `T`, strictly, naming the offending field (the one parse path of every JSON
/// body: a `serde_json::Value` first, then `prodops_core::resource::parse`).
pub fn parse_json<T: DeserializeOwned>(body: Value) -> ApiResult<T> {
    prodops_core::resource::parse(body).map_err(|v| ApiError::violations(vec![v]))
}

/// Nothing is read.
impl ServedBody for NoBody {
    type Read = ();
    type Value = ();
    async fn read(_: &HeaderMap, _: Body) -> ApiResult<()> {
        Ok(())
    }
    fn parse((): (), _: &'static ActionDesc) -> ApiResult<()> {
        Ok(())
    }
}

impl<T: DeserializeOwned + Send + 'static> ServedBody for Json<T> {
    type Read = Value;
    type Value = T;
    async fn read(_: &HeaderMap, body: Body) -> ApiResult<Value> {
        read_json(body).await
    }
    fn parse(body: Value, _: &'static ActionDesc) -> ApiResult<T> {
        parse_json(body)
    }
}

impl<T: DeserializeOwned + Send + 'static> ServedBody for JsonList<T> {
    type Read = Value;
    type Value = Vec<T>;
    async fn read(_: &HeaderMap, body: Body) -> ApiResult<Value> {
        read_json(body).await
    }
    fn parse(body: Value, _: &'static ActionDesc) -> ApiResult<Vec<T>> {
        parse_json(body)
    }
}

/// The JSON value (its text checked); the handler writes it as a record, whose checks name
/// the fields.
impl<T> ServedBody for RecordJson<T> {
    type Read = Value;
    type Value = Value;
    async fn read(_: &HeaderMap, body: Body) -> ApiResult<Value> {
        read_json(body).await
    }
    fn parse(body: Value, _: &'static ActionDesc) -> ApiResult<Value> {
        Ok(body)
    }
}

/// Any JSON value (its text checked); the handler reads it.
impl ServedBody for FreeJson {
    type Read = Value;
    type Value = Value;
    async fn read(_: &HeaderMap, body: Body) -> ApiResult<Value> {
        read_json(body).await
    }
    fn parse(body: Value, _: &'static ActionDesc) -> ApiResult<Value> {
        Ok(body)
    }
}

/// A body that may be left out: no body (or only whitespace) and `null` read as the type's
/// default.
impl<T: GivenBody> ServedBody for OptionalJson<T> {
    type Read = Option<Value>;
    type Value = T;
    async fn read(_: &HeaderMap, body: Body) -> ApiResult<Option<Value>> {
        read_optional_json(body).await
    }
    fn parse(body: Option<Value>, desc: &'static ActionDesc) -> ApiResult<T> {
        match body {
            Some(v) if !v.is_null() => T::from_given(v, desc),
            _ => Ok(T::default()),
        }
    }
}

/// How a body that may be left out reads when it is given.
pub trait GivenBody: Default + Send + 'static {
    fn from_given(body: Value, desc: &'static ActionDesc) -> ApiResult<Self>;
}

/// The optional bodies read strictly, as a required one.
macro_rules! strict_given {
    ($($t:ty),* $(,)?) => {
        $(impl GivenBody for $t {
            fn from_given(body: Value, _: &'static ActionDesc) -> ApiResult<Self> {
                parse_json(body)
            }
        })*
    };
}

strict_given!(
    prodops_core::bom_actions::PrepopulateRequest,
    prodops_core::bom_actions::AllocateRequest,
    prodops_core::delivery::LifecycleRequest,
    prodops_core::delivery::ReceiveRequest,
    prodops_core::webhook::RedeliverRequest,
);

/// `{}` or nothing: anything else is refused as a body the action does not take.
impl GivenBody for NoFields {
    fn from_given(body: Value, desc: &'static ActionDesc) -> ApiResult<Self> {
        if body.as_object().is_some_and(Map::is_empty) {
            return Ok(NoFields {});
        }
        Err(ApiError::validation(format!(
            "{} {} takes no body",
            desc.method.as_str(),
            desc.path
        )))
    }
}

/// The bytes of a file, unread: the handler checks what it must before reading them
/// ([`FileBody::bytes`], with the size limit).
pub struct FileBody {
    pub headers: HeaderMap,
    body: Body,
}

impl FileBody {
    /// The whole body; more than `BODY_LIMIT` bytes are refused with 413.
    pub async fn bytes(self) -> ApiResult<Bytes> {
        read_body(self.body).await
    }
}

impl ServedBody for RawFile {
    type Read = FileBody;
    type Value = FileBody;
    async fn read(headers: &HeaderMap, body: Body) -> ApiResult<FileBody> {
        Ok(FileBody {
            headers: headers.clone(),
            body,
        })
    }
    fn parse(file: FileBody, _: &'static ActionDesc) -> ApiResult<FileBody> {
        Ok(file)
    }
}

/// The answer of a declaration: what the handler gives, and the body it is sent as.
pub trait ServedAnswer {
    type Value: Send + 'static;
    /// The body (`None`: none, a 204), with the declaration's status.
    fn reply(value: Self::Value, status: StatusCode) -> Answer;
}

/// What an answer becomes: a reply to keep for idempotent replays, or a streamed response.
pub enum Answer {
    Reply(Reply),
    Streamed(Response),
}

/// An answer of type `T`: the value, or a record of one as the store holds it (with the
/// fields its family derives at answer time), sent without reading it into `T`, or that
/// record's stored text, sent as it is.
#[derive(Debug, Clone)]
pub enum Shaped<T> {
    Typed(T),
    Record(Value),
    Text(String),
}

impl<T> Shaped<T> {
    /// A stored record of `T`, answered as it is.
    pub fn record(record: Value) -> Self {
        Shaped::Record(record)
    }

    /// The stored text of a record of `T`, answered as it is (not parsed).
    pub fn text(text: String) -> Self {
        Shaped::Text(text)
    }
}

impl<T: Serialize> Shaped<T> {
    /// The JSON text.
    fn into_text(self) -> String {
        match self {
            Shaped::Typed(v) => serde_json::to_string(&v).unwrap_or_else(|_| "null".into()),
            Shaped::Record(v) => serde_json::to_string(&v).unwrap_or_else(|_| "null".into()),
            Shaped::Text(text) => text,
        }
    }
}

impl<T> From<T> for Shaped<T> {
    fn from(value: T) -> Self {
        Shaped::Typed(value)
    }
}

impl<T: Serialize> Serialize for Shaped<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Shaped::Typed(v) => v.serialize(s),
            Shaped::Record(v) => v.serialize(s),
            Shaped::Text(text) => serde_json::value::RawValue::from_string(text.clone())
                .map_err(serde::ser::Error::custom)?
                .serialize(s),
        }
    }
}

fn json_reply(status: StatusCode, body: &impl Serialize) -> Answer {
    Answer::Reply(Reply::json(status, body))
}

fn text_reply(status: StatusCode, body: String) -> Answer {
    Answer::Reply(Reply {
        status,
        body: Some(body),
        replayed: false,
    })
}

impl ServedAnswer for Empty {
    type Value = ();
    fn reply((): (), status: StatusCode) -> Answer {
        Answer::Reply(Reply::empty(status))
    }
}

impl<T: Serialize + Send + 'static> ServedAnswer for Json<T> {
    type Value = Shaped<T>;
    fn reply(value: Shaped<T>, status: StatusCode) -> Answer {
        text_reply(status, value.into_text())
    }
}

/// `{"value": ...}`.
impl<T: Serialize + Send + 'static> ServedAnswer for ValueOf<T> {
    type Value = Shaped<T>;
    fn reply(value: Shaped<T>, status: StatusCode) -> Answer {
        text_reply(status, format!("{{\"value\":{}}}", value.into_text()))
    }
}

/// `{"value": [...]}`.
impl<T: Serialize + Send + 'static> ServedAnswer for ValueList<T> {
    type Value = Vec<T>;
    fn reply(value: Vec<T>, status: StatusCode) -> Answer {
        json_reply(status, &ValueAnswer { value })
    }
}

/// `{"values": [...], "totalCount": N}`: the page, or its text as the store's rows make it.
impl<T: Serialize + Send + 'static> ServedAnswer for PageOf<T> {
    type Value = Shaped<Page<Shaped<T>>>;
    fn reply(value: Shaped<Page<Shaped<T>>>, status: StatusCode) -> Answer {
        text_reply(status, value.into_text())
    }
}

/// A page of values whose shape the server describes.
impl ServedAnswer for FreePage {
    type Value = Page<Value>;
    fn reply(value: Page<Value>, status: StatusCode) -> Answer {
        json_reply(status, &value)
    }
}

impl ServedAnswer for FreeJson {
    type Value = Value;
    fn reply(value: Value, status: StatusCode) -> Answer {
        json_reply(status, &value)
    }
}

/// A response whose body is sent as it is produced (a file, a page written while it is read):
/// the one kind of answer a handler builds itself, because its declaration says so.
pub struct Streamed(pub Response);

impl ServedAnswer for RawFile {
    type Value = Streamed;
    fn reply(value: Streamed, _: StatusCode) -> Answer {
        Answer::Streamed(value.0)
    }
}

impl ServedAnswer for StreamedPageAtCursor {
    type Value = Streamed;
    fn reply(value: Streamed, _: StatusCode) -> Answer {
        Answer::Streamed(value.0)
    }
}

impl<T: Send + 'static> ServedAnswer for StreamedJson<T> {
    type Value = Streamed;
    fn reply(value: Streamed, _: StatusCode) -> Answer {
        Answer::Streamed(value.0)
    }
}

/// The query value of `E`'s handler.
pub type QueryOf<E> = <<E as Endpoint>::Query as ServedQuery>::Value;
/// The body value of `E`'s handler.
pub type BodyOf<E> = <<E as Endpoint>::Body as ServedBody>::Value;
/// The answer value of `E`'s handler.
pub type AnswerOf<E> = <<E as Endpoint>::Answer as ServedAnswer>::Value;

/// An endpoint whose path, query, body and answer the server knows how to serve.
pub trait Served:
    Endpoint<Path: ServedPath, Query: ServedQuery, Body: ServedBody, Answer: ServedAnswer>
    + Send
    + 'static
{
    /// The declared success status.
    fn status() -> StatusCode {
        StatusCode::from_u16(Self::DESC.status).unwrap_or(StatusCode::OK)
    }

    /// `value` as `Self` answers it.
    fn answer(value: AnswerOf<Self>) -> Answer {
        <Self::Answer as ServedAnswer>::reply(value, Self::status())
    }
}

impl<E> Served for E where
    E: Endpoint<Path: ServedPath, Query: ServedQuery, Body: ServedBody, Answer: ServedAnswer>
        + Send
        + 'static
{
}

/// The answer of one call of `E`: made only from an answer of `E`'s type (with `E`'s status),
/// or replayed from the idempotency store (the stored status and body of the first answer).
pub struct Answered<E> {
    response: Response,
    endpoint: PhantomData<fn() -> E>,
}

impl<E: Served> Answered<E> {
    /// `value`, with the declared status.
    pub fn new(value: AnswerOf<E>) -> Self {
        let response = match E::answer(value) {
            Answer::Reply(reply) => reply.into_response(),
            Answer::Streamed(response) => response,
        };
        Answered::sent(response)
    }

    /// The response of [`write_answer`]: the reply it made from an answer of `E`, or the one
    /// it replayed.
    fn sent(response: Response) -> Self {
        Answered {
            response,
            endpoint: PhantomData,
        }
    }
}

impl<E> IntoResponse for Answered<E> {
    fn into_response(self) -> Response {
        self.response
    }
}

/// Runs `f` in one write transaction under `ctx`'s idempotency key ([`write_reply`]): its
/// answer, of `E`'s answer type, is sent with `E`'s status and kept for a repeated request,
/// which is answered from the stored reply.
pub async fn write_answer<E, F>(state: &AppState, ctx: Ctx, mut f: F) -> ApiResult<Answered<E>>
where
    E: Served,
    F: FnMut(&mut dyn Tx, &Ctx) -> ApiResult<AnswerOf<E>> + Send + 'static,
{
    let response = write_reply(state, ctx, move |tx, ctx| match E::answer(f(tx, ctx)?) {
        Answer::Reply(reply) => Ok(reply),
        Answer::Streamed(_) => Err(ApiError::internal(
            "a streamed answer cannot be written in a transaction",
        )),
    })
    .await?;
    Ok(Answered::sent(response))
}

/// A handler of `E`: `async fn(C, E::Path, query, body) -> ApiResult<Answered<E>>`, where `C`
/// is what the handler starts from (`Call`, or `Open` for an action without a key).
pub trait ActionHandler<E: Served, C>: Clone + Send + Sync + 'static {
    fn run(
        self,
        start: C,
        path: E::Path,
        query: QueryOf<E>,
        body: BodyOf<E>,
    ) -> impl Future<Output = ApiResult<Answered<E>>> + Send;
}

impl<E, C, F, Fut> ActionHandler<E, C> for F
where
    E: Served,
    F: FnOnce(C, E::Path, QueryOf<E>, BodyOf<E>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = ApiResult<Answered<E>>> + Send,
{
    fn run(
        self,
        start: C,
        path: E::Path,
        query: QueryOf<E>,
        body: BodyOf<E>,
    ) -> impl Future<Output = ApiResult<Answered<E>>> + Send {
        self(start, path, query, body)
    }
}

/// Reads what `E` declares and runs `handler` on it, in the order the handlers always read
/// it: the path, the query, the body's bytes and JSON, then what the handler starts from
/// (`C`: the key, a family's gate), then the body's strict parsing. `refuse_path` turns a
/// path that does not read into the action's refusal.
pub async fn serve<E, C, H>(
    handler: H,
    state: Arc<AppState>,
    req: Request,
    refuse_path: fn(ApiError) -> ApiError,
) -> ApiResult<Answered<E>>
where
    E: Served,
    C: FromRequestParts<Arc<AppState>, Rejection = ApiError>,
    H: ActionHandler<E, C>,
{
    let (mut parts, body) = req.into_parts();
    if parts
        .extensions
        .get::<crate::http::context::DryRun>()
        .is_some()
        && !E::DESC.takes_dry_run()
    {
        return Err(ApiError::field(
            prodops_core::dry_run::PARAM,
            E::DESC
                .no_dry_run
                .unwrap_or("this action writes nothing; only writes take dryRun"),
        ));
    }
    let path = E::Path::from_path(&mut parts).await.map_err(refuse_path)?;
    let query = <E::Query as ServedQuery>::from_query(parts.uri.query())?;
    let read = <E::Body as ServedBody>::read(&parts.headers, body).await?;
    let start = C::from_request_parts(&mut parts, &state).await?;
    let body = <E::Body as ServedBody>::parse(read, &E::DESC)?;
    handler.run(start, path, query, body).await
}
