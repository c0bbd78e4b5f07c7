//! Benchmark baseline: an axum server with one route that returns a fixed JSON body about the
//! size of a stored worker record. `bench/worker-reads.sh` compares prodops-server against it.
//!
//! Usage: trivial-server [--bind ADDR]   (default 127.0.0.1:0)
//! Prints `listening on http://HOST:PORT` on stdout once bound, like prodops-server.

use axum::Router;
use axum::http::header;
use axum::routing::get;

/// A worker record as `GET /api/v2/worker/{id}` returns it.
const BODY: &str = r#"{"id":"01a1fe71-de09-778f-933b-c583a609b148","organizationId":"01a1fe71-d2d5-7220-9623-113bd964f40c","name":"Bench Worker 000001","customerIdentifier":"bench-000001","teamId":null,"status":"active","isArchived":false,"exemptFromAssignments":false,"unionCode":null,"qbBadgeLink":null,"createdAt":"2026-11-21T14:10:37.704Z","updatedAt":"2026-11-21T14:10:37.704Z"}"#;

async fn fixed() -> ([(header::HeaderName, &'static str); 1], &'static str) {
    ([(header::CONTENT_TYPE, "application/json")], BODY)
}

fn main() {
    let mut bind = String::from("127.0.0.1:0");
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--bind" => bind = args.next().expect("--bind needs an address"),
            other => match other.strip_prefix("--bind=") {
                Some(addr) => bind = addr.to_string(),
                None => {
                    eprintln!("usage: trivial-server [--bind ADDR]");
                    std::process::exit(2);
                }
            },
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&bind)
            .await
            .unwrap_or_else(|e| panic!("cannot bind {bind}: {e}"));
        let addr = listener.local_addr().expect("local address");
        println!("listening on http://{addr}");
        let app = Router::new().route("/", get(fixed));
        axum::serve(listener, app).await.expect("serve");
    });
}
