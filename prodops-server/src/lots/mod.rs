//! Lots and serial numbers (issue 37): the hooks of `/lot`.
//!
//! A lot is a lot of an item of the organization that is tracked by lot or serial, named by
//! a code unique per item (the registry's unique key; archived lots keep theirs). Its custom
//! properties are the definitions scoped to lots (`deliverableTypes: ["lot"]`), checked and
//! canonicalized by core's `properties` rules as an order's are. The posting rules of lots are
//! core's (`prodops_core::lot_rules`), applied by `inventory::post` (inventory/lots.rs).

use prodops_core::custom_property::CustomPropertyDefinition;
use prodops_core::lot::{PROPERTY_SCOPE, Tracking};
use prodops_core::properties::apply_scoped_properties;
use prodops_core::registry::ResourceId;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::engine::ServedResource;
use crate::engine::hooks::Hooks;
use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult};
use crate::store::Tx;
use crate::store::records::{self, Select};

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
