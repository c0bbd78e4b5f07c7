//! Deliveries (spec 2.10, 3.2, 4.8): inbound receipts and outbound or transfer shipments.
//!
//! Status moves only through the lifecycle actions ([`next_status`]); archive and restore are
//! actions too, allowed only from a final status ([`can_archive`]).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::common::{require_nonempty, trim, trim_opt};
use crate::resource::{Archive, Record, ResourceDesc};
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
///   expected or in_transit --cancel--> cancelled.
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
    pub planned_start_at: Option<DateTime<Utc>>,
    /// Planned end, after the start; edited through `PATCH /delivery/{id}/outbound`.
    #[serde(default)]
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
    pub cargo_count: i64,
    /// Whether the delivery is late.
    #[serde(default)]
    pub is_late: bool,
    /// Set by the archive action; not accepted by generic PATCH.
    #[serde(default)]
    pub is_archived: bool,
    /// When the record was archived; kept by the engine.
    #[serde(default)]
    pub archived_at: Option<DateTime<Utc>>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last update time.
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
        ],
        immutable: &["direction"],
        summary: "Deliveries: inbound receipts and outbound or transfer shipments",
        ..ResourceDesc::new("delivery", "delivery", "Delivery")
    };

    fn normalize(&mut self) {
        trim(&mut self.name);
        trim(&mut self.identifier);
        trim_opt(&mut self.po_number);
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::testing::check;
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

    proptest! {
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
