//! Typed async client for the Production Operations API v2.
//!
//! - [`Client`] sends requests with the `X-API-Key`, a `User-Agent` of `prodops-client/<version>`,
//!   timeouts, and retries on 429 and on a 503 with `Retry-After` that honour `Retry-After` / `RateLimit-Reset` with a
//!   bounded number of attempts and jittered backoff. Every POST and bulk call carries a fresh
//!   `Idempotency-Key`, reused by its retries, so a retried call is never applied twice.
//! - [`Client::resource`] gives the standard endpoints of any registered resource, typed with
//!   the core record type (`client.resource::<Worker>()`); [`Client::resource_at`] gives the same
//!   over `serde_json::Value` by path. Lists are a [`futures::Stream`] paging by itself.
//! - [`Client::call`] is the one typed mechanism behind every action endpoint: the endpoint type
//!   from `prodops_core::api` (declared once in core) gives the method, the path template, the
//!   query, body and answer types; the named methods in [`actions`] are one call each on top of
//!   it. [`Client::call_described`] is the same call from a description alone, untyped (the
//!   CLI's). [`Client::action`] remains for a method and path of the caller's.
//! - [`Error`] is the one error type: status, `error.code`, message, details, request id.
//!
//! ```no_run
//! use futures::TryStreamExt;
//! use prodops_client::{Client, ListParams};
//! use prodops_core::worker::Worker;
//!
//! # async fn run() -> prodops_client::Result<()> {
//! let client = Client::from_env()?;
//! let workers: Vec<Worker> = client
//!     .resource::<Worker>()
//!     .list(ListParams::new().filter("status", "active"))
//!     .try_collect()
//!     .await?;
//! println!("{} active workers", workers.len());
//! # Ok(()) }
//! ```

pub mod actions;
pub mod compat;
mod config;
mod error;
mod http;
#[rustfmt::skip]
pub mod inputs;
pub mod paths;
mod resource;
mod retry;
mod stream;
pub mod webhook;

use std::sync::Arc;

use bytes::Bytes;
use paths::action_path;
use prodops_core::api::{
    ActionDesc, AnswerKind, BodyKind, Endpoint, FileBody, FreeJson, HttpMethod, Json, JsonList,
    NoBody, OptionalJson, PathArgs, QueryArgs, RawFile, RecordJson,
};
use reqwest::header::HeaderValue;
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use config::{Config, ENV_API_KEY, ENV_BASE_URL};
pub use error::{Error, ErrorDetail, EventsGone, Result};
pub use http::{Headers, Method, NetworkError, NetworkErrorKind};
pub use inputs::*;
pub use prodops_core::api::Page;
pub use resource::{BulkPut, Filter, GroupCount, ListParams, Query, Resource};
pub use stream::{Framer, ValuesStream};

// The API's types, from `prodops-core`: a program names every record, request and answer type
// through this crate and depends on no other of ours. Modules as core has them
// (`prodops_client::worker::Worker`, `prodops_client::api::event::EventQuery`); the webhook
// records are in [`webhook`] beside `verify`.
pub use prodops_core::{
    Record, ResourceDesc, Violation, api, bom_actions, catalog, contact, custom_property,
    deliverable, delivery, document, dry_run, event, explain, inventory, lot, lot_rules, minimal,
    notification, organization, production, production_actions, progress, qc, registry, schedule,
    stock_count, template, timesheet, units, vendor, work_session, worker,
};
// The records of the standard resources, and what most programs name, at the root.
pub use prodops_core::api::event::EventQuery;
pub use prodops_core::catalog::CatalogEntry;
pub use prodops_core::contact::Contact;
pub use prodops_core::custom_property::CustomPropertyDefinition;
pub use prodops_core::deliverable::Deliverable;
pub use prodops_core::delivery::{CargoSpan, Delivery, Leg, ManifestLine, Stop};
pub use prodops_core::document::{Document, DocumentVersion};
pub use prodops_core::dry_run::{DryRun, PendingEvent, Tally};
pub use prodops_core::event::{Event, EventPage};
pub use prodops_core::inventory::{InventoryTransaction, Stock};
pub use prodops_core::lot::Lot;
pub use prodops_core::minimal::{
    Code, Comment, Dependency, Item, Location, Note, Project, Shop, Stage, Team, UnitMeasure,
};
pub use prodops_core::notification::Notification;
pub use prodops_core::organization::{OrganizationMember, Role};
pub use prodops_core::production::{BomLine, ProductionOutput};
pub use prodops_core::qc::{QcSet, QcTemplateVersion};
pub use prodops_core::timesheet::Timesheet;
pub use prodops_core::vendor::Vendor;
pub use prodops_core::webhook::Webhook;
pub use prodops_core::work_session::WorkSession;
pub use prodops_core::worker::Worker;
// What the types are made of, and what reading a list needs.
pub use chrono::{DateTime, Utc};
pub use futures::{Stream, StreamExt, TryStreamExt};
pub use serde_json::{Map, Value, json};
pub use uuid::Uuid;

/// The `User-Agent` every request carries.
///
/// ```
/// assert!(prodops_client::USER_AGENT.starts_with("prodops-client/"));
/// ```
pub const USER_AGENT: &str = concat!("prodops-client/", env!("CARGO_PKG_VERSION"));

/// A client of one instance with one key. Cheap to clone; clones share connections.
///
/// ```no_run
/// let client = prodops_client::Client::new(
///     prodops_client::Config::new("http://127.0.0.1:8080", "my-key"),
/// ).unwrap();
/// ```
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
    /// The caller's `Idempotency-Key` for every write this handle sends
    /// ([`Client::with_idempotency_key`]).
    idempotency_key: Option<Arc<str>>,
}

struct Inner {
    http: reqwest::Client,
    api_url: String,
    config: Config,
}

/// A raw answer: status, headers and body bytes.
///
/// ```no_run
/// # async fn run(client: prodops_client::Client) -> prodops_client::Result<()> {
/// let raw = client.send_raw(prodops_client::Method::GET, "/worker?pageSize=1", None).await?;
/// println!("{} {}", raw.status, String::from_utf8_lossy(&raw.body));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct RawResponse {
    /// The HTTP status.
    pub status: u16,
    /// The response headers.
    pub headers: Headers,
    /// The body, as sent.
    pub body: Bytes,
}

impl RawResponse {
    /// The answer as an [`Error`] when its status is not 2xx (the body's error object, its
    /// request id), `None` for a success.
    ///
    /// ```
    /// let raw = prodops_client::RawResponse {
    ///     status: 404,
    ///     headers: Default::default(),
    ///     body: bytes::Bytes::from_static(br#"{"error":{"code":"NOT_FOUND","message":"not found"}}"#),
    /// };
    /// assert!(raw.error().unwrap().is_not_found());
    /// ```
    pub fn error(&self) -> Option<Error> {
        if (200..300).contains(&self.status) {
            return None;
        }
        let request_id = self.headers.get("x-request-id").map(str::to_string);
        Some(Error::from_response(self.status, request_id, &self.body))
    }
}

/// Whether a request may be retried safely and needs an `Idempotency-Key` for that.
fn wants_idempotency_key(method: &Method, path: &str) -> bool {
    let path = path.split('?').next().unwrap_or(path);
    *method == Method::POST
        || (matches!(*method, Method::PUT | Method::PATCH | Method::DELETE)
            && path.trim_end_matches('/').ends_with("/bulk"))
}

impl Client {
    /// A client with this configuration.
    ///
    /// ```
    /// let client = prodops_client::Client::new(prodops_client::Config::new("http://127.0.0.1:1", "k")).unwrap();
    /// assert_eq!(client.api_url(), "http://127.0.0.1:1/api/v2");
    /// ```
    pub fn new(config: Config) -> Result<Client> {
        let api_url = config.api_url();
        reqwest::Url::parse(&api_url)
            .map_err(|e| Error::Config(format!("base URL {:?}: {e}", config.base_url)))?;
        if let Some(key) = &config.api_key {
            HeaderValue::from_str(key).map_err(|_| {
                Error::Config("the API key holds characters a header cannot carry".into())
            })?;
        }
        let http = reqwest::Client::builder()
            .user_agent(USER_AGENT)
            .timeout(config.timeout)
            .connect_timeout(config.connect_timeout)
            .pool_max_idle_per_host(32)
            .build()
            .map_err(|e| Error::Config(e.to_string()))?;
        Ok(Client {
            inner: Arc::new(Inner {
                http,
                api_url,
                config,
            }),
            idempotency_key: None,
        })
    }

    /// This client (sharing its connections) sending `key` as the `Idempotency-Key` of every
    /// write: POST, PUT, PATCH and DELETE. Sending the same write again with the same key, from
    /// this run or another (a script that timed out and runs again), is answered with the first
    /// answer and changes nothing; the same key with another body is refused (409). Without
    /// it, each POST and bulk call gets a fresh key that only this client's own retries reuse.
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client) -> prodops_client::Result<()> {
    /// let once = client.with_idempotency_key("produce-order-42-run-7");
    /// once.workers().create(&serde_json::json!({"name": "Ann"})).await?;
    /// # Ok(()) }
    /// ```
    pub fn with_idempotency_key(&self, key: impl Into<String>) -> Client {
        Client {
            inner: self.inner.clone(),
            idempotency_key: Some(Arc::from(key.into())),
        }
    }

    /// A client configured from `PRODOPS_BASE_URL` and `PRODOPS_API_KEY`.
    ///
    /// ```no_run
    /// let client = prodops_client::Client::from_env().unwrap();
    /// ```
    pub fn from_env() -> Result<Client> {
        Client::new(Config::from_env()?)
    }

    /// The configuration in use.
    ///
    /// ```
    /// let client = prodops_client::Client::new(prodops_client::Config::new("http://h", "k")).unwrap();
    /// assert_eq!(client.config().page_size, 5_000);
    /// ```
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// `<base_url>/api/v2`.
    ///
    /// ```
    /// let client = prodops_client::Client::new(prodops_client::Config::new("http://h", "k")).unwrap();
    /// assert_eq!(client.api_url(), "http://h/api/v2");
    /// ```
    pub fn api_url(&self) -> &str {
        &self.inner.api_url
    }

    /// Sends one request to `path` (relative to `/api/v2`, may carry a query string) with retries
    /// on 429 and on a 503 with `Retry-After`, and returns the answer whatever its status (errors are not raised here).
    /// POST and bulk calls get a fresh `Idempotency-Key`, kept across the retries.
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client) -> prodops_client::Result<()> {
    /// let raw = client.send_raw(prodops_client::Method::GET, "/worker/count", None).await?;
    /// assert_eq!(raw.status, 200);
    /// # Ok(()) }
    /// ```
    pub async fn send_raw(
        &self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> Result<RawResponse> {
        self.send_raw_as(method, path, body, "application/json")
            .await
    }

    /// [`Client::send_raw`] with a body of any `Content-Type` (a file's bytes, for example).
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client) -> prodops_client::Result<()> {
    /// let raw = client
    ///     .send_raw_as(prodops_client::Method::POST, "/document/upload",
    ///                  Some(bytes::Bytes::from_static(b"%PDF-1.7")), "application/pdf")
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub async fn send_raw_as(
        &self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
        content_type: &str,
    ) -> Result<RawResponse> {
        self.send_raw_with_headers(method, path, body, content_type, &[])
            .await
    }

    /// [`Client::send_raw_as`] with further request headers (`prodops api -H`). A header this
    /// client sets itself (`X-API-Key`, `Content-Type`, `Idempotency-Key`) given here replaces
    /// the client's.
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client) -> prodops_client::Result<()> {
    /// let raw = client
    ///     .send_raw_with_headers(prodops_client::Method::GET, "/worker", None, "application/json",
    ///                            &[("X-Request-Id", "nightly-sync-1")])
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub async fn send_raw_with_headers(
        &self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
        content_type: &str,
        headers: &[(&str, &str)],
    ) -> Result<RawResponse> {
        match self
            .exchange(method, path, body, content_type, headers, true)
            .await?
        {
            Exchange::Whole(raw) => Ok(raw),
            Exchange::Streaming(_) => unreachable!("asked for the whole answer"),
        }
    }

    /// One call: the request sent, and sent again as long as its answer says it is worth it
    /// ([`retry::is_retryable`]) or it got no answer and may be sent again
    /// ([`retry::is_resendable`]), at most `max_attempts` times. With `whole`, the answer's body
    /// is read within the attempt (a connection that breaks while the body arrives is a
    /// failure of that attempt); without it, a 2xx answer's body is left to stream.
    async fn exchange(
        &self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
        content_type: &str,
        headers: &[(&str, &str)],
        whole: bool,
    ) -> Result<Exchange> {
        let mut extra = reqwest::header::HeaderMap::new();
        for (name, value) in headers {
            let name = reqwest::header::HeaderName::from_bytes(name.trim().as_bytes())
                .map_err(|_| Error::Config(format!("header name {name:?}: not a header name")))?;
            let value = HeaderValue::from_str(value.trim())
                .map_err(|_| Error::Config(format!("header {name}: not a header value")))?;
            extra.insert(name, value);
        }
        let url = format!("{}{}", self.inner.api_url, path);
        let idempotency_key = match &self.idempotency_key {
            Some(key) if !method.is_read() => Some(key.to_string()),
            _ => wants_idempotency_key(&method, path).then(|| uuid::Uuid::new_v4().to_string()),
        };
        let keyed =
            idempotency_key.is_some() || extra.keys().any(|k| k.as_str() == "idempotency-key");
        let config = &self.inner.config;
        let mut attempt = 0;
        let mut lost_answer = false;
        loop {
            attempt += 1;
            let mut request = self.inner.http.request(method.to_reqwest(), &url);
            if let Some(key) = &config.api_key {
                request = request.header("X-API-Key", key);
            }
            if let Some(key) = &idempotency_key {
                request = request.header("Idempotency-Key", key);
            }
            if let Some(body) = &body {
                request = request
                    .header("Content-Type", content_type)
                    .body(body.clone());
            }
            if !extra.is_empty() {
                let mut built = request.build().map_err(network)?;
                for (name, value) in &extra {
                    built.headers_mut().insert(name.clone(), value.clone());
                }
                request = reqwest::RequestBuilder::from_parts(self.inner.http.clone(), built);
            }
            let failure = match request.send().await {
                Ok(response) => {
                    let status = response.status().as_u16();
                    let answer_headers = Headers::from_reqwest(response.headers());
                    // A write whose first answer was lost, sent again under its key while the
                    // server still works on the first: 409 "being processed"; wait for it.
                    let pending = lost_answer && keyed && status == 409;
                    let again = (retry::is_retryable(status, &answer_headers) || pending)
                        && attempt < config.max_attempts;
                    if !whole && !again && (200..300).contains(&status) {
                        return Ok(Exchange::Streaming(response));
                    }
                    match response.bytes().await {
                        Ok(_) if again => {
                            tokio::time::sleep(retry::retry_wait(
                                &answer_headers,
                                attempt,
                                config.max_retry_wait,
                            ))
                            .await;
                            continue;
                        }
                        Ok(body) => {
                            return Ok(Exchange::Whole(RawResponse {
                                status,
                                headers: answer_headers,
                                body,
                            }));
                        }
                        Err(e) => NetworkError::from_reqwest(e),
                    }
                }
                Err(e) => NetworkError::from_reqwest(e),
            };
            if retry::is_resendable(&failure, method, keyed)
                && attempt < retry::attempts_after(&failure, config)
            {
                lost_answer = true;
                tokio::time::sleep(retry::retry_wait(
                    &Headers::default(),
                    attempt,
                    config.max_retry_wait,
                ))
                .await;
                continue;
            }
            return Err(Error::Network(failure));
        }
    }

    /// `GET path` of an answer shaped `{"values": [...], ...}`, read as it arrives: each
    /// value's JSON text in turn, so that a large answer (a deliverable hierarchy of 100,000
    /// nodes) is never held whole. A status other than 2xx is [`Error::Api`]; an answer cut
    /// short is an error, never a short list.
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// let mut values = client
    ///     .values_stream(&format!("/deliverable/{id}/hierarchy?select=name,parentId"))
    ///     .await?;
    /// while let Some(text) = values.next_value().await? {
    ///     let record: serde_json::Value = serde_json::from_slice(&text).unwrap();
    ///     println!("{}", record["name"]);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn values_stream(&self, path: &str) -> Result<ValuesStream> {
        match self
            .exchange(Method::GET, path, None, JSON, &[], false)
            .await?
        {
            Exchange::Streaming(response) => Ok(ValuesStream::new(response)),
            Exchange::Whole(raw) => Err(raw
                .error()
                .unwrap_or_else(|| Error::Decode("an answer without values".into()))),
        }
    }

    /// Sends a request and returns the body of a 2xx answer; any other status becomes
    /// [`Error::Api`].
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client) -> prodops_client::Result<()> {
    /// let body = client.send(prodops_client::Method::GET, "/worker/count", None).await?;
    /// # Ok(()) }
    /// ```
    pub async fn send(&self, method: Method, path: &str, body: Option<Bytes>) -> Result<Bytes> {
        self.send_as(method, path, body, "application/json").await
    }

    async fn send_as(
        &self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
        content_type: &str,
    ) -> Result<Bytes> {
        let raw = self.send_raw_as(method, path, body, content_type).await?;
        match raw.error() {
            Some(error) => Err(error),
            None => Ok(raw.body),
        }
    }

    /// The one typed action mechanism: `method path` with an optional JSON body, the answer
    /// read as `R`. An empty answer (204) reads as JSON `null`, so `R = ()` fits bodiless
    /// actions. Every typed action method is this call with its own types.
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client) -> prodops_client::Result<()> {
    /// use prodops_client::Method;
    /// let answer: serde_json::Value = client
    ///     .action(Method::POST, "/notification/read-channel-comments",
    ///             Some(&serde_json::json!({"channelId": "0191c3a8-0000-7000-8000-000000000001"})))
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub async fn action<B, R>(&self, method: Method, path: &str, body: Option<&B>) -> Result<R>
    where
        B: Serialize + ?Sized,
        R: DeserializeOwned,
    {
        let body = body
            .map(|b| serde_json::to_vec(b).map(Bytes::from))
            .transpose()
            .map_err(|e| Error::Decode(format!("the request body cannot be written: {e}")))?;
        let bytes = self.send(method, path, body).await?;
        decode(&bytes)
    }

    /// The action mechanism for a raw body: `bytes` sent as they are with `content_type`
    /// (a file upload), the answer read as `R`. Retries and the idempotency key work as for
    /// [`Client::action`].
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client) -> prodops_client::Result<()> {
    /// use prodops_client::Method;
    /// let answer: serde_json::Value = client
    ///     .action_bytes(Method::POST, "/document/upload", bytes::Bytes::from_static(b"hello"), "text/plain")
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub async fn action_bytes<R: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Bytes,
        content_type: &str,
    ) -> Result<R> {
        let bytes = self.send_as(method, path, Some(body), content_type).await?;
        decode(&bytes)
    }

    /// The typed call of an action endpoint declared in `prodops_core::api`: the method and the
    /// path template come from `E::DESC`, the path's segments from `path`, the query string
    /// from `query`, the request body from `body` (JSON, or a file's bytes with its media type,
    /// or none, as `E::Body` says), and the answer is read as `E::Answer` says (`{"value": T}`
    /// unwrapped, a page, a file's bytes, nothing for a 204). It goes through the same send
    /// path as [`Client::action`]: retries, idempotency key, error mapping. An open endpoint
    /// (`Access::Open`: a signed download, accepting an invitation) is sent the same way: the
    /// key goes along when the client has one (the request's own credential decides), and a
    /// client configured without a key sends none.
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client, order: uuid::Uuid) -> prodops_client::Result<()> {
    /// use prodops_core::api::{PageQuery, production::OrderEntries};
    /// let page = client
    ///     .call::<OrderEntries>(order, &PageQuery { page: None, page_size: Some(100) }, &())
    ///     .await?;
    /// println!("{} entries", page.total_count);
    /// # Ok(()) }
    /// ```
    pub async fn call<E>(
        &self,
        path: E::Path,
        query: &E::Query,
        body: &<E::Body as BodyKind>::Send,
    ) -> Result<<E::Answer as AnswerKind>::Out>
    where
        E: Endpoint,
        E::Body: SendBody,
    {
        let desc = &E::DESC;
        let url = action_path(desc, &path.segments(), &query.pairs());
        let bytes = match <E::Body as SendBody>::encode(body)? {
            Encoded::None => self.send_as(method_of(desc), &url, None, JSON).await?,
            Encoded::Json(bytes) => {
                self.send_as(method_of(desc), &url, Some(bytes), JSON)
                    .await?
            }
            Encoded::Raw(bytes, content_type) => {
                self.send_as(method_of(desc), &url, Some(bytes), &content_type)
                    .await?
            }
        };
        <E::Answer as AnswerKind>::decode_with::<compat::Reader>(&bytes)
            .map_err(|e| decode_error(e, &bytes))
    }

    /// The untyped call of an action from its description alone (what the CLI sends): the
    /// path's segments in order, `(name, value)` query pairs (percent-encoded here), and the
    /// body. Answers the body of a 2xx answer as it came; the send path is
    /// [`Client::call`]'s.
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client, order: uuid::Uuid) -> prodops_client::Result<()> {
    /// use prodops_client::DescribedBody;
    /// use prodops_core::api::{Endpoint, production::OrderStatus};
    /// let body = client
    ///     .call_described(&OrderStatus::DESC, &[order.to_string()], &[], DescribedBody::None)
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub async fn call_described(
        &self,
        desc: &ActionDesc,
        segments: &[String],
        query: &[(String, String)],
        body: DescribedBody,
    ) -> Result<Bytes> {
        let url = action_path(desc, segments, query);
        let method = method_of(desc);
        match body {
            DescribedBody::None => self.send_as(method, &url, None, JSON).await,
            DescribedBody::Json(value) => {
                let bytes = serde_json::to_vec(&value).map_err(body_error)?;
                self.send_as(method, &url, Some(bytes.into()), JSON).await
            }
            DescribedBody::File {
                bytes,
                content_type,
            } => self.send_as(method, &url, Some(bytes), &content_type).await,
        }
    }

    /// A dry run of a write (docs/api.md, "Dry runs"): `method path` (relative to `/api/v2`,
    /// may carry a query string) with `dryRun=true` added. The server runs the write, hooks and
    /// rules included, rolls it back, and answers what it would have written: the write's own
    /// answer (`answer`, as JSON), the ledger rows and the events. Nothing is written and no
    /// idempotency key is used. A write the server would refuse is the same [`Error::Api`].
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client) -> prodops_client::Result<()> {
    /// use prodops_client::Method;
    /// let report = client
    ///     .dry_run(Method::POST, "/worker", Some(bytes::Bytes::from_static(br#"{"name":"Ann"}"#)))
    ///     .await?;
    /// assert_eq!(report.events[0].event_type, "worker.created");
    /// # Ok(()) }
    /// ```
    pub async fn dry_run(
        &self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> Result<DryRun<serde_json::Value>> {
        let path = with_dry_run(path);
        let bytes = self.send_as(method, &path, body, JSON).await?;
        decode(&bytes)
    }

    /// [`Client::call`] as a dry run ([`Client::dry_run`]): the action's answer, as it would
    /// have been, read as `E::Answer` says, with the ledger rows and events it would have
    /// written.
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client, req: prodops_client::production_actions::ProduceRequest) -> prodops_client::Result<()> {
    /// use prodops_core::api::production::Produce;
    /// let report = client.dry_run_call::<Produce>((), &(), &req).await?;
    /// println!("{} ledger rows", report.ledger.len());
    /// # Ok(()) }
    /// ```
    pub async fn dry_run_call<E>(
        &self,
        path: E::Path,
        query: &E::Query,
        body: &<E::Body as BodyKind>::Send,
    ) -> Result<DryRun<<E::Answer as AnswerKind>::Out>>
    where
        E: Endpoint,
        E::Body: SendBody,
    {
        let desc = &E::DESC;
        if !desc.takes_dry_run() {
            return Err(Error::Config(format!(
                "{} {} has no dry run",
                desc.method.as_str(),
                desc.path
            )));
        }
        let url = with_dry_run(&action_path(desc, &path.segments(), &query.pairs()));
        let bytes = match <E::Body as SendBody>::encode(body)? {
            Encoded::None => self.send_as(method_of(desc), &url, None, JSON).await?,
            Encoded::Json(bytes) => {
                self.send_as(method_of(desc), &url, Some(bytes), JSON)
                    .await?
            }
            Encoded::Raw(bytes, content_type) => {
                self.send_as(method_of(desc), &url, Some(bytes), &content_type)
                    .await?
            }
        };
        let report: DryRun<serde_json::Value> = decode(&bytes)?;
        let answer_bytes = serde_json::to_vec(&report.answer)
            .map_err(|e| Error::Decode(format!("the dry run's answer: {e}")))?;
        let answer = <E::Answer as AnswerKind>::decode_with::<compat::Reader>(&answer_bytes)
            .map_err(|e| decode_error(e, &answer_bytes))?;
        Ok(DryRun {
            dry_run: report.dry_run,
            answer,
            ledger: report.ledger,
            events: report.events,
        })
    }

    /// The standard endpoints of a core record type: `client.resource::<Worker>()`.
    ///
    /// ```
    /// use prodops_core::worker::Worker;
    /// let client = prodops_client::Client::new(prodops_client::Config::new("http://h", "k")).unwrap();
    /// assert_eq!(client.resource::<Worker>().path(), "worker");
    /// ```
    pub fn resource<T: prodops_core::Record>(&self) -> Resource<T> {
        Resource::new(self.clone(), T::DESC.path.to_string())
    }

    /// The standard endpoints of the resource at `path` (`worker`, `catalog-entry`, ...), over
    /// `serde_json::Value`. Any path is accepted, so endpoints newer than this crate work too.
    ///
    /// ```
    /// let client = prodops_client::Client::new(prodops_client::Config::new("http://h", "k")).unwrap();
    /// assert_eq!(client.resource_at("vendor").path(), "vendor");
    /// ```
    pub fn resource_at(&self, path: &str) -> Resource<serde_json::Value> {
        Resource::new(self.clone(), path.trim_matches('/').to_string())
    }

    /// The resource at `path` with its records read as `T`: any type they deserialize into,
    /// such as a projection of the few fields a caller needs (reading a large list into
    /// `serde_json::Value`s builds a map per record).
    ///
    /// ```
    /// #[derive(serde::Deserialize)]
    /// struct Name { name: String }
    /// let client = prodops_client::Client::new(prodops_client::Config::new("http://h", "k")).unwrap();
    /// assert_eq!(client.resource_as::<Name>("worker").path(), "worker");
    /// ```
    pub fn resource_as<T>(&self, path: &str) -> Resource<T>
    where
        T: serde::de::DeserializeOwned + Send + 'static,
    {
        Resource::new(self.clone(), path.trim_matches('/').to_string())
    }

    /// The workers (`/worker`), typed, with their archive and restore actions.
    ///
    /// ```
    /// let client = prodops_client::Client::new(prodops_client::Config::new("http://h", "k")).unwrap();
    /// assert_eq!(client.workers().path(), "worker");
    /// ```
    pub fn workers(&self) -> Resource<prodops_core::worker::Worker> {
        self.resource()
    }
}

const JSON: &str = "application/json";

/// The answer of [`Client::exchange`].
enum Exchange {
    Whole(RawResponse),
    Streaming(reqwest::Response),
}

fn network(e: reqwest::Error) -> Error {
    Error::Network(NetworkError::from_reqwest(e))
}

/// The body of [`Client::call_described`].
#[derive(Debug, Clone, PartialEq)]
pub enum DescribedBody {
    /// No body.
    None,
    /// A JSON body.
    Json(serde_json::Value),
    /// A file's bytes, sent as they are with this `Content-Type`.
    File { bytes: Bytes, content_type: String },
}

/// A request body, ready to send.
#[doc(hidden)]
pub enum Encoded {
    None,
    Json(Bytes),
    Raw(Bytes, String),
}

/// How the client sends each request-body kind of `prodops_core::api` (one impl per kind, so a
/// new kind in core is a compile error here until the client knows how to send it).
pub trait SendBody: BodyKind {
    #[doc(hidden)]
    fn encode(body: &Self::Send) -> Result<Encoded>;
}

fn body_error(e: serde_json::Error) -> Error {
    Error::Decode(format!("the request body cannot be written: {e}"))
}

fn json_body<B: Serialize + ?Sized>(body: &B) -> Result<Encoded> {
    serde_json::to_vec(body)
        .map(|b| Encoded::Json(b.into()))
        .map_err(body_error)
}

impl SendBody for NoBody {
    fn encode(_: &()) -> Result<Encoded> {
        Ok(Encoded::None)
    }
}

impl<T: Serialize> SendBody for Json<T>
where
    Json<T>: BodyKind<Send = T>,
{
    fn encode(body: &T) -> Result<Encoded> {
        json_body(body)
    }
}

impl<T: Serialize> SendBody for RecordJson<T>
where
    RecordJson<T>: BodyKind<Send = T>,
{
    fn encode(body: &T) -> Result<Encoded> {
        json_body(body)
    }
}

impl<T: Serialize> SendBody for OptionalJson<T>
where
    OptionalJson<T>: BodyKind<Send = T>,
{
    fn encode(body: &T) -> Result<Encoded> {
        json_body(body)
    }
}

impl<T: Serialize> SendBody for JsonList<T>
where
    JsonList<T>: BodyKind<Send = [T]>,
{
    fn encode(body: &[T]) -> Result<Encoded> {
        json_body(body)
    }
}

impl SendBody for FreeJson {
    fn encode(body: &serde_json::Value) -> Result<Encoded> {
        json_body(body)
    }
}

impl SendBody for RawFile {
    fn encode(body: &FileBody) -> Result<Encoded> {
        Ok(Encoded::Raw(
            Bytes::copy_from_slice(&body.bytes),
            body.content_type.clone(),
        ))
    }
}

/// The method of an action.
fn method_of(desc: &ActionDesc) -> Method {
    match desc.method {
        HttpMethod::Get => Method::GET,
        HttpMethod::Post => Method::POST,
        HttpMethod::Patch => Method::PATCH,
        HttpMethod::Delete => Method::DELETE,
    }
}

fn decode_error(e: serde_json::Error, bytes: &[u8]) -> Error {
    let sample: String = String::from_utf8_lossy(bytes).chars().take(200).collect();
    Error::Decode(format!("{e} in {sample}"))
}

/// Reads a JSON answer; an empty body reads as `null`.
/// `path` with `dryRun=true` added to its query string.
fn with_dry_run(path: &str) -> String {
    let sep = if path.contains('?') { '&' } else { '?' };
    format!("{path}{sep}{}=true", prodops_core::dry_run::PARAM)
}

pub(crate) fn decode<R: DeserializeOwned>(bytes: &[u8]) -> Result<R> {
    let text = if bytes.iter().all(u8::is_ascii_whitespace) {
        &b"null"[..]
    } else {
        bytes
    };
    compat::from_slice(text).map_err(|e| decode_error(e, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idempotency_keys_go_on_posts_and_bulk_calls() {
        assert!(wants_idempotency_key(&Method::POST, "/worker"));
        assert!(wants_idempotency_key(&Method::PUT, "/worker/bulk"));
        assert!(wants_idempotency_key(
            &Method::PATCH,
            "/worker/bulk?status=x"
        ));
        assert!(wants_idempotency_key(
            &Method::DELETE,
            "/vendor/bulk?name=a"
        ));
        assert!(!wants_idempotency_key(&Method::PATCH, "/worker/abc"));
        assert!(!wants_idempotency_key(&Method::GET, "/worker/bulk"));
    }

    #[test]
    fn empty_answers_read_as_null() {
        let unit: () = decode(b"").unwrap();
        assert_eq!(unit, ());
        let v: serde_json::Value = decode(b" ").unwrap();
        assert!(v.is_null());
        assert!(decode::<u64>(b"{").is_err());
    }

    /// Every declared action fills to a path of its own with no template left, and its method
    /// is one the client sends; the typed and the described call build the same path.
    #[test]
    fn every_declared_action_has_a_path() {
        use prodops_core::api::{ACTIONS, Endpoint, QueryArgs, member::Outbox};
        for desc in ACTIONS {
            let segments: Vec<String> = desc
                .path_params()
                .iter()
                .map(|p| format!("x-{p}"))
                .collect();
            let path = action_path(desc, &segments, &[]);
            assert!(!path.contains('{') && path.starts_with('/'), "{path}");
            assert_eq!(method_of(desc).as_str(), desc.method.as_str());
        }
        let query = prodops_core::api::member::OutboxQuery {
            kind: Some("invitation".into()),
            recipient: Some("a+b@example.com".into()),
        };
        assert_eq!(
            action_path(&Outbox::DESC, &[], &query.pairs()),
            "/outbox?kind=invitation&recipient=a%2Bb%40example.com"
        );
    }
}
