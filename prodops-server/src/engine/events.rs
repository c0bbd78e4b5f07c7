//! The events of the writes the pipeline makes (docs/events.md): each creation, update and
//! deletion of a record keeps one event in the request's [`Ctx`]; `http::app::write_reply`
//! appends them to the feed in the same transaction. The type comes from core
//! ([`prodops_core::event::event_type`]), so actions get their events without writing them.

use prodops_core::event::{Change, changed_fields, event_type};
use serde_json::Value;

use super::ServedResource;
use crate::http::context::Ctx;
use crate::store::events::NewEvent;

fn id_text(record: &Value) -> String {
    record
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// A record was created.
pub fn created(ctx: &Ctx, res: &ServedResource, record: &Value) {
    let resource = res.desc().path;
    ctx.record_event(NewEvent {
        event_type: event_type(resource, Change::Created(record)),
        resource,
        record_id: id_text(record),
        data: record.to_string(),
        changed: None,
        by_reference: false,
        record_rowid: None,
    });
}

/// [`created_text`] of each row a multi-row insert wrote, with the rowids it answered.
pub fn created_rows<R: std::borrow::Borrow<crate::store::records::NewRow>>(
    ctx: &Ctx,
    res: &ServedResource,
    rows: &[R],
    rowids: Option<&[i64]>,
) {
    for (k, row) in rows.iter().enumerate() {
        let row = row.borrow();
        created_text(
            ctx,
            res,
            row.id.clone(),
            row.data.clone(),
            rowids.and_then(|r| r.get(k).copied()),
        );
    }
}

/// A record was created from its stored text (a bulk call's batched creates), with its id and,
/// where the insert told it, the SQLite rowid it was stored at.
pub fn created_text(ctx: &Ctx, res: &ServedResource, id: String, data: String, rowid: Option<i64>) {
    let resource = res.desc().path;
    ctx.record_event(NewEvent {
        event_type: event_type(resource, Change::Created(&Value::Null)),
        resource,
        record_id: id,
        data,
        changed: None,
        // The record's stored text: the feed may keep it by reference (store/events.rs).
        by_reference: true,
        record_rowid: rowid,
    });
}

/// A record was changed from `old` to `new`.
pub fn updated(ctx: &Ctx, res: &ServedResource, old: &Value, new: &Value) {
    ctx.record_event(update_event(res.desc().path, old, new));
}

/// The event of a change of a record of `resource` from `old` to `new`, for a writer without a
/// request (a background job appends it itself).
pub fn update_event(resource: &'static str, old: &Value, new: &Value) -> NewEvent {
    NewEvent {
        event_type: event_type(resource, Change::Updated { old, new }),
        resource,
        record_id: id_text(new),
        data: new.to_string(),
        changed: Some(Value::from(changed_fields(old, new)).to_string()),
        by_reference: false,
        record_rowid: None,
    }
}

/// A record was changed, its event's parts already made by the caller (a deliverable written
/// by the tree, from its typed record): the type, the record's id and JSON text, and the
/// changed fields as a JSON array text.
pub fn updated_text(
    ctx: &Ctx,
    res: &ServedResource,
    event_type: String,
    id: String,
    data: String,
    changed: String,
) {
    ctx.record_event(NewEvent {
        event_type,
        resource: res.desc().path,
        record_id: id,
        data,
        changed: Some(changed),
        by_reference: false,
        record_rowid: None,
    });
}

/// A record was removed; `old` is what it was.
pub fn deleted(ctx: &Ctx, res: &ServedResource, old: &Value) {
    let resource = res.desc().path;
    ctx.record_event(NewEvent {
        event_type: event_type(resource, Change::Deleted(old)),
        resource,
        record_id: id_text(old),
        data: old.to_string(),
        changed: None,
        by_reference: false,
        record_rowid: None,
    });
}
