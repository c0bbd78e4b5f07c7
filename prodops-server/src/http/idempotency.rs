//! Idempotent retries (decisions.md section 9): the first reply to an `Idempotency-Key` is kept
//! for 24 hours per organization, stored in the same transaction as the work it reports.

use axum::http::StatusCode;

use crate::http::context::{Ctx, Idempotency};
use crate::http::error::{ApiError, ApiResult};
use crate::http::reply::Reply;
use crate::store::{SqlValue, StoreError, Tx};

/// How long a reply is kept.
pub const RETENTION_SECS: i64 = 24 * 60 * 60;

/// The stored reply to a repeat of the same request; 409 for the same key on another request.
pub fn replay(tx: &mut dyn Tx, ctx: &Ctx, idem: &Idempotency) -> ApiResult<Option<Reply>> {
    let rows = tx.query(
        "SELECT fingerprint, status, body, created_at FROM idempotency_keys WHERE organization_id = ? AND idem_key = ?",
        &[ctx.org().into(), idem.key.clone().into()],
    )?;
    let Some(row) = rows.into_iter().next() else {
        return Ok(None);
    };
    let created_at = row.get(3).and_then(SqlValue::as_i64).unwrap_or(0);
    if created_at + RETENTION_SECS < ctx.now.timestamp() {
        tx.execute(
            "DELETE FROM idempotency_keys WHERE organization_id = ? AND idem_key = ?",
            &[ctx.org().into(), idem.key.clone().into()],
        )?;
        return Ok(None);
    }
    if row.first().and_then(SqlValue::as_str) != Some(idem.fingerprint.as_str()) {
        return Err(ApiError::conflict(
            "this Idempotency-Key was already used with a different request (method, path or body)",
        ));
    }
    let status = row.get(1).and_then(SqlValue::as_i64).unwrap_or(200);
    let body = row.get(2).and_then(SqlValue::as_str).unwrap_or("");
    Ok(Some(Reply {
        status: StatusCode::from_u16(status as u16).unwrap_or(StatusCode::OK),
        body: (!body.is_empty()).then(|| body.to_string()),
        replayed: true,
    }))
}

pub fn remember(tx: &mut dyn Tx, ctx: &Ctx, idem: &Idempotency, reply: &Reply) -> ApiResult<()> {
    let result = tx.execute(
        "INSERT INTO idempotency_keys (organization_id, idem_key, fingerprint, status, body, created_at) \
         VALUES (?, ?, ?, ?, ?, ?)",
        &[
            ctx.org().into(),
            idem.key.clone().into(),
            idem.fingerprint.clone().into(),
            SqlValue::Int(reply.status.as_u16() as i64),
            reply.body.clone().unwrap_or_default().into(),
            SqlValue::Int(ctx.now.timestamp()),
        ],
    );
    match result {
        Ok(_) => Ok(()),
        Err(StoreError::Conflict(_)) => Err(ApiError::conflict(
            "a request with this Idempotency-Key is being processed; retry it shortly",
        )),
        Err(e) => Err(e.into()),
    }
}

/// Drops replies older than the retention period.
pub fn purge_expired(tx: &mut dyn Tx, now_secs: i64) -> Result<u64, StoreError> {
    tx.execute(
        "DELETE FROM idempotency_keys WHERE created_at < ?",
        &[SqlValue::Int(now_secs - RETENTION_SECS)],
    )
}
