//! Notifications (spec 2.15, 4.13): comments in a channel and documents attached to a
//! deliverable notify the organization's members; two actions mark them read.

use prodops_tests::*;

use crate::document;

async fn member(api: &Api) -> String {
    let m = api
        .post(
            "/organization-member",
            json!({"email": format!("m{}@example.com", unique())}),
        )
        .await;
    assert_eq!(m.status, 201, "{m}");
    m.body["appUserId"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn comments_and_documents_notify_members() {
    let server = document::start().await;
    let api = server.org_with_flags("n", &["documentsHubEnabled"]).await;
    let ann = member(&api).await;
    let bob = member(&api).await;
    let gone = api
        .post(
            "/organization-member",
            json!({"email": format!("g{}@example.com", unique())}),
        )
        .await;
    assert_eq!(
        api.post(
            &format!("/organization-member/{}/deactivate", gone.id()),
            json!({})
        )
        .await
        .status,
        204
    );
    let channel = uuid::Uuid::new_v4();
    // A comment in a channel notifies every member who is not deactivated.
    api.create(
        "comment",
        json!({"channelId": channel, "body": "Crane arrives at 7"}),
    )
    .await;
    api.create("comment", json!({"body": "no channel, no notification"}))
        .await;
    let notes = api.list("notification", "kind=channel_comment").await;
    assert_eq!(notes.len(), 2);
    let mut users = field_of(&notes, "appUserId");
    users.sort();
    let mut expected = vec![ann.clone(), bob.clone()];
    expected.sort();
    assert_eq!(users, expected);
    assert_eq!(notes[0]["channelId"], channel.to_string());
    assert_eq!(notes[0]["isRead"], false);
    assert!(notes[0]["message"].as_str().unwrap().contains("Crane"));
    // A document attached to a deliverable notifies too.
    let order = api
        .create("deliverable", json!({"name": "O", "type": "order"}))
        .await;
    let key = document::upload(&api, b"x", "text/plain").await;
    document::hub_upload(
        &api,
        json!([{"name": "a.txt", "documentKey": key, "deliverableId": order["id"]}]),
    )
    .await;
    assert_eq!(
        api.count(
            "notification",
            &format!(
                "kind=deliverable_document&deliverableId={}",
                order["id"].as_str().unwrap()
            )
        )
        .await,
        2
    );
    // Read-marking: one user's, then everyone's.
    let r = api
        .post(
            "/notification/read-channel-comments",
            json!({"channelId": channel, "appUserId": ann}),
        )
        .await;
    assert_eq!(r.status, 204, "{r}");
    assert_eq!(
        api.count("notification", "kind=channel_comment&isRead=false")
            .await,
        1
    );
    let r = api
        .post(
            "/notification/read-channel-comments",
            json!({"channelId": channel}),
        )
        .await;
    assert_eq!(r.status, 204);
    let read = api.list("notification", "kind=channel_comment").await;
    assert!(
        read.iter()
            .all(|n| n["isRead"] == true && n["readAt"].is_string())
    );
    assert_validation_names(
        &api.post("/notification/read-channel-comments", json!({}))
            .await,
        "channelId",
    );
    let r = api
        .post(
            "/notification/read-deliverable-documents",
            json!({"deliverableId": order["id"]}),
        )
        .await;
    assert_eq!(r.status, 204, "{r}");
    assert_eq!(api.count("notification", "isRead=false").await, 0);
    // Notifications are read-only but for DELETE.
    assert_error(
        &api.post("/notification", json!({"kind": "channel_comment"}))
            .await,
        405,
        "METHOD_NOT_ALLOWED",
    );
    let (no_perm, _) = server.key(&api, false, &["Notification.Read"]).await;
    assert_error(
        &no_perm
            .post(
                "/notification/read-channel-comments",
                json!({"channelId": channel}),
            )
            .await,
        403,
        "FORBIDDEN",
    );
    // Another organization sees none.
    let other = server.org("other").await;
    assert_eq!(other.list_total("notification", "").await, 0);
}
