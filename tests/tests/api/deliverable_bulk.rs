//! Deliverables at size: bulk writes refresh the tree once per batch and leave exactly the
//! computed fields writes one by one leave; `GET /deliverable/{id}/hierarchy` with `select`,
//! sent in parts for large subtrees, in hierarchy order; `GET /deliverable/roots`.

use std::collections::HashMap;

use prodops_tests::*;
use serde_json::Value;

use crate::deliverable::{D, node};

/// A shop and a stage resource with fixed ids, so that two organizations hold the same ones.
async fn fixed_stage(api: &Api, stage: &str, shop: &str) {
    api.create("shop", json!({"id": shop, "name": "Shop"}))
        .await;
    api.create("stage", json!({"id": stage, "name": "Cut", "shopId": shop}))
        .await;
}

/// An order tree as a list of records, parents before children: an order, two phases, three
/// components each, two stages per component (linked to `stage`), two steps per stage, with
/// workers, tags, due dates and a project spread over it.
fn tree(stage: &str) -> Vec<Value> {
    let id = |n: u32| format!("0191c3a8-0000-7000-8000-{n:012x}");
    let mut out = vec![json!({"id": id(1), "name": "Order", "type": "order",
        "data": {"dueDate": "2030-01-01", "projectId": id(9999)}})];
    let mut n = 10;
    for p in 0..2 {
        let phase = id(n);
        n += 1;
        out.push(
            json!({"id": phase, "name": format!("Phase {p}"), "type": "phase", "parentId": id(1),
            "data": {"tags": [format!("t{p}")]}}),
        );
        for c in 0..3 {
            let comp = id(n);
            n += 1;
            out.push(json!({"id": comp, "name": format!("Comp {p}.{c}"), "type": "component", "parentId": phase}));
            for s in 0..2 {
                let st = id(n);
                n += 1;
                out.push(json!({"id": st, "name": format!("Stage {p}.{c}.{s}"), "type": "stage", "parentId": comp,
                    "data": {"stageId": stage, "workerIds": [id(5000 + s)]}}));
                for k in 0..2 {
                    out.push(json!({"id": id(n), "name": format!("Step {k}"), "type": "step", "parentId": st,
                        "quantity": 1 + k, "data": {"dueDate": "2020-01-01"}}));
                    n += 1;
                }
            }
        }
    }
    out
}

/// Every deliverable of the organization as stored, `updatedAt` included, by id.
async fn stored(api: &Api) -> HashMap<String, Value> {
    api.list(D, "pageSize=10000&isArchived=false")
        .await
        .into_iter()
        .chain(api.list(D, "pageSize=10000&isArchived=true").await)
        .map(|v| (v["id"].as_str().unwrap().to_string(), v))
        .collect()
}

/// Every deliverable of the organization by id, without the fields that differ between two
/// organizations or two moments (`organizationId`, timestamps).
async fn snapshot(api: &Api) -> HashMap<String, Value> {
    let mut all = stored(api).await;
    for v in all.values_mut() {
        let m = v.as_object_mut().unwrap();
        for f in ["organizationId", "createdAt", "updatedAt"] {
            m.remove(f);
        }
    }
    all
}

/// Two organizations of one server, "One by one" and "Bulk", each holding the same stage
/// resource (with its shop); answers them and the stage's id.
async fn two_organizations(server: &TestServer) -> (Api, Api, &'static str) {
    let one = server.org("One by one").await;
    let bulk = server.org("Bulk").await;
    let (stage, shop) = (
        "0191c3a8-0000-7000-8000-00000000aaaa",
        "0191c3a8-0000-7000-8000-00000000bbbb",
    );
    fixed_stage(&one, stage, shop).await;
    fixed_stage(&bulk, stage, shop).await;
    (one, bulk, stage)
}

/// The names of a record's `computed.currentChildren`, in order.
fn names(v: &Value) -> Vec<String> {
    v["computed"]["currentChildren"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect()
}

/// Each of `changes` as its own request: a POST for a record with a `type`, else a PATCH of
/// the record its `id` names.
async fn one_by_one(api: &Api, changes: &[Value]) {
    for change in changes {
        let resp = if change.get("type").is_some() {
            api.post(&format!("/{D}"), change.clone()).await
        } else {
            let mut patch = change.clone();
            let id = patch.as_object_mut().unwrap().remove("id").unwrap();
            api.patch(&format!("/{D}/{}", id.as_str().unwrap()), patch)
                .await
        };
        assert!(resp.status == 200 || resp.status == 201, "{resp}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulk_write_leaves_the_computed_fields_of_writes_one_by_one() {
    let server = TestServer::start().await;
    let (one, bulk, stage) = two_organizations(&server).await;
    let records = tree(stage);
    let id = |n: u32| format!("0191c3a8-0000-7000-8000-{n:012x}");
    // Phase 0 is id(10) (ids 10..=31 are its subtree: component id(11), its first stage id(12)
    // with steps id(13) and id(14), ...), phase 1 is id(32). After the tree, in the same batch:
    // a rename of phase 0 (its subtree's breadcrumbs follow), a move of component id(11) with
    // its stages and steps to phase 1, a step archived, a new step under a stage created in the
    // batch, progress on a step.
    let later = vec![
        json!({"id": id(10), "name": "Phase 0 renamed"}),
        json!({"id": id(11), "parentId": id(32)}),
        json!({"id": id(14), "isArchived": true}),
        json!({"id": id(7000), "name": "Late step", "type": "step", "parentId": id(12)}),
        json!({"id": id(13), "progress": {"status": "done", "completed": 1, "percentage": 100}}),
    ];

    // One by one: a POST per record, then a POST or PATCH per change.
    one_by_one(&one, &records).await;
    one_by_one(&one, &later).await;

    // In bulk: the whole tree and the changes in one PUT.
    let mut all = records.clone();
    all.extend(later.iter().cloned());
    let r = bulk
        .put(&format!("/{D}/bulk"), Value::Array(all.clone()))
        .await;
    assert_eq!(r.status, 200, "{r}");

    let (a, b) = (snapshot(&one).await, snapshot(&bulk).await);
    assert_eq!(a.len(), records.len() + 1);
    assert_eq!(
        a.keys().collect::<std::collections::BTreeSet<_>>(),
        b.keys().collect()
    );
    for (id, want) in &a {
        assert_eq!(&b[id], want, "node {id}");
    }
    // The batch did what it says (not two equally wrong trees).
    assert_eq!(b[&id(11)]["parentId"], json!(id(32)));
    assert_eq!(
        b[&id(7000)]["computed"]["fullName"],
        json!(["Order", "Phase 1", "Comp 0.0", "Stage 0.0.0", "Late step"])
    );
    assert_eq!(b[&id(20)]["computed"]["fullName"][1], "Phase 0 renamed");
    assert_eq!(b[&id(12)]["computed"]["isLeaf"], false);
    assert_eq!(
        b[&id(10)]["computed"]["currentChildren"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        b[&id(32)]["computed"]["currentChildren"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    let order = &b[&id(1)];
    assert_eq!(order["computed"]["containedStageIds"], json!([stage]));
    assert_eq!(order["computed"]["combinedTagIds"], json!(["t0", "t1"]));
    assert_eq!(order["computed"]["isLate"], true);

    // The same batch again renames and moves back and forth within itself: the tree ends as
    // it was.
    let r = bulk.put(&format!("/{D}/bulk"), Value::Array(all)).await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(snapshot(&bulk).await, b);

    // A bulk PATCH (deferred the same way) renames every phase: the breadcrumbs follow.
    let r = bulk
        .patch(&format!("/{D}/bulk?type=phase"), json!({"name": "P"}))
        .await;
    assert_eq!(r.status, 200, "{r}");
    let step = bulk.read(D, &id(7000)).await;
    assert_eq!(step["computed"]["fullName"][1], "P");
    let order = bulk.read(D, &id(1)).await;
    assert_eq!(order["computed"]["currentChildren"][0]["name"], "P");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulk_move_under_its_own_subtree_is_refused() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let o = node(&api, "O", "order", None).await;
    let a = node(&api, "A", "phase", Some(&o)).await;
    let b = node(&api, "B", "phase", Some(&a)).await;
    // In one batch: C created under B, then A moved under C (a cycle through nodes whose
    // breadcrumbs the batch has not refreshed yet).
    let c = uuid::Uuid::now_v7().to_string();
    let r = api
        .put(
            &format!("/{D}/bulk"),
            json!([{"id": c, "name": "C", "type": "phase", "parentId": b},
                   {"id": a, "parentId": c}]),
        )
        .await;
    let details = assert_error_details(&r, 400, "VALIDATION_ERROR");
    assert_eq!(details[0]["index"], 1);
    assert_eq!(details[0]["field"], "parentId");
    assert_eq!(
        api.count(D, &format!("id={c}")).await,
        0,
        "nothing was written"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hierarchy_select_answers_id_and_the_selected_fields_in_order() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    api.create(
        "custom-property",
        json!({"key": "area", "name": "Area", "dataType": "number"}),
    )
    .await;
    let o = api
        .create(
            D,
            json!({"name": "O", "type": "order", "data": {"properties": {"area": 12.5}}}),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let a = node(&api, "A", "phase", Some(&o)).await;
    let b = node(&api, "B", "phase", Some(&o)).await;
    let a1 = node(&api, "A1", "component", Some(&a)).await;
    let full = api.get(&format!("/{D}/{o}/hierarchy")).await;
    assert_eq!(full.status, 200, "{full}");

    let r = api
        .get(&format!(
            "/{D}/{o}/hierarchy?select=name,parentId,data.properties.area,progress.status"
        ))
        .await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(r.body["totalCount"], 4);
    let values = r.body["values"].as_array().unwrap();
    assert_eq!(
        ids_of(values),
        ids_of(full.body["values"].as_array().unwrap())
    );
    assert_eq!(
        ids_of(values),
        [o.as_str(), a.as_str(), a1.as_str(), b.as_str()]
    );
    assert_eq!(
        values[0],
        json!({"id": o, "name": "O", "parentId": null, "dataPropertiesArea": 12.5, "progressStatus": null})
    );
    assert_eq!(
        values[2],
        json!({"id": a1, "name": "A1", "parentId": a, "dataPropertiesArea": null, "progressStatus": null})
    );
    // Keys in the order selected, `id` first; a whole nested object as it is stored; `id`
    // selected again answers once; a repeated parameter adds fields.
    let r = api
        .get(&format!(
            "/{D}/{a}/hierarchy?select=data,id,type&select=computed.fullName"
        ))
        .await;
    assert_eq!(r.status, 200, "{r}");
    let first = r.body["values"][0].as_object().unwrap();
    assert_eq!(
        first.keys().collect::<Vec<_>>(),
        ["id", "data", "type", "computedFullName"]
    );
    assert_eq!(first["computedFullName"], json!(["O", "A"]));
    let stored = api.read(D, &a).await;
    assert_eq!(first["data"], stored["data"]);
    // The same selection as POST /deliverable/query answers.
    let q = api
        .post(
            &format!("/{D}/query"),
            json!({"id": [a], "select": ["data", "type", "computed.fullName"]}),
        )
        .await;
    assert_eq!(Value::Object(first.clone()), q.body["values"][0]);

    // Unknown fields and parameters, an empty select: 400 naming them.
    let r = api
        .get(&format!("/{D}/{o}/hierarchy?select=name,bogus"))
        .await;
    assert_validation_names(&r, "bogus");
    let r = api.get(&format!("/{D}/{o}/hierarchy?select=")).await;
    assert_validation_names(&r, "select");
    let r = api.get(&format!("/{D}/{o}/hierarchy?fields=name")).await;
    assert_validation_names(&r, "fields");
    // Not found stays 404 with a select.
    let r = api
        .get(&format!(
            "/{D}/{}/hierarchy?select=name",
            uuid::Uuid::now_v7()
        ))
        .await;
    assert_error(&r, 404, "NOT_FOUND");
}

/// A subtree larger than one part of the body (about 256 KiB) and than one batch of record
/// reads (512 nodes), with siblings reordered so that no storage order matches the hierarchy's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_hierarchy_is_sent_in_parts_in_hierarchy_order() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let o = uuid::Uuid::now_v7().to_string();
    let mut records = vec![json!({"id": o, "name": "O", "type": "order"})];
    let mut kids: HashMap<String, Vec<String>> = HashMap::new();
    let mut phases = Vec::new();
    for p in 0..30 {
        let pid = uuid::Uuid::new_v4().to_string();
        records.push(json!({"id": pid, "name": format!("P{p}"), "type": "phase", "parentId": o}));
        kids.entry(o.clone()).or_default().push(pid.clone());
        phases.push(pid.clone());
        for c in 0..40 {
            let cid = uuid::Uuid::new_v4().to_string();
            records.push(
                json!({"id": cid, "name": format!("C{p}.{c}"), "type": "component",
                "parentId": pid, "data": {"tags": ["x".repeat(200)]}}),
            );
            kids.entry(pid.clone()).or_default().push(cid);
        }
    }
    let r = api.put(&format!("/{D}/bulk"), Value::Array(records)).await;
    assert_eq!(r.status, 200, "{r}");
    // The phases in reverse order.
    phases.reverse();
    let r = api
        .post(
            &format!("/{D}/reorder"),
            json!({"rootParentId": o, "orderedDeliverableIds": phases}),
        )
        .await;
    assert_eq!(r.status, 204, "{r}");
    kids.insert(o.clone(), phases.clone());
    let mut want = Vec::new();
    let mut stack = vec![o.clone()];
    while let Some(n) = stack.pop() {
        want.push(n.clone());
        if let Some(ks) = kids.get(&n) {
            stack.extend(ks.iter().rev().cloned());
        }
    }
    let r = api.get(&format!("/{D}/{o}/hierarchy")).await;
    assert_eq!(r.status, 200, "{r}");
    assert!(r.text.len() > 1 << 20, "large enough to go in parts");
    assert!(
        r.header("content-length").is_none(),
        "sent in parts (chunked), not as one buffer"
    );
    assert_eq!(r.body["totalCount"], 1231);
    assert_eq!(ids_of(r.body["values"].as_array().unwrap()), want);
    let r = api
        .get(&format!("/{D}/{o}/hierarchy?select=parentId"))
        .await;
    assert_eq!(ids_of(r.body["values"].as_array().unwrap()), want);
    // A small hierarchy is one buffer with its length.
    let r = api.get(&format!("/{D}/{}/hierarchy", phases[0])).await;
    assert_eq!(r.body["totalCount"], 41);
    assert!(r.header("content-length").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roots_are_the_tops_of_the_trees_with_the_list_parameters() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let o1 = node(&api, "Order 1", "order", None).await;
    let o2 = node(&api, "Order 2", "order", None).await;
    let route = node(&api, "Route", "route", None).await;
    let _p = node(&api, "Phase", "phase", Some(&o1)).await;
    let gone = node(&api, "Gone", "order", None).await;
    assert_eq!(api.delete(&format!("/{D}/{gone}")).await.status, 204);
    let stranger = server.org("Stranger").await;
    node(&stranger, "Theirs", "order", None).await;

    let r = api.get(&format!("/{D}/roots")).await;
    assert_eq!(r.status, 200, "{r}");
    assert_list_shape(&r);
    assert_eq!(r.body["totalCount"], 3);
    assert_eq!(
        ids_of(r.body["values"].as_array().unwrap()),
        [o1.as_str(), o2.as_str(), route.as_str()]
    );
    let r = api.get(&format!("/{D}/roots?type=order")).await;
    assert_eq!(
        ids_of(r.body["values"].as_array().unwrap()),
        [o1.as_str(), o2.as_str()]
    );
    let r = api.get(&format!("/{D}/roots?isArchived=true")).await;
    assert_eq!(
        ids_of(r.body["values"].as_array().unwrap()),
        [gone.as_str()]
    );
    let r = api.get(&format!("/{D}/roots?search=route")).await;
    assert_eq!(
        ids_of(r.body["values"].as_array().unwrap()),
        [route.as_str()]
    );
    let r = api
        .get(&format!("/{D}/roots?pageSize=2&page=2&sort=-name"))
        .await;
    assert_eq!(r.body["totalCount"], 3);
    assert_eq!(ids_of(r.body["values"].as_array().unwrap()), [o1.as_str()]);
    // A moved node is a root no more; a node moved to the top is one.
    let r = api
        .patch(&format!("/{D}/{o2}"), json!({"parentId": route}))
        .await;
    assert_eq!(r.status, 200, "{r}");
    let r = api.get(&format!("/{D}/roots")).await;
    assert_eq!(
        ids_of(r.body["values"].as_array().unwrap()),
        [o1.as_str(), route.as_str()]
    );
    let r = api.get(&format!("/{D}/roots?bogus=1")).await;
    assert_validation_names(&r, "bogus");
}

/// A bulk call of creates only holds the call's new tree rows back and writes them together,
/// numbering siblings as it goes, and its refresh takes the new nodes' children from the call
/// instead of reading them (`deliverables::tree::NewRows`): what it leaves is what the same
/// creates one by one leave, siblings in the order they were created (here against the order of
/// their ids), whether the parent is new in the call, from an earlier call with children of its
/// own, or named by a record without an id of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_creates_leave_the_tree_and_sibling_order_of_creates_one_by_one() {
    let server = TestServer::start().await;
    let one = server.org("One by one").await;
    let bulk = server.org("Bulk").await;
    // Ids that count down, so that sibling order (by creation) is not the order of the ids.
    let id = |n: u32| format!("0191c3a8-0000-7000-8000-{:012x}", 100_000 - n);
    let mut first = vec![json!({"id": id(1), "name": "Order", "type": "order"})];
    for p in 0..3 {
        let phase = id(10 + p);
        first.push(
            json!({"id": phase, "name": format!("Phase {p}"), "type": "phase", "parentId": id(1)}),
        );
        for s in 0..4 {
            first.push(
                json!({"id": id(100 + 10 * p + s), "name": format!("Step {p}.{s}"),
                "type": "step", "parentId": phase, "quantity": 1 + s}),
            );
        }
    }
    // A second call: more steps under a phase of the first (after its four), a new phase with
    // steps of its own, and a step without an id under it.
    let mut second = Vec::new();
    for s in 4..7 {
        second.push(json!({"id": id(100 + s), "name": format!("Step 0.{s}"), "type": "step", "parentId": id(10)}));
    }
    second.push(json!({"id": id(13), "name": "Phase 3", "type": "phase", "parentId": id(1)}));
    for s in 0..3 {
        second.push(json!({"id": id(130 + s), "name": format!("Step 3.{s}"), "type": "step", "parentId": id(13)}));
    }
    second.push(json!({"name": "Step 3.x", "type": "step", "parentId": id(13)}));

    for r in first.iter().chain(&second) {
        let resp = one.post(&format!("/{D}"), r.clone()).await;
        assert_eq!(resp.status, 201, "{resp}");
    }
    for call in [&first, &second] {
        let r = bulk
            .put(&format!("/{D}/bulk"), Value::Array(call.clone()))
            .await;
        assert_eq!(r.status, 200, "{r}");
    }

    let (a, b) = (snapshot(&one).await, snapshot(&bulk).await);
    assert_eq!(a.len(), first.len() + second.len());
    // The step without an id has a different id in each organization: compared by name.
    let by_name = |all: &HashMap<String, Value>| -> HashMap<String, Value> {
        let anonymous = all
            .values()
            .find(|x| x["name"] == "Step 3.x")
            .map(|x| x["id"].as_str().unwrap().to_string())
            .unwrap();
        all.values()
            .map(|v| {
                let text = v.to_string().replace(&anonymous, "ANONYMOUS");
                (
                    v["name"].as_str().unwrap().to_string(),
                    serde_json::from_str(&text).unwrap(),
                )
            })
            .collect()
    };
    let (a, b) = (by_name(&a), by_name(&b));
    for (name, want) in &a {
        assert_eq!(&b[name], want, "node {name}");
    }
    // Siblings in creation order, in the record and in the hierarchy.
    assert_eq!(
        names(&b["Phase 0"]),
        (0..7).map(|s| format!("Step 0.{s}")).collect::<Vec<_>>()
    );
    assert_eq!(
        names(&b["Phase 3"]),
        ["Step 3.0", "Step 3.1", "Step 3.2", "Step 3.x"]
    );
    assert_eq!(
        names(&b["Order"]),
        ["Phase 0", "Phase 1", "Phase 2", "Phase 3"]
    );
    assert_eq!(b["Phase 3"]["computed"]["isLeaf"], false);
    assert_eq!(b["Step 3.x"]["computed"]["isLeaf"], true);
    assert_eq!(
        hierarchy_names(&bulk, &id(1)).await,
        hierarchy_names(&one, &id(1)).await
    );
}

/// The names of a node's hierarchy, in hierarchy order.
async fn hierarchy_names(api: &Api, top: &str) -> Vec<String> {
    let r = api.get(&format!("/{D}/{top}/hierarchy?select=name")).await;
    assert_eq!(r.status, 200, "{r}");
    r.body["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap().to_string())
        .collect()
}

/// A bulk PUT reads ahead what its updates read (children, session workers, parents, stages'
/// shops) once for the call: what the call itself changes must still be seen by its later
/// records, and an unchanged tree put again must write nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_updates_that_read_ahead_leave_what_updates_one_by_one_leave() {
    let server = TestServer::start().await;
    let (one, bulk, stage) = two_organizations(&server).await;
    let records = tree(stage);
    for api in [&one, &bulk] {
        let r = api
            .put(&format!("/{D}/bulk"), Value::Array(records.clone()))
            .await;
        assert_eq!(r.status, 200, "{r}");
    }

    // The whole tree put again as read: nothing changes, so nothing is written.
    let before = stored(&bulk).await;
    let again: Vec<Value> = records
        .iter()
        .map(|r| before[r["id"].as_str().unwrap()].clone())
        .collect();
    let r = bulk.put(&format!("/{D}/bulk"), Value::Array(again)).await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(stored(&bulk).await, before, "an unchanged PUT wrote");

    // Children before their parents, in one call: stage id(12) has steps id(13), id(14);
    // stage id(15) has steps id(16), id(17).
    let id = |n: u32| format!("0191c3a8-0000-7000-8000-{n:012x}");
    let changes = vec![
        // A child renamed, then its parent: the parent sees the new name among its children.
        json!({"id": id(13), "name": "Step renamed"}),
        json!({"id": id(12), "name": "Stage renamed"}),
        // A child created under a stage, then the stage.
        json!({"id": id(7001), "name": "New step", "type": "step", "parentId": id(15), "quantity": 4}),
        json!({"id": id(15), "name": "Stage with a new step"}),
        // A child moved from one stage to the other, then both stages.
        json!({"id": id(14), "parentId": id(15)}),
        json!({"id": id(12), "name": "Stage left"}),
        json!({"id": id(15), "name": "Stage joined"}),
        // A child archived, then its parent.
        json!({"id": id(17), "isArchived": true}),
        json!({"id": id(15), "name": "Stage after the archive"}),
        // A parent changed before its children: they see it.
        json!({"id": id(11), "name": "Comp renamed"}),
        json!({"id": id(16), "quantity": 9}),
    ];
    one_by_one(&one, &changes).await;
    let r = bulk.put(&format!("/{D}/bulk"), Value::Array(changes)).await;
    assert_eq!(r.status, 200, "{r}");

    let (a, b) = (snapshot(&one).await, snapshot(&bulk).await);
    assert_eq!(a.len(), records.len() + 1);
    for (id, want) in &a {
        assert_eq!(b.get(id), Some(want), "node {id}");
    }
    assert_eq!(names(&b[&id(12)]), ["Step renamed"]);
    assert_eq!(names(&b[&id(15)]), ["Step 0", "New step", "Step 1"]);
    // Each update of the call was checked against the tree as the call had left it so far
    // (the refresh at the end would hide a stale read from the records): its event says so.
    let updates = |record: String| {
        let bulk = &bulk;
        async move {
            let r = bulk
                .get(&format!(
                    "/event?recordId={record}&type=deliverable.updated&limit=1000"
                ))
                .await;
            assert_eq!(r.status, 200, "{r}");
            r.body["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| {
                    let name = e["data"]["name"].as_str().unwrap().to_string();
                    (name, names(&e["data"]))
                })
                .collect::<HashMap<String, Vec<String>>>()
        }
    };
    let first = updates(id(12)).await;
    assert_eq!(first["Stage renamed"], ["Step renamed", "Step 1"]);
    let second = updates(id(15)).await;
    assert_eq!(
        second["Stage with a new step"],
        ["Step 0", "Step 1", "New step"]
    );
    assert_eq!(
        second["Stage joined"],
        ["Step 0", "Step 1", "New step", "Step 1"]
    );

    // And put again as read, after all that: still nothing to write.
    let before = stored(&bulk).await;
    let again: Vec<Value> = before.values().cloned().collect();
    let r = bulk.put(&format!("/{D}/bulk"), Value::Array(again)).await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(stored(&bulk).await, before, "an unchanged PUT wrote");
}

/// Bulk calls that create children under the same parents at the same time, through two
/// server processes' worth of connections (on PostgreSQL each call is its own transaction):
/// every child is listed under its parent once, siblings keep each call's order with no sort
/// key shared, and each parent's `computed.currentChildren` names every child. Before the tree
/// lock, a parent written by two calls at once kept the children of the last one only.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_bulk_calls_under_one_parent_lose_no_child() {
    let server = TestServer::start().await;
    let api = server.org("Concurrent tree").await;
    let other = server.another().await;
    let api_b = api.on(&other);
    let order = api
        .create("deliverable", json!({"name": "Order", "type": "order"}))
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let phases = api
        .bulk_put(
            "deliverable",
            (0..2)
                .map(|p| json!({"name": format!("Phase {p}"), "type": "phase", "parentId": order}))
                .collect(),
        )
        .await;
    // 8 calls of 150 stages, each spread over both phases, 4 at a time per server.
    let mut calls = Vec::new();
    for call in 0..8 {
        let api = if call % 2 == 0 {
            api.clone()
        } else {
            api_b.clone()
        };
        let phases = phases.clone();
        calls.push(tokio::spawn(async move {
            let rows: Vec<Value> = (0..150)
                .map(|i| {
                    json!({"name": format!("Stage {call}.{i:03}"), "type": "stage",
                           "parentId": phases[i % 2]})
                })
                .collect();
            api.bulk_put("deliverable", rows).await
        }));
    }
    for c in calls {
        c.await.unwrap();
    }
    for phase in &phases {
        let node = api.read("deliverable", phase).await;
        let listed: Vec<String> = node["computed"]["currentChildren"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(listed.len(), 600, "every child listed under its parent");
        // Each call's children stay together, in the call's order: no sort key is shared.
        let mut runs = 0;
        let mut last_call = None;
        for name in &listed {
            let call = name.split('.').next().unwrap().to_string();
            if last_call.as_ref() != Some(&call) {
                runs += 1;
                last_call = Some(call);
            }
        }
        assert_eq!(runs, 8, "each call's children in one run: {listed:?}");
        let children = api
            .list("deliverable", &format!("parentId={phase}&pageSize=1000"))
            .await;
        assert_eq!(children.len(), 600);
    }
}

/// A tree imported in batches of shuffled rows (each batch creating children under most
/// parents that earlier batches created, as `prodops deliverable import` of a shuffled file
/// does) ends where the same rows in one call end: every parent's computed fields
/// (`currentChildren` in sibling order, contained and current stage ids, workers, tags,
/// `isLeaf`, `lateAt`, alerts) as a recompute over all its children gives them. The refresh
/// takes a parent's new children into its stored fields without reading its other children
/// (core's `tree::compute_incremental`); the batches of updates that follow (stages done, so
/// that the work frontier moves; tags and due dates changed both ways) take the paths that
/// read every child of a parent, and end where the same updates in one call end too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_imported_in_shuffled_batches_ends_as_one_sorted_call() {
    let server = TestServer::start().await;
    let (batched, single, stage_a) = two_organizations(&server).await;
    let stage_b = "0191c3a8-0000-7000-8000-00000000aaab";
    for api in [&batched, &single] {
        api.create(
            "stage",
            json!({"id": stage_b, "name": "Weld", "shopId": "0191c3a8-0000-7000-8000-00000000bbbb"}),
        )
        .await;
    }
    let id = |n: u32| format!("0191c3a8-0000-7000-8000-{n:012x}");
    // A small deterministic shuffle (no dependency on a random crate).
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |below: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % below as u64) as usize
    };
    // (depth, record): 2 orders x 4 phases x 250 stages, a step under every tenth stage.
    let mut rows: Vec<(usize, Value)> = Vec::new();
    let mut n = 1;
    for o in 0..2 {
        let order = id(n);
        n += 1;
        rows.push((
            0,
            json!({"id": order, "name": format!("Order {o}"), "type": "order",
            "data": {"dueDate": format!("2030-0{}-01", o + 1)}}),
        ));
        for p in 0..4 {
            let phase = id(n);
            n += 1;
            rows.push((
                1,
                json!({"id": phase, "name": format!("Phase {o}.{p}"), "type": "phase",
                "parentId": order}),
            ));
            for s in 0..250u32 {
                let stage = id(n);
                n += 1;
                let mut data = json!({"stageId": if s % 3 == 0 { stage_b } else { stage_a },
                    "tags": [format!("t{}", s % 7)]});
                if s % 5 == 0 {
                    data["workerIds"] = json!([id(900_000 + s % 4)]);
                }
                if s % 11 == 0 {
                    data["dueDate"] = json!(format!("2020-01-{:02}", s % 28 + 1));
                }
                rows.push((
                    2,
                    json!({"id": stage, "name": format!("Stage {o}.{p}.{s:03}"),
                    "type": "stage", "parentId": phase, "data": data}),
                ));
                if s % 10 == 0 {
                    rows.push((
                        3,
                        json!({"id": id(n), "name": format!("Step {o}.{p}.{s:03}"),
                        "type": "step", "parentId": stage, "data": {"tags": ["deep"]}}),
                    ));
                    n += 1;
                }
            }
        }
    }
    // Shuffled, then parents before children (a stable sort by depth): siblings come in the
    // shuffled order, which is the sibling order both imports give them.
    for i in (1..rows.len()).rev() {
        rows.swap(i, next(i + 1));
    }
    rows.sort_by_key(|r| r.0);
    let rows: Vec<Value> = rows.into_iter().map(|r| r.1).collect();
    for chunk in rows.chunks(400) {
        batched.bulk_put(D, chunk.to_vec()).await;
    }
    single.bulk_put(D, rows.clone()).await;
    let (a, b) = (snapshot(&batched).await, snapshot(&single).await);
    assert_eq!(a.len(), rows.len());
    for (k, want) in &b {
        assert_eq!(&a[k], want, "node {k} after the import");
    }
    // Each phase lists its children in the order the rows came.
    let phase = rows.iter().find(|r| r["type"] == "phase").unwrap();
    let listed: Vec<&str> = a[phase["id"].as_str().unwrap()]["computed"]["currentChildren"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    let rows_order: Vec<&str> = rows
        .iter()
        .filter(|r| r["parentId"] == phase["id"])
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed.len(), 250);
    assert_eq!(listed, rows_order);
    assert_eq!(
        a[phase["id"].as_str().unwrap()]["computed"]["isLeaf"],
        false
    );

    // Updates: the first stages of each phase done (the frontier moves on), tags dropped and
    // due dates moved later on others: contributions that shrink. In batches, and in one call.
    let mut updates = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        if r["type"] != "stage" {
            continue;
        }
        let mut u = a[r["id"].as_str().unwrap()].clone();
        u.as_object_mut().unwrap().remove("computed");
        match i % 4 {
            0 => u["progress"] = json!({"status": "done", "percentage": 100.0}),
            1 => u["data"]["tags"] = json!([]),
            2 => u["data"]["dueDate"] = json!("2031-01-01"),
            _ => continue,
        }
        updates.push(u);
    }
    for chunk in updates.chunks(300) {
        let r = batched
            .put(&format!("/{D}/bulk"), Value::Array(chunk.to_vec()))
            .await;
        assert_eq!(r.status, 200, "{r}");
    }
    let r = single
        .put(&format!("/{D}/bulk"), Value::Array(updates.clone()))
        .await;
    assert_eq!(r.status, 200, "{r}");
    let (a, b) = (snapshot(&batched).await, snapshot(&single).await);
    for (k, want) in &b {
        assert_eq!(&a[k], want, "node {k} after the updates");
    }
}
