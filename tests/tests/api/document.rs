//! Documents (spec 2.9, 4.7): upload, signed links, Hub bulk upload, versions, links, copy
//! modes, the default filter, 405s, PATCH of `isArchived` only, permanent DELETE, counts.

use std::time::Duration;

use prodops_server::blob::FilesConfig;
use prodops_tests::*;
use serde_json::Value;

/// A server whose files go to a temporary directory (also on PostgreSQL), whose links work
/// for `ttl` on `clock`.
pub async fn start_with_ttl(ttl: Duration, clock: Clock) -> TestServer {
    let dir = std::env::temp_dir().join(format!("prodops-test-files-{}", unique()));
    TestServer::start_with(move |c| {
        c.files = Some(FilesConfig::Local(dir));
        c.document_link_ttl = ttl;
        c.clock = clock;
    })
    .await
}

pub async fn start() -> TestServer {
    start_with_ttl(Duration::from_secs(3600), Clock::system()).await
}

/// The `expires` a link names (Unix seconds).
fn expires_of(url: &str) -> i64 {
    let query = url.split_once('?').expect("a link has a query").1;
    query
        .split('&')
        .find_map(|p| p.strip_prefix("expires="))
        .and_then(|e| e.parse().ok())
        .unwrap_or_else(|| panic!("no expires in {url}"))
}

/// Uploads bytes; returns the documentKey.
pub async fn upload(api: &Api, bytes: &[u8], mime: &str) -> String {
    let resp = reqwest::Client::new()
        .post(format!("{}/document/upload", api.base()))
        .header("X-API-Key", api.key().unwrap())
        .header("Content-Type", mime)
        .body(bytes.to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["sizeBytes"], bytes.len() as u64);
    assert_eq!(body["mimeType"], mime);
    body["documentKey"].as_str().unwrap().to_string()
}

/// GET of an absolute link without a key: status and body bytes.
async fn fetch(url: &str) -> (u16, Vec<u8>, Value) {
    let resp = reqwest::get(url).await.unwrap();
    let status = resp.status().as_u16();
    let bytes = resp.bytes().await.unwrap().to_vec();
    let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, bytes, json)
}

fn assert_error_json(body: &Value, code: &str) {
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(body["error"]["requestId"].is_string(), "{body}");
}

pub async fn hub_upload(api: &Api, docs: Value) -> Vec<Value> {
    let resp = api
        .post("/document/hub/bulk-upload", json!({ "documents": docs }))
        .await;
    assert_eq!(resp.status, 201, "{resp}");
    resp.body["values"].as_array().unwrap().clone()
}

#[tokio::test]
async fn upload_link_download_and_the_default_filter() {
    let server = start().await;
    let api = server
        .org_with_flags("docs", &["documentsHubEnabled"])
        .await;
    let order = api
        .create("deliverable", json!({"name": "Order", "type": "order"}))
        .await;
    let key = upload(&api, b"%PDF drawing", "application/pdf").await;
    let hub_key = upload(&api, b"hub only", "text/plain").await;
    let docs = hub_upload(
        &api,
        json!([
            {"name": "drawing.pdf", "documentKey": key, "deliverableId": order["id"]},
            {"name": "policy.txt", "documentKey": hub_key}
        ]),
    )
    .await;
    let (attached, hub_only) = (&docs[0], &docs[1]);
    assert_eq!(attached["deliverableDocument"], true);
    assert_eq!(attached["isHub"], true);
    assert_eq!(attached["mimeType"], "application/pdf");
    assert_eq!(attached["sizeBytes"], 12);
    assert!(attached["currentVersionId"].is_string());
    assert_eq!(hub_only["deliverableDocument"], false);

    // Default filter: Hub-only documents are left out and are a 404 by id.
    let ids = api.list_ids("document", "").await;
    assert_eq!(ids, vec![attached["id"].as_str().unwrap().to_string()]);
    let hub_id = hub_only["id"].as_str().unwrap();
    assert_error(
        &api.get(&format!("/document/{hub_id}")).await,
        404,
        "NOT_FOUND",
    );
    let found = api
        .get(&format!("/document/{hub_id}?deliverableDocument=false"))
        .await;
    assert_eq!(found.status, 200, "{found}");
    assert_eq!(
        api.list("document", "deliverableDocument=false")
            .await
            .len(),
        1
    );
    assert_eq!(api.count("document", "").await, 1);
    let q = api
        .post(
            "/document/query",
            json!({"filter": {"deliverableDocument": false}}),
        )
        .await;
    assert_eq!(q.body["totalCount"], 1, "{q}");

    // documentUrl: generated on every read, downloads without a key.
    let read = api.read("document", attached["id"].as_str().unwrap()).await;
    let url = read["documentUrl"].as_str().unwrap().to_string();
    let (status, bytes, _) = fetch(&url).await;
    assert_eq!(status, 200);
    assert_eq!(bytes, b"%PDF drawing");
    let listed = api.list("document", "").await;
    assert!(
        listed[0]["documentUrl"]
            .as_str()
            .unwrap()
            .contains("signature=")
    );

    // Tampered links are refused in the error shape.
    let tampered_sig = format!("{}0", url.trim_end_matches(|c: char| c.is_ascii_hexdigit()));
    let (status, _, body) = fetch(&tampered_sig).await;
    assert_eq!(status, 403);
    assert_error_json(&body, "FORBIDDEN");
    let later = url.replace("expires=", "expires=9");
    let (status, _, body) = fetch(&later).await;
    assert_eq!(status, 403);
    assert_error_json(&body, "FORBIDDEN");
    let other_key = url.replace(&key, &hub_key);
    assert_eq!(fetch(&other_key).await.0, 403);
    let unsigned = url.split('?').next().unwrap().to_string();
    assert_eq!(fetch(&unsigned).await.0, 403);
}

#[tokio::test]
async fn links_expire() {
    // The server's clock stands still unless the test moves it: the link's lifetime is measured
    // on it, never raced against real time.
    let clock = Clock::manual();
    let server = start_with_ttl(Duration::from_secs(60), clock.clone()).await;
    let api = server
        .org_with_flags("docs", &["documentsHubEnabled"])
        .await;
    let key = upload(&api, b"short lived", "text/plain").await;
    let docs = hub_upload(
        &api,
        json!([{"name": "a.txt", "documentKey": key, "deliverableDocument": true}]),
    )
    .await;
    let url = docs[0]["documentUrl"].as_str().unwrap().to_string();
    let expires = expires_of(&url);
    assert_eq!(expires, clock.now_secs() + 60, "the link works for the TTL");
    assert_eq!(fetch(&url).await.0, 200);
    // Up to the last second of its lifetime it works; at its expiry it stops.
    clock.advance(Duration::from_secs(59));
    assert_eq!(fetch(&url).await.0, 200, "a second before it expires");
    clock.advance(Duration::from_secs(1));
    assert_eq!(clock.now_secs(), expires);
    let (status, _, body) = fetch(&url).await;
    assert_eq!(status, 403);
    assert_error_json(&body, "FORBIDDEN");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expired")
    );
    // A fresh read gives a fresh link, good for another TTL from now.
    let fresh = api.read("document", docs[0]["id"].as_str().unwrap()).await;
    let fresh = fresh["documentUrl"].as_str().unwrap();
    assert_eq!(expires_of(fresh), expires + 60);
    assert_eq!(fetch(fresh).await.0, 200);
    assert_eq!(fetch(&url).await.0, 403, "the old link stays expired");
}

#[tokio::test]
async fn another_organization_never_gets_the_file() {
    let server = start().await;
    let a = server.org_with_flags("a", &["documentsHubEnabled"]).await;
    let b = server.org_with_flags("b", &["documentsHubEnabled"]).await;
    let key = upload(&a, b"secret plans", "text/plain").await;
    let docs = hub_upload(
        &a,
        json!([{"name": "plans.txt", "documentKey": key, "deliverableDocument": true}]),
    )
    .await;
    let id = docs[0]["id"].as_str().unwrap();
    assert_error(&b.get(&format!("/document/{id}")).await, 404, "NOT_FOUND");
    assert_error(
        &b.get(&format!("/document/{id}?deliverableDocument=false"))
            .await,
        404,
        "NOT_FOUND",
    );
    // B cannot attach A's file by its key.
    let resp = b
        .post(
            "/document/hub/bulk-upload",
            json!({"documents": [{"name": "x", "documentKey": key}]}),
        )
        .await;
    assert_validation_names(&resp, "documentKey");
    // A link of A rewritten to B's organization is refused.
    let url = docs[0]["documentUrl"].as_str().unwrap();
    let forged = url.replace(&a.org_id.to_string(), &b.org_id.to_string());
    assert_eq!(fetch(&forged).await.0, 403);
    // B's own link to its own key cannot be pointed at A's key.
    let b_key = upload(&b, b"b file", "text/plain").await;
    let b_docs = hub_upload(
        &b,
        json!([{"name": "b.txt", "documentKey": b_key, "deliverableDocument": true}]),
    )
    .await;
    let b_url = b_docs[0]["documentUrl"].as_str().unwrap();
    assert_eq!(fetch(&b_url.replace(&b_key, &key)).await.0, 403);
    assert_eq!(fetch(b_url).await.1, b"b file");
}

#[tokio::test]
async fn generic_writes_are_limited() {
    let server = start().await;
    let api = server
        .org_with_flags("docs", &["documentsHubEnabled"])
        .await;
    let key = upload(&api, b"x", "text/plain").await;
    let docs = hub_upload(
        &api,
        json!([{"name": "a.txt", "documentKey": key, "deliverableDocument": true}]),
    )
    .await;
    let id = docs[0]["id"].as_str().unwrap();
    assert_error(
        &api.post("/document", json!({"name": "a"})).await,
        405,
        "METHOD_NOT_ALLOWED",
    );
    assert_error(
        &api.put(&format!("/document/{id}"), json!({"name": "a"}))
            .await,
        405,
        "METHOD_NOT_ALLOWED",
    );
    assert_error(
        &api.put("/document/bulk", json!([{"name": "a"}])).await,
        405,
        "METHOD_NOT_ALLOWED",
    );
    // PATCH: isArchived only.
    assert_validation_names(
        &api.patch(&format!("/document/{id}"), json!({"name": "b"}))
            .await,
        "name",
    );
    assert_validation_names(
        &api.patch(
            &format!("/document/{id}"),
            json!({"isArchived": true, "copyMode": "copy"}),
        )
        .await,
        "copyMode",
    );
    assert_validation_names(
        &api.patch("/document/bulk?isHub=true", json!({"name": "b"}))
            .await,
        "name",
    );
    let archived = api
        .patch(&format!("/document/{id}"), json!({"isArchived": true}))
        .await;
    assert_eq!(archived.status, 200, "{archived}");
    assert_eq!(archived.body["isArchived"], true);
    assert!(archived.body["documentUrl"].is_string());
    assert!(api.list_ids("document", "").await.is_empty());
    let restored = api
        .patch(
            "/document/bulk?isArchived=true",
            json!({"isArchived": false}),
        )
        .await;
    assert_eq!(restored.body["count"], 1, "{restored}");
    assert_eq!(api.list_ids("document", "").await.len(), 1);
}

#[tokio::test]
async fn versions_become_current_and_delete_is_permanent() {
    let server = start().await;
    let api = server
        .org_with_flags("docs", &["documentsHubEnabled"])
        .await;
    let key = upload(&api, b"rev a", "text/plain").await;
    let docs = hub_upload(
        &api,
        json!([{"name": "a.txt", "documentKey": key, "deliverableDocument": true}]),
    )
    .await;
    let id = docs[0]["id"].as_str().unwrap().to_string();
    let first_url = docs[0]["documentUrl"].as_str().unwrap().to_string();
    let key_b = upload(&api, b"revision b!", "application/pdf").await;
    let v = api
        .post(
            &format!("/document/{id}/versions"),
            json!({"name": "b.pdf", "versionLabel": "Rev B", "documentKey": key_b}),
        )
        .await;
    assert_eq!(v.status, 201, "{v}");
    assert_eq!(v.body["documentId"], id.as_str());
    assert_eq!(v.body["mimeType"], "application/pdf");
    assert!(v.body["documentUrl"].as_str().unwrap().contains(&key_b));
    let doc = api.read("document", &id).await;
    assert_eq!(doc["currentVersionId"], v.body["id"]);
    assert_eq!(doc["name"], "b.pdf");
    assert_eq!(doc["documentKey"], key_b.as_str());
    assert_eq!(doc["sizeBytes"], 11);
    assert_eq!(
        fetch(doc["documentUrl"].as_str().unwrap()).await.1,
        b"revision b!"
    );
    // The body form, with an external link.
    let ext = api
        .post(
            "/document-version",
            json!({"documentId": id, "name": "site", "documentUrl": "https://example.com/x.pdf"}),
        )
        .await;
    assert_eq!(ext.status, 201, "{ext}");
    let doc = api.read("document", &id).await;
    assert_eq!(doc["documentUrl"], "https://example.com/x.pdf");
    assert_eq!(doc["documentKey"], Value::Null);
    // Rules: a name and a file; a known key; a document of the organization.
    assert_validation_names(
        &api.post(
            &format!("/document/{id}/versions"),
            json!({"name": " ", "documentKey": key}),
        )
        .await,
        "name",
    );
    assert_error_details(
        &api.post(&format!("/document/{id}/versions"), json!({"name": "x"}))
            .await,
        400,
        "VALIDATION_ERROR",
    );
    assert_validation_names(
        &api.post(
            &format!("/document/{id}/versions"),
            json!({"name": "x", "documentKey": "00000000-0000-4000-8000-000000000000"}),
        )
        .await,
        "documentKey",
    );
    assert_error(
        &api.post(
            "/document/00000000-0000-4000-8000-000000000000/versions",
            json!({"name": "x", "documentKey": key}),
        )
        .await,
        404,
        "NOT_FOUND",
    );
    assert_eq!(
        api.list("document-version", &format!("documentId={id}"))
            .await
            .len(),
        3
    );
    // Version writes need Document.Update.
    let (reader, _) = server
        .key(&api, false, &["Document.Read", "Document.Create"])
        .await;
    assert_error(
        &reader
            .post(
                &format!("/document/{id}/versions"),
                json!({"name": "x", "documentKey": key}),
            )
            .await,
        403,
        "FORBIDDEN",
    );
    // Permanent DELETE: the document, its versions and its links are gone.
    let del = api.delete(&format!("/document/{id}")).await;
    assert_eq!(del.status, 204, "{del}");
    assert_error(
        &api.get(&format!("/document/{id}?deliverableDocument=true"))
            .await,
        404,
        "NOT_FOUND",
    );
    assert_eq!(api.total("document").await, 0);
    assert_eq!(api.total("document-version").await, 0);
    assert_eq!(fetch(&first_url).await.0, 404);
}

#[tokio::test]
async fn hub_endpoints_need_the_flag() {
    let server = start().await;
    let api = server
        .org_with_flags("docs", &["documentsHubEnabled"])
        .await;
    let key = upload(&api, b"x", "text/plain").await;
    let docs = hub_upload(
        &api,
        json!([{"name": "a.txt", "documentKey": key, "deliverableDocument": true}]),
    )
    .await;
    let id = docs[0]["id"].as_str().unwrap();
    server
        .running()
        .set_flag(api.org_id, "documentsHubEnabled=false", false)
        .await
        .unwrap();
    let resp = api
        .post(
            "/document/hub/bulk-upload",
            json!({"documents": [{"name": "a", "documentKey": key}]}),
        )
        .await;
    assert_error(&resp, 403, "FORBIDDEN");
    assert_error(
        &api.post(
            &format!("/document/{id}/versions"),
            json!({"name": "a", "documentKey": key}),
        )
        .await,
        403,
        "FORBIDDEN",
    );
    assert_error(
        &api.post(
            &format!("/document/{id}/copy-mode"),
            json!({"copyMode": "copy"}),
        )
        .await,
        403,
        "FORBIDDEN",
    );
    // Reads, counts, archive and restore, and DELETE remain.
    assert_eq!(api.read("document", id).await["name"], "a.txt");
    assert_eq!(
        api.patch(&format!("/document/{id}"), json!({"isArchived": true}))
            .await
            .status,
        200
    );
    assert_eq!(
        api.patch(&format!("/document/{id}"), json!({"isArchived": false}))
            .await
            .status,
        200
    );
    let counts = api
        .post(
            "/document/counts-by-deliverable",
            json!({"deliverableIds": []}),
        )
        .await;
    assert_eq!(counts.status, 200, "{counts}");
    assert_eq!(api.delete(&format!("/document/{id}")).await.status, 204);
}

#[tokio::test]
async fn links_copy_modes_and_counts() {
    let server = start().await;
    let api = server
        .org_with_flags("docs", &["documentsHubEnabled"])
        .await;
    let other = server.org("other").await;
    let d1 = api
        .create("deliverable", json!({"name": "O1", "type": "order"}))
        .await["id"]
        .clone();
    let d2 = api
        .create("deliverable", json!({"name": "O2", "type": "order"}))
        .await["id"]
        .clone();
    let foreign = other
        .create("deliverable", json!({"name": "F", "type": "order"}))
        .await["id"]
        .clone();
    let key = upload(&api, b"x", "text/plain").await;
    let docs = hub_upload(
        &api,
        json!([
            {"name": "a", "documentKey": key, "deliverableId": d1, "copyMode": "reference", "copyWithDeliverable": false, "deliverableDocument": true},
            {"name": "b", "documentKey": key, "deliverableId": d1, "copyWithDeliverable": true},
            {"name": "c", "documentKey": key}
        ]),
    )
    .await;
    // An explicit copy mode wins over the legacy booleans.
    assert_eq!(docs[0]["copyMode"], "reference");
    assert_eq!(docs[0]["copyWithDeliverable"], true);
    assert_eq!(docs[1]["copyMode"], Value::Null);
    let c = docs[2]["id"].as_str().unwrap();
    let changed = api
        .post(
            &format!("/document/{c}/copy-mode"),
            json!({"copyMode": "none"}),
        )
        .await;
    assert_eq!(changed.status, 200, "{changed}");
    assert_eq!(changed.body["copyMode"], "none");
    assert_validation_names(
        &api.post(
            &format!("/document/{c}/copy-mode"),
            json!({"copyMode": "link"}),
        )
        .await,
        "copyMode",
    );
    // Links.
    let linked = api
        .post(
            &format!("/document/{c}/links"),
            json!({"deliverableId": d2}),
        )
        .await;
    assert_eq!(linked.status, 200, "{linked}");
    assert_eq!(linked.body["deliverableId"], d2);
    let a = docs[0]["id"].as_str().unwrap();
    let linked = api
        .post(
            &format!("/document/{a}/links"),
            json!({"deliverableId": d2}),
        )
        .await;
    assert_eq!(linked.body["linkedDeliverableIds"], json!([d2]));
    assert_validation_names(
        &api.post(
            &format!("/document/{a}/links"),
            json!({"deliverableId": foreign}),
        )
        .await,
        "deliverableId",
    );
    let (limited, _) = server
        .key(&api, false, &["Document.Read", "Document.Update"])
        .await;
    assert_error(
        &limited
            .post(
                &format!("/document/{a}/links"),
                json!({"deliverableId": d2}),
            )
            .await,
        403,
        "FORBIDDEN",
    );
    // Counts: only the organization's deliverables, at most 1,000 ids.
    let counts = api
        .post(
            "/document/counts-by-deliverable",
            json!({"deliverableIds": [d1, d2, foreign]}),
        )
        .await;
    assert_eq!(counts.status, 200, "{counts}");
    assert_eq!(
        counts.body["values"],
        json!([{"groupId": d1, "count": 2}, {"groupId": d2, "count": 2}])
    );
    let unlinked = api
        .delete(&format!("/document/{a}/links/{}", d2.as_str().unwrap()))
        .await;
    assert_eq!(unlinked.status, 200, "{unlinked}");
    assert_eq!(unlinked.body["linkedDeliverableIds"], json!([]));
    let counts = api
        .post(
            "/document/counts-by-deliverable",
            json!({"deliverableIds": [d2]}),
        )
        .await;
    assert_eq!(counts.body["values"][0]["count"], 1);
    let many: Vec<String> = (0..1001)
        .map(|_| uuid::Uuid::new_v4().to_string())
        .collect();
    assert_validation_names(
        &api.post(
            "/document/counts-by-deliverable",
            json!({"deliverableIds": many}),
        )
        .await,
        "deliverableIds",
    );
    // Linking notified the organization's members (none yet here): no notifications.
    assert_eq!(api.list_total("notification", "").await, 0);
}
