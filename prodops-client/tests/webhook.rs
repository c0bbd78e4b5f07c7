//! `prodops_client::webhook::verify` against deliveries from a real server (issue 40, item 4):
//! a delivery verifies and reads as its event; a changed body, another secret, a stale time and
//! a malformed header are each their own error.

use std::time::{Duration, SystemTime};

use prodops_client::webhook::{self, WebhookError};
use prodops_tests::webhook_receiver::{Mode, Receiver};
use prodops_tests::*;

const SECRET: &str = "whsec_sdk_test_0123456789";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_of_a_real_server_verify_and_tampering_does_not() {
    let server = TestServer::start_isolated_with(|c| {
        c.webhooks.deliver = true;
        c.webhooks.allow = prodops_core::webhook::AllowList::parse("127.0.0.1").unwrap();
        c.webhooks.poll = Duration::from_millis(100);
        c.webhooks.timeout = Duration::from_secs(5);
    })
    .await;
    let api = server.org("Verified").await;
    let receiver = Receiver::start(SECRET, Mode::Accept).await;
    let r = api
        .post(
            "/webhook",
            json!({"url": receiver.url(), "eventTypes": ["worker.*"], "secret": SECRET}),
        )
        .await;
    assert_eq!(r.status, 201, "{r}");
    let hook = r.id();
    let worker = api.create("worker", json!({"name": "Signed"})).await;

    let hits = receiver
        .wait_until(Duration::from_secs(60), |hits| !hits.is_empty())
        .await;
    let hit = &hits[0];
    let header = hit.signature.as_deref().expect("a signature header");
    let event = webhook::verify(&hit.raw_body, header, SECRET, webhook::DEFAULT_TOLERANCE)
        .expect("a delivery verifies");
    assert_eq!(event.event_type, "worker.created");
    assert_eq!(event.record_id.to_string(), worker["id"].as_str().unwrap());
    assert_eq!(event.id.to_string(), hit.event_id);

    let mut changed = hit.raw_body.clone();
    let last = changed.len() - 2;
    changed[last] ^= 0x01;
    assert_eq!(
        webhook::verify(&changed, header, SECRET, webhook::DEFAULT_TOLERANCE).unwrap_err(),
        WebhookError::BadSignature
    );
    assert_eq!(
        webhook::verify(
            &hit.raw_body,
            header,
            "another-secret",
            webhook::DEFAULT_TOLERANCE
        )
        .unwrap_err(),
        WebhookError::BadSignature
    );
    let later = SystemTime::now() + Duration::from_secs(600);
    assert!(matches!(
        webhook::verify_at(
            &hit.raw_body,
            header,
            SECRET,
            webhook::DEFAULT_TOLERANCE,
            later
        ),
        Err(WebhookError::TooOld { .. })
    ));
    assert!(matches!(
        webhook::verify(&hit.raw_body, "v1=abc", SECRET, webhook::DEFAULT_TOLERANCE),
        Err(WebhookError::Malformed(_))
    ));
    let r = api.delete(&format!("/webhook/{hook}")).await;
    assert!(r.status == 204 || r.status == 200, "{r}");
}
