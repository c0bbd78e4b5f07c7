//! Deliveries (spec 2.10, 3.2, 4.8): outbound create with the paired deliverable group, the
//! lifecycle actions, receiving into the ledger (receipts accumulate; close-short), shipping on completion, planned times,
//! archive and restore, itinerary and cargo plan, permanent DELETE with its cascade.
//!
//! The paired deliverable group is a root deliverable of type `order` named after the delivery,
//! with `data.deliveryId`, `data.cargoDeliverableIds` and `data.deliveryStatus`, and a `schedule`
//! equal to the delivery's planned times (docs/deliveries.md).

use prodops_core::api;
use prodops_core::registry::ResourceId;
use std::sync::Arc;

use prodops_core::deliverable::{Computed, Deliverable, DeliverableType, Schedule};
use prodops_core::delivery::{
    CargoFacts, CargoSpan, Delivery, DeliveryAction, DeliveryDirection, DeliveryStatus, GroupData,
    Leg, LifecycleRequest, LineQuantities, ManifestLine, OutboundCreate, OutboundPatch,
    ReceiveRequest, Stop, can_archive, cargo_violations, is_partial, next_status,
    planned_violation, span_status,
};
use prodops_core::manifest as manifest_rules;
use prodops_core::receiving::{self, ManifestState, OVER_RECEIPT_TOLERANCE};
use prodops_core::shipping::{ShipLine, completion_postings};
use rand::RngCore;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::engine::hooks::{DeleteAction, Hooks};
use crate::engine::{
    self, Resources, ServedResource, apply_typed_change, create_server_typed, parse_id, record_body,
};
use crate::http::app::AppState;
use crate::http::call::Call;
use crate::http::context::{Auth, Ctx};
use crate::http::error::{ApiError, ApiResult, read_stored};
use crate::http::typed::{Answered, Served, Shaped};
use crate::store::Tx;
use crate::store::records::{self, Select};
use crate::store::sql::{Cond, FieldPath, Sort};
use prodops_core::api::Endpoint;

pub(crate) mod lots;

pub const COMPONENT_CARGO_FLAG: &str = "deliveryComponentCargoEnabled";

// The handlers of this family's declared actions (`prodops_core::api::delivery`); the router
// serves each on its declared method and path, behind its declared access.
crate::http::action::handle! {
    api::delivery::CreateOutbound => create_outbound;
    api::delivery::PatchOutbound => patch_outbound;
    api::delivery::Start => start;
    api::delivery::Complete => complete;
    api::delivery::Cancel => cancel;
    api::delivery::Receive => receive;
    api::delivery::CloseShort => close_short;
    api::delivery::Archive => archive;
    api::delivery::Restore => restore;
    api::delivery::Itinerary => itinerary;
    api::delivery::CargoPlan => cargo_plan;
}

fn of_delivery(id: Uuid) -> Cond {
    Cond::Field {
        path: FieldPath::parse("deliveryId").expect("static path"),
        values: vec![id.to_string()],
    }
}

/// The related records of a delivery in one resource, by `sequence` where it has one.
fn related(
    tx: &mut dyn Tx,
    org: Uuid,
    res: &ServedResource,
    delivery: Uuid,
) -> ApiResult<Vec<Value>> {
    let sort = if res.fields.contains("sequence") {
        vec![Sort {
            path: FieldPath::parse("sequence").expect("static path"),
            descending: false,
            as_of: None,
        }]
    } else {
        Vec::new()
    };
    Ok(records::select_values(
        tx,
        res.table(),
        org,
        &Select {
            conds: vec![of_delivery(delivery)],
            sort,
            limit: engine::MAX_BULK_RECORDS,
            offset: 0,
        },
    )?)
}

fn load(
    tx: &mut dyn Tx,
    resources: &Resources,
    org: Uuid,
    id: Uuid,
) -> ApiResult<(Arc<ServedResource>, Value, Delivery)> {
    let res = resources.get(ResourceId::Delivery).clone();
    let old = records::get(tx, res.table(), org, id)?.ok_or_else(ApiError::not_found)?;
    let d = read_stored(&old)?;
    Ok((res, old, d))
}

fn public_token() -> String {
    let mut bytes = [0u8; 24];
    rand::rng().fill_bytes(&mut bytes);
    format!("pub_{}", hex::encode(bytes))
}

// ----- outbound create and planned times --------------------------------------------------------

async fn create_outbound(
    call: Call,
    (): (),
    (): (),
    req: OutboundCreate,
) -> ApiResult<Answered<api::delivery::CreateOutbound>> {
    let v = req.validate();
    if !v.is_empty() {
        return Err(ApiError::violations(v));
    }
    let component_cargo = call.flag(COMPONENT_CARGO_FLAG);
    let st = call.state.clone();
    call.write(move |tx, ctx| {
        let org = ctx.org();
        // Cargo eligibility, checked under a lock so two deliveries cannot take one deliverable.
        crate::store::lock_scope(tx, &format!("delivery-cargo:{org}"))?;
        let deliverables = ctx.resource(ResourceId::Deliverable);
        let spans = ctx.resource(ResourceId::DeliveryCargoSpan);
        let mut facts = Vec::new();
        let mut quantities = Vec::new();
        for id in &req.item_ids {
            let d = records::get(tx, deliverables.table(), org, *id)?;
            let busy = records::select_values(
                tx,
                spans.table(),
                org,
                &Select {
                    conds: vec![
                        Cond::Field {
                            path: FieldPath::parse("deliverableId").expect("static path"),
                            values: vec![id.to_string()],
                        },
                        Cond::Field {
                            path: FieldPath::parse("status").expect("static path"),
                            values: vec!["planned".into(), "loaded".into()],
                        },
                    ],
                    limit: 1,
                    ..Default::default()
                },
            )?;
            quantities.push(
                d.as_ref()
                    .and_then(|d| d.get("quantity"))
                    .and_then(Value::as_i64)
                    .unwrap_or(1),
            );
            facts.push((
                *id,
                CargoFacts {
                    kind: d
                        .as_ref()
                        .and_then(|d| d.get("type"))
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    archived: d
                        .as_ref()
                        .and_then(|d| d.get("isArchived"))
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                    on_open_delivery: !busy.is_empty(),
                },
            ));
        }
        let v = cargo_violations(&facts, component_cargo);
        if !v.is_empty() {
            return Err(ApiError::violations(v));
        }
        let direction = req.direction.unwrap_or(DeliveryDirection::Outbound);
        let delivery_id = Uuid::now_v7();
        // The paired deliverable group: a root order; its identifier, root and computed facts
        // are the deliverable hooks' to fill, as for any new deliverable.
        let group = Deliverable {
            id: Uuid::now_v7(),
            organization_id: org,
            identifier: String::new(),
            name: format!("Delivery: {}", req.name.trim()),
            kind: DeliverableType::Order,
            quantity: 1,
            parent_id: None,
            root_parent_id: None,
            origin_template_id: None,
            cycle_time_sec: 0,
            duration_sec: 0,
            people_num: 1,
            data: record_body(&GroupData {
                delivery_id: Some(delivery_id),
                cargo_deliverable_ids: Some(req.item_ids.clone()),
                delivery_status: Some(DeliveryStatus::Scheduled),
            })?,
            cost_code: None,
            schedule: group_schedule(req.planned_start_at, req.planned_end_at),
            progress: None,
            computed: Computed::default(),
            is_archived: false,
            created_at: ctx.now,
            updated_at: ctx.now,
        };
        create_server_typed(tx, ctx, deliverables, &group)?;
        let delivery = Delivery {
            id: delivery_id,
            organization_id: ctx.org(),
            name: req.name.clone(),
            identifier: req.identifier.clone().unwrap_or_default(),
            po_number: req.po_number.clone(),
            direction,
            status: DeliveryStatus::Scheduled,
            item_ids: req.item_ids.clone(),
            worker_ids: req.worker_ids.clone(),
            driver_contact_id: req.driver_contact_id,
            receiver_contact_id: req.receiver_contact_id,
            planned_start_at: req.planned_start_at,
            planned_end_at: req.planned_end_at,
            public_token: Some(public_token()),
            deliverable_group_id: Some(group.id),
            truck_name: req.truck_name.clone(),
            source_location_id: req.source_location_id,
            destination_location_id: req.destination_location_id,
            source_address: req.source_address.clone(),
            destination_address: req.destination_address.clone(),
            cargo_count: req.item_ids.len() as i64,
            is_late: false,
            last_reason: None,
            partial: None,
            is_archived: false,
            archived_at: None,
            created_at: ctx.now,
            updated_at: ctx.now,
        };
        let res = ctx.resource(ResourceId::Delivery);
        let mut record = create_server_typed(tx, ctx, res, &delivery)?;
        // Itinerary: pickup at the source, drop-off at the destination, one leg; a span per cargo.
        let stops = ctx.resource(ResourceId::DeliveryStop);
        let mut stop_ids = Vec::new();
        for (seq, kind, loc, addr, at) in [
            (
                1,
                "pickup",
                req.source_location_id,
                &req.source_address,
                req.planned_start_at,
            ),
            (
                2,
                "dropoff",
                req.destination_location_id,
                &req.destination_address,
                req.planned_end_at,
            ),
        ] {
            let stop = Stop {
                id: Uuid::now_v7(),
                organization_id: ctx.org(),
                delivery_id,
                sequence: seq,
                kind: kind.to_string(),
                location_id: loc,
                address: addr.clone(),
                planned_at: at,
                actual_at: None,
                created_at: ctx.now,
                updated_at: ctx.now,
            };
            create_server_typed(tx, ctx, stops, &stop)?;
            stop_ids.push(stop.id);
        }
        let leg = Leg {
            id: Uuid::now_v7(),
            organization_id: ctx.org(),
            delivery_id,
            sequence: 1,
            from_stop_id: stop_ids[0],
            to_stop_id: stop_ids[1],
            planned_start_at: req.planned_start_at,
            planned_end_at: req.planned_end_at,
            started_at: None,
            completed_at: None,
            created_at: ctx.now,
            updated_at: ctx.now,
        };
        create_server_typed(tx, ctx, ctx.resource(ResourceId::DeliveryLeg), &leg)?;
        for (id, quantity) in req.item_ids.iter().zip(quantities) {
            let span = CargoSpan {
                id: Uuid::now_v7(),
                organization_id: ctx.org(),
                delivery_id,
                deliverable_id: *id,
                quantity,
                from_stop_id: stop_ids[0],
                to_stop_id: stop_ids[1],
                status: "planned".to_string(),
                created_at: ctx.now,
                updated_at: ctx.now,
            };
            create_server_typed(tx, ctx, spans, &span)?;
        }
        present(&st, tx, org, &mut record)?;
        Ok(Shaped::record(record))
    })
    .await
}

/// The paired group's schedule: the delivery's planned times, when it has both.
fn group_schedule(
    start: Option<chrono::DateTime<chrono::Utc>>,
    end: Option<chrono::DateTime<chrono::Utc>>,
) -> Option<Schedule> {
    match (start, end) {
        (Some(start_date), Some(end_date)) => Some(Schedule {
            start_date,
            end_date,
        }),
        _ => None,
    }
}

/// Rewrites the paired group after a change of the delivery: schedule and status.
fn sync_group(tx: &mut dyn Tx, ctx: &Ctx, delivery: &Delivery) -> ApiResult<()> {
    let Some(group_id) = delivery.deliverable_group_id else {
        return Ok(());
    };
    let deliverables = ctx.resource(ResourceId::Deliverable);
    // The group is not removed with the delivery, but a user may have removed it.
    let Some(old) = records::get(tx, deliverables.table(), ctx.org(), group_id)? else {
        return Ok(());
    };
    let before: Deliverable = read_stored(&old)?;
    let after = synced_group(&before, delivery)?;
    apply_typed_change(tx, ctx, deliverables, &old, &before, &after)?;
    Ok(())
}

/// The paired group as `delivery` has it: its `data.deliveryStatus` (the other `data` keys
/// kept) and its schedule.
fn synced_group(group: &Deliverable, delivery: &Delivery) -> ApiResult<Deliverable> {
    let mut after = group.clone();
    after.data.extend(record_body(&GroupData {
        delivery_status: Some(delivery.status),
        ..GroupData::default()
    })?);
    after.schedule = group_schedule(delivery.planned_start_at, delivery.planned_end_at);
    Ok(after)
}

async fn patch_outbound(
    call: Call,
    id: Uuid,
    (): (),
    req: OutboundPatch,
) -> ApiResult<Answered<api::delivery::PatchOutbound>> {
    let st = call.state.clone();
    call.write(move |tx, ctx| {
        let (res, old, d) = load(tx, ctx.resources(), ctx.org(), id)?;
        if d.direction == DeliveryDirection::Inbound {
            return Err(ApiError::field(
                "direction",
                "planned times belong to outbound and transfer deliveries",
            ));
        }
        let start = req.planned_start_at.or(d.planned_start_at);
        let end = req.planned_end_at.or(d.planned_end_at);
        if let Some(v) = planned_violation(start, end) {
            return Err(ApiError::violations(vec![v]));
        }
        let planned = Delivery {
            planned_start_at: start,
            planned_end_at: end,
            ..d.clone()
        };
        let mut record = apply_typed_change(tx, ctx, &res, &old, &d, &planned)?;
        let updated: Delivery = read_stored(&record)?;
        sync_group(tx, ctx, &updated)?;
        let legs = ctx.resource(ResourceId::DeliveryLeg);
        for stored in related(tx, ctx.org(), legs, id)? {
            let leg: Leg = read_stored(&stored)?;
            let after = Leg {
                planned_start_at: start,
                planned_end_at: end,
                ..leg.clone()
            };
            apply_typed_change(tx, ctx, legs, &stored, &leg, &after)?;
        }
        present(&st, tx, ctx.org(), &mut record)?;
        Ok(Shaped::record(record))
    })
    .await
}

// ----- lifecycle ---------------------------------------------------------------------------------

/// Moves a delivery by `action`, keeping spans, legs and the paired group in step; runs `extra`
/// (ledger postings) in the same transaction.
/// An archived delivery takes no lifecycle action until restored: a conflict with the
/// record's state (409), whatever the request says.
fn archived_delivery() -> ApiError {
    ApiError::conflicts(vec![prodops_core::Violation::field(
        "isArchived",
        "an archived delivery cannot change; restore it first",
    )])
}

fn transition(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    id: Uuid,
    action: DeliveryAction,
    reason: Option<String>,
) -> ApiResult<(Value, Delivery, Delivery)> {
    let (res, old, d) = load(tx, ctx.resources(), ctx.org(), id)?;
    if d.is_archived {
        return Err(archived_delivery());
    }
    let next =
        next_status(d.direction, d.status, action).map_err(|v| ApiError::violations(vec![v]))?;
    let moved = Delivery {
        status: next,
        // A reason given replaces the last one; without one, the last stays.
        last_reason: reason.or_else(|| d.last_reason.clone()),
        ..d.clone()
    };
    let record = apply_typed_change(tx, ctx, &res, &old, &d, &moved)?;
    let updated: Delivery = read_stored(&record)?;
    let spans = ctx.resource(ResourceId::DeliveryCargoSpan);
    for stored in related(tx, ctx.org(), spans, id)? {
        let span: CargoSpan = read_stored(&stored)?;
        let after = CargoSpan {
            status: span_status(next).to_string(),
            ..span.clone()
        };
        apply_typed_change(tx, ctx, spans, &stored, &span, &after)?;
    }
    let legs = ctx.resource(ResourceId::DeliveryLeg);
    for stored in related(tx, ctx.org(), legs, id)? {
        let leg: Leg = read_stored(&stored)?;
        let mut after = leg.clone();
        match action {
            DeliveryAction::Start => after.started_at = Some(ctx.now),
            DeliveryAction::Complete | DeliveryAction::Receive => {
                after.completed_at = Some(ctx.now)
            }
            DeliveryAction::Cancel => {}
        }
        apply_typed_change(tx, ctx, legs, &stored, &leg, &after)?;
    }
    sync_group(tx, ctx, &updated)?;
    Ok((record, d, updated))
}

async fn lifecycle<E>(
    call: Call,
    id: Uuid,
    req: LifecycleRequest,
    action: DeliveryAction,
) -> ApiResult<Answered<E>>
where
    E: Served + Endpoint<Answer = api::Json<Delivery>>,
{
    let st = call.state.clone();
    call.write(move |tx, ctx| {
        if action == DeliveryAction::Cancel {
            lock_receiving(tx, id)?;
            let (_, _, d) = load(tx, ctx.resources(), ctx.org(), id)?;
            let lines = manifest(tx, ctx.resources(), ctx.org(), id)?;
            if let Some(v) = receiving::cancel_violation(d.direction, &quantities(&lines)) {
                return Err(ApiError::violations(vec![v]));
            }
        }
        let (mut record, _, updated) = transition(tx, ctx, id, action, req.reason.clone())?;
        if action == DeliveryAction::Complete {
            post_completion(tx, ctx, &updated)?;
        }
        present(&st, tx, ctx.org(), &mut record)?;
        Ok(Shaped::record(record))
    })
    .await
}

/// Completion's ledger rows (`prodops_core::shipping::completion_postings`): each manifest
/// line ships from its location (else the delivery's source) and, when the delivery has a
/// destination, arrives there, in the completion's transaction.
/// A line with lots ships (and arrives) lot by lot: one `ship` row per lot, and one `receipt`
/// per lot at the destination, each naming its lot (deliveries/lots.rs names a refusal by
/// `manifestLines[i].lots[j]`).
fn post_completion(tx: &mut dyn Tx, ctx: &Ctx, delivery: &Delivery) -> ApiResult<()> {
    let lines = manifest(tx, ctx.resources(), ctx.org(), delivery.id)?;
    // Each line, or each lot of a line with lots, as a part that ships on its own.
    let mut parts: Vec<(usize, Option<Uuid>, String)> = Vec::new();
    let mut ship: Vec<ShipLine> = Vec::new();
    for (i, (_, m)) in lines.iter().enumerate() {
        let mut add = |quantity: f64, lot: Option<Uuid>, origin: String| {
            ship.push(ShipLine {
                id: m.id,
                item_id: m.item_id,
                quantity,
                location_id: m.location_id,
            });
            parts.push((i, lot, origin));
        };
        if m.lots.is_empty() {
            add(m.quantity_expected, None, format!("manifestLines[{i}]"));
        }
        for (j, lot) in m.lots.iter().enumerate() {
            add(
                lot.quantity,
                Some(lot.lot_id),
                format!("manifestLines[{i}].lots[{j}]"),
            );
        }
    }
    let mut origins = Vec::new();
    let rows = completion_postings(
        delivery.source_location_id,
        delivery.destination_location_id,
        &ship,
    )
    .into_iter()
    .map(|p| {
        let (line, lot, origin) = &parts[p.line];
        origins.push(origin.clone());
        let mut row = lots::posting(
            ctx,
            delivery.id,
            &lines[*line].1,
            p.kind,
            p.quantity,
            (p.from_location_id, p.to_location_id),
        )?;
        row.lot_id = *lot;
        Ok(row)
    })
    .collect::<ApiResult<Vec<_>>>()?;
    lots::post_named(tx, ctx, &rows, &origins)
}

macro_rules! lifecycle_handler {
    ($name:ident, $endpoint:ty, $action:expr) => {
        async fn $name(
            call: Call,
            id: Uuid,
            (): (),
            req: LifecycleRequest,
        ) -> ApiResult<Answered<$endpoint>> {
            lifecycle(call, id, req, $action).await
        }
    };
}

lifecycle_handler!(start, api::delivery::Start, DeliveryAction::Start);
lifecycle_handler!(complete, api::delivery::Complete, DeliveryAction::Complete);
lifecycle_handler!(cancel, api::delivery::Cancel, DeliveryAction::Cancel);

/// The manifest lines of a delivery, stored and typed, in the store's order.
fn manifest(
    tx: &mut dyn Tx,
    resources: &Resources,
    org: Uuid,
    id: Uuid,
) -> ApiResult<Vec<(Value, ManifestLine)>> {
    related(tx, org, resources.get(ResourceId::DeliveryManifestLine), id)?
        .into_iter()
        .map(|v| {
            let m: ManifestLine = read_stored(&v)?;
            Ok((v, m))
        })
        .collect()
}

fn quantities(lines: &[(Value, ManifestLine)]) -> Vec<LineQuantities> {
    lines
        .iter()
        .map(|(_, m)| LineQuantities {
            expected: m.quantity_expected,
            received: m.quantity_received,
        })
        .collect()
}

/// Serializes the receiving actions of one delivery (receive, close-short, cancel): each reads
/// the manifest's quantities, then writes from them.
fn lock_receiving(tx: &mut dyn Tx, id: Uuid) -> ApiResult<()> {
    crate::store::lock_scope(tx, &format!("delivery-receiving:{id}"))?;
    Ok(())
}

/// `POST /delivery/{id}/receive`: receipts accumulate (`prodops_core::receiving`). One
/// transaction: the `receipt` rows, each line's `quantityReceived`, and `received` once
/// everything is in; a refused line refuses the whole receive.
async fn receive(
    call: Call,
    id: Uuid,
    (): (),
    req: ReceiveRequest,
) -> ApiResult<Answered<api::delivery::Receive>> {
    let st = call.state.clone();
    call.write(move |tx, ctx| {
        let org = ctx.org();
        lock_receiving(tx, id)?;
        let (_, _, d) = load(tx, ctx.resources(), org, id)?;
        if d.is_archived {
            return Err(archived_delivery());
        }
        let lines = manifest(tx, ctx.resources(), org, id)?;
        let states: Vec<ManifestState> = lines
            .iter()
            .map(|(_, m)| ManifestState {
                id: m.id,
                expected: m.quantity_expected,
                received: m.quantity_received,
                location_id: m.location_id,
            })
            .collect();
        let (plan, next) =
            receiving::receive(d.direction, d.status, &req, &states, OVER_RECEIPT_TOLERANCE)
                .map_err(ApiError::violations)?;
        // One receipt row per line, or per received lot of a tracked item (deliveries/lots.rs).
        let (rows, origins) = lots::receipt_rows(tx, ctx, id, &req, &lines, &plan)?;
        lots::post_named(tx, ctx, &rows, &origins)?;
        let lines_res = ctx.resource(ResourceId::DeliveryManifestLine);
        for ((stored, m), received) in lines.iter().zip(&plan.received) {
            if *received != m.quantity_received {
                let after = ManifestLine {
                    quantity_received: *received,
                    ..m.clone()
                };
                apply_typed_change(tx, ctx, lines_res, stored, m, &after)?;
            }
        }
        let mut record = if next == d.status {
            load(tx, ctx.resources(), org, id)?.1
        } else {
            transition(tx, ctx, id, DeliveryAction::Receive, None)?.0
        };
        present(&st, tx, org, &mut record)?;
        Ok(Shaped::record(record))
    })
    .await
}

/// `POST /delivery/{id}/close-short`: ends receiving with what is in; each line's outstanding
/// quantity becomes its `quantityShort`, the delivery `received` (`lastReason` the reason).
async fn close_short(
    call: Call,
    id: Uuid,
    (): (),
    req: LifecycleRequest,
) -> ApiResult<Answered<api::delivery::CloseShort>> {
    let st = call.state.clone();
    call.write(move |tx, ctx| {
        let org = ctx.org();
        lock_receiving(tx, id)?;
        let (_, _, d) = load(tx, ctx.resources(), org, id)?;
        let lines = manifest(tx, ctx.resources(), org, id)?;
        // Only a delivery still receiving passes, and an archived one is final: refused here.
        let closed = receiving::close_short(d.direction, d.status, &quantities(&lines))
            .map_err(|v| ApiError::violations(vec![v]))?;
        let lines_res = ctx.resource(ResourceId::DeliveryManifestLine);
        for ((stored, m), short) in lines.iter().zip(&closed.shortfalls) {
            if *short != m.quantity_short {
                let after = ManifestLine {
                    quantity_short: *short,
                    ..m.clone()
                };
                apply_typed_change(tx, ctx, lines_res, stored, m, &after)?;
            }
        }
        let (mut record, _, _) =
            transition(tx, ctx, id, DeliveryAction::Receive, req.reason.clone())?;
        present(&st, tx, org, &mut record)?;
        Ok(Shaped::record(record))
    })
    .await
}

// ----- archive and restore -----------------------------------------------------------------------

async fn set_archived<E>(call: Call, id: Uuid, archived: bool) -> ApiResult<Answered<E>>
where
    E: Served + Endpoint<Answer = api::Json<Delivery>>,
{
    let st = call.state.clone();
    call.write(move |tx, ctx| {
        let (res, old, d) = load(tx, ctx.resources(), ctx.org(), id)?;
        if archived && !can_archive(d.status) {
            return Err(ApiError::field(
                "status",
                format!("only a received, delivered or cancelled delivery can be archived; this one is {}", d.status.as_str()),
            ));
        }
        let after = Delivery {
            is_archived: archived,
            ..d.clone()
        };
        let mut record = apply_typed_change(tx, ctx, &res, &old, &d, &after)?;
        present(&st, tx, ctx.org(), &mut record)?;
        Ok(Shaped::record(record))
    })
    .await
}

async fn archive(
    call: Call,
    id: Uuid,
    (): (),
    (): (),
) -> ApiResult<Answered<api::delivery::Archive>> {
    set_archived(call, id, true).await
}

async fn restore(
    call: Call,
    id: Uuid,
    (): (),
    (): (),
) -> ApiResult<Answered<api::delivery::Restore>> {
    set_archived(call, id, false).await
}

// ----- reads -------------------------------------------------------------------------------------

async fn itinerary(
    call: Call,
    id: Uuid,
    (): (),
    (): (),
) -> ApiResult<Answered<api::delivery::Itinerary>> {
    let org = call.org();
    let table = call.state.resources.clone();
    let body = call
        .state
        .store
        .read(move |tx| {
            let resources = Resources::of(&table);
            load(tx, resources, org, id)?;
            let stops = related(tx, org, resources.get(ResourceId::DeliveryStop), id)?;
            let legs = related(tx, org, resources.get(ResourceId::DeliveryLeg), id)?;
            Ok::<_, ApiError>(json!({"deliveryId": id, "stops": stops, "legs": legs}))
        })
        .await?;
    Ok(Answered::new(body))
}

async fn cargo_plan(
    call: Call,
    id: Uuid,
    (): (),
    (): (),
) -> ApiResult<Answered<api::delivery::CargoPlan>> {
    let org = call.org();
    let table = call.state.resources.clone();
    let body = call
        .state
        .store
        .read(move |tx| {
            let resources = Resources::of(&table);
            load(tx, resources, org, id)?;
            let spans = related(tx, org, resources.get(ResourceId::DeliveryCargoSpan), id)?;
            Ok::<_, ApiError>(json!({"deliveryId": id, "cargoCount": spans.len(), "spans": spans}))
        })
        .await?;
    Ok(Answered::new(body))
}

/// Adds the derived `partial` to a delivery answer, and its `isLate` as of the moment of the
/// answer (`prodops_core::alerts::delivery_is_late`, on the state's clock).
fn present(state: &AppState, tx: &mut dyn Tx, org: Uuid, record: &mut Value) -> ApiResult<()> {
    let is_late = prodops_core::alerts::delivery_is_late(
        record.get("status").and_then(Value::as_str).unwrap_or(""),
        record.get("plannedEndAt").and_then(Value::as_str),
        &state.clock.as_of(),
    );
    record["isLate"] = json!(is_late);
    let d: Delivery = read_stored(record)?;
    let lines = quantities(&manifest(tx, Resources::of(&state.resources), org, d.id)?);
    let deliverables = ResourceId::Deliverable.kind().desc();
    let mut done = Vec::new();
    if d.direction != DeliveryDirection::Inbound {
        for item in &d.item_ids {
            let status = records::get(tx, deliverables.table, org, *item)?.and_then(|v| {
                v.pointer("/progress/status")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            });
            done.push(status.as_deref() == Some("done"));
        }
    }
    record["partial"] = json!(is_partial(d.direction, d.status, &lines, &done));
    Ok(())
}

/// Deliveries: `partial` on every answer; DELETE removes manifest lines, stops, legs and cargo
/// spans (never the paired group).
pub struct DeliveryHooks;

impl Hooks for DeliveryHooks {
    fn presents(&self) -> bool {
        true
    }

    fn present(
        &self,
        state: &AppState,
        tx: &mut dyn Tx,
        auth: &Auth,
        record: &mut Value,
    ) -> ApiResult<()> {
        present(state, tx, auth.org, record)
    }

    fn before_delete(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        record: &Value,
    ) -> ApiResult<DeleteAction> {
        let id = parse_id(record.get("id").and_then(Value::as_str).unwrap_or(""))?;
        for related_id in [
            ResourceId::DeliveryManifestLine,
            ResourceId::DeliveryStop,
            ResourceId::DeliveryLeg,
            ResourceId::DeliveryCargoSpan,
        ] {
            let res = ctx.resource(related_id);
            for r in related(tx, ctx.org(), res, id)? {
                if let Some(rid) = r
                    .get("id")
                    .and_then(Value::as_str)
                    .and_then(|s| Uuid::parse_str(s).ok())
                    && records::delete(tx, res.table(), ctx.org(), rid)?
                {
                    engine::events::deleted(ctx, res, &r);
                }
            }
        }
        Ok(DeleteAction::Proceed)
    }
}

/// Manifest lines: the delivery must exist in the organization, and the manifest rules of
/// `prodops_core::manifest` hold: a line with postings keeps its item, location and unit and is
/// not deleted; a delivery in a final status takes no new lines and its lines stay as they are
/// (409 naming the field and the line). Each check runs under the delivery's receiving lock,
/// against the delivery and line as stored, so a receive cannot slip between check and write.
pub struct ManifestHooks;

/// The delivery of a manifest line, read under its receiving lock; 400 naming `deliveryId` when
/// the organization has no such delivery.
fn locked_delivery(tx: &mut dyn Tx, ctx: &Ctx, line: &Value) -> ApiResult<Delivery> {
    let id = parse_id(line.get("deliveryId").and_then(Value::as_str).unwrap_or(""))?;
    lock_receiving(tx, id)?;
    let res = ctx.resource(ResourceId::Delivery);
    match records::get(tx, res.table(), ctx.org(), id)? {
        Some(d) => read_stored(&d),
        None => Err(ApiError::field("deliveryId", "no such delivery")),
    }
}

/// The quantities a line holds that only the receiving actions write, as stored now: a check
/// made against an older read of the line is refused rather than written over them.
fn unchanged_since_read(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    res: &ServedResource,
    old: &ManifestLine,
) -> ApiResult<()> {
    let stored = records::get(tx, res.table(), ctx.org(), old.id)?;
    let now: Option<ManifestLine> = stored.as_ref().map(read_stored).transpose()?;
    match now {
        Some(now)
            if now.quantity_received == old.quantity_received
                && now.quantity_short == old.quantity_short =>
        {
            Ok(())
        }
        _ => Err(ApiError::conflict(format!(
            "manifest line {} was received against while this request ran; read it again and retry",
            old.id
        ))),
    }
}

impl Hooks for ManifestHooks {
    fn check_facts(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        res: &ServedResource,
        old: Option<&Value>,
        new: &Value,
    ) -> ApiResult<()> {
        let delivery = locked_delivery(tx, ctx, new)?;
        match old {
            None => {
                if let Some(v) = manifest_rules::create_conflict(delivery.status, delivery.id) {
                    return Err(ApiError::conflicts(vec![v]));
                }
            }
            Some(old) => {
                let old: ManifestLine = read_stored(old)?;
                let new: ManifestLine = read_stored(new)?;
                unchanged_since_read(tx, ctx, res, &old)?;
                let v = manifest_rules::change_conflicts(delivery.status, &old, &new);
                if !v.is_empty() {
                    return Err(ApiError::conflicts(v));
                }
            }
        }
        // The line's quantities are in its unit; receiving and shipping convert them to the
        // item's base unit, so the unit must convert (checked when the item or unit changes).
        let line: ManifestLine = read_stored(new)?;
        let before: Option<ManifestLine> = old.map(read_stored).transpose()?;
        if line.unit_measure_id.is_some()
            && before.is_none_or(|b| {
                b.item_id != line.item_id || b.unit_measure_id != line.unit_measure_id
            })
            && let Some(item) = records::get(
                tx,
                ResourceId::Item.kind().desc().table,
                ctx.org(),
                line.item_id,
            )?
        {
            crate::inventory::units::check_convertible(
                tx,
                ctx,
                &item,
                line.unit_measure_id,
                "unitMeasureId",
            )?;
        }
        Ok(())
    }

    fn before_delete(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        res: &ServedResource,
        record: &Value,
    ) -> ApiResult<DeleteAction> {
        let delivery = locked_delivery(tx, ctx, record)?;
        let line: ManifestLine = read_stored(record)?;
        unchanged_since_read(tx, ctx, res, &line)?;
        if let Some(v) = manifest_rules::delete_conflict(delivery.status, &line) {
            return Err(ApiError::conflicts(vec![v]));
        }
        Ok(DeleteAction::Proceed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::context::Auth;
    use prodops_core::inventory::TransactionType;
    use prodops_core::resource::COMMON_READ_ONLY;
    use serde_json::Map;

    fn test_ctx() -> Ctx {
        Ctx::new(
            Arc::new(Resources::without_hooks()),
            Auth {
                key_id: Uuid::now_v7(),
                org: Uuid::now_v7(),
                admin: true,
                permissions: Default::default(),
                flags: Default::default(),
            },
            None,
        )
    }

    /// A body as a create of `resource` stores it before its hooks run (which read the same
    /// fields): the dropped fields removed, the common fields set, core's check run.
    fn as_created(
        ctx: &Ctx,
        resource: ResourceId,
        id: Uuid,
        dropped: &[&str],
        mut body: Map<String, Value>,
    ) -> Value {
        for field in COMMON_READ_ONLY.iter().chain(dropped) {
            body.remove(*field);
        }
        let mut candidate = json!({
            "id": id,
            "organizationId": ctx.org(),
            "createdAt": ctx.now_text(),
            "updatedAt": ctx.now_text(),
        });
        let fields = candidate.as_object_mut().expect("an object");
        fields.extend(body);
        resource
            .kind()
            .check(candidate, None)
            .expect("the record passes core's check")
    }

    fn object(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("an object")
    }

    /// The ledger rows built from core's type store as the JSON maps they replace did: a
    /// completion's shipment (from a location only) and a receipt (to a location only).
    #[test]
    fn ledger_rows_store_as_the_maps_did() {
        let ctx = test_ctx();
        let line: ManifestLine = serde_json::from_value(json!({
            "id": Uuid::now_v7(),
            "organizationId": ctx.org(),
            "deliveryId": Uuid::now_v7(),
            "itemId": Uuid::now_v7(),
            "quantityExpected": 5.0,
            "unitMeasureId": Uuid::now_v7(),
            "createdAt": ctx.now_text(),
            "updatedAt": ctx.now_text(),
        }))
        .unwrap();
        let (delivery, location) = (Uuid::now_v7(), Uuid::now_v7());
        let ship = lots::posting(
            &ctx,
            delivery,
            &line,
            TransactionType::Ship,
            5.0,
            (Some(location), None),
        )
        .unwrap();
        let receipt = lots::posting(
            &ctx,
            delivery,
            &line,
            TransactionType::Receipt,
            2.5,
            (None, Some(location)),
        )
        .unwrap();
        let maps = [
            (
                ship,
                json!({"type": "ship", "itemId": line.item_id, "quantity": 5.0,
                       "fromLocationId": location, "deliveryId": delivery,
                       "unitMeasureId": line.unit_measure_id,
                       "metadata": {"manifestLineId": line.id}}),
            ),
            (
                receipt,
                json!({"type": "receipt", "itemId": line.item_id, "quantity": 2.5,
                       "toLocationId": location, "deliveryId": delivery,
                       "unitMeasureId": line.unit_measure_id,
                       "metadata": {"manifestLineId": line.id}}),
            ),
        ];
        // The ledger's create is a client's: it drops the read-only fields.
        let ledger = ResourceId::InventoryTransaction;
        let dropped = ledger.kind().desc().read_only;
        for (row, map) in maps {
            let typed = record_body(&row).unwrap();
            assert_eq!(
                as_created(&ctx, ledger, row.id, dropped, typed),
                as_created(&ctx, ledger, row.id, dropped, object(map))
            );
        }
    }

    /// The paired group built from `Deliverable` stores as the map it replaces did, and a
    /// status change writes `data.deliveryStatus` and the schedule, keeping the user's keys.
    #[test]
    fn paired_group_stores_as_the_map_did_and_follows_the_delivery() {
        let ctx = test_ctx();
        let delivery: Delivery = serde_json::from_value(json!({
            "id": Uuid::now_v7(),
            "organizationId": ctx.org(),
            "name": "Truck 4",
            "direction": "outbound",
            "status": "scheduled",
            "itemIds": [Uuid::now_v7()],
            "plannedStartAt": "2026-11-25T05:00:00Z",
            "plannedEndAt": "2026-11-25T09:30:00.250Z",
            "createdAt": ctx.now_text(),
            "updatedAt": ctx.now_text(),
        }))
        .unwrap();
        let group = Deliverable {
            id: Uuid::now_v7(),
            organization_id: ctx.org(),
            identifier: String::new(),
            name: format!("Delivery: {}", delivery.name),
            kind: DeliverableType::Order,
            quantity: 1,
            parent_id: None,
            root_parent_id: None,
            origin_template_id: None,
            cycle_time_sec: 0,
            duration_sec: 0,
            people_num: 1,
            data: record_body(&GroupData {
                delivery_id: Some(delivery.id),
                cargo_deliverable_ids: Some(delivery.item_ids.clone()),
                delivery_status: Some(delivery.status),
            })
            .unwrap(),
            cost_code: None,
            schedule: group_schedule(delivery.planned_start_at, delivery.planned_end_at),
            progress: None,
            computed: Computed::default(),
            is_archived: false,
            created_at: ctx.now,
            updated_at: ctx.now,
        };
        let map = json!({
            "name": format!("Delivery: {}", delivery.name),
            "type": "order",
            "data": {"deliveryId": delivery.id, "cargoDeliverableIds": delivery.item_ids,
                     "deliveryStatus": "scheduled"},
            "schedule": {"startDate": delivery.planned_start_at, "endDate": delivery.planned_end_at},
        });
        // A server create drops only the common fields.
        let deliverable = ResourceId::Deliverable;
        assert_eq!(
            as_created(
                &ctx,
                deliverable,
                group.id,
                &[],
                record_body(&group).unwrap()
            ),
            as_created(&ctx, deliverable, group.id, &[], object(map))
        );

        let mut stored = group.clone();
        stored.data.extend(object(json!({"note": "the user's"})));
        let moved = Delivery {
            status: DeliveryStatus::InTransit,
            planned_end_at: None,
            ..delivery.clone()
        };
        let after = synced_group(&stored, &moved).unwrap();
        assert_eq!(
            Value::Object(after.data.clone()),
            json!({"deliveryId": delivery.id, "cargoDeliverableIds": delivery.item_ids,
                   "deliveryStatus": "in_transit", "note": "the user's"})
        );
        // Without both planned times the group has no schedule.
        assert_eq!(after.schedule, None);
        assert_eq!(
            Deliverable {
                data: stored.data.clone(),
                schedule: stored.schedule.clone(),
                ..after
            },
            stored,
            "nothing else changes"
        );
    }
}
