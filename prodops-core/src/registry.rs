//! Every standard resource, in one list the server, the client and the CLI iterate over.

use crate::resource::{Kind, ResourceKind};

/// Declares [`ResourceId`] and the kinds of [`resources`] from one list, in the same order,
/// so that a resource cannot be registered without its id nor given an id without being
/// registered.
macro_rules! registry {
    ($($id:ident => $record:ty,)*) => {
        /// Which standard resource (not the `id` of a record). Code that decides something
        /// per resource (the server's hooks) matches on it without a wildcard arm, so that a
        /// new resource does not compile until each such decision is made for it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ResourceId {
            $($id,)*
        }

        impl ResourceId {
            /// Every standard resource, in the order of [`resources`].
            pub const ALL: &'static [ResourceId] = &[$(ResourceId::$id,)*];
        }

        static KINDS: &[&dyn ResourceKind] = &[$(&Kind::<$record>::new(),)*];
    };
}

/// Calls `$callback! { Id => path::Record, ... }` with every standard resource: its
/// [`ResourceId`] variant and its record type. The one list of resources: [`resources`] and
/// [`ResourceId`] come from it, and so can anything else written once per resource (the
/// client's typed inputs).
#[macro_export]
macro_rules! for_each_resource {
    ($callback:ident) => {
        $callback! {
            Worker => $crate::worker::Worker,
            Deliverable => $crate::deliverable::Deliverable,
            WorkSession => $crate::work_session::WorkSession,
            ProductionOutput => $crate::production::ProductionOutput,
            BomLine => $crate::production::BomLine,
            InventoryTransaction => $crate::inventory::InventoryTransaction,
            Vendor => $crate::vendor::Vendor,
            Contact => $crate::contact::Contact,
            CatalogEntry => $crate::catalog::CatalogEntry,
            CustomProperty => $crate::custom_property::CustomPropertyDefinition,
            Document => $crate::document::Document,
            DocumentVersion => $crate::document::DocumentVersion,
            Delivery => $crate::delivery::Delivery,
            DeliveryManifestLine => $crate::delivery::ManifestLine,
            DeliveryStop => $crate::delivery::Stop,
            DeliveryLeg => $crate::delivery::Leg,
            DeliveryCargoSpan => $crate::delivery::CargoSpan,
            QcTemplate => $crate::qc::QcTemplateVersion,
            QcSet => $crate::qc::QcSet,
            OrganizationMember => $crate::organization::OrganizationMember,
            Role => $crate::organization::Role,
            Notification => $crate::notification::Notification,
            Item => $crate::minimal::Item,
            Lot => $crate::lot::Lot,
            Location => $crate::minimal::Location,
            Shop => $crate::minimal::Shop,
            Stage => $crate::minimal::Stage,
            UnitMeasure => $crate::minimal::UnitMeasure,
            Team => $crate::minimal::Team,
            Project => $crate::minimal::Project,
            Code => $crate::minimal::Code,
            Dependency => $crate::minimal::Dependency,
            Comment => $crate::minimal::Comment,
            Note => $crate::minimal::Note,
            Timesheet => $crate::timesheet::Timesheet,
            Webhook => $crate::webhook::Webhook,
        }
    };
}

// All standard resources. Adding a resource type means adding one line to `for_each_resource!`.
for_each_resource!(registry);

impl ResourceId {
    /// The resource's kind.
    pub fn kind(self) -> &'static dyn ResourceKind {
        // `registry!` lists the kinds in the order of the variants.
        KINDS[self as usize]
    }

    /// The id of a registered kind (paths are unique among the registered resources); `None`
    /// for a kind that is not in [`resources`].
    pub fn of(kind: &dyn ResourceKind) -> Option<ResourceId> {
        let path = kind.desc().path;
        Self::ALL
            .iter()
            .copied()
            .find(|id| id.kind().desc().path == path)
    }
}

/// All standard resources (declared above with their [`ResourceId`]s).
pub fn resources() -> &'static [&'static dyn ResourceKind] {
    KINDS
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
            ("lot", json!({"itemId": A, "code": "L-4471"})),
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
            (
                "webhook",
                json!({"url": "https://hooks.example.com/", "eventTypes": ["*"]}),
            ),
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
    fn ids_name_their_kinds() {
        assert_eq!(ResourceId::ALL.len(), resources().len());
        for (i, id) in ResourceId::ALL.iter().enumerate() {
            assert_eq!(*id as usize, i, "{id:?} out of order");
            assert_eq!(id.kind().desc().path, resources()[i].desc().path);
            assert_eq!(ResourceId::of(id.kind()), Some(*id));
        }
        assert_eq!(ResourceId::Worker.kind().desc().path, "worker");
        assert_eq!(
            ResourceId::WorkSession.kind().desc().path,
            "deliverable/work-sessions"
        );
        assert_eq!(ResourceId::QcTemplate.kind().desc().path, "qc-template");
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
