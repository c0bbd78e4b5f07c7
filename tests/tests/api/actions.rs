//! The action declarations (`prodops_core::api::ACTIONS`) against the running server: each is
//! documented at its path and method under its operationId, with its path parameters in order,
//! its success status and (for an open action) no key; and each is served behind the access it
//! declares: a key without the declared permissions is refused with 403 before the request is
//! read, and a key with exactly them gets past the check.

use prodops_core::api::{ACTIONS, Access, ActionDesc, RequestBody};
use prodops_tests::*;
use reqwest::Method;

fn concrete(desc: &ActionDesc) -> String {
    let segments: Vec<String> = desc
        .path_params()
        .iter()
        .map(|p| match *p {
            "key" => "k".to_string(),
            _ => uuid::Uuid::new_v4().to_string(),
        })
        .collect();
    desc.fill(&segments)
}

async fn send(api: &Api, desc: &ActionDesc) -> Resp {
    let req = api.req(
        Method::from_bytes(desc.method.as_str().as_bytes()).unwrap(),
        &concrete(desc),
    );
    match desc.request {
        RequestBody::Json { .. } => req.json(json!({})).send().await,
        RequestBody::Bytes => req.raw(b"x".to_vec()).send().await,
        RequestBody::None => req.send().await,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_declared_action_is_documented_as_declared() {
    let server = TestServer::start().await;
    let doc = server.anonymous().get("/openapi.json").await.body;
    assert!(ACTIONS.len() >= 50, "{} actions", ACTIONS.len());
    for desc in ACTIONS {
        let template = format!("/api/v2{}", desc.path);
        let op = &doc["paths"][&template][desc.method.as_str().to_ascii_lowercase()];
        assert_eq!(
            op["operationId"],
            desc.operation_id,
            "{} {template}: {op}",
            desc.method.as_str()
        );
        assert!(
            op["responses"][desc.status.to_string()].is_object(),
            "{}: no {} answer: {op}",
            desc.operation_id,
            desc.status
        );
        let in_path: Vec<&str> = op["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["in"] == "path")
            .filter_map(|p| p["name"].as_str())
            .collect();
        assert_eq!(in_path, desc.path_params(), "{}", desc.operation_id);
        let open = op["security"].as_array().is_some_and(|s| s.is_empty());
        assert_eq!(open, desc.access == Access::Open, "{}", desc.operation_id);
        assert_eq!(
            op["requestBody"].is_object(),
            !matches!(desc.request, RequestBody::None),
            "{}",
            desc.operation_id
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_declared_action_checks_the_declared_access() {
    let server = TestServer::start_with(|c| c.rate_limit = 1_000_000).await;
    let admin = server
        .org_with_flags(
            "Actions",
            &["documentsHubEnabled", "deliveryComponentCargoEnabled"],
        )
        .await;
    // A key that may do something, but nothing any action needs.
    let (nothing, _) = server.key(&admin, false, &["Vendor.Read"]).await;
    for desc in ACTIONS {
        let refused = send(&nothing, desc).await;
        match desc.access {
            Access::Key(needs) => {
                assert_error(&refused, 403, "FORBIDDEN");
                let names: Vec<String> = needs
                    .iter()
                    .map(|(r, a)| format!("{r}.{}", a.as_str()))
                    .collect();
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                let (enough, _) = server.key(&admin, false, &names).await;
                let resp = send(&enough, desc).await;
                assert!(
                    !(resp.status == 403 && resp.text.contains("permission")),
                    "{}: a key with {names:?} is refused: {resp}",
                    desc.operation_id
                );
                assert_ne!(resp.status, 500, "{}: {resp}", desc.operation_id);
            }
            Access::Admin => {
                assert_error(&refused, 403, "FORBIDDEN");
                let resp = send(&admin, desc).await;
                // Past the access check: the declared status, or 404 when the path's id names
                // no record (the webhook actions on a random id).
                let missing = !desc.path_params().is_empty() && resp.status == 404;
                assert!(
                    resp.status == desc.status || missing,
                    "{}: {resp}",
                    desc.operation_id
                );
            }
            Access::Open => {
                let resp = send(&server.anonymous(), desc).await;
                assert_ne!(resp.status, 401, "{}: {resp}", desc.operation_id);
            }
            Access::KeyChecked => {
                let resp = send(&server.anonymous(), desc).await;
                assert_error(&resp, 401, "UNAUTHORIZED");
            }
        }
    }
}
