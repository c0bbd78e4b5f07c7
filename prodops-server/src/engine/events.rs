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
    let event = update_event(res.desc().path, old, new);
    if res.desc().path == DELIVERABLE {
        let status = |v: &Value| {
            v.get("progress")
                .and_then(|p| p.get("status"))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let risk = |v: &Value| {
            v.get("computed")
                .and_then(|c| c.get("atRiskUntil"))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let transitions = Transitions {
            old_status: status(old).as_deref(),
            new_status: status(new).as_deref(),
            old_at_risk_until: risk(old).as_deref(),
            new_at_risk_until: risk(new).as_deref(),
        }
        .events(ctx, &event);
        ctx.record_event(event);
        for t in transitions {
            ctx.record_event(t);
        }
    } else {
        ctx.record_event(event);
    }
}

/// The path of the deliverables, whose updates may announce transitions.
const DELIVERABLE: &str = "deliverable";

/// What a deliverable's update announces beside its own event (docs/events.md, "Events for
/// what time changes"): `deliverable.became-ready` (its status from `waiting` to `todo`) and
/// `deliverable.became-at-risk` (not at risk as of the write's moment before it, at risk
/// after it), each a copy of the update's event under that type, appended right after it in
/// the same transaction.
pub struct Transitions<'a> {
    pub old_status: Option<&'a str>,
    pub new_status: Option<&'a str>,
    /// `computed.atRiskUntil` before and after: at risk while it is ahead of now.
    pub old_at_risk_until: Option<&'a str>,
    pub new_at_risk_until: Option<&'a str>,
}

impl Transitions<'_> {
    /// The announcements of the update whose event is `event`.
    pub fn events(&self, ctx: &Ctx, event: &NewEvent) -> Vec<NewEvent> {
        let now = prodops_core::alerts::AsOf::at(ctx.now);
        let at_risk = |until: Option<&str>| prodops_core::alerts::ahead(until, &now);
        prodops_core::event::deliverable_transitions(
            self.old_status,
            self.new_status,
            at_risk(self.old_at_risk_until),
            at_risk(self.new_at_risk_until),
        )
        .into_iter()
        .map(|ty| NewEvent {
            event_type: ty.to_string(),
            ..event.clone()
        })
        .collect()
    }
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
    transitions: Option<Transitions<'_>>,
) {
    let event = NewEvent {
        event_type,
        resource: res.desc().path,
        record_id: id,
        data,
        changed: Some(changed),
        by_reference: false,
        record_rowid: None,
    };
    let more = transitions
        .map(|t| t.events(ctx, &event))
        .unwrap_or_default();
    ctx.record_event(event);
    for t in more {
        ctx.record_event(t);
    }
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
