//! Workers (spec 3.3): the hooks of the worker resource.

use prodops_core::resource::Record;
use prodops_core::worker::{self, Worker};
use serde_json::{Map, Value, json};

use crate::deliverables::{sessions, timesheets};
use crate::engine::ServedResource;
use crate::engine::hooks::Hooks;
use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult};
use crate::http::text::MAX_INDEXED_TEXT;
use crate::store::Tx;
use crate::store::records::{self, Select};
use crate::store::sql::Cond;

fn str_field<'a>(v: &'a Map<String, Value>, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Whether a record of `table` other than `except` has `field == value`, among active records
/// only when `active_only`.
fn taken(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    table: &str,
    field: &str,
    value: &str,
    except: &str,
    active_only: bool,
) -> ApiResult<bool> {
    let mut conds = vec![Cond::field_equals(field, value)];
    if active_only {
        conds.push(Cond::Archived(false));
    }
    let select = Select {
        conds,
        limit: 2,
        ..Default::default()
    };
    let found = records::select_values(tx, table, ctx.org(), &select)?;
    Ok(found
        .iter()
        .any(|r| r.get("id").and_then(Value::as_str) != Some(except)))
}

/// Workers (spec 3.3): archive suffixes, restore naming, the end of open work on archive.
pub struct WorkerHooks;

impl Hooks for WorkerHooks {
    // The hooks write the worker itself and work sessions (ending open work on archive).
    fn batch_creates(&self) -> bool {
        true
    }

    /// A worker created archived ends its open work (`after_write`); any other create is plain.
    fn plain_create(&self, field: &dyn Fn(&str) -> Option<Value>) -> bool {
        field("isArchived") != Some(Value::Bool(true))
    }

    fn before_update(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        res: &ServedResource,
        old: &Value,
        patch: &Map<String, Value>,
        candidate: &mut Map<String, Value>,
    ) -> ApiResult<()> {
        let was_archived = old
            .get("isArchived")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let archived = candidate
            .get("isArchived")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if was_archived && archived {
            // A change an archived worker refuses conflicts with the record's state (409, not
            // 400); a body core cannot read is left to the record's check, which names it.
            let read = |v: Value| {
                prodops_core::resource::parse::<Worker>(v)
                    .ok()
                    .map(|mut w| {
                        w.normalize();
                        w
                    })
            };
            if let (Some(old), Some(new)) =
                (read(old.clone()), read(Value::Object(candidate.clone())))
                && let Some(v) = worker::archived_change(&old, &new)
            {
                return Err(ApiError::conflicts(vec![v]));
            }
        }
        let id = str_field(candidate, "id").to_string();
        let table = res.table();
        if was_archived != archived {
            // Choosing a free name reads, then writes: two archives or restores at once on
            // PostgreSQL (READ COMMITTED) could otherwise both choose the same name.
            crate::store::lock_scope(tx, &format!("worker-names:{}", ctx.org()))?;
        }
        // An archive or restore runs per record on a bulk write (an import that archives
        // workers), and the candidate is not parsed on that path: the fields are written by
        // their names in core.
        if !was_archived && archived {
            let name = str_field(candidate, Worker::FIELD_NAME).trim().to_string();
            let (archived_name, n) = worker::archived_name(&name, |candidate_name| {
                taken(
                    tx,
                    ctx,
                    table,
                    Worker::FIELD_NAME,
                    candidate_name,
                    &id,
                    false,
                )
            })?;
            candidate.insert(Worker::FIELD_NAME.into(), json!(archived_name));
            let identifier = str_field(candidate, Worker::FIELD_CUSTOMER_IDENTIFIER)
                .trim()
                .to_string();
            if !identifier.is_empty() {
                let archived = format!("{identifier}{}", worker::archive_suffix(n));
                // The suffix must not push the identifier past what the database indexes;
                // cutting the identifier instead would lose its end for good (a restore only
                // strips the suffix), so the archive is refused and nothing changes.
                if archived.chars().count() > MAX_INDEXED_TEXT {
                    return Err(ApiError::conflict(format!(
                        "customerIdentifier: archiving appends \"{}\", and the result would \
                         exceed {MAX_INDEXED_TEXT} characters; shorten the customerIdentifier \
                         first",
                        worker::archive_suffix(n)
                    )));
                }
                candidate.insert(Worker::FIELD_CUSTOMER_IDENTIFIER.into(), json!(archived));
            }
            candidate.insert(Worker::FIELD_TEAM_ID.into(), Value::Null);
        } else if was_archived && !archived {
            let old_name = old
                .get(Worker::FIELD_NAME)
                .and_then(Value::as_str)
                .unwrap_or("");
            // A restore may rename in the same call; otherwise the suffix comes off.
            let base = match patch.get(Worker::FIELD_NAME).and_then(Value::as_str) {
                Some(new_name) if new_name != old_name => new_name.trim().to_string(),
                _ => worker::strip_archive_suffix(old_name).to_string(),
            };
            let restored = worker::restored_name(&base, |candidate_name| {
                taken(
                    tx,
                    ctx,
                    table,
                    Worker::FIELD_NAME,
                    candidate_name,
                    &id,
                    true,
                )
            })?;
            candidate.insert(Worker::FIELD_NAME.into(), json!(restored));
            let identifier = str_field(candidate, Worker::FIELD_CUSTOMER_IDENTIFIER).to_string();
            candidate.insert(
                Worker::FIELD_CUSTOMER_IDENTIFIER.into(),
                json!(worker::strip_archive_suffix(&identifier)),
            );
        }
        Ok(())
    }

    fn after_write(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        old: Option<&Value>,
        new: &Value,
    ) -> ApiResult<()> {
        let was_archived = old
            .and_then(|o| o.get("isArchived"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let archived = new
            .get("isArchived")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if !was_archived && archived {
            let id = new.get("id").and_then(Value::as_str).unwrap_or("");
            end_open_work(tx, ctx, id)?;
        }
        // Clocking in: a worker who becomes active has their open plans become sessions.
        let active = |v: &Value| v.get("status").and_then(Value::as_str) == Some("active");
        if let Some(old) = old
            && !archived
            && active(new)
            && !active(old)
            && let Some(id) = new
                .get("id")
                .and_then(Value::as_str)
                .and_then(|s| uuid::Uuid::parse_str(s).ok())
        {
            sessions::clock_in(tx, ctx, id)?;
        }
        Ok(())
    }
}

/// Ends a worker's open work sessions and plans (spec 3.3), and rolls the days of the ended
/// sessions up into timesheets.
fn end_open_work(tx: &mut dyn Tx, ctx: &Ctx, worker_id: &str) -> ApiResult<()> {
    let served = ctx.resource(prodops_core::registry::ResourceId::WorkSession);
    let table = served.table();
    let select = Select {
        conds: vec![
            Cond::field_equals("workerId", worker_id),
            Cond::field_equals("endDate", "null"),
        ],
        limit: 100_000,
        ..Default::default()
    };
    let mut deliverables = Vec::new();
    let mut days = std::collections::BTreeSet::new();
    for mut session in records::select_values(tx, table, ctx.org(), &select)? {
        let old = session.clone();
        let end = match timesheets::parse_session(&session) {
            Some(open) => crate::http::context::format_time(open.clamp_end(ctx.now)),
            None => ctx.now_text(),
        };
        session["endDate"] = json!(end);
        session["updatedAt"] = json!(ctx.now_text());
        records::update(tx, table, ctx.org(), &session)?;
        crate::engine::events::updated(ctx, served, &old, &session);
        if let Some(ended) = timesheets::parse_session(&session) {
            days.extend(prodops_core::timesheet::days_of(&ended));
        }
        if let Some(d) = session
            .get("deliverableId")
            .and_then(Value::as_str)
            .and_then(|s| uuid::Uuid::parse_str(s).ok())
        {
            deliverables.push(d);
        }
    }
    // The deliverables' computed workers and the worker's timesheets follow.
    crate::deliverables::hooks::sessions_changed(tx, ctx, &deliverables)?;
    timesheets::roll_up(tx, ctx, &days)
}
