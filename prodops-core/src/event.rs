//! The change feed (docs/events.md): what one write of a record announces, as plain functions.
//!
//! Every successful write of a record appends one event in the write's own transaction. Its
//! `type` is derived here from the resource and the record before and after the change
//! ([`event_type`]); for an update the event also lists the top-level fields that changed
//! ([`changed_fields`]). Events are read in cursor order (`GET /event`); a cursor is the
//! event's position in its organization's feed, a whole number written as text ([`Cursor`]).

use std::fmt;

use crate::openapi::ToSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// The kind of change a write made to one record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change<'a> {
    Created(&'a Value),
    Updated { old: &'a Value, new: &'a Value },
    Deleted(&'a Value),
}

/// The resource whose creations are announced as `inventory.posted` (ledger postings).
pub const LEDGER: &str = "inventory-transaction";

/// The type of the event that ends a catalog code rename (spec 2.8 rule 2): announced once the
/// background job has rewritten every stored reference to the old code (each rewritten record
/// announced as its own update before it), with the renamed entry as it is then.
pub const CODE_RENAMED: &str = "catalog-entry.renamed";

/// The response header of a read (a list page, a query, an export) that names the feed cursor
/// the answer is consistent with: the answer holds the effects of exactly the organization's
/// events up to it, and none after it (docs/events.md, "Reads that name their cursor").
/// Lowercase, as HTTP/2 writes header names; HTTP reads it in any case.
pub const FEED_CURSOR_HEADER: &str = "prodops-feed-cursor";

/// A deliverable turned late by the passage of time: its `computed.lateAt` passed while no
/// write was needed for it (docs/events.md, "Events for what time changes"). Announced by the
/// recurring `alert_events` job within its poll interval, once per transition.
pub const BECAME_LATE: &str = "deliverable.became-late";

/// A deliverable turned at risk (`computed.isAtRisk` false to true). Time never makes a
/// deliverable at risk (it only ends being at risk when its due date passes), so the write
/// that does announces it, in its own transaction, right after its own event.
pub const BECAME_AT_RISK: &str = "deliverable.became-at-risk";

/// A deliverable turned ready: its `progress.status` went from `waiting` to `todo` because no
/// predecessor holds it back any more (docs/deliverables.md, "Readiness"). Readiness changes
/// only by writes, so the write that releases it announces it, in its own transaction.
pub const BECAME_READY: &str = "deliverable.became-ready";

/// The event types not made of a resource path and a change: the OpenAPI document lists them
/// as examples of an event's `type`.
pub const FIXED_TYPES: &[&str] = &[
    "inventory.posted",
    CODE_RENAMED,
    BECAME_LATE,
    BECAME_AT_RISK,
    BECAME_READY,
];

/// The announcements of a deliverable's write beside its own event: [`BECAME_READY`] when its
/// status goes from `waiting` to `todo`, [`BECAME_AT_RISK`] when it was not at risk as of the
/// write's moment before the write and is after it.
///
/// ```
/// use prodops_core::event::{BECAME_READY, deliverable_transitions};
/// assert_eq!(deliverable_transitions(Some("waiting"), Some("todo"), false, false), [BECAME_READY]);
/// assert!(deliverable_transitions(Some("todo"), Some("wip"), false, false).is_empty());
/// ```
pub fn deliverable_transitions(
    old_status: Option<&str>,
    new_status: Option<&str>,
    old_at_risk: bool,
    new_at_risk: bool,
) -> Vec<&'static str> {
    let mut out = Vec::new();
    if old_status == Some("waiting") && new_status == Some("todo") {
        out.push(BECAME_READY);
    }
    if !old_at_risk && new_at_risk {
        out.push(BECAME_AT_RISK);
    }
    out
}

/// The event type of a change to a record of the resource served at `/<resource>`:
///
/// - a creation: `<resource>.created` (a ledger row: `inventory.posted`);
/// - a deletion: `<resource>.deleted`;
/// - an update that archives or restores: `<resource>.archived` / `<resource>.restored`;
/// - an update of a deliverable's `progress.status`: `deliverable.progress.<status>`;
/// - an update of a delivery's `status`: `delivery.<status>`;
/// - any other update: `<resource>.updated`.
///
/// The first that applies is the type (one event per change).
///
/// ```
/// use prodops_core::event::{Change, event_type};
/// use serde_json::json;
/// let old = json!({"isArchived": false});
/// let new = json!({"isArchived": true});
/// assert_eq!(event_type("worker", Change::Updated { old: &old, new: &new }), "worker.archived");
/// ```
pub fn event_type(resource: &str, change: Change<'_>) -> String {
    match change {
        Change::Created(_) if resource == LEDGER => "inventory.posted".to_string(),
        Change::Created(_) => format!("{resource}.created"),
        Change::Deleted(_) => format!("{resource}.deleted"),
        Change::Updated { old, new } => {
            let archived = |v: &Value| v.get("isArchived").and_then(Value::as_bool) == Some(true);
            match (archived(old), archived(new)) {
                (false, true) => return format!("{resource}.archived"),
                (true, false) => return format!("{resource}.restored"),
                _ => {}
            }
            let status_path: &[&str] = match resource {
                "deliverable" => &["progress", "status"],
                "delivery" => &["status"],
                _ => &[],
            };
            if !status_path.is_empty() {
                let at = |v: &Value| {
                    status_path
                        .iter()
                        .try_fold(v, |v, k| v.get(*k))
                        .and_then(Value::as_str)
                        .map(str::to_string)
                };
                if let Some(status) = at(new)
                    && at(old).as_ref() != Some(&status)
                {
                    let prefix = status_path[..status_path.len() - 1]
                        .iter()
                        .fold(resource.to_string(), |p, k| format!("{p}.{k}"));
                    return format!("{prefix}.{status}");
                }
            }
            format!("{resource}.updated")
        }
    }
}

/// The top-level fields whose values differ between `old` and `new`, sorted, without
/// `updatedAt` (which moves on every change).
///
/// ```
/// use serde_json::json;
/// let got = prodops_core::event::changed_fields(&json!({"a": 1, "b": 2}), &json!({"a": 1, "c": 3}));
/// assert_eq!(got, ["b", "c"]);
/// ```
pub fn changed_fields(old: &Value, new: &Value) -> Vec<String> {
    let empty = serde_json::Map::new();
    let o = old.as_object().unwrap_or(&empty);
    let n = new.as_object().unwrap_or(&empty);
    let mut out: Vec<String> = o
        .keys()
        .chain(n.keys())
        .filter(|k| k.as_str() != "updatedAt" && o.get(*k) != n.get(*k))
        .cloned()
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Whether `ty` is matched by a `type` filter: equal, or a pattern ending in `.*` that is a
/// prefix of it (`deliverable.progress.*`).
///
/// ```
/// use prodops_core::event::type_matches;
/// assert!(type_matches("deliverable.progress.*", "deliverable.progress.done"));
/// assert!(!type_matches("deliverable.progress.*", "deliverable.updated"));
/// ```
pub fn type_matches(pattern: &str, ty: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) if prefix.ends_with('.') => ty.starts_with(prefix),
        _ => pattern == ty,
    }
}

/// The longest item of a `type` filter (`GET /event?type=`): an event type, or a pattern
/// ending in `.*`.
pub const TYPE_FILTER_MAX_LEN: usize = 200;

/// The characters of an event type: ASCII letters and digits and `_ . / -`.
pub fn is_type_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"_./-".contains(&b)
}

/// One item of a `type` filter, read by [`parse_type_filter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeFilter<'a> {
    /// An exact type (`worker.archived`).
    Exact(&'a str),
    /// The types starting with this prefix, which ends in `.` (`deliverable.progress.`).
    Prefix(&'a str),
}

/// Why an item of a `type` filter is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TypeFilterError {
    /// Empty, longer than [`TYPE_FILTER_MAX_LEN`], or a character outside [`is_type_char`].
    #[error("must be event types separated by commas")]
    NotAType,
    /// A `*` that does not follow a `.` at the end.
    #[error("a pattern ends in `.*` (deliverable.progress.*)")]
    BadPattern,
}

/// Reads one item of a `type` filter (the filter is such items separated by commas, as sent:
/// no spaces are trimmed). [`type_filter_pattern`] is the same rule as a regular expression,
/// for the API document.
///
/// ```
/// use prodops_core::event::{TypeFilter, TypeFilterError, parse_type_filter};
/// assert_eq!(parse_type_filter("worker.archived"), Ok(TypeFilter::Exact("worker.archived")));
/// assert_eq!(parse_type_filter("deliverable.progress.*"), Ok(TypeFilter::Prefix("deliverable.progress.")));
/// assert_eq!(parse_type_filter("worker*"), Err(TypeFilterError::BadPattern));
/// assert_eq!(parse_type_filter(" worker.created"), Err(TypeFilterError::NotAType));
/// ```
pub fn parse_type_filter(item: &str) -> Result<TypeFilter<'_>, TypeFilterError> {
    let name = item.strip_suffix('*').unwrap_or(item);
    if item.is_empty() || item.len() > TYPE_FILTER_MAX_LEN || !name.bytes().all(is_type_char) {
        return Err(TypeFilterError::NotAType);
    }
    match item.strip_suffix('*') {
        Some(prefix) if prefix.ends_with('.') => Ok(TypeFilter::Prefix(prefix)),
        Some(_) => Err(TypeFilterError::BadPattern),
        None => Ok(TypeFilter::Exact(item)),
    }
}

/// [`parse_type_filter`]'s rule as a regular expression (no anchors) matching one item: an
/// exact type or a pattern ending in `.*`, at most [`TYPE_FILTER_MAX_LEN`] characters.
pub fn type_filter_pattern() -> String {
    const CHARS: &str = "[A-Za-z0-9_./-]";
    format!(
        r"(?:{CHARS}{{1,{max}}}|{CHARS}{{0,{prefix}}}\.\*)",
        max = TYPE_FILTER_MAX_LEN,
        prefix = TYPE_FILTER_MAX_LEN - 2
    )
}

/// What the feed's `type` parameter takes: [`type_filter_pattern`] items, comma-separated.
pub fn type_list_pattern() -> String {
    list_pattern(&type_filter_pattern())
}

/// A comma-separated list of `item`s (a regular expression, no anchors), or nothing.
pub fn list_pattern(item: &str) -> String {
    format!("^(?:{item}(?:,{item})*)?$")
}

/// `text` as a regular expression matching exactly it.
pub fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if r"\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A position in an organization's feed: the events after it are those not yet read.
/// Written as a whole number (`0` is the start of the feed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cursor(pub i64);

impl Cursor {
    /// Reads a cursor as the feed writes it; `None` for anything else.
    ///
    /// ```
    /// use prodops_core::event::Cursor;
    /// assert_eq!(Cursor::parse("42"), Some(Cursor(42)));
    /// assert_eq!(Cursor::parse("-1"), None);
    /// assert_eq!(Cursor::parse("4x"), None);
    /// ```
    pub fn parse(text: &str) -> Option<Cursor> {
        if text.is_empty() || text.len() > 18 || !text.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        text.parse().ok().map(Cursor)
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// One event of the feed, as `GET /event` answers it and webhooks would send it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// Unique id of the event (UUIDv7, time-ordered): the key to drop a duplicate by.
    pub id: Uuid,
    /// The event's position in its organization's feed: pass it as `after` to read what
    /// follows. Cursors of one organization increase in commit order, without gaps.
    pub cursor: String,
    /// `<resource>.created|updated|archived|restored|deleted`, `inventory.posted`,
    /// `deliverable.progress.<status>`, `delivery.<status>`, `catalog-entry.renamed`, and the
    /// announcements of transitions: `deliverable.became-late` (its `lateAt` passed),
    /// `deliverable.became-at-risk`, `deliverable.became-ready` (waiting to todo)
    /// (docs/events.md).
    #[serde(rename = "type")]
    pub event_type: String,
    /// The resource path of the record (`worker`, `deliverable`, `inventory-transaction`).
    pub resource: String,
    pub record_id: Uuid,
    /// The API key whose request made the change (for a background job's change, the key of
    /// the request that queued the job); `null` for changes the server made on its own.
    pub key_id: Option<Uuid>,
    /// The `X-Request-Id` of that request; `null` when there is none.
    pub request_id: Option<String>,
    /// When the change was made (the request's time).
    pub occurred_at: String,
    /// The record after the change; for a deletion, the record as it was.
    #[schema(value_type = Object)]
    pub data: Value,
    /// For an update, the top-level fields that changed; `null` otherwise.
    pub changed: Option<Vec<String>>,
}

/// One page of the feed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventPage {
    /// Events after the requested cursor, oldest first.
    pub values: Vec<Event>,
    /// The cursor to ask for next: the last event's, or the requested one when the page is
    /// empty.
    pub next_cursor: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn upd(resource: &str, old: Value, new: Value) -> String {
        event_type(
            resource,
            Change::Updated {
                old: &old,
                new: &new,
            },
        )
    }

    #[test]
    fn types_of_creations_and_deletions() {
        let v = json!({"id": "x"});
        assert_eq!(event_type("worker", Change::Created(&v)), "worker.created");
        assert_eq!(event_type(LEDGER, Change::Created(&v)), "inventory.posted");
        assert_eq!(event_type("note", Change::Deleted(&v)), "note.deleted");
    }

    #[test]
    fn archive_transitions_come_first() {
        assert_eq!(
            upd(
                "worker",
                json!({"isArchived": true}),
                json!({"isArchived": false})
            ),
            "worker.restored"
        );
        // A delivery archived while its status changes is announced as archived.
        assert_eq!(
            upd(
                "delivery",
                json!({"isArchived": false, "status": "expected"}),
                json!({"isArchived": true, "status": "cancelled"})
            ),
            "delivery.archived"
        );
        assert_eq!(
            upd("worker", json!({"name": "a"}), json!({"name": "b"})),
            "worker.updated"
        );
    }

    #[test]
    fn status_changes() {
        assert_eq!(
            upd(
                "deliverable",
                json!({"progress": {"status": "wip"}}),
                json!({"progress": {"status": "done"}})
            ),
            "deliverable.progress.done"
        );
        assert_eq!(
            upd(
                "deliverable",
                json!({"progress": null}),
                json!({"progress": {"status": "on-hold"}})
            ),
            "deliverable.progress.on-hold"
        );
        assert_eq!(
            upd(
                "deliverable",
                json!({"progress": {"status": "done"}, "name": "a"}),
                json!({"progress": {"status": "done"}, "name": "b"})
            ),
            "deliverable.updated"
        );
        assert_eq!(
            upd(
                "delivery",
                json!({"status": "expected"}),
                json!({"status": "received"})
            ),
            "delivery.received"
        );
        // Only deliverables and deliveries have announced statuses.
        assert_eq!(
            upd("worker", json!({"status": "a"}), json!({"status": "b"})),
            "worker.updated"
        );
    }

    #[test]
    fn changed_fields_ignore_updated_at() {
        assert_eq!(
            changed_fields(
                &json!({"a": 1, "updatedAt": "x"}),
                &json!({"a": 2, "updatedAt": "y"})
            ),
            ["a"]
        );
        assert!(changed_fields(&json!({"a": 1}), &json!({"a": 1})).is_empty());
    }

    #[test]
    fn cursors_read_only_what_they_write() {
        assert_eq!(Cursor::parse("0"), Some(Cursor(0)));
        assert_eq!(Cursor::parse(""), None);
        assert_eq!(Cursor::parse("+1"), None);
        assert_eq!(Cursor::parse("1234567890123456789"), None);
        assert_eq!(Cursor(17).to_string(), "17");
    }

    fn small_object() -> impl Strategy<Value = Value> {
        proptest::collection::btree_map("[a-d]", 0i64..3, 0..4)
            .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k, json!(v))).collect()))
    }

    #[test]
    fn the_type_pattern_is_the_one_the_document_had() {
        assert_eq!(
            type_filter_pattern(),
            r"(?:[A-Za-z0-9_./-]{1,200}|[A-Za-z0-9_./-]{0,198}\.\*)"
        );
    }

    #[test]
    fn type_filter_edges() {
        let long = "a".repeat(TYPE_FILTER_MAX_LEN);
        assert_eq!(parse_type_filter(&long), Ok(TypeFilter::Exact(&long)));
        assert!(parse_type_filter(&format!("{long}a")).is_err());
        let pattern = format!("{}.*", "a".repeat(TYPE_FILTER_MAX_LEN - 2));
        assert!(parse_type_filter(&pattern).is_ok());
        assert!(parse_type_filter(&format!("a{pattern}")).is_err());
        assert_eq!(parse_type_filter(".*"), Ok(TypeFilter::Prefix(".")));
        for bad in ["", "*", "a b", "a,b", "a.**", "é", "a*b"] {
            assert!(parse_type_filter(bad).is_err(), "{bad:?}");
        }
    }

    proptest! {
        // What the pattern describes, the function accepts (the strategy is the pattern).
        #[test]
        fn the_pattern_s_types_are_accepted(t in "[A-Za-z0-9_./-]{1,200}") {
            prop_assert_eq!(parse_type_filter(&t), Ok(TypeFilter::Exact(t.as_str())));
        }

        #[test]
        fn the_pattern_s_prefixes_are_accepted(p in "[A-Za-z0-9_./-]{0,198}") {
            let item = format!("{p}.*");
            let prefix = format!("{p}.");
            prop_assert_eq!(parse_type_filter(&item), Ok(TypeFilter::Prefix(prefix.as_str())));
        }

        // And what it accepts, the pattern describes: every accepted item is made of the
        // pattern's characters with at most a final `*` after a `.`, within the length.
        #[test]
        fn accepted_items_are_the_pattern_s(t in "[A-Za-z0-9_./* ,é-]{0,205}") {
            if let Ok(f) = parse_type_filter(&t) {
                prop_assert!(t.len() <= TYPE_FILTER_MAX_LEN);
                match f {
                    TypeFilter::Exact(e) => {
                        prop_assert!(!e.is_empty() && e.bytes().all(is_type_char));
                    }
                    TypeFilter::Prefix(p) => {
                        prop_assert!(p.ends_with('.') && p.bytes().all(is_type_char));
                        prop_assert_eq!(format!("{p}*"), t.clone());
                    }
                }
            }
        }

        #[test]
        fn cursors_round_trip(n in 0i64..=999_999_999_999_999_999) {
            prop_assert_eq!(Cursor::parse(&Cursor(n).to_string()), Some(Cursor(n)));
        }

        #[test]
        fn changed_fields_are_exactly_the_differing_keys(old in small_object(), new in small_object()) {
            let got = changed_fields(&old, &new);
            // Applying the changed fields of `new` to `old` gives `new`.
            let mut patched = old.as_object().unwrap().clone();
            for k in &got {
                match new.get(k) {
                    Some(v) => { patched.insert(k.clone(), v.clone()); }
                    None => { patched.remove(k); }
                }
            }
            prop_assert_eq!(Value::Object(patched), new.clone());
            // And no unchanged field is listed.
            for k in &got {
                prop_assert_ne!(old.get(k), new.get(k));
            }
            prop_assert!(changed_fields(&new, &new).is_empty());
        }

        #[test]
        fn every_change_has_one_type_of_its_resource(
            resource in prop_oneof![Just("worker"), Just("deliverable"), Just("delivery")],
            a in prop_oneof![Just(json!(null)), Just(json!(true)), Just(json!(false))],
            b in prop_oneof![Just(json!(null)), Just(json!(true)), Just(json!(false))],
            s in prop_oneof![Just("wip"), Just("done")],
            t in prop_oneof![Just("wip"), Just("done")],
        ) {
            let old = json!({"isArchived": a, "status": s, "progress": {"status": s}});
            let new = json!({"isArchived": b, "status": t, "progress": {"status": t}});
            let ty = upd(resource, old, new);
            let prefix = format!("{resource}.");
            prop_assert!(ty.starts_with(&prefix));
            let archived = |v: &Value| v == &json!(true);
            if archived(&a) != archived(&b) {
                prop_assert!(ty.ends_with(".archived") || ty.ends_with(".restored"));
            } else if s != t && resource != "worker" {
                let suffix = format!(".{t}");
                prop_assert!(ty.ends_with(&suffix));
            } else {
                prop_assert_eq!(ty, format!("{resource}.updated"));
            }
        }

        #[test]
        fn prefix_patterns_match_their_prefix(a in "[a-z]{1,5}", b in "[a-z]{1,5}") {
            let ty = format!("{a}.{b}");
            let pattern = format!("{a}.*");
            prop_assert!(type_matches(&pattern, &ty));
            prop_assert!(type_matches(&ty, &ty));
            prop_assert!(!type_matches("*", &ty));
        }
    }
}
