//! Organization members (spec 2.13, 4.12): invitations, acceptance, PATCH, resend, deactivate
//! and reactivate, the permission rule, the outbox.

use prodops_tests::*;
use serde_json::Value;

/// The invitation messages to `email` in the outbox, oldest first.
pub async fn invitations(api: &Api, email: &str) -> Vec<Value> {
    let resp = api
        .get(&format!("/outbox?kind=invitation&recipient={}", enc(email)))
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    resp.body["values"].as_array().unwrap().clone()
}

pub async fn accept(server: &TestServer, token: &str) -> Resp {
    server
        .anonymous()
        .post(
            "/organization-member/accept-invitation",
            json!({"token": token}),
        )
        .await
}

fn token(message: &Value) -> String {
    message["payload"]["token"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn invite_accept_and_manage() {
    let server = TestServer::start().await;
    let api = server.org("members").await;
    let email = format!("ann.{}@example.com", unique());
    let worker = api.create("worker", json!({"name": "Ann"})).await;
    let role = api
        .create(
            "role",
            json!({"name": "Lead", "permissions": ["Worker.Read"]}),
        )
        .await;
    let invited = api
        .post("/organization-member", json!({"email": format!("  {} ", email.to_uppercase()), "name": "Ann Lee", "roleId": role["id"], "roleType": "lead"}))
        .await;
    assert_eq!(invited.status, 201, "{invited}");
    let m = &invited.body;
    assert_eq!(m["status"], "pending");
    assert_eq!(m["appUser"]["email"], email.as_str());
    assert_eq!(m["appUser"]["name"], "Ann Lee");
    assert_eq!(m["appUser"]["status"], "pending");
    assert_eq!(m["appUserId"], m["appUser"]["id"]);
    let id = m["id"].as_str().unwrap().to_string();
    // Duplicates, bad emails, unknown roles and workers.
    assert_error(
        &api.post("/organization-member", json!({"email": email}))
            .await,
        409,
        "CONFLICT",
    );
    assert_validation_names(
        &api.post("/organization-member", json!({"email": "nope"}))
            .await,
        "email",
    );
    // A name given blank (the document's pattern) is refused and invites no one.
    let blank = api
        .post(
            "/organization-member",
            json!({"email": "blank@example.com", "name": "\u{2000}\u{3000} \n"}),
        )
        .await;
    assert_validation_names(&blank, "name");
    assert!(invitations(&api, "blank@example.com").await.is_empty());
    assert_validation_names(
        &api.post(
            "/organization-member",
            json!({"email": "x@example.com", "roleId": uuid::Uuid::new_v4()}),
        )
        .await,
        "roleId",
    );
    // The invitation is in the outbox.
    let messages = invitations(&api, &email).await;
    assert_eq!(messages.len(), 1);
    assert!(
        messages[0]["body"]
            .as_str()
            .unwrap()
            .contains(&token(&messages[0]))
    );
    // Search by the embedded account.
    assert_eq!(
        api.list_ids("organization-member", "search=ann%20lee")
            .await,
        vec![id.clone()]
    );
    assert_eq!(
        api.list_ids(
            "organization-member",
            &format!("appUser.email={}", enc(&email))
        )
        .await,
        vec![id.clone()]
    );
    // PATCH: name (to the account), roleId, roleType, workerId only.
    let patched = api
        .patch(
            &format!("/organization-member/{id}"),
            json!({"name": "Ann B. Lee", "workerId": worker["id"]}),
        )
        .await;
    assert_eq!(patched.status, 200, "{patched}");
    assert_eq!(patched.body["appUser"]["name"], "Ann B. Lee");
    assert_eq!(patched.body["workerId"], worker["id"]);
    assert_eq!(patched.body["name"], Value::Null);
    assert_validation_names(
        &api.patch(
            &format!("/organization-member/{id}"),
            json!({"status": "active"}),
        )
        .await,
        "status",
    );
    assert_validation_names(
        &api.patch(
            &format!("/organization-member/{id}"),
            json!({"email": "b@example.com"}),
        )
        .await,
        "email",
    );
    assert_validation_names(
        &api.patch(
            &format!("/organization-member/{id}"),
            json!({"workerId": uuid::Uuid::new_v4()}),
        )
        .await,
        "workerId",
    );
    let unlinked = api
        .patch(
            &format!("/organization-member/{id}"),
            json!({"workerId": null}),
        )
        .await;
    assert_eq!(unlinked.body["workerId"], Value::Null);
    // Resend issues a new token; the old one stops working.
    assert_eq!(
        api.post(
            &format!("/organization-member/{id}/resend-invitation"),
            json!({})
        )
        .await
        .status,
        204
    );
    let messages = invitations(&api, &email).await;
    assert_eq!(messages.len(), 2);
    assert_error(
        &accept(&server, &token(&messages[0])).await,
        403,
        "FORBIDDEN",
    );
    // Acceptance needs no API key and activates account and membership.
    let accepted = accept(&server, &token(&messages[1])).await;
    assert_eq!(accepted.status, 200, "{accepted}");
    assert_eq!(accepted.body["status"], "active");
    assert_eq!(accepted.body["appUser"]["status"], "active");
    assert_error(
        &accept(&server, &token(&messages[1])).await,
        403,
        "FORBIDDEN",
    );
    assert_error(&accept(&server, "inv_bogus").await, 403, "FORBIDDEN");
    assert_validation_names(
        &api.post(
            &format!("/organization-member/{id}/resend-invitation"),
            json!({}),
        )
        .await,
        "status",
    );
    // Deactivate and reactivate.
    assert_eq!(
        api.post(&format!("/organization-member/{id}/deactivate"), json!({}))
            .await
            .status,
        204
    );
    assert_eq!(
        api.read("organization-member", &id).await["status"],
        "inactive"
    );
    assert_eq!(
        api.post(&format!("/organization-member/{id}/reactivate"), json!({}))
            .await
            .status,
        204
    );
    assert_eq!(
        api.read("organization-member", &id).await["status"],
        "active"
    );
    assert_error(
        &api.post(
            &format!("/organization-member/{}/deactivate", uuid::Uuid::new_v4()),
            json!({}),
        )
        .await,
        404,
        "NOT_FOUND",
    );

    // The same person in another organization: the account exists and is reused.
    let other = server.org("other").await;
    let again = other
        .post(
            "/organization-member",
            json!({"email": email, "name": "Ignored"}),
        )
        .await;
    assert_eq!(again.status, 201, "{again}");
    assert_eq!(again.body["appUserId"], m["appUserId"]);
    assert_eq!(again.body["appUser"]["name"], "Ann B. Lee");
    assert_eq!(again.body["appUser"]["status"], "active");
    assert_eq!(again.body["status"], "pending");
    // Organizations stay apart.
    assert_error(
        &other.get(&format!("/organization-member/{id}")).await,
        404,
        "NOT_FOUND",
    );
    assert!(invitations(&other, &email).await.len() == 1);
}

#[tokio::test]
async fn the_permission_rule() {
    let server = TestServer::start().await;
    let api = server.org("members").await;
    let (read_only, _) = server.key(&api, false, &["User.Read"]).await;
    let (update_only, _) = server.key(&api, false, &["User.Update"]).await;
    let (both, _) = server
        .key(&api, false, &["User.Read", "User.Update", "User.Create"])
        .await;
    assert_error(
        &read_only.get("/organization-member").await,
        403,
        "FORBIDDEN",
    );
    assert_error(
        &update_only.get("/organization-member").await,
        403,
        "FORBIDDEN",
    );
    assert_eq!(both.get("/organization-member").await.status, 200);
    let created = both
        .post(
            "/organization-member",
            json!({"email": format!("p{}@example.com", unique())}),
        )
        .await;
    assert_eq!(created.status, 201, "{created}");
    let id = created.id();
    assert_error(
        &read_only
            .post(&format!("/organization-member/{id}/deactivate"), json!({}))
            .await,
        403,
        "FORBIDDEN",
    );
    assert_eq!(
        both.post(&format!("/organization-member/{id}/deactivate"), json!({}))
            .await
            .status,
        204
    );
    // The outbox is for admin keys only.
    assert_error(&both.get("/outbox").await, 403, "FORBIDDEN");
}
