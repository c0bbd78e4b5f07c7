//! The typed action methods against a real in-process server (the prodops-tests harness; set
//! `PRODOPS_TEST_DATABASE_URL` for PostgreSQL): each method's path, body and answer type match
//! the server's.

use prodops_client::actions::{PostInventory, StockParams};
use prodops_client::{Client, Config};
use prodops_core::delivery::{DeliveryStatus, LifecycleRequest, OutboundCreate, ReceiveRequest};
use prodops_core::document::{CopyMode, VersionCreate};
use prodops_core::inventory::TransactionType;
use prodops_core::notification::ReadDeliverableDocuments;
use prodops_core::organization::{InviteRequest, MemberStatus};
use prodops_core::production_actions::{
    ActualKind, AdjustActualRequest, ConsumeRequest, ProduceRequest, ProductionState,
};
use prodops_core::progress::ProgressAction;
use prodops_core::qc::QcTemplateVersionCreate;
use prodops_core::schedule::{ScheduleAction, ScheduleBatchItem};
use prodops_tests::*;
use serde_json::Value;
use uuid::Uuid;

fn client(server: &TestServer, api: &Api) -> Client {
    Client::new(Config::new(server.base_url(), api.key().unwrap())).unwrap()
}

/// The organization, key and credentials of a signed link `.../document/file/{org}/{key}?...`.
fn signed_link(link: &str) -> (Uuid, String, prodops_core::api::document::LinkQuery) {
    let rest = &link[link.find("/document/file/").unwrap() + "/document/file/".len()..];
    let (path, query) = rest.split_once('?').unwrap();
    let (org, key) = path.split_once('/').unwrap();
    let mut q = prodops_core::api::document::LinkQuery::default();
    for pair in query.split('&') {
        match pair.split_once('=') {
            Some(("expires", v)) => q.expires = v.parse().ok(),
            Some(("signature", v)) => q.signature = Some(v.to_string()),
            _ => {}
        }
    }
    (org.parse().unwrap(), key.to_string(), q)
}

fn uid(v: &Value) -> Uuid {
    v["id"].as_str().unwrap().parse().unwrap()
}

#[tokio::test]
async fn production_bom_inventory_and_deliverable_actions() {
    let server = TestServer::start().await;
    let api = server.org("ClientActions").await;
    let c = client(&server, &api);
    let shop = api.create("shop", json!({"name": "Weld"})).await;
    let loc = uid(&api
        .create("location", json!({"name": "Rack", "shopId": shop["id"]}))
        .await);
    let steel = uid(&api.create("item", json!({"name": "Steel"})).await);
    let frame = uid(&api.create("item", json!({"name": "Frame"})).await);
    let order = uid(&api
        .create(
            "deliverable",
            json!({"name": "Order 1", "type": "order", "quantity": 2}),
        )
        .await);
    let phase = uid(&api
        .create(
            "deliverable",
            json!({"name": "Weld", "type": "phase", "parentId": order}),
        )
        .await);
    api.create(
        "production-output",
        json!({"orderDeliverableId": order, "itemId": frame, "producedPerUnit": 1}),
    )
    .await;
    let line = api
        .create(
            "bom-line",
            json!({"orderDeliverableId": order, "itemId": steel, "quantity": 3, "mode": "total", "scaling": "per_order", "placedOnDeliverableId": phase}),
        )
        .await;

    // Inventory: a receipt-like adjust, then a refused negative posting (409, nothing written).
    let mut post = PostInventory::new(steel, TransactionType::Adjust, 10.0);
    post.to_location_id = Some(loc);
    let row = c.post_inventory(&post).await.unwrap();
    assert_eq!(row.quantity, 10.0);
    let mut too_much = PostInventory::new(steel, TransactionType::Return, 11.0);
    too_much.from_location_id = Some(loc);
    let err = c.post_inventory(&too_much).await.unwrap_err();
    assert_eq!(err.status(), Some(409), "{err}");

    // BOM: allocate the order's line, demand rollup sees it.
    let alloc = c
        .bom_allocate_order(order, &Default::default())
        .await
        .unwrap();
    assert_eq!(alloc.reservations.len(), 1, "{alloc:?}");
    assert_eq!(alloc.reservations[0].quantity, 3.0);
    let demand = c.bom_demand_rollup().await.unwrap();
    assert!(
        demand
            .iter()
            .any(|d| d.item_id == steel && d.reserved == 3.0),
        "{demand:?}"
    );
    assert_eq!(
        c.bom_materials_rollup(Uuid::new_v4())
            .await
            .unwrap_err()
            .status(),
        Some(404)
    );
    // An order without a project and no route: prepopulate names routeDeliverableId.
    let err = c
        .bom_prepopulate(order, &Default::default())
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(400));

    // Production: consume on the phase (the line is placed there), produce on the order, adjust,
    // status and entries.
    let consumed = c
        .consume(&ConsumeRequest {
            deliverable_id: phase,
            lines: None,
            from_location_id: Some(loc),
        })
        .await
        .unwrap();
    assert_eq!(consumed.transactions.len(), 1);
    assert_eq!(
        consumed.lines[0].id.to_string(),
        line["id"].as_str().unwrap()
    );
    let produced = c
        .produce(&ProduceRequest {
            deliverable_id: order,
            quantity_produced: 2.0,
            output_location_id: Some(loc),
            outputs: None,
            output_item_id: None,
        })
        .await
        .unwrap();
    assert_eq!(produced.transactions[0].quantity, 2.0);
    let adjusted = c
        .adjust_actual(&AdjustActualRequest {
            stamp_deliverable_id: order,
            kind: ActualKind::Produce,
            item_id: frame,
            delta: -1.0,
            lot_id: None,
        })
        .await
        .unwrap();
    assert_eq!(adjusted.output.unwrap().quantity_actual, 1.0);
    let status = c.production_status(order).await.unwrap();
    assert_eq!(status.state, ProductionState::InProgress);
    assert_eq!(status.outputs[0].actual, 1.0);
    assert_eq!(status.materials[0].actual, 3.0);
    let entries = c.production_entries(order, None, Some(2)).await.unwrap();
    assert_eq!(entries.total_count, 3);
    assert_eq!(entries.values.len(), 2);
    let stock = c
        .stock(&StockParams {
            location_id: Some(loc),
            ..Default::default()
        })
        .await
        .unwrap();
    let on_hand = |item| {
        stock
            .values
            .iter()
            .find(|s| s.item_id == item)
            .map(|s| s.on_hand)
    };
    assert_eq!(on_hand(steel), Some(7.0));
    assert_eq!(on_hand(frame), Some(1.0));

    // Deliverable actions: progress, schedule, batch, reorder, groups, crew time.
    let kicked = c
        .deliverable_progress(order, phase, &ProgressAction::SendAhead { quantity: 1.0 })
        .await
        .unwrap();
    assert!(kicked.kicked_workers.is_empty());
    let err = c
        .deliverable_progress(
            order,
            phase,
            &ProgressAction::SetPercentage { percentage: 120.0 },
        )
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(400));
    c.deliverable_schedule(
        order,
        phase,
        &ScheduleAction::Schedule {
            new_start: 1_735_689_600,
        },
    )
    .await
    .unwrap();
    c.deliverable_schedule_batch(&[ScheduleBatchItem {
        root_parent_id: order,
        target_id: phase,
        action: ScheduleAction::Drag {
            new_start: Some(1_735_776_000),
            new_finish: None,
        },
    }])
    .await
    .unwrap();
    let second = uid(&api
        .create(
            "deliverable",
            json!({"name": "Paint", "type": "phase", "parentId": order}),
        )
        .await);
    c.deliverable_reorder(order, &[second, phase])
        .await
        .unwrap();
    let tree = c.deliverable_hierarchy(order).await.unwrap();
    let names: Vec<&str> = tree
        .values
        .iter()
        .filter_map(|v| v["name"].as_str())
        .collect();
    assert_eq!(names, ["Order 1", "Paint", "Weld"]);
    let groups = c.deliverable_groups("root", None).await.unwrap();
    assert_eq!(groups["groupBy"], "root");
    let time = c.deliverable_crew_time(&[order]).await.unwrap();
    assert_eq!(time[order.to_string()]["totalSeconds"], 0);
}

#[tokio::test]
async fn document_member_notification_qc_and_delivery_actions() {
    let server = TestServer::start().await;
    let api = server
        .org_with_flags("ClientDocs", &["documentsHubEnabled"])
        .await;
    let c = client(&server, &api);
    let order = uid(&api
        .create("deliverable", json!({"name": "O", "type": "order"}))
        .await);

    // Documents: raw upload, Hub document, a second version, links, copy mode, counts.
    let file = c
        .upload_file(b"first".to_vec().into(), "text/plain")
        .await
        .unwrap();
    assert_eq!(file.size_bytes, 5);
    assert_eq!(file.mime_type.as_deref(), Some("text/plain"));
    let hub: prodops_core::document::HubBulkUpload = serde_json::from_value(json!({
        "documents": [{"name": "a.txt", "documentKey": file.document_key, "deliverableId": order}]
    }))
    .unwrap();
    let docs = c.hub_bulk_upload(&hub).await.unwrap();
    assert_eq!(docs.count, 1);
    let doc = docs.values[0].id;
    let second = c
        .upload_file(b"second!".to_vec().into(), "text/plain")
        .await
        .unwrap();
    let version: VersionCreate = serde_json::from_value(json!({
        "name": "a-v2.txt", "documentKey": second.document_key, "versionLabel": "v2"
    }))
    .unwrap();
    let v2 = c.create_document_version(doc, &version).await.unwrap();
    assert_eq!(v2.version_label.as_deref(), Some("v2"));
    let other = uid(&api
        .create("deliverable", json!({"name": "P", "type": "order"}))
        .await);
    let linked = c.link_document(doc, other).await.unwrap();
    assert_eq!(linked.linked_deliverable_ids, vec![other]);
    assert_eq!(linked.size_bytes, Some(7));
    let counts = c
        .document_counts_by_deliverable(&[order, other])
        .await
        .unwrap();
    assert_eq!(counts.len(), 2);
    let unlinked = c.unlink_document(doc, other).await.unwrap();
    assert!(unlinked.linked_deliverable_ids.is_empty());
    let moded = c
        .set_document_copy_mode(doc, CopyMode::Reference)
        .await
        .unwrap();
    assert_eq!(moded.copy_mode, Some(CopyMode::Reference));

    // The current version's signed link downloads through the typed call of its declaration.
    let read = api.read("document", &doc.to_string()).await;
    let link = read["documentUrl"]
        .as_str()
        .expect("a signed link")
        .to_string();
    let (org, key, query) = signed_link(&link);
    let bytes = c
        .call::<prodops_core::api::document::Download>((org, key), &query, &())
        .await
        .unwrap();
    assert_eq!(bytes, b"second!");

    // Notifications: the Hub upload notified; reading marks it read.
    c.read_deliverable_documents(&ReadDeliverableDocuments {
        deliverable_id: order,
        app_user_id: None,
    })
    .await
    .unwrap();

    // QC.
    let qc: QcTemplateVersionCreate =
        serde_json::from_value(json!({"name": "Weld check"})).unwrap();
    let v1 = c.publish_qc_template_version(&qc).await.unwrap();
    let mut next = qc.clone();
    next.qc_template_id = Some(v1.qc_template_id);
    assert_eq!(
        c.publish_qc_template_version(&next)
            .await
            .unwrap()
            .version_number,
        2
    );

    // Members: invite, outbox, resend, deactivate, reactivate, accept.
    let invite: InviteRequest =
        serde_json::from_value(json!({"email": "Ann@Example.com"})).unwrap();
    let member = c.invite_member(&invite).await.unwrap();
    assert_eq!(member.status, MemberStatus::Pending);
    c.resend_invitation(member.id).await.unwrap();
    let mail = c
        .outbox(Some("invitation"), Some("ann@example.com"))
        .await
        .unwrap();
    assert_eq!(mail.values.len(), 2);
    let token = mail.values[1]["payload"]["token"]
        .as_str()
        .unwrap()
        .to_string();
    let accepted = c.accept_invitation(&token).await.unwrap();
    assert_eq!(accepted.status, MemberStatus::Active);
    c.deactivate_member(member.id).await.unwrap();
    let read = api
        .read("organization-member", &member.id.to_string())
        .await;
    assert_eq!(read["status"], "inactive");
    c.reactivate_member(member.id).await.unwrap();
    assert_eq!(
        api.read("organization-member", &member.id.to_string())
            .await["status"],
        "active"
    );

    // Deliveries: inbound receive; outbound create, patch, start, complete, reads, archive.
    let shop = api.create("shop", json!({"name": "Main"})).await;
    let dock = uid(&api
        .create("location", json!({"name": "Dock", "shopId": shop["id"]}))
        .await);
    let bolt = uid(&api.create("item", json!({"name": "Bolt"})).await);
    let inbound = uid(&api.create("delivery", json!({"name": "Steel"})).await);
    api.create(
        "delivery-manifest-line",
        json!({"deliveryId": inbound, "itemId": bolt, "quantityExpected": 4, "locationId": dock}),
    )
    .await;
    let received = c
        .receive_delivery(inbound, &ReceiveRequest::default())
        .await
        .unwrap();
    assert_eq!(received.status, DeliveryStatus::Received);
    // A partial receive keeps it receiving; closing short ends it and records the shortfall.
    let short = uid(&api.create("delivery", json!({"name": "Nuts"})).await);
    let line = uid(&api
        .create(
            "delivery-manifest-line",
            json!({"deliveryId": short, "itemId": bolt, "quantityExpected": 5, "locationId": dock}),
        )
        .await);
    let part = c
        .receive_delivery(
            short,
            &serde_json::from_value::<ReceiveRequest>(
                json!({"lines": [{"manifestLineId": line, "quantity": 2}]}),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(part.status, DeliveryStatus::Expected);
    assert_eq!(part.partial, Some(true));
    let closed = c
        .close_delivery_short(
            short,
            &LifecycleRequest {
                reason: Some("supplier out".into()),
            },
        )
        .await
        .unwrap();
    assert_eq!(closed.status, DeliveryStatus::Received);
    assert_eq!(closed.last_reason.as_deref(), Some("supplier out"));
    assert_eq!(
        api.read("delivery-manifest-line", &line.to_string()).await["quantityShort"],
        3.0
    );
    let archived = c.archive_delivery(inbound).await.unwrap();
    assert!(archived.is_archived);
    assert!(!c.restore_delivery(inbound).await.unwrap().is_archived);
    let out = c
        .create_outbound_delivery(
            &serde_json::from_value::<OutboundCreate>(
                json!({"name": "Truck 1", "itemIds": [order]}),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(out.status, DeliveryStatus::Scheduled);
    let patched = c
        .patch_outbound_delivery(
            out.id,
            &serde_json::from_value(json!({"plannedStartAt": "2030-01-01T08:00:00Z", "plannedEndAt": "2030-01-01T12:00:00Z"})).unwrap(),
        )
        .await
        .unwrap();
    assert!(patched.planned_start_at.is_some());
    let it = c.delivery_itinerary(out.id).await.unwrap();
    assert_eq!(it["stops"].as_array().unwrap().len(), 2);
    assert_eq!(
        c.delivery_cargo_plan(out.id).await.unwrap()["cargoCount"],
        1
    );
    c.start_delivery(out.id, &LifecycleRequest::default())
        .await
        .unwrap();
    let done = c
        .complete_delivery(out.id, &LifecycleRequest::default())
        .await
        .unwrap();
    assert_eq!(done.status, DeliveryStatus::Delivered);
    let err = c
        .cancel_delivery(
            out.id,
            &LifecycleRequest {
                reason: Some("late".into()),
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(400));
}

/// QC gates through the typed client: a draft published and finalized, a QC set recorded with
/// core's `QcSet` type, the gate refusing a complete naming `qcSetId`, a failing verdict
/// sending the qcstep to rework, a passing one opening it.
#[tokio::test]
async fn qc_gate_through_the_typed_client() {
    use prodops_core::qc::{QcSet, Verdict};
    let server = TestServer::start().await;
    let api = server.org("ClientQc").await;
    let c = client(&server, &api);
    let draft: QcTemplateVersionCreate = serde_json::from_value(
        json!({"name": "Weld check", "isDraft": true, "questions": [{"text": "Bead even?", "required": true}]}),
    )
    .unwrap();
    let v = c.publish_qc_template_version(&draft).await.unwrap();
    assert!(v.is_draft);
    let mut fin = draft.clone();
    fin.qc_template_id = Some(v.qc_template_id);
    fin.is_draft = false;
    let finalized = c.publish_qc_template_version(&fin).await.unwrap();
    assert_eq!(
        (finalized.id, finalized.version_number, finalized.is_draft),
        (v.id, 1, false)
    );
    assert_eq!(finalized.questions[0].key.as_deref(), Some("q1"));

    let shop = api.create("shop", json!({"name": "Weld"})).await;
    let stage = api
        .create("stage", json!({"name": "Weld", "shopId": shop["id"]}))
        .await;
    let order = uid(&api
        .create("deliverable", json!({"name": "O", "type": "order"}))
        .await);
    let s = uid(&api
        .create(
            "deliverable",
            json!({"name": "S", "type": "stage", "parentId": order, "data": {"stageId": stage["id"]}}),
        )
        .await);
    let q = uid(&api
        .create(
            "deliverable",
            json!({"name": "q", "type": "qcstep", "parentId": s, "data": {"qcTemplateId": v.qc_template_id}}),
        )
        .await);

    let refused = c
        .deliverable_progress(order, q, &ProgressAction::Complete {})
        .await
        .unwrap_err();
    assert_eq!(refused.status(), Some(400));
    assert!(
        refused
            .details()
            .iter()
            .any(|d| d.field.as_deref() == Some("qcSetId")),
        "{refused}"
    );

    let sets = c.resource::<QcSet>();
    let set = sets
        .create(
            &json!({"templateId": v.id, "deliverableId": q, "verdict": "fail",
                        "answers": [{"questionKey": "q1", "value": false}]}),
        )
        .await
        .unwrap();
    assert_eq!(set.verdict, Some(Verdict::Fail));
    assert!(set.verdict_at.is_some() && set.verdict_by_id.is_some());
    let step = api.read("deliverable", &q.to_string()).await;
    assert_eq!(step["progress"]["status"], "rework");
    let passed = sets
        .update(
            set.id,
            &json!({"verdict": "pass", "answers": [{"questionKey": "q1", "value": true}]}),
        )
        .await
        .unwrap();
    assert_eq!(passed.verdict, Some(Verdict::Pass));
    c.deliverable_progress(order, q, &ProgressAction::Complete {})
        .await
        .unwrap();
    let step = api.read("deliverable", &q.to_string()).await;
    assert_eq!(step["progress"]["status"], "done");
}
