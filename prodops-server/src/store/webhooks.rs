//! The rows behind webhooks (docs/events.md, "Webhooks"): each webhook's secret and its
//! position in the feed (`webhook_state`), and one row per delivery of one event to one
//! webhook (`webhook_deliveries`), claimed with a lease by any server process.
//!
//! Events themselves are read only through [`super::events::read`].

use uuid::Uuid;

use super::{SqlValue, StoreResult, Tx};

/// The feed position of the organization: the last cursor handed out (0 for none). A value
/// read here is committed, and so are all events up to it.
pub fn last_cursor(tx: &mut dyn Tx, org: Uuid) -> StoreResult<i64> {
    Ok(tx
        .query(
            "SELECT last_seq FROM event_counters WHERE organization_id = ?",
            &[org.into()],
        )?
        .first()
        .and_then(|r| r.first())
        .and_then(SqlValue::as_i64)
        .unwrap_or(0))
}

/// Sets a webhook's secret; a webhook seen for the first time starts after the feed's current
/// end (it is delivered the events that follow).
pub fn set_secret(tx: &mut dyn Tx, org: Uuid, webhook: Uuid, secret: &str) -> StoreResult<()> {
    let start = last_cursor(tx, org)?;
    tx.execute(
        "INSERT INTO webhook_state (organization_id, webhook_id, secret, last_seq) VALUES (?, ?, ?, ?) \
         ON CONFLICT (organization_id, webhook_id) DO UPDATE SET secret = excluded.secret",
        &[org.into(), webhook.into(), secret.into(), SqlValue::Int(start)],
    )?;
    Ok(())
}

/// A webhook's secret.
pub fn secret(tx: &mut dyn Tx, org: Uuid, webhook: Uuid) -> StoreResult<Option<String>> {
    Ok(tx
        .query(
            "SELECT secret FROM webhook_state WHERE organization_id = ? AND webhook_id = ?",
            &[org.into(), webhook.into()],
        )?
        .into_iter()
        .next()
        .and_then(|r| r.into_iter().next())
        .and_then(SqlValue::into_string))
}

/// Forgets a deleted webhook: its state and its deliveries.
pub fn forget(tx: &mut dyn Tx, org: Uuid, webhook: Uuid) -> StoreResult<()> {
    for table in ["webhook_state", "webhook_deliveries"] {
        tx.execute(
            &format!("DELETE FROM {table} WHERE organization_id = ? AND webhook_id = ?"),
            &[org.into(), webhook.into()],
        )?;
    }
    Ok(())
}

/// The feed position of every webhook whose organization's feed has events after it:
/// `(organization, webhook, last cursor)`.
pub fn behind(tx: &mut dyn Tx) -> StoreResult<Vec<(Uuid, Uuid, i64)>> {
    Ok(tx
        .query(
            "SELECT s.organization_id, s.webhook_id, s.last_seq FROM webhook_state s \
             JOIN event_counters c ON c.organization_id = s.organization_id \
             WHERE c.last_seq > s.last_seq ORDER BY s.organization_id, s.webhook_id",
            &[],
        )?
        .into_iter()
        .filter_map(|r| {
            Some((
                Uuid::parse_str(r[0].as_str()?).ok()?,
                Uuid::parse_str(r[1].as_str()?).ok()?,
                r[2].as_i64()?,
            ))
        })
        .collect())
}

/// Moves a webhook's position from `from` to `to`; false when another process moved it first.
pub fn advance(tx: &mut dyn Tx, org: Uuid, webhook: Uuid, from: i64, to: i64) -> StoreResult<bool> {
    Ok(tx.execute(
        "UPDATE webhook_state SET last_seq = ? WHERE organization_id = ? AND webhook_id = ? AND last_seq = ?",
        &[SqlValue::Int(to), org.into(), webhook.into(), SqlValue::Int(from)],
    )? == 1)
}

/// A delivery to queue.
#[derive(Debug, Clone)]
pub struct NewDelivery {
    pub event_id: String,
    pub seq: i64,
    pub event_type: String,
}

/// Queues deliveries of a webhook (due at once); an event already queued for it is left as is.
pub fn queue(
    tx: &mut dyn Tx,
    org: Uuid,
    webhook: Uuid,
    rows: &[NewDelivery],
    now_ms: i64,
    now_text: &str,
) -> StoreResult<()> {
    for r in rows {
        tx.execute(
            "INSERT INTO webhook_deliveries (id, organization_id, webhook_id, event_id, event_seq, event_type, \
             status, attempts, next_attempt_ms, lease_owner, lease_until_ms, last_status, last_error, \
             created_at, updated_at, delivered_at) \
             VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, ?, NULL, NULL, NULL, NULL, ?, ?, NULL) \
             ON CONFLICT (webhook_id, event_id) DO NOTHING",
            &[
                Uuid::now_v7().into(),
                org.into(),
                webhook.into(),
                r.event_id.as_str().into(),
                SqlValue::Int(r.seq),
                r.event_type.as_str().into(),
                SqlValue::Int(now_ms),
                now_text.into(),
                now_text.into(),
            ],
        )?;
    }
    Ok(())
}

/// A delivery claimed for one attempt.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub id: Uuid,
    pub org: Uuid,
    pub webhook: Uuid,
    pub event_id: String,
    pub seq: i64,
    /// This attempt's number (1 for the first).
    pub attempt: i64,
}

const DUE: &str = "status = 'pending' AND next_attempt_ms <= ? AND (lease_until_ms IS NULL OR lease_until_ms < ?)";

/// Whether any delivery is due (a read, before a claim takes the write lock).
pub fn any_due(tx: &mut dyn Tx, now_ms: i64) -> StoreResult<bool> {
    Ok(!tx
        .query(
            &format!("SELECT id FROM webhook_deliveries WHERE {DUE} LIMIT 1"),
            &[SqlValue::Int(now_ms), SqlValue::Int(now_ms)],
        )?
        .is_empty())
}

/// Claims up to `limit` due deliveries (pending and due, not leased or with a lease that ran
/// out) for `owner` until `now_ms + lease_ms`, counting the attempt. Of two processes racing
/// for one row, the repeated condition lets one win.
///
/// The claim is fair across webhooks: the webhooks with a due delivery come least recently
/// served first (then the longest waiting), and they take turns, one delivery each, oldest
/// first within a webhook; each one served is marked in `webhook_state.last_claim_ms`. A
/// receiver that is down with thousands of deliveries queued therefore takes no more than its
/// turn, even when slots free one at a time: the next free slot goes to another webhook with
/// a due delivery. Finding the due webhooks is one probe per webhook of
/// `ix_webhook_deliveries_queue`, whatever the backlog.
pub fn claim(
    tx: &mut dyn Tx,
    owner: &str,
    now_ms: i64,
    lease_ms: i64,
    limit: u32,
) -> StoreResult<Vec<Claimed>> {
    let hooks = tx.query(
        &format!(
            "SELECT organization_id, webhook_id FROM (\
               SELECT s.organization_id, s.webhook_id, s.last_claim_ms, \
                 (SELECT d.next_attempt_ms FROM webhook_deliveries d \
                  WHERE d.organization_id = s.organization_id AND d.webhook_id = s.webhook_id \
                    AND d.status = 'pending' AND (d.lease_until_ms IS NULL OR d.lease_until_ms < ?) \
                  ORDER BY d.next_attempt_ms LIMIT 1) AS oldest \
               FROM webhook_state s) w \
             WHERE oldest <= ? ORDER BY last_claim_ms, oldest, webhook_id LIMIT {limit}"
        ),
        &[SqlValue::Int(now_ms), SqlValue::Int(now_ms)],
    )?;
    // Each due webhook's due deliveries, oldest first (no more than a whole claim's worth).
    let mut queues: Vec<std::collections::VecDeque<Vec<SqlValue>>> = Vec::new();
    for h in hooks {
        let rows = tx.query(
            &format!(
                "SELECT id, organization_id, webhook_id, event_id, event_seq, attempts FROM webhook_deliveries \
                 WHERE organization_id = ? AND webhook_id = ? AND {DUE} \
                 ORDER BY next_attempt_ms, event_seq LIMIT {limit}"
            ),
            &[
                h[0].clone(),
                h[1].clone(),
                SqlValue::Int(now_ms),
                SqlValue::Int(now_ms),
            ],
        )?;
        if !rows.is_empty() {
            queues.push(rows.into());
        }
    }
    // Turns: the first of each queue, then the second of each, and so on.
    let mut picked = Vec::new();
    while picked.len() < limit as usize && queues.iter().any(|q| !q.is_empty()) {
        for q in &mut queues {
            if picked.len() == limit as usize {
                break;
            }
            if let Some(r) = q.pop_front() {
                picked.push(r);
            }
        }
    }
    let mut out: Vec<Claimed> = Vec::new();
    for r in picked {
        let parse = |v: &SqlValue| v.as_str().and_then(|s| Uuid::parse_str(s).ok());
        let (Some(id), Some(org), Some(webhook)) = (parse(&r[0]), parse(&r[1]), parse(&r[2]))
        else {
            continue;
        };
        let won = tx.execute(
            &format!(
                "UPDATE webhook_deliveries SET lease_owner = ?, lease_until_ms = ?, attempts = attempts + 1 \
                 WHERE id = ? AND {DUE}"
            ),
            &[
                owner.into(),
                SqlValue::Int(now_ms + lease_ms),
                id.into(),
                SqlValue::Int(now_ms),
                SqlValue::Int(now_ms),
            ],
        )?;
        if won == 1 {
            out.push(Claimed {
                id,
                org,
                webhook,
                event_id: r[3].as_str().unwrap_or_default().to_string(),
                seq: r[4].as_i64().unwrap_or_default(),
                attempt: r[5].as_i64().unwrap_or_default() + 1,
            });
        }
    }
    let mut served: Vec<(Uuid, Uuid)> = out.iter().map(|c| (c.org, c.webhook)).collect();
    served.sort();
    served.dedup();
    for (org, webhook) in served {
        tx.execute(
            "UPDATE webhook_state SET last_claim_ms = ? WHERE organization_id = ? AND webhook_id = ?",
            &[SqlValue::Int(now_ms), org.into(), webhook.into()],
        )?;
    }
    Ok(out)
}

/// The outcome of one attempt.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// `pending` (retry at `next_attempt_ms`), `delivered` or `dead`.
    pub status: &'static str,
    pub next_attempt_ms: i64,
    pub last_status: Option<i64>,
    pub last_error: Option<String>,
    pub now_text: String,
}

/// Records an attempt's outcome and ends the lease, if `owner` still holds it (a process
/// whose lease ran out and was taken over records nothing).
pub fn finish(tx: &mut dyn Tx, id: Uuid, owner: &str, o: &Outcome) -> StoreResult<bool> {
    let delivered_at = (o.status == "delivered").then(|| o.now_text.clone());
    Ok(tx.execute(
        "UPDATE webhook_deliveries SET status = ?, next_attempt_ms = ?, last_status = ?, last_error = ?, \
         lease_owner = NULL, lease_until_ms = NULL, updated_at = ?, delivered_at = COALESCE(?, delivered_at) \
         WHERE id = ? AND lease_owner = ?",
        &[
            o.status.into(),
            SqlValue::Int(o.next_attempt_ms),
            o.last_status.into(),
            o.last_error.clone().into(),
            o.now_text.as_str().into(),
            delivered_at.into(),
            id.into(),
            owner.into(),
        ],
    )? == 1)
}

/// Queues deliveries of a webhook again, attempts starting over: one event's (any status), or
/// every dead one. Answers how many.
pub fn requeue(
    tx: &mut dyn Tx,
    org: Uuid,
    webhook: Uuid,
    event_id: Option<Uuid>,
    now_ms: i64,
    now_text: &str,
) -> StoreResult<u64> {
    let mut params: Vec<SqlValue> = vec![
        SqlValue::Int(now_ms),
        now_text.into(),
        org.into(),
        webhook.into(),
    ];
    let which = match event_id {
        Some(e) => {
            params.push(e.into());
            "event_id = ?"
        }
        None => "status = 'dead'",
    };
    tx.execute(
        &format!(
            "UPDATE webhook_deliveries SET status = 'pending', attempts = 0, next_attempt_ms = ?, \
             lease_owner = NULL, lease_until_ms = NULL, updated_at = ? \
             WHERE organization_id = ? AND webhook_id = ? AND {which}"
        ),
        &params,
    )
}

/// One row of the delivery log, as stored.
#[derive(Debug, Clone)]
pub struct LogRow {
    pub id: String,
    pub event_id: String,
    pub seq: i64,
    pub event_type: String,
    pub status: String,
    pub attempts: i64,
    pub next_attempt_ms: i64,
    pub last_status: Option<i64>,
    pub last_error: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub delivered_at: Option<String>,
}

/// A page of a webhook's delivery log, newest event first, and how many rows match.
pub fn log(
    tx: &mut dyn Tx,
    org: Uuid,
    webhook: Uuid,
    status: Option<&str>,
    offset: u64,
    limit: u64,
) -> StoreResult<(Vec<LogRow>, u64)> {
    let mut cond = String::from("organization_id = ? AND webhook_id = ?");
    let mut params: Vec<SqlValue> = vec![org.into(), webhook.into()];
    if let Some(s) = status {
        cond.push_str(" AND status = ?");
        params.push(s.into());
    }
    let total = tx
        .query(
            &format!("SELECT COUNT(*) FROM webhook_deliveries WHERE {cond}"),
            &params,
        )?
        .first()
        .and_then(|r| r.first())
        .and_then(SqlValue::as_i64)
        .unwrap_or(0) as u64;
    let rows = tx.query(
        &format!(
            "SELECT id, event_id, event_seq, event_type, status, attempts, next_attempt_ms, last_status, \
             last_error, created_at, updated_at, delivered_at FROM webhook_deliveries WHERE {cond} \
             ORDER BY event_seq DESC, id DESC LIMIT {limit} OFFSET {offset}"
        ),
        &params,
    )?;
    let text = |v: &SqlValue| v.as_str().map(str::to_string);
    Ok((
        rows.into_iter()
            .map(|r| LogRow {
                id: text(&r[0]).unwrap_or_default(),
                event_id: text(&r[1]).unwrap_or_default(),
                seq: r[2].as_i64().unwrap_or_default(),
                event_type: text(&r[3]).unwrap_or_default(),
                status: text(&r[4]).unwrap_or_default(),
                attempts: r[5].as_i64().unwrap_or_default(),
                next_attempt_ms: r[6].as_i64().unwrap_or_default(),
                last_status: r[7].as_i64(),
                last_error: text(&r[8]),
                created_at: text(&r[9]).unwrap_or_default(),
                updated_at: text(&r[10]).unwrap_or_default(),
                delivered_at: text(&r[11]),
            })
            .collect(),
        total,
    ))
}
