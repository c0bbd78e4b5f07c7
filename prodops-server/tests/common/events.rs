//! What the tests of the change feed's storage share (included with `#[path]`): events with
//! a chosen origin, appended and read through the store.

use prodops_server::store::Store;
use prodops_server::store::events::{self, EventFilter, NewEvent, Origin, StoredEvent};
use uuid::Uuid;

/// The origin of events that occurred `occurred_ms` after the epoch (in 1970, where no other
/// test's events are).
pub fn origin(org: Uuid, occurred_ms: i64, request: &str) -> Origin {
    Origin {
        org,
        key_id: Some(Uuid::from_u128(occurred_ms as u128)),
        request_id: Some(request.to_string()),
        occurred_at: format!(
            "1970-01-01T00:00:{:02}.{:03}Z",
            occurred_ms / 1000,
            occurred_ms % 1000
        ),
        occurred_ms,
    }
}

pub fn created(n: usize) -> Vec<NewEvent> {
    (0..n)
        .map(|i| NewEvent {
            event_type: "worker.created".to_string(),
            resource: "worker",
            record_id: Uuid::now_v7().to_string(),
            data: format!(r#"{{"n":{i}}}"#),
            changed: None,
            by_reference: false,
            record_rowid: None,
        })
        .collect()
}

pub async fn append(store: &Store, origin: Origin, n: usize) -> Vec<NewEvent> {
    let evs = created(n);
    let to_append = evs.clone();
    let appended = store
        .write(move |tx| events::append(tx, &origin, &to_append))
        .await
        .unwrap();
    assert_eq!(appended, n);
    evs
}

pub async fn feed(store: &Store, org: Uuid) -> Vec<StoredEvent> {
    let filter = EventFilter {
        limit: 1000,
        ..Default::default()
    };
    store
        .read(move |tx| events::read(tx, org, &filter))
        .await
        .unwrap()
}
