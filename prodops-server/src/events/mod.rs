//! `GET /event`: the change feed (docs/events.md). The events themselves are written by the
//! engine's pipeline and appended by `http::app::write_reply` in each write's transaction
//! (`engine::events`, `store::events`); this module reads them, within what the key may read,
//! and waits for new ones on request (long polling).

use std::time::Duration;

use prodops_core::api;
use prodops_core::api::event::{DEFAULT_LIMIT, MAX_LIMIT, MAX_WAIT_SECS};
use prodops_core::event::{Cursor, Event, EventPage, TypeFilter, parse_type_filter};
use prodops_core::registry;
use uuid::Uuid;

use crate::http::call::Call;
use crate::http::context::{Action, Auth};
use crate::http::error::{ApiError, ApiResult};
use crate::http::typed::{Answered, ServedQuery};
use crate::store::events::{EventFilter, StoredEvent};

crate::http::action::handle! {
    api::event::List => list;
}

/// How often a waiting reader looks again for events another server process committed (this
/// process's own commits wake it at once).
const RECHECK: Duration = Duration::from_millis(250);

/// The parsed query of `GET /event`.
#[derive(Debug, Default)]
pub struct Query {
    filter: EventFilter,
    wait: Duration,
}

impl ServedQuery for api::event::EventQuery {
    type Value = Query;
    fn from_query(query: Option<&str>) -> ApiResult<Query> {
        parse_query(query)
    }
}

fn parse_query(raw: Option<&str>) -> ApiResult<Query> {
    let mut q = Query::default();
    q.filter.limit = DEFAULT_LIMIT;
    let mut resources: Option<Vec<String>> = None;
    for (k, v) in form_urlencoded::parse(raw.unwrap_or_default().as_bytes()) {
        // Values are taken as sent (no trimming), so that the document's patterns say exactly
        // what is accepted. An empty value is the parameter left out (`--since ""` in a
        // script, `?type=`).
        let v = v.as_ref();
        if v.is_empty() && matches!(k.as_ref(), "after" | "type" | "resource") {
            continue;
        }
        match k.as_ref() {
            "after" => {
                q.filter.after = Cursor::parse(v)
                    .ok_or_else(|| {
                        ApiError::field(
                            "after",
                            "must be a cursor the feed answered (a whole number)",
                        )
                    })?
                    .0;
            }
            "type" => {
                for t in v.split(',') {
                    match parse_type_filter(t)
                        .map_err(|e| ApiError::field("type", e.to_string()))?
                    {
                        TypeFilter::Prefix(prefix) => {
                            q.filter.type_prefixes.push(prefix.to_string())
                        }
                        TypeFilter::Exact(t) => q.filter.types.push(t.to_string()),
                    }
                }
            }
            "resource" => {
                for r in v.split(',') {
                    if registry::by_path(r).is_none() {
                        return Err(ApiError::field(
                            "resource",
                            format!("{r:?} is not a resource path"),
                        ));
                    }
                    resources.get_or_insert_with(Vec::new).push(r.to_string());
                }
            }
            "recordId" => {
                let id = Uuid::parse_str(v)
                    .map_err(|_| ApiError::field("recordId", "must be a UUID"))?;
                q.filter.record_id = Some(id.to_string());
            }
            "limit" => {
                q.filter.limit = v
                    .parse::<u64>()
                    .ok()
                    .filter(|n| (1..=MAX_LIMIT).contains(n))
                    .ok_or_else(|| {
                        ApiError::field(
                            "limit",
                            format!("must be a whole number from 1 to {MAX_LIMIT}"),
                        )
                    })?;
            }
            "wait" => {
                let secs = v
                    .parse::<u64>()
                    .ok()
                    .filter(|n| *n <= MAX_WAIT_SECS)
                    .ok_or_else(|| {
                        ApiError::field(
                            "wait",
                            format!("must be a whole number of seconds from 0 to {MAX_WAIT_SECS}"),
                        )
                    })?;
                q.wait = Duration::from_secs(secs);
            }
            other => {
                return Err(ApiError::field(
                    other,
                    "unknown parameter; use after, type, resource, recordId, limit or wait",
                ));
            }
        }
    }
    q.filter.resources = resources;
    Ok(q)
}

/// Narrows the filter to what the key may read: each named resource needs `<Resource>.Read`
/// (403 otherwise); without names, a key that is not an admin reads the events of the
/// resources it may read.
fn scope(auth: &Auth, filter: &mut EventFilter) -> ApiResult<()> {
    match &filter.resources {
        Some(named) => {
            for r in named {
                let kind = registry::by_path(r).ok_or_else(|| {
                    ApiError::field("resource", format!("{r:?} is not a resource path"))
                })?;
                auth.require(kind.desc().permission, Action::Read)?;
            }
        }
        None if auth.admin => {}
        None => {
            filter.resources = Some(
                registry::resources()
                    .iter()
                    .filter(|k| auth.require(k.desc().permission, Action::Read).is_ok())
                    .map(|k| k.desc().path.to_string())
                    .collect(),
            );
        }
    }
    Ok(())
}

/// An event as `GET /event` answers it (and webhooks deliver it).
pub fn event_of(e: StoredEvent) -> ApiResult<Event> {
    let parse_id = |s: &str| Uuid::parse_str(s).map_err(ApiError::internal);
    Ok(Event {
        id: parse_id(&e.id)?,
        cursor: Cursor(e.seq).to_string(),
        event_type: e.event_type,
        resource: e.resource,
        record_id: parse_id(&e.record_id)?,
        key_id: e.key_id.as_deref().map(parse_id).transpose()?,
        request_id: e.request_id,
        occurred_at: e.occurred_at,
        data: serde_json::from_str(&e.data).map_err(ApiError::internal)?,
        changed: e
            .changed
            .as_deref()
            .map(serde_json::from_str::<Vec<String>>)
            .transpose()
            .map_err(ApiError::internal)?,
    })
}

async fn list(call: Call, (): (), mut q: Query, (): ()) -> ApiResult<Answered<api::event::List>> {
    scope(&call.auth, &mut q.filter)?;
    let org = call.org();
    let deadline = tokio::time::Instant::now() + q.wait;
    let state = call.state.clone();
    let mut first = true;
    loop {
        // Registered before the read, so a commit between the read and the wait wakes it.
        let notified = state.events.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let filter = q.filter.clone();
        let rows = state
            .store
            .read(move |tx| {
                let rows = crate::store::events::read(tx, org, &filter)?;
                let after = filter.after;
                // The feed never skips silently: when the answer does not start right after
                // `after`, the events in between may have been pruned. Read after the events,
                // so a prune between the two reads is seen (the oldest kept only grows). An
                // empty answer after the first look skips nothing: it hands `after` back.
                let may_skip = match rows.first() {
                    Some(e) => e.seq != after + 1,
                    None => first,
                };
                if after > 0 && may_skip {
                    let oldest = crate::store::events::oldest_kept(tx, org)?;
                    if after + 1 < oldest {
                        return Err(ApiError::events_gone(after, oldest));
                    }
                }
                Ok::<_, ApiError>(rows)
            })
            .await?;
        first = false;
        let now = tokio::time::Instant::now();
        if !rows.is_empty() || now >= deadline {
            let next = rows.last().map_or(q.filter.after, |e| e.seq);
            let values = rows.into_iter().map(event_of).collect::<ApiResult<_>>()?;
            let page = EventPage {
                values,
                next_cursor: Cursor(next).to_string(),
            };
            return Ok(Answered::new(page.into()));
        }
        let nap = (deadline - now).min(RECHECK);
        tokio::select! {
            _ = &mut notified => {}
            _ = tokio::time::sleep(nap) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_read_and_refused_by_field() {
        let q = parse_query(Some(
            "after=5&type=worker.archived,deliverable.progress.*&resource=worker&limit=10&wait=2",
        ))
        .unwrap();
        assert_eq!(q.filter.after, 5);
        assert_eq!(q.filter.types, ["worker.archived"]);
        assert_eq!(q.filter.type_prefixes, ["deliverable.progress."]);
        assert_eq!(q.filter.resources, Some(vec!["worker".to_string()]));
        assert_eq!(q.filter.limit, 10);
        assert_eq!(q.wait, Duration::from_secs(2));
        for (query, field) in [
            ("after=x", "after"),
            ("limit=0", "limit"),
            ("limit=1001", "limit"),
            ("wait=31", "wait"),
            ("resource=nope", "resource"),
            ("type=a*", "type"),
            ("type=%C2%84", "type"),
            ("type=a,,b", "type"),
            ("type=%20worker.created", "type"),
            ("after=%205", "after"),
            ("recordId=1", "recordId"),
            ("recordId=", "recordId"),
            ("color=red", "color"),
        ] {
            let e = parse_query(Some(query)).unwrap_err();
            assert_eq!(e.status.as_u16(), 400, "{query}");
            assert!(format!("{:?}", e.details).contains(field), "{query}: {e:?}");
        }
    }

    #[test]
    fn empty_values_are_parameters_left_out() {
        let q = parse_query(Some("after=&type=&resource=")).unwrap();
        assert_eq!(q.filter.after, 0);
        assert!(q.filter.resources.is_none() && q.filter.types.is_empty());
        assert!(q.filter.type_prefixes.is_empty());
    }

    #[test]
    fn defaults_read_the_whole_feed_without_waiting() {
        let q = parse_query(None).unwrap();
        assert_eq!(q.filter.limit, DEFAULT_LIMIT);
        assert_eq!(q.filter.after, 0);
        assert_eq!(q.wait, Duration::ZERO);
        assert!(q.filter.resources.is_none() && q.filter.types.is_empty());
    }
}
