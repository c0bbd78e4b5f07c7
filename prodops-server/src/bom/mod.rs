//! The BOM actions of spec 4.5: prepopulate an order's BOM, allocate materials (reservations,
//! which change `reserved` on stock rows, never `onHand`), and the demand and materials rollups.

use prodops_core::api;
use prodops_core::registry::ResourceId;
use std::collections::{BTreeMap, HashMap, HashSet};

use axum::http::StatusCode;
use prodops_core::bom_actions::{
    AllocateRequest, AllocateResult, BomSeed, DemandRow, DemandSource, MaterialsAcc,
    MaterialsRollup, PrepopulateRequest, PrepopulateResult, Reservation, SkippedLine,
    unreleased_estimate,
};
use prodops_core::inventory::{from_micros, round_quantity, to_micros};
use prodops_core::production::{
    BomLine, BomMode, BomScaling, BomSource, OutputSource, ProductionOutput,
};
use prodops_core::production_actions::{planned_for_order, remaining};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::engine::create_server_typed;
use crate::http::call::Call;
use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult, read_stored};
use crate::http::typed::Answered;
use crate::inventory::units::Converter;
use crate::plans::{
    SOURCE_LINE, SOURCE_OUTPUT, deliverable, lock_owner, order_by_path, order_quantity, owned,
    uuid_field,
};
use crate::store::Tx;
use crate::store::records::{self, Select};
use crate::store::sql::Cond;
use prodops_core::api::NoFields;

// The handlers of this family's declared actions (`prodops_core::api::bom`); the router
// serves each on its declared method and path, behind its declared access.
crate::http::action::handle! {
    api::bom::Prepopulate => prepopulate;
    api::bom::AllocateOrder => allocate_order;
    api::bom::AllocateProject => allocate_project;
    api::bom::DemandRollup => demand_rollup;
    api::bom::MaterialsRollup => materials_rollup;
}

fn all_where(tx: &mut dyn Tx, ctx: &Ctx, table: &str, conds: Vec<Cond>) -> ApiResult<Vec<Value>> {
    let select = Select {
        conds,
        sort: Vec::new(),
        limit: crate::engine::MAX_BULK_RECORDS,
        offset: 0,
    };
    Ok(records::select_values(tx, table, ctx.org(), &select)?)
}

/// The project an order belongs to: `data.projectId`, else `computed.projectId`.
fn project_of(order: &Value) -> Option<Uuid> {
    ["data", "computed"].into_iter().find_map(|k| {
        order
            .get(k)
            .and_then(|d| d.get("projectId"))
            .and_then(Value::as_str)
            .and_then(|s| Uuid::parse_str(s).ok())
    })
}

/// The root orders of a project (by `data.projectId` or `computed.projectId`).
fn project_orders(tx: &mut dyn Tx, ctx: &Ctx, project: Uuid) -> ApiResult<Vec<Value>> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for path in ["data.projectId", "computed.projectId"] {
        let found = all_where(
            tx,
            ctx,
            ResourceId::Deliverable.kind().desc().table,
            vec![
                Cond::field_equals(path, project.to_string()),
                Cond::field_equals("type", "order"),
                Cond::Archived(false),
            ],
        )?;
        for d in found {
            if uuid_field(&d, "parentId").is_none()
                && seen.insert(uuid_field(&d, "id"))
                && project_of(&d) == Some(project)
            {
                out.push(d);
            }
        }
    }
    Ok(out)
}

// ----- prepopulate ---------------------------------------------------------------------------

async fn prepopulate(
    call: Call,
    id: Uuid,
    (): (),
    req: PrepopulateRequest,
) -> ApiResult<Answered<api::bom::Prepopulate>> {
    call.write(move |tx, ctx| Ok(prepopulate_in(tx, ctx, id, &req)?.into()))
        .await
}

/// Copies of `source_key` already on the order (archived ones included, so a re-run never
/// resurrects what a user removed).
fn copied(records: &[Value], source_key: &str) -> HashSet<String> {
    records
        .iter()
        .filter_map(|r| {
            r.get("metadata")?
                .get(source_key)?
                .as_str()
                .map(str::to_string)
        })
        .collect()
}

pub fn prepopulate_in(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    order_id: Uuid,
    req: &PrepopulateRequest,
) -> ApiResult<PrepopulateResult> {
    let order = order_by_path(tx, ctx, order_id)?;
    lock_owner(tx, ctx, order_id)?;
    let quantity = order_quantity(&order);
    let route = match req.route_deliverable_id {
        None => None,
        Some(route_id) => match deliverable(tx, ctx, route_id)? {
            Some(r)
                if r.get("type").and_then(Value::as_str) == Some("route")
                    && uuid_field(&r, "parentId").is_none() =>
            {
                Some(route_id)
            }
            _ => {
                return Err(ApiError::field(
                    "routeDeliverableId",
                    format!("no root route {route_id} in this organization"),
                ));
            }
        },
    };
    let lines_table = ctx.resource(ResourceId::BomLine).table();
    let order_lines = all_where(
        tx,
        ctx,
        lines_table,
        vec![Cond::field_equals(
            "orderDeliverableId",
            order_id.to_string(),
        )],
    )?;
    let done_lines = copied(&order_lines, SOURCE_LINE);
    let project_lines = match project_of(&order) {
        Some(p) => owned(tx, ctx, ctx.resource(ResourceId::BomLine), "projectId", p)?,
        None => Vec::new(),
    };
    let (seed, sources) = if !project_lines.is_empty() {
        (BomSeed::Project, project_lines)
    } else if let Some(route_id) = route {
        (
            BomSeed::Route,
            owned(
                tx,
                ctx,
                ctx.resource(ResourceId::BomLine),
                "routeDeliverableId",
                route_id,
            )?,
        )
    } else {
        return Err(ApiError::field(
            "routeDeliverableId",
            "the order has no project BOM to seed from; pass routeDeliverableId to use a route's inputs",
        ));
    };
    let mut already = 0;
    let mut created_lines = Vec::new();
    for src in &sources {
        let src_id = src
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if done_lines.contains(&src_id) {
            already += 1;
            continue;
        }
        let line: BomLine = read_stored(src)?;
        // A copy of the source line onto the order. From a project: its total, per order, as
        // imported. From a route: its mode and scaling, with a ratio line's total for this
        // order as the quantity (an order line needs a positive quantity, spec 2.3 rule 3).
        let (mode, scaling, output_per_unit, planned, source) = match seed {
            BomSeed::Project => (
                Some(BomMode::Total),
                Some(BomScaling::PerOrder),
                None,
                line.quantity,
                BomSource::Import,
            ),
            _ => (
                line.mode,
                line.scaling,
                line.output_per_unit,
                if line.mode == Some(BomMode::Ratio) {
                    Some(planned_for_order(&line, quantity))
                } else {
                    line.quantity
                },
                BomSource::RouteTemplate,
            ),
        };
        let copy = BomLine {
            id: Uuid::now_v7(),
            organization_id: ctx.org(),
            name: line.name.clone(),
            identifier: line.identifier.clone(),
            item_id: line.item_id,
            route_deliverable_id: None,
            order_deliverable_id: Some(order_id),
            project_id: None,
            placed_on_deliverable_id: None,
            mode,
            scaling,
            output_per_unit,
            quantity: planned,
            quantity_actual: 0.0,
            unit_measure_id: line.unit_measure_id,
            po_number: line.po_number.clone(),
            sub_order_ref: line.sub_order_ref.clone(),
            source,
            sort_order: line.sort_order,
            notes: line.notes.clone(),
            metadata: Map::from_iter([(SOURCE_LINE.to_string(), json!(line.id))]),
            is_archived: false,
            archived_at: None,
            created_at: ctx.now,
            updated_at: ctx.now,
        };
        created_lines.push(read_stored(&create_server_typed(
            tx,
            ctx,
            ctx.resource(ResourceId::BomLine),
            &copy,
        )?)?);
    }
    let mut created_outputs = Vec::new();
    if let Some(route_id) = route {
        let order_outputs = all_where(
            tx,
            ctx,
            ctx.resource(ResourceId::ProductionOutput).table(),
            vec![Cond::field_equals(
                "orderDeliverableId",
                order_id.to_string(),
            )],
        )?;
        let done_outputs = copied(&order_outputs, SOURCE_OUTPUT);
        for src in owned(
            tx,
            ctx,
            ctx.resource(ResourceId::ProductionOutput),
            "routeDeliverableId",
            route_id,
        )? {
            let src_id = src
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if done_outputs.contains(&src_id) {
                already += 1;
                continue;
            }
            let decl: ProductionOutput = read_stored(&src)?;
            let copy = ProductionOutput {
                id: Uuid::now_v7(),
                organization_id: ctx.org(),
                name: decl.name.clone(),
                identifier: decl.identifier.clone(),
                item_id: decl.item_id,
                route_deliverable_id: None,
                order_deliverable_id: Some(order_id),
                produced_per_unit: decl.produced_per_unit,
                quantity: decl
                    .produced_per_unit
                    .map(|per_unit| round_quantity(per_unit * quantity)),
                quantity_actual: 0.0,
                location_id: decl.location_id,
                unit_measure_id: decl.unit_measure_id,
                source: OutputSource::RouteTemplate,
                sort_order: decl.sort_order,
                notes: decl.notes.clone(),
                metadata: Map::from_iter([(SOURCE_OUTPUT.to_string(), json!(decl.id))]),
                is_archived: false,
                archived_at: None,
                created_at: ctx.now,
                updated_at: ctx.now,
            };
            created_outputs.push(read_stored(&create_server_typed(
                tx,
                ctx,
                ctx.resource(ResourceId::ProductionOutput),
                &copy,
            )?)?);
        }
    }
    Ok(PrepopulateResult {
        seeded_from: seed,
        created_bom_lines: created_lines,
        created_outputs,
        already_present: already,
    })
}

/// Reserves what each line still needs (`need(line)`), replacing earlier reservations.
fn allocate_lines(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    lines: Vec<Value>,
    item_ids: Option<&[Uuid]>,
    need: impl Fn(&BomLine) -> f64,
) -> ApiResult<AllocateResult> {
    let mut reservations = Vec::new();
    let mut skipped = Vec::new();
    let mut units = Converter::default();
    for l in &lines {
        let line: BomLine = read_stored(l)?;
        if item_ids.is_some_and(|ids| !ids.contains(&line.item_id)) {
            continue;
        }
        // What the line needs, in its unit, reserved in the item's base unit.
        let quantity = need(&line);
        let quantity = units.to_base(tx, ctx, line.item_id, line.unit_measure_id, quantity)?;
        let location =
            match crate::inventory::reservations::reservation_location(tx, ctx, line.item_id)? {
                Some(location) => location,
                None if quantity > 0.0 => {
                    skipped.push(SkippedLine {
                        bom_line_id: line.id,
                        item_id: line.item_id,
                        reason: "the item has no default location and no stock anywhere".into(),
                    });
                    continue;
                }
                None => Uuid::nil(),
            };
        crate::inventory::reservations::reserve(
            tx,
            ctx,
            line.id,
            line.item_id,
            location,
            to_micros(quantity),
        )?;
        if quantity > 0.0 {
            reservations.push(Reservation {
                bom_line_id: line.id,
                item_id: line.item_id,
                location_id: location,
                quantity,
            });
        } else {
            skipped.push(SkippedLine {
                bom_line_id: line.id,
                item_id: line.item_id,
                reason: "nothing left to reserve: the line's planned quantity is consumed".into(),
            });
        }
    }
    Ok(AllocateResult {
        reservations,
        skipped,
    })
}

async fn allocate_order(
    call: Call,
    id: Uuid,
    (): (),
    req: AllocateRequest,
) -> ApiResult<Answered<api::bom::AllocateOrder>> {
    call.write(move |tx, ctx| {
        let order = order_by_path(tx, ctx, id)?;
        lock_owner(tx, ctx, id)?;
        let quantity = order_quantity(&order);
        let lines = owned(
            tx,
            ctx,
            ctx.resource(ResourceId::BomLine),
            "orderDeliverableId",
            id,
        )?;
        let result = allocate_lines(tx, ctx, lines, req.item_ids.as_deref(), |l| {
            remaining(planned_for_order(l, quantity), l.quantity_actual)
        })?;
        Ok(result.into())
    })
    .await
}

async fn allocate_project(
    call: Call,
    id: Uuid,
    (): (),
    NoFields {}: NoFields,
) -> ApiResult<Answered<api::bom::AllocateProject>> {
    call.write(move |tx, ctx| {
        if records::get(tx, ResourceId::Project.kind().desc().table, ctx.org(), id)?.is_none() {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "NOT_FOUND",
                format!("no project {id}"),
            ));
        }
        lock_owner(tx, ctx, id)?;
        let lines = owned(tx, ctx, ctx.resource(ResourceId::BomLine), "projectId", id)?;
        let result = allocate_lines(tx, ctx, lines, None, |l| {
            remaining(l.quantity.unwrap_or(0.0), l.quantity_actual)
        })?;
        Ok(result.into())
    })
    .await
}

// ----- rollups -------------------------------------------------------------------------------

fn item_names(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    ids: impl Iterator<Item = Uuid>,
) -> ApiResult<HashMap<Uuid, String>> {
    let mut names = HashMap::new();
    for id in ids {
        if let std::collections::hash_map::Entry::Vacant(e) = names.entry(id) {
            let name = records::get(tx, ResourceId::Item.kind().desc().table, ctx.org(), id)?
                .and_then(|i| i.get("name").and_then(Value::as_str).map(str::to_string))
                .unwrap_or_default();
            e.insert(name);
        }
    }
    Ok(names)
}

fn is_open_order(order: &Value) -> bool {
    !order
        .get("isArchived")
        .and_then(Value::as_bool)
        .unwrap_or(false)
        && order
            .get("progress")
            .and_then(|p| p.get("status"))
            .and_then(Value::as_str)
            != Some("done")
}

async fn demand_rollup(
    call: Call,
    (): (),
    (): (),
    (): (),
) -> ApiResult<Answered<api::bom::DemandRollup>> {
    let rows = call.read(move |tx, ctx| demand_in(tx, ctx)).await?;
    Ok(Answered::new(rows))
}

pub fn demand_in(tx: &mut dyn Tx, ctx: &Ctx) -> ApiResult<Vec<DemandRow>> {
    let lines = all_where(
        tx,
        ctx,
        ctx.resource(ResourceId::BomLine).table(),
        vec![Cond::Archived(false)],
    )?;
    let mut orders: HashMap<Uuid, Option<Value>> = HashMap::new();
    let mut by_item: BTreeMap<Uuid, (f64, f64, Vec<DemandSource>)> = BTreeMap::new();
    // Per project and item: (estimate, first line); planned on the project's orders per item.
    let mut estimates: BTreeMap<(Uuid, Uuid), (f64, Uuid)> = BTreeMap::new();
    let mut planned_on_orders: HashMap<(Uuid, Uuid), f64> = HashMap::new();
    // Lines count in their units; demand is in each item's base unit.
    let mut units = Converter::default();
    for l in &lines {
        let line: BomLine = read_stored(l)?;
        let mut base =
            |tx: &mut dyn Tx, q: f64| units.to_base(tx, ctx, line.item_id, line.unit_measure_id, q);
        if let Some(project) = line.project_id {
            let left = base(
                tx,
                remaining(line.quantity.unwrap_or(0.0), line.quantity_actual),
            )?;
            let e = estimates
                .entry((project, line.item_id))
                .or_insert((0.0, line.id));
            e.0 += left;
            continue;
        }
        let Some(order_id) = line.order_deliverable_id else {
            continue;
        };
        if let std::collections::hash_map::Entry::Vacant(e) = orders.entry(order_id) {
            e.insert(deliverable(tx, ctx, order_id)?);
        }
        let Some(order) = orders.get(&order_id).cloned().flatten() else {
            continue;
        };
        let planned = planned_for_order(&line, order_quantity(&order));
        if let Some(project) = project_of(&order) {
            *planned_on_orders
                .entry((project, line.item_id))
                .or_default() += base(tx, planned)?;
        }
        if !is_open_order(&order) {
            continue;
        }
        let left = base(tx, remaining(planned, line.quantity_actual))?;
        if left > 0.0 {
            let e = by_item.entry(line.item_id).or_default();
            e.0 += left;
            e.2.push(DemandSource {
                kind: "order".into(),
                owner_id: order_id,
                bom_line_id: line.id,
                quantity: left,
            });
        }
    }
    for ((project, item), (estimate, line_id)) in estimates {
        let left = unreleased_estimate(
            estimate,
            planned_on_orders
                .get(&(project, item))
                .copied()
                .unwrap_or(0.0),
        );
        if left > 0.0 {
            let e = by_item.entry(item).or_default();
            e.1 += left;
            e.2.push(DemandSource {
                kind: "project".into(),
                owner_id: project,
                bom_line_id: line_id,
                quantity: left,
            });
        }
    }
    let stock = crate::inventory::reservations::totals_by_item(tx, ctx.org())?;
    let names = item_names(tx, ctx, by_item.keys().copied())?;
    let mut rows: Vec<DemandRow> = by_item
        .into_iter()
        .map(|(item, (orders, projects, sources))| {
            let (on_hand, reserved) = stock.get(&item).copied().unwrap_or((0, 0));
            let demand = round_quantity(orders + projects);
            DemandRow {
                item_id: item,
                item_name: names.get(&item).cloned().unwrap_or_default(),
                demand,
                from_orders: round_quantity(orders),
                from_projects: round_quantity(projects),
                on_hand: from_micros(on_hand),
                reserved: from_micros(reserved),
                shortage: round_quantity((demand - from_micros(on_hand)).max(0.0)),
                sources,
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.shortage
            .total_cmp(&a.shortage)
            .then_with(|| a.item_name.cmp(&b.item_name))
            .then_with(|| a.item_id.cmp(&b.item_id))
    });
    Ok(rows)
}

async fn materials_rollup(
    call: Call,
    id: Uuid,
    (): (),
    (): (),
) -> ApiResult<Answered<api::bom::MaterialsRollup>> {
    let rollup = call.read(move |tx, ctx| materials_in(tx, ctx, id)).await?;
    Ok(Answered::new(rollup.into()))
}

pub fn materials_in(tx: &mut dyn Tx, ctx: &Ctx, project: Uuid) -> ApiResult<MaterialsRollup> {
    if records::get(
        tx,
        ResourceId::Project.kind().desc().table,
        ctx.org(),
        project,
    )?
    .is_none()
    {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            format!("no project {project}"),
        ));
    }
    let mut acc = MaterialsAcc::default();
    let mut items = Vec::new();
    for l in owned(
        tx,
        ctx,
        ctx.resource(ResourceId::BomLine),
        "projectId",
        project,
    )? {
        let line: BomLine = read_stored(&l)?;
        items.push(line.item_id);
        acc.add_estimate(&line);
    }
    let orders = project_orders(tx, ctx, project)?;
    let mut order_ids = Vec::new();
    for order in &orders {
        let Some(order_id) = uuid_field(order, "id") else {
            continue;
        };
        order_ids.push(order_id);
        let quantity = order_quantity(order);
        for l in owned(
            tx,
            ctx,
            ctx.resource(ResourceId::BomLine),
            "orderDeliverableId",
            order_id,
        )? {
            let line: BomLine = read_stored(&l)?;
            items.push(line.item_id);
            acc.add_order_line(&line, planned_for_order(&line, quantity));
        }
    }
    let names = item_names(tx, ctx, items.into_iter())?;
    let (rows, totals) = acc.finish(|id| names.get(&id).cloned().unwrap_or_default());
    Ok(MaterialsRollup {
        project_id: project,
        order_ids,
        items: rows,
        totals,
    })
}
