//! Lots and serial numbers (issue 37): the hooks of `/lot`.
//!
//! A lot is a lot of an item of the organization that is tracked by lot or serial, named by
//! a code unique per item (the registry's unique key; archived lots keep theirs). Its custom
//! properties are the definitions scoped to lots (`deliverableTypes: ["lot"]`), checked and
//! canonicalized by core's `properties` rules as an order's are. The posting rules of lots are
//! core's (`prodops_core::lot_rules`), applied by `inventory::post` (inventory/lots.rs). The
//! lots a posting names by code are found or made here ([`lot_named`], [`make_lots`]).

pub mod trace;

use prodops_core::custom_property::CustomPropertyDefinition;
use prodops_core::delivery::ReceivedLot;
use prodops_core::lot::{Lot, PROPERTY_SCOPE, Tracking};
use prodops_core::properties::apply_scoped_properties;
use prodops_core::registry::ResourceId;
use prodops_core::violation::Violation;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::engine::ServedResource;
use crate::engine::hooks::Hooks;
use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult};
use crate::store::records::{self, Select};
use crate::store::sql::{Cond, FieldPath};
use crate::store::{SqlValue, Tx};

/// The hooks of `/lot`.
pub struct LotHooks;

impl Hooks for LotHooks {
    fn before_create(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        candidate: &mut Map<String, Value>,
    ) -> ApiResult<()> {
        let supplied = candidate.get("properties").cloned();
        write_properties(tx, ctx, None, supplied.as_ref(), candidate)
    }

    fn before_update(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        old: &Value,
        patch: &Map<String, Value>,
        candidate: &mut Map<String, Value>,
    ) -> ApiResult<()> {
        // A PATCH merges the properties it names into the stored ones, as on orders.
        let stored = old.get("properties").and_then(Value::as_object);
        write_properties(tx, ctx, stored, patch.get("properties"), candidate)
    }

    fn check_facts(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        old: Option<&Value>,
        new: &Value,
    ) -> ApiResult<()> {
        // `itemId` is immutable, so the item is judged once, when the lot is created.
        if old.is_some() {
            return Ok(());
        }
        let Some(item_id) = new
            .get("itemId")
            .and_then(Value::as_str)
            .and_then(|s| Uuid::parse_str(s).ok())
        else {
            return Ok(());
        };
        let table = ResourceId::Item.kind().desc().table;
        let Some(item) = records::get(tx, table, ctx.org(), item_id)? else {
            return Err(ApiError::field(
                "itemId",
                format!("no item {item_id} in this organization"),
            ));
        };
        let tracking: Tracking = item
            .get("tracking")
            .cloned()
            .map(serde_json::from_value)
            .transpose()
            .map_err(ApiError::internal)?
            .unwrap_or_default();
        if !tracking.is_tracked() {
            return Err(ApiError::field(
                "itemId",
                format!(
                    "item {item_id} is not tracked by lot or serial (its tracking is {:?}): set its tracking before making lots of it",
                    tracking.as_str()
                ),
            ));
        }
        Ok(())
    }
}

/// The custom property definitions scoped to lots, archived ones included (they keep
/// validating values, as on orders).
fn lot_definitions(tx: &mut dyn Tx, ctx: &Ctx) -> ApiResult<Vec<CustomPropertyDefinition>> {
    let select = Select {
        limit: 100_000,
        ..Default::default()
    };
    let mut defs = Vec::new();
    for value in records::select_values(
        tx,
        ResourceId::CustomProperty.kind().desc().table,
        ctx.org(),
        &select,
    )? {
        let def: CustomPropertyDefinition =
            serde_json::from_value(value).map_err(ApiError::internal)?;
        if def.applies_to(PROPERTY_SCOPE) {
            defs.push(def);
        }
    }
    Ok(defs)
}

/// Checks and canonicalizes the properties a write supplies (none supplied: nothing to do),
/// appending ad-hoc options to their definitions in the same transaction.
fn write_properties(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    stored: Option<&Map<String, Value>>,
    supplied: Option<&Value>,
    candidate: &mut Map<String, Value>,
) -> ApiResult<()> {
    let Some(supplied) = supplied else {
        return Ok(());
    };
    let defs = lot_definitions(tx, ctx)?;
    let out = apply_scoped_properties(PROPERTY_SCOPE, "properties", stored, Some(supplied), &defs)
        .map_err(ApiError::violations)?;
    candidate.insert("properties".into(), Value::Object(out.values));
    let cp = ctx.resource(ResourceId::CustomProperty);
    for (i, option) in out.new_options {
        let def = &defs[i];
        let stored =
            records::get(tx, cp.table(), ctx.org(), def.id)?.ok_or_else(ApiError::not_found)?;
        let mut options: Vec<Value> = stored
            .get("options")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let known = options.iter().any(|o| {
            o.as_str()
                .is_some_and(|o| o.to_lowercase() == option.to_lowercase())
        });
        if !known {
            options.push(json!(option));
            let mut patch = Map::new();
            patch.insert("options".into(), Value::Array(options));
            crate::engine::update_record(tx, ctx, cp, &stored, patch)?;
        }
    }
    Ok(())
}

/// The item's lot of this code, if it has one (codes are unique per item; the lookup goes
/// through the code's index and keeps the lot of `item`).
pub fn lot_of_code(tx: &mut dyn Tx, ctx: &Ctx, item: Uuid, code: &str) -> ApiResult<Option<Lot>> {
    let table = ResourceId::Lot.kind().desc().table;
    let path = FieldPath::parse("code").ok_or_else(|| ApiError::internal("lot code path"))?;
    for text in records::texts_where(tx, table, ctx.org(), &path, SqlValue::from(code))? {
        let lot: Lot = serde_json::from_str(&text).map_err(ApiError::internal)?;
        if lot.item_id == item {
            return Ok(Some(lot));
        }
    }
    Ok(None)
}

/// The lot a posting names by code (a receipt's line or a produced output, at request path
/// `at`): the item's lot of that code, whose expiry a posting does not change (a violation
/// naming `{at}.expiresAt` when the posting gives another), or a new lot, created through the
/// lot's own pipeline (its rules and events) in the posting's transaction.
pub fn lot_named(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    item: Uuid,
    named: &ReceivedLot,
    at: &str,
) -> ApiResult<Result<Lot, Violation>> {
    let code = named.code.trim();
    if let Some(lot) = lot_of_code(tx, ctx, item, code)? {
        if named.expires_at.is_some() && named.expires_at != lot.expires_at {
            return Ok(Err(Violation::field(
                format!("{at}.expiresAt"),
                format!(
                    "lot {:?} exists and expires at {}; a posting does not change it (PATCH the lot)",
                    lot.code,
                    lot.expires_at
                        .map_or("no date".to_string(), |d| d.to_rfc3339())
                ),
            )));
        }
        return Ok(Ok(lot));
    }
    let expires_at = match named.expires_at {
        Some(_) => {
            Some(serde_json::to_value(named).map_err(ApiError::internal)?["expiresAt"].take())
        }
        None => None,
    };
    Ok(Ok(create_lot(tx, ctx, item, code, expires_at, at)?))
}

/// Creates a lot of `item` through the lot's own pipeline (its rules, its events), a refusal
/// named under the request path `at`.
fn create_lot(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    item: Uuid,
    code: &str,
    expires_at: Option<Value>,
    at: &str,
) -> ApiResult<Lot> {
    let mut body = Map::new();
    body.insert("itemId".into(), json!(item));
    body.insert("code".into(), json!(code));
    if let Some(expires_at) = expires_at {
        body.insert("expiresAt".into(), expires_at);
    }
    let created = crate::engine::create_record(tx, ctx, ctx.resource(ResourceId::Lot), body)
        .map_err(|e| e.prefixed(|_| Some(at.to_string())))?;
    serde_json::from_value(created).map_err(ApiError::internal)
}

/// `count` new lots of `item` coded `{prefix}-{n}`, `n` counting on from the number of lots the
/// item has (so a shop's produced serials read 1, 2, 3, ... per item and prefix); a code taken
/// already (made by hand, or by another prefix's count) is skipped. A refusal is named `at`.
pub fn make_lots(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    item: Uuid,
    prefix: &str,
    count: usize,
    at: &str,
) -> ApiResult<Vec<Lot>> {
    let table = ResourceId::Lot.kind().desc().table;
    let existing = records::count(
        tx,
        table,
        ctx.org(),
        &[Cond::field_equals("itemId", item.to_string())],
    )?;
    let mut lots = Vec::with_capacity(count);
    let mut n = existing + 1;
    while lots.len() < count {
        let code = format!("{prefix}-{n}");
        if lot_of_code(tx, ctx, item, &code)?.is_none() {
            lots.push(create_lot(tx, ctx, item, &code, None, at)?);
        }
        n += 1;
    }
    Ok(lots)
}
