//! Deliveries (spec 2.10, 3.2, 4.8): inbound receipts and outbound or transfer shipments.
//!
//! Status moves only through the lifecycle actions ([`next_status`]); archive and restore are
//! actions too, allowed only from a final status ([`can_archive`]).

use crate::openapi::ToSchema;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::common::{require_nonempty, trim, trim_opt};
pub use crate::line_quantities::LineQuantities;
use crate::resource::{Archive, Ops, Record, ResourceDesc};
use crate::violation::Violation;

/// Which way a delivery goes; fixed at creation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryDirection {
    /// Goods coming in (generic create).
    #[default]
    Inbound,
    /// Goods going out (outbound create).
    Outbound,
    /// Goods moving between sites (outbound create).
    Transfer,
}

impl DeliveryDirection {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryDirection::Inbound => "inbound",
            DeliveryDirection::Outbound => "outbound",
            DeliveryDirection::Transfer => "transfer",
        }
    }
}

/// The stored status of a delivery (spec 3.2). `partial` is derived, never stored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryStatus {
    /// Inbound, not yet arrived; the initial inbound status.
    #[default]
    Expected,
    /// On the way.
    InTransit,
    /// Inbound, received.
    Received,
    /// Outbound or transfer, planned; the initial outbound status.
    Scheduled,
    /// Outbound or transfer, delivered.
    Delivered,
    /// Cancelled.
    Cancelled,
}

impl DeliveryStatus {
    /// The status a new delivery of `direction` starts in.
    pub fn initial(direction: DeliveryDirection) -> Self {
        match direction {
            DeliveryDirection::Inbound => DeliveryStatus::Expected,
            DeliveryDirection::Outbound | DeliveryDirection::Transfer => DeliveryStatus::Scheduled,
        }
    }

    /// Whether the status belongs to the lifecycle of `direction`.
    pub fn belongs_to(self, direction: DeliveryDirection) -> bool {
        use DeliveryStatus::*;
        match direction {
            DeliveryDirection::Inbound => {
                matches!(self, Expected | InTransit | Received | Cancelled)
            }
            DeliveryDirection::Outbound | DeliveryDirection::Transfer => {
                matches!(self, Scheduled | InTransit | Delivered | Cancelled)
            }
        }
    }

    /// The wire spelling (`in_transit`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Expected => "expected",
            DeliveryStatus::InTransit => "in_transit",
            DeliveryStatus::Received => "received",
            DeliveryStatus::Scheduled => "scheduled",
            DeliveryStatus::Delivered => "delivered",
            DeliveryStatus::Cancelled => "cancelled",
        }
    }
}

/// A lifecycle action (`POST /delivery/{id}/start`, `/complete`, `/cancel`, `/receive`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryAction {
    /// Sets off.
    Start,
    /// Outbound or transfer arrives.
    Complete,
    /// Calls the delivery off.
    Cancel,
    /// Inbound goods are received.
    Receive,
}

impl DeliveryAction {
    /// The wire spelling, also the last segment of the action's path.
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryAction::Start => "start",
            DeliveryAction::Complete => "complete",
            DeliveryAction::Cancel => "cancel",
            DeliveryAction::Receive => "receive",
        }
    }
}

/// The status after `action`, or a violation when the action is not allowed from `current`.
///
/// - Inbound: expected --start--> in_transit; expected or in_transit --receive--> received;
///   expected or in_transit --cancel--> cancelled. A receive moves to `received` only when it
///   completes the manifest, and close-short takes the same edge ([`crate::receiving`]); until
///   then the delivery stays where it is and keeps receiving.
/// - Outbound and transfer: scheduled --start--> in_transit --complete--> delivered;
///   scheduled or in_transit --cancel--> cancelled.
pub fn next_status(
    direction: DeliveryDirection,
    current: DeliveryStatus,
    action: DeliveryAction,
) -> Result<DeliveryStatus, Violation> {
    use DeliveryAction::*;
    use DeliveryStatus::*;
    let next = match direction {
        DeliveryDirection::Inbound => match (current, action) {
            (Expected, Start) => Some(InTransit),
            (Expected | InTransit, Receive) => Some(Received),
            (Expected | InTransit, Cancel) => Some(Cancelled),
            _ => None,
        },
        DeliveryDirection::Outbound | DeliveryDirection::Transfer => match (current, action) {
            (Scheduled, Start) => Some(InTransit),
            (InTransit, Complete) => Some(Delivered),
            (Scheduled | InTransit, Cancel) => Some(Cancelled),
            _ => None,
        },
    };
    next.ok_or_else(|| {
        Violation::field(
            "status",
            format!(
                "cannot {} a {} {} delivery",
                action.as_str(),
                current.as_str(),
                direction.as_str()
            ),
        )
    })
}

/// Whether a delivery in `status` may be archived: received, delivered or cancelled.
pub fn can_archive(status: DeliveryStatus) -> bool {
    matches!(
        status,
        DeliveryStatus::Received | DeliveryStatus::Delivered | DeliveryStatus::Cancelled
    )
}

/// A delivery header; manifest lines, stops, legs and cargo spans are separate records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Delivery {
    /// Record id.
    pub id: Uuid,
    /// Owning organization, from the API key.
    pub organization_id: Uuid,
    /// Display name; required.
    #[schema(pattern = r"\S")]
    pub name: String,
    /// Human identifier.
    #[serde(default)]
    pub identifier: String,
    /// Purchase order number.
    #[serde(default)]
    pub po_number: Option<String>,
    /// Which way the delivery goes; cannot change.
    #[serde(default)]
    pub direction: DeliveryDirection,
    /// Lifecycle status; moved only by the lifecycle actions.
    #[serde(default)]
    pub status: DeliveryStatus,
    /// Cargo deliverable IDs (outbound create).
    #[serde(default)]
    pub item_ids: Vec<Uuid>,
    /// Workers (outbound create).
    #[serde(default)]
    pub worker_ids: Vec<Uuid>,
    /// Driver (a contact).
    #[serde(default)]
    pub driver_contact_id: Option<Uuid>,
    /// Receiver (a contact).
    #[serde(default)]
    pub receiver_contact_id: Option<Uuid>,
    /// Planned start, projected from the paired group; edited through `PATCH /delivery/{id}/outbound`.
    #[serde(default)]
    #[serde(with = "crate::time::iso_opt")]
    pub planned_start_at: Option<DateTime<Utc>>,
    /// Planned end, after the start; edited through `PATCH /delivery/{id}/outbound`.
    #[serde(default)]
    #[serde(with = "crate::time::iso_opt")]
    pub planned_end_at: Option<DateTime<Utc>>,
    /// Token of the public tracking page.
    #[serde(default)]
    pub public_token: Option<String>,
    /// The paired deliverable group (outbound).
    #[serde(default)]
    pub deliverable_group_id: Option<Uuid>,
    /// Truck name; set by the outbound create.
    #[serde(default)]
    pub truck_name: Option<String>,
    /// Source location.
    #[serde(default)]
    pub source_location_id: Option<Uuid>,
    /// Destination location.
    #[serde(default)]
    pub destination_location_id: Option<Uuid>,
    /// Source address.
    #[serde(default)]
    pub source_address: Option<String>,
    /// Destination address.
    #[serde(default)]
    pub destination_address: Option<String>,
    /// Number of cargo spans.
    #[serde(default)]
    #[serde(deserialize_with = "crate::number::whole")]
    pub cargo_count: i64,
    /// Whether the delivery is late.
    #[serde(default)]
    pub is_late: bool,
    /// The reason given with the last lifecycle action.
    #[serde(default)]
    pub last_reason: Option<String>,
    /// Derived on every read ([`is_partial`]), never stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<bool>,
    /// Set by the archive action; not accepted by generic PATCH.
    #[serde(default)]
    pub is_archived: bool,
    /// When the record was archived; kept by the engine.
    #[serde(default)]
    #[serde(with = "crate::time::iso_opt")]
    pub archived_at: Option<DateTime<Utc>>,
    /// Creation time.
    #[serde(with = "crate::time::iso")]
    pub created_at: DateTime<Utc>,
    /// Last update time.
    #[serde(with = "crate::time::iso")]
    pub updated_at: DateTime<Utc>,
}

impl Record for Delivery {
    const DESC: ResourceDesc = ResourceDesc {
        search_columns: &["name", "identifier", "poNumber"],
        archive: Archive::Actions,
        archived_at: true,
        read_only: &[
            "status",
            "plannedStartAt",
            "plannedEndAt",
            "publicToken",
            "deliverableGroupId",
            "truckName",
            "cargoCount",
            "isLate",
            "lastReason",
        ],
        immutable: &["direction"],
        answered: &["partial"],
        summary: "Deliveries: inbound receipts and outbound or transfer shipments",
        ..ResourceDesc::new("delivery", "delivery", "Delivery")
    };

    fn normalize(&mut self) {
        trim(&mut self.name);
        trim(&mut self.identifier);
        trim_opt(&mut self.po_number);
        self.partial = None;
    }

    fn validate(&self) -> Vec<Violation> {
        let mut v = Vec::new();
        require_nonempty(&mut v, "name", &self.name);
        if !self.status.belongs_to(self.direction) {
            v.push(Violation::field(
                "status",
                format!(
                    "status {} is not a status of this direction; outbound and transfer deliveries are created with POST /delivery/outbound",
                    self.status.as_str()
                ),
            ));
        }
        if let (Some(start), Some(end)) = (self.planned_start_at, self.planned_end_at)
            && end <= start
        {
            v.push(Violation::field(
                "plannedEndAt",
                "plannedEndAt must be after plannedStartAt",
            ));
        }
        v
    }

    /// `POST /delivery` creates inbound deliveries; the others come from `POST
    /// /delivery/outbound`.
    #[cfg(feature = "openapi")]
    fn refine_form(form: crate::openapi::Form, schema: &mut serde_json::Value) {
        if form == crate::openapi::Form::Create {
            schema["properties"]["direction"] = serde_json::json!({
                "enum": [DeliveryDirection::Inbound.as_str()],
                "description": "inbound (the default); outbound and transfer deliveries are created with POST /delivery/outbound"
            });
        }
    }
}

/// `POST /delivery/outbound`: an outbound or transfer delivery with its paired deliverable
/// group, stops, leg and cargo spans.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OutboundCreate {
    /// Display name; required.
    #[schema(pattern = r"\S")]
    pub name: String,
    /// `outbound` (default) or `transfer`.
    #[serde(default)]
    pub direction: Option<DeliveryDirection>,
    /// Human identifier.
    #[serde(default)]
    pub identifier: Option<String>,
    /// Purchase order number.
    #[serde(default)]
    pub po_number: Option<String>,
    /// Cargo deliverable ids.
    #[serde(default)]
    pub item_ids: Vec<Uuid>,
    /// Workers on the delivery.
    #[serde(default)]
    pub worker_ids: Vec<Uuid>,
    /// Truck name.
    #[serde(default)]
    pub truck_name: Option<String>,
    /// Driver (a contact).
    #[serde(default)]
    pub driver_contact_id: Option<Uuid>,
    /// Receiver (a contact).
    #[serde(default)]
    pub receiver_contact_id: Option<Uuid>,
    /// Source location.
    #[serde(default)]
    pub source_location_id: Option<Uuid>,
    /// Destination location.
    #[serde(default)]
    pub destination_location_id: Option<Uuid>,
    /// Source address.
    #[serde(default)]
    pub source_address: Option<String>,
    /// Destination address.
    #[serde(default)]
    pub destination_address: Option<String>,
    /// Planned start.
    #[serde(default)]
    #[serde(with = "crate::time::iso_opt")]
    pub planned_start_at: Option<DateTime<Utc>>,
    /// Planned end; after the start.
    #[serde(default)]
    #[serde(with = "crate::time::iso_opt")]
    pub planned_end_at: Option<DateTime<Utc>>,
}

/// `PATCH /delivery/{id}/outbound`: the planned times, the only way to change them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OutboundPatch {
    /// Planned start; omitted keeps it.
    #[serde(default)]
    #[serde(with = "crate::time::iso_opt")]
    pub planned_start_at: Option<DateTime<Utc>>,
    /// Planned end; omitted keeps it.
    #[serde(default)]
    #[serde(with = "crate::time::iso_opt")]
    pub planned_end_at: Option<DateTime<Utc>>,
}

/// One line of `POST /delivery/{id}/receive`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReceiveLine {
    /// The manifest line received against.
    pub manifest_line_id: Uuid,
    /// Quantity received now; positive.
    pub quantity: f64,
    /// Where it goes; defaults to the manifest line's location.
    #[serde(default)]
    pub location_id: Option<Uuid>,
    /// The lots (or serials) received, for an item tracked by lot or serial (required then,
    /// refused otherwise): their quantities, in the manifest line's unit, add up to
    /// `quantity`. A code the item has no lot of yet creates the lot on receipt.
    #[serde(default)]
    pub lots: Option<Vec<ReceivedLot>>,
}

/// One lot of a received line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReceivedLot {
    /// The lot code or serial number (trimmed, nonempty); the item's lot of this code, or a
    /// new one.
    #[schema(pattern = r"\S")]
    pub code: String,
    /// How much of the line is of this lot, in the manifest line's unit; positive.
    pub quantity: f64,
    /// When a new lot expires (for a lot that exists, its own expiry must be the same).
    #[serde(default)]
    #[serde(with = "crate::time::iso_opt")]
    pub expires_at: Option<DateTime<Utc>>,
}

/// The rules of the lots a posting names by code that need no database (`field` is the path
/// of what they are lots of: a receipt's `lines[i]`, a produce's `outputs[i]`): at least one, codes nonempty and named once, quantities positive, adding up to
/// the line's `quantity` (to the ledger's six decimals).
pub fn check_received_lots(field: &str, quantity: f64, lots: &[ReceivedLot]) -> Vec<Violation> {
    let mut v = Vec::new();
    if lots.is_empty() {
        v.push(Violation::field(
            format!("{field}.lots"),
            "a line names at least one lot when it names lots",
        ));
        return v;
    }
    let mut seen = std::collections::HashSet::new();
    let mut total: i64 = 0;
    for (j, lot) in lots.iter().enumerate() {
        let code = lot.code.trim();
        if code.is_empty() {
            v.push(Violation::field(
                format!("{field}.lots[{j}].code"),
                "a lot code is nonempty",
            ));
        } else if !seen.insert(code) {
            v.push(Violation::field(
                format!("{field}.lots[{j}].code"),
                format!("lot {code:?} is named twice in this line"),
            ));
        }
        if !(lot.quantity.is_finite() && lot.quantity > 0.0) {
            v.push(Violation::field(
                format!("{field}.lots[{j}].quantity"),
                "a lot's quantity is above zero",
            ));
        } else {
            total = total.saturating_add(crate::inventory::to_micros(lot.quantity));
        }
    }
    if v.is_empty() && total != crate::inventory::to_micros(quantity) {
        v.push(Violation::field(
            format!("{field}.lots"),
            format!(
                "the lots add up to {}, the line posts {quantity}",
                crate::inventory::from_micros(total)
            ),
        ));
    }
    v
}

/// `POST /delivery/{id}/receive`: without `lines`, every manifest line's outstanding quantity
/// is received at its own location.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReceiveRequest {
    /// What arrived; nonempty when given.
    #[serde(default)]
    pub lines: Option<Vec<ReceiveLine>>,
}

/// The body of `start`, `complete` and `cancel` (optional).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LifecycleRequest {
    /// Why (kept on the delivery as `lastReason`).
    #[serde(default)]
    pub reason: Option<String>,
}

impl OutboundCreate {
    /// Rules of the request alone.
    pub fn validate(&self) -> Vec<Violation> {
        let mut v = Vec::new();
        require_nonempty(&mut v, "name", &self.name);
        if self.direction == Some(DeliveryDirection::Inbound) {
            v.push(Violation::field(
                "direction",
                "POST /delivery/outbound creates outbound or transfer deliveries; create inbound ones with POST /delivery",
            ));
        }
        v.extend(planned_violation(
            self.planned_start_at,
            self.planned_end_at,
        ));
        v
    }
}

/// `plannedEndAt` must be after `plannedStartAt` when both are set.
pub fn planned_violation(
    start: Option<DateTime<Utc>>,
    end: Option<DateTime<Utc>>,
) -> Option<Violation> {
    match (start, end) {
        (Some(s), Some(e)) if e <= s => Some(Violation::field(
            "plannedEndAt",
            "plannedEndAt must be after plannedStartAt",
        )),
        _ => None,
    }
}

/// What a deliverable is, as cargo eligibility needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CargoFacts {
    /// The deliverable's `type`; `None` when no such deliverable exists in the organization.
    pub kind: Option<String>,
    /// Archived deliverables cannot be cargo.
    pub archived: bool,
    /// Already cargo of a delivery that is not final.
    pub on_open_delivery: bool,
}

/// Cargo eligibility: orders and phases (components with `deliveryComponentCargoEnabled`),
/// existing, not archived, not already on an open delivery, each named once.
pub fn cargo_violations(items: &[(Uuid, CargoFacts)], component_cargo: bool) -> Vec<Violation> {
    let mut v = Vec::new();
    for (i, (id, facts)) in items.iter().enumerate() {
        let field = format!("itemIds[{i}]");
        if items[..i].iter().any(|(other, _)| other == id) {
            v.push(Violation::field(field, "named twice"));
            continue;
        }
        match facts.kind.as_deref() {
            None => v.push(Violation::field(field, "no such deliverable")),
            Some("order" | "phase") => {}
            Some("component") if component_cargo => {}
            Some("component") => v.push(Violation::field(
                field,
                "component cargo needs the organization flag deliveryComponentCargoEnabled",
            )),
            Some(other) => v.push(Violation::field(
                field,
                format!("a {other} cannot be cargo; orders, phases and components can"),
            )),
        }
        if facts.archived {
            v.push(Violation::field(
                format!("itemIds[{i}]"),
                "the deliverable is archived",
            ));
        }
        if facts.on_open_delivery {
            v.push(Violation::field(
                format!("itemIds[{i}]"),
                "the deliverable is already cargo of a delivery that is not delivered or cancelled",
            ));
        }
    }
    v
}

/// Whether a delivery is partial (spec 3.2: derived, never stored). Inbound: something was
/// received and some line is still short (while receiving, and after a close-short that left
/// something out; [`crate::receiving`]). Outbound and transfer: on the way or delivered with
/// some cargo deliverables done and some not.
pub fn is_partial(
    direction: DeliveryDirection,
    status: DeliveryStatus,
    lines: &[LineQuantities],
    cargo_done: &[bool],
) -> bool {
    if status == DeliveryStatus::Cancelled {
        return false;
    }
    match direction {
        DeliveryDirection::Inbound => {
            crate::line_quantities::any_received(lines)
                && !crate::line_quantities::is_complete(lines)
        }
        DeliveryDirection::Outbound | DeliveryDirection::Transfer => {
            matches!(
                status,
                DeliveryStatus::InTransit | DeliveryStatus::Delivered
            ) && cargo_done.iter().any(|d| *d)
                && cargo_done.iter().any(|d| !*d)
        }
    }
}

/// A planned line of goods of a delivery: expected on an inbound delivery (received by
/// `receive`), shipped from `locationId` when an outbound delivery completes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManifestLine {
    /// Record id.
    pub id: Uuid,
    /// Owning organization, from the API key.
    pub organization_id: Uuid,
    /// The delivery; cannot change.
    pub delivery_id: Uuid,
    /// The item.
    pub item_id: Uuid,
    /// Quantity expected (inbound) or shipped (outbound); positive.
    #[schema(exclusive_minimum = 0)]
    pub quantity_expected: f64,
    /// Quantity received so far: the sum of the line's `receipt` rows; written by `receive`.
    #[serde(default)]
    pub quantity_received: f64,
    /// What was still outstanding when receiving was closed short; written by `close-short`.
    #[serde(default)]
    pub quantity_short: f64,
    /// Receiving location (inbound) or shipping location (outbound).
    #[serde(default)]
    pub location_id: Option<Uuid>,
    /// Unit of the quantities.
    #[serde(default)]
    pub unit_measure_id: Option<Uuid>,
    /// Notes.
    #[serde(default)]
    pub notes: Option<String>,
    /// The lots an outbound or transfer line ships (required for a tracked item).
    /// Each lot once, quantities in the line's unit adding up to `quantityExpected`; completion
    /// ships (and, with a destination, receives) each lot. An inbound line's lots are named
    /// when it is received, not here.
    #[serde(default)]
    pub lots: Vec<ManifestLot>,
    /// Creation time.
    #[serde(with = "crate::time::iso")]
    pub created_at: DateTime<Utc>,
    /// Last update time.
    #[serde(with = "crate::time::iso")]
    pub updated_at: DateTime<Utc>,
}

/// A lot of a manifest line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManifestLot {
    /// The lot (a lot of the line's item).
    pub lot_id: Uuid,
    /// How much of it, in the line's unit; positive.
    #[schema(exclusive_minimum = 0)]
    pub quantity: f64,
}

/// The rules of a manifest line's lots (none: nothing to check): each named once, quantities
/// positive and adding up to `quantity_expected`; violations name `lots` or `lots[j].field`.
pub fn manifest_lot_violations(quantity_expected: f64, lots: &[ManifestLot]) -> Vec<Violation> {
    let mut v = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut total: i64 = 0;
    for (j, lot) in lots.iter().enumerate() {
        if !seen.insert(lot.lot_id) {
            v.push(Violation::field(
                format!("lots[{j}].lotId"),
                "a lot is named once per line",
            ));
        }
        if !(lot.quantity.is_finite() && lot.quantity > 0.0) {
            v.push(Violation::field(
                format!("lots[{j}].quantity"),
                "a lot's quantity is above zero",
            ));
        } else {
            total = total.saturating_add(crate::inventory::to_micros(lot.quantity));
        }
    }
    if v.is_empty()
        && !lots.is_empty()
        && quantity_expected.is_finite()
        && total != crate::inventory::to_micros(quantity_expected)
    {
        v.push(Violation::field(
            "lots",
            format!(
                "the lots add up to {}, the line's quantityExpected is {quantity_expected}",
                crate::inventory::from_micros(total)
            ),
        ));
    }
    v
}

impl Record for ManifestLine {
    const DESC: ResourceDesc = ResourceDesc {
        search_columns: &["notes"],
        read_only: &["quantityReceived", "quantityShort"],
        immutable: &["deliveryId"],
        summary: "Delivery manifest lines: the goods of a delivery",
        ..ResourceDesc::new(
            "delivery-manifest-line",
            "delivery_manifest_line",
            "Delivery",
        )
    };

    fn validate(&self) -> Vec<Violation> {
        let mut v = Vec::new();
        if !(self.quantity_expected > 0.0 && self.quantity_expected.is_finite()) {
            v.push(Violation::field(
                "quantityExpected",
                "must be a positive number",
            ));
        }
        if !(self.quantity_received >= 0.0 && self.quantity_received.is_finite()) {
            v.push(Violation::field("quantityReceived", "must not be negative"));
        } else if self.quantity_expected.is_finite()
            && crate::inventory::to_micros(self.quantity_received)
                > crate::line_quantities::allowed_micros(
                    self.quantity_expected,
                    crate::line_quantities::OVER_RECEIPT_TOLERANCE,
                )
        {
            v.push(Violation::field(
                "quantityExpected",
                format!(
                    "{} was already received against this line; quantityExpected cannot be less",
                    self.quantity_received
                ),
            ));
        }
        if !(self.quantity_short >= 0.0 && self.quantity_short.is_finite()) {
            v.push(Violation::field("quantityShort", "must not be negative"));
        }
        v.extend(manifest_lot_violations(self.quantity_expected, &self.lots));
        v
    }
}

/// A stop of a delivery's itinerary; written by the delivery actions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Stop {
    /// Record id.
    pub id: Uuid,
    /// Owning organization, from the API key.
    pub organization_id: Uuid,
    /// The delivery.
    pub delivery_id: Uuid,
    /// Order in the itinerary, from 1.
    #[serde(deserialize_with = "crate::number::whole")]
    pub sequence: i64,
    /// `pickup` or `dropoff`.
    pub kind: String,
    /// Location of the stop.
    #[serde(default)]
    pub location_id: Option<Uuid>,
    /// Address of the stop.
    #[serde(default)]
    pub address: Option<String>,
    /// Planned time at the stop.
    #[serde(default)]
    #[serde(with = "crate::time::iso_opt")]
    pub planned_at: Option<DateTime<Utc>>,
    /// When the truck left (pickup) or arrived (dropoff).
    #[serde(default)]
    #[serde(with = "crate::time::iso_opt")]
    pub actual_at: Option<DateTime<Utc>>,
    /// Creation time.
    #[serde(with = "crate::time::iso")]
    pub created_at: DateTime<Utc>,
    /// Last update time.
    #[serde(with = "crate::time::iso")]
    pub updated_at: DateTime<Utc>,
}

impl Record for Stop {
    const DESC: ResourceDesc = ResourceDesc {
        ops: Ops::READ_ONLY,
        summary: "Delivery stops: the itinerary's places (read-only)",
        ..ResourceDesc::new("delivery-stop", "delivery_stop", "Delivery")
    };
}

/// A leg between two stops; written by the delivery actions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Leg {
    /// Record id.
    pub id: Uuid,
    /// Owning organization, from the API key.
    pub organization_id: Uuid,
    /// The delivery.
    pub delivery_id: Uuid,
    /// Order in the itinerary, from 1.
    #[serde(deserialize_with = "crate::number::whole")]
    pub sequence: i64,
    /// Where the leg starts.
    pub from_stop_id: Uuid,
    /// Where the leg ends.
    pub to_stop_id: Uuid,
    /// Planned departure.
    #[serde(default)]
    #[serde(with = "crate::time::iso_opt")]
    pub planned_start_at: Option<DateTime<Utc>>,
    /// Planned arrival.
    #[serde(default)]
    #[serde(with = "crate::time::iso_opt")]
    pub planned_end_at: Option<DateTime<Utc>>,
    /// Actual departure (start).
    #[serde(default)]
    #[serde(with = "crate::time::iso_opt")]
    pub started_at: Option<DateTime<Utc>>,
    /// Actual arrival (complete).
    #[serde(default)]
    #[serde(with = "crate::time::iso_opt")]
    pub completed_at: Option<DateTime<Utc>>,
    /// Creation time.
    #[serde(with = "crate::time::iso")]
    pub created_at: DateTime<Utc>,
    /// Last update time.
    #[serde(with = "crate::time::iso")]
    pub updated_at: DateTime<Utc>,
}

impl Record for Leg {
    const DESC: ResourceDesc = ResourceDesc {
        ops: Ops::READ_ONLY,
        summary: "Delivery legs: the itinerary's moves between stops (read-only)",
        ..ResourceDesc::new("delivery-leg", "delivery_leg", "Delivery")
    };
}

/// One cargo deliverable carried between two stops; written by the delivery actions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CargoSpan {
    /// Record id.
    pub id: Uuid,
    /// Owning organization, from the API key.
    pub organization_id: Uuid,
    /// The delivery.
    pub delivery_id: Uuid,
    /// The cargo deliverable.
    pub deliverable_id: Uuid,
    /// Its quantity.
    #[serde(deserialize_with = "crate::number::whole")]
    pub quantity: i64,
    /// Loaded at.
    pub from_stop_id: Uuid,
    /// Unloaded at.
    pub to_stop_id: Uuid,
    /// `planned`, `loaded`, `delivered` or `cancelled`, following the delivery.
    pub status: String,
    /// Creation time.
    #[serde(with = "crate::time::iso")]
    pub created_at: DateTime<Utc>,
    /// Last update time.
    #[serde(with = "crate::time::iso")]
    pub updated_at: DateTime<Utc>,
}

impl Record for CargoSpan {
    const DESC: ResourceDesc = ResourceDesc {
        ops: Ops::READ_ONLY,
        summary: "Delivery cargo spans: which deliverable rides between which stops (read-only)",
        ..ResourceDesc::new("delivery-cargo-span", "delivery_cargo_span", "Delivery")
    };
}

/// The status of a cargo span while its delivery is in `status`.
pub fn span_status(status: DeliveryStatus) -> &'static str {
    match status {
        DeliveryStatus::InTransit => "loaded",
        DeliveryStatus::Delivered | DeliveryStatus::Received => "delivered",
        DeliveryStatus::Cancelled => "cancelled",
        DeliveryStatus::Expected | DeliveryStatus::Scheduled => "planned",
    }
}

/// The `data` keys of a delivery's paired deliverable group (an order named after the delivery,
/// docs/documents.md). The group is created with all three; when the delivery moves, only
/// `deliveryStatus` is written. A key left `None` is not written: the group keeps its value,
/// and its other `data` keys, which are the user's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupData {
    /// The delivery the group is paired with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_id: Option<Uuid>,
    /// The delivery's cargo (`itemIds`) at creation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cargo_deliverable_ids: Option<Vec<Uuid>>,
    /// The delivery's status, kept in step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_status: Option<DeliveryStatus>,
}

/// The `metadata` of a ledger row a delivery posts (a receipt, or a completion's shipment and
/// arrival): the manifest line whose goods it moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PostingMetadata {
    /// The manifest line.
    pub manifest_line_id: Uuid,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::testing::check;

    #[test]
    fn a_manifest_lines_lots_add_up_to_it() {
        let lot = |n: u128, quantity: f64| ManifestLot {
            lot_id: Uuid::from_u128(n),
            quantity,
        };
        assert!(manifest_lot_violations(5.0, &[]).is_empty());
        assert!(manifest_lot_violations(5.0, &[lot(1, 2.0), lot(2, 3.0)]).is_empty());
        let fields =
            |v: Vec<Violation>| -> Vec<String> { v.into_iter().filter_map(|v| v.field).collect() };
        assert_eq!(
            fields(manifest_lot_violations(5.0, &[lot(1, 2.0)])),
            ["lots"]
        );
        assert_eq!(
            fields(manifest_lot_violations(
                5.0,
                &[lot(1, 2.0), lot(1, 3.0), lot(2, -1.0)]
            )),
            ["lots[1].lotId", "lots[2].quantity"]
        );
        let line = check::<ManifestLine>(json!({
            "deliveryId": "00000000-0000-4000-8000-000000000001",
            "itemId": "00000000-0000-4000-8000-000000000002",
            "quantityExpected": 2,
            "lots": [{"lotId": "00000000-0000-4000-8000-000000000003", "quantity": 3}]
        }))
        .unwrap_err();
        assert_eq!(line[0].field.as_deref(), Some("lots"));
    }

    #[test]
    fn received_lots_add_up_to_the_line_and_are_named_once() {
        let lot = |code: &str, quantity: f64| ReceivedLot {
            code: code.into(),
            quantity,
            expires_at: None,
        };
        assert!(check_received_lots("lines[0]", 5.0, &[lot("A", 2.0), lot("B", 3.0)]).is_empty());
        let fields =
            |v: Vec<Violation>| -> Vec<String> { v.into_iter().filter_map(|v| v.field).collect() };
        assert_eq!(
            fields(check_received_lots("lines[1]", 5.0, &[])),
            ["lines[1].lots"]
        );
        assert_eq!(
            fields(check_received_lots("lines[0]", 5.0, &[lot("A", 2.0)])),
            ["lines[0].lots"]
        );
        assert_eq!(
            fields(check_received_lots(
                "lines[0]",
                5.0,
                &[lot(" ", 1.0), lot("A", 0.0), lot("B", 2.0), lot("B ", 2.0)]
            )),
            [
                "lines[0].lots[0].code",
                "lines[0].lots[1].quantity",
                "lines[0].lots[3].code"
            ]
        );
        assert_eq!(
            fields(check_received_lots("lines[0]", 1.0, &[lot("A", f64::NAN)])),
            ["lines[0].lots[0].quantity"]
        );
    }
    use DeliveryAction::*;
    use DeliveryDirection::*;
    use DeliveryStatus::*;
    use proptest::prelude::*;
    use serde_json::json;

    const STATUSES: [DeliveryStatus; 6] = [
        Expected, InTransit, Received, Scheduled, Delivered, Cancelled,
    ];
    const ACTIONS: [DeliveryAction; 4] = [Start, Complete, Cancel, Receive];
    const DIRECTIONS: [DeliveryDirection; 3] = [Inbound, Outbound, Transfer];

    /// The group's `data` keys and the ledger rows' `metadata` keep their wire names; a status
    /// change writes `deliveryStatus` alone, so the group keeps every other key.
    #[test]
    fn group_data_and_posting_metadata_wire_form() {
        let id = Uuid::nil();
        let full = GroupData {
            delivery_id: Some(id),
            cargo_deliverable_ids: Some(vec![id]),
            delivery_status: Some(Scheduled),
        };
        assert_eq!(
            serde_json::to_value(&full).unwrap(),
            json!({"deliveryId": id, "cargoDeliverableIds": [id], "deliveryStatus": "scheduled"})
        );
        let status = GroupData {
            delivery_status: Some(InTransit),
            ..GroupData::default()
        };
        assert_eq!(
            serde_json::to_value(&status).unwrap(),
            json!({"deliveryStatus": "in_transit"})
        );
        assert_eq!(
            serde_json::to_value(PostingMetadata {
                manifest_line_id: id
            })
            .unwrap(),
            json!({"manifestLineId": id})
        );
    }

    #[test]
    fn inbound_lifecycle() {
        assert_eq!(next_status(Inbound, Expected, Start).unwrap(), InTransit);
        assert_eq!(next_status(Inbound, Expected, Receive).unwrap(), Received);
        assert_eq!(next_status(Inbound, InTransit, Receive).unwrap(), Received);
        assert_eq!(next_status(Inbound, InTransit, Cancel).unwrap(), Cancelled);
        assert!(next_status(Inbound, InTransit, Complete).is_err());
        assert!(next_status(Inbound, Received, Cancel).is_err());
        assert!(next_status(Inbound, InTransit, Start).is_err());
    }

    #[test]
    fn outbound_lifecycle() {
        for d in [Outbound, Transfer] {
            assert_eq!(next_status(d, Scheduled, Start).unwrap(), InTransit);
            assert_eq!(next_status(d, InTransit, Complete).unwrap(), Delivered);
            assert_eq!(next_status(d, Scheduled, Cancel).unwrap(), Cancelled);
            assert_eq!(next_status(d, InTransit, Cancel).unwrap(), Cancelled);
            assert!(next_status(d, Scheduled, Complete).is_err());
            assert!(next_status(d, InTransit, Receive).is_err());
            assert!(next_status(d, Delivered, Cancel).is_err());
        }
        let err = next_status(Outbound, Delivered, Start).unwrap_err();
        assert_eq!(err.message, "cannot start a delivered outbound delivery");
    }

    #[test]
    fn archive_only_from_final_states() {
        let archivable: Vec<_> = STATUSES.into_iter().filter(|s| can_archive(*s)).collect();
        assert_eq!(archivable, [Received, Delivered, Cancelled]);
    }

    #[test]
    fn record_rules() {
        let out = check::<Delivery>(json!({"name": "Steel"})).unwrap();
        assert_eq!(out["direction"], "inbound");
        assert_eq!(out["status"], "expected");
        assert_eq!(out["itemIds"], json!([]));
        assert!(check::<Delivery>(json!({"name": "x", "direction": "outbound"})).is_err());
        assert!(
            check::<Delivery>(json!({"name": "x", "direction": "outbound", "status": "scheduled"}))
                .is_ok()
        );
        let backwards = json!({"name": "x", "plannedStartAt": "2024-02-02T00:00:00Z", "plannedEndAt": "2024-02-01T00:00:00Z"});
        assert!(check::<Delivery>(backwards).is_err());
        assert!(check::<Delivery>(json!({"name": "x", "status": "in_transit"})).is_ok());
    }

    #[test]
    fn partial_is_derived() {
        let l = |expected, received| LineQuantities { expected, received };
        assert!(!is_partial(Inbound, Expected, &[l(5.0, 0.0)], &[]));
        assert!(is_partial(Inbound, Received, &[l(5.0, 2.0)], &[]));
        assert!(is_partial(
            Inbound,
            Received,
            &[l(5.0, 5.0), l(1.0, 0.0)],
            &[]
        ));
        assert!(!is_partial(Inbound, Received, &[l(5.0, 5.0)], &[]));
        assert!(!is_partial(Inbound, Cancelled, &[l(5.0, 2.0)], &[]));
        assert!(is_partial(Outbound, InTransit, &[], &[true, false]));
        assert!(!is_partial(Outbound, Scheduled, &[], &[true, false]));
        assert!(!is_partial(Transfer, Delivered, &[], &[true, true]));
    }

    #[test]
    fn cargo_rules() {
        let facts = |kind: Option<&str>| CargoFacts {
            kind: kind.map(str::to_string),
            archived: false,
            on_open_delivery: false,
        };
        let a = Uuid::from_u128(1);
        let b = Uuid::from_u128(2);
        assert!(
            cargo_violations(
                &[(a, facts(Some("order"))), (b, facts(Some("phase")))],
                false
            )
            .is_empty()
        );
        assert_eq!(
            cargo_violations(&[(a, facts(Some("component")))], false).len(),
            1
        );
        assert!(cargo_violations(&[(a, facts(Some("component")))], true).is_empty());
        assert_eq!(cargo_violations(&[(a, facts(Some("step")))], true).len(), 1);
        assert_eq!(cargo_violations(&[(a, facts(None))], true).len(), 1);
        assert_eq!(
            cargo_violations(
                &[(a, facts(Some("order"))), (a, facts(Some("order")))],
                true
            )
            .len(),
            1
        );
        let mut busy = facts(Some("order"));
        busy.on_open_delivery = true;
        busy.archived = true;
        assert_eq!(cargo_violations(&[(a, busy)], true).len(), 2);
    }

    #[test]
    fn outbound_requests() {
        let ok: OutboundCreate = serde_json::from_value(json!({"name": "Ship", "plannedStartAt": "2024-01-01T00:00:00Z", "plannedEndAt": "2024-01-02T00:00:00Z"})).unwrap();
        assert!(ok.validate().is_empty());
        let back: OutboundCreate = serde_json::from_value(json!({"name": "Ship", "plannedStartAt": "2024-01-02T00:00:00Z", "plannedEndAt": "2024-01-02T00:00:00Z"})).unwrap();
        assert_eq!(back.validate().len(), 1);
        let inbound: OutboundCreate =
            serde_json::from_value(json!({"name": "x", "direction": "inbound"})).unwrap();
        assert_eq!(inbound.validate().len(), 1);
        assert!(
            serde_json::from_value::<OutboundCreate>(json!({"name": "x", "status": "delivered"}))
                .is_err()
        );
        assert_eq!(span_status(InTransit), "loaded");
        let out = check::<Delivery>(json!({"name": "x", "partial": true})).unwrap();
        assert!(out.get("partial").is_none());
    }

    proptest! {
        #[test]
        fn inbound_partial_means_something_but_not_everything(lines in proptest::collection::vec((1u32..100, 0u32..100), 1..6)) {
            let lines: Vec<LineQuantities> = lines.iter().map(|(e, r)| LineQuantities { expected: f64::from(*e), received: f64::from((*r).min(*e)) }).collect();
            let partial = is_partial(Inbound, Received, &lines, &[]);
            let all = lines.iter().all(|l| l.received >= l.expected);
            let none = lines.iter().all(|l| l.received == 0.0);
            prop_assert_eq!(partial, !all && !none);
        }

        #[test]
        fn lifecycle_stays_within_its_direction(d in 0usize..3, s in 0usize..6, a in 0usize..4) {
            let (direction, status, action) = (DIRECTIONS[d], STATUSES[s], ACTIONS[a]);
            if let Ok(next) = next_status(direction, status, action) {
                prop_assert!(status.belongs_to(direction));
                prop_assert!(next.belongs_to(direction));
                prop_assert_ne!(next, status);
                prop_assert!(!can_archive(status), "final states have no way out");
            }
        }

        #[test]
        fn cancel_works_until_final(d in 0usize..3, s in 0usize..6) {
            let (direction, status) = (DIRECTIONS[d], STATUSES[s]);
            if status.belongs_to(direction) {
                prop_assert_eq!(next_status(direction, status, Cancel).is_ok(), !can_archive(status));
            }
        }
    }
}
