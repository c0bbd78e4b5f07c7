//! What may change in a delivery's manifest (spec 4.8; issue 35): the rules that keep a manifest
//! line's `quantityReceived` the sum of its receipt rows, and a delivery's ledger rows true to its
//! lines.
//!
//! - A line **has postings** once something was received against it (`quantityReceived` > 0) or
//!   its delivery was delivered (completion posted its `ship` row, and its `receipt` at the
//!   destination). Its `itemId`, `locationId` and `unitMeasureId` are then fixed, and it cannot be
//!   deleted: the rows name it (`metadata.manifestLineId`) and its item and location.
//! - A delivery in a **final status** (`received`, closed short included, `delivered`,
//!   `cancelled`) has a fixed manifest: it takes no new lines, none is deleted, and no line's
//!   item, location, unit or `quantityExpected` changes (what was received, shipped or recorded
//!   short is history). `notes` stay editable.
//!
//! Each refusal is a state conflict (409) naming the field and the line.

use crate::delivery::{DeliveryStatus, ManifestLine};
use crate::violation::Violation;

/// Whether a delivery in `status` has a fixed manifest: received (or closed short), delivered
/// or cancelled.
pub fn is_final(status: DeliveryStatus) -> bool {
    matches!(
        status,
        DeliveryStatus::Received | DeliveryStatus::Delivered | DeliveryStatus::Cancelled
    )
}

/// Whether ledger rows name `line`: something was received against it, or its delivery (in
/// `status`) was delivered.
pub fn has_postings(status: DeliveryStatus, line: &ManifestLine) -> bool {
    line.quantity_received > 0.0 || status == DeliveryStatus::Delivered
}

/// Why a new line cannot join a delivery in `status`, naming `deliveryId`.
pub fn create_conflict(status: DeliveryStatus, delivery: uuid::Uuid) -> Option<Violation> {
    is_final(status).then(|| {
        Violation::field(
            "deliveryId",
            format!(
                "delivery {delivery} is {}: its manifest is closed and takes no new lines",
                status.as_str()
            ),
        )
    })
}

/// Why `old` cannot become `new` on a delivery in `status`: one violation per fixed field that
/// changed, each naming the field and the line.
pub fn change_conflicts(
    status: DeliveryStatus,
    old: &ManifestLine,
    new: &ManifestLine,
) -> Vec<Violation> {
    let mut v = Vec::new();
    let fixed_by_postings = has_postings(status, old);
    let closed = is_final(status);
    if !(fixed_by_postings || closed) {
        return v;
    }
    let why = if fixed_by_postings {
        if old.quantity_received > 0.0 {
            format!(
                "manifest line {} has receipts ({} received)",
                old.id, old.quantity_received
            )
        } else {
            format!(
                "manifest line {} was shipped when its delivery completed",
                old.id
            )
        }
    } else {
        format!(
            "manifest line {} belongs to a {} delivery",
            old.id,
            status.as_str()
        )
    };
    let mut fixed = |field: &str, changed: bool| {
        if changed {
            v.push(Violation::field(
                field,
                format!("{why}: its {field} cannot change"),
            ));
        }
    };
    fixed("itemId", old.item_id != new.item_id);
    fixed("locationId", old.location_id != new.location_id);
    fixed("unitMeasureId", old.unit_measure_id != new.unit_measure_id);
    if closed {
        fixed(
            "quantityExpected",
            old.quantity_expected != new.quantity_expected,
        );
    }
    v
}

/// Why `line` cannot be deleted from a delivery in `status`, naming `id`.
pub fn delete_conflict(status: DeliveryStatus, line: &ManifestLine) -> Option<Violation> {
    if line.quantity_received > 0.0 {
        Some(Violation::field(
            "id",
            format!(
                "manifest line {} has receipts ({} received) and cannot be deleted",
                line.id, line.quantity_received
            ),
        ))
    } else if is_final(status) {
        Some(Violation::field(
            "id",
            format!(
                "manifest line {} belongs to a {} delivery, whose manifest is closed; it cannot be deleted",
                line.id,
                status.as_str()
            ),
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::testing::check;
    use DeliveryStatus::*;
    use serde_json::json;
    use uuid::Uuid;

    fn line(received: f64) -> ManifestLine {
        serde_json::from_value(
            check::<ManifestLine>(json!({
                "deliveryId": Uuid::from_u128(1),
                "itemId": Uuid::from_u128(2),
                "quantityExpected": 10,
                "quantityReceived": received,
                "locationId": Uuid::from_u128(3),
            }))
            .unwrap(),
        )
        .unwrap()
    }

    #[test]
    fn an_open_line_without_receipts_changes_freely() {
        let old = line(0.0);
        let mut new = old.clone();
        new.item_id = Uuid::from_u128(9);
        new.location_id = None;
        new.quantity_expected = 4.0;
        for s in [Expected, InTransit, Scheduled] {
            assert!(change_conflicts(s, &old, &new).is_empty());
            assert!(delete_conflict(s, &old).is_none());
            assert!(create_conflict(s, old.delivery_id).is_none());
        }
    }

    #[test]
    fn receipts_fix_item_location_and_unit() {
        let old = line(4.0);
        let mut new = old.clone();
        new.item_id = Uuid::from_u128(9);
        new.unit_measure_id = Some(Uuid::from_u128(8));
        new.quantity_expected = 12.0;
        new.notes = Some("late".into());
        let v = change_conflicts(Expected, &old, &new);
        let fields: Vec<_> = v.iter().map(|v| v.field.clone().unwrap()).collect();
        assert_eq!(fields, ["itemId", "unitMeasureId"]);
        assert!(
            v[0].message.contains(&old.id.to_string()),
            "{}",
            v[0].message
        );
        let gone = delete_conflict(InTransit, &old).unwrap();
        assert_eq!(gone.field.as_deref(), Some("id"));
        assert!(gone.message.contains(&old.id.to_string()));
    }

    #[test]
    fn a_final_delivery_has_a_closed_manifest() {
        let old = line(0.0);
        let mut notes = old.clone();
        notes.notes = Some("checked".into());
        let mut more = old.clone();
        more.quantity_expected = 11.0;
        for s in [Received, Delivered, Cancelled] {
            assert!(create_conflict(s, old.delivery_id).is_some());
            assert!(delete_conflict(s, &old).is_some());
            assert!(
                change_conflicts(s, &old, &notes).is_empty(),
                "notes stay editable"
            );
            let v = change_conflicts(s, &old, &more);
            assert_eq!(v.len(), 1);
            assert_eq!(v[0].field.as_deref(), Some("quantityExpected"));
        }
        assert!(has_postings(Delivered, &old));
        assert!(!has_postings(Cancelled, &old));
    }
}
