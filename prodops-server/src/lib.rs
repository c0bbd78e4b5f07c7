//! prodops-server: the Production Operations API v2 on axum, over SQLite (embedded default) or
//! PostgreSQL (many stateless processes sharing one database).
//!
//! `start` serves in the background and returns a handle; the `prodops-server` binary wraps it
//! with the operator subcommands.

//! The crate is layered; a module imports only from its own top-level module or from a lower
//! layer (`tests/layers.rs` checks it):
//!
//! 5. the composition root: this file, `main.rs`, `openapi.rs` (the whole document),
//!    `families.rs` (which hooks each resource is served with) and `router.rs` (every route);
//! 4. `explain` (why a deliverable is where it is, read across the families), then the
//!    resource families, each with its hooks and handlers: `deliverables`, `production`,
//!    `bom`, `inventory`, `deliveries`, `documents`, `members`, `notifications`, `qc`,
//!    `workers`, `catalog`, `events` (the change feed's reader), `webhooks` (the feed pushed
//!    to URLs) and `plans` (what bom and production share); they use each other only
//!    downwards, in the order `tests/layers.rs` gives (`RANKS`), so no two import
//!    each other;
//! 3. `engine` (the standard endpoints and the `Hooks` interface), `jobs`, `blob`, `admin`;
//! 2. `http`: the gateway every request passes and the request kernel;
//! 1. `store`: the database, the only module that knows SQL dialects.

pub mod admin;
pub mod blob;
pub mod bom;
pub mod catalog;
pub mod deliverables;
pub mod deliveries;
pub mod documents;
pub mod engine;
pub mod events;
pub mod explain;
pub mod families;
pub mod http;
pub mod inventory;
pub mod jobs;
pub mod lots;
pub mod members;
pub mod notifications;
pub mod openapi;
pub mod plans;
pub mod production;
pub mod qc;
pub mod router;
pub mod store;
pub mod webhooks;
pub mod workers;

// The paths these modules had before the crate was layered.
pub use engine::{hooks, rawjson};
pub use http::{app, call, clock, context, error, idempotency, ratelimit, text};
pub use store::Error;
pub use store::migrate;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use uuid::Uuid;

use crate::http::app::AppState;
use crate::http::ratelimit::RateLimiter;
use crate::store::Store;

/// How to run the server.
#[derive(Debug, Clone)]
pub struct Config {
    pub bind: SocketAddr,
    /// `sqlite://PATH`, `sqlite::memory:` or `postgres://...`.
    pub database_url: String,
    /// Requests per window per API key; a bulk call counts as one.
    pub rate_limit: u32,
    pub rate_limit_window: Duration,
    /// Where document files are kept; `None` for the default next to a SQLite file
    /// ([`blob::FilesConfig::default_for`]).
    pub files: Option<blob::FilesConfig>,
    /// How long a generated document link works.
    pub document_link_ttl: Duration,
    /// The address links start with (`https://prodops.example.com`); `None` for
    /// `http://<bound address>`.
    pub public_url: Option<String>,
    /// The clock document links, rate-limit windows and alerts as of now run on: the system clock, or (tests) a
    /// [`http::clock::Clock::manual`] one.
    pub clock: http::clock::Clock,
    /// How long one statement may run or wait for a lock before it is stopped and the request
    /// answers 503 (docs/operations.md); zero: no limit.
    pub statement_timeout: Duration,
    /// How long events of the change feed are kept (docs/events.md); older ones are pruned
    /// every hour by a durable job (`jobs::EVENT_PRUNE`), run by whichever process claims it.
    pub event_retention: Duration,
    /// How often this process tries to run the job that announces what time changes
    /// (`jobs::ALERT_EVENTS`, `deliverable.became-late`; docs/events.md, docs/operations.md):
    /// its poll interval, so a deliverable is announced within about that long after its
    /// `lateAt` passes. `None`: this process never runs it and leaves it to the others sharing
    /// the database (`serve --alert-events-poll-ms 0`; test servers, unless a test turns it on).
    pub alert_events: Option<Duration>,
    /// How webhook deliveries are made (docs/events.md, "Webhooks"): the SSRF guard's allowed
    /// hosts, attempts, backoff, time-out, lease.
    pub webhooks: webhooks::WebhookConfig,
}

impl Config {
    /// Defaults for a server on a free loopback port.
    pub fn new(database_url: impl Into<String>) -> Config {
        Config {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            database_url: database_url.into(),
            rate_limit: 6000,
            rate_limit_window: Duration::from_secs(60),
            files: None,
            document_link_ttl: Duration::from_secs(3600),
            public_url: None,
            clock: http::clock::Clock::system(),
            statement_timeout: store::DEFAULT_STATEMENT_TIMEOUT,
            event_retention: DEFAULT_EVENT_RETENTION,
            alert_events: Some(DEFAULT_ALERT_EVENTS_POLL),
            webhooks: webhooks::WebhookConfig::default(),
        }
    }
}

/// How long events are kept unless configured: 30 days.
pub const DEFAULT_EVENT_RETENTION: Duration = Duration::from_secs(30 * 24 * 3600);

/// How often the job that announces what time changes runs unless configured: every 10 s.
pub const DEFAULT_ALERT_EVENTS_POLL: Duration = Duration::from_secs(10);

/// A server serving in the background.
pub struct RunningServer {
    addr: SocketAddr,
    store: Store,
    shutdown: Option<oneshot::Sender<()>>,
    serve: JoinHandle<()>,
    background: Vec<JoinHandle<()>>,
}

/// Opens the database (running migrations), binds and serves in the background.
pub async fn start(config: Config) -> Result<RunningServer, Error> {
    let store = Store::open_with(&config.database_url, config.statement_timeout).await?;
    let listener = TcpListener::bind(config.bind).await?;
    serve_on(listener, store, &config).await
}

/// Serves on an already bound listener.
pub async fn serve_on(
    listener: TcpListener,
    store: Store,
    config: &Config,
) -> Result<RunningServer, Error> {
    let resources = Arc::new(families::resources());
    let addr = listener.local_addr()?;
    let files_config = config
        .files
        .clone()
        .unwrap_or_else(|| blob::FilesConfig::default_for(&config.database_url));
    let public_url = config
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{addr}"));
    let files = blob::Files::open(&files_config, &store, config.document_link_ttl, public_url)
        .await?
        .with_clock(config.clock.clone());
    // The open actions (a download link, accepting an invitation) carry their own credential.
    let (open_prefixes, open_paths) = http::action::open_paths();
    let mut services = axum::http::Extensions::new();
    services.insert(files);
    services.insert(config.webhooks.clone());
    let state = Arc::new(AppState {
        services,
        store: store.clone(),
        resources: resources.clone(),
        limiter: RateLimiter::new(config.rate_limit, config.rate_limit_window)
            .with_clock(config.clock.clone()),
        clock: config.clock.clone(),
        openapi: openapi::document().into(),
        jobs: Arc::new(tokio::sync::Notify::new()),
        events: Arc::new(tokio::sync::Notify::new()),
        point_reads: engine::point_reads(&resources),
        page_reads: engine::page_reads(&resources),
        open_prefixes,
        open_paths,
    });
    let mut background = vec![
        tokio::spawn(sync_rate_limits(state.clone())),
        tokio::spawn(jobs::run(
            state.clone(),
            jobs::Settings {
                event_retention: config.event_retention,
            },
        )),
        tokio::spawn(purge_idempotency(state.clone())),
        tokio::spawn(webhooks::run(state.clone())),
    ];
    if let Some(every) = config.alert_events {
        background.push(tokio::spawn(jobs::run_alert_events(state.clone(), every)));
    }
    let router = http::app::router(state, router::routes(&resources));
    let (tx, rx) = oneshot::channel::<()>();
    let serve = tokio::spawn(async move {
        let service = router.into_make_service_with_connect_info::<SocketAddr>();
        let result = axum::serve(listener, service)
            .with_graceful_shutdown(async {
                let _ = rx.await;
            })
            .await;
        if let Err(e) = result {
            tracing::error!("server stopped: {e}");
        }
    });
    Ok(RunningServer {
        addr,
        store,
        shutdown: Some(tx),
        serve,
        background,
    })
}

async fn sync_rate_limits(state: Arc<AppState>) {
    loop {
        tokio::time::sleep(http::ratelimit::SYNC_INTERVAL).await;
        if let Err(e) = state.limiter.sync(&state.store).await {
            tracing::warn!("rate limit sync failed: {e}");
        }
    }
}

async fn purge_idempotency(state: Arc<AppState>) {
    loop {
        let now = chrono::Utc::now().timestamp();
        if let Err(e) = state
            .store
            .write(move |tx| http::idempotency::purge_expired(tx, now))
            .await
        {
            tracing::warn!("idempotency purge failed: {e}");
        }
        tokio::time::sleep(Duration::from_secs(3600)).await;
    }
}

impl RunningServer {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://HOST:PORT`, without `/api/v2`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub async fn create_org(&self, name: &str, flags: &[&str]) -> Result<admin::CreatedOrg, Error> {
        admin::create_org(&self.store, name, flags).await
    }

    pub async fn create_key(
        &self,
        org: Uuid,
        admin: bool,
        permissions: &[&str],
    ) -> Result<admin::CreatedKey, Error> {
        admin::create_key(&self.store, org, admin, permissions).await
    }

    pub async fn revoke_key(&self, key_id: Uuid) -> Result<(), Error> {
        admin::revoke_key(&self.store, key_id).await
    }

    pub async fn set_flag(&self, org: Uuid, flag: &str, value: bool) -> Result<(), Error> {
        admin::set_flag(&self.store, org, flag, value).await
    }

    /// Sets an organization setting, `NAME=VALUE` (`admin::SETTINGS`; `NAME=null` clears it).
    pub async fn set_setting(&self, org: Uuid, setting: &str) -> Result<(), Error> {
        admin::set_setting(&self.store, org, setting).await
    }

    /// Stops accepting connections, finishes the requests in flight, stops background work.
    pub async fn shutdown(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        let serve = std::mem::replace(&mut self.serve, tokio::spawn(async {}));
        let _ = serve.await;
        for task in &self.background {
            task.abort();
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        for task in &self.background {
            task.abort();
        }
    }
}
