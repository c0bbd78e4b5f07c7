//! Every standard resource, in one list the server, the client and the CLI iterate over.

use crate::resource::{Kind, ResourceKind};
use crate::{
    catalog, contact, custom_property, deliverable, delivery, document, inventory, minimal,
    notification, organization, production, qc, vendor, work_session, worker,
};

/// All standard resources. Adding a resource type means adding one line here.
pub fn resources() -> &'static [&'static dyn ResourceKind] {
    static ALL: &[&dyn ResourceKind] = &[
        &Kind::<worker::Worker>::new(),
        &Kind::<deliverable::Deliverable>::new(),
        &Kind::<work_session::WorkSession>::new(),
        &Kind::<production::ProductionOutput>::new(),
        &Kind::<production::BomLine>::new(),
        &Kind::<inventory::InventoryTransaction>::new(),
        &Kind::<vendor::Vendor>::new(),
        &Kind::<contact::Contact>::new(),
        &Kind::<catalog::CatalogEntry>::new(),
        &Kind::<custom_property::CustomPropertyDefinition>::new(),
        &Kind::<document::Document>::new(),
        &Kind::<document::DocumentVersion>::new(),
        &Kind::<delivery::Delivery>::new(),
        &Kind::<delivery::ManifestLine>::new(),
        &Kind::<delivery::Stop>::new(),
        &Kind::<delivery::Leg>::new(),
        &Kind::<delivery::CargoSpan>::new(),
        &Kind::<qc::QcTemplateVersion>::new(),
        &Kind::<qc::QcSet>::new(),
        &Kind::<organization::OrganizationMember>::new(),
        &Kind::<organization::Role>::new(),
        &Kind::<notification::Notification>::new(),
        &Kind::<minimal::Item>::new(),
        &Kind::<minimal::Location>::new(),
        &Kind::<minimal::Shop>::new(),
        &Kind::<minimal::Stage>::new(),
        &Kind::<minimal::UnitMeasure>::new(),
        &Kind::<minimal::Team>::new(),
        &Kind::<minimal::Project>::new(),
        &Kind::<minimal::Code>::new(),
        &Kind::<minimal::Dependency>::new(),
        &Kind::<minimal::Comment>::new(),
        &Kind::<minimal::Note>::new(),
        &Kind::<minimal::Timesheet>::new(),
    ];
    ALL
}

/// The resource served at `/api/v2/<path>`.
pub fn by_path(path: &str) -> Option<&'static dyn ResourceKind> {
    resources().iter().copied().find(|r| r.desc().path == path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::testing::with_common;
    use crate::resource::COMMON_READ_ONLY;
    use serde_json::{Value, json};
    use std::collections::HashSet;

    const A: &str = "00000000-0000-4000-8000-00000000000a";
    const B: &str = "00000000-0000-4000-8000-00000000000b";

    /// The required fields of a minimal valid record of every resource, by path.
    fn minimal_records() -> Vec<(&'static str, Value)> {
        vec![
            ("worker", json!({"name": "Ann"})),
            ("deliverable", json!({"name": "Order 1", "type": "order"})),
            (
                "deliverable/work-sessions",
                json!({"workerId": A, "deliverableId": B, "shopId": A, "startDate": "2024-01-02T08:00:00Z"}),
            ),
            (
                "production-output",
                json!({"itemId": A, "orderDeliverableId": B}),
            ),
            (
                "bom-line",
                json!({"itemId": A, "orderDeliverableId": B, "quantity": 2}),
            ),
            (
                "inventory-transaction",
                json!({"itemId": A, "type": "adjust", "quantity": 1, "toLocationId": B}),
            ),
            ("vendor", json!({"name": "Acme"})),
            ("contact", json!({"name": "Dee"})),
            (
                "catalog-entry",
                json!({"catalog": "pay_type", "code": "OT"}),
            ),
            (
                "custom-property",
                json!({"key": "squareFeet", "name": "Square feet", "dataType": "number"}),
            ),
            ("document", json!({"name": "drawing.pdf"})),
            (
                "document-version",
                json!({"documentId": A, "name": "v1", "documentKey": "k/1"}),
            ),
            ("delivery", json!({"name": "Steel"})),
            (
                "delivery-manifest-line",
                json!({"deliveryId": A, "itemId": B, "quantityExpected": 5}),
            ),
            (
                "delivery-stop",
                json!({"deliveryId": A, "sequence": 1, "kind": "pickup"}),
            ),
            (
                "delivery-leg",
                json!({"deliveryId": A, "sequence": 1, "fromStopId": A, "toStopId": B}),
            ),
            (
                "delivery-cargo-span",
                json!({"deliveryId": A, "deliverableId": B, "quantity": 1, "fromStopId": A, "toStopId": B, "status": "planned"}),
            ),
            (
                "qc-template",
                json!({"qcTemplateId": A, "name": "Weld check"}),
            ),
            ("qc-set", json!({"templateId": A, "deliverableId": B})),
            ("organization-member", json!({})),
            ("role", json!({"name": "Lead"})),
            ("notification", json!({"kind": "channel_comment"})),
            ("item", json!({"name": "Bolt"})),
            ("location", json!({"name": "Rack A", "shopId": A})),
            ("shop", json!({"name": "Weld"})),
            ("stage", json!({"name": "Cut"})),
            ("unit-measure", json!({"name": "Kilogram"})),
            ("team", json!({"name": "Night"})),
            ("project", json!({"name": "Tower"})),
            ("code", json!({"code": "C1"})),
            ("dependency", json!({"predecessorId": A, "successorId": B})),
            ("comment", json!({"body": "hello"})),
            ("note", json!({"body": "hello"})),
            ("timesheet", json!({"workerId": A, "date": "2024-01-02"})),
        ]
    }

    #[test]
    fn paths_tables_are_unique() {
        let mut paths = HashSet::new();
        let mut tables = HashSet::new();
        for r in resources() {
            assert!(
                paths.insert(r.desc().path),
                "duplicate path {}",
                r.desc().path
            );
            assert!(
                tables.insert(r.desc().table),
                "duplicate table {}",
                r.desc().table
            );
        }
    }

    #[test]
    fn schemas_have_unique_names_and_camel_case_properties() {
        let mut names = HashSet::new();
        for r in resources() {
            let (name, schema) = r.schema();
            assert!(names.insert(name.clone()), "duplicate schema name {name}");
            let schema = serde_json::to_value(schema).unwrap();
            let properties = schema["properties"]
                .as_object()
                .unwrap_or_else(|| panic!("{name} has no properties"));
            for field in ["id", "organizationId", "createdAt", "updatedAt"] {
                assert!(properties.contains_key(field), "{name} lacks {field}");
            }
            assert!(
                properties.keys().all(|k| !k.contains('_')),
                "{name} has a snake_case property"
            );
        }
    }

    #[test]
    fn worker_comes_first() {
        assert_eq!(resources()[0].desc().path, "worker");
    }

    #[test]
    fn names_follow_the_conventions() {
        for r in resources() {
            let d = r.desc();
            assert!(
                d.path.split('/').all(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_lowercase() || c == '-')),
                "path {}",
                d.path
            );
            assert!(
                d.table.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "table {}",
                d.table
            );
            assert!(
                d.permission.starts_with(|c: char| c.is_ascii_uppercase()),
                "permission {}",
                d.permission
            );
            assert!(
                d.permission.chars().all(|c| c.is_ascii_alphanumeric()),
                "permission {}",
                d.permission
            );
            assert!(!d.summary.is_empty(), "summary of {}", d.path);
            assert!(
                !d.archived_at || d.archive.is_archivable(),
                "archivedAt without archive on {}",
                d.path
            );
        }
    }

    #[test]
    fn every_resource_has_a_minimal_record() {
        let table: HashSet<_> = minimal_records()
            .into_iter()
            .map(|(path, _)| path)
            .collect();
        for r in resources() {
            assert!(
                table.contains(r.desc().path),
                "no minimal record for {}",
                r.desc().path
            );
        }
        assert_eq!(table.len(), resources().len());
    }

    #[test]
    fn minimal_records_pass_and_unknown_fields_fail() {
        for (path, fields) in minimal_records() {
            let kind = by_path(path).unwrap_or_else(|| panic!("{path} is not registered"));
            let record = with_common(fields);
            let out = kind
                .check(record.clone(), None)
                .unwrap_or_else(|v| panic!("{path}: {v:?}"));
            // Checking the canonical output again changes nothing.
            assert_eq!(
                kind.check(out.clone(), Some(&out)).as_ref(),
                Ok(&out),
                "{path} is not stable"
            );

            let mut unknown = record;
            unknown["bogusField"] = json!(1);
            let err = kind.check(unknown, None).expect_err(path);
            assert!(err[0].message.contains("bogusField"), "{path}: {err:?}");
        }
    }

    #[test]
    fn described_fields_exist() {
        for (path, fields) in minimal_records() {
            let kind = by_path(path).unwrap();
            let d = kind.desc();
            let out = kind.check(with_common(fields), None).unwrap();
            let has = |field: &str| {
                field
                    .split('.')
                    .try_fold(&out, |v, key| v.get(key))
                    .is_some()
            };
            let archive_fields: &[&str] = match (d.archive.is_archivable(), d.archived_at) {
                (false, _) => &[],
                (true, false) => &["isArchived"],
                (true, true) => &["isArchived", "archivedAt"],
            };
            let unique_fields = d.unique.iter().flat_map(|u| u.fields.iter());
            for field in d
                .search_columns
                .iter()
                .chain(d.read_only)
                .chain(d.immutable)
                .chain(d.patch_only)
                .chain(
                    d.default_sort
                        .iter()
                        .map(|f| f.strip_prefix('-').unwrap_or(f))
                        .collect::<Vec<_>>()
                        .iter(),
                )
                .chain(unique_fields)
                .chain(archive_fields)
                .chain(COMMON_READ_ONLY.iter().filter(|f| **f != "archivedAt"))
            {
                assert!(has(field), "{path}: no field {field}");
            }
            if !d.archived_at {
                assert!(
                    out.get("archivedAt").is_none(),
                    "{path}: archivedAt without archived_at"
                );
            }
            if !d.archive.is_archivable() {
                assert!(
                    out.get("isArchived").is_none(),
                    "{path}: isArchived on a non-archivable resource"
                );
            }
        }
    }
}
