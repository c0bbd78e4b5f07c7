//! The recurring job that announces what time changes (docs/events.md, "Events for what time
//! changes"): `deliverable.became-late` for each non-archived deliverable whose `lateAt`
//! passed since the job's last look, once.
//!
//! The job walks time in intervals `(from, to]`: each run takes the interval from where the
//! last one ended to its clock's now, and finds the deliverables whose stored alert window has
//! a bound in it (store/alert_times.rs: two index ranges across organizations). A row stored
//! not late whose window ends (`until`) in the interval turned late there; a row stored late
//! (written after its `lateAt` passed, by a write the job had not yet seen past) is announced
//! when its `lateAt` is in the interval. The interval and the position reached in it are the
//! job row's payload, the **watermark**, moved in the same transaction as the events of each
//! batch, by a compare-and-swap on the payload: a process killed between batches leaves the
//! watermark at the last batch it committed, and the next claim goes on from there; two
//! processes that ran the same batch cannot both commit it. So each transition is announced
//! exactly once.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::http::app::AppState;
use crate::http::context::format_time;
use crate::http::error::{ApiError, ApiResult};
use crate::store::alert_times::{self, Bound, Found};
use crate::store::events::{NewEvent, Origin};
use crate::store::{SqlValue, Tx};
use prodops_core::alerts::{AsOf, patch_deliverable_text, stamp_secs};
use prodops_core::event::BECAME_LATE;

/// Rows read per transaction.
const BATCH: usize = 500;

/// The job's payload: the interval `(from, to]` being walked and the position reached in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Watermark {
    from: i64,
    to: i64,
    /// Rows with a bound before `at`, or at `at` with an id up to `after`, are done
    /// (`after` `None`: all of `at`).
    at: i64,
    after: Option<String>,
}

impl Watermark {
    fn done(&self) -> bool {
        self.at >= self.to && self.after.is_none()
    }
}

/// Runs the job once: from the end of the last interval to the clock's now, in batches.
pub async fn run(state: &AppState, job_id: &str, lease_secs: i64) -> ApiResult<()> {
    let now = state.clock.now_secs();
    loop {
        let id = job_id.to_string();
        let (appended, more) = state
            .store
            .write(move |tx| batch(tx, &id, now, lease_secs))
            .await?;
        if appended > 0 {
            state.events.notify_waiters();
        }
        if !more {
            return Ok(());
        }
    }
}

/// One batch, in one transaction: reads the watermark, announces the transitions of up to
/// [`BATCH`] rows, and moves the watermark past them (only from the value it read). Answers
/// how many events it appended and whether the run goes on.
fn batch(tx: &mut dyn Tx, job_id: &str, now: i64, lease_secs: i64) -> ApiResult<(usize, bool)> {
    let rows = tx.query("SELECT payload FROM jobs WHERE id = ?", &[job_id.into()])?;
    let Some(payload) = rows
        .first()
        .and_then(|r| r.first())
        .and_then(|v| v.as_str())
    else {
        return Ok((0, false));
    };
    let payload = payload.to_string();
    let stored: Option<Watermark> = serde_json::from_str::<Value>(&payload)
        .ok()
        .and_then(|v| serde_json::from_value(v.get("watermark")?.clone()).ok());
    let mut wm = match stored {
        // A new database (or a new job) starts from now: what passed before is not announced.
        None => Watermark {
            from: now,
            to: now,
            at: now,
            after: None,
        },
        // The last interval is done: the next one runs to now (never back: another process's
        // clock may be behind).
        Some(w) if w.done() => {
            if now <= w.to {
                return Ok((0, false));
            }
            Watermark {
                from: w.to,
                to: now,
                at: w.to,
                after: None,
            }
        }
        // A run that stopped part way (its process died): its interval is finished first.
        Some(w) => w,
    };
    let found = alert_times::found(tx, wm.at, wm.after.as_deref(), wm.to, BATCH)?;
    let more = found.len() == BATCH;
    // Announcements per organization and instant: one origin each (its `occurredAt`).
    let mut events: BTreeMap<(uuid::Uuid, i64), Vec<NewEvent>> = BTreeMap::new();
    for f in &found {
        if let Some((at, event)) = became_late(f, wm.from, wm.to) {
            events.entry((f.org, at)).or_default().push(event);
        }
    }
    match found.last() {
        Some(last) if more => {
            wm.at = last.at;
            wm.after = Some(last.id.clone());
        }
        _ => {
            wm.at = wm.to;
            wm.after = None;
        }
    }
    let mut appended = 0;
    for ((org, at), events) in &events {
        let when = chrono::DateTime::from_timestamp(*at, 0).unwrap_or_default();
        let origin = Origin {
            org: *org,
            key_id: None,
            request_id: None,
            occurred_at: format_time(when),
            occurred_ms: at.saturating_mul(1000),
        };
        appended += crate::store::events::append(tx, &origin, events)?;
    }
    let next = json!({ "watermark": wm }).to_string();
    let moved = tx.execute(
        "UPDATE jobs SET payload = ?, locked_until = ? WHERE id = ? AND payload = ?",
        &[
            next.into(),
            SqlValue::Int(chrono::Utc::now().timestamp() + lease_secs),
            job_id.into(),
            payload.into(),
        ],
    )?;
    if moved == 0 {
        // Another process moved the watermark since it was read: this batch is its.
        return Err(ApiError::internal(
            "the alert events' watermark moved under this batch",
        ));
    }
    Ok((appended, more))
}

/// The `became-late` announcement of a row found in the interval `(from, to]`, and the
/// instant it turned late, if it did there: a row stored not late whose window ends in the
/// interval and which is late from that end on; a row stored late whose `lateAt` is in it.
/// The event's record is the stored one as of that instant (`changed: ["computed"]`).
fn became_late(f: &Found, from: i64, to: i64) -> Option<(i64, NewEvent)> {
    let stored: Value = serde_json::from_str(&f.data).ok()?;
    let computed = stored.get("computed")?;
    let stored_late = computed.get("isLate").and_then(Value::as_bool)?;
    let at = match f.bound {
        Bound::Until if !stored_late => f.at,
        Bound::From if stored_late => {
            let late_at = stamp_secs(computed.get("lateAt").and_then(Value::as_str)?)?;
            (from < late_at && late_at <= to).then_some(late_at)?
        }
        _ => return None,
    };
    let data =
        patch_deliverable_text(&f.data, &AsOf::from_secs(at)).unwrap_or_else(|| f.data.clone());
    let late_then = serde_json::from_str::<Value>(&data)
        .ok()?
        .pointer("/computed/isLate")
        .and_then(Value::as_bool)?;
    if !late_then {
        // The window ended for another answer (none of the server's records: for a row
        // stored not late the window ends at its `lateAt`).
        return None;
    }
    Some((
        at,
        NewEvent {
            event_type: BECAME_LATE.to_string(),
            resource: "deliverable",
            record_id: f.id.clone(),
            data,
            changed: Some(json!(["computed"]).to_string()),
            by_reference: false,
            record_rowid: None,
        },
    ))
}
