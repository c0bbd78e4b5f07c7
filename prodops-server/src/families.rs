//! The binding of every resource to its hooks (composition root): the one exhaustive match
//! over `ResourceId`, naming the hook types of every resource family. The resource table built
//! from it at start ([`resources`]) is what the engine serves; it never names a family itself.

use std::sync::Arc;

use prodops_core::registry::ResourceId;

use crate::engine::Resources;
use crate::engine::hooks::{Hooks, NoHooks};

/// Every resource with the hooks of its family: the table the server is built with (once, at
/// start) and every request's context carries.
pub fn resources() -> Resources {
    Resources::new(for_resource)
}

/// The hooks of the resource `id`.
pub fn for_resource(id: ResourceId) -> Arc<dyn Hooks> {
    bound(id).0
}

/// The hooks of the resource `id`, with the name of their type (which the test of this
/// binding reads). No wildcard arm: a new resource does not compile until it is given its
/// hooks here, `NoHooks` included.
fn bound(id: ResourceId) -> (Arc<dyn Hooks>, &'static str) {
    use crate::{catalog, workers};
    use crate::{deliverables, deliveries, documents, inventory, members, notifications};
    use crate::{lots, production, qc, webhooks};
    match id {
        ResourceId::Worker => bind(workers::WorkerHooks),
        ResourceId::CatalogEntry => bind(catalog::CatalogHooks),
        ResourceId::Deliverable => bind(deliverables::hooks::DeliverableHooks { concept: false }),
        ResourceId::Dependency => bind(deliverables::dependencies::DependencyHooks),
        ResourceId::WorkSession => bind(deliverables::hooks::WorkSessionHooks),
        ResourceId::Document => bind(documents::DocumentHooks),
        ResourceId::DocumentVersion => bind(documents::VersionHooks),
        ResourceId::QcTemplate => bind(qc::QcTemplateHooks),
        ResourceId::QcSet => bind(qc::QcSetHooks),
        ResourceId::OrganizationMember => bind(members::MemberHooks),
        ResourceId::Comment => bind(notifications::CommentHooks),
        ResourceId::Delivery => bind(deliveries::DeliveryHooks),
        ResourceId::DeliveryManifestLine => bind(deliveries::ManifestHooks),
        ResourceId::InventoryTransaction => bind(inventory::LedgerHooks),
        ResourceId::Item => bind(inventory::units::ItemHooks),
        ResourceId::Lot => bind(lots::LotHooks),
        ResourceId::UnitMeasure => bind(inventory::units::UnitHooks),
        ResourceId::ProductionOutput | ResourceId::BomLine => bind(production::PlanHooks),
        ResourceId::Webhook => bind(webhooks::WebhookHooks),
        ResourceId::Vendor
        | ResourceId::Contact
        | ResourceId::CustomProperty
        | ResourceId::DeliveryStop
        | ResourceId::DeliveryLeg
        | ResourceId::DeliveryCargoSpan
        | ResourceId::Role
        | ResourceId::Notification
        | ResourceId::Location
        | ResourceId::Shop
        | ResourceId::Stage
        | ResourceId::Team
        | ResourceId::Project
        | ResourceId::Code
        | ResourceId::Note
        | ResourceId::Timesheet => bind(NoHooks),
    }
}

fn bind<H: Hooks + 'static>(hooks: H) -> (Arc<dyn Hooks>, &'static str) {
    (Arc::new(hooks), std::any::type_name::<H>())
}

#[cfg(test)]
mod tests {
    use std::any::type_name;
    use std::collections::BTreeMap;

    use prodops_core::registry;

    use super::*;
    use crate::{catalog, workers};
    use crate::{deliverables, deliveries, documents, inventory, members, notifications};
    use crate::{production, qc};

    proptest::proptest! {
        /// A tree write's event equals the engine's (the check lives with the tree's code, in
        /// `deliverables::tree::tests`; it runs on the server's resource table, whose hooks
        /// only this layer may name).
        #[test]
        fn tree_update_event_matches_the_json_one(mask in 0u32..(1 << 20), salt in 0u32..1000) {
            deliverables::tree::tests::tree_update_event_matches_the_json_one(
                std::sync::Arc::new(resources()),
                mask,
                salt,
            )?;
        }
    }

    /// Every registered resource gets the hooks it is served with, by path: the resources with
    /// hooks of their own are exactly these, every other one has `NoHooks`.
    #[test]
    fn every_resource_gets_its_hooks() {
        let expected: BTreeMap<&str, &str> = [
            ("worker", type_name::<workers::WorkerHooks>()),
            ("catalog-entry", type_name::<catalog::CatalogHooks>()),
            (
                "deliverable",
                type_name::<deliverables::hooks::DeliverableHooks>(),
            ),
            (
                "dependency",
                type_name::<deliverables::dependencies::DependencyHooks>(),
            ),
            (
                "deliverable/work-sessions",
                type_name::<deliverables::hooks::WorkSessionHooks>(),
            ),
            ("document", type_name::<documents::DocumentHooks>()),
            ("document-version", type_name::<documents::VersionHooks>()),
            ("qc-template", type_name::<qc::QcTemplateHooks>()),
            ("qc-set", type_name::<qc::QcSetHooks>()),
            ("organization-member", type_name::<members::MemberHooks>()),
            ("comment", type_name::<notifications::CommentHooks>()),
            ("delivery", type_name::<deliveries::DeliveryHooks>()),
            (
                "delivery-manifest-line",
                type_name::<deliveries::ManifestHooks>(),
            ),
            (
                "inventory-transaction",
                type_name::<inventory::LedgerHooks>(),
            ),
            ("production-output", type_name::<production::PlanHooks>()),
            ("bom-line", type_name::<production::PlanHooks>()),
            ("webhook", type_name::<crate::webhooks::WebhookHooks>()),
            ("item", type_name::<inventory::units::ItemHooks>()),
            ("lot", type_name::<crate::lots::LotHooks>()),
            ("unit-measure", type_name::<inventory::units::UnitHooks>()),
        ]
        .into();

        let mut with_hooks = BTreeMap::new();
        for kind in registry::resources() {
            let path = kind.desc().path;
            let id = ResourceId::of(*kind).unwrap_or_else(|| panic!("/{path} has no id"));
            let (_, hooks) = bound(id);
            if hooks != type_name::<NoHooks>() {
                with_hooks.insert(path, hooks);
            }
        }
        assert_eq!(with_hooks, expected);
    }

    /// The statements a bulk PUT of `records` to the resource `id` runs (the engine's bulk
    /// path with the resource's hooks, as `PUT /<path>/bulk` runs it), in organization
    /// `org` of `store`.
    async fn bulk_put_statements(
        store: &crate::store::Store,
        org: uuid::Uuid,
        id: ResourceId,
        records: Vec<serde_json::Value>,
    ) -> u64 {
        use crate::engine::bulk::{Prepared, bulk_put};
        use crate::store::counting::CountingTx;
        let path = id.kind().desc().path;
        let ctx = crate::http::context::Ctx::new(
            std::sync::Arc::new(resources()),
            crate::http::context::Auth {
                key_id: uuid::Uuid::new_v4(),
                org,
                admin: true,
                permissions: Default::default(),
                flags: Default::default(),
            },
            None,
        );
        let res = ctx.resource(id).clone();
        let body = serde_json::to_vec(&records).unwrap();
        let prepared = Prepared::new(
            &res,
            &ctx,
            store.filter_fields_written(res.table()),
            crate::http::app::RawJsonBody(body.into()),
        )
        .unwrap();
        store
            .write(move |tx| {
                let ctx = ctx.deferring();
                let mut counting = CountingTx::new(tx);
                crate::store::value_counts::counting_later(&mut counting, res.table(), |tx| {
                    bulk_put(tx, &ctx, &res, &prepared)?;
                    res.hooks.end_bulk(tx, &ctx, &res)
                })?;
                if std::env::var_os("PRODOPS_SHOW_STATEMENTS").is_some() {
                    for (text, n) in counting.by_text().into_iter().take(5) {
                        eprintln!("{path}: {n} x {text}");
                    }
                }
                // Rewrites of other records the writes change (a dependency's successor
                // becoming waiting) count too: `records::update_records` writes them together,
                // a statement per 500 records on both databases.
                Ok::<_, crate::http::error::ApiError>(counting.statements())
            })
            .await
            .unwrap_or_else(|e| panic!("bulk PUT of {} {path} records: {e:?}", records.len()))
    }

    /// The promise behind `Hooks::batch_creates`, `hold_hooked_creates`, `read_ahead` and
    /// `plain_create`: a bulk PUT's statements grow with its batches, not with its records.
    /// For each resource whose hooks make those promises, 1,000 creates run at most a
    /// handful of statements more than 100 do (the one-by-one path ran several per record).
    /// Runs on `PRODOPS_TEST_DATABASE_URL` when set (PostgreSQL), else on a SQLite file.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_bulk_puts_statements_grow_with_its_batches_not_its_records() {
        use serde_json::json;
        use uuid::Uuid;
        let dir = tempfile::tempdir().unwrap();
        let url = std::env::var("PRODOPS_TEST_DATABASE_URL")
            .unwrap_or_else(|_| format!("sqlite://{}", dir.path().join("t.db").display()));
        let store = crate::store::Store::open(&url).await.unwrap();
        let mut figures = Vec::new();
        for n in [100usize, 1_000] {
            let org = Uuid::now_v7();
            let workers = (0..n)
                .map(|i| json!({"name": format!("W{i}"), "customerIdentifier": format!("E{i}")}))
                .collect();
            let items = (0..n)
                .map(|i| json!({"name": format!("Item {i}")}))
                .collect();
            let order = Uuid::now_v7();
            let phases: Vec<Uuid> = (0..n).map(|_| Uuid::now_v7()).collect();
            let mut nodes = vec![json!({"id": order, "name": "O", "type": "order"})];
            nodes.extend(phases.iter().enumerate().map(|(i, id)| {
                json!({"id": id, "name": format!("P{i}"), "type": "phase", "parentId": order})
            }));
            let dependencies = phases
                .windows(2)
                .map(|w| json!({"predecessorId": w[0], "successorId": w[1]}))
                .collect();
            figures.push([
                bulk_put_statements(&store, org, ResourceId::Worker, workers).await,
                bulk_put_statements(&store, org, ResourceId::Item, items).await,
                bulk_put_statements(&store, org, ResourceId::Deliverable, nodes).await,
                bulk_put_statements(&store, org, ResourceId::Dependency, dependencies).await,
            ]);
        }
        let names = ["worker", "item", "deliverable", "dependency"];
        for (i, name) in names.iter().enumerate() {
            let (small, large) = (figures[0][i], figures[1][i]);
            eprintln!("{name}: {small} statements for 100 creates, {large} for 1,000");
            // 900 more records: at most one more statement per 30 of them.
            assert!(
                large <= small + 30,
                "a bulk PUT of {name} ran {small} statements for 100 creates and {large} for 1,000"
            );
        }
    }
}
