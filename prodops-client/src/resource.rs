//! The standard endpoints of every resource, written once (decisions.md section 4).

use std::fmt::Display;
use std::marker::PhantomData;

use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use prodops_core::{Archive, ResourceDesc};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::paths::encode;
use crate::{Client, Error, Method, Page, Result, decode};

/// One group of a group-and-count: `{"groupId": VALUE, "count": N}`.
///
/// ```
/// let g: prodops_client::GroupCount = serde_json::from_str(r#"{"groupId":"active","count":3}"#).unwrap();
/// assert_eq!(g.count, 3);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupCount {
    /// The grouped field's value.
    pub group_id: Value,
    /// How many records carry it.
    pub count: u64,
}

/// The answer of a bulk PUT: how many records were written and their ids in input order.
///
/// ```
/// let b: prodops_client::BulkPut = serde_json::from_str(r#"{"count":1,"ids":["x"]}"#).unwrap();
/// assert_eq!(b.ids, vec!["x".to_string()]);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BulkPut {
    /// How many records the call accepted.
    pub count: u64,
    /// The id of each record, in input order.
    pub ids: Vec<String>,
}

#[derive(Deserialize)]
struct Count {
    count: u64,
}

#[derive(Deserialize)]
struct Groups {
    values: Vec<GroupCount>,
}

/// One equality filter of a declared field, typed: made by the generated `RFilter` functions
/// (`WorkerFilter::status(WorkerStatus::Active)`), given to [`ListParams::with`].
///
/// ```
/// use prodops_client::{ListParams, WorkerFilter, worker::WorkerStatus};
/// let p = ListParams::new().with(WorkerFilter::status(WorkerStatus::Inactive));
/// assert_eq!(p.query_string(false), "status=inactive");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    field: &'static str,
    value: String,
}

impl Filter {
    /// The filter `field = value`, the value as a query string carries it (text as it is,
    /// anything else as its JSON).
    pub fn new(field: &'static str, value: impl Serialize) -> Filter {
        let value = match serde_json::to_value(value) {
            Ok(Value::String(s)) => s,
            Ok(other) => other.to_string(),
            Err(_) => String::new(),
        };
        Filter { field, value }
    }

    /// The field filtered on.
    pub fn field(&self) -> &'static str {
        self.field
    }

    /// The value, as text.
    pub fn value(&self) -> &str {
        &self.value
    }
}

/// Filters, search, sort and paging of a list (and the filter of a count or bulk call).
///
/// ```
/// let p = prodops_client::ListParams::new()
///     .filter("status", "active")
///     .search("ann")
///     .sort("-name");
/// assert_eq!(p.query_string(true), "status=active&search=ann&sort=-name");
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListParams {
    /// `field=value` equality filters; a repeated field matches any of its values.
    pub filters: Vec<(String, String)>,
    /// Case-insensitive substring over the resource's search columns.
    pub search: Option<String>,
    /// `f,-g`: the order (default: the resource's documented order).
    pub sort: Option<String>,
    /// The page size (default: the client's, 5,000).
    pub page_size: Option<u64>,
    /// The first page (1-based, default 1).
    pub page: Option<u64>,
    /// At most this many records in all.
    pub limit: Option<u64>,
    /// Pages fetched ahead while the caller consumes one (default 1).
    pub prefetch: Option<usize>,
}

impl ListParams {
    /// No filter, the default order and page size.
    ///
    /// ```
    /// assert!(prodops_client::ListParams::new().filters.is_empty());
    /// ```
    pub fn new() -> ListParams {
        ListParams::default()
    }

    /// Adds an equality filter.
    ///
    /// ```
    /// let p = prodops_client::ListParams::new().filter("isArchived", "true");
    /// assert_eq!(p.filters[0].1, "true");
    /// ```
    pub fn filter(mut self, field: impl Into<String>, value: impl Into<String>) -> ListParams {
        self.filters.push((field.into(), value.into()));
        self
    }

    /// Adds a typed filter (`WorkerFilter::status(WorkerStatus::Active)`): only fields users
    /// filter by, with values of their type. [`ListParams::filter`] is the untyped form.
    ///
    /// ```
    /// use prodops_client::{ListParams, WorkerFilter};
    /// let p = ListParams::new().with(WorkerFilter::is_archived(true));
    /// assert_eq!(p.filters[0], ("isArchived".to_string(), "true".to_string()));
    /// ```
    pub fn with(mut self, filter: Filter) -> ListParams {
        self.filters.push((filter.field.to_string(), filter.value));
        self
    }

    /// Sets the search text.
    ///
    /// ```
    /// assert_eq!(prodops_client::ListParams::new().search("x").search.as_deref(), Some("x"));
    /// ```
    pub fn search(mut self, text: impl Into<String>) -> ListParams {
        self.search = Some(text.into());
        self
    }

    /// Sets the order (`name`, `-createdAt`, `status,name`).
    ///
    /// ```
    /// assert_eq!(prodops_client::ListParams::new().sort("name").sort.as_deref(), Some("name"));
    /// ```
    pub fn sort(mut self, sort: impl Into<String>) -> ListParams {
        self.sort = Some(sort.into());
        self
    }

    /// Sets the page size (1 to 10,000).
    ///
    /// ```
    /// assert_eq!(prodops_client::ListParams::new().page_size(0).page_size, Some(1));
    /// ```
    pub fn page_size(mut self, size: u64) -> ListParams {
        self.page_size = Some(size.clamp(1, 10_000));
        self
    }

    /// Caps the number of records a list yields.
    ///
    /// ```
    /// assert_eq!(prodops_client::ListParams::new().limit(5).limit, Some(5));
    /// ```
    pub fn limit(mut self, n: u64) -> ListParams {
        self.limit = Some(n);
        self
    }

    /// Sets how many pages are fetched ahead of the one being consumed (at least 1).
    ///
    /// ```
    /// assert_eq!(prodops_client::ListParams::new().prefetch(0).prefetch, Some(1));
    /// ```
    pub fn prefetch(mut self, pages: usize) -> ListParams {
        self.prefetch = Some(pages.max(1));
        self
    }

    /// The query string (without `?`): filters and search, and with `paging` the sort.
    ///
    /// ```
    /// let p = prodops_client::ListParams::new().filter("name", "A&B").sort("name");
    /// assert_eq!(p.query_string(false), "name=A%26B");
    /// ```
    pub fn query_string(&self, paging: bool) -> String {
        let mut parts: Vec<String> = self
            .filters
            .iter()
            .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
            .collect();
        if let Some(s) = &self.search {
            parts.push(format!("search={}", encode(s)));
        }
        if paging && let Some(s) = &self.sort {
            parts.push(format!("sort={}", encode(s)));
        }
        parts.join("&")
    }

    /// The filters as a JSON `filter` object for query, count and group-and-count bodies
    /// (`true`/`false`/numbers stay text; the server compares by text). A repeated field
    /// becomes an array (any of).
    ///
    /// ```
    /// let p = prodops_client::ListParams::new().filter("status", "active").filter("status", "inactive");
    /// assert_eq!(p.filter_object()["status"], serde_json::json!(["active", "inactive"]));
    /// ```
    pub fn filter_object(&self) -> Map<String, Value> {
        let mut out = Map::new();
        for (k, v) in &self.filters {
            let value = if k == "isArchived" {
                match v.as_str() {
                    "true" => Value::Bool(true),
                    "false" => Value::Bool(false),
                    _ => Value::String(v.clone()),
                }
            } else {
                Value::String(v.clone())
            };
            match out.get_mut(k) {
                Some(Value::Array(items)) => items.push(value),
                Some(existing) => {
                    let first = existing.take();
                    *existing = Value::Array(vec![first, value]);
                }
                None => {
                    out.insert(k.clone(), value);
                }
            }
        }
        out
    }
}

/// The body of `POST /r/query`.
///
/// ```
/// let q = prodops_client::Query::new().ids(["a", "b"]).select(["name"]);
/// assert_eq!(serde_json::to_value(&q).unwrap()["select"], serde_json::json!(["name"]));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Query {
    /// Only these ids (archived ones included).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<Vec<String>>,
    /// Only these fields (plus `id`); dotted paths come back flattened.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub select: Option<Vec<String>>,
    /// Equality filters; an array matches any of its values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter: Option<Map<String, Value>>,
    /// Case-insensitive substring over the search columns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub search: Option<String>,
    /// The order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sort: Option<String>,
    /// 1-based page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<u64>,
    /// Page size (default: the number of ids, else 100).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_size: Option<u64>,
}

impl Query {
    /// An empty query (the first page of all non-archived records).
    ///
    /// ```
    /// assert_eq!(prodops_client::Query::new(), prodops_client::Query::default());
    /// ```
    pub fn new() -> Query {
        Query::default()
    }

    /// Only these ids.
    ///
    /// ```
    /// assert_eq!(prodops_client::Query::new().ids(["x"]).id.unwrap().len(), 1);
    /// ```
    pub fn ids<I: IntoIterator<Item = S>, S: Into<String>>(mut self, ids: I) -> Query {
        self.id = Some(ids.into_iter().map(Into::into).collect());
        self
    }

    /// Only these fields.
    ///
    /// ```
    /// assert_eq!(prodops_client::Query::new().select(["name"]).select.unwrap(), vec!["name"]);
    /// ```
    pub fn select<I: IntoIterator<Item = S>, S: Into<String>>(mut self, fields: I) -> Query {
        self.select = Some(fields.into_iter().map(Into::into).collect());
        self
    }

    /// Adds an equality filter (an array value matches any of its items).
    ///
    /// ```
    /// let q = prodops_client::Query::new().filter("status", serde_json::json!("active"));
    /// assert!(q.filter.unwrap().contains_key("status"));
    /// ```
    pub fn filter(mut self, field: impl Into<String>, value: Value) -> Query {
        self.filter
            .get_or_insert_with(Map::new)
            .insert(field.into(), value);
        self
    }

    /// Sets the page size.
    ///
    /// ```
    /// assert_eq!(prodops_client::Query::new().page_size(10).page_size, Some(10));
    /// ```
    pub fn page_size(mut self, size: u64) -> Query {
        self.page_size = Some(size);
        self
    }
}

/// The standard endpoints of one resource, typed as `T` (a core record type, or
/// `serde_json::Value`).
///
/// ```no_run
/// # async fn run(client: prodops_client::Client) -> prodops_client::Result<()> {
/// use prodops_core::worker::Worker;
/// let workers = client.resource::<Worker>();
/// let ann = workers.create(&serde_json::json!({"name": "Ann"})).await?;
/// let same = workers.get(ann.id).await?;
/// assert_eq!(same.name, "Ann");
/// # Ok(()) }
/// ```
pub struct Resource<T> {
    client: Client,
    path: String,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for Resource<T> {
    fn clone(&self) -> Self {
        Resource {
            client: self.client.clone(),
            path: self.path.clone(),
            _t: PhantomData,
        }
    }
}

impl<T> Resource<T>
where
    T: DeserializeOwned + Send + 'static,
{
    pub(crate) fn new(client: Client, path: String) -> Resource<T> {
        Resource {
            client,
            path,
            _t: PhantomData,
        }
    }

    /// The same endpoints with each record read as a [`Lenient`](crate::compat::Lenient): the
    /// record, and the fields the answer carried that this client's type does not declare
    /// (a newer server's), by JSON Pointer.
    ///
    /// ```
    /// let c = prodops_client::Client::new(prodops_client::Config::new("http://h", "k")).unwrap();
    /// let workers = c.workers().keeping_unknown();
    /// assert_eq!(workers.path(), "worker");
    /// ```
    pub fn keeping_unknown(&self) -> Resource<crate::compat::Lenient<T>> {
        Resource::new(self.client.clone(), self.path.clone())
    }

    /// The path under `/api/v2` (`worker`).
    ///
    /// ```
    /// let c = prodops_client::Client::new(prodops_client::Config::new("http://h", "k")).unwrap();
    /// assert_eq!(c.resource_at("/item/").path(), "item");
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The registered description of this resource, if core knows it.
    ///
    /// ```
    /// let c = prodops_client::Client::new(prodops_client::Config::new("http://h", "k")).unwrap();
    /// assert!(c.resource_at("worker").desc().is_some());
    /// assert!(c.resource_at("no-such").desc().is_none());
    /// ```
    pub fn desc(&self) -> Option<&'static ResourceDesc> {
        prodops_core::registry::by_path(&self.path).map(|k| k.desc())
    }

    fn url(&self, suffix: &str) -> String {
        format!("/{}{}", self.path, suffix)
    }

    async fn call<R: DeserializeOwned>(
        &self,
        method: Method,
        path: String,
        body: Option<Bytes>,
    ) -> Result<R> {
        let bytes = self.client.send(method, &path, body).await?;
        decode(&bytes)
    }

    /// `GET /r/export`: every record the filters and search of `params` match (its paging and
    /// sort are not sent: the export has none), read by the server in one snapshot and streamed,
    /// each record's JSON text in turn. [`ValuesStream::feed_cursor`](crate::ValuesStream::feed_cursor)
    /// is the feed cursor of that snapshot: the events after it are exactly the changes the
    /// export does not hold (docs/events.md, "Exports").
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client) -> prodops_client::Result<()> {
    /// let mut export = client.resource_at("worker").export(&prodops_client::ListParams::new()).await?;
    /// let cursor = export.feed_cursor().map(str::to_string);
    /// while let Some(text) = export.next_value().await? {
    ///     let _record: serde_json::Value = serde_json::from_slice(&text).unwrap();
    /// }
    /// // then: the events after `cursor` (`client.event_stream`)
    /// # Ok(()) }
    /// ```
    pub async fn export(&self, params: &ListParams) -> Result<crate::ValuesStream> {
        let query = params.query_string(false);
        let path = if query.is_empty() {
            self.url("/export")
        } else {
            self.url(&format!("/export?{query}"))
        };
        self.client.values_stream(&path).await
    }

    /// One page of `GET /r` (the page `params.page`, default 1).
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client) -> prodops_client::Result<()> {
    /// let page = client.resource_at("worker").list_page(&prodops_client::ListParams::new().page_size(10)).await?;
    /// println!("{} of {}", page.values.len(), page.total_count);
    /// # Ok(()) }
    /// ```
    pub async fn list_page(&self, params: &ListParams) -> Result<Page<T>> {
        let page = params.page.unwrap_or(1).max(1);
        let size = params.page_size.unwrap_or(self.client.config().page_size);
        self.fetch_page(params, page, size).await
    }

    async fn fetch_page(&self, params: &ListParams, page: u64, size: u64) -> Result<Page<T>> {
        let mut query = params.query_string(true);
        if !query.is_empty() {
            query.push('&');
        }
        query.push_str(&format!("page={page}&pageSize={size}"));
        self.call(Method::GET, self.url(&format!("?{query}")), None)
            .await
    }

    /// The answer of `GET /r` after the row `cursor` names (a `nextCursor` of an earlier page),
    /// as its bytes.
    async fn fetch_after(&self, params: &ListParams, cursor: &str, size: u64) -> Result<Bytes> {
        let mut query = params.query_string(true);
        if !query.is_empty() {
            query.push('&');
        }
        query.push_str(&format!("cursor={}&pageSize={size}", encode(cursor)));
        self.client
            .send(Method::GET, &self.url(&format!("?{query}")), None)
            .await
    }

    /// The pages after `first` by keyset: each request names the previous page's `nextCursor`,
    /// so no page makes the server skip rows. A task of its own fetches the pages ahead: it
    /// reads only the head of each answer (the cursor, with the records skipped over unparsed)
    /// and asks for the next page at once, so the server prepares page N+1 while the caller
    /// parses and consumes page N. At most `prefetch` answers wait, as bytes.
    fn keyset_pages(
        self,
        params: ListParams,
        first: Page<T>,
        size: u64,
        wanted: u64,
    ) -> BoxStream<'static, Result<Page<T>>> {
        /// A page's answer, read past its records.
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Head<'a> {
            #[serde(borrow)]
            values: Vec<&'a serde_json::value::RawValue>,
            #[serde(default)]
            next_cursor: Option<String>,
        }
        let prefetch = params.prefetch.unwrap_or(1).max(1);
        let (sender, receiver) = tokio::sync::mpsc::channel::<Result<Bytes>>(prefetch);
        let mut left = wanted.saturating_sub(first.values.len() as u64);
        let mut cursor = first
            .next_cursor
            .clone()
            .filter(|_| left > 0 && !first.values.is_empty());
        let this = self;
        tokio::spawn(async move {
            while let Some(c) = cursor.take() {
                let answer = this.fetch_after(&params, &c, size).await;
                if let Ok(bytes) = &answer {
                    match serde_json::from_slice::<Head<'_>>(bytes) {
                        Ok(head) if !head.values.is_empty() => {
                            left = left.saturating_sub(head.values.len() as u64);
                            cursor = head.next_cursor.filter(|_| left > 0);
                        }
                        // An empty page ends the list; an unreadable one is reported by
                        // the caller's parse.
                        _ => {}
                    }
                }
                if sender.send(answer).await.is_err() {
                    return; // The caller stopped reading.
                }
            }
        });
        let rest = stream::unfold(receiver, |mut receiver| async move {
            let page = match receiver.recv().await? {
                // Parsed on a blocking thread: the runtime's thread stays free to send the
                // next request and read its answer meanwhile (the CLI runs one thread).
                Ok(bytes) => tokio::task::spawn_blocking(move || decode::<Page<T>>(&bytes))
                    .await
                    .unwrap_or_else(|e| Err(Error::Decode(format!("parsing a page failed: {e}")))),
                Err(e) => Err(e),
            };
            Some((page, receiver))
        })
        .try_take_while(|page| std::future::ready(Ok(!page.values.is_empty())));
        stream::once(async move { Ok(first) }).chain(rest).boxed()
    }

    /// Every page of `GET /r` from `params.page` on, as a stream; pages after the first are
    /// fetched `params.prefetch` (default 1) ahead while the caller consumes, in order.
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client) -> prodops_client::Result<()> {
    /// use futures::TryStreamExt;
    /// let mut pages = client.resource_at("worker").pages(prodops_client::ListParams::new());
    /// while let Some(page) = pages.try_next().await? {
    ///     println!("{} records", page.values.len());
    /// }
    /// # Ok(()) }
    /// ```
    pub fn pages(&self, params: ListParams) -> BoxStream<'static, Result<Page<T>>> {
        let this = self.clone();
        let size = params.page_size.unwrap_or(self.client.config().page_size);
        let start = params.page.unwrap_or(1).max(1);
        let prefetch = params.prefetch.unwrap_or(1);
        let first = async move {
            let first = this.fetch_page(&params, start, size).await?;
            if first.next_cursor.is_some() {
                let wanted = params.limit.unwrap_or(u64::MAX);
                return Ok::<_, Error>(this.keyset_pages(params, first, size, wanted));
            }
            let skipped = (start - 1).saturating_mul(size);
            let mut wanted = first.total_count.saturating_sub(skipped);
            if let Some(limit) = params.limit {
                wanted = wanted.min(limit);
            }
            let pages = wanted.div_ceil(size).max(1);
            let full = first.values.len() as u64 >= size;
            let rest = (start + 1..start + pages)
                .take_while(move |_| full)
                .map(move |page| {
                    let this = this.clone();
                    let params = params.clone();
                    async move { this.fetch_page(&params, page, size).await }
                });
            let rest = stream::iter(rest)
                .buffered(prefetch + 1)
                .try_take_while(|p: &Page<T>| std::future::ready(Ok(!p.values.is_empty())));
            Ok::<_, Error>(stream::once(async move { Ok(first) }).chain(rest).boxed())
        };
        stream::once(first).try_flatten().boxed()
    }

    /// Every record of `GET /r`, paging by itself (large pages, see [`crate::Config::page_size`]).
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client) -> prodops_client::Result<()> {
    /// use futures::TryStreamExt;
    /// use prodops_core::worker::Worker;
    /// let archived: Vec<Worker> = client.resource::<Worker>()
    ///     .list(prodops_client::ListParams::new().filter("isArchived", "true"))
    ///     .try_collect().await?;
    /// # Ok(()) }
    /// ```
    pub fn list(&self, params: ListParams) -> BoxStream<'static, Result<T>> {
        let limit = params.limit.unwrap_or(u64::MAX);
        self.pages(params)
            .map_ok(|page| stream::iter(page.values.into_iter().map(Ok)))
            .try_flatten()
            .take(usize::try_from(limit).unwrap_or(usize::MAX))
            .boxed()
    }

    /// `GET /r/{id}`.
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client) -> prodops_client::Result<()> {
    /// let w = client.resource_at("worker").get("0191c3a8-0000-7000-8000-000000000001").await?;
    /// # Ok(()) }
    /// ```
    pub async fn get(&self, id: impl Display) -> Result<T> {
        self.call(
            Method::GET,
            self.url(&format!("/{}", encode(&id.to_string()))),
            None,
        )
        .await
    }

    /// `POST /r`: creates a record from `body` (any serializable value holding the fields).
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client) -> prodops_client::Result<()> {
    /// let vendor = client.resource_at("vendor").create(&serde_json::json!({"name": "Acme"})).await?;
    /// # Ok(()) }
    /// ```
    pub async fn create<B: Serialize + ?Sized>(&self, body: &B) -> Result<T> {
        self.call(Method::POST, self.url(""), Some(to_body(body)?))
            .await
    }

    /// `PATCH /r/{id}`: sets the fields of `patch`.
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client) -> prodops_client::Result<()> {
    /// let w = client.resource_at("worker")
    ///     .update("0191c3a8-0000-7000-8000-000000000001", &serde_json::json!({"status": "inactive"}))
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub async fn update<B: Serialize + ?Sized>(&self, id: impl Display, patch: &B) -> Result<T> {
        self.call(
            Method::PATCH,
            self.url(&format!("/{}", encode(&id.to_string()))),
            Some(to_body(patch)?),
        )
        .await
    }

    /// `DELETE /r/{id}` (archives where the resource archives on delete).
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client) -> prodops_client::Result<()> {
    /// client.resource_at("vendor").delete("0191c3a8-0000-7000-8000-000000000001").await?;
    /// # Ok(()) }
    /// ```
    pub async fn delete(&self, id: impl Display) -> Result<()> {
        self.client
            .send(
                Method::DELETE,
                &self.url(&format!("/{}", encode(&id.to_string()))),
                None,
            )
            .await?;
        Ok(())
    }

    /// `POST /r/query` read as `T` (use [`Resource::query_values`] with `select`).
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client) -> prodops_client::Result<()> {
    /// let page = client.workers().query(&prodops_client::Query::new().ids(["0191c3a8-0000-7000-8000-000000000001"])).await?;
    /// # Ok(()) }
    /// ```
    pub async fn query(&self, query: &Query) -> Result<Page<T>> {
        self.call(Method::POST, self.url("/query"), Some(to_body(query)?))
            .await
    }

    /// `POST /r/query` read as JSON values (for `select`, whose answers hold only some fields).
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client) -> prodops_client::Result<()> {
    /// let page = client.workers()
    ///     .query_values(&prodops_client::Query::new().select(["customerIdentifier"]).page_size(10_000))
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub async fn query_values(&self, query: &Query) -> Result<Page<Value>> {
        self.call(Method::POST, self.url("/query"), Some(to_body(query)?))
            .await
    }

    /// `GET /r/count` with the filters and search of `params`.
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client) -> prodops_client::Result<()> {
    /// let n = client.workers().count(&prodops_client::ListParams::new().filter("status", "active")).await?;
    /// # Ok(()) }
    /// ```
    pub async fn count(&self, params: &ListParams) -> Result<u64> {
        let query = params.query_string(false);
        let path = if query.is_empty() {
            self.url("/count")
        } else {
            self.url(&format!("/count?{query}"))
        };
        let c: Count = self.call(Method::GET, path, None).await?;
        Ok(c.count)
    }

    /// `POST /r/group-and-count`: the number of records per value of `field`, largest first.
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client) -> prodops_client::Result<()> {
    /// let groups = client.workers().group_and_count("status", &prodops_client::ListParams::new()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn group_and_count(
        &self,
        field: &str,
        params: &ListParams,
    ) -> Result<Vec<GroupCount>> {
        let mut body = json!({ "groupByField": field });
        let filter = params.filter_object();
        if !filter.is_empty() {
            body["filter"] = Value::Object(filter);
        }
        let g: Groups = self
            .call(
                Method::POST,
                self.url("/group-and-count"),
                Some(to_body(&body)?),
            )
            .await?;
        Ok(g.values)
    }

    /// `PUT /r/bulk`: upserts the records (with `id`: update or create with that id; without:
    /// create), all or nothing.
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client) -> prodops_client::Result<()> {
    /// let out = client.workers().bulk_put(&[serde_json::json!({"name": "A"}), serde_json::json!({"name": "B"})]).await?;
    /// assert_eq!(out.ids.len(), 2);
    /// # Ok(()) }
    /// ```
    pub async fn bulk_put<B: Serialize>(&self, records: &[B]) -> Result<BulkPut> {
        self.bulk_put_raw(to_body(records)?).await
    }

    /// `PUT /r/bulk` with an already serialized JSON array (what importers that stream build).
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client) -> prodops_client::Result<()> {
    /// client.workers().bulk_put_raw(bytes::Bytes::from_static(br#"[{"name":"A"}]"#)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn bulk_put_raw(&self, body: Bytes) -> Result<BulkPut> {
        self.call(Method::PUT, self.url("/bulk"), Some(body)).await
    }

    /// `PATCH /r/bulk?filters`: sets the fields of `patch` on every match; returns the count.
    /// The server refuses a call without a filter or search.
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client) -> prodops_client::Result<()> {
    /// let n = client.workers().bulk_update(
    ///     &prodops_client::ListParams::new().filter("status", "inactive"),
    ///     &serde_json::json!({"exemptFromAssignments": true})).await?;
    /// # Ok(()) }
    /// ```
    pub async fn bulk_update<B: Serialize + ?Sized>(
        &self,
        params: &ListParams,
        patch: &B,
    ) -> Result<u64> {
        let path = self.url(&format!("/bulk?{}", params.query_string(false)));
        let c: Count = self
            .call(Method::PATCH, path, Some(to_body(patch)?))
            .await?;
        Ok(c.count)
    }

    /// `DELETE /r/bulk?filters`: deletes (or archives) every match; returns the count.
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client) -> prodops_client::Result<()> {
    /// let n = client.resource_at("vendor")
    ///     .bulk_delete(&prodops_client::ListParams::new().filter("status", "inactive")).await?;
    /// # Ok(()) }
    /// ```
    pub async fn bulk_delete(&self, params: &ListParams) -> Result<u64> {
        let path = self.url(&format!("/bulk?{}", params.query_string(false)));
        let c: Count = self.call(Method::DELETE, path, None).await?;
        Ok(c.count)
    }

    /// Archives a record the way its resource archives (spec 3.5): `DELETE` where delete
    /// archives, `PATCH {"isArchived": true}` for workers, `POST /r/{id}/archive` for
    /// deliveries. Returns the record as it is afterwards.
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client) -> prodops_client::Result<()> {
    /// let w = client.workers().archive("0191c3a8-0000-7000-8000-000000000001").await?;
    /// assert!(w.is_archived);
    /// # Ok(()) }
    /// ```
    pub async fn archive(&self, id: impl Display) -> Result<T> {
        self.set_archived(id.to_string(), true).await
    }

    /// Restores an archived record (spec 3.5): `PATCH {"isArchived": false}`, or
    /// `POST /r/{id}/restore` for deliveries. Returns the record as it is afterwards.
    ///
    /// ```no_run
    /// # async fn run(client: prodops_client::Client) -> prodops_client::Result<()> {
    /// let w = client.workers().restore("0191c3a8-0000-7000-8000-000000000001").await?;
    /// assert!(!w.is_archived);
    /// # Ok(()) }
    /// ```
    pub async fn restore(&self, id: impl Display) -> Result<T> {
        self.set_archived(id.to_string(), false).await
    }

    async fn set_archived(&self, id: String, archived: bool) -> Result<T> {
        let archive = self.desc().map(|d| d.archive).unwrap_or(Archive::OnDelete);
        let item = self.url(&format!("/{}", encode(&id)));
        match (archive, archived) {
            (Archive::No, _) => Err(Error::Config(format!(
                "/{} records are not archivable",
                self.path
            ))),
            (Archive::OnDelete, true) => {
                self.client.send(Method::DELETE, &item, None).await?;
                self.call(Method::GET, item, None).await
            }
            (Archive::Actions, _) => {
                let verb = if archived { "archive" } else { "restore" };
                self.client
                    .send(Method::POST, &format!("{item}/{verb}"), None)
                    .await?;
                self.call(Method::GET, item, None).await
            }
            (Archive::OnDelete | Archive::PatchOnly, _) => {
                self.call(
                    Method::PATCH,
                    item,
                    Some(to_body(&json!({ "isArchived": archived }))?),
                )
                .await
            }
        }
    }
}

fn to_body<B: Serialize + ?Sized>(body: &B) -> Result<Bytes> {
    serde_json::to_vec(body)
        .map(Bytes::from)
        .map_err(|e| Error::Decode(format!("the request body cannot be written: {e}")))
}
