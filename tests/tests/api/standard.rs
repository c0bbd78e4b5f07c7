//! The standard endpoints (decisions.md 4, spec 4.1), exercised on worker, vendor and contact.

use std::collections::HashSet;

use prodops_tests::*;
use serde_json::Value;

fn set(ids: &[String]) -> HashSet<String> {
    ids.iter().cloned().collect()
}

fn names(n: usize, prefix: &str) -> Vec<Value> {
    (0..n)
        .map(|i| json!({"name": format!("{prefix}{i:03}")}))
        .collect()
}

// ---------------------------------------------------------------- list, paging, order

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_page_size_defaults_to_100_and_goes_up_to_10000() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let ids = api.bulk_put("worker", names(105, "w")).await;

    let resp = api.get("/worker").await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_list_shape(&resp);
    assert_eq!(
        resp.body["values"].as_array().unwrap().len(),
        100,
        "default pageSize 100"
    );
    assert_eq!(resp.body["totalCount"], 105);
    let page2 = api.list("worker", "page=2").await;
    assert_eq!(page2.len(), 5, "page 2 holds the rest");
    let all = api.list("worker", "pageSize=10000").await;
    assert_eq!(set(&ids_of(&all)), set(&ids));
    let some = api.list("worker", "pageSize=7&page=3").await;
    assert_eq!(some.len(), 7);
    let past_end = api.list("worker", "page=50").await;
    assert!(past_end.is_empty());

    for bad in [
        "pageSize=10001",
        "pageSize=0",
        "pageSize=-5",
        "page=0",
        "page=99999999999999999999",
    ] {
        for r in ["worker", "vendor", "contact"] {
            let resp = api.get(&format!("/{r}?{bad}")).await;
            assert_error(&resp, 400, "VALIDATION_ERROR");
        }
    }
    // The same bounds in a query body; a page far past the end is simply empty.
    for bad in [
        json!({"page": 0}),
        json!({"page": u64::MAX}),
        json!({"pageSize": 10001}),
    ] {
        assert_error(
            &api.post("/worker/query", bad).await,
            400,
            "VALIDATION_ERROR",
        );
    }
    let far = api
        .post(
            "/worker/query",
            json!({"page": 4294967295u64, "pageSize": 10000}),
        )
        .await;
    assert_eq!(far.status, 200, "{far}");
    assert_eq!(far.body["values"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_cover_every_record_once_in_a_stable_order() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    // Same name everywhere, so the order cannot come from the name alone.
    let bodies: Vec<Value> = (0..25)
        .map(|_| json!({"name": "Same Name", "type": "supplier"}))
        .collect();
    let ids = api.bulk_put("vendor", bodies).await;
    let mut paged = Vec::new();
    for page in 1..=3 {
        let values = api
            .list("vendor", &format!("pageSize=10&page={page}"))
            .await;
        assert_eq!(values.len(), if page < 3 { 10 } else { 5 });
        paged.extend(ids_of(&values));
    }
    assert_eq!(set(&paged).len(), 25, "no record twice: {paged:?}");
    assert_eq!(set(&paged), set(&ids));
    let whole = api.list_ids("vendor", "pageSize=100").await;
    assert_eq!(whole, paged, "pages concatenate to the whole list");
    assert_eq!(
        api.list_ids("vendor", "pageSize=100").await,
        whole,
        "the same order every time"
    );
    // The same holds for contacts.
    let cids = api
        .bulk_put(
            "contact",
            (0..12).map(|_| json!({"name": "Twin"})).collect(),
        )
        .await;
    let mut paged = api.list_ids("contact", "pageSize=5&page=1").await;
    paged.extend(api.list_ids("contact", "pageSize=5&page=2").await);
    paged.extend(api.list_ids("contact", "pageSize=5&page=3").await);
    assert_eq!(paged.len(), 12);
    assert_eq!(set(&paged), set(&cids));
}

// ---------------------------------------------------------------- filters, search, sort

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_list_filters_by_equality() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let a = api
        .create(
            "worker",
            json!({"name": "A", "status": "inactive", "customerIdentifier": "X1"}),
        )
        .await;
    let b = api
        .create("worker", json!({"name": "B", "customerIdentifier": "X2"}))
        .await;
    let c = api
        .create(
            "worker",
            json!({"name": "C", "status": "inactive", "customerIdentifier": "X3"}),
        )
        .await;
    let d = api
        .create("worker", json!({"name": "D", "customerIdentifier": "X4"}))
        .await;
    let did = d["id"].as_str().unwrap();
    let resp = api
        .patch(&format!("/worker/{did}"), json!({"isArchived": true}))
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    let id = |v: &Value| v["id"].as_str().unwrap().to_string();

    assert_eq!(
        set(&api.list_ids("worker", "status=inactive").await),
        set(&[id(&a), id(&c)])
    );
    assert_eq!(api.list_total("worker", "status=inactive").await, 2);
    assert_eq!(
        api.list_ids("worker", "customerIdentifier=X2").await,
        vec![id(&b)]
    );
    assert_eq!(
        api.list_ids("worker", "status=inactive&customerIdentifier=X1")
            .await,
        vec![id(&a)]
    );
    assert!(
        api.list_ids("worker", "status=inactive&customerIdentifier=X2")
            .await
            .is_empty()
    );
    assert!(api.list_ids("worker", "status=terminated").await.is_empty());
    assert_eq!(
        api.list_ids("worker", "isArchived=true").await,
        vec![id(&d)]
    );
    assert_eq!(api.list_total("worker", "isArchived=true").await, 1);
    assert_eq!(
        set(&api.list_ids("worker", "isArchived=false").await),
        set(&[id(&a), id(&b), id(&c)])
    );
    assert_eq!(
        set(&api.list_ids("worker", "").await),
        set(&[id(&a), id(&b), id(&c)])
    );
    // Equality, not substring: customerIdentifier=X matches nothing.
    assert!(
        api.list_ids("worker", "customerIdentifier=X")
            .await
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vendor_and_contact_lists_filter_by_equality() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let v1 = api
        .create(
            "vendor",
            json!({"name": "V1", "type": "supplier", "status": "active", "country": "US"}),
        )
        .await;
    let v2 = api
        .create(
            "vendor",
            json!({"name": "V2", "type": "manufacturer", "status": "inactive", "country": "CA"}),
        )
        .await;
    let v3 = api
        .create(
            "vendor",
            json!({"name": "V3", "type": "manufacturer", "status": "active", "country": "US"}),
        )
        .await;
    let id = |v: &Value| v["id"].as_str().unwrap().to_string();
    assert_eq!(
        set(&api.list_ids("vendor", "type=manufacturer").await),
        set(&[id(&v2), id(&v3)])
    );
    assert_eq!(
        api.list_ids("vendor", "status=inactive").await,
        vec![id(&v2)]
    );
    assert_eq!(api.list_ids("vendor", "country=CA").await, vec![id(&v2)]);
    assert_eq!(
        api.list_ids("vendor", "type=manufacturer&status=active")
            .await,
        vec![id(&v3)]
    );
    assert_eq!(api.list_ids("vendor", "type=supplier").await, vec![id(&v1)]);

    let c1 = api
        .create(
            "contact",
            json!({"name": "C1", "vendorId": id(&v1), "isPrimary": true, "role": "sales"}),
        )
        .await;
    let c2 = api
        .create(
            "contact",
            json!({"name": "C2", "vendorId": id(&v1), "isPrimary": false, "role": "support"}),
        )
        .await;
    let c3 = api
        .create(
            "contact",
            json!({"name": "C3", "vendorId": id(&v2), "isPrimary": true}),
        )
        .await;
    let c4 = api.create("contact", json!({"name": "C4"})).await;
    assert_eq!(c4["vendorId"], Value::Null);
    assert_eq!(
        set(&api
            .list_ids("contact", &format!("vendorId={}", id(&v1)))
            .await),
        set(&[id(&c1), id(&c2)])
    );
    assert_eq!(
        set(&api.list_ids("contact", "isPrimary=true").await),
        set(&[id(&c1), id(&c3)])
    );
    assert_eq!(api.list_ids("contact", "role=support").await, vec![id(&c2)]);
    assert_eq!(
        api.list_ids("contact", &format!("vendorId={}&isPrimary=true", id(&v1)))
            .await,
        vec![id(&c1)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_is_a_case_insensitive_substring_over_the_search_columns() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let alice = api
        .create(
            "worker",
            json!({"name": "Alice Smith", "customerIdentifier": "E-100"}),
        )
        .await;
    let alicia = api
        .create(
            "worker",
            json!({"name": "ALICIA Keys", "customerIdentifier": "E-200"}),
        )
        .await;
    let bob = api
        .create(
            "worker",
            json!({"name": "Bob Jones", "customerIdentifier": "emp-smith-7", "unionCode": "ZEBRA"}),
        )
        .await;
    let id = |v: &Value| v["id"].as_str().unwrap().to_string();
    assert_eq!(
        set(&api.list_ids("worker", "search=ali").await),
        set(&[id(&alice), id(&alicia)])
    );
    assert_eq!(
        set(&api.list_ids("worker", "search=SMITH").await),
        set(&[id(&alice), id(&bob)])
    );
    assert_eq!(
        api.list_ids("worker", "search=e-2").await,
        vec![id(&alicia)]
    );
    assert_eq!(
        api.list_ids("worker", &format!("search={}", enc("ice sm")))
            .await,
        vec![id(&alice)]
    );
    assert!(
        api.list_ids("worker", "search=zebra").await.is_empty(),
        "unionCode is not a search column"
    );
    assert_eq!(api.list_total("worker", "search=ali").await, 2);
    // Search combines with filters.
    assert_eq!(
        api.list_ids("worker", "search=smith&customerIdentifier=E-100")
            .await,
        vec![id(&alice)]
    );

    // Vendor: name, code, identifier.
    let v1 = api
        .create(
            "vendor",
            json!({"name": "Northern Steel", "code": "NST", "identifier": "VEN-001"}),
        )
        .await;
    let v2 = api
        .create("vendor", json!({"name": "Acme Bolts", "code": "ABX", "identifier": "VEN-002", "city": "Steelton"}))
        .await;
    assert_eq!(
        api.list_ids("vendor", "search=steel").await,
        vec![id(&v1)],
        "city is not searched"
    );
    assert_eq!(api.list_ids("vendor", "search=abx").await, vec![id(&v2)]);
    assert_eq!(
        set(&api.list_ids("vendor", "search=ven-00").await),
        set(&[id(&v1), id(&v2)])
    );

    // Contact: name, email, phone, title, companyName, identifier.
    let c1 = api
        .create(
            "contact",
            json!({"name": "Dana", "email": "Dana@Example.COM", "phone": "555-0101", "title": "Buyer"}),
        )
        .await;
    let c2 = api
        .create(
            "contact",
            json!({"name": "Eli", "companyName": "Trucking Co", "notes": "example notes"}),
        )
        .await;
    assert_eq!(
        api.list_ids("contact", "search=example.com").await,
        vec![id(&c1)],
        "notes are not searched"
    );
    assert_eq!(api.list_ids("contact", "search=0101").await, vec![id(&c1)]);
    assert_eq!(api.list_ids("contact", "search=BUYER").await, vec![id(&c1)]);
    assert_eq!(
        api.list_ids("contact", "search=trucking").await,
        vec![id(&c2)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sort_by_one_or_more_fields_ascending_or_descending() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    for (name, status) in [
        ("delta", "inactive"),
        ("alpha", "active"),
        ("charlie", "active"),
        ("bravo", "inactive"),
    ] {
        api.create("worker", json!({"name": name, "status": status}))
            .await;
    }
    let sorted = |q: &'static str| {
        let api = api.clone();
        async move { field_of(&api.list("worker", q).await, "name") }
    };
    assert_eq!(
        sorted("sort=name").await,
        ["alpha", "bravo", "charlie", "delta"]
    );
    assert_eq!(
        sorted("sort=-name").await,
        ["delta", "charlie", "bravo", "alpha"]
    );
    assert_eq!(
        sorted("sort=status,-name").await,
        ["charlie", "alpha", "delta", "bravo"]
    );
    assert_eq!(
        sorted("sort=-status,name").await,
        ["bravo", "delta", "alpha", "charlie"]
    );
    assert_eq!(
        sorted("sort=name&pageSize=2&page=2").await,
        ["charlie", "delta"]
    );

    for (name, days) in [("v-b", 5), ("v-a", 10), ("v-c", 1)] {
        api.create("vendor", json!({"name": name, "defaultLeadTimeDays": days}))
            .await;
    }
    let order = field_of(
        &api.list("vendor", "sort=defaultLeadTimeDays").await,
        "name",
    );
    assert_eq!(order, ["v-c", "v-b", "v-a"], "numeric sort");
    let order = field_of(
        &api.list("vendor", "sort=-defaultLeadTimeDays").await,
        "name",
    );
    assert_eq!(order, ["v-a", "v-b", "v-c"]);
}

// ---------------------------------------------------------------- read, create, update

fn assert_uuid_v7(id: &Value) {
    let id = id
        .as_str()
        .unwrap_or_else(|| panic!("id is a string: {id}"));
    let parsed = uuid::Uuid::parse_str(id).unwrap_or_else(|e| panic!("id {id} is a UUID: {e}"));
    assert_eq!(
        parsed.get_version_num(),
        7,
        "server-generated id {id} is a UUIDv7"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_create_fills_every_default() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let resp = api.post("/worker", json!({"name": "Only Name"})).await;
    assert_eq!(resp.status, 201, "{resp}");
    let w = &resp.body;
    assert_uuid_v7(&w["id"]);
    assert_eq!(w["organizationId"], json!(api.org_id.to_string()));
    assert_eq!(w["name"], "Only Name");
    assert_eq!(w["customerIdentifier"], "");
    assert_eq!(w["teamId"], Value::Null);
    assert!(
        w.as_object().unwrap().contains_key("teamId"),
        "teamId is present as null: {w}"
    );
    assert_eq!(w["status"], "active");
    assert_eq!(w["isArchived"], false);
    assert_eq!(w["exemptFromAssignments"], false);
    assert_eq!(w["unionCode"], Value::Null);
    assert!(w.as_object().unwrap().contains_key("unionCode"), "{w}");
    assert_eq!(w["qbBadgeLink"], Value::Null);
    assert!(w.as_object().unwrap().contains_key("qbBadgeLink"), "{w}");
    assert!(
        w["createdAt"].is_string() && w["updatedAt"].is_string(),
        "timestamps: {w}"
    );
    assert!(
        w.get("identifier").is_none(),
        "workers carry no identifier: {w}"
    );

    // GET by id returns the same record.
    let id = resp.id();
    assert_eq!(&api.read("worker", &id).await, w);

    // Two creates get two distinct ids.
    let other = api.create("worker", json!({"name": "Only Name"})).await;
    assert_ne!(other["id"], w["id"]);
    assert_uuid_v7(&other["id"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vendor_and_contact_create_and_read() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let v = api
        .create(
            "vendor",
            json!({"name": "Steel Co", "code": "ST", "type": "supplier", "status": "active",
                   "country": "US", "defaultLeadTimeDays": 7, "metadata": {"tier": 1}}),
        )
        .await;
    assert_uuid_v7(&v["id"]);
    assert_eq!(v["organizationId"], json!(api.org_id.to_string()));
    assert_eq!(v["isArchived"], false);
    assert_eq!(v["archivedAt"], Value::Null);
    assert_eq!(v["defaultLeadTimeDays"], 7);
    assert_eq!(v["metadata"], json!({"tier": 1}));
    let vid = v["id"].as_str().unwrap();
    assert_eq!(api.read("vendor", vid).await, v);

    let c = api
        .create(
            "contact",
            json!({"name": "Pat", "vendorId": vid, "email": "pat@example.com", "isPrimary": true}),
        )
        .await;
    assert_uuid_v7(&c["id"]);
    assert_eq!(c["vendorId"], json!(vid));
    assert_eq!(c["isPrimary"], true);
    assert_eq!(c["isArchived"], false);
    assert_eq!(c["archivedAt"], Value::Null);
    assert_eq!(api.read("contact", c["id"].as_str().unwrap()).await, c);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_honours_a_supplied_id_where_optional() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let id = uuid::Uuid::now_v7().to_string();
    let v = api
        .create("vendor", json!({"id": id, "name": "Chosen Id"}))
        .await;
    assert_eq!(v["id"], json!(id));
    assert_eq!(api.read("vendor", &id).await["name"], "Chosen Id");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_changes_only_the_given_fields() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let w = api
        .create(
            "worker",
            json!({"name": "Pat", "customerIdentifier": "P-1", "unionCode": "U7"}),
        )
        .await;
    let id = w["id"].as_str().unwrap();
    let resp = api
        .patch(
            &format!("/worker/{id}"),
            json!({"status": "terminated", "qbBadgeLink": "qb://1"}),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    let p = &resp.body;
    assert_eq!(p["status"], "terminated");
    assert_eq!(p["qbBadgeLink"], "qb://1");
    for field in [
        "id",
        "organizationId",
        "name",
        "customerIdentifier",
        "unionCode",
        "createdAt",
        "teamId",
    ] {
        assert_eq!(p[field], w[field], "{field} unchanged");
    }
    assert_eq!(&api.read("worker", id).await, p);
    // Setting a nullable field back to null.
    let resp = api
        .patch(&format!("/worker/{id}"), json!({"unionCode": null}))
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["unionCode"], Value::Null);

    let v = api
        .create("vendor", json!({"name": "V", "city": "Oslo"}))
        .await;
    let vid = v["id"].as_str().unwrap();
    let resp = api
        .patch(&format!("/vendor/{vid}"), json!({"status": "inactive"}))
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["status"], "inactive");
    assert_eq!(resp.body["city"], "Oslo");
    assert_eq!(resp.body["name"], "V");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_fields_are_ignored_so_a_read_record_can_be_written_back() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let bodies = [
        (
            "worker",
            json!({"name": "Pat", "customerIdentifier": "P-1"}),
        ),
        (
            "vendor",
            json!({"name": "V", "code": "VC", "metadata": {"a": [1, 2]}}),
        ),
        ("contact", json!({"name": "C", "email": "c@example.com"})),
    ];
    for (r, body) in bodies {
        let record = api.create(r, body).await;
        let id = record["id"].as_str().unwrap();
        // The record exactly as read, written back.
        let resp = api.patch(&format!("/{r}/{id}"), record.clone()).await;
        assert_eq!(resp.status, 200, "{r}: writing back a read record: {resp}");
        assert_eq!(
            without_timestamps(&resp.body),
            without_timestamps(&record),
            "{r}"
        );
        // Read-only fields with other values: ignored.
        let mut altered = record.clone();
        altered["id"] = json!(uuid::Uuid::new_v4().to_string());
        altered["organizationId"] = json!(uuid::Uuid::new_v4().to_string());
        altered["createdAt"] = json!("2001-01-01T00:00:00Z");
        altered["updatedAt"] = json!("2001-01-01T00:00:00Z");
        let resp = api.patch(&format!("/{r}/{id}"), altered).await;
        assert_eq!(resp.status, 200, "{r}: {resp}");
        assert_eq!(
            without_timestamps(&resp.body),
            without_timestamps(&record),
            "{r}"
        );
        assert_ne!(resp.body["updatedAt"], "2001-01-01T00:00:00Z", "{r}");
        let now = api.read(r, id).await;
        assert_eq!(now["createdAt"], record["createdAt"], "{r}");
        assert_eq!(api.list_total(r, "").await, 1, "{r}: no second record");
    }
    // On create, read-only timestamps and organizationId are ignored too.
    let created = api
        .create(
            "worker",
            json!({"name": "New", "organizationId": uuid::Uuid::new_v4().to_string(),
                   "createdAt": "2001-01-01T00:00:00Z", "updatedAt": "2001-01-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(created["organizationId"], json!(api.org_id.to_string()));
    assert_ne!(created["createdAt"], "2001-01-01T00:00:00Z");
    let created = api
        .create(
            "vendor",
            json!({"name": "NV", "archivedAt": "2001-01-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(created["archivedAt"], Value::Null);
}

// ---------------------------------------------------------------- query, count, group-and-count

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_by_ids_with_select_and_filter() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let ids = api
        .bulk_put(
            "worker",
            vec![
                json!({"name": "Q0", "status": "inactive", "customerIdentifier": "Q-0"}),
                json!({"name": "Q1"}),
                json!({"name": "Q2", "status": "inactive"}),
                json!({"name": "Q3"}),
            ],
        )
        .await;

    let resp = api
        .post("/worker/query", json!({"id": [ids[0], ids[3]]}))
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_list_shape(&resp);
    let values = resp.body["values"].as_array().unwrap();
    assert_eq!(set(&ids_of(values)), set(&[ids[0].clone(), ids[3].clone()]));
    assert_eq!(resp.body["totalCount"], 2);
    assert_eq!(
        values.iter().find(|v| v["id"] == json!(ids[0])).unwrap()["customerIdentifier"],
        "Q-0"
    );

    let resp = api
        .post(
            "/worker/query",
            json!({"id": [ids[1], ids[2]], "select": ["name"]}),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    for v in resp.body["values"].as_array().unwrap() {
        let keys: HashSet<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            HashSet::from(["id", "name"]),
            "select returns id and the selected fields: {v}"
        );
    }
    let got: HashSet<String> = field_of(resp.body["values"].as_array().unwrap(), "name")
        .into_iter()
        .collect();
    assert_eq!(got, HashSet::from(["Q1".to_string(), "Q2".to_string()]));

    let resp = api
        .post("/worker/query", json!({"filter": {"status": "inactive"}}))
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(
        set(&ids_of(resp.body["values"].as_array().unwrap())),
        set(&[ids[0].clone(), ids[2].clone()])
    );
    assert_eq!(resp.body["totalCount"], 2);

    let resp = api
        .post(
            "/worker/query",
            json!({"id": [ids[0], ids[1]], "filter": {"status": "inactive"}, "select": ["status", "customerIdentifier"]}),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(
        resp.body["values"],
        json!([{"id": ids[0], "status": "inactive", "customerIdentifier": "Q-0"}]),
        "{resp}"
    );

    let resp = api
        .post("/worker/query", json!({"pageSize": 3, "page": 1}))
        .await;
    assert_eq!(resp.body["values"].as_array().unwrap().len(), 3, "{resp}");
    assert_eq!(resp.body["totalCount"], 4, "{resp}");
    let resp2 = api
        .post("/worker/query", json!({"pageSize": 3, "page": 2}))
        .await;
    assert_eq!(resp2.body["values"].as_array().unwrap().len(), 1, "{resp2}");

    let resp = api.post("/worker/query", json!({})).await;
    assert_eq!(resp.body["totalCount"], 4, "{resp}");

    // Vendors: select a couple of fields.
    let v = api
        .create(
            "vendor",
            json!({"name": "QV", "code": "QC", "city": "Bergen"}),
        )
        .await;
    let resp = api
        .post(
            "/vendor/query",
            json!({"id": [v["id"]], "select": ["code", "city"]}),
        )
        .await;
    assert_eq!(
        resp.body["values"],
        json!([{"id": v["id"], "code": "QC", "city": "Bergen"}]),
        "{resp}"
    );

    // Contacts: ids, select and filter together.
    let cids = api
        .bulk_put(
            "contact",
            vec![
                json!({"name": "K0", "email": "k0@example.com", "isPrimary": true}),
                json!({"name": "K1", "email": "k1@example.com"}),
                json!({"name": "K2", "email": "k2@example.com", "isPrimary": true}),
            ],
        )
        .await;
    let resp = api
        .post(
            "/contact/query",
            json!({"id": [cids[0], cids[1]], "select": ["email"], "filter": {"isPrimary": true}}),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(
        resp.body["values"],
        json!([{"id": cids[0], "email": "k0@example.com"}]),
        "{resp}"
    );
    assert_eq!(resp.body["totalCount"], 1, "{resp}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn count_by_get_and_post() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    api.bulk_put(
        "worker",
        vec![
            json!({"name": "C0", "status": "inactive"}),
            json!({"name": "C1"}),
            json!({"name": "C2", "status": "inactive"}),
        ],
    )
    .await;
    assert_eq!(api.count("worker", "").await, 3);
    assert_eq!(api.count("worker", "status=inactive").await, 2);
    assert_eq!(api.count("worker", "status=terminated").await, 0);
    let resp = api
        .post("/worker/count", json!({"filter": {"status": "inactive"}}))
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body, json!({"count": 2}));
    let resp = api.post("/worker/count", json!({})).await;
    assert_eq!(resp.body, json!({"count": 3}), "{resp}");

    api.bulk_put(
        "contact",
        vec![json!({"name": "a", "role": "x"}), json!({"name": "b"})],
    )
    .await;
    assert_eq!(api.count("contact", "").await, 2);
    assert_eq!(api.count("contact", "role=x").await, 1);
    let resp = api.post("/vendor/count", json!({})).await;
    assert_eq!(resp.body, json!({"count": 0}), "{resp}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_and_count_largest_first() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let mut batch = Vec::new();
    for (status, n) in [("active", 1), ("inactive", 3), ("terminated", 2)] {
        for i in 0..n {
            batch.push(json!({"name": format!("{status}{i}"), "status": status, "customerIdentifier": format!("G{}", i % 2)}));
        }
    }
    api.bulk_put("worker", batch).await;
    let resp = api
        .post("/worker/group-and-count", json!({"groupByField": "status"}))
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(
        resp.body,
        json!({"values": [
            {"groupId": "inactive", "count": 3},
            {"groupId": "terminated", "count": 2},
            {"groupId": "active", "count": 1}
        ]}),
        "{resp}"
    );
    // With a filter: G0 holds inactive0, inactive2, terminated0, active0.
    let resp = api
        .post(
            "/worker/group-and-count",
            json!({"groupByField": "status", "filter": {"customerIdentifier": "G0"}}),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    let values = resp.body["values"].as_array().unwrap();
    assert_eq!(
        values[0],
        json!({"groupId": "inactive", "count": 2}),
        "{resp}"
    );
    assert_eq!(values.len(), 3, "{resp}");

    for (t, n) in [("supplier", 1), ("manufacturer", 2)] {
        for _ in 0..n {
            api.create("vendor", json!({"name": "g", "type": t})).await;
        }
    }
    let resp = api
        .post("/vendor/group-and-count", json!({"groupByField": "type"}))
        .await;
    assert_eq!(
        resp.body,
        json!({"values": [{"groupId": "manufacturer", "count": 2}, {"groupId": "supplier", "count": 1}]}),
        "{resp}"
    );

    let roles = [
        "driver", "receiver", "driver", "driver", "receiver", "sales",
    ];
    let contacts: Vec<Value> = roles
        .iter()
        .map(|r| json!({"name": "g", "role": r}))
        .collect();
    api.bulk_put("contact", contacts).await;
    let resp = api
        .post("/contact/group-and-count", json!({"groupByField": "role"}))
        .await;
    assert_eq!(
        resp.body,
        json!({"values": [
            {"groupId": "driver", "count": 3},
            {"groupId": "receiver", "count": 2},
            {"groupId": "sales", "count": 1}
        ]}),
        "{resp}"
    );
    let resp = api
        .post(
            "/contact/group-and-count",
            json!({"groupByField": "role", "filter": {"role": "receiver"}}),
        )
        .await;
    assert_eq!(
        resp.body,
        json!({"values": [{"groupId": "receiver", "count": 2}]}),
        "{resp}"
    );
}

// ---------------------------------------------------------------- bulk PATCH and DELETE

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_patch_with_a_filter_sets_fields_on_the_matches() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let ids = api
        .bulk_put(
            "worker",
            vec![
                json!({"name": "B0", "status": "inactive"}),
                json!({"name": "B1"}),
                json!({"name": "B2", "status": "inactive"}),
            ],
        )
        .await;
    let resp = api
        .patch("/worker/bulk?status=inactive", json!({"unionCode": "U1"}))
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body, json!({"count": 2}));
    assert_eq!(api.read("worker", &ids[0]).await["unionCode"], "U1");
    assert_eq!(api.read("worker", &ids[1]).await["unionCode"], Value::Null);
    assert_eq!(api.read("worker", &ids[2]).await["unionCode"], "U1");
    assert_eq!(
        api.read("worker", &ids[2]).await["name"],
        "B2",
        "other fields kept"
    );
    let resp = api
        .patch("/worker/bulk?status=terminated", json!({"unionCode": "U2"}))
        .await;
    assert_eq!(resp.body, json!({"count": 0}), "{resp}");
    // Filter with search.
    let resp = api
        .patch(
            "/worker/bulk?search=b1",
            json!({"exemptFromAssignments": true}),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body, json!({"count": 1}), "{resp}");
    assert_eq!(
        api.read("worker", &ids[1]).await["exemptFromAssignments"],
        true
    );

    // An invalid body changes nothing.
    let resp = api
        .patch("/worker/bulk?status=inactive", json!({"status": "retired"}))
        .await;
    assert_error(&resp, 400, "VALIDATION_ERROR");
    assert_eq!(api.count("worker", "status=inactive").await, 2);

    for t in ["supplier", "supplier", "manufacturer"] {
        api.create("vendor", json!({"name": "bv", "type": t})).await;
    }
    let resp = api
        .patch("/vendor/bulk?type=supplier", json!({"status": "inactive"}))
        .await;
    assert_eq!(resp.body, json!({"count": 2}), "{resp}");
    assert_eq!(api.list_total("vendor", "status=inactive").await, 2);
    assert_eq!(
        api.list_total("vendor", "status=inactive&type=manufacturer")
            .await,
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_patch_without_a_filter_is_400_and_changes_nothing() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    api.bulk_put("worker", names(3, "np")).await;
    api.bulk_put("vendor", names(2, "nv")).await;
    let before_w = api.list("worker", "").await;
    let before_v = api.list("vendor", "").await;
    assert_error(
        &api.patch("/worker/bulk", json!({"status": "inactive"}))
            .await,
        400,
        "VALIDATION_ERROR",
    );
    assert_error(
        &api.patch("/worker/bulk?", json!({"status": "inactive"}))
            .await,
        400,
        "VALIDATION_ERROR",
    );
    assert_error(
        &api.patch("/vendor/bulk", json!({"status": "inactive"}))
            .await,
        400,
        "VALIDATION_ERROR",
    );
    assert_error(
        &api.patch("/contact/bulk", json!({"role": "x"})).await,
        400,
        "VALIDATION_ERROR",
    );
    assert_eq!(api.list("worker", "").await, before_w);
    assert_eq!(api.list("vendor", "").await, before_v);
    assert_eq!(api.count("worker", "status=inactive").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_delete_without_a_filter_is_400_and_deletes_nothing() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    api.bulk_put("vendor", names(3, "dv")).await;
    api.bulk_put("contact", names(2, "dc")).await;
    assert_error(&api.delete("/vendor/bulk").await, 400, "VALIDATION_ERROR");
    assert_error(&api.delete("/contact/bulk").await, 400, "VALIDATION_ERROR");
    assert_eq!(api.list_total("vendor", "").await, 3);
    assert_eq!(api.list_total("contact", "").await, 2);
    assert_eq!(api.list_total("vendor", "isArchived=true").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_delete_with_a_filter_archives_the_matches() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    for t in ["supplier", "supplier", "manufacturer"] {
        api.create("vendor", json!({"name": "x", "type": t})).await;
    }
    let resp = api.delete("/vendor/bulk?type=supplier").await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body, json!({"count": 2}));
    assert_eq!(
        field_of(&api.list("vendor", "").await, "type"),
        ["manufacturer"]
    );
    let archived = api.list("vendor", "isArchived=true").await;
    assert_eq!(
        archived.len(),
        2,
        "vendors are archived, not removed: {archived:?}"
    );
    assert!(
        archived.iter().all(|v| v["archivedAt"].is_string()),
        "{archived:?}"
    );
}

// ---------------------------------------------------------------- bulk PUT

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_put_creates_and_upserts_in_input_order() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let existing = api
        .create(
            "worker",
            json!({"name": "Old Name", "customerIdentifier": "KEEP"}),
        )
        .await;
    let eid = existing["id"].as_str().unwrap().to_string();
    let resp = api
        .put(
            "/worker/bulk",
            json!([{"name": "New One"}, {"id": eid, "name": "Renamed", "customerIdentifier": "KEEP"}, {"name": "New Two", "status": "inactive"}]),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["count"], 3, "{resp}");
    let ids: Vec<String> = resp.body["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 3);
    assert_eq!(
        ids[1], eid,
        "the upserted record keeps its id, in input order"
    );
    assert_eq!(api.read("worker", &ids[0]).await["name"], "New One");
    assert_eq!(api.read("worker", &ids[2]).await["name"], "New Two");
    assert_eq!(api.read("worker", &ids[2]).await["status"], "inactive");
    let updated = api.read("worker", &eid).await;
    assert_eq!(updated["name"], "Renamed");
    assert_eq!(updated["createdAt"], existing["createdAt"]);
    assert_eq!(api.list_total("worker", "").await, 3);
    for id in &ids {
        assert_uuid_v7(&json!(id));
    }

    // Vendors: a client-chosen id that does not exist yet is created with that id.
    let fresh = uuid::Uuid::now_v7().to_string();
    let v = api.create("vendor", json!({"name": "Before"})).await;
    let vid = v["id"].as_str().unwrap().to_string();
    let ids = api
        .bulk_put(
            "vendor",
            vec![
                json!({"id": vid, "name": "After"}),
                json!({"id": fresh, "name": "Fresh"}),
                json!({"name": "Third"}),
            ],
        )
        .await;
    assert_eq!(ids[0], vid);
    assert_eq!(ids[1], fresh);
    assert_eq!(api.read("vendor", &vid).await["name"], "After");
    assert_eq!(api.read("vendor", &fresh).await["name"], "Fresh");
    assert_eq!(api.list_total("vendor", "").await, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_put_with_an_invalid_record_writes_nothing() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let existing = api.create("worker", json!({"name": "Untouched"})).await;
    let eid = existing["id"].as_str().unwrap();
    let before = api.total("worker").await;
    let resp = api
        .put(
            "/worker/bulk",
            json!([
                {"name": "Fine"},
                {"name": 5},
                {"id": eid, "name": "Would Change"},
                {},
                {"name": "Also Fine", "status": "bogus"}
            ]),
        )
        .await;
    let details = assert_error_details(&resp, 400, "VALIDATION_ERROR");
    let indices: HashSet<u64> = details.iter().filter_map(|d| d["index"].as_u64()).collect();
    assert_eq!(
        indices,
        HashSet::from([1, 3, 4]),
        "details name each failing index: {resp}"
    );
    assert_eq!(api.total("worker").await, before, "nothing written");
    assert_eq!(
        api.read("worker", eid).await,
        existing,
        "the valid upsert in the batch was not applied"
    );
    assert!(api.list("worker", "search=fine").await.is_empty());

    let resp = api
        .put(
            "/vendor/bulk",
            json!([{"name": "ok"}, {"name": "ok2"}, {"name": "bad", "type": "bogus"}]),
        )
        .await;
    let details = assert_error_details(&resp, 400, "VALIDATION_ERROR");
    let indices: HashSet<u64> = details.iter().filter_map(|d| d["index"].as_u64()).collect();
    assert_eq!(indices, HashSet::from([2]), "{resp}");
    assert_eq!(api.total("vendor").await, 0);

    let resp = api
        .put(
            "/contact/bulk",
            json!([{"email": "no-name@example.com"}, {"name": "ok"}]),
        )
        .await;
    let details = assert_error_details(&resp, 400, "VALIDATION_ERROR");
    assert!(details.iter().any(|d| d["index"] == 0), "{resp}");
    assert_eq!(api.total("contact").await, 0);

    // A body that is not an array.
    let resp = api
        .put("/worker/bulk", json!({"name": "not an array"}))
        .await;
    assert_error(&resp, 400, "VALIDATION_ERROR");
    assert_eq!(api.total("worker").await, before);
}
