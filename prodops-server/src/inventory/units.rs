//! Units of measure over a transaction: the facts core's `prodops_core::units` needs (an item's
//! base unit and conversions, the chains of the units involved), read from the organization's
//! records, and the conversion of a quantity to its item's base unit.

use std::collections::HashMap;

use prodops_core::Violation;
use prodops_core::registry::ResourceId;
use prodops_core::units::{
    Factor, MAX_CHAIN, UnitConversion, UnitDef, check_chain, factor_to_base,
};
use serde_json::Value;
use uuid::Uuid;

use crate::engine::ServedResource;
use crate::engine::hooks::Hooks;
use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult};
use crate::store::{Tx, records};

fn uuid_field(v: &Value, field: &str) -> Option<Uuid> {
    v.get(field)
        .and_then(Value::as_str)
        .and_then(|s| Uuid::parse_str(s).ok())
}

/// A unit's own declaration as stored.
fn unit_def(record: &Value) -> UnitDef {
    UnitDef {
        base: uuid_field(record, "baseUnitMeasureId"),
        factor: record.get("factor").and_then(Value::as_f64),
    }
}

/// An item's base unit and its own conversions.
type ItemUnits = (Option<Uuid>, Vec<UnitConversion>);

/// Converts quantities of items to their base units inside one transaction, remembering the
/// units and items it read.
#[derive(Default)]
pub struct Converter {
    units: HashMap<Uuid, Option<UnitDef>>,
    items: HashMap<Uuid, Option<ItemUnits>>,
}

impl Converter {
    /// Reads `start` and the units its chain names (at most [`MAX_CHAIN`] steps).
    fn load_chain(&mut self, tx: &mut dyn Tx, ctx: &Ctx, start: Uuid) -> ApiResult<()> {
        let mut current = Some(start);
        for _ in 0..=MAX_CHAIN {
            let Some(id) = current else { break };
            let def = match self.units.get(&id) {
                Some(def) => *def,
                None => {
                    let def = records::get(
                        tx,
                        ResourceId::UnitMeasure.kind().desc().table,
                        ctx.org(),
                        id,
                    )?
                    .as_ref()
                    .map(unit_def);
                    self.units.insert(id, def);
                    def
                }
            };
            current = def.and_then(|d| d.base);
        }
        Ok(())
    }

    /// A unit's declaration as stored (`None` for no such unit in the organization).
    pub fn unit(&mut self, tx: &mut dyn Tx, ctx: &Ctx, id: Uuid) -> ApiResult<Option<UnitDef>> {
        self.load_chain(tx, ctx, id)?;
        Ok(self.units.get(&id).copied().flatten())
    }

    /// The base unit and conversions of a stored item.
    pub fn item_units(item: &Value) -> ItemUnits {
        let conversions = item
            .get("unitConversions")
            .cloned()
            .and_then(|c| serde_json::from_value(c).ok())
            .unwrap_or_default();
        (uuid_field(item, "unitMeasureId"), conversions)
    }

    /// The conversion of `unit` to the base unit of the stored `item`; `Err` says why there is
    /// none (the caller names the field).
    pub fn factor_for(
        &mut self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        item: &Value,
        unit: Option<Uuid>,
    ) -> ApiResult<Result<Factor, String>> {
        let (base, conversions) = Self::item_units(item);
        self.factor_with(tx, ctx, base, &conversions, unit)
    }

    fn factor_with(
        &mut self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        base: Option<Uuid>,
        conversions: &[UnitConversion],
        unit: Option<Uuid>,
    ) -> ApiResult<Result<Factor, String>> {
        let Some(unit) = unit.filter(|u| Some(*u) != base) else {
            return Ok(Ok(Factor::ONE));
        };
        self.load_chain(tx, ctx, unit)?;
        if let Some(base) = base {
            self.load_chain(tx, ctx, base)?;
        }
        let units = &self.units;
        Ok(factor_to_base(Some(unit), base, conversions, &|id| {
            units.get(&id).copied().flatten()
        }))
    }

    /// The conversion of `unit` to the base unit of the item `item_id` (read once per
    /// converter); a 400 naming `field` when the item is missing or the unit does not convert.
    pub fn factor(
        &mut self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        item_id: Uuid,
        unit: Option<Uuid>,
        field: &str,
    ) -> ApiResult<Factor> {
        if let std::collections::hash_map::Entry::Vacant(e) = self.items.entry(item_id) {
            let item = records::get(tx, ResourceId::Item.kind().desc().table, ctx.org(), item_id)?;
            e.insert(item.as_ref().map(Self::item_units));
        }
        let Some((base, conversions)) = self.items.get(&item_id).cloned().flatten() else {
            return Err(ApiError::field(
                "itemId",
                format!("no item {item_id} in this organization"),
            ));
        };
        self.factor_with(tx, ctx, base, &conversions, unit)?
            .map_err(|why| ApiError::field(field, why))
    }

    /// `quantity` of `unit` in the base unit of `item_id` (see [`Converter::factor`]).
    pub fn to_base(
        &mut self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        item_id: Uuid,
        unit: Option<Uuid>,
        quantity: f64,
    ) -> ApiResult<f64> {
        let factor = self.factor(tx, ctx, item_id, unit, "unitMeasureId")?;
        factor.apply(quantity).ok_or_else(|| {
            ApiError::field(
                "quantity",
                "the quantity in the item's base unit is beyond what the ledger holds",
            )
        })
    }
}

/// A write naming `unit` for the stored `item` is refused with 400 naming `field` unless the
/// unit converts to the item's base unit.
pub fn check_convertible(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    item: &Value,
    unit: Option<Uuid>,
    field: &str,
) -> ApiResult<()> {
    Converter::default()
        .factor_for(tx, ctx, item, unit)?
        .map(|_| ())
        .map_err(|why| ApiError::field(field, why))
}

/// `/unit-measure`: a declared base unit exists in the organization, and chains of base units
/// stay acyclic and at most `MAX_CHAIN` long. (No batched creates: a unit's base may be
/// created earlier in the same bulk call, and is read as stored.)
pub struct UnitHooks;

impl Hooks for UnitHooks {
    fn check_facts(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        old: Option<&Value>,
        new: &Value,
    ) -> ApiResult<()> {
        let Some(base) = uuid_field(new, "baseUnitMeasureId") else {
            return Ok(());
        };
        if old.is_some_and(|o| uuid_field(o, "baseUnitMeasureId") == Some(base)) {
            return Ok(());
        }
        let field = "baseUnitMeasureId";
        let mut converter = Converter::default();
        if converter.unit(tx, ctx, base)?.is_none() {
            return Err(ApiError::field(
                field,
                format!("no unit of measure {base} in this organization"),
            ));
        }
        let id = uuid_field(new, "id").unwrap_or_default();
        let units = &converter.units;
        check_chain(id, base, &|u| units.get(&u).copied().flatten())
            .map_err(|why| ApiError::field(field, why))
    }
}

/// `/item`: the units of `unitConversions` exist in the organization.
pub struct ItemHooks;

impl Hooks for ItemHooks {
    fn batch_creates(&self) -> bool {
        true
    }

    fn plain_create(&self, field: &dyn Fn(&str) -> Option<Value>) -> bool {
        field("unitConversions").is_none_or(|c| c.as_array().is_none_or(Vec::is_empty))
    }

    fn check_facts(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        old: Option<&Value>,
        new: &Value,
    ) -> ApiResult<()> {
        if let Some(old) = old {
            check_tracking_change(tx, ctx, old, new)?;
        }
        let (_, conversions) = Converter::item_units(new);
        let before = old.map(|o| Converter::item_units(o).1).unwrap_or_default();
        let mut converter = Converter::default();
        let mut violations = Vec::new();
        for (i, c) in conversions.iter().enumerate() {
            if before
                .iter()
                .any(|b| b.unit_measure_id == c.unit_measure_id)
            {
                continue;
            }
            if converter.unit(tx, ctx, c.unit_measure_id)?.is_none() {
                violations.push(Violation::field(
                    format!("unitConversions[{i}].unitMeasureId"),
                    format!(
                        "no unit of measure {} in this organization",
                        c.unit_measure_id
                    ),
                ));
            }
        }
        if violations.is_empty() {
            Ok(())
        } else {
            Err(ApiError::violations(violations))
        }
    }
}

/// An item's `tracking` changes only while it has no stock anywhere: stock posted untracked
/// has no lots to name, and a tracked item's lots would lose their meaning (409 naming
/// `tracking`; post the stock out, change it, post it in again).
fn check_tracking_change(tx: &mut dyn Tx, ctx: &Ctx, old: &Value, new: &Value) -> ApiResult<()> {
    let tracking = |v: &Value| {
        v.get("tracking")
            .and_then(Value::as_str)
            .unwrap_or("none")
            .to_string()
    };
    let (was, is) = (tracking(old), tracking(new));
    if was == is {
        return Ok(());
    }
    let Some(item) = new
        .get("id")
        .and_then(Value::as_str)
        .and_then(|s| uuid::Uuid::parse_str(s).ok())
    else {
        return Ok(());
    };
    if super::stock::has_stock(tx, ctx.org(), item)? {
        let message = format!(
            "item {item} has stock on hand: its tracking changes from {was} to {is} only while it has none (post its stock out, change the tracking, post it in again with lots)"
        );
        let mut err = ApiError::conflict(message.clone());
        err.details = vec![Violation::field("tracking", message)];
        return Err(err);
    }
    Ok(())
}
