//! Issue 38 item 3: events for what time changes (docs/events.md, "Events for what time
//! changes"). `deliverable.became-late` comes from the recurring job when a deliverable's
//! `lateAt` passes, exactly once per transition; `deliverable.became-at-risk` and
//! `deliverable.became-ready` come from the writes that cause them.
//!
//! The job announces for every organization of its database, so these tests run their servers
//! on a database of their own (`TestServer::start_isolated_with`: a new PostgreSQL database, or
//! the SQLite file every server has), on a manual clock they move, with the job looking every
//! 100 ms; every other test server runs without it.

use std::time::{Duration, Instant};

use prodops_core::alerts::AsOf;
use prodops_core::webhook::AllowList;
use prodops_tests::webhook_receiver::{Mode, Receiver};
use prodops_tests::*;
use serde_json::Value;

use crate::deliverable::node;

const D: &str = "deliverable";
const LATE: &str = "deliverable.became-late";
/// The job's poll interval in these tests.
const POLL: Duration = Duration::from_millis(100);
/// Every wait ends by this bound: a failure, not a hang.
const WAIT: Duration = Duration::from_secs(30);

/// `secs` as an RFC 3339 date-time (whole seconds, UTC).
fn time(secs: i64) -> String {
    format!("{}Z", AsOf::from_secs(secs).as_str())
}

fn with_job(c: &mut Config, clock: &Clock) {
    c.clock = clock.clone();
    c.alert_events = Some(POLL);
}

/// A server on a database of its own running the job on `clock`, once the job has run
/// (`alert_events_started`).
async fn server(clock: &Clock) -> TestServer {
    let clock = clock.clone();
    let server = TestServer::start_isolated_with(move |c| with_job(c, &clock)).await;
    alert_events_started(&server).await;
    server
}

/// The organization's events of type `ty`, oldest first (every page).
async fn events(api: &Api, ty: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut after = "0".to_string();
    loop {
        let r = api
            .get(&format!("/event?type={ty}&limit=1000&after={after}"))
            .await;
        assert_eq!(r.status, 200, "{r}");
        let page = r.body["values"].as_array().unwrap().clone();
        if page.is_empty() {
            return out;
        }
        after = r.body["nextCursor"].as_str().unwrap().to_string();
        out.extend(page);
    }
}

/// Waits until the organization has `n` events of type `ty` (bounded), then answers them.
async fn wait_events(api: &Api, ty: &str, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + WAIT;
    loop {
        let got = events(api, ty).await;
        if got.len() >= n {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "{n} {ty} events expected, {} came: {:?}",
            got.len(),
            got.first()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Lets the job run several more times: what it would announce twice would show by then.
async fn a_few_more_runs() {
    tokio::time::sleep(POLL * 6).await;
}

async fn order(api: &Api, name: &str, due: i64) -> String {
    api.create(
        D,
        json!({"name": name, "type": "order", "data": {"dueDate": time(due)}}),
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deliverable_is_announced_late_once_when_its_due_date_passes() {
    let clock = Clock::manual();
    let server = server(&clock).await;
    let api = server.org("time-late").await;
    let start = clock.now_secs();
    let soon = order(&api, "Soon", start + 3600).await;
    let later = order(&api, "Later", start + 7200).await;
    let archived = order(&api, "Archived", start + 3600).await;
    let r = api
        .patch(&format!("/{D}/{archived}"), json!({"isArchived": true}))
        .await;
    assert_eq!(r.status, 200, "{r}");
    let done = order(&api, "Done", start + 3600).await;
    let r = api
        .post(
            &format!("/{D}/root/{done}/progress/{done}"),
            json!({"type": "complete"}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    a_few_more_runs().await;
    assert!(events(&api, LATE).await.is_empty(), "nothing passed yet");

    clock.advance(Duration::from_secs(3601));
    let got = wait_events(&api, LATE, 1).await;
    let e = &got[0];
    assert_eq!(e["recordId"], soon.as_str(), "{e}");
    assert_eq!(e["resource"], "deliverable");
    assert_eq!(
        e["data"]["computed"]["isLate"], true,
        "as of the transition: {e}"
    );
    assert_eq!(e["data"]["computed"]["alertType"], "late");
    assert_eq!(e["changed"], json!(["computed"]));
    assert_eq!(e["keyId"], Value::Null, "no request made it");
    assert_eq!(
        e["occurredAt"],
        format!("{}.000Z", AsOf::from_secs(start + 3600).as_str()),
        "it occurred when the due date passed"
    );
    a_few_more_runs().await;
    let got = events(&api, LATE).await;
    assert_eq!(
        got.len(),
        1,
        "once, and not the archived or done one: {got:?}"
    );

    clock.advance(Duration::from_secs(3600));
    let got = wait_events(&api, LATE, 2).await;
    assert_eq!(got[1]["recordId"], later.as_str());
    a_few_more_runs().await;
    assert_eq!(events(&api, LATE).await.len(), 2, "each once");
    // A reader of the records agrees.
    assert_eq!(api.read(D, &soon).await["computed"]["isLate"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_due_date_moved_back_that_passes_again_is_a_new_transition() {
    let clock = Clock::manual();
    let server = server(&clock).await;
    let api = server.org("time-again").await;
    let start = clock.now_secs();
    let id = order(&api, "Again", start + 600).await;
    clock.advance(Duration::from_secs(601));
    wait_events(&api, LATE, 1).await;

    // Written while late (a rename): still the same transition, not announced again.
    let r = api
        .patch(&format!("/{D}/{id}"), json!({"name": "Again, renamed"}))
        .await;
    assert_eq!(r.status, 200, "{r}");
    a_few_more_runs().await;
    assert_eq!(events(&api, LATE).await.len(), 1);

    // Moved back (later): no longer late; when the new date passes, late again.
    let now = clock.now_secs();
    let r = api
        .patch(
            &format!("/{D}/{id}"),
            json!({"data": {"dueDate": time(now + 600)}}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(r.body["computed"]["isLate"], false, "{r}");
    a_few_more_runs().await;
    assert_eq!(events(&api, LATE).await.len(), 1);
    clock.advance(Duration::from_secs(601));
    let got = wait_events(&api, LATE, 2).await;
    assert_eq!(got[1]["recordId"], id.as_str());
    assert_eq!(got[1]["data"]["name"], "Again, renamed");
    a_few_more_runs().await;
    assert_eq!(events(&api, LATE).await.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_after_the_due_date_passed_does_not_hide_the_transition() {
    let clock = Clock::manual();
    // This server's job looks once at its start, then in an hour: the write lands between the
    // due date and the next look, made by a second server.
    let c = clock.clone();
    let server = TestServer::start_isolated_with(move |conf| {
        with_job(conf, &c);
        conf.alert_events = Some(Duration::from_secs(3600));
    })
    .await;
    alert_events_started(&server).await;
    let api = server.org("time-written").await;
    let start = clock.now_secs();
    let id = order(&api, "Written", start + 600).await;
    clock.advance(Duration::from_secs(601));
    // Its due date moved a little earlier, still after the job's last look: the tree stores
    // its alerts as of this write, late, so its window now starts at the due date.
    let r = api
        .patch(
            &format!("/{D}/{id}"),
            json!({"name": "Written late", "data": {"dueDate": time(start + 590)}}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    // The job's next look: another process that runs it.
    let c = clock.clone();
    let _other = server.another_with(move |conf| with_job(conf, &c)).await;
    let got = wait_events(&api, LATE, 1).await;
    assert_eq!(got[0]["recordId"], id.as_str());
    assert_eq!(got[0]["data"]["name"], "Written late");
    assert_eq!(
        got[0]["occurredAt"],
        format!("{}.000Z", AsOf::from_secs(start + 590).as_str())
    );
    a_few_more_runs().await;
    assert_eq!(events(&api, LATE).await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_risk_and_ready_are_announced_by_the_writes_that_cause_them() {
    let clock = Clock::manual();
    let server = server(&clock).await;
    let api = server.org("time-risk").await;
    let start = clock.now_secs();

    // At risk: a part scheduled to end after the order's due date.
    let id = order(&api, "Risky", start + 3600).await;
    let part = api
        .create(
            D,
            json!({"name": "Part", "type": "component", "parentId": id, "durationSec": 7200}),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = api
        .post(
            &format!("/{D}/root/{id}/schedule/{part}"),
            json!({"type": "schedule", "newStart": start}),
        )
        .await;
    assert_eq!(r.status, 204, "{r}");
    let risky = events(&api, "deliverable.became-at-risk").await;
    let announced: Vec<&str> = risky
        .iter()
        .map(|e| e["recordId"].as_str().unwrap())
        .collect();
    assert!(
        announced.contains(&part.as_str()) && announced.contains(&id.as_str()),
        "the scheduled part and its order, by the roll-up, once each: {risky:?}"
    );
    assert_eq!(announced.len(), 2, "{risky:?}");
    assert!(
        risky
            .iter()
            .all(|e| e["data"]["computed"]["isAtRisk"] == true)
    );
    // When the due date passes it is late, announced by the job, and at risk no more.
    clock.advance(Duration::from_secs(3601));
    let late = wait_events(&api, LATE, 1).await;
    assert!(
        late.iter().any(|e| e["recordId"] == part.as_str()),
        "{late:?}"
    );

    // Ready: the successor of a dependency waits until its predecessor is done.
    let o = node(&api, "O", "order", None).await;
    let a = node(&api, "a", "step", Some(&o)).await;
    let b = node(&api, "b", "step", Some(&o)).await;
    api.create("dependency", json!({"predecessorId": a, "successorId": b}))
        .await;
    assert_eq!(api.read(D, &b).await["progress"]["status"], "waiting");
    assert!(events(&api, "deliverable.became-ready").await.is_empty());
    let r = api
        .post(
            &format!("/{D}/root/{o}/progress/{a}"),
            json!({"type": "complete"}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    let ready = events(&api, "deliverable.became-ready").await;
    assert_eq!(ready.len(), 1, "{ready:?}");
    assert_eq!(ready[0]["recordId"], b.as_str());
    assert_eq!(ready[0]["data"]["progress"]["status"], "todo");
    // Right after the write's own event, in its transaction.
    let todo = events(&api, "deliverable.progress.todo").await;
    let own = todo.iter().find(|e| e["recordId"] == b.as_str()).unwrap();
    let cursor = |e: &Value| e["cursor"].as_str().unwrap().parse::<i64>().unwrap();
    assert_eq!(cursor(&ready[0]), cursor(own) + 1);
    // Undone and done again: each release is a transition.
    let r = api
        .post(
            &format!("/{D}/root/{o}/progress/{a}"),
            json!({"type": "rework"}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    let r = api
        .post(
            &format!("/{D}/root/{o}/progress/{a}"),
            json!({"type": "complete"}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    let ready = events(&api, "deliverable.became-ready").await;
    assert_eq!(ready.len(), 2, "{ready:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_receive_the_announcements() {
    let clock = Clock::manual();
    let c = clock.clone();
    let server = TestServer::start_isolated_with(move |conf| {
        with_job(conf, &c);
        conf.webhooks.deliver = true;
        conf.webhooks.allow = AllowList::parse("127.0.0.1").unwrap();
    })
    .await;
    alert_events_started(&server).await;
    let api = server.org("time-hooks").await;
    let secret = "a-long-enough-secret-0123";
    let receiver = Receiver::start(secret, Mode::Accept).await;
    let r = api
        .post(
            "/webhook",
            json!({"url": receiver.url(), "eventTypes": [LATE], "secret": secret}),
        )
        .await;
    assert_eq!(r.status, 201, "{r}");
    let hook = r.id();
    let start = clock.now_secs();
    let id = order(&api, "Hooked", start + 60).await;
    clock.advance(Duration::from_secs(61));
    let hits = receiver
        .wait_until(WAIT, |hits| hits.iter().any(|h| h.accepted))
        .await;
    let hit = hits.iter().find(|h| h.accepted).unwrap();
    assert!(hit.signature_ok);
    assert_eq!(hit.body["type"], LATE);
    assert_eq!(hit.body["recordId"], id.as_str());
    // Once: the job's next looks announce nothing more.
    a_few_more_runs().await;
    let hits = receiver.hits();
    assert_eq!(
        hits.iter().filter(|h| h.accepted).count(),
        1,
        "one delivery: {hits:?}"
    );
    let r = api.delete(&format!("/webhook/{hook}")).await;
    assert!(r.status < 300, "{r}");
}

/// The test: 10,000 deliverables whose due dates pass give exactly one
/// `deliverable.became-late` each, with two server processes sharing the database and the one
/// running the job killed part way through its turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_due_dates_passing_give_one_event_each_across_a_killed_process() {
    use prodops_server::store::{SqlValue, Tx};
    const N: usize = 10_000;
    let clock = Clock::manual();
    let began = Instant::now();
    let first = server(&clock).await;
    let api = first.org("time-many").await;
    let start = clock.now_secs();
    // Their due dates over 100 seconds, so the turn crosses many instants and batches.
    let nodes: Vec<Value> = (0..N)
        .map(|i| {
            json!({"name": format!("o{i}"), "type": "order",
                   "data": {"dueDate": time(start + 600 + (i % 100) as i64)}})
        })
        .collect();
    let mut ids = Vec::new();
    for chunk in nodes.chunks(2_500) {
        ids.extend(api.bulk_put(D, chunk.to_vec()).await);
    }
    eprintln!("{N} deliverables written: {:?}", began.elapsed());
    a_few_more_runs().await;
    assert!(events(&api, LATE).await.is_empty(), "nothing passed yet");

    // The second process runs the job too, looking every second: it looks once as it starts,
    // then not for a second, so the turn the clock's move brings is the first's (it looks
    // every 100 ms). The first holds the job's lease while that turn goes on.
    let c = clock.clone();
    let second = first
        .another_with(move |conf| {
            with_job(conf, &c);
            conf.alert_events = Some(Duration::from_secs(1));
        })
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    clock.advance(Duration::from_secs(700));
    // Kill the first as soon as its turn has committed a batch and not finished: the
    // watermark then names a position inside the interval.
    let watermark = |server: &TestServer| {
        let store = server.running().store().clone();
        async move {
            let rows = store
                .read(|tx: &mut dyn Tx| {
                    tx.query(
                        "SELECT payload FROM jobs WHERE id = ?",
                        &[SqlValue::from(prodops_server::jobs::ALERT_EVENTS_ID)],
                    )
                })
                .await
                .unwrap();
            serde_json::from_str::<Value>(rows[0][0].as_str().unwrap()).unwrap()["watermark"]
                .clone()
        }
    };
    let deadline = Instant::now() + WAIT;
    let payload = loop {
        let payload = watermark(&second).await;
        if payload["after"].is_string() {
            break payload;
        }
        assert!(Instant::now() < deadline, "no batch committed: {payload}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    drop(first);
    eprintln!("the first server killed: {:?}", began.elapsed());
    let api = api.on(&second);
    let announced_then = events(&api, LATE).await.len();
    assert!(
        announced_then < N,
        "killed part way ({announced_then} announced, watermark {payload})"
    );

    // The second finishes the turn once the lease runs out: wait for the watermark to reach
    // its end (cheaper to ask than the 10,000 events).
    let deadline = Instant::now() + WAIT;
    loop {
        let w = watermark(&second).await;
        if w["after"].is_null() && w["at"] == w["to"] && w["to"].as_i64() >= Some(start + 700) {
            break;
        }
        assert!(Instant::now() < deadline, "the turn never ended: {w}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let got = wait_events(&api, LATE, N).await;
    eprintln!("all announced: {:?}", began.elapsed());
    a_few_more_runs().await;
    let got_after = events(&api, LATE).await;
    assert_eq!(got_after.len(), N, "exactly one each, no more later");
    let mut announced: Vec<&str> = got
        .iter()
        .map(|e| e["recordId"].as_str().unwrap())
        .collect();
    announced.sort_unstable();
    announced.dedup();
    let mut expected: Vec<&str> = ids.iter().map(String::as_str).collect();
    expected.sort_unstable();
    assert_eq!(announced, expected, "each deliverable once");
    assert!(
        got.iter().all(|e| e["data"]["computed"]["isLate"] == true),
        "each as of its transition"
    );
    second.shutdown().await;
}
