//! Webhooks (docs/events.md, "Webhooks"): the change feed pushed to URLs.
//!
//! - `/webhook` is a standard resource ([`prodops_core::webhook::Webhook`]) served by the
//!   engine with [`WebhookHooks`]: admin keys only; the write-only secret kept beside the record
//!   (`webhook_state`), never in it.
//! - Fan-out: every server process, once per poll interval, walks each webhook's position in
//!   the feed (a per-webhook cursor) and queues one `webhook_deliveries` row per matching event,
//!   in one transaction with the cursor's move. Writes of records never touch webhooks.
//! - Delivery: every process claims due rows with a lease, POSTs them signed, and records the
//!   outcome; a lease that runs out (a process killed mid-delivery) makes the row due again.
//! - `POST /webhook/{id}/redeliver`, `POST /webhook/{id}/test`, `GET /webhook/{id}/deliveries`.

use prodops_core::registry::ResourceId;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use hmac::{Hmac, Mac};
use prodops_core::api;
use prodops_core::event::{Cursor, Event};
use prodops_core::webhook::{
    AllowList, RedeliverRequest, RedeliverResult, Webhook, WebhookDelivery, WebhookDeliveryStatus,
    WebhookTestResult, backoff_ms, check_url, feed_filter,
};
use serde_json::{Map, Value};
use sha2::Sha256;
use uuid::Uuid;

use crate::engine::ServedResource;
use crate::engine::hooks::{DeleteAction, Hooks};
use crate::http::app::AppState;
use crate::http::call::Call;
use crate::http::context::{Action, Auth, Ctx, format_time};
use crate::http::error::{ApiError, ApiResult};
use crate::http::typed::{Answered, ServedQuery, Shaped};
use crate::store::events::EventFilter;
use crate::store::records;
use crate::store::webhooks::{self as rows, Claimed, NewDelivery, Outcome};
use crate::store::{StoreError, Tx};
use prodops_core::api::Page;

crate::http::action::handle! {
    api::webhook::Redeliver => redeliver;
    api::webhook::Test => test;
    api::webhook::Deliveries => deliveries;
}

/// How deliveries are made; one per server process (`Config::webhooks`).
#[derive(Debug, Clone)]
pub struct WebhookConfig {
    /// Whether this process fans events out and makes deliveries (`PRODOPS_WEBHOOK_DELIVER`,
    /// default on); a process with it off still serves the webhook endpoints.
    pub deliver: bool,
    /// Hosts and ranges deliveries may reach although they are not public addresses.
    pub allow: AllowList,
    /// Attempts before a delivery is dead.
    pub max_attempts: u32,
    /// The first retry waits up to this long; each further one up to twice as long.
    pub backoff_base: Duration,
    /// No wait is longer.
    pub backoff_cap: Duration,
    /// How long a receiver has to answer (connecting included); a time-out is a failure.
    pub timeout: Duration,
    /// How long a claimed delivery is reserved for the process attempting it.
    pub lease: Duration,
    /// How often a process looks for new events and due deliveries (its own commits wake it).
    pub poll: Duration,
}

impl Default for WebhookConfig {
    fn default() -> Self {
        WebhookConfig {
            deliver: true,
            allow: AllowList::default(),
            max_attempts: 12,
            backoff_base: Duration::from_secs(30),
            backoff_cap: Duration::from_secs(6 * 3600),
            timeout: Duration::from_secs(10),
            lease: Duration::from_secs(60),
            poll: Duration::from_secs(1),
        }
    }
}

impl WebhookConfig {
    /// The defaults, with what the environment sets (`PRODOPS_WEBHOOK_DELIVER`,
    /// `PRODOPS_WEBHOOK_ALLOW_HOSTS`,
    /// `PRODOPS_WEBHOOK_MAX_ATTEMPTS`, `PRODOPS_WEBHOOK_BACKOFF_BASE_MS`,
    /// `PRODOPS_WEBHOOK_BACKOFF_CAP_MS`, `PRODOPS_WEBHOOK_TIMEOUT_MS`,
    /// `PRODOPS_WEBHOOK_LEASE_MS`, `PRODOPS_WEBHOOK_POLL_MS`); a value that does not read is
    /// an error naming the variable.
    pub fn from_env() -> Result<WebhookConfig, String> {
        let mut c = WebhookConfig::default();
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        if let Some(v) = var("PRODOPS_WEBHOOK_ALLOW_HOSTS") {
            c.allow =
                AllowList::parse(&v).map_err(|e| format!("PRODOPS_WEBHOOK_ALLOW_HOSTS: {e}"))?;
        }
        if let Some(v) = var("PRODOPS_WEBHOOK_DELIVER") {
            c.deliver = match v.trim() {
                "1" | "true" | "on" => true,
                "0" | "false" | "off" => false,
                _ => return Err("PRODOPS_WEBHOOK_DELIVER must be true or false".into()),
            };
        }
        let num = |name: &str| -> Result<Option<u64>, String> {
            var(name)
                .map(|v| {
                    v.trim()
                        .parse::<u64>()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or(format!("{name} must be a positive whole number"))
                })
                .transpose()
        };
        if let Some(n) = num("PRODOPS_WEBHOOK_MAX_ATTEMPTS")? {
            c.max_attempts = n.min(1000) as u32;
        }
        let ms = Duration::from_millis;
        if let Some(n) = num("PRODOPS_WEBHOOK_BACKOFF_BASE_MS")? {
            c.backoff_base = ms(n);
        }
        if let Some(n) = num("PRODOPS_WEBHOOK_BACKOFF_CAP_MS")? {
            c.backoff_cap = ms(n);
        }
        if let Some(n) = num("PRODOPS_WEBHOOK_TIMEOUT_MS")? {
            c.timeout = ms(n);
        }
        if let Some(n) = num("PRODOPS_WEBHOOK_LEASE_MS")? {
            c.lease = ms(n);
        }
        if let Some(n) = num("PRODOPS_WEBHOOK_POLL_MS")? {
            c.poll = ms(n);
        }
        if c.lease <= c.timeout {
            c.lease = c.timeout + Duration::from_secs(5);
        }
        Ok(c)
    }

    fn of(state: &AppState) -> WebhookConfig {
        state
            .services
            .get::<WebhookConfig>()
            .cloned()
            .unwrap_or_default()
    }
}

/// The hooks of `/webhook`: admin keys only, and the secret kept out of the record.
pub struct WebhookHooks;

fn record_id(candidate: &Map<String, Value>) -> ApiResult<Uuid> {
    candidate
        .get("id")
        .and_then(Value::as_str)
        .and_then(|s| Uuid::parse_str(s).ok())
        .ok_or_else(|| ApiError::internal("a webhook candidate without an id"))
}

impl Hooks for WebhookHooks {
    fn authorize(&self, auth: &Auth, _res: &ServedResource, _action: Action) -> ApiResult<()> {
        if auth.admin {
            Ok(())
        } else {
            Err(ApiError::forbidden(
                "webhooks are for admin keys: a webhook receives every event of the organization",
            ))
        }
    }

    fn before_create(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        candidate: &mut Map<String, Value>,
    ) -> ApiResult<()> {
        let id = record_id(candidate)?;
        match candidate.get("secret") {
            Some(Value::String(s)) => Ok(rows::set_secret(tx, ctx.org(), id, s)?),
            _ => Err(ApiError::field(
                "secret",
                "is required: the key deliveries are signed with (16 to 256 characters)",
            )),
        }
    }

    fn before_update(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        _old: &Value,
        patch: &Map<String, Value>,
        candidate: &mut Map<String, Value>,
    ) -> ApiResult<()> {
        if let Some(Value::String(s)) = patch.get("secret") {
            rows::set_secret(tx, ctx.org(), record_id(candidate)?, s)?;
        }
        Ok(())
    }

    fn before_delete(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        record: &Value,
    ) -> ApiResult<DeleteAction> {
        if let Some(id) = record["id"].as_str().and_then(|s| Uuid::parse_str(s).ok()) {
            rows::forget(tx, ctx.org(), id)?;
        }
        Ok(DeleteAction::Proceed)
    }
}

/// A webhook of the organization (404 when it has none with this id).
fn load(tx: &mut dyn Tx, org: Uuid, id: Uuid) -> ApiResult<Webhook> {
    let table = ResourceId::Webhook.kind().desc().table;
    let record = records::get(tx, table, org, id)?.ok_or_else(ApiError::not_found)?;
    serde_json::from_value(record).map_err(ApiError::internal)
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn ms_text(ms: i64) -> String {
    format_time(chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default())
}

// ---- Signing and sending ---------------------------------------------------------------

/// `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`.
pub fn signature(secret: &str, t: i64, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(t.to_string().as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    format!("t={t},v1={}", hex::encode(mac.finalize().into_bytes()))
}

/// Why an attempt failed.
#[derive(Debug, Clone)]
struct Failure {
    status: Option<u16>,
    error: String,
}

fn failure(error: impl Into<String>) -> Failure {
    Failure {
        status: None,
        error: error.into(),
    }
}

/// The addresses a delivery to `host:port` may connect to: every address the host resolves
/// to, each checked against the guard (one refused address refuses the delivery).
async fn resolve(cfg: &WebhookConfig, host: &str, port: u16) -> Result<Vec<SocketAddr>, Failure> {
    let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::time::timeout(cfg.timeout, tokio::net::lookup_host((host, port)))
            .await
            .map_err(|_| failure("resolving the host timed out"))?
            .map_err(|e| failure(format!("the host does not resolve: {e}")))?
            .collect(),
    };
    if addrs.is_empty() {
        return Err(failure("the host resolves to no address"));
    }
    if let Some(bad) = addrs.iter().find(|a| !cfg.allow.permits(host, a.ip())) {
        return Err(failure(format!(
            "refused by the address guard: {host} resolves to {}, which is not a public address \
             (allow it with PRODOPS_WEBHOOK_ALLOW_HOSTS)",
            bad.ip()
        )));
    }
    Ok(addrs)
}

/// Headers of one attempt beyond the signature.
struct Attempt<'a> {
    webhook: Uuid,
    delivery: Option<Uuid>,
    event_id: &'a str,
    attempt: i64,
}

/// One POST: the guard, the signature, no redirects, the time-out. `Ok` with the 2xx status.
async fn post(
    cfg: &WebhookConfig,
    url: &str,
    secret: &str,
    body: String,
    a: &Attempt<'_>,
) -> Result<u16, Failure> {
    let parts = check_url(url).map_err(|e| failure(format!("url: {e}")))?;
    let addrs = resolve(cfg, &parts.host, parts.port).await?;
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(cfg.timeout)
        .user_agent("prodops-webhooks/1");
    if parts.host.parse::<IpAddr>().is_err() {
        // Connect to the addresses just checked, not to a second lookup's (DNS rebinding).
        builder = builder.resolve_to_addrs(&parts.host, &addrs);
    }
    let client = builder.build().map_err(|e| failure(e.to_string()))?;
    let t = chrono::Utc::now().timestamp();
    let mut req = client
        .post(url)
        .header("Content-Type", "application/json")
        .header("X-Prodops-Signature", signature(secret, t, &body))
        .header("X-Prodops-Event-Id", a.event_id)
        .header("X-Prodops-Webhook-Id", a.webhook.to_string())
        .header("X-Prodops-Delivery-Attempt", a.attempt.to_string());
    if let Some(d) = a.delivery {
        req = req.header("X-Prodops-Delivery-Id", d.to_string());
    }
    match req.body(body).send().await {
        Ok(resp) if resp.status().is_success() => Ok(resp.status().as_u16()),
        Ok(resp) => Err(Failure {
            status: Some(resp.status().as_u16()),
            error: format!("the receiver answered {}", resp.status()),
        }),
        Err(e) if e.is_timeout() => Err(failure(format!(
            "no answer within {} ms",
            cfg.timeout.as_millis()
        ))),
        Err(e) => Err(failure(format!("could not deliver: {e}"))),
    }
}

// ---- The background work ------------------------------------------------------------------

/// Events read per webhook and transaction of the fan-out.
const FAN_OUT_BATCH: u64 = 500;
/// Deliveries one process attempts at once.
const CLAIM_BATCH: u32 = 16;

/// One step of one webhook's fan-out; answers whether more events may follow at once, and the
/// position it moved to.
fn fan_out_one(tx: &mut dyn Tx, org: Uuid, id: Uuid, from: i64) -> Result<(bool, i64), ApiError> {
    let hook = match load(tx, org, id) {
        Ok(h) => h,
        Err(e) if e.status == StatusCode::NOT_FOUND => {
            rows::forget(tx, org, id)?;
            return Ok((false, from));
        }
        Err(e) => return Err(e),
    };
    // Every event up to `end` is committed; read after it, the feed holds at least those.
    let end = rows::last_cursor(tx, org)?;
    if !hook.is_active {
        if end > from && rows::advance(tx, org, id, from, end)? {
            return Ok((false, end));
        }
        return Ok((false, from));
    }
    let mut filter = EventFilter {
        after: from,
        limit: FAN_OUT_BATCH,
        ..Default::default()
    };
    if let Some((types, prefixes)) = feed_filter(&hook.event_types) {
        filter.types = types;
        filter.type_prefixes = prefixes;
    }
    let events = crate::store::events::read(tx, org, &filter)?;
    let full = events.len() as u64 == FAN_OUT_BATCH;
    let last = events.last().map_or(from, |e| e.seq);
    let to = if full { last } else { last.max(end) };
    let now = now_ms();
    let queued: Vec<NewDelivery> = events
        .into_iter()
        .map(|e| NewDelivery {
            event_id: e.id,
            seq: e.seq,
            event_type: e.event_type,
        })
        .collect();
    rows::queue(tx, org, id, &queued, now, &ms_text(now))?;
    if to > from && rows::advance(tx, org, id, from, to)? {
        return Ok((full, to));
    }
    // Nothing new, or another process moved the position first (its rows are the same).
    Ok((false, from))
}

/// Fans out every webhook that is behind. A webhook whose step fails is logged and retried at
/// the next pass; it does not hold up the others.
async fn fan_out(state: &AppState) -> Result<(), ApiError> {
    let positions = state.store.read(|tx| rows::behind(tx)).await?;
    for (org, id, from) in positions {
        let mut from = from;
        loop {
            let step = state
                .store
                .write(move |tx| fan_out_one(tx, org, id, from))
                .await;
            match step {
                Ok((more, next)) if more && next != from => from = next,
                Ok(_) => break,
                Err(e) => {
                    tracing::warn!(webhook = %id, "webhook fan-out failed: {}", e.message);
                    break;
                }
            }
        }
    }
    Ok(())
}

/// What an attempt needs: the webhook, its secret and the event as `GET /event` answers it.
enum Prepared {
    Send {
        url: String,
        secret: String,
        body: String,
    },
    /// Cannot be delivered (the reason).
    Dead(String),
}

fn prepare(tx: &mut dyn Tx, c: &Claimed) -> ApiResult<Prepared> {
    let hook = match load(tx, c.org, c.webhook) {
        Ok(h) => h,
        Err(e) if e.status == StatusCode::NOT_FOUND => {
            return Ok(Prepared::Dead("the webhook was deleted".into()));
        }
        Err(e) => return Err(e),
    };
    if !hook.is_active {
        return Ok(Prepared::Dead("the webhook is inactive".into()));
    }
    let Some(secret) = rows::secret(tx, c.org, c.webhook)? else {
        return Ok(Prepared::Dead("the webhook has no secret".into()));
    };
    let filter = EventFilter {
        after: c.seq - 1,
        limit: 1,
        ..Default::default()
    };
    let found = crate::store::events::read(tx, c.org, &filter)?
        .into_iter()
        .find(|e| e.seq == c.seq && e.id == c.event_id);
    let Some(event) = found else {
        return Ok(Prepared::Dead(
            "the event is no longer kept (retention)".into(),
        ));
    };
    let event = crate::events::event_of(event)?;
    Ok(Prepared::Send {
        url: hook.url,
        secret,
        body: serde_json::to_string(&event).map_err(ApiError::internal)?,
    })
}

async fn deliver(state: Arc<AppState>, cfg: WebhookConfig, owner: Arc<str>, c: Claimed) {
    let claimed = c.clone();
    let prepared = state.store.read(move |tx| prepare(tx, &claimed)).await;
    let result = match prepared {
        Ok(Prepared::Send { url, secret, body }) => {
            let a = Attempt {
                webhook: c.webhook,
                delivery: Some(c.id),
                event_id: &c.event_id,
                attempt: c.attempt,
            };
            post(&cfg, &url, &secret, body, &a)
                .await
                .map(Some)
                .map_err(|f| (false, f))
        }
        Ok(Prepared::Dead(reason)) => Err((true, failure(reason))),
        Err(e) => {
            // The lease runs out and another attempt is made.
            tracing::warn!(delivery = %c.id, "could not prepare a webhook delivery: {}", e.message);
            return;
        }
    };
    let now = now_ms();
    let outcome = match result {
        Ok(code) => Outcome {
            status: "delivered",
            next_attempt_ms: now,
            last_status: code.map(i64::from),
            last_error: None,
            now_text: ms_text(now),
        },
        Err((forced, f)) => {
            let dead = forced || c.attempt >= i64::from(cfg.max_attempts);
            let wait = backoff_ms(
                c.attempt.clamp(1, i64::from(u32::MAX)) as u32,
                cfg.backoff_base.as_millis() as u64,
                cfg.backoff_cap.as_millis() as u64,
                rand::random::<f64>(),
            );
            Outcome {
                status: if dead { "dead" } else { "pending" },
                next_attempt_ms: now + wait as i64,
                last_status: f.status.map(i64::from),
                last_error: Some(f.error),
                now_text: ms_text(now),
            }
        }
    };
    let id = c.id;
    if let Err(e) = state
        .store
        .write(move |tx| rows::finish(tx, id, &owner, &outcome))
        .await
    {
        tracing::warn!(delivery = %id, "could not record a webhook delivery: {e}");
    }
}

/// Fans events out to deliveries and attempts due deliveries, forever.
///
/// Up to [`CLAIM_BATCH`] attempts are in flight at once; a slot that frees (an answer, a
/// failure, a time-out) is filled by the next claim at once, so a receiver that hangs until
/// its time-out holds only its own attempts, never a whole batch. Fan-out runs before every
/// claim, so a backlog of due deliveries never keeps new events from being queued.
pub async fn run(state: Arc<AppState>) {
    let cfg = WebhookConfig::of(&state);
    if !cfg.deliver {
        return;
    }
    let owner: Arc<str> = Uuid::now_v7().to_string().into();
    let mut in_flight = tokio::task::JoinSet::new();
    loop {
        let woken = state.events.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        if let Err(e) = fan_out(&state).await {
            tracing::warn!("webhook fan-out failed: {}", e.message);
        }
        let free = CLAIM_BATCH.saturating_sub(in_flight.len() as u32);
        // Looked for in a read first, so that an idle process takes no write lock.
        let due = free > 0
            && state
                .store
                .read(|tx| rows::any_due(tx, now_ms()))
                .await
                .unwrap_or(true);
        if due {
            let o = owner.clone();
            let lease = cfg.lease.as_millis() as i64;
            let claimed: Result<Vec<Claimed>, StoreError> = state
                .store
                .write(move |tx| rows::claim(tx, &o, now_ms(), lease, free))
                .await;
            match claimed {
                Ok(c) => {
                    for c in c {
                        in_flight.spawn(deliver(state.clone(), cfg.clone(), owner.clone(), c));
                    }
                }
                Err(e) => tracing::warn!("could not claim webhook deliveries: {e}"),
            }
        }
        // A new commit, the poll, or a free slot (when every slot was taken, more may be due).
        tokio::select! {
            _ = &mut woken => {}
            _ = tokio::time::sleep(cfg.poll) => {}
            Some(_) = in_flight.join_next(), if !in_flight.is_empty() => {}
        }
    }
}

// ---- Handlers ----------------------------------------------------------------------------

async fn redeliver(
    call: Call,
    id: Uuid,
    (): (),
    req: RedeliverRequest,
) -> ApiResult<Answered<api::webhook::Redeliver>> {
    let state = call.state.clone();
    let response = call
        .write(move |tx, ctx| {
            load(tx, ctx.org(), id)?;
            let now = now_ms();
            let n = rows::requeue(tx, ctx.org(), id, req.event_id, now, &ms_text(now))?;
            if n == 0 && req.event_id.is_some() {
                return Err(ApiError::new(
                    StatusCode::NOT_FOUND,
                    "NOT_FOUND",
                    "the webhook has no delivery of this event",
                ));
            }
            Ok(RedeliverResult { requeued: n }.into())
        })
        .await;
    state.events.notify_waiters();
    response
}

async fn test(call: Call, id: Uuid, (): (), (): ()) -> ApiResult<Answered<api::webhook::Test>> {
    let cfg = WebhookConfig::of(&call.state);
    let key = call.auth.key_id;
    let (hook, secret) = call
        .read(move |tx, ctx| {
            let hook = load(tx, ctx.org(), id)?;
            let secret = rows::secret(tx, ctx.org(), id)?
                .ok_or_else(|| ApiError::internal("a webhook without a secret"))?;
            Ok((hook, secret))
        })
        .await?;
    let event = Event {
        id: Uuid::now_v7(),
        cursor: Cursor(0).to_string(),
        event_type: "webhook.ping".into(),
        resource: "webhook".into(),
        record_id: hook.id,
        key_id: Some(key),
        request_id: crate::store::REQUEST_ID.try_with(|r| r.to_string()).ok(),
        occurred_at: format_time(chrono::Utc::now()),
        data: serde_json::to_value(&hook).map_err(ApiError::internal)?,
        changed: None,
    };
    let body = serde_json::to_string(&event).map_err(ApiError::internal)?;
    let event_id = event.id.to_string();
    let a = Attempt {
        webhook: hook.id,
        delivery: None,
        event_id: &event_id,
        attempt: 1,
    };
    let outcome = post(&cfg, &hook.url, &secret, body, &a).await;
    let answer = match outcome {
        Ok(code) => WebhookTestResult {
            delivered: true,
            status_code: Some(code),
            error: None,
            event_id: event.id,
        },
        Err(f) => WebhookTestResult {
            delivered: false,
            status_code: f.status,
            error: Some(f.error),
            event_id: event.id,
        },
    };
    Ok(Answered::new(answer.into()))
}

/// The query of the delivery log: `(status, offset, limit)`.
fn log_query(raw: Option<&str>) -> ApiResult<(Option<WebhookDeliveryStatus>, u64, u64)> {
    let (mut status, mut page, mut size) = (None, 1u64, 100u64);
    for (k, v) in form_urlencoded::parse(raw.unwrap_or_default().as_bytes()) {
        match k.as_ref() {
            "status" => {
                status = Some(WebhookDeliveryStatus::parse(&v).ok_or_else(|| {
                    ApiError::field("status", "must be pending, delivered or dead")
                })?)
            }
            "page" => {
                page = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=prodops_core::webhook::LOG_MAX_PAGE).contains(n))
                    .ok_or_else(|| ApiError::field("page", "must be a whole number from 1"))?
            }
            "pageSize" => {
                size = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=prodops_core::webhook::LOG_MAX_PAGE_SIZE).contains(n))
                    .ok_or_else(|| {
                        ApiError::field(
                            "pageSize",
                            format!(
                                "must be a whole number from 1 to {}",
                                prodops_core::webhook::LOG_MAX_PAGE_SIZE
                            ),
                        )
                    })?
            }
            other => {
                return Err(ApiError::field(
                    other,
                    "unknown parameter; use status, page or pageSize",
                ));
            }
        }
    }
    Ok((status, (page - 1) * size, size))
}

fn delivery_of(webhook: Uuid, r: rows::LogRow) -> ApiResult<WebhookDelivery> {
    let id = |s: &str| Uuid::parse_str(s).map_err(ApiError::internal);
    let status = WebhookDeliveryStatus::parse(&r.status)
        .ok_or_else(|| ApiError::internal(format!("a delivery with status {}", r.status)))?;
    Ok(WebhookDelivery {
        id: id(&r.id)?,
        webhook_id: webhook,
        event_id: id(&r.event_id)?,
        cursor: Cursor(r.seq).to_string(),
        event_type: r.event_type,
        status,
        attempts: r.attempts.clamp(0, i64::from(u32::MAX)) as u32,
        next_attempt_at: (status == WebhookDeliveryStatus::Pending)
            .then(|| ms_text(r.next_attempt_ms)),
        last_status_code: r.last_status.and_then(|s| u16::try_from(s).ok()),
        last_error: r.last_error,
        created_at: r.created_at,
        updated_at: r.updated_at,
        delivered_at: r.delivered_at,
    })
}

/// What the delivery log's query asks for: `(status, offset, limit)`.
pub struct LogQuery(Option<WebhookDeliveryStatus>, u64, u64);

impl ServedQuery for api::webhook::DeliveryQuery {
    type Value = LogQuery;
    fn from_query(query: Option<&str>) -> ApiResult<LogQuery> {
        let (status, offset, limit) = log_query(query)?;
        Ok(LogQuery(status, offset, limit))
    }
}

async fn deliveries(
    call: Call,
    id: Uuid,
    LogQuery(status, offset, limit): LogQuery,
    (): (),
) -> ApiResult<Answered<api::webhook::Deliveries>> {
    let page = call
        .read(move |tx, ctx| {
            load(tx, ctx.org(), id)?;
            let (found, total) =
                rows::log(tx, ctx.org(), id, status.map(|s| s.as_str()), offset, limit)?;
            let values = found
                .into_iter()
                .map(|r| delivery_of(id, r).map(Shaped::from))
                .collect::<ApiResult<Vec<_>>>()?;
            Ok(Page {
                values,
                total_count: total,
                next_cursor: None,
            })
        })
        .await?;
    Ok(Answered::new(page.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_are_hmac_sha256_of_time_and_body() {
        // RFC 4231-style check against an independent computation.
        let s = signature("0123456789abcdef", 1700000000, "{}");
        let mut mac = Hmac::<Sha256>::new_from_slice(b"0123456789abcdef").unwrap();
        mac.update(b"1700000000.{}");
        let want = hex::encode(mac.finalize().into_bytes());
        assert_eq!(s, format!("t=1700000000,v1={want}"));
    }

    #[test]
    fn log_queries_name_their_bad_parameter() {
        assert_eq!(
            log_query(Some("status=dead&page=2&pageSize=10")).unwrap().1,
            10
        );
        for (q, f) in [
            ("status=x", "status"),
            ("page=0", "page"),
            ("pageSize=1001", "pageSize"),
            ("x=1", "x"),
        ] {
            let e = log_query(Some(q)).unwrap_err();
            assert!(format!("{:?}", e.details).contains(f), "{q}");
        }
    }
}
