//! Production outputs and BOM lines (spec 2.2, 2.3) and the production actions (spec 4.4).
//!
//! The rules that need other records (the owner is a root route or order, or a project; the
//! item exists; names and units default from the item) are the hooks of the two resources. The
//! actions read the order's declarations and lines, ask `prodops_core::production_actions` what
//! to post, and post it through [`crate::inventory::post`] in the same transaction, keeping
//! `quantityActual` equal to the sum of the order's production postings.

mod apply;
mod lots;
mod reversal;

use prodops_core::api;
use prodops_core::registry::ResourceId;
use std::collections::HashMap;

use chrono::{DateTime, Utc};
use prodops_core::deliverable::DeliverableType;
use prodops_core::inventory::{
    InventoryTransaction, TransactionSource, TransactionType, round_quantity,
};
use prodops_core::production::{
    BomLine, OutputSource, Owner, ProductionOutput, check_owner, check_placement,
};
use prodops_core::production_actions::{
    ActualKind, AdjustActualRequest, AdjustActualResult, ConsumeRequest, ConsumeResult, Credit,
    MaterialStatus, OrderEntry, OrderStatus, OutputStatus, ProduceRequest, ProduceResult,
    actual_stock_delta, check_adjust_actual, keys, lines_drawn_by, plan_consume, plan_produce,
    planned_for_order, planned_output, production_state, remaining,
};
use prodops_core::{Record, Violation};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::engine::hooks::Hooks;
use crate::engine::{self, ServedResource, create_server_typed};
use crate::http::call::Call;
use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult, read_stored};
use crate::http::typed::{Answered, ServedQuery, Shaped};
use crate::inventory::units::Converter;
use crate::plans::{
    deliverable, deliverable_type, lock_owner, order_by_path, order_quantity, owned, uuid_field,
};
use crate::store::Tx;
use crate::store::records::{self, Select};
use crate::store::sql::{Cond, FieldPath, Sort};
use prodops_core::api::Page;

/// The root of a deliverable's hierarchy, following `parentId` (bounded, so a cycle in raw data
/// cannot loop forever).
pub(crate) fn root_of(tx: &mut dyn Tx, ctx: &Ctx, node: &Value) -> ApiResult<Value> {
    let mut current = node.clone();
    for _ in 0..64 {
        let Some(parent) = uuid_field(&current, "parentId") else {
            return Ok(current);
        };
        match deliverable(tx, ctx, parent)? {
            Some(p) => current = p,
            None => return Ok(current),
        }
    }
    Err(ApiError::validation(
        "the deliverable hierarchy is deeper than 64 levels or has a cycle",
    ))
}

/// The root order of the node `field` names: (node, order).
pub(crate) fn order_of_node(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    field: &str,
    id: Uuid,
) -> ApiResult<(Value, Value)> {
    let node = deliverable(tx, ctx, id)?.ok_or_else(|| {
        ApiError::field(field, format!("no deliverable {id} in this organization"))
    })?;
    let root = root_of(tx, ctx, &node)?;
    if deliverable_type(&root) != Some(DeliverableType::Order) {
        return Err(ApiError::field(
            field,
            format!("deliverable {id} is not under an order; production is recorded on orders"),
        ));
    }
    Ok((node, root))
}

/// The records whose `quantityActual` the production actions keep: output declarations and
/// BOM lines.
pub(crate) trait WithActual: serde::Serialize + serde::de::DeserializeOwned {
    /// The record with a new actual quantity, written at `now`.
    fn with_actual(self, actual: f64, now: DateTime<Utc>) -> Self;
}

impl WithActual for ProductionOutput {
    fn with_actual(self, quantity_actual: f64, updated_at: DateTime<Utc>) -> Self {
        ProductionOutput {
            quantity_actual,
            updated_at,
            ..self
        }
    }
}

impl WithActual for BomLine {
    fn with_actual(self, quantity_actual: f64, updated_at: DateTime<Utc>) -> Self {
        BomLine {
            quantity_actual,
            updated_at,
            ..self
        }
    }
}

/// Writes a new `quantityActual` (server-maintained, so not through PATCH), checked by the
/// record's rules like any write. Not through the update hooks: `PlanHooks::before_update`
/// keeps the committed actual, which is the one this changes.
pub(crate) fn set_actual<T: WithActual>(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    res: &ServedResource,
    record: &Value,
    actual: f64,
) -> ApiResult<T> {
    let before: T = read_stored(record)?;
    let after = before.with_actual(round_quantity(actual), ctx.now);
    let checked = res
        .kind
        .check(Value::Object(engine::record_body(&after)?), Some(record))
        .map_err(ApiError::violations)?;
    records::update(tx, res.table(), ctx.org(), &checked)?;
    crate::engine::events::updated(ctx, res, record, &checked);
    read_stored(&checked)
}

/// An item's stored record, or a 400 naming `field`.
pub(crate) fn item(tx: &mut dyn Tx, ctx: &Ctx, field: &str, id: Uuid) -> ApiResult<Value> {
    records::get(tx, ResourceId::Item.kind().desc().table, ctx.org(), id)?
        .ok_or_else(|| ApiError::field(field, format!("no item {id} in this organization")))
}

// ----- hooks of /production-output and /bom-line ---------------------------------------------

/// Owner rules (spec 2.2 and 2.3 rules 1 and 2), the item, and names and units defaulting from
/// the item.
pub struct PlanHooks;

impl PlanHooks {
    fn fill_from_item(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        candidate: &mut Map<String, Value>,
    ) -> ApiResult<()> {
        let Some(item_id) = candidate
            .get("itemId")
            .and_then(Value::as_str)
            .and_then(|s| Uuid::parse_str(s).ok())
        else {
            return Ok(());
        };
        let item = item(tx, ctx, "itemId", item_id)?;
        let name_empty = candidate
            .get("name")
            .and_then(Value::as_str)
            .is_none_or(|n| n.trim().is_empty());
        if name_empty && let Some(name) = item.get("name") {
            candidate.insert("name".into(), name.clone());
        }
        if candidate.get("unitMeasureId").is_none_or(Value::is_null)
            && let Some(unit) = item.get("unitMeasureId").filter(|u| !u.is_null())
        {
            candidate.insert("unitMeasureId".into(), unit.clone());
        }
        // Quantities of the line are in its unit; postings convert them to the item's base
        // unit, so the unit must convert.
        if let Some(unit) = candidate.get("unitMeasureId").and_then(Value::as_str)
            && let Ok(unit) = Uuid::parse_str(unit)
        {
            crate::inventory::units::check_convertible(
                tx,
                ctx,
                &item,
                Some(unit),
                "unitMeasureId",
            )?;
        }
        Ok(())
    }
}

fn owner_of(res: &ServedResource, record: &Value) -> Option<Owner> {
    if res.desc().path == BomLine::DESC.path {
        read_stored::<BomLine>(record)
            .ok()
            .and_then(|l| l.owner().ok())
    } else {
        read_stored::<ProductionOutput>(record)
            .ok()
            .and_then(|o| o.owner().ok())
    }
}

impl Hooks for PlanHooks {
    /// `name` and the unit are filled from the item when a write leaves them empty.
    fn fills_on_update(&self) -> bool {
        true
    }

    fn before_create(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        candidate: &mut Map<String, Value>,
    ) -> ApiResult<()> {
        self.fill_from_item(tx, ctx, candidate)
    }

    fn before_update(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        res: &ServedResource,
        old: &Value,
        _patch: &Map<String, Value>,
        candidate: &mut Map<String, Value>,
    ) -> ApiResult<()> {
        // The production actions change quantityActual under the owner's lock; a PATCH takes
        // the same lock and keeps the committed value, so neither overwrites the other.
        if let Some(owner) = owner_of(res, old) {
            lock_owner(tx, ctx, owner.id())?;
            if let Some(id) = uuid_field(old, "id")
                && let Some(current) = records::get(tx, res.table(), ctx.org(), id)?
                && let Some(actual) = current.get("quantityActual")
            {
                candidate.insert("quantityActual".into(), actual.clone());
            }
        }
        self.fill_from_item(tx, ctx, candidate)
    }

    fn check_facts(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        res: &ServedResource,
        old: Option<&Value>,
        new: &Value,
    ) -> ApiResult<()> {
        // A declaration's default output location must be one of the organization's.
        if let Some(location) = uuid_field(new, "locationId")
            && old.and_then(|o| uuid_field(o, "locationId")) != Some(location)
            && records::get(
                tx,
                ResourceId::Location.kind().desc().table,
                ctx.org(),
                location,
            )?
            .is_none()
        {
            return Err(ApiError::field(
                "locationId",
                format!("no location {location} in this organization"),
            ));
        }
        let Some(owner) = owner_of(res, new) else {
            return Ok(());
        };
        // Spec 2.3 rule 2: a placement names a phase, component, stage or step inside the
        // line's owner (checked whenever the placement or the owner changes).
        if let Some(node) = uuid_field(new, "placedOnDeliverableId")
            && old.is_none_or(|o| {
                uuid_field(o, "placedOnDeliverableId") != Some(node)
                    || owner_of(res, o) != Some(owner)
            })
        {
            check_placed_node(tx, ctx, owner, node)?;
        }
        if old.is_some_and(|o| owner_of(res, o) == Some(owner)) {
            return Ok(());
        }
        match owner {
            Owner::Project(id) => {
                if records::get(tx, ResourceId::Project.kind().desc().table, ctx.org(), id)?
                    .is_none()
                {
                    return Err(ApiError::field(
                        "projectId",
                        format!("no project {id} in this organization"),
                    ));
                }
            }
            Owner::Route(id) | Owner::Order(id) => {
                let Some(d) = deliverable(tx, ctx, id)? else {
                    return Err(ApiError::field(
                        owner.field(),
                        format!("no deliverable {id} in this organization"),
                    ));
                };
                let Some(kind) = deliverable_type(&d) else {
                    return Err(ApiError::internal("stored deliverable without a type"));
                };
                check_owner(owner, kind, uuid_field(&d, "parentId").is_some())
                    .map_err(|v| ApiError::violations(vec![v]))?;
            }
        }
        Ok(())
    }
}

/// The node a BOM line is placed on exists and is a phase, component, stage or step inside the
/// line's owner (core's `check_placement`), by the tree index.
fn check_placed_node(tx: &mut dyn Tx, ctx: &Ctx, owner: Owner, node: Uuid) -> ApiResult<()> {
    let field = "placedOnDeliverableId";
    let missing = || ApiError::field(field, format!("no deliverable {node} in this organization"));
    let record = deliverable(tx, ctx, node)?.ok_or_else(missing)?;
    let kind = deliverable_type(&record).ok_or_else(missing)?;
    let row = crate::deliverables::tree::tree_row(tx, ctx.org(), node)?.ok_or_else(missing)?;
    let root = (row.root_id != node).then_some(row.root_id);
    check_placement(owner, kind, root).map_err(|v| ApiError::violations(vec![v]))
}

/// The node and every node below it, by the tree index.
pub(crate) fn subtree_ids(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    node: Uuid,
) -> ApiResult<std::collections::HashSet<Uuid>> {
    let Some(row) = crate::deliverables::tree::tree_row(tx, ctx.org(), node)? else {
        return Ok([node].into());
    };
    Ok(
        crate::deliverables::tree::subtree_rows(tx, ctx.org(), &row)?
            .into_iter()
            .map(|r| r.id)
            .collect(),
    )
}

// ----- the actions ---------------------------------------------------------------------------

// The handlers of this family's declared actions (`prodops_core::api::production`); the router
// serves each on its declared method and path, behind its declared access.
crate::http::action::handle! {
    api::production::Produce => produce;
    api::production::Consume => consume;
    api::production::AdjustActual => adjust_actual;
    api::production::OrderStatus => order_status;
    api::production::OrderEntries => order_entries;
    api::production::ApplyTemplate => apply::apply_template;
    // Served here, not by inventory: a production row's reversal takes its actual back too.
    api::inventory::Reverse => reverse;
}

/// `POST /inventory/reverse`: the opposite of ledger rows, linked to them, once
/// ([`reversal::reverse_in`]). Needs `Item.Update`. 201 with the reversal rows.
async fn reverse(
    call: Call,
    (): (),
    (): (),
    req: api::inventory::ReverseRequest,
) -> ApiResult<Answered<api::inventory::Reverse>> {
    reversal::check_request(&req).map_err(ApiError::violations)?;
    call.write(move |tx, ctx| Ok(reversal::reverse_in(tx, ctx, &req, reverse_actuals)?.into()))
        .await
}

/// Posts ledger rows and returns them as stored.
fn post_rows(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    rows: &[InventoryTransaction],
) -> ApiResult<Vec<InventoryTransaction>> {
    crate::inventory::post_typed(tx, ctx, rows)?
        .iter()
        .map(read_stored)
        .collect()
}

/// Where a production posting moves stock: out of a location (consume) or into one (produce,
/// and an adjustment of the actual).
#[derive(Clone, Copy)]
enum At {
    From(Uuid),
    To(Uuid),
}

/// A production posting: `quantity` is in the declaration's or line's unit (`unit`), which
/// the ledger converts to the item's base unit, keeping it as entered.
// Each argument is one field of the row; a struct of them would repeat the row's own.
#[allow(clippy::too_many_arguments)]
fn ledger_row(
    ctx: &Ctx,
    kind: TransactionType,
    item: Uuid,
    quantity: f64,
    unit: Option<Uuid>,
    at: At,
    node: Uuid,
    meta: Map<String, Value>,
) -> InventoryTransaction {
    let (from, to) = match at {
        At::From(l) => (Some(l), None),
        At::To(l) => (None, Some(l)),
    };
    InventoryTransaction {
        id: Uuid::now_v7(),
        organization_id: ctx.org(),
        item_id: item,
        shop_id: Uuid::nil(),
        kind,
        quantity,
        unit_measure_id: unit,
        entered_quantity: None,
        entered_unit_measure_id: None,
        unit_cost: None,
        from_location_id: from,
        to_location_id: to,
        deliverable_id: Some(node),
        delivery_id: None,
        pick_line_id: None,
        source: TransactionSource::Manual,
        reason: None,
        app_user_id: None,
        metadata: meta,
        created_at: ctx.now,
        updated_at: ctx.now,
        // A tracked item's row is split per lot by `lots::output_rows` and `lots::draw_rows`.
        lot_id: None,
        reverses_id: None,
    }
}

/// The tracking of each item among `items` (one read for all of them).
fn trackings_of(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    items: impl Iterator<Item = Uuid>,
) -> ApiResult<HashMap<Uuid, prodops_core::lot::Tracking>> {
    let mut items: Vec<Uuid> = items.collect();
    items.sort_unstable();
    items.dedup();
    crate::inventory::lots::trackings(tx, ctx.org(), &items)
}

fn meta(order: Uuid, record_key: &str, record: Uuid, kind: ActualKind) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(keys::ORDER.into(), json!(order));
    m.insert(record_key.into(), json!(record));
    m.insert(keys::ACTUAL_KIND.into(), json!(kind));
    m
}

/// The item's default location, or a 400 naming `field` that says what is missing.
fn default_location(tx: &mut dyn Tx, ctx: &Ctx, field: &str, item_id: Uuid) -> ApiResult<Uuid> {
    let item = item(tx, ctx, "itemId", item_id)?;
    uuid_field(&item, "defaultLocationId").ok_or_else(|| {
        ApiError::field(
            field,
            format!("give {field}: item {item_id} has no default location"),
        )
    })
}

async fn produce(
    call: Call,
    (): (),
    (): (),
    req: ProduceRequest,
) -> ApiResult<Answered<api::production::Produce>> {
    call.write(move |tx, ctx| Ok(produce_in(tx, ctx, &req)?.into()))
        .await
}

/// The produce action inside a transaction.
pub fn produce_in(tx: &mut dyn Tx, ctx: &Ctx, req: &ProduceRequest) -> ApiResult<ProduceResult> {
    let (node, order) = order_of_node(tx, ctx, "deliverableId", req.deliverable_id)?;
    let order_id = uuid_field(&order, "id").unwrap_or_default();
    lock_owner(tx, ctx, order_id)?;
    let res = ctx.resource(ResourceId::ProductionOutput);
    let mut decls = owned(tx, ctx, res, "orderDeliverableId", order_id)?;
    let typed_decls: Vec<ProductionOutput> =
        decls.iter().map(read_stored).collect::<ApiResult<_>>()?;
    let plan = plan_produce(req, &typed_decls).map_err(ApiError::violations)?;
    let node_id = uuid_field(&node, "id").unwrap_or_default();
    // Ad-hoc declarations first (one per item), then the postings.
    let mut adhoc: HashMap<Uuid, usize> = HashMap::new();
    let mut credits = Vec::with_capacity(plan.len());
    for p in &plan {
        let index = match p.credit {
            Credit::Declared(i) => i,
            Credit::AdHoc => match adhoc.get(&p.item_id) {
                Some(i) => *i,
                None => {
                    // Its name and unit come from the item (`PlanHooks`).
                    let output = ProductionOutput {
                        id: Uuid::now_v7(),
                        organization_id: ctx.org(),
                        name: String::new(),
                        identifier: String::new(),
                        item_id: p.item_id,
                        route_deliverable_id: None,
                        order_deliverable_id: Some(order_id),
                        produced_per_unit: None,
                        quantity: None,
                        quantity_actual: 0.0,
                        location_id: None,
                        unit_measure_id: None,
                        source: OutputSource::Adhoc,
                        sort_order: 0.0,
                        notes: None,
                        metadata: Map::new(),
                        is_archived: false,
                        archived_at: None,
                        created_at: ctx.now,
                        updated_at: ctx.now,
                    };
                    let created = create_server_typed(tx, ctx, res, &output)?;
                    decls.push(created);
                    adhoc.insert(p.item_id, decls.len() - 1);
                    decls.len() - 1
                }
            },
        };
        credits.push(index);
    }
    let tracking = trackings_of(tx, ctx, plan.iter().map(|p| p.item_id))?;
    let order_identifier = order
        .get("identifier")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut units = Converter::default();
    let mut produced_lots = Vec::new();
    let mut refused = Vec::new();
    let mut rows = Vec::with_capacity(plan.len());
    for (p, &index) in plan.iter().zip(&credits) {
        let location = match p.location_id {
            Some(l) => l,
            None => default_location(tx, ctx, "outputLocationId", p.item_id)?,
        };
        let decl_id = uuid_field(&decls[index], "id").unwrap_or_default();
        let row = ledger_row(
            ctx,
            TransactionType::Produce,
            p.item_id,
            p.quantity,
            uuid_field(&decls[index], "unitMeasureId"),
            At::To(location),
            node_id,
            meta(order_id, keys::OUTPUT, decl_id, ActualKind::Produce),
        );
        let tracked = tracking.get(&p.item_id).copied().unwrap_or_default();
        match lots::output_rows(
            tx,
            ctx,
            req,
            p,
            tracked,
            row,
            &order_identifier,
            &mut units,
            &mut produced_lots,
        )? {
            Ok(r) => rows.extend(r),
            Err(v) => refused.extend(v),
        }
    }
    if !refused.is_empty() {
        return Err(ApiError::violations(refused));
    }
    let transactions = post_rows(tx, ctx, &rows)?;
    let mut added: Vec<(usize, f64)> = Vec::new();
    for (p, &index) in plan.iter().zip(&credits) {
        match added.iter_mut().find(|(i, _)| *i == index) {
            Some((_, q)) => *q += p.quantity,
            None => added.push((index, p.quantity)),
        }
    }
    let mut outputs = Vec::with_capacity(added.len());
    for (index, q) in added {
        let decl = &decls[index];
        let actual = decl
            .get("quantityActual")
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        outputs.push(set_actual(tx, ctx, res, decl, actual + q)?);
    }
    Ok(ProduceResult {
        transactions,
        outputs,
        lots: produced_lots,
    })
}

async fn consume(
    call: Call,
    (): (),
    (): (),
    req: ConsumeRequest,
) -> ApiResult<Answered<api::production::Consume>> {
    call.write(move |tx, ctx| Ok(consume_in(tx, ctx, &req)?.into()))
        .await
}

/// The consume action inside a transaction.
pub fn consume_in(tx: &mut dyn Tx, ctx: &Ctx, req: &ConsumeRequest) -> ApiResult<ConsumeResult> {
    let (node, order) = order_of_node(tx, ctx, "deliverableId", req.deliverable_id)?;
    let order_id = uuid_field(&order, "id").unwrap_or_default();
    lock_owner(tx, ctx, order_id)?;
    let res = ctx.resource(ResourceId::BomLine);
    let all_lines = owned(tx, ctx, res, "orderDeliverableId", order_id)?;
    let all_typed: Vec<BomLine> = all_lines
        .iter()
        .map(read_stored)
        .collect::<ApiResult<_>>()?;
    let node_id = uuid_field(&node, "id").unwrap_or_default();
    // The node's own BOM: on the order every line, on a node the lines placed on it or below.
    let subtree = if node_id == order_id {
        [node_id].into()
    } else {
        subtree_ids(tx, ctx, node_id)?
    };
    let drawn = lines_drawn_by(&all_typed, node_id, order_id, &subtree);
    let lines: Vec<Value> = drawn.iter().map(|&i| all_lines[i].clone()).collect();
    let typed_lines: Vec<BomLine> = drawn.iter().map(|&i| all_typed[i].clone()).collect();
    let (draws, ignored) =
        plan_consume(req, &typed_lines, order_quantity(&order)).map_err(ApiError::violations)?;
    let tracking = trackings_of(tx, ctx, draws.iter().map(|d| d.item_id))?;
    let picking = crate::inventory::corrections::stock_settings(&ctx.auth).lot_picking;
    let mut units = Converter::default();
    let mut taken = Vec::new();
    let mut rows = Vec::with_capacity(draws.len());
    for d in &draws {
        let location = match d.location_id {
            Some(l) => l,
            None => default_location(tx, ctx, "fromLocationId", d.item_id)?,
        };
        let row = ledger_row(
            ctx,
            TransactionType::Consume,
            d.item_id,
            d.quantity,
            typed_lines[d.line].unit_measure_id,
            At::From(location),
            node_id,
            meta(
                order_id,
                keys::LINE,
                typed_lines[d.line].id,
                ActualKind::Consume,
            ),
        );
        let tracked = tracking.get(&d.item_id).copied().unwrap_or_default();
        rows.extend(lots::draw_rows(
            tx, ctx, req, d, tracked, location, row, picking, &mut units, &mut taken,
        )??);
    }
    let transactions = post_rows(tx, ctx, &rows)?;
    let mut added: Vec<(usize, f64)> = Vec::new();
    for d in &draws {
        match added.iter_mut().find(|(i, _)| *i == d.line) {
            Some((_, q)) => *q += d.quantity,
            None => added.push((d.line, d.quantity)),
        }
    }
    let mut updated = Vec::with_capacity(added.len());
    for (index, q) in added {
        let line = &lines[index];
        let actual = line
            .get("quantityActual")
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        let new: BomLine = set_actual(tx, ctx, res, line, actual + q)?;
        crate::inventory::reservations::release(
            tx,
            ctx,
            typed_lines[index].id,
            typed_lines[index].unit_measure_id,
            q,
        )?;
        updated.push(new);
    }
    Ok(ConsumeResult {
        transactions,
        lines: updated,
        ignored,
        lots: taken,
    })
}

async fn adjust_actual(
    call: Call,
    (): (),
    (): (),
    req: AdjustActualRequest,
) -> ApiResult<Answered<api::production::AdjustActual>> {
    check_adjust_actual(&req).map_err(ApiError::violations)?;
    call.write(move |tx, ctx| Ok(adjust_actual_in(tx, ctx, &req)?.into()))
        .await
}

/// The latest production posting of a declaration or line: where its stock went or came from.
fn last_location(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    record_key: &str,
    record: Uuid,
) -> ApiResult<Option<Uuid>> {
    let select = Select {
        conds: vec![Cond::field_equals(
            &format!("metadata.{record_key}"),
            record.to_string(),
        )],
        sort: vec![Sort {
            path: FieldPath::parse("createdAt").expect("static"),
            descending: true,
            as_of: None,
        }],
        limit: 1,
        offset: 0,
    };
    let rows = records::select_values(
        tx,
        ResourceId::InventoryTransaction.kind().desc().table,
        ctx.org(),
        &select,
    )?;
    Ok(rows
        .first()
        .and_then(|r| uuid_field(r, "toLocationId").or(uuid_field(r, "fromLocationId"))))
}

/// The adjust-actual action inside a transaction: the correction is an `adjust` ledger row at
/// the location of the record's latest posting (else the item's default location), so stock and
/// `quantityActual` stay the sums of the ledger.
pub fn adjust_actual_in(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    req: &AdjustActualRequest,
) -> ApiResult<AdjustActualResult> {
    let (node, order) = order_of_node(tx, ctx, "stampDeliverableId", req.stamp_deliverable_id)?;
    let order_id = uuid_field(&order, "id").unwrap_or_default();
    lock_owner(tx, ctx, order_id)?;
    let (res, record_key, what) = match req.kind {
        ActualKind::Produce => (
            ctx.resource(ResourceId::ProductionOutput),
            keys::OUTPUT,
            "output declaration",
        ),
        ActualKind::Consume => (ctx.resource(ResourceId::BomLine), keys::LINE, "BOM line"),
    };
    let records = owned(tx, ctx, res, "orderDeliverableId", order_id)?;
    let record = records
        .iter()
        .find(|r| uuid_field(r, "itemId") == Some(req.item_id))
        .ok_or_else(|| {
            ApiError::field(
                "itemId",
                format!("the order has no {what} for item {}", req.item_id),
            )
        })?
        .clone();
    let record_id = uuid_field(&record, "id").unwrap_or_default();
    let actual = record
        .get("quantityActual")
        .and_then(Value::as_f64)
        .unwrap_or(0.0);
    let new_actual = round_quantity(actual + req.delta);
    if new_actual < 0.0 {
        return Err(ApiError::field(
            "delta",
            format!(
                "the actual quantity would become negative ({actual} + {})",
                req.delta
            ),
        ));
    }
    let location = match last_location(tx, ctx, record_key, record_id)? {
        Some(l) => l,
        None => default_location(tx, ctx, "itemId", req.item_id)?,
    };
    let row = ledger_row(
        ctx,
        TransactionType::Adjust,
        req.item_id,
        actual_stock_delta(req.kind, req.delta),
        uuid_field(&record, "unitMeasureId"),
        At::To(location),
        uuid_field(&node, "id").unwrap_or_default(),
        meta(order_id, record_key, record_id, req.kind),
    );
    // The ledger checks the lot against the item's tracking (400 naming `lotId`).
    let row = InventoryTransaction {
        lot_id: req.lot_id,
        ..row
    };
    let transaction = post_rows(tx, ctx, &[row])?.remove(0);
    let (output, line) = match req.kind {
        ActualKind::Produce => (Some(set_actual(tx, ctx, res, &record, new_actual)?), None),
        ActualKind::Consume => {
            let line = set_actual(tx, ctx, res, &record, new_actual)?;
            if req.delta > 0.0 {
                crate::inventory::reservations::release(
                    tx,
                    ctx,
                    record_id,
                    uuid_field(&record, "unitMeasureId"),
                    req.delta,
                )?;
            }
            (None, Some(line))
        }
    };
    Ok(AdjustActualResult {
        transaction,
        output,
        line,
    })
}

/// The order's production postings, oldest first.
fn order_postings(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    order: Uuid,
    limit: u64,
    offset: u64,
) -> ApiResult<(Vec<Value>, u64)> {
    let conds = vec![Cond::field_equals(
        &format!("metadata.{}", keys::ORDER),
        order.to_string(),
    )];
    let table = ResourceId::InventoryTransaction.kind().desc().table;
    let select = Select {
        conds: conds.clone(),
        sort: Vec::new(),
        limit,
        offset,
    };
    let rows = records::select_values(tx, table, ctx.org(), &select)?;
    let total = records::count(tx, table, ctx.org(), &conds)?;
    Ok((rows, total))
}

async fn order_status(
    call: Call,
    id: Uuid,
    (): (),
    (): (),
) -> ApiResult<Answered<api::production::OrderStatus>> {
    let status = call
        .read(move |tx, ctx| {
            let order = order_by_path(tx, ctx, id)?;
            let quantity = order_quantity(&order);
            let mut outputs = Vec::new();
            for d in owned(
                tx,
                ctx,
                ctx.resource(ResourceId::ProductionOutput),
                "orderDeliverableId",
                id,
            )? {
                let d: ProductionOutput = read_stored(&d)?;
                let planned = planned_output(&d, quantity);
                outputs.push(OutputStatus {
                    production_output_id: d.id,
                    item_id: d.item_id,
                    name: d.name.clone(),
                    planned,
                    actual: d.quantity_actual,
                    remaining: planned.map(|p| remaining(p, d.quantity_actual)),
                    unit_measure_id: d.unit_measure_id,
                });
            }
            let mut materials = Vec::new();
            for l in owned(
                tx,
                ctx,
                ctx.resource(ResourceId::BomLine),
                "orderDeliverableId",
                id,
            )? {
                let l: BomLine = read_stored(&l)?;
                let planned = planned_for_order(&l, quantity);
                materials.push(MaterialStatus {
                    bom_line_id: l.id,
                    item_id: l.item_id,
                    name: l.name.clone(),
                    planned,
                    actual: l.quantity_actual,
                    remaining: remaining(planned, l.quantity_actual),
                    unit_measure_id: l.unit_measure_id,
                });
            }
            let (_, entry_count) = order_postings(tx, ctx, id, 0, 0)?;
            Ok::<_, ApiError>(OrderStatus {
                order_id: id,
                order_quantity: quantity,
                state: production_state(&outputs, &materials),
                outputs,
                materials,
                entry_count,
            })
        })
        .await?;
    Ok(Answered::new(status.into()))
}

/// Which actual a production row changes: its `actualKind`, else its type's.
fn actual_kind_of(t: &InventoryTransaction) -> ActualKind {
    t.metadata
        .get(keys::ACTUAL_KIND)
        .and_then(|k| serde_json::from_value(k.clone()).ok())
        .unwrap_or(match t.kind {
            TransactionType::Consume => ActualKind::Consume,
            _ => ActualKind::Produce,
        })
}

/// The signed change of the actual a production row makes, of `quantity`: produce and consume
/// rows count it; an adjust row's stock delta is the actual's change for output and its
/// negation for material; a reversal takes back the change of the row it reverses.
fn actual_change(t: &InventoryTransaction, kind: ActualKind, quantity: f64) -> f64 {
    let change = match (t.kind, kind) {
        (TransactionType::Adjust, ActualKind::Consume) => -quantity,
        _ => quantity,
    };
    if t.reverses_id.is_some() {
        -change
    } else {
        change
    }
}

/// The reversal of production rows (`POST /inventory/reverse`, `reversal` being the rows it
/// posts): under each order's lock, each declaration's or line's `quantityActual` takes back
/// the change its reversed rows made, in its unit, so the actuals stay the sums of the order's
/// entries. A row entered in the record's unit counts as entered; a row posted in the item's
/// base unit while the record is in another (a tracked item's rows, one per lot or serial,
/// [`lots`]) is converted back to the record's unit. Reservations a consume used up are not
/// restored. Rows that are not production rows are left alone.
pub(crate) fn reverse_actuals(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    reversal: &[InventoryTransaction],
) -> ApiResult<()> {
    let meta_id = |t: &InventoryTransaction, k: &str| {
        t.metadata
            .get(k)
            .and_then(Value::as_str)
            .and_then(|s| Uuid::parse_str(s).ok())
    };
    // (order, record, kind) -> the rows changing its actual; in order, so locks are taken in
    // order.
    let mut changes: std::collections::BTreeMap<(Uuid, Uuid, bool), Vec<&InventoryTransaction>> =
        Default::default();
    let mut units = Converter::default();
    for t in reversal {
        let Some(order) = meta_id(t, keys::ORDER) else {
            continue;
        };
        let kind = actual_kind_of(t);
        let key = match kind {
            ActualKind::Produce => keys::OUTPUT,
            ActualKind::Consume => keys::LINE,
        };
        let Some(record) = meta_id(t, key) else {
            continue;
        };
        changes
            .entry((order, record, kind == ActualKind::Produce))
            .or_default()
            .push(t);
    }
    let mut locked = None;
    for ((order, record_id, produce), rows) in changes {
        if locked != Some(order) {
            lock_owner(tx, ctx, order)?;
            locked = Some(order);
        }
        let res = ctx.resource(if produce {
            ResourceId::ProductionOutput
        } else {
            ResourceId::BomLine
        });
        let Some(record) = records::get(tx, res.table(), ctx.org(), record_id)? else {
            return Err(ApiError::conflict(format!(
                "the production record {record_id} the rows were posted against is gone"
            )));
        };
        let unit = uuid_field(&record, "unitMeasureId");
        let mut change = 0.0;
        for t in rows {
            let kind = actual_kind_of(t);
            change += actual_change(t, kind, in_record_unit(tx, ctx, &mut units, t, unit)?);
        }
        let actual = record
            .get("quantityActual")
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        let new_actual = round_quantity(actual + change);
        if new_actual < 0.0 {
            return Err(ApiError::conflict(format!(
                "the actual quantity of {record_id} would become negative ({actual} + {change})"
            )));
        }
        if produce {
            set_actual::<ProductionOutput>(tx, ctx, res, &record, new_actual)?;
        } else {
            set_actual::<BomLine>(tx, ctx, res, &record, new_actual)?;
        }
    }
    Ok(())
}

/// A production row's quantity in the unit of the declaration or line it counts toward
/// (`unit`): as entered when it was entered in that unit; else (a tracked item's row, posted
/// per lot or serial in the item's base unit) its base quantity converted back, rounded once.
fn in_record_unit(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    units: &mut Converter,
    t: &InventoryTransaction,
    unit: Option<Uuid>,
) -> ApiResult<f64> {
    match t.entered_quantity {
        Some(entered) if t.entered_unit_measure_id == unit => Ok(entered),
        _ => units
            .factor(tx, ctx, t.item_id, unit, "unitMeasureId")?
            .inverse()
            .apply(t.quantity)
            .ok_or_else(|| {
                ApiError::conflict(format!(
                    "row {} does not convert to the unit its production record counts in",
                    t.id
                ))
            }),
    }
}

/// A ledger row of the production trace as an entry, its quantity in the unit of its
/// declaration or line (`units`: each record's unit, by id).
fn entry_of(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    converter: &mut Converter,
    units: &HashMap<Uuid, Option<Uuid>>,
    row: &Value,
) -> ApiResult<OrderEntry> {
    let t: InventoryTransaction = read_stored(row)?;
    let kind = actual_kind_of(&t);
    let meta_id = |k: &str| {
        t.metadata
            .get(k)
            .and_then(Value::as_str)
            .and_then(|s| Uuid::parse_str(s).ok())
    };
    let record = meta_id(keys::OUTPUT).or(meta_id(keys::LINE));
    let quantity = match record.and_then(|r| units.get(&r)) {
        Some(unit) => in_record_unit(tx, ctx, converter, &t, *unit)?,
        None => t.entered_quantity.unwrap_or(t.quantity),
    };
    let quantity = actual_change(&t, kind, quantity);
    Ok(OrderEntry {
        transaction_id: t.id,
        kind: t.kind.as_str().to_string(),
        actual_kind: kind,
        item_id: t.item_id,
        quantity: if quantity == 0.0 { 0.0 } else { quantity },
        location_id: t.to_location_id.or(t.from_location_id),
        deliverable_id: t.deliverable_id,
        production_output_id: meta_id(keys::OUTPUT),
        bom_line_id: meta_id(keys::LINE),
        created_at: t.created_at,
    })
}

async fn order_entries(
    call: Call,
    id: Uuid,
    paging: Paging,
    (): (),
) -> ApiResult<Answered<api::production::OrderEntries>> {
    let Paging { page, page_size } = paging;
    let page = call
        .read(move |tx, ctx| {
            order_by_path(tx, ctx, id)?;
            let (rows, total) =
                order_postings(tx, ctx, id, page_size, (page - 1).saturating_mul(page_size))?;
            // The unit each declaration and line of the order counts in.
            let mut units = HashMap::new();
            for res in [ResourceId::ProductionOutput, ResourceId::BomLine] {
                for r in owned(tx, ctx, ctx.resource(res), "orderDeliverableId", id)? {
                    if let Some(record) = uuid_field(&r, "id") {
                        units.insert(record, uuid_field(&r, "unitMeasureId"));
                    }
                }
            }
            let mut converter = Converter::default();
            let values = rows
                .iter()
                .map(|r| entry_of(tx, ctx, &mut converter, &units, r).map(Shaped::from))
                .collect::<ApiResult<Vec<_>>>()?;
            Ok::<_, ApiError>(Page {
                values,
                total_count: total,
                next_cursor: None,
            })
        })
        .await?;
    Ok(Answered::new(page.into()))
}

/// The page and page size a read that takes only those asks for (the defaults filled in).
pub struct Paging {
    pub page: u64,
    pub page_size: u64,
}

impl ServedQuery for api::PageQuery {
    type Value = Paging;
    fn from_query(query: Option<&str>) -> ApiResult<Paging> {
        let (page, page_size) = paging(query)?;
        Ok(Paging { page, page_size })
    }
}

/// `page` and `pageSize` of a read that takes only those.
pub(crate) fn paging(query: Option<&str>) -> ApiResult<(u64, u64)> {
    let mut page = 1;
    let mut page_size = engine::DEFAULT_PAGE_SIZE;
    for (key, value) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        let parsed = |max: u64| value.parse::<u64>().ok().filter(|v| (1..=max).contains(v));
        match key.as_ref() {
            "page" => {
                page = parsed(engine::MAX_PAGE).ok_or_else(|| {
                    ApiError::field(
                        "page",
                        format!("must be a whole number from 1 to {}", engine::MAX_PAGE),
                    )
                })?
            }
            "pageSize" => {
                page_size = parsed(engine::MAX_PAGE_SIZE).ok_or_else(|| {
                    ApiError::field(
                        "pageSize",
                        format!("must be a whole number from 1 to {}", engine::MAX_PAGE_SIZE),
                    )
                })?
            }
            other => {
                return Err(ApiError::violations(vec![Violation::field(
                    other,
                    "unknown parameter (page, pageSize)",
                )]));
            }
        }
    }
    Ok((page, page_size))
}

// ----- OpenAPI -------------------------------------------------------------------------------
