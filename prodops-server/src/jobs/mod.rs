//! Durable background jobs: rows in the `jobs` table, claimed by any server process sharing the
//! database, retried with backoff, never lost with a process.
//!
//! Some jobs recur: one row each for the whole database. The prune job's row every process
//! makes sure of at start ([`ensure_recurring`]); it is claimed like any job and due again an
//! hour after each run. The job that announces what time changes ([`ALERT_EVENTS`]) has a loop
//! of its own in each process that runs it ([`run_alert_events`]), which makes its row, so that
//! it can look more often than once a second.

mod alert_events;

use std::sync::Arc;
use std::time::Duration;

use chrono::SubsecRound;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::http::app::AppState;
use crate::http::context::{Ctx, format_time};
use crate::http::error::{ApiError, ApiResult};
use crate::store::events::{NewEvent, Origin};
use crate::store::records::{self, Select};
use crate::store::sql::{Cond, FieldPath};
use crate::store::{SqlValue, StoreError, Tx};
use prodops_core::resource::ResourceDesc;

/// Rewrites stored references after a catalog code rename (spec 2.8 rule 2).
pub const CATALOG_CODE_RENAME: &str = "catalog_code_rename";

/// Removes the change feed's events older than the retention (docs/events.md, "Retention").
/// One row for the whole database ([`EVENT_PRUNE_ID`]), recurring: when it has run it is due
/// again an hour later, so however many processes share the database, one of them prunes each
/// hour, and a process that dies mid-way leaves it to the next claim.
pub const EVENT_PRUNE: &str = "event_prune";
/// The id of the one [`EVENT_PRUNE`] job.
pub const EVENT_PRUNE_ID: &str = "event-prune";
/// How often the recurring jobs run.
const EVENT_PRUNE_EVERY_SECS: i64 = 3600;

/// Announces what time changes: `deliverable.became-late` when a deliverable's `lateAt`
/// passes (docs/events.md, "Events for what time changes"). One row for the whole database
/// ([`ALERT_EVENTS_ID`]), whose payload is the watermark of what has been announced
/// (jobs/alert_events.rs). The claim loop of the other jobs never takes it: each process that
/// runs it (`Config::alert_events` set) tries to claim it every poll interval
/// ([`run_alert_events`]), by its lease (`locked_until`), so one process runs it at a time.
pub const ALERT_EVENTS: &str = "alert_events";
/// The id of the one [`ALERT_EVENTS`] job.
pub const ALERT_EVENTS_ID: &str = "alert-events";
/// How long a claim of [`ALERT_EVENTS`] is reserved: each batch renews it, so a process that
/// dies leaves the job to another within this time.
const ALERT_EVENTS_LEASE_SECS: i64 = 5;

/// What a process's jobs need of its configuration.
#[derive(Debug, Clone)]
pub struct Settings {
    /// How long events are kept; the process that runs the prune job applies its own.
    pub event_retention: Duration,
}

/// Makes sure the prune job exists (due at once when new). Every process does it at start; the
/// row is inserted once.
pub fn ensure_recurring(tx: &mut dyn Tx) -> Result<(), StoreError> {
    ensure_row(tx, EVENT_PRUNE_ID, EVENT_PRUNE)
}

/// Inserts the one row of a recurring job unless it exists. The [`ALERT_EVENTS`] row is made by
/// the processes that run that job only, so that a database whose processes all leave it off
/// has none.
fn ensure_row(tx: &mut dyn Tx, id: &str, kind: &str) -> Result<(), StoreError> {
    let now = format_time(chrono::Utc::now());
    tx.execute(
        "INSERT INTO jobs (id, organization_id, kind, payload, status, attempts, run_after, locked_until, last_error, created_at, updated_at) \
         VALUES (?, ?, ?, '{}', 'pending', 0, 0, NULL, NULL, ?, ?) ON CONFLICT (id) DO NOTHING",
        &[
            id.into(),
            Uuid::nil().into(),
            kind.into(),
            now.clone().into(),
            now.into(),
        ],
    )?;
    Ok(())
}

/// How a job of `kind` is rescheduled once it has run: `None` for a one-off job (done), or the
/// seconds until it is due again.
fn recurs_after(kind: &str) -> Option<i64> {
    (kind == EVENT_PRUNE).then_some(EVENT_PRUNE_EVERY_SECS)
}

/// How long a claimed job is reserved before another process may take it over.
const LEASE_SECS: i64 = 120;
const MAX_ATTEMPTS: i64 = 10;
/// Records rewritten per transaction, so a large rewrite never holds the writer for long.
const BATCH: u64 = 500;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CodeRename {
    pub catalog: String,
    pub old_code: String,
    pub new_code: String,
    /// The renamed entry, and the key and request that renamed it: the job's events carry the
    /// key and request id of the rename that caused them. (Absent in jobs queued before the
    /// feed announced renames; such a job announces its rewrites without them.)
    #[serde(default)]
    pub entry_id: Option<Uuid>,
    #[serde(default)]
    pub key_id: Option<Uuid>,
    #[serde(default)]
    pub request_id: Option<String>,
}

pub fn enqueue(tx: &mut dyn Tx, ctx: &Ctx, kind: &str, payload: &Value) -> ApiResult<()> {
    tx.execute(
        "INSERT INTO jobs (id, organization_id, kind, payload, status, attempts, run_after, locked_until, last_error, created_at, updated_at) \
         VALUES (?, ?, ?, ?, 'pending', 0, ?, NULL, NULL, ?, ?)",
        &[
            Uuid::now_v7().into(),
            ctx.org().into(),
            kind.into(),
            payload.to_string().into(),
            SqlValue::Int(ctx.now.timestamp()),
            ctx.now_text().into(),
            ctx.now_text().into(),
        ],
    )?;
    Ok(())
}

struct Job {
    id: String,
    org: Uuid,
    kind: String,
    payload: Value,
    attempts: i64,
}

fn now_secs() -> i64 {
    chrono::Utc::now().timestamp()
}

/// Takes the oldest job that is due, or one whose lease ran out ([`ALERT_EVENTS`] aside: it
/// has its own loop).
fn claim(tx: &mut dyn Tx) -> Result<Option<Job>, StoreError> {
    let now = now_secs();
    let due =
        "((status = 'pending' AND run_after <= ?) OR (status = 'running' AND locked_until < ?))";
    let rows = tx.query(
        &format!("SELECT id, organization_id, kind, payload, attempts FROM jobs WHERE {due} AND kind <> ? ORDER BY created_at, id LIMIT 1"),
        &[SqlValue::Int(now), SqlValue::Int(now), ALERT_EVENTS.into()],
    )?;
    let Some(row) = rows.into_iter().next() else {
        return Ok(None);
    };
    let id = row[0].as_str().unwrap_or_default().to_string();
    // The condition is repeated so that of two processes racing for a job, one wins.
    let claimed = tx.execute(
        &format!("UPDATE jobs SET status = 'running', locked_until = ?, attempts = attempts + 1 WHERE id = ? AND {due}"),
        &[SqlValue::Int(now + LEASE_SECS), id.clone().into(), SqlValue::Int(now), SqlValue::Int(now)],
    )?;
    if claimed == 0 {
        return Ok(None);
    }
    Ok(Some(Job {
        id,
        org: row[1]
            .as_str()
            .and_then(|s| Uuid::parse_str(s).ok())
            .unwrap_or_default(),
        kind: row[2].as_str().unwrap_or_default().to_string(),
        payload: row[3]
            .as_str()
            .and_then(|s| serde_json::from_str(s).ok())
            .unwrap_or(Value::Null),
        attempts: row[4].as_i64().unwrap_or(0) + 1,
    }))
}

/// Records that refer to a catalog code, at most `limit`, with their resource. Pay types are
/// the only catalog, referenced by `payTypes` on timesheets; other catalogs have no references.
pub fn code_references(
    tx: &mut dyn Tx,
    org: Uuid,
    catalog: &str,
    code: &str,
    limit: u64,
) -> ApiResult<Option<(&'static ResourceDesc, Vec<Value>)>> {
    if catalog != prodops_core::catalog::PAY_TYPE {
        return Ok(None);
    }
    let desc = prodops_core::registry::ResourceId::Timesheet.kind().desc();
    let select = Select {
        conds: vec![Cond::Field {
            path: FieldPath::parse("payTypes").expect("static path"),
            values: vec![code.to_string()],
        }],
        limit,
        ..Default::default()
    };
    Ok(Some((
        desc,
        records::select_values(tx, desc.table, org, &select)?,
    )))
}

/// One batch of a code rename, in one transaction with its events (docs/events.md): each
/// rewritten record is announced as its resource's update, and the batch that finds the last
/// references also announces the rename as done ([`prodops_core::event::CODE_RENAMED`], with
/// the entry as it is now, unless it was deleted meanwhile). Returns whether more references
/// may remain, and how many events it appended.
fn rename_batch(tx: &mut dyn Tx, org: Uuid, rename: &CodeRename) -> ApiResult<(bool, usize)> {
    let found = code_references(tx, org, &rename.catalog, &rename.old_code, BATCH)?;
    let now = chrono::Utc::now().trunc_subsecs(3);
    let now_text = format_time(now);
    let mut events = Vec::new();
    let mut more = false;
    if let Some((desc, found)) = found {
        more = found.len() as u64 == BATCH;
        for old in found {
            let mut record = old.clone();
            let mut codes: Vec<String> =
                serde_json::from_value(record["payTypes"].take()).unwrap_or_default();
            prodops_core::catalog::rewrite_code(&mut codes, &rename.old_code, &rename.new_code);
            record["payTypes"] = json!(codes);
            record["updatedAt"] = json!(now_text);
            records::update(tx, desc.table, org, &record)?;
            events.push(crate::engine::events::update_event(
                desc.path, &old, &record,
            ));
        }
    }
    if !more && let Some(entry_id) = rename.entry_id {
        let entries = prodops_core::registry::ResourceId::CatalogEntry
            .kind()
            .desc();
        if let Some(entry) = records::get(tx, entries.table, org, entry_id)? {
            events.push(NewEvent {
                event_type: prodops_core::event::CODE_RENAMED.to_string(),
                resource: entries.path,
                record_id: entry_id.to_string(),
                data: entry.to_string(),
                changed: Some(json!(["code"]).to_string()),
                by_reference: false,
                record_rowid: None,
            });
        }
    }
    let origin = Origin {
        org,
        key_id: rename.key_id,
        request_id: rename.request_id.clone(),
        occurred_at: now_text,
        occurred_ms: now.timestamp_millis(),
    };
    let appended = crate::store::events::append(tx, &origin, &events)?;
    Ok((more, appended))
}

async fn run_job(state: &AppState, settings: &Settings, job: &Job) -> ApiResult<()> {
    match job.kind.as_str() {
        EVENT_PRUNE => {
            let before = chrono::Utc::now().timestamp_millis()
                - i64::try_from(settings.event_retention.as_millis()).unwrap_or(i64::MAX / 2);
            let pruned = state
                .store
                .write(move |tx| crate::store::events::prune(tx, before))
                .await?;
            tracing::debug!(pruned, "events older than the retention pruned");
            Ok(())
        }
        CATALOG_CODE_RENAME => {
            let rename: CodeRename =
                serde_json::from_value(job.payload.clone()).map_err(ApiError::internal)?;
            let org = job.org;
            loop {
                let rename = rename.clone();
                let (more, events) = state
                    .store
                    .write(move |tx| rename_batch(tx, org, &rename))
                    .await?;
                if events > 0 {
                    state.events.notify_waiters();
                }
                if !more {
                    return Ok(());
                }
            }
        }
        other => Err(ApiError::internal(format!("unknown job kind {other}"))),
    }
}

async fn finish(state: &AppState, job: &Job, outcome: ApiResult<()>) -> Result<(), StoreError> {
    let id = job.id.clone();
    let now = format_time(chrono::Utc::now());
    let recurs = recurs_after(&job.kind);
    let next_turn = outcome.is_ok() && recurs.is_some();
    let (status, error, run_after) = match (outcome, recurs) {
        (Ok(()), Some(secs)) => ("pending", None, now_secs() + secs),
        (Ok(()), None) => ("done", None, now_secs()),
        // A recurring job is never given up: it waits for its next turn.
        (Err(e), Some(secs)) if job.attempts >= MAX_ATTEMPTS => {
            ("pending", Some(e.message), now_secs() + secs)
        }
        (Err(e), None) if job.attempts >= MAX_ATTEMPTS => ("failed", Some(e.message), now_secs()),
        // Backoff: 2, 4, 8, ... seconds.
        (Err(e), _) => (
            "pending",
            Some(e.message),
            now_secs() + (1i64 << job.attempts.min(10)),
        ),
    };
    state
        .store
        .write(move |tx| {
            // A recurring job that ran starts its next turn with no attempts counted.
            tx.execute(
                "UPDATE jobs SET status = ?, last_error = ?, run_after = ?, locked_until = NULL, updated_at = ?, \
                 attempts = CASE WHEN ? THEN 0 ELSE attempts END WHERE id = ?",
                &[status.into(), error.clone().into(), SqlValue::Int(run_after), now.clone().into(),
                  SqlValue::Bool(next_turn), id.clone().into()],
            )
        })
        .await
        .map(|_| ())
}

/// Runs due jobs until none is left, then sleeps until woken or a second passes.
pub async fn run(state: Arc<AppState>, settings: Settings) {
    if let Err(e) = state.store.write(ensure_recurring).await {
        tracing::warn!("could not set up the recurring jobs: {e}");
    }
    loop {
        loop {
            let claimed = state.store.write(claim).await;
            match claimed {
                Ok(Some(job)) => {
                    let outcome = run_job(&state, &settings, &job).await;
                    if let Err(e) = &outcome {
                        tracing::warn!(job = %job.id, kind = %job.kind, "job failed: {}", e.message);
                    }
                    if let Err(e) = finish(&state, &job, outcome).await {
                        tracing::warn!(job = %job.id, "could not record a job's outcome: {e}");
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!("could not claim a job: {e}");
                    break;
                }
            }
        }
        let _ = tokio::time::timeout(Duration::from_secs(1), state.jobs.notified()).await;
    }
}

/// Claims the [`ALERT_EVENTS`] job for this process unless another holds it: its lease is
/// free or ran out. Answers the claim's `updated_at` if it did: the mark by which the process
/// gives it back ([`release_alert_events`]; the turn's batches leave `updated_at` alone).
fn claim_alert_events(tx: &mut dyn Tx) -> Result<Option<String>, StoreError> {
    ensure_row(tx, ALERT_EVENTS_ID, ALERT_EVENTS)?;
    let now = now_secs();
    let mark = format_time(chrono::Utc::now());
    let claimed = tx.execute(
        "UPDATE jobs SET status = 'running', locked_until = ?, attempts = attempts + 1, updated_at = ? \
         WHERE id = ? AND (status <> 'running' OR locked_until IS NULL OR locked_until < ?)",
        &[
            SqlValue::Int(now + ALERT_EVENTS_LEASE_SECS),
            mark.clone().into(),
            ALERT_EVENTS_ID.into(),
            SqlValue::Int(now),
        ],
    )?;
    Ok((claimed == 1).then_some(mark))
}

/// Gives the [`ALERT_EVENTS`] job back after a turn, with the turn's error if it failed, unless
/// another process claimed it since `mark` (this process's lease ran out): then it is that
/// one's to give back.
fn release_alert_events(
    tx: &mut dyn Tx,
    mark: &str,
    error: Option<String>,
) -> Result<(), StoreError> {
    tx.execute(
        "UPDATE jobs SET status = 'pending', locked_until = NULL, run_after = ?, last_error = ?, \
         attempts = 0, updated_at = ? WHERE id = ? AND updated_at = ?",
        &[
            SqlValue::Int(now_secs()),
            error.into(),
            format_time(chrono::Utc::now()).into(),
            ALERT_EVENTS_ID.into(),
            mark.into(),
        ],
    )?;
    Ok(())
}

/// The loop of a process that runs the job announcing what time changes: every `every`, it
/// claims the one [`ALERT_EVENTS`] row if no other process holds it, runs a turn (from the
/// watermark to its clock's now, jobs/alert_events.rs), and gives it back. A process killed in
/// a turn holds it until its lease runs out ([`ALERT_EVENTS_LEASE_SECS`]); the watermark,
/// moved with the events of each batch, says where the next turn goes on from.
pub async fn run_alert_events(state: Arc<AppState>, every: Duration) {
    loop {
        match state.store.write(claim_alert_events).await {
            Ok(Some(mark)) => {
                let outcome =
                    alert_events::run(&state, ALERT_EVENTS_ID, ALERT_EVENTS_LEASE_SECS).await;
                let error = outcome.err().map(|e| {
                    tracing::warn!("the alert events' turn failed: {}", e.message);
                    e.message
                });
                let released = state
                    .store
                    .write(move |tx| release_alert_events(tx, &mark, error.clone()))
                    .await;
                if let Err(e) = released {
                    tracing::warn!("could not give the alert events' job back: {e}");
                }
            }
            Ok(None) => {}
            Err(e) => tracing::warn!("could not claim the alert events' job: {e}"),
        }
        tokio::time::sleep(every).await;
    }
}
