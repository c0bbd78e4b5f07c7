//! Durable background jobs: rows in the `jobs` table, claimed by any server process sharing the
//! database, retried with backoff, never lost with a process.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::http::app::AppState;
use crate::http::context::{Ctx, format_time};
use crate::http::error::{ApiError, ApiResult};
use crate::store::records::{self, Select};
use crate::store::sql::{Cond, FieldPath};
use crate::store::{SqlValue, StoreError, Tx};

/// Rewrites stored references after a catalog code rename (spec 2.8 rule 2).
pub const CATALOG_CODE_RENAME: &str = "catalog_code_rename";

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

/// Takes the oldest job that is due, or one whose lease ran out.
fn claim(tx: &mut dyn Tx) -> Result<Option<Job>, StoreError> {
    let now = now_secs();
    let due =
        "((status = 'pending' AND run_after <= ?) OR (status = 'running' AND locked_until < ?))";
    let rows = tx.query(
        &format!("SELECT id, organization_id, kind, payload, attempts FROM jobs WHERE {due} ORDER BY created_at, id LIMIT 1"),
        &[SqlValue::Int(now), SqlValue::Int(now)],
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

/// Records that refer to a catalog code, at most `limit`, with their table. Pay types are the
/// only catalog, referenced by `payTypes` on timesheets; other catalogs have no references.
pub fn code_references(
    tx: &mut dyn Tx,
    org: Uuid,
    catalog: &str,
    code: &str,
    limit: u64,
) -> ApiResult<Option<(&'static str, Vec<Value>)>> {
    if catalog != prodops_core::catalog::PAY_TYPE {
        return Ok(None);
    }
    let Some(timesheet) = prodops_core::registry::by_path("timesheet") else {
        return Ok(None);
    };
    let table = timesheet.desc().table;
    let select = Select {
        conds: vec![Cond::Field {
            path: FieldPath::parse("payTypes").expect("static path"),
            values: vec![code.to_string()],
        }],
        limit,
        ..Default::default()
    };
    Ok(Some((
        table,
        records::select_values(tx, table, org, &select)?,
    )))
}

/// One batch of a code rename; returns whether more references may remain.
fn rename_batch(tx: &mut dyn Tx, org: Uuid, rename: &CodeRename) -> ApiResult<bool> {
    let Some((table, found)) = code_references(tx, org, &rename.catalog, &rename.old_code, BATCH)?
    else {
        return Ok(false);
    };
    let now = format_time(chrono::Utc::now());
    for mut record in found.iter().cloned() {
        let mut codes: Vec<String> =
            serde_json::from_value(record["payTypes"].take()).unwrap_or_default();
        prodops_core::catalog::rewrite_code(&mut codes, &rename.old_code, &rename.new_code);
        record["payTypes"] = json!(codes);
        record["updatedAt"] = json!(now);
        records::update(tx, table, org, &record)?;
    }
    Ok(found.len() as u64 == BATCH)
}

async fn run_job(state: &AppState, job: &Job) -> ApiResult<()> {
    match job.kind.as_str() {
        CATALOG_CODE_RENAME => {
            let rename: CodeRename =
                serde_json::from_value(job.payload.clone()).map_err(ApiError::internal)?;
            let org = job.org;
            loop {
                let rename = rename.clone();
                let more = state
                    .store
                    .write(move |tx| rename_batch(tx, org, &rename))
                    .await?;
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
    let (status, error, run_after) = match outcome {
        Ok(()) => ("done", None, now_secs()),
        Err(e) if job.attempts >= MAX_ATTEMPTS => ("failed", Some(e.message), now_secs()),
        // Backoff: 2, 4, 8, ... seconds.
        Err(e) => (
            "pending",
            Some(e.message),
            now_secs() + (1i64 << job.attempts.min(10)),
        ),
    };
    state
        .store
        .write(move |tx| {
            tx.execute(
                "UPDATE jobs SET status = ?, last_error = ?, run_after = ?, locked_until = NULL, updated_at = ? WHERE id = ?",
                &[status.into(), error.clone().into(), SqlValue::Int(run_after), now.clone().into(), id.clone().into()],
            )
        })
        .await
        .map(|_| ())
}

/// Runs due jobs until none is left, then sleeps until woken or a second passes.
pub async fn run(state: Arc<AppState>) {
    loop {
        loop {
            let claimed = state.store.write(claim).await;
            match claimed {
                Ok(Some(job)) => {
                    let outcome = run_job(&state, &job).await;
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
