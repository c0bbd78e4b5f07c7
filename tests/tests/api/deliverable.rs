//! Deliverables (spec 2.1, 4.2): rootParentId and computed fields kept true through creates,
//! moves, renames and archives; hierarchy order; reorder; concept endpoints; bulk writes;
//! groups and group-and-count; query refusing grouped reads.

use prodops_tests::*;
use serde_json::Value;

pub const D: &str = "deliverable";

/// Creates a deliverable through the raw endpoint and returns its id.
pub async fn node(api: &Api, name: &str, kind: &str, parent: Option<&str>) -> String {
    let mut body = json!({"name": name, "type": kind});
    if let Some(p) = parent {
        body["parentId"] = json!(p);
    }
    api.create(D, body).await["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A stage resource in a new shop; returns (stage id, shop id).
pub async fn stage_resource(api: &Api, name: &str) -> (String, String) {
    let shop = api
        .create("shop", json!({"name": format!("{name} shop")}))
        .await;
    let shop = shop["id"].as_str().unwrap().to_string();
    let stage = api
        .create("stage", json!({"name": name, "shopId": shop}))
        .await;
    (stage["id"].as_str().unwrap().to_string(), shop)
}

/// A stage node linked to `stage`.
pub async fn stage_node(api: &Api, name: &str, parent: &str, stage: &str) -> String {
    api.create(
        D,
        json!({"name": name, "type": "stage", "parentId": parent, "data": {"stageId": stage}}),
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_string()
}

pub fn strs(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("array expected: {v}"))
        .iter()
        .map(|x| x.as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn computed_fields_follow_the_tree() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let (cut, cut_shop) = stage_resource(&api, "Cut").await;
    let (weld, _) = stage_resource(&api, "Weld").await;
    let order = node(&api, "Order 1", "order", None).await;
    let phase = node(&api, "Phase A", "phase", Some(&order)).await;
    let s1 = stage_node(&api, "Cutting", &phase, &cut).await;
    let s2 = stage_node(&api, "Welding", &phase, &weld).await;
    let worker = api.create("worker", json!({"name": "Ann"})).await;
    let worker = worker["id"].as_str().unwrap().to_string();
    let step = api
        .create(
            D,
            json!({"name": "Cut plates", "type": "step", "parentId": s1,
                   "data": {"workerIds": [worker], "tags": ["urgent"]}}),
        )
        .await;
    let step_id = step["id"].as_str().unwrap().to_string();

    assert_eq!(step["rootParentId"], json!(order));
    let c = &step["computed"];
    assert_eq!(c["rootType"], "order");
    assert_eq!(
        strs(&c["fullName"]),
        ["Order 1", "Phase A", "Cutting", "Cut plates"]
    );
    assert_eq!(
        strs(&c["fullPath"]),
        [
            order.as_str(),
            phase.as_str(),
            s1.as_str(),
            step_id.as_str()
        ]
    );
    assert_eq!(c["shopId"], json!(cut_shop));
    assert_eq!(c["phase"], "Phase A");
    assert_eq!(c["isLeaf"], true);
    assert_eq!(strs(&c["workerIds"]), [worker.as_str()]);

    let o = api.read(D, &order).await;
    assert_eq!(o["rootParentId"], Value::Null);
    let oc = &o["computed"];
    assert_eq!(oc["isLeaf"], false);
    let mut stages = vec![cut.clone(), weld.clone()];
    stages.sort();
    assert_eq!(strs(&oc["containedStageIds"]), stages);
    assert_eq!(strs(&oc["currentStageIds"]), [cut.as_str()]);
    assert_eq!(strs(&oc["currentPhaseNames"]), ["Phase A"]);
    assert_eq!(strs(&oc["containedPhaseNames"]), ["Phase A"]);
    assert_eq!(strs(&oc["combinedWorkerIds"]), [worker.as_str()]);
    assert_eq!(strs(&oc["combinedTagIds"]), ["urgent"]);
    assert_eq!(oc["currentChildren"][0]["id"], json!(phase));
    // The frontier is filterable.
    let ids = api
        .list_ids(D, &format!("computed.currentStageIds={cut}"))
        .await;
    assert!(ids.contains(&order) && ids.contains(&phase));
    assert!(!ids.contains(&s2));

    // A rename reaches every descendant's breadcrumb.
    api.patch(&format!("/{D}/{phase}"), json!({"name": "Phase B"}))
        .await;
    let step = api.read(D, &step_id).await;
    assert_eq!(
        strs(&step["computed"]["fullName"]),
        ["Order 1", "Phase B", "Cutting", "Cut plates"]
    );
    assert_eq!(step["computed"]["phase"], "Phase B");
    let o = api.read(D, &order).await;
    assert_eq!(strs(&o["computed"]["containedPhaseNames"]), ["Phase B"]);

    // Archiving a child drops it from its parent's aggregates.
    let r = api.delete(&format!("/{D}/{step_id}")).await;
    assert_eq!(r.status, 204, "{r}");
    let o = api.read(D, &order).await;
    assert_eq!(o["computed"]["combinedWorkerIds"], json!([]));
    let s = api.read(D, &s1).await;
    assert_eq!(s["computed"]["isLeaf"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moves_keep_root_and_breadcrumbs_true() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let o1 = node(&api, "O1", "order", None).await;
    let o2 = node(&api, "O2", "order", None).await;
    let p = node(&api, "P", "phase", Some(&o1)).await;
    let c = node(&api, "C", "component", Some(&p)).await;
    let leaf = node(&api, "L", "phase", Some(&c)).await;

    let r = api
        .patch(&format!("/{D}/{p}"), json!({"parentId": o2}))
        .await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(r.body["rootParentId"], json!(o2));
    let l = api.read(D, &leaf).await;
    assert_eq!(l["rootParentId"], json!(o2));
    assert_eq!(strs(&l["computed"]["fullName"]), ["O2", "P", "C", "L"]);
    assert_eq!(
        strs(&l["computed"]["phasesPath"]),
        ["P", "L"],
        "phase names from the root down, the node's own included"
    );
    let old_root = api.read(D, &o1).await;
    assert_eq!(old_root["computed"]["isLeaf"], true);
    assert_eq!(old_root["computed"]["containedPhaseNames"], json!([]));
    let new_root = api.read(D, &o2).await;
    assert_eq!(
        strs(&new_root["computed"]["containedPhaseNames"]),
        ["L", "P"]
    );

    // Under itself or a descendant: refused, nothing changed.
    let r = api
        .patch(&format!("/{D}/{p}"), json!({"parentId": leaf}))
        .await;
    assert_validation_names(&r, "parentId");
    let r = api
        .patch(&format!("/{D}/{p}"), json!({"parentId": p}))
        .await;
    assert_validation_names(&r, "parentId");
    // A parent that does not exist, or belongs to another organization.
    let other = server.org("Other").await;
    let foreign = node(&other, "X", "order", None).await;
    let r = api
        .patch(&format!("/{D}/{p}"), json!({"parentId": foreign}))
        .await;
    assert_validation_names(&r, "parentId");
    let r = api
        .post(
            &format!("/{D}"),
            json!({"name": "n", "type": "phase", "parentId": foreign}),
        )
        .await;
    assert_validation_names(&r, "parentId");
    // rootParentId and computed in a body are ignored (read-only).
    let r = api
        .patch(
            &format!("/{D}/{leaf}"),
            json!({"rootParentId": o1, "computed": {"isLeaf": false}}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(r.body["rootParentId"], json!(o2));

    // Moved to the top, a node becomes its own root.
    let r = api
        .patch(&format!("/{D}/{c}"), json!({"parentId": null}))
        .await;
    assert_eq!(r.status, 200, "{r}");
    let l = api.read(D, &leaf).await;
    assert_eq!(l["rootParentId"], json!(c));
    assert_eq!(l["computed"]["rootType"], "component");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hierarchy_and_reorder() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let o = node(&api, "O", "order", None).await;
    let a = node(&api, "A", "phase", Some(&o)).await;
    let b = node(&api, "B", "phase", Some(&o)).await;
    let a1 = node(&api, "A1", "component", Some(&a)).await;
    let b1 = node(&api, "B1", "component", Some(&b)).await;
    let a2 = node(&api, "A2", "component", Some(&a)).await;

    let r = api.get(&format!("/{D}/{o}/hierarchy")).await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(r.body["totalCount"], 6);
    let order: Vec<String> = ids_of(r.body["values"].as_array().unwrap());
    assert_eq!(
        order,
        [
            o.as_str(),
            a.as_str(),
            a1.as_str(),
            a2.as_str(),
            b.as_str(),
            b1.as_str()
        ]
    );
    let r = api.get(&format!("/{D}/{a}/hierarchy")).await;
    assert_eq!(
        ids_of(r.body["values"].as_array().unwrap()),
        [a.as_str(), a1.as_str(), a2.as_str()]
    );

    let r = api
        .post(
            &format!("/{D}/reorder"),
            json!({"rootParentId": o, "orderedDeliverableIds": [b, a2]}),
        )
        .await;
    assert_eq!(r.status, 204, "{r}");
    let r = api.get(&format!("/{D}/{o}/hierarchy")).await;
    let order: Vec<String> = ids_of(r.body["values"].as_array().unwrap());
    assert_eq!(
        order,
        [
            o.as_str(),
            b.as_str(),
            b1.as_str(),
            a.as_str(),
            a2.as_str(),
            a1.as_str()
        ]
    );
    let root = api.read(D, &o).await;
    assert_eq!(root["computed"]["currentChildren"][0]["id"], json!(b));

    // Ids outside the root, repeated ids, the root itself: 400.
    let other = node(&api, "O2", "order", None).await;
    let x = node(&api, "X", "phase", Some(&other)).await;
    for bad in [json!([x]), json!([a, a]), json!([o]), json!(["not-a-uuid"])] {
        let r = api
            .post(
                &format!("/{D}/reorder"),
                json!({"rootParentId": o, "orderedDeliverableIds": bad}),
            )
            .await;
        assert_error_details(&r, 400, "VALIDATION_ERROR");
    }
    // Unknown ids and other organizations: 404.
    let r = api
        .get(&format!("/{D}/{}/hierarchy", uuid::Uuid::now_v7()))
        .await;
    assert_error(&r, 404, "NOT_FOUND");
    let stranger = server.org("Stranger").await;
    let r = stranger.get(&format!("/{D}/{o}/hierarchy")).await;
    assert_error(&r, 404, "NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concept_endpoints_enforce_the_rules() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let (cut, _) = stage_resource(&api, "Cut").await;
    let order = api.create("concept/order", json!({"name": "O"})).await;
    assert_eq!(order["type"], "order");
    let o = order["id"].as_str().unwrap().to_string();
    let phase = api
        .create("concept/phase", json!({"name": "P", "parentId": o}))
        .await;
    let p = phase["id"].as_str().unwrap().to_string();

    // Nesting.
    let r = api.post("/concept/phase", json!({"name": "top"})).await;
    assert_validation_names(&r, "parentId");
    let r = api
        .post("/concept/order", json!({"name": "nested", "parentId": p}))
        .await;
    assert_validation_names(&r, "parentId");
    let r = api
        .post("/concept/step", json!({"name": "s", "parentId": p}))
        .await;
    assert_validation_names(&r, "parentId");
    // Stage linkage: required, a UUID, an existing stage.
    let r = api
        .post("/concept/stage", json!({"name": "s", "parentId": p}))
        .await;
    assert_validation_names(&r, "stageId");
    let r = api
        .post(
            "/concept/stage",
            json!({"name": "s", "parentId": p, "data": {"stageId": uuid::Uuid::now_v7()}}),
        )
        .await;
    assert_validation_names(&r, "stageId");
    let stage = api
        .create(
            "concept/stage",
            json!({"name": "s", "parentId": p, "data": {"stageId": cut}}),
        )
        .await;
    let s = stage["id"].as_str().unwrap().to_string();
    // QC steps need a template id.
    let r = api
        .post("/concept/qcstep", json!({"name": "q", "parentId": s}))
        .await;
    assert_validation_names(&r, "qcTemplateId");
    api.create(
        "concept/qcstep",
        json!({"name": "q", "parentId": s, "data": {"qcTemplateId": uuid::Uuid::now_v7()}}),
    )
    .await;
    let step = api
        .create("concept/step", json!({"name": "st", "parentId": s}))
        .await;
    let st = step["id"].as_str().unwrap().to_string();
    // Progress only on orders.
    let r = api
        .post(
            "/concept/step",
            json!({"name": "x", "parentId": s, "progress": {"status": "wip"}}),
        )
        .await;
    assert_validation_names(&r, "progress");
    // Type implied: another type in the body is refused; records of other types are not found.
    let r = api
        .post("/concept/order", json!({"name": "x", "type": "phase"}))
        .await;
    assert_validation_names(&r, "type");
    let r = api.get(&format!("/concept/order/{p}")).await;
    assert_error(&r, 404, "NOT_FOUND");
    let r = api
        .patch(&format!("/concept/order/{p}"), json!({"name": "y"}))
        .await;
    assert_error(&r, 404, "NOT_FOUND");
    assert_eq!(api.list_ids("concept/phase", "").await, [p.as_str()]);
    assert_eq!(api.count("concept/step", "").await, 1);
    // A move breaking the nesting is refused on the concept endpoint, allowed on the raw one.
    let r = api
        .patch(&format!("/concept/step/{st}"), json!({"parentId": o}))
        .await;
    assert_validation_names(&r, "parentId");
    let r = api
        .patch(&format!("/{D}/{st}"), json!({"parentId": o}))
        .await;
    assert_eq!(r.status, 200, "{r}");
    // The raw endpoints do not enforce the concept rules.
    let r = api
        .post(&format!("/{D}"), json!({"name": "loose", "type": "stage"}))
        .await;
    assert_eq!(r.status, 201, "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_writes_keep_the_tree_true() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let o = uuid::Uuid::now_v7().to_string();
    let p = uuid::Uuid::now_v7().to_string();
    let ids = api
        .bulk_put(
            D,
            vec![
                json!({"id": o, "name": "O", "type": "order"}),
                json!({"id": p, "name": "P", "type": "phase", "parentId": o}),
                json!({"name": "C", "type": "component", "parentId": p}),
            ],
        )
        .await;
    let c = api.read(D, &ids[2]).await;
    assert_eq!(c["rootParentId"], json!(o));
    assert_eq!(strs(&c["computed"]["fullName"]), ["O", "P", "C"]);
    // Re-putting the same records changes nothing.
    let before = api.read(D, &o).await;
    api.bulk_put(
        D,
        vec![
            json!({"id": o, "name": "O", "type": "order"}),
            json!({"id": p, "name": "P", "type": "phase", "parentId": o}),
        ],
    )
    .await;
    assert_eq!(api.read(D, &o).await, before);
    // One bad record: nothing written.
    let r = api
        .put(
            &format!("/{D}/bulk"),
            json!([{"name": "ok", "type": "phase", "parentId": o}, {"name": "", "type": "phase"}]),
        )
        .await;
    let details = assert_error_details(&r, 400, "VALIDATION_ERROR");
    assert_eq!(details[0]["index"], 1);
    assert_eq!(api.count(D, "name=ok").await, 0);
    assert_eq!(api.read(D, &o).await, before);
    // Bulk PATCH renames, and the descendants' breadcrumbs follow.
    let r = api
        .patch(&format!("/{D}/bulk?type=phase"), json!({"name": "Renamed"}))
        .await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(r.body["count"], 1);
    let c = api.read(D, &ids[2]).await;
    assert_eq!(strs(&c["computed"]["fullName"]), ["O", "Renamed", "C"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_and_counts() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let project = api.create("project", json!({"name": "Tower"})).await;
    let project = project["id"].as_str().unwrap().to_string();
    let o1 = api
        .create(D, json!({"name": "O1", "type": "order", "data": {"projectId": project, "tags": ["a", "b"]}}))
        .await;
    let o1 = o1["id"].as_str().unwrap().to_string();
    let p1 = node(&api, "P1", "phase", Some(&o1)).await;
    let o2 = node(&api, "O2", "order", None).await;

    let r = api
        .post(&format!("/{D}/groups"), json!({"groupBy": "project"}))
        .await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(r.body["groupBy"], "project");
    let values = r.body["values"].as_array().unwrap().clone();
    let tower = values
        .iter()
        .find(|v| v["groupId"] == json!(project))
        .unwrap();
    assert_eq!(
        tower["count"], 2,
        "the phase inherits its order's project: {r}"
    );
    let mut members = strs(&tower["deliverableIds"]);
    members.sort();
    let mut expected = vec![o1.clone(), p1.clone()];
    expected.sort();
    assert_eq!(members, expected);
    let none = values.iter().find(|v| v["groupId"].is_null()).unwrap();
    assert_eq!(strs(&none["deliverableIds"]), [o2.as_str()]);

    let r = api
        .post(&format!("/{D}/groups"), json!({"groupBy": "root"}))
        .await;
    let values = r.body["values"].as_array().unwrap();
    assert_eq!(values[0]["groupId"], json!(o1));
    assert_eq!(values[0]["count"], 2);
    let r = api
        .post(&format!("/{D}/groups"), json!({"groupBy": "tags"}))
        .await;
    let values = r.body["values"].as_array().unwrap();
    assert!(
        values
            .iter()
            .any(|v| v["groupId"] == "a" && v["count"] == 1)
    );
    for g in ["stage", "people"] {
        let r = api
            .post(&format!("/{D}/groups"), json!({"groupBy": g}))
            .await;
        assert_eq!(r.status, 200, "{r}");
    }
    let r = api
        .post(
            &format!("/{D}/groups"),
            json!({"groupBy": "project", "filter": {"type": "order"}}),
        )
        .await;
    let total: u64 = r.body["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["count"].as_u64().unwrap())
        .sum();
    assert_eq!(total, 2);
    let r = api
        .post(&format!("/{D}/groups"), json!({"groupBy": "color"}))
        .await;
    assert_validation_names(&r, "groupBy");
    let r = api.post(&format!("/{D}/groups"), json!({})).await;
    assert_error_details(&r, 400, "VALIDATION_ERROR");

    // Query refuses grouped reads.
    for body in [json!({"groupBy": "type"}), json!({"groupByField": "type"})] {
        let r = api.post(&format!("/{D}/query"), body).await;
        assert_error_details(&r, 400, "VALIDATION_ERROR");
    }
    let r = api
        .post(
            &format!("/{D}/group-and-count"),
            json!({"groupByField": "type"}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(r.body["values"][0], json!({"groupId": "order", "count": 2}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_lists_the_deliverable_endpoints() {
    let server = TestServer::start().await;
    let resp = server.anonymous().get("/openapi.json").await;
    assert_eq!(resp.status, 200, "{resp}");
    let paths = resp.body["paths"].as_object().unwrap();
    for path in [
        "/api/v2/deliverable/{id}/hierarchy",
        "/api/v2/deliverable/roots",
        "/api/v2/deliverable/groups",
        "/api/v2/deliverable/crew-time",
        "/api/v2/deliverable/reorder",
        "/api/v2/deliverable/root/{rootId}/progress/{id}",
        "/api/v2/deliverable/root/{rootId}/schedule/{id}",
        "/api/v2/deliverable/schedule/batch",
        "/api/v2/deliverable/work-sessions/save",
        "/api/v2/deliverable/work-sessions/stop",
        "/api/v2/concept/order",
        "/api/v2/concept/qcstep/{id}",
        "/api/v2/concept/template-phase/bulk",
    ] {
        assert!(paths.contains_key(path), "openapi.json lacks {path}");
    }
    let params = paths["/api/v2/deliverable/{id}/hierarchy"]["get"]["parameters"]
        .as_array()
        .unwrap();
    assert!(
        params.iter().any(|p| p["name"] == "select"),
        "the hierarchy's select is documented"
    );
    let schemas = resp.body["components"]["schemas"].as_object().unwrap();
    for schema in [
        "ProgressAction",
        "ScheduleAction",
        "SaveRequest",
        "StopRequest",
    ] {
        assert!(
            schemas.contains_key(schema),
            "openapi.json lacks the schema {schema}"
        );
    }
}
