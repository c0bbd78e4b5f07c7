//! The write pipeline every standard write goes through: read-only fields dropped, server fields
//! set, hooks and rules run, the record stored, archive transitions kept in step.

use prodops_core::resource::{Archive, COMMON_READ_ONLY};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::ServedResource;
use super::params::{body_object, parse_id};
use crate::engine::hooks::DeleteAction;
use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult};
use crate::store::Tx;
use crate::store::records;

pub(crate) fn strip_read_only(res: &ServedResource, map: &mut Map<String, Value>) {
    for field in COMMON_READ_ONLY.iter().chain(res.desc().read_only) {
        map.remove(*field);
    }
}

pub(crate) fn without_updated_at(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("updatedAt");
    }
    v
}

/// Creates one record: read-only fields dropped, server fields set, hooks and rules run, stored.
pub fn create_record(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    res: &ServedResource,
    body: Map<String, Value>,
) -> ApiResult<Value> {
    create_inner(tx, ctx, res, body, false)
}

/// A record the server creates as the effect of an action (an invited member with its
/// account, ...): like [`create_record`], but the body may set the resource's read-only fields.
pub fn create_server_record(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    res: &ServedResource,
    body: Map<String, Value>,
) -> ApiResult<Value> {
    create_inner(tx, ctx, res, body, true)
}

/// A new record of a core type, created by the server as the effect of an action: the struct
/// is serialized once and goes through [`create_server_record`] (the pipeline sets its
/// organization and times again and stores its canonical form). Families build the records
/// they create this way, so a field's name and type come from core, not from a string.
pub fn create_server_typed<T: serde::Serialize>(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    res: &ServedResource,
    record: &T,
) -> ApiResult<Value> {
    create_server_record(tx, ctx, res, record_body(record)?)
}

/// A record of a core type as the body of a write.
pub fn record_body<T: serde::Serialize>(record: &T) -> ApiResult<Map<String, Value>> {
    match serde_json::to_value(record).map_err(ApiError::internal)? {
        Value::Object(body) => Ok(body),
        _ => Err(ApiError::internal("a record serializes to a JSON object")),
    }
}

/// A change the server makes to a stored record, given as the record's core struct before and
/// after: the fields whose serialized values differ become the change (a field the new struct
/// leaves out is cleared), applied as [`apply_server_change`] does.
pub fn apply_typed_change<T: serde::Serialize>(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    res: &ServedResource,
    old: &Value,
    before: &T,
    after: &T,
) -> ApiResult<Value> {
    let changes = changed_fields(&record_body(before)?, record_body(after)?);
    apply_server_change(tx, ctx, res, old, changes)
}

/// The fields of `after` that differ from `before`, with `null` for a field `after` drops.
pub(crate) fn changed_fields(
    before: &Map<String, Value>,
    after: Map<String, Value>,
) -> Map<String, Value> {
    let mut changes = Map::new();
    for (field, old) in before {
        if !after.contains_key(field) && !old.is_null() {
            changes.insert(field.clone(), Value::Null);
        }
    }
    for (field, new) in after {
        if before.get(&field) != Some(&new) {
            changes.insert(field, new);
        }
    }
    changes
}

fn create_inner(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    res: &ServedResource,
    body: Map<String, Value>,
    server: bool,
) -> ApiResult<Value> {
    let candidate = new_candidate(ctx, res, body, server)?;
    create_candidate(tx, ctx, res, candidate)
}

/// The candidate of a new record: read-only fields dropped (all but the common ones when the
/// server creates it), the id taken or generated, implied fields checked and set, server
/// fields (`organizationId`, `createdAt`, `updatedAt`, `archivedAt`) set. Reads nothing.
pub(crate) fn new_candidate(
    ctx: &Ctx,
    res: &ServedResource,
    mut body: Map<String, Value>,
    server: bool,
) -> ApiResult<Map<String, Value>> {
    if server {
        for field in COMMON_READ_ONLY {
            body.remove(*field);
        }
    } else {
        strip_read_only(res, &mut body);
    }
    let id = match body.remove("id") {
        None | Some(Value::Null) => Uuid::now_v7(),
        Some(Value::String(s)) => parse_id(&s)?,
        Some(_) => return Err(ApiError::field("id", "must be a UUID string")),
    };
    if res.desc().archive == Archive::Actions {
        body.remove("isArchived");
    }
    for (field, value) in &res.implied {
        match body.get(*field) {
            None | Some(Value::Null) => {}
            Some(v) if v.as_str() == Some(*value) => {}
            Some(_) => {
                return Err(ApiError::field(
                    field,
                    format!("must be {value:?} under /{}", res.base),
                ));
            }
        }
        body.insert(field.to_string(), json!(value));
    }
    let mut candidate = Map::new();
    candidate.insert("id".into(), json!(id));
    candidate.insert("organizationId".into(), json!(ctx.org()));
    candidate.extend(body);
    let now = json!(ctx.now_text());
    candidate.insert("createdAt".into(), now.clone());
    candidate.insert("updatedAt".into(), now.clone());
    if res.desc().archived_at {
        let archived = candidate
            .get("isArchived")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        candidate.insert(
            "archivedAt".into(),
            if archived { now } else { Value::Null },
        );
    }
    Ok(candidate)
}

/// The rest of a create once its candidate is built: hooks, rules, the write.
pub(crate) fn create_candidate(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    res: &ServedResource,
    candidate: Map<String, Value>,
) -> ApiResult<Value> {
    let record = checked_create(tx, ctx, res, candidate)?;
    records::insert(tx, res.table(), ctx.org(), &record)?;
    super::events::created(ctx, res, &record);
    res.hooks.after_write(tx, ctx, res, None, &record)?;
    Ok(record)
}

/// Creates `bodies` in order as [`create_record`] does each (the same rules, hooks and
/// events), for a resource whose hooks let a create's row wait
/// ([`Hooks::hold_hooked_creates`](crate::engine::hooks::Hooks::hold_hooked_creates)) within a
/// deferred call (`ctx.deferring()`): the rows are written together in multi-row inserts, so
/// an action that copies a thousand records costs a few statements, not a thousand. Answers
/// the records as stored; the first refusal ends the call (its transaction is not committed).
pub fn create_records_held(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    res: &ServedResource,
    bodies: Vec<Map<String, Value>>,
) -> ApiResult<Vec<Value>> {
    hold_creates(tx, ctx, res, bodies, false)
}

/// [`create_records_held`] for the rows of one request that names them as a list (a ledger
/// posting of several rows): a refusal carries the index of the body it names
/// (`ApiError::with_index`) when there are several.
pub fn create_records_held_indexed(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    res: &ServedResource,
    bodies: Vec<Map<String, Value>>,
) -> ApiResult<Vec<Value>> {
    let indexed = bodies.len() > 1;
    hold_creates(tx, ctx, res, bodies, indexed)
}

fn hold_creates(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    res: &ServedResource,
    bodies: Vec<Map<String, Value>>,
    indexed: bool,
) -> ApiResult<Vec<Value>> {
    let at = |i: usize| move |e: ApiError| if indexed { e.with_index(i) } else { e };
    if !res.hooks.hold_hooked_creates() || ctx.deferred.is_none() {
        return bodies
            .into_iter()
            .enumerate()
            .map(|(i, body)| create_record(tx, ctx, res, body).map_err(at(i)))
            .collect();
    }
    // What the creates' checks read (the tree rows of a dependency's ends, ...), in one read
    // per chunk, as a bulk PUT reads it.
    let texts: Vec<String> = bodies
        .iter()
        .map(|b| serde_json::to_string(b).map_err(ApiError::internal))
        .collect::<ApiResult<_>>()?;
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    res.hooks.read_ahead(tx, ctx, res, &[], &refs)?;
    let mut created = Vec::with_capacity(bodies.len());
    let mut rows = Vec::with_capacity(bodies.len());
    for (i, body) in bodies.into_iter().enumerate() {
        let candidate = new_candidate(ctx, res, body, false).map_err(at(i))?;
        let record = checked_create(tx, ctx, res, candidate).map_err(at(i))?;
        rows.push(records::NewRow::of_record(&record)?);
        res.hooks.after_write(tx, ctx, res, None, &record)?;
        created.push(record);
    }
    let rowids = records::insert_rows(tx, res.table(), ctx.org(), &rows)?;
    super::events::created_rows(ctx, res, &rows, rowids.as_deref());
    Ok(created)
}

/// A create up to its write: the hooks before it and the rules, giving the record to store.
pub(crate) fn checked_create(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    res: &ServedResource,
    mut candidate: Map<String, Value>,
) -> ApiResult<Value> {
    res.hooks.before_create(tx, ctx, res, &mut candidate)?;
    let record = res
        .kind
        .check(Value::Object(candidate), None)
        .map_err(ApiError::violations)?;
    crate::http::text::check_indexed_lengths(res.desc(), None, &record)?;
    res.hooks.check_facts(tx, ctx, res, None, &record)?;
    Ok(record)
}

/// Applies a PATCH to a stored record. Writes nothing when the result equals the record.
pub fn update_record(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    res: &ServedResource,
    old: &Value,
    patch: Map<String, Value>,
) -> ApiResult<Value> {
    update_inner(tx, ctx, res, old, patch, false)
}

/// A change the server itself makes to a record as the effect of an action (a document's
/// current version, a member's status, a delivery's status): unlike a client's PATCH it may set
/// read-only fields and fields outside `patch_only`, and may set `isArchived` on resources
/// archived by actions; hooks, rules and the no-change rule apply as to any update.
pub fn apply_server_change(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    res: &ServedResource,
    old: &Value,
    changes: Map<String, Value>,
) -> ApiResult<Value> {
    update_inner(tx, ctx, res, old, changes, true)
}

fn update_inner(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    res: &ServedResource,
    old: &Value,
    mut patch: Map<String, Value>,
    server: bool,
) -> ApiResult<Value> {
    let desc = res.desc();
    if !server {
        client_patch_rules(res, &patch)?;
    }
    if server {
        for field in ["id", "organizationId", "createdAt", "updatedAt"] {
            patch.remove(field);
        }
    } else {
        strip_read_only(res, &mut patch);
        patch.remove("id");
    }
    implied_patch_rule(res, &patch)?;
    if !server {
        // Every field a client's body names holds a value of the field's type before any hook
        // reads or replaces it: an archive clears `teamId`, and `"teamId": ""` beside it is
        // refused all the same (400 naming it), as a bulk PATCH's body is.
        res.kind
            .check_patch(&patch, false)
            .map_err(ApiError::violations)?;
    }
    let mut candidate = old.as_object().cloned().unwrap_or_default();
    let was_archived = candidate
        .get("isArchived")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    for (k, v) in &patch {
        candidate.insert(k.clone(), v.clone());
    }
    let archived = candidate
        .get("isArchived")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if desc.archived_at && archived != was_archived {
        candidate.insert(
            "archivedAt".into(),
            if archived {
                json!(ctx.now_text())
            } else {
                Value::Null
            },
        );
    }
    res.hooks
        .before_update(tx, ctx, res, old, &patch, &mut candidate)?;
    let mut record = res
        .kind
        .check(Value::Object(candidate), Some(old))
        .map_err(ApiError::violations)?;
    if without_updated_at(&record) == without_updated_at(old) {
        return Ok(old.clone());
    }
    crate::http::text::check_indexed_lengths(res.desc(), Some(old), &record)?;
    record["updatedAt"] = json!(ctx.now_text());
    res.hooks.check_facts(tx, ctx, res, Some(old), &record)?;
    records::update(tx, res.table(), ctx.org(), &record)?;
    super::events::updated(ctx, res, old, &record);
    res.hooks.after_write(tx, ctx, res, Some(old), &record)?;
    Ok(record)
}

/// The rules of a client's PATCH body that hold whatever the record: fields outside
/// `patch_only`, and the archive fields of a resource archived by its own actions.
fn client_patch_rules(res: &ServedResource, patch: &Map<String, Value>) -> ApiResult<()> {
    let desc = res.desc();
    if !desc.patch_only.is_empty()
        && let Some(field) = patch
            .keys()
            .find(|k| !desc.patch_only.contains(&k.as_str()))
    {
        return Err(ApiError::field(
            field,
            format!(
                "only {} can be changed on /{}",
                desc.patch_only.join(", "),
                desc.path
            ),
        ));
    }
    if desc.archive == Archive::Actions
        && let Some(field) = ["isArchived", "archivedAt"]
            .into_iter()
            .find(|f| patch.contains_key(*f))
    {
        return Err(ApiError::field(
            field,
            format!("use the archive and restore actions of /{}", desc.path),
        ));
    }
    Ok(())
}

/// A change of a field the endpoint implies (`type` under `/concept/order`) is refused.
fn implied_patch_rule(res: &ServedResource, patch: &Map<String, Value>) -> ApiResult<()> {
    for (field, value) in &res.implied {
        if let Some(v) = patch.get(*field)
            && v.as_str() != Some(*value)
        {
            return Err(ApiError::field(
                field,
                format!("cannot change under /{}", res.base),
            ));
        }
    }
    Ok(())
}

/// Checks a client's PATCH body before any record is read (a bulk PATCH, before it looks for
/// the records its filter matches): the rules that hold whatever the record, and core's
/// [`check_patch`](prodops_core::resource::ResourceKind::check_patch) of the fields it sets
/// (each a field of the record, with a value of its type). With `rules` (a bulk PATCH whose
/// filter matched nothing), also the record's own rules on those fields, unless the
/// resource's update hooks fill fields from other records
/// ([`Hooks::fills_on_update`](crate::engine::hooks::Hooks::fills_on_update)), so that a body refused
/// for any matching record is refused when none matches, too.
pub(crate) fn check_patch_body(
    res: &ServedResource,
    patch: &Map<String, Value>,
    rules: bool,
) -> ApiResult<()> {
    client_patch_rules(res, patch)?;
    let mut body = patch.clone();
    strip_read_only(res, &mut body);
    body.remove("id");
    implied_patch_rule(res, &body)?;
    res.kind
        .check_patch(&body, rules && !res.hooks.fills_on_update())
        .map_err(ApiError::violations)?;
    if rules {
        // The length of indexed text (docs/limits.md), as a matching record would be refused.
        crate::http::text::check_indexed_lengths(res.desc(), None, &Value::Object(body))?;
    }
    Ok(())
}

/// DELETE of one record: archives it where the resource archives on delete, else removes it.
pub fn delete_record(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    res: &ServedResource,
    old: &Value,
) -> ApiResult<()> {
    if res.hooks.before_delete(tx, ctx, res, old)? == DeleteAction::Handled {
        return Ok(());
    }
    match res.desc().archive {
        Archive::OnDelete => {
            let mut patch = Map::new();
            patch.insert("isArchived".into(), Value::Bool(true));
            update_record(tx, ctx, res, old, patch)?;
        }
        Archive::No | Archive::Actions | Archive::PatchOnly => {
            let id = old
                .get("id")
                .and_then(Value::as_str)
                .and_then(|s| Uuid::parse_str(s).ok());
            if let Some(id) = id
                && records::delete(tx, res.table(), ctx.org(), id)?
            {
                super::events::deleted(ctx, res, old);
            }
        }
    }
    Ok(())
}

pub fn load(tx: &mut dyn Tx, res: &ServedResource, org: Uuid, id: Uuid) -> ApiResult<Value> {
    records::get(tx, res.table(), org, id)?
        .filter(|r| res.matches_implied(r))
        .ok_or_else(ApiError::not_found)
}

pub fn upsert_record(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    res: &ServedResource,
    item: Value,
) -> ApiResult<Value> {
    let map = body_object(item)?;
    let existing = match map.get("id") {
        Some(Value::String(s)) => {
            let found = records::get(tx, res.table(), ctx.org(), parse_id(s)?)?;
            if found.as_ref().is_some_and(|r| !res.matches_implied(r)) {
                return Err(ApiError::field(
                    "id",
                    format!("{s} is a record outside /{}", res.base),
                ));
            }
            found
        }
        _ => None,
    };
    match existing {
        Some(old) => {
            res.allow(res.desc().ops.update, "PATCH")?;
            update_record(tx, ctx, res, &old, map)
        }
        None => create_record(tx, ctx, res, map),
    }
}

#[cfg(test)]
mod tests {
    use super::changed_fields;
    use proptest::prelude::*;
    use serde_json::{Map, Value, json};

    fn object(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!("the tests pass objects"),
        }
    }

    #[test]
    fn a_change_names_what_differs_and_clears_what_is_dropped() {
        let before = object(json!({"a": 1, "b": "x", "c": null, "d": [1], "e": {"k": 1}}));
        let after = object(json!({"a": 1, "b": "y", "e": {"k": 2}, "f": false}));
        let changes = changed_fields(&before, after);
        assert_eq!(
            Value::Object(changes),
            // `a` is equal, `c` was null already: neither is written. `d` is dropped: cleared.
            json!({"b": "y", "d": null, "e": {"k": 2}, "f": false})
        );
    }

    #[test]
    fn equal_structs_change_nothing() {
        let record = object(json!({"a": 1, "b": null, "c": {"x": [1, 2]}}));
        assert!(changed_fields(&record, record.clone()).is_empty());
    }

    fn small_record() -> impl Strategy<Value = Map<String, Value>> {
        let value = prop_oneof![
            Just(Value::Null),
            any::<i8>().prop_map(|n| json!(n)),
            "[a-c]{0,2}".prop_map(Value::String),
            any::<bool>().prop_map(Value::Bool),
        ];
        proptest::collection::btree_map("[a-e]", value, 0..5).prop_map(|m| m.into_iter().collect())
    }

    proptest! {
        /// Writing the change over `before` (a null clears the field) gives `after`, up to
        /// fields that are null or absent, which read the same.
        #[test]
        fn the_change_applied_to_before_gives_after(
            before in small_record(),
            after in small_record(),
        ) {
            let changes = changed_fields(&before, after.clone());
            let mut applied = before.clone();
            for (field, value) in changes {
                applied.insert(field, value);
            }
            let without_nulls = |m: &Map<String, Value>| -> Map<String, Value> {
                m.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), v.clone())).collect()
            };
            prop_assert_eq!(without_nulls(&applied), without_nulls(&after));
        }
    }
}
