//! The change feed's storage (store/events.rs, docs/events.md): the events of one transaction
//! share one origin row (key, request, time), which every read joins back, and retention prunes
//! by those rows: per organization, everything before the oldest transaction that is still
//! inside the retention, nothing newer, other organizations untouched, counters kept.
//!
//! Runs on `PRODOPS_TEST_DATABASE_URL` when set (PostgreSQL), else on a SQLite file. The events
//! here occurred in 1970 (the pruned ones in its first 10 seconds), so pruning them cannot touch
//! events other tests write at the same time into a shared database; there, the count a prune
//! answers may include what an earlier, interrupted run left, so it is checked exactly on a
//! fresh SQLite file only.

mod common;
use common::database_url;

#[path = "common/events.rs"]
mod feed;
use feed::{append, feed, origin};

use prodops_server::store::Store;
use prodops_server::store::events::{self, EventFilter, Origin};
use uuid::Uuid;

/// Prunes, and checks the count it answers against `expected` (exactly on a database of its
/// own, at least on a shared one).
async fn prune(store: &Store, before_ms: i64, expected: u64) {
    let removed = store
        .write(move |tx| events::prune(tx, before_ms))
        .await
        .unwrap();
    if std::env::var("PRODOPS_TEST_DATABASE_URL").is_ok_and(|u| !u.is_empty()) {
        assert!(
            removed >= expected,
            "{removed} removed, {expected} expected"
        );
    } else {
        assert_eq!(removed, expected);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_event_reads_its_transactions_origin() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&database_url(&dir)).await.unwrap();
    let org = Uuid::now_v7();
    // Transactions of 1, 3 and 2 events, and one without key or request (a background job).
    append(&store, origin(org, 11_000, "r1"), 1).await;
    append(&store, origin(org, 12_000, "r2"), 3).await;
    append(&store, origin(org, 13_000, "r3"), 2).await;
    let job = Origin {
        key_id: None,
        request_id: None,
        ..origin(org, 14_000, "")
    };
    append(&store, job, 1).await;
    let got = feed(&store, org).await;
    let seen: Vec<(i64, Option<&str>, &str)> = got
        .iter()
        .map(|e| (e.seq, e.request_id.as_deref(), e.occurred_at.as_str()))
        .collect();
    assert_eq!(
        seen,
        vec![
            (1, Some("r1"), "1970-01-01T00:00:11.000Z"),
            (2, Some("r2"), "1970-01-01T00:00:12.000Z"),
            (3, Some("r2"), "1970-01-01T00:00:12.000Z"),
            (4, Some("r2"), "1970-01-01T00:00:12.000Z"),
            (5, Some("r3"), "1970-01-01T00:00:13.000Z"),
            (6, Some("r3"), "1970-01-01T00:00:13.000Z"),
            (7, None, "1970-01-01T00:00:14.000Z"),
        ]
    );
    assert_eq!(
        got[3].key_id.as_deref(),
        Some(Uuid::from_u128(12_000).to_string().as_str())
    );
    assert_eq!(got[6].key_id, None);
    // Ids: UUIDv7, distinct, rising with the cursor within a transaction (they derive from
    // the origin's first id), and the same on every read.
    let ids: Vec<Uuid> = got
        .iter()
        .map(|e| Uuid::parse_str(&e.id).unwrap())
        .collect();
    assert!(ids.iter().all(|id| id.get_version_num() == 7));
    let distinct: std::collections::HashSet<_> = ids.iter().collect();
    assert_eq!(distinct.len(), ids.len());
    assert!(ids[1] < ids[2] && ids[2] < ids[3] && ids[4] < ids[5]);
    let again: Vec<String> = feed(&store, org).await.into_iter().map(|e| e.id).collect();
    assert_eq!(again, got.iter().map(|e| e.id.clone()).collect::<Vec<_>>());
    // A page that starts inside a transaction still finds that transaction's origin.
    let filter = EventFilter {
        after: 3,
        limit: 2,
        ..Default::default()
    };
    let page = store
        .read(move |tx| events::read(tx, org, &filter))
        .await
        .unwrap();
    let page: Vec<(i64, Option<&str>)> = page
        .iter()
        .map(|e| (e.seq, e.request_id.as_deref()))
        .collect();
    assert_eq!(page, vec![(4, Some("r2")), (5, Some("r3"))]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_prunes_whole_old_transactions_per_organization_and_nothing_newer() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&database_url(&dir)).await.unwrap();
    let (org, other, quiet) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    append(&store, origin(org, 1_000, "old-1"), 3).await; // seq 1-3
    append(&store, origin(org, 2_000, "old-2"), 2).await; // seq 4-5
    append(&store, origin(org, 6_000, "new"), 2).await; // seq 6-7
    // Started before the cut but committed after a newer transaction: it stays (nothing
    // after the first kept transaction is removed) until a later run passes it.
    append(&store, origin(org, 1_500, "late"), 1).await; // seq 8
    append(&store, origin(org, 7_000, "newer"), 1).await; // seq 9
    append(&store, origin(other, 8_000, "other"), 2).await;
    append(&store, origin(quiet, 1_000, "quiet"), 4).await;

    // Nothing is older than the first transaction: nothing goes.
    prune(&store, 500, 0).await;
    assert_eq!(feed(&store, org).await.len(), 9);

    // org: the two old transactions (5 events); quiet: all of its events; other: none.
    prune(&store, 5_000, 5 + 4).await;
    let kept: Vec<(i64, Option<String>)> = feed(&store, org)
        .await
        .into_iter()
        .map(|e| (e.seq, e.request_id))
        .collect();
    let requests = |v: &[(i64, Option<String>)]| -> Vec<(i64, String)> {
        v.iter()
            .map(|(s, r)| (*s, r.clone().unwrap_or_default()))
            .collect()
    };
    assert_eq!(
        requests(&kept),
        vec![
            (6, "new".to_string()),
            (7, "new".to_string()),
            (8, "late".to_string()),
            (9, "newer".to_string()),
        ]
    );
    assert_eq!(feed(&store, other).await.len(), 2);
    assert!(feed(&store, quiet).await.is_empty());
    // Idempotent: a second run (another process) finds nothing more.
    prune(&store, 5_000, 0).await;

    // The counters stay: numbering goes on after the pruned events, never reusing a number,
    // and the new events read their own origin.
    append(&store, origin(quiet, 9_000, "again"), 2).await;
    let again: Vec<(i64, Option<String>)> = feed(&store, quiet)
        .await
        .into_iter()
        .map(|e| (e.seq, e.request_id))
        .collect();
    assert_eq!(
        requests(&again),
        vec![(5, "again".to_string()), (6, "again".to_string())]
    );

    // Later, with the cut past everything of org up to seq 8 ("late" included).
    prune(&store, 6_500, 3).await;
    let kept: Vec<i64> = feed(&store, org).await.iter().map(|e| e.seq).collect();
    assert_eq!(kept, vec![9]);
    assert_eq!(feed(&store, other).await.len(), 2);
}
