//! The error shape and request ids (decisions.md 3, 4): validation errors with details, 413,
//! unknown paths, 405, never a 5xx, never SQL text.

use prodops_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_json_is_400_with_details() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    for raw in [
        &b"{\"name\": "[..],
        &b"{name: 'x'}"[..],
        &b"not json at all"[..],
        &b"{\"name\": \"x\"} trailing"[..],
    ] {
        let resp = api.post_raw("/worker", raw.to_vec()).await;
        assert_error_details(&resp, 400, "VALIDATION_ERROR");
    }
    let resp = api
        .req(reqwest::Method::PUT, "/worker/bulk")
        .raw(b"[{\"name\": \"a\"},".to_vec())
        .send()
        .await;
    assert_error_details(&resp, 400, "VALIDATION_ERROR");
    // A body that is JSON but not an object.
    assert_error_details(
        &api.post("/worker", json!(["name"])).await,
        400,
        "VALIDATION_ERROR",
    );
    assert_error_details(
        &api.post("/worker", json!("name")).await,
        400,
        "VALIDATION_ERROR",
    );
    assert_eq!(api.total("worker").await, 0, "nothing was created");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_types_are_400_naming_the_field() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    assert_validation_names(&api.post("/worker", json!({"name": 5})).await, "name");
    assert_validation_names(
        &api.post("/worker", json!({"name": "x", "teamId": "not-a-uuid"}))
            .await,
        "teamId",
    );
    assert_validation_names(
        &api.post("/worker", json!({"name": "x", "status": "retired"}))
            .await,
        "status",
    );
    assert_validation_names(
        &api.post(
            "/worker",
            json!({"name": "x", "exemptFromAssignments": "yes"}),
        )
        .await,
        "exemptFromAssignments",
    );
    assert_validation_names(
        &api.post(
            "/vendor",
            json!({"name": "v", "defaultLeadTimeDays": "ten"}),
        )
        .await,
        "defaultLeadTimeDays",
    );
    assert_eq!(api.total("worker").await, 0);
    assert_eq!(api.total("vendor").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_required_field_is_400_naming_it() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    assert_validation_names(&api.post("/worker", json!({})).await, "name");
    assert_validation_names(
        &api.post("/worker", json!({"status": "active"})).await,
        "name",
    );
    assert_validation_names(&api.post("/vendor", json!({"code": "X"})).await, "name");
    assert_eq!(api.total("worker").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_fields_are_400() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    assert_validation_names(
        &api.post("/worker", json!({"name": "x", "nickname": "y"}))
            .await,
        "nickname",
    );
    let w = api.create("worker", json!({"name": "Real"})).await;
    let id = w["id"].as_str().unwrap();
    let resp = api
        .patch(&format!("/worker/{id}"), json!({"nickname": "y"}))
        .await;
    assert_validation_names(&resp, "nickname");
    assert_validation_names(
        &api.post("/vendor", json!({"name": "V", "colour": "red"}))
            .await,
        "colour",
    );
    assert_eq!(
        api.read("worker", id).await,
        w,
        "the refused PATCH changed nothing"
    );
    assert_eq!(api.total("worker").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_uuid_in_path_is_400() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    for resp in [
        api.get("/worker/not-a-uuid").await,
        api.patch("/worker/12345", json!({"status": "inactive"}))
            .await,
        api.get("/vendor/zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz")
            .await,
        api.delete("/vendor/not-a-uuid").await,
    ] {
        assert_error_details(&resp, 400, "VALIDATION_ERROR");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_over_32_mib_is_413() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    // Valid JSON padded with whitespace to just over 32 MiB.
    let mut body = b"{\"name\": \"Huge\"".to_vec();
    body.resize(32 * 1024 * 1024 + 16, b' ');
    body.push(b'}');
    let resp = api.post_raw("/worker", body).await;
    assert_error(&resp, 413, "PAYLOAD_TOO_LARGE");
    assert_eq!(api.total("worker").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_of_a_few_mib_is_accepted() {
    // The limit is 32 MiB, not a framework default of 1 or 2 MiB.
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let mut body = b"{\"name\": \"Padded\"".to_vec();
    body.resize(3 * 1024 * 1024, b' ');
    body.push(b'}');
    let resp = api.post_raw("/worker", body).await;
    assert_eq!(resp.status, 201, "{resp}");
    assert_eq!(resp.body["name"], "Padded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_path_is_404_with_error_shape() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    assert_error(&api.get("/no-such-resource").await, 404, "NOT_FOUND");
    assert_error(
        &api.post("/no-such-resource", json!({})).await,
        404,
        "NOT_FOUND",
    );
    assert_error(
        &api.get("/worker/bulk/extra/segments").await,
        404,
        "NOT_FOUND",
    );
    assert_error(&server.get_root("/no-such-path").await, 404, "NOT_FOUND");
    assert_error(&server.get_root("/api/v3/worker").await, 404, "NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_id_is_404() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let random = uuid::Uuid::new_v4();
    for r in [
        "worker",
        "vendor",
        "contact",
        "catalog-entry",
        "custom-property",
    ] {
        assert_error(&api.get(&format!("/{r}/{random}")).await, 404, "NOT_FOUND");
        assert_error(
            &api.patch(&format!("/{r}/{random}"), json!({})).await,
            404,
            "NOT_FOUND",
        );
    }
    assert_error(
        &api.delete(&format!("/vendor/{random}")).await,
        404,
        "NOT_FOUND",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_method_is_405() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    assert_error(
        &api.put("/worker", json!({"name": "x"})).await,
        405,
        "METHOD_NOT_ALLOWED",
    );
    assert_error(
        &api.patch("/vendor", json!({"name": "x"})).await,
        405,
        "METHOD_NOT_ALLOWED",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_id_on_every_response_and_echoed() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;

    // Server-made ids: present and distinct.
    let r1 = api.get("/worker").await;
    let r2 = api.get("/worker").await;
    let id1 = r1
        .header("x-request-id")
        .expect("X-Request-Id on a 200")
        .to_string();
    let id2 = r2
        .header("x-request-id")
        .expect("X-Request-Id on a 200")
        .to_string();
    assert!(!id1.is_empty());
    assert_ne!(id1, id2, "each request gets its own id");

    // Errors: header equals error.requestId (checked by assert_error).
    assert_error(&api.get("/nope").await, 404, "NOT_FOUND");
    assert_error(
        &server.anonymous().get("/worker").await,
        401,
        "UNAUTHORIZED",
    );
    assert_error(
        &api.post("/worker", json!({"name": 5})).await,
        400,
        "VALIDATION_ERROR",
    );

    // The client's own id is echoed, on success and on every kind of error.
    let mine = format!("test-{}", unique());
    let resp = api
        .req(reqwest::Method::GET, "/worker")
        .request_id(&mine)
        .send()
        .await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("x-request-id"), Some(mine.as_str()));
    let resp = api
        .req(reqwest::Method::POST, "/worker")
        .json(json!({"name": "C"}))
        .request_id(&mine)
        .send()
        .await;
    assert_eq!(resp.status, 201);
    assert_eq!(resp.header("x-request-id"), Some(mine.as_str()));
    let resp = api
        .req(reqwest::Method::POST, "/worker")
        .json(json!({"name": 5}))
        .request_id(&mine)
        .send()
        .await;
    assert_error(&resp, 400, "VALIDATION_ERROR");
    assert_eq!(resp.body["error"]["requestId"], json!(mine));
    let resp = api
        .req(reqwest::Method::GET, "/nope")
        .request_id(&mine)
        .send()
        .await;
    assert_error(&resp, 404, "NOT_FOUND");
    assert_eq!(resp.body["error"]["requestId"], json!(mine));
    let resp = server
        .anonymous()
        .req(reqwest::Method::GET, "/worker")
        .request_id(&mine)
        .send()
        .await;
    assert_error(&resp, 401, "UNAUTHORIZED");
    assert_eq!(resp.body["error"]["requestId"], json!(mine));
    let resp = api
        .with_key("pk_nope")
        .req(reqwest::Method::GET, "/worker")
        .request_id(&mine)
        .send()
        .await;
    assert_error(&resp, 401, "UNAUTHORIZED");
    assert_eq!(resp.body["error"]["requestId"], json!(mine));

    // The open paths carry it too.
    let resp = server.get_root("/healthz").await;
    assert!(
        resp.header("x-request-id").is_some_and(|v| !v.is_empty()),
        "healthz: {resp}"
    );
    let resp = server.anonymous().get("/openapi.json").await;
    assert!(
        resp.header("x-request-id").is_some_and(|v| !v.is_empty()),
        "openapi.json"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odd_inputs_never_5xx_nor_leak_sql() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    api.create("worker", json!({"name": "O'Brien"})).await;
    let nasty = [
        "/worker?search=%27%3B%20DROP%20TABLE%20worker%3B%20--",
        "/worker?search=%25",
        "/worker?search=_",
        "/worker?search=%5C",
        "/worker?name=%27%20OR%20%271%27%3D%271",
        "/worker?pageSize=abc",
        "/worker?page=-1",
        "/worker?page=0",
        "/worker?page=99999999999999999999",
        "/worker?sort=noSuchField",
        "/worker?sort=name%3B%20DROP%20TABLE%20worker",
        "/worker?noSuchField=1",
        "/worker?status=retired",
        "/worker?isArchived=maybe",
        "/worker?teamId=not-a-uuid",
        "/worker/count?noSuchField=1",
    ];
    for path in nasty {
        let resp = api.get(path).await;
        if resp.status >= 400 {
            assert!(resp.status == 400 || resp.status == 404, "{resp}");
            assert_error(&resp, resp.status, resp.code().unwrap_or("?"));
        }
    }
    for body in [
        json!({"groupByField": "noSuchField"}),
        json!({"groupByField": "name; DROP TABLE worker"}),
        json!({}),
        json!({"groupByField": 5}),
    ] {
        let resp = api.post("/worker/group-and-count", body).await;
        if resp.status >= 400 {
            assert_error(&resp, 400, "VALIDATION_ERROR");
        }
    }
    for body in [
        json!({"select": ["noSuchField"]}),
        json!({"select": ["name; DROP TABLE worker"]}),
        json!({"filter": {"noSuchField": 1}}),
        json!({"filter": {"name": {"$gt": ""}}}),
        json!({"id": ["not-a-uuid"]}),
        json!({"id": "not-an-array"}),
        json!({"pageSize": -1}),
    ] {
        let resp = api.post("/worker/query", body).await;
        if resp.status >= 400 {
            assert_error(&resp, 400, "VALIDATION_ERROR");
        }
    }
    // The SQL in the search was data, not code: the table and the record are still there.
    let listed = api.list("worker", "search=brien").await;
    assert_eq!(field_of(&listed, "name"), vec!["O'Brien"]);
    let listed = api.list("worker", "search=%27").await;
    assert_eq!(
        field_of(&listed, "name"),
        vec!["O'Brien"],
        "search for a quote"
    );
    assert!(
        api.list("worker", "search=%25").await.is_empty(),
        "`%` is matched literally"
    );
    assert!(
        api.list("worker", "search=_").await.is_empty(),
        "`_` is matched literally"
    );
}
