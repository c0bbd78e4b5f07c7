//! Test harness for the black-box HTTP tests of `prodops-server`.
//!
//! Every test starts its own server over real HTTP against a real database:
//!
//! - `PRODOPS_TEST_DATABASE_URL` unset or empty: a fresh SQLite file in a temporary directory
//!   per server;
//! - a `postgres://` URL: that shared database. Tests stay apart because each one creates its
//!   own organizations, and every record is scoped to its organization. A test of what reaches
//!   every organization of a database (webhook deliveries, the job that announces what time
//!   changes) starts its servers with [`TestServer::start_isolated_with`] instead: a database of
//!   its own on the same PostgreSQL server, dropped at the end.
//!
//! `TestServer::org` creates an organization with an admin key and returns an [`Api`] bound to
//! `<base_url>/api/v2` and that key. Request helpers return a [`Resp`] holding the status, the
//! headers, the raw text and the parsed JSON body (`Null` when empty or not JSON).

pub mod webhook_receiver;

use std::time::Duration;

use reqwest::Method;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use uuid::Uuid;

pub use prodops_server::clock::Clock;
pub use prodops_server::{Config, RunningServer};
pub use serde_json::json;

/// Words that must never appear in an error body: SQL text, database names, panics.
pub const FORBIDDEN_IN_ERRORS: &[&str] = &[
    "SELECT",
    "sqlite",
    "postgres",
    "panicked",
    "stack backtrace",
];

/// The database URL the tests run against: the environment's, or `None` for per-server SQLite.
pub fn shared_database_url() -> Option<String> {
    match std::env::var("PRODOPS_TEST_DATABASE_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url.trim().to_string()),
        _ => None,
    }
}

/// Whether the tests run against PostgreSQL.
pub fn on_postgres() -> bool {
    shared_database_url().is_some_and(|u| u.starts_with("postgres"))
}

/// A running server, its database (kept alive here when it is a temporary SQLite file), and an
/// HTTP client.
pub struct TestServer {
    server: Option<RunningServer>,
    base_url: String,
    database_url: String,
    // Document files: in the test's temporary directory, shared by every server on the database.
    files: prodops_server::blob::FilesConfig,
    client: reqwest::Client,
    // Dropped last: the SQLite file must outlive the server.
    _dir: Option<tempfile::TempDir>,
    // A PostgreSQL database of the test's own, shared with the servers `another` starts on it;
    // dropped with the last of them.
    own_database: Option<std::sync::Arc<OwnDatabase>>,
}

/// Prints the server's warnings (or what `RUST_LOG` asks for) through the test harness's
/// capture, so that a failing test shows why its server's background work (webhook deliveries,
/// jobs) did not get done, and a passing one stays quiet.
fn show_server_warnings() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_test_writer()
            .try_init();
    });
}

/// The statement timeout of test servers (see [`TestServer::start_with`] to set another).
pub const TEST_STATEMENT_TIMEOUT: Duration = Duration::from_secs(600);

/// Server starts on a shared PostgreSQL database run one at a time, so that the tests exercise
/// the API rather than concurrent migrations (a separate concern).
static START_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

impl TestServer {
    /// A server with the default configuration (rate limit 6,000 per 60 s).
    pub async fn start() -> TestServer {
        Self::start_with(|_| {}).await
    }

    /// A server whose configuration `adjust` may change (rate limits, ...).
    pub async fn start_with(adjust: impl FnOnce(&mut Config)) -> TestServer {
        let dir = tempfile::tempdir().expect("temporary directory");
        let files = prodops_server::blob::FilesConfig::Local(dir.path().join("files"));
        let url = shared_database_url().unwrap_or_else(|| sqlite_url_in(dir.path()));
        Self::start_on(url, files, Some(dir), None, adjust).await
    }

    /// A server on a database no other test uses: on PostgreSQL a new database
    /// (`prodops_t_<random>`) on the shared test database's server, dropped when the last
    /// server on it (this one, or one [`TestServer::another`] started) is; on SQLite a file of
    /// its own, as every server has. For tests of what reaches every organization of a database
    /// (webhook deliveries, the job that announces what time changes), which must neither see
    /// other tests' data nor disturb it.
    pub async fn start_isolated_with(adjust: impl FnOnce(&mut Config)) -> TestServer {
        let dir = tempfile::tempdir().expect("temporary directory");
        let files = prodops_server::blob::FilesConfig::Local(dir.path().join("files"));
        let (url, own) = database_of_its_own(dir.path()).await;
        Self::start_on(url, files, Some(dir), own.map(std::sync::Arc::new), adjust).await
    }

    /// A second server on this server's database (migrations run again on start), as another
    /// replica would be.
    pub async fn another(&self) -> TestServer {
        self.another_with(|_| {}).await
    }

    /// Another server on the same database, with its configuration adjusted.
    pub async fn another_with(&self, adjust: impl FnOnce(&mut Config)) -> TestServer {
        Self::start_on(
            self.database_url.clone(),
            self.files.clone(),
            None,
            self.own_database.clone(),
            adjust,
        )
        .await
    }

    /// The database URL this server runs on.
    pub fn database_url(&self) -> &str {
        &self.database_url
    }

    async fn start_on(
        url: String,
        files: prodops_server::blob::FilesConfig,
        dir: Option<tempfile::TempDir>,
        own_database: Option<std::sync::Arc<OwnDatabase>>,
        adjust: impl FnOnce(&mut Config),
    ) -> TestServer {
        show_server_warnings();
        let mut config = Config::new(url);
        config.files = Some(files.clone());
        // No test may depend on the machine's speed: a statement of a test at real sizes (a
        // 50,000-record bulk PUT in the debug build) can run past the production default on a
        // busy CI machine. Tests of the timeout itself set their own.
        config.statement_timeout = TEST_STATEMENT_TIMEOUT;
        // Test servers make no webhook deliveries unless a test turns them on, nor run the job
        // that announces what time changes: either reaches every organization of the database.
        // A delivering server claims any test's deliveries (a test counting attempts then sees
        // another's), and the job announces into other tests' feeds. The tests that turn them
        // on do so on a database of their own (`start_isolated_with`).
        config.webhooks.deliver = false;
        config.alert_events = None;
        adjust(&mut config);
        let database_url = config.database_url.clone();
        let shared = shared_database_url().is_some_and(|shared| shared == database_url);
        assert!(
            !(shared && (config.webhooks.deliver || config.alert_events.is_some())),
            "a server that delivers webhooks or announces what time changes reaches every \
             organization of its database: start it with TestServer::start_isolated_with"
        );
        let server = {
            let _guard = if database_url.starts_with("postgres") {
                Some(START_LOCK.lock().await)
            } else {
                None
            };
            prodops_server::start(config)
                .await
                .expect("the server starts")
        };
        let base_url = server.base_url();
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(120))
            .build()
            .expect("HTTP client");
        TestServer {
            server: Some(server),
            base_url,
            database_url,
            files,
            client,
            _dir: dir,
            own_database,
        }
    }

    /// The running server (for its admin functions).
    pub fn running(&self) -> &RunningServer {
        self.server.as_ref().expect("server still running")
    }

    /// The instance address, `http://127.0.0.1:PORT`, without `/api/v2`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// `<base_url>/api/v2`.
    pub fn api_url(&self) -> String {
        format!("{}/api/v2", self.base_url)
    }

    /// A fresh organization (the name gets a unique suffix) with an admin key.
    pub async fn org(&self, name: &str) -> Api {
        self.org_with_flags(name, &[]).await
    }

    /// A fresh organization with feature flags set.
    pub async fn org_with_flags(&self, name: &str, flags: &[&str]) -> Api {
        let unique = format!("{name} {}", Uuid::new_v4().simple());
        let created = self
            .running()
            .create_org(&unique, flags)
            .await
            .expect("create_org");
        Api {
            client: self.client.clone(),
            base: self.api_url(),
            key: Some(created.api_key),
            org_id: created.organization_id,
        }
    }

    /// Another key of `api`'s organization with the given permissions; returns the bound `Api`
    /// and the key's id.
    pub async fn key(&self, api: &Api, admin: bool, permissions: &[&str]) -> (Api, Uuid) {
        let created = self
            .running()
            .create_key(api.org_id, admin, permissions)
            .await
            .expect("create_key");
        (api.with_key(created.api_key), created.api_key_id)
    }

    /// A client of `/api/v2` that sends no key.
    pub fn anonymous(&self) -> Api {
        Api {
            client: self.client.clone(),
            base: self.api_url(),
            key: None,
            org_id: Uuid::nil(),
        }
    }

    /// A request to a path of the instance (outside `/api/v2`, e.g. `/healthz`), without a key.
    pub async fn get_root(&self, path: &str) -> Resp {
        let api = Api {
            client: self.client.clone(),
            base: self.base_url.clone(),
            key: None,
            org_id: Uuid::nil(),
        };
        api.get(path).await
    }

    /// Stops the server.
    pub async fn shutdown(mut self) {
        if let Some(server) = self.server.take() {
            server.shutdown().await;
        }
    }
}

/// Runs the feed's prune job (`jobs::EVENT_PRUNE`) now, on `server`'s database, and waits
/// (bounded, so that a job that never runs fails instead of hanging) until a process has run it:
/// it then waits for its next turn, an hour later. The job prunes every organization's events
/// older than the retention of the process that runs it, so a test that calls this with a short
/// retention runs in a test binary of its own (on a shared database, the other binaries run
/// before or after it, never beside it).
pub async fn prune_events_now(server: &TestServer) {
    use prodops_server::store::{SqlValue, Tx};
    let store = server.running().store().clone();
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_secs() as i64
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    // A run already under way (the server's own first run, claimed as it started, or another
    // process's) pruned as of its own start, before the events this test wants gone, and would
    // set the next turn an hour on when it ends, as if it were the run asked for here. So the
    // job is made due only while no run holds it: the run waited for below starts after `asked`.
    let asked = loop {
        let asked = now();
        let made_due = store
            .write(|tx: &mut dyn Tx| {
                tx.execute(
                    "UPDATE jobs SET run_after = 0 WHERE id = ? AND status = 'pending'",
                    &[SqlValue::from(prodops_server::jobs::EVENT_PRUNE_ID)],
                )
            })
            .await
            .expect("the prune job is due now");
        if made_due == 1 {
            break asked;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the prune job was never free to be made due"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    loop {
        let rows = store
            .read(|tx: &mut dyn Tx| {
                tx.query(
                    "SELECT status, run_after FROM jobs WHERE id = ?",
                    &[SqlValue::from(prodops_server::jobs::EVENT_PRUNE_ID)],
                )
            })
            .await
            .expect("the prune job's row");
        let row = rows.first().expect("one prune job");
        if row[0].as_str() == Some("pending") && row[1].as_i64().unwrap_or(0) >= asked + 3600 {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the prune job never ran: {row:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits (bounded) until the job that announces what time changes (`jobs::ALERT_EVENTS`,
/// docs/events.md) has run once on `server`'s database, so that its watermark stands at its
/// clock's now: a due date the test moves the clock past afterwards is announced, one passed
/// before is not. For servers on a database of their own ([`TestServer::start_isolated_with`])
/// whose configuration turned the job on.
pub async fn alert_events_started(server: &TestServer) {
    use prodops_server::store::{SqlValue, Tx};
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let rows = server
            .running()
            .store()
            .read(|tx: &mut dyn Tx| {
                tx.query(
                    "SELECT payload FROM jobs WHERE id = ?",
                    &[SqlValue::from(prodops_server::jobs::ALERT_EVENTS_ID)],
                )
            })
            .await
            .expect("the alert events' job");
        let payload = rows
            .first()
            .and_then(|r| r.first())
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string();
        if payload.contains("watermark") {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the alert events' job never ran: {payload}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The URL of a test server's SQLite database: a file in `dir`.
pub fn sqlite_url_in(dir: &std::path::Path) -> String {
    format!("sqlite://{}", dir.join("prodops.db").display())
}

/// A database no other test uses, for a test (or a server process it spawns) that must not see
/// other tests' data nor disturb it: answers its URL, with the [`OwnDatabase`] to keep alive
/// for as long as it is used. On PostgreSQL a new database (`prodops_t_<random>`) on the shared
/// test database's server; on SQLite a file in `dir`, as every test server has.
pub async fn database_of_its_own(dir: &std::path::Path) -> (String, Option<OwnDatabase>) {
    match shared_database_url().filter(|_| on_postgres()) {
        Some(shared) => {
            let (own, url) = OwnDatabase::create(&shared).await;
            (url, Some(own))
        }
        None => (sqlite_url_in(dir), None),
    }
}

/// A PostgreSQL database of one test's own, on the server of the shared test database:
/// created by [`database_of_its_own`] (and so by [`TestServer::start_isolated_with`]), dropped
/// (with whatever connections are left) when this is: for a test server, when the last server
/// on it is.
pub struct OwnDatabase {
    /// The shared database's URL, to connect to for the drop.
    admin_url: String,
    name: String,
}

impl OwnDatabase {
    /// Creates `prodops_t_<random>` next to the shared database of `admin_url`; answers it
    /// and its URL.
    async fn create(admin_url: &str) -> (OwnDatabase, String) {
        let name = format!("prodops_t_{}", Uuid::new_v4().simple());
        let (client, connection) = tokio_postgres::connect(admin_url, tokio_postgres::NoTls)
            .await
            .expect("a connection to the test database's server");
        tokio::spawn(connection);
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .expect("CREATE DATABASE for an isolated test");
        let (base, query) = match admin_url.split_once('?') {
            Some((base, query)) => (base, format!("?{query}")),
            None => (admin_url, String::new()),
        };
        let server = base
            .rsplit_once('/')
            .map(|(server, _)| server)
            .filter(|server| !server.ends_with('/'))
            .unwrap_or(base);
        let url = format!("{server}/{name}{query}");
        (
            OwnDatabase {
                admin_url: admin_url.to_string(),
                name,
            },
            url,
        )
    }
}

impl Drop for OwnDatabase {
    fn drop(&mut self) {
        let admin_url = self.admin_url.clone();
        let drop = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        // A runtime of its own on a thread of its own: the test's runtime may be the one
        // dropping this, or already gone.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            runtime.block_on(async {
                let (client, connection) =
                    tokio_postgres::connect(&admin_url, tokio_postgres::NoTls)
                        .await
                        .ok()?;
                tokio::spawn(connection);
                client.batch_execute(&drop).await.ok()
            })
        })
        .join();
        if !matches!(dropped, Ok(Some(()))) {
            eprintln!("could not drop the isolated test database {}", self.name);
        }
    }
}

/// A client of `/api/v2` bound to one organization's key.
#[derive(Clone)]
pub struct Api {
    client: reqwest::Client,
    base: String,
    key: Option<String>,
    /// The organization the key belongs to (nil for an anonymous client).
    pub org_id: Uuid,
}

/// A request body.
#[derive(Clone, Debug)]
pub enum Body {
    None,
    Json(Value),
    /// Sent as is with `Content-Type: application/json`.
    Raw(Vec<u8>),
}

impl Api {
    /// The same organization and base, another key.
    pub fn with_key(&self, key: impl Into<String>) -> Api {
        Api {
            key: Some(key.into()),
            ..self.clone()
        }
    }

    /// The same key, sent to another server (a replica on the same database).
    pub fn on(&self, server: &TestServer) -> Api {
        Api {
            base: server.api_url(),
            ..self.clone()
        }
    }

    /// The same base, no key.
    pub fn without_key(&self) -> Api {
        Api {
            key: None,
            ..self.clone()
        }
    }

    /// The key this client sends, if any.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// `<base_url>/api/v2`.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// A request builder for `method path` (path relative to `/api/v2`, e.g. `/worker?status=x`).
    pub fn req(&self, method: Method, path: &str) -> Req<'_> {
        Req {
            api: self,
            method,
            path: path.to_string(),
            body: Body::None,
            headers: Vec::new(),
        }
    }

    pub async fn get(&self, path: &str) -> Resp {
        self.req(Method::GET, path).send().await
    }
    pub async fn post(&self, path: &str, body: Value) -> Resp {
        self.req(Method::POST, path).json(body).send().await
    }
    pub async fn patch(&self, path: &str, body: Value) -> Resp {
        self.req(Method::PATCH, path).json(body).send().await
    }
    pub async fn put(&self, path: &str, body: Value) -> Resp {
        self.req(Method::PUT, path).json(body).send().await
    }
    pub async fn delete(&self, path: &str) -> Resp {
        self.req(Method::DELETE, path).send().await
    }
    /// A POST whose body is sent byte for byte as `application/json` (malformed JSON, huge bodies).
    pub async fn post_raw(&self, path: &str, body: impl Into<Vec<u8>>) -> Resp {
        self.req(Method::POST, path).raw(body).send().await
    }

    // ---- conveniences built on the above ----

    /// POST `/r` and expect 201; returns the created record.
    pub async fn create(&self, resource: &str, body: Value) -> Value {
        let resp = self.post(&format!("/{resource}"), body.clone()).await;
        assert_eq!(resp.status, 201, "POST /{resource} {body}: {resp}");
        assert!(
            resp.body.get("id").is_some_and(|v| v.is_string()),
            "created record has an id: {resp}"
        );
        resp.body
    }

    /// PUT `/r/bulk` and expect 200 `{count, ids}` with one id per record; returns the ids.
    pub async fn bulk_put(&self, resource: &str, records: Vec<Value>) -> Vec<String> {
        let n = records.len();
        let resp = self
            .put(&format!("/{resource}/bulk"), Value::Array(records))
            .await;
        assert_eq!(resp.status, 200, "PUT /{resource}/bulk: {resp}");
        assert_eq!(resp.body["count"].as_u64(), Some(n as u64), "count: {resp}");
        let ids: Vec<String> = resp.body["ids"]
            .as_array()
            .unwrap_or_else(|| panic!("ids array: {resp}"))
            .iter()
            .map(|v| v.as_str().expect("id string").to_string())
            .collect();
        assert_eq!(ids.len(), n, "one id per record: {resp}");
        ids
    }

    /// GET `/r/{id}` and expect 200; returns the record.
    pub async fn read(&self, resource: &str, id: &str) -> Value {
        let resp = self.get(&format!("/{resource}/{id}")).await;
        assert_eq!(resp.status, 200, "GET /{resource}/{id}: {resp}");
        resp.body
    }

    /// GET `/r?query` and expect 200 with `{values, totalCount}`; returns the values.
    pub async fn list(&self, resource: &str, query: &str) -> Vec<Value> {
        let path = if query.is_empty() {
            format!("/{resource}")
        } else {
            format!("/{resource}?{query}")
        };
        let resp = self.get(&path).await;
        assert_eq!(resp.status, 200, "GET {path}: {resp}");
        assert_list_shape(&resp);
        resp.body["values"].as_array().unwrap().clone()
    }

    /// The ids of GET `/r?query`, in order.
    pub async fn list_ids(&self, resource: &str, query: &str) -> Vec<String> {
        ids_of(&self.list(resource, query).await)
    }

    /// GET `/r/count?query` and expect 200 `{count}`.
    pub async fn count(&self, resource: &str, query: &str) -> u64 {
        let path = if query.is_empty() {
            format!("/{resource}/count")
        } else {
            format!("/{resource}/count?{query}")
        };
        let resp = self.get(&path).await;
        assert_eq!(resp.status, 200, "GET {path}: {resp}");
        resp.body["count"]
            .as_u64()
            .unwrap_or_else(|| panic!("GET {path}: count is a number: {resp}"))
    }

    /// How many records of `resource` exist, archived or not (sum of both list filters).
    pub async fn total(&self, resource: &str) -> u64 {
        let active = self.list_total(resource, "isArchived=false").await;
        let archived = self.list_total(resource, "isArchived=true").await;
        active + archived
    }

    /// `totalCount` of GET `/r?query`.
    pub async fn list_total(&self, resource: &str, query: &str) -> u64 {
        let path = if query.is_empty() {
            format!("/{resource}")
        } else {
            format!("/{resource}?{query}")
        };
        let resp = self.get(&path).await;
        assert_eq!(resp.status, 200, "GET {path}: {resp}");
        assert_list_shape(&resp);
        resp.body["totalCount"].as_u64().unwrap()
    }
}

/// A request being built.
pub struct Req<'a> {
    api: &'a Api,
    method: Method,
    path: String,
    body: Body,
    headers: Vec<(String, String)>,
}

impl Req<'_> {
    pub fn json(mut self, body: Value) -> Self {
        self.body = Body::Json(body);
        self
    }
    pub fn raw(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = Body::Raw(body.into());
        self
    }
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }
    pub fn idempotency_key(self, key: &str) -> Self {
        self.header("Idempotency-Key", key)
    }
    pub fn request_id(self, id: &str) -> Self {
        self.header("X-Request-Id", id)
    }

    pub async fn send(self) -> Resp {
        let url = format!("{}{}", self.api.base, self.path);
        let mut builder = self.api.client.request(self.method.clone(), &url);
        if let Some(key) = &self.api.key {
            builder = builder.header("X-API-Key", key);
        }
        for (name, value) in &self.headers {
            builder = builder.header(
                HeaderName::from_bytes(name.as_bytes()).expect("header name"),
                HeaderValue::from_str(value).expect("header value"),
            );
        }
        builder = match self.body {
            Body::None => builder,
            Body::Json(v) => builder
                .header("Content-Type", "application/json")
                .body(serde_json::to_vec(&v).unwrap()),
            Body::Raw(bytes) => builder
                .header("Content-Type", "application/json")
                .body(bytes),
        };
        let what = format!("{} {}", self.method, self.path);
        let response = builder
            .send()
            .await
            .unwrap_or_else(|e| panic!("{what}: request failed: {e:?}"));
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response
            .bytes()
            .await
            .unwrap_or_else(|e| panic!("{what}: reading the body failed: {e:?}"));
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let body = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::Null)
        };
        let resp = Resp {
            what,
            status,
            headers,
            body,
            text,
            key: self.api.key.clone(),
        };
        assert!(resp.status < 500, "server error (never a 5xx): {resp}");
        resp
    }
}

/// A response: status, headers, parsed body (`Null` when empty or not JSON) and raw text.
#[derive(Clone)]
pub struct Resp {
    /// `METHOD path` of the request, for messages.
    pub what: String,
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Value,
    pub text: String,
    key: Option<String>,
}

impl Resp {
    /// A header's value as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// A header's value as an integer.
    pub fn header_u64(&self, name: &str) -> Option<u64> {
        self.header(name).and_then(|v| v.trim().parse().ok())
    }

    /// The body's `id`.
    pub fn id(&self) -> String {
        self.body["id"]
            .as_str()
            .unwrap_or_else(|| panic!("{}: no id in {}", self.what, self.text))
            .to_string()
    }

    /// `error.code`, if the body is an error.
    pub fn code(&self) -> Option<&str> {
        self.body
            .get("error")
            .and_then(|e| e.get("code"))
            .and_then(|c| c.as_str())
    }
}

impl std::fmt::Display for Resp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text: String = self.text.chars().take(2000).collect();
        write!(f, "{} -> {} {}", self.what, self.status, text)
    }
}

impl std::fmt::Debug for Resp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// Checks the error shape of decisions.md section 3: status, `error.code`, a nonempty
/// `error.message`, `error.requestId` equal to the `X-Request-Id` header, `details` (if present)
/// an array of objects with a `message`, and no SQL, database names, panics or the API key.
pub fn assert_error(resp: &Resp, status: u16, code: &str) {
    assert_eq!(resp.status, status, "expected {status} {code}: {resp}");
    let error = resp
        .body
        .get("error")
        .unwrap_or_else(|| panic!("error body has an `error` object: {resp}"));
    assert!(error.is_object(), "`error` is an object: {resp}");
    assert_eq!(
        error.get("code").and_then(Value::as_str),
        Some(code),
        "error.code: {resp}"
    );
    let message = error.get("message").and_then(Value::as_str).unwrap_or("");
    assert!(
        !message.trim().is_empty(),
        "error.message is a nonempty string: {resp}"
    );
    let request_id = error
        .get("requestId")
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("error.requestId is a string: {resp}"));
    assert!(
        !request_id.is_empty(),
        "error.requestId is nonempty: {resp}"
    );
    assert_eq!(
        resp.header("x-request-id"),
        Some(request_id),
        "X-Request-Id header equals error.requestId: {resp}"
    );
    if let Some(details) = error.get("details") {
        let details = details
            .as_array()
            .unwrap_or_else(|| panic!("error.details is an array: {resp}"));
        for d in details {
            assert!(d.is_object(), "each detail is an object: {resp}");
            assert!(
                d.get("message").is_some_and(Value::is_string),
                "each detail has a message: {resp}"
            );
            if let Some(index) = d.get("index") {
                assert!(
                    index.is_u64() || index.is_null(),
                    "detail index is a number: {resp}"
                );
            }
            if let Some(field) = d.get("field") {
                assert!(
                    field.is_string() || field.is_null(),
                    "detail field is a string: {resp}"
                );
            }
        }
    }
    assert_clean(resp);
}

/// `assert_error` plus a nonempty `details` array.
pub fn assert_error_details(resp: &Resp, status: u16, code: &str) -> Vec<Value> {
    assert_error(resp, status, code);
    let details = resp.body["error"]["details"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        !details.is_empty(),
        "error.details lists what was wrong: {resp}"
    );
    details
}

/// A 400 `VALIDATION_ERROR` whose details name `field` (as a segment of a detail's `field` path,
/// `options[1]` or `[2].name`, or failing that in a `message`).
pub fn assert_validation_names(resp: &Resp, field: &str) {
    let details = assert_error_details(resp, 400, "VALIDATION_ERROR");
    let named = details.iter().any(|d| {
        d.get("field").and_then(Value::as_str).is_some_and(|f| {
            f.split(|c: char| !c.is_ascii_alphanumeric())
                .any(|part| part == field)
        }) || d
            .get("message")
            .and_then(Value::as_str)
            .is_some_and(|m| m.contains(field))
    });
    assert!(named, "details name the field `{field}`: {resp}");
}

/// The body leaks no SQL, database names, panics or the caller's key.
pub fn assert_clean(resp: &Resp) {
    for word in FORBIDDEN_IN_ERRORS {
        assert!(
            !resp.text.contains(word),
            "body must not contain {word:?}: {resp}"
        );
    }
    if let Some(key) = resp.key.as_ref().filter(|k| k.len() >= 8) {
        assert!(
            !resp.text.contains(key.as_str()),
            "body must not contain the API key: {resp}"
        );
    }
}

/// `{"values": [...], "totalCount": N}` with N at least the number of values.
pub fn assert_list_shape(resp: &Resp) {
    let values = resp.body.get("values").and_then(Value::as_array);
    assert!(values.is_some(), "list body has a `values` array: {resp}");
    let total = resp.body.get("totalCount").and_then(Value::as_u64);
    assert!(
        total.is_some(),
        "list body has a numeric `totalCount`: {resp}"
    );
    assert!(
        total.unwrap() as usize >= values.unwrap().len(),
        "totalCount >= values.len(): {resp}"
    );
}

/// The `id`s of records, in order.
pub fn ids_of(values: &[Value]) -> Vec<String> {
    values
        .iter()
        .map(|v| {
            v["id"]
                .as_str()
                .unwrap_or_else(|| panic!("record has an id: {v}"))
                .to_string()
        })
        .collect()
}

/// A field of records, in order, as text (`null` for a missing field).
pub fn field_of(values: &[Value], field: &str) -> Vec<String> {
    values
        .iter()
        .map(|v| match &v[field] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// A short unique suffix, for names and idempotency keys.
pub fn unique() -> String {
    Uuid::new_v4().simple().to_string()[..12].to_string()
}

/// Percent-encodes a query-string value.
pub fn enc(value: &str) -> String {
    let mut out = String::new();
    for b in value.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// `record` without the fields that legitimately change on every write.
pub fn without_timestamps(record: &Value) -> Value {
    let mut r = record.clone();
    if let Some(o) = r.as_object_mut() {
        o.remove("updatedAt");
    }
    r
}

/// A lock that a test holds with its own database connection, until released, so that a
/// server's write of one worker waits on it deterministically: on PostgreSQL a row lock on the
/// record (`SELECT ... FOR UPDATE`), on SQLite the database's write lock (`BEGIN EXCLUSIVE`).
pub enum WorkerLock {
    Postgres {
        client: tokio_postgres::Client,
        pid: i32,
    },
    Sqlite(rusqlite::Connection),
}

/// Makes the next read of `pg_stat_activity` on `client` current. Inside a transaction
/// PostgreSQL keeps its first read of that view until the transaction ends, so a test that
/// watches, from the transaction holding a lock, which backends wait for it would never see a
/// backend opened after that first read.
pub async fn clear_activity_snapshot(client: &tokio_postgres::Client) {
    client
        .batch_execute("SELECT pg_stat_clear_snapshot()")
        .await
        .unwrap();
}

impl WorkerLock {
    /// Locks the worker `id` of `api`'s organization against writers.
    pub async fn take(server: &TestServer, api: &Api, id: &str) -> WorkerLock {
        let url = server.database_url();
        if let Some(path) = url.strip_prefix("sqlite://") {
            let conn = rusqlite::Connection::open(path).expect("open the database file");
            // The server's own writers may hold the lock for a moment.
            conn.busy_timeout(Duration::from_secs(60)).unwrap();
            conn.execute_batch("BEGIN EXCLUSIVE")
                .expect("take the write lock");
            return WorkerLock::Sqlite(conn);
        }
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .expect("connect to PostgreSQL");
        tokio::spawn(connection);
        let pid: i32 = client
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .unwrap()
            .get(0);
        client.batch_execute("BEGIN").await.unwrap();
        let rows = client
            .query(
                "SELECT id FROM worker WHERE organization_id = $1 AND id = $2 FOR UPDATE",
                &[&api.org_id.to_string(), &id],
            )
            .await
            .unwrap();
        assert_eq!(rows.len(), 1, "the worker's row is locked");
        WorkerLock::Postgres { client, pid }
    }

    /// Whether the lock is PostgreSQL's row lock.
    pub fn on_postgres(&self) -> bool {
        matches!(self, WorkerLock::Postgres { .. })
    }

    /// PostgreSQL: how many backends wait for this lock (always 0 on SQLite), read from the
    /// lock's own transaction after [`clear_activity_snapshot`].
    pub async fn waiting(&self) -> i64 {
        match self {
            WorkerLock::Postgres { client, pid } => {
                clear_activity_snapshot(client).await;
                client
                    .query_one(
                        "SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))",
                        &[pid],
                    )
                    .await
                    .unwrap()
                    .get(0)
            }
            WorkerLock::Sqlite(_) => 0,
        }
    }

    pub async fn release(self) {
        match self {
            WorkerLock::Postgres { client, .. } => client.batch_execute("ROLLBACK").await.unwrap(),
            WorkerLock::Sqlite(conn) => conn.execute_batch("ROLLBACK").unwrap(),
        }
    }
}
