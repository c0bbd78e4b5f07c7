//! Retries across lost answers: a write whose answer never arrives (the connection is cut after
//! the server committed and answered) is sent again under the same `Idempotency-Key`, and the
//! server answers the repeat with its first answer, so the write happens once.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use prodops_client::{Client, Config, Error, ListParams, NetworkErrorKind};
use prodops_tests::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A TCP relay in front of the server that, for its first `drop_answers` connections, passes
/// the request on, waits for the first bytes of the server's answer (the server has committed)
/// and then closes the client's connection without passing them on. Later connections are
/// relayed whole.
struct LossyRelay {
    port: u16,
    cut: Arc<AtomicUsize>,
}

impl LossyRelay {
    async fn start(target: &str, drop_answers: usize) -> LossyRelay {
        let target = target
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(AtomicUsize::new(0));
        let counter = cut.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut client, _)) = listener.accept().await else {
                    return;
                };
                let mut server = TcpStream::connect(&target).await.unwrap();
                let drop_this = counter.load(Ordering::SeqCst) < drop_answers;
                if drop_this {
                    counter.fetch_add(1, Ordering::SeqCst);
                }
                tokio::spawn(async move {
                    if !drop_this {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                        return;
                    }
                    let (mut from_server, mut to_server) = server.split();
                    // Pass the request on until the server starts answering, then cut.
                    let mut request = vec![0u8; 64 * 1024];
                    let mut answer = [0u8; 1];
                    loop {
                        tokio::select! {
                            n = client.read(&mut request) => match n {
                                Ok(0) | Err(_) => return,
                                Ok(n) => { let _ = to_server.write_all(&request[..n]).await; }
                            },
                            n = from_server.read(&mut answer) => {
                                let _ = n;
                                break;
                            }
                        }
                    }
                    drop(client);
                });
            }
        });
        LossyRelay { port, cut }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn answers_cut(&self) -> usize {
        self.cut.load(Ordering::SeqCst)
    }
}

fn client_via(relay: &LossyRelay, api: &Api) -> Client {
    Client::new(
        Config::new(relay.url(), api.key().unwrap()).max_retry_wait(Duration::from_millis(200)),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_whose_answer_is_lost_is_retried_under_its_key_and_posts_once() {
    let server = TestServer::start().await;
    let api = server.org("Lost answers").await;
    let relay = LossyRelay::start(server.base_url(), 1).await;
    let c = client_via(&relay, &api);

    // The caller's key: the first answer is lost after the server committed; the client sends
    // the write again under the same key and gets the first answer.
    let once = c.with_idempotency_key("create-ann-run-1");
    let ann = once
        .workers()
        .create(&prodops_client::json!({"name": "Ann"}))
        .await
        .unwrap();
    assert_eq!(relay.answers_cut(), 1);
    assert_eq!(
        c.workers()
            .count(&ListParams::new().filter("name", "Ann"))
            .await
            .unwrap(),
        1
    );
    // The program runs again (it never saw the answer, say): same key, same record, no second.
    let again = once
        .workers()
        .create(&prodops_client::json!({"name": "Ann"}))
        .await
        .unwrap();
    assert_eq!(again.id, ann.id);

    // Without a caller key, a POST carries the client's own key across its attempts.
    let relay2 = LossyRelay::start(server.base_url(), 1).await;
    let c2 = client_via(&relay2, &api);
    let bo = c2
        .workers()
        .create(&prodops_client::json!({"name": "Bo"}))
        .await
        .unwrap();
    assert_eq!(relay2.answers_cut(), 1);
    assert_eq!(
        c.workers()
            .count(&ListParams::new().filter("name", "Bo"))
            .await
            .unwrap(),
        1
    );
    assert_eq!(c.workers().get(bo.id).await.unwrap().name, "Bo");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_without_a_key_is_not_sent_again_after_a_lost_answer() {
    let server = TestServer::start().await;
    let api = server.org("Unkeyed").await;
    let direct = Client::new(Config::new(server.base_url(), api.key().unwrap())).unwrap();
    let ann = direct
        .workers()
        .create(&prodops_client::json!({"name": "Ann"}))
        .await
        .unwrap();
    let relay = LossyRelay::start(server.base_url(), 1).await;
    let c = client_via(&relay, &api);
    // A PATCH of one record carries no key of the client's own: its lost answer is an error
    // for the caller to judge, not a silent second write.
    let err = c
        .workers()
        .update(ann.id, &prodops_client::json!({"status": "inactive"}))
        .await
        .unwrap_err();
    match &err {
        Error::Network(e) => assert_eq!(e.kind(), NetworkErrorKind::Interrupted, "{err}"),
        other => panic!("expected a network error, got {other}"),
    }
    assert!(std::error::Error::source(&err).is_some());
    // With the caller's key, the same PATCH is sent again and succeeds.
    let relay = LossyRelay::start(server.base_url(), 1).await;
    let c = client_via(&relay, &api).with_idempotency_key("deactivate-ann");
    let ann = c
        .workers()
        .update(ann.id, &prodops_client::json!({"status": "inactive"}))
        .await
        .unwrap();
    assert_eq!(relay.answers_cut(), 1);
    assert_eq!(ann.status, prodops_client::worker::WorkerStatus::Inactive);
}
