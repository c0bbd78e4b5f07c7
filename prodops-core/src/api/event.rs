//! The change feed (docs/events.md): `GET /event`, every write of the organization as an
//! event, read by cursor, with long polling.

use uuid::Uuid;

use super::endpoint::{
    Access, Cli, Json, NoBody, OtherAnswer, ParamKind, ParamValues, QueryArgs, QueryParam, action,
    flag, push,
};
use crate::event::EventPage;

/// The most events one page holds, and the default.
pub const MAX_LIMIT: u64 = 1000;
pub const DEFAULT_LIMIT: u64 = 100;
/// The longest `wait`, in seconds.
pub const MAX_WAIT_SECS: u64 = 30;

/// The parameters of `GET /event`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventQuery {
    /// Only events after this cursor (`0` or absent: from the oldest kept).
    pub after: Option<String>,
    /// Only events of these types (`worker.archived`, or a prefix pattern
    /// `deliverable.progress.*`); several are comma-separated.
    pub event_type: Option<String>,
    /// Only events of records of these resources (`worker`, `delivery`); comma-separated.
    pub resource: Option<String>,
    /// Only events of this record (its audit trail).
    pub record_id: Option<Uuid>,
    /// At most this many events (default 100, at most 1000).
    pub limit: Option<u64>,
    /// When no event follows the cursor, wait up to this many seconds (at most 30) for one.
    pub wait: Option<u64>,
}

/// What `after` takes: a cursor, a whole number of at most 18 digits.
fn cursor_pattern() -> String {
    "^[0-9]{0,18}$".into()
}

/// What `resource` takes: registered resource paths, comma-separated.
fn resource_list_pattern() -> String {
    let paths: Vec<String> = crate::registry::resources()
        .iter()
        .map(|r| crate::event::regex_escape(r.desc().path))
        .collect();
    crate::event::list_pattern(&format!("(?:{})", paths.join("|")))
}

/// The answer to a cursor whose following events were pruned (docs/events.md, "Retention").
pub const GONE: OtherAnswer = OtherAnswer {
    status: 410,
    description: "`GONE`: the events after `after` are no longer kept (older than the feed's \
        retention), so a follower would miss some. The detail names `after` and carries \
        `oldestCursor`, the cursor of the oldest event kept (the next event's when none is kept); \
        ask with `after=0` to read from it.",
    schema: gone_schema,
};

/// The body of [`GONE`]: the error shape (decisions.md 3) with its one detail.
fn gone_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "required": ["error"],
        "properties": { "error": {
            "type": "object",
            "required": ["code", "message", "requestId", "details"],
            "properties": {
                "code": { "type": "string", "enum": ["GONE"] },
                "message": { "type": "string" },
                "requestId": { "type": "string" },
                "details": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["field", "message", "oldestCursor"],
                        "properties": {
                            "field": { "type": "string", "enum": ["after"] },
                            "message": { "type": "string" },
                            "oldestCursor": { "type": "string", "pattern": "^[0-9]{1,18}$" }
                        }
                    }
                }
            }
        }}
    })
}

impl QueryArgs for EventQuery {
    const PARAMS: &'static [QueryParam] = &[
        QueryParam {
            name: "after",
            kind: ParamKind::Text,
            required: false,
            description: "Only events after this cursor (an event's `cursor`, or a page's `nextCursor`)",
            values: ParamValues::Pattern(cursor_pattern),
        },
        QueryParam {
            name: "type",
            kind: ParamKind::Text,
            required: false,
            description: "Only these event types, comma-separated; `prefix.*` matches a prefix",
            values: ParamValues::Pattern(crate::event::type_list_pattern),
        },
        QueryParam {
            name: "resource",
            kind: ParamKind::Text,
            required: false,
            description: "Only events of these resources (resource paths), comma-separated",
            values: ParamValues::Pattern(resource_list_pattern),
        },
        QueryParam {
            name: "recordId",
            kind: ParamKind::Uuid,
            required: false,
            description: "Only events of this record (its audit trail)",
            values: ParamValues::Any,
        },
        QueryParam {
            name: "limit",
            kind: ParamKind::Integer,
            required: false,
            description: "At most this many events (default 100, at most 1000)",
            values: ParamValues::Range {
                min: 1,
                max: MAX_LIMIT,
            },
        },
        QueryParam {
            name: "wait",
            kind: ParamKind::Integer,
            required: false,
            description: "Seconds to wait for an event when none follows the cursor (0 to 30)",
            values: ParamValues::Range {
                min: 0,
                max: MAX_WAIT_SECS,
            },
        },
    ];
    fn pairs(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        push(&mut out, "after", self.after.as_ref());
        push(&mut out, "type", self.event_type.as_ref());
        push(&mut out, "resource", self.resource.as_ref());
        push(&mut out, "recordId", self.record_id);
        push(&mut out, "limit", self.limit);
        push(&mut out, "wait", self.wait);
        out
    }
}

action! {
    /// `GET /event`: the change feed.
    List: Get "/event" {
        operation: "event_list",
        tag: "event",
        access: Access::KeyChecked,
        path: (),
        query: EventQuery,
        body: NoBody,
        answer: Json<EventPage>,
        status: 200,
        outcome: "A page of events",
        summary: "The change feed: the organization's writes as events, in commit order",
        description: "Events after `after`, oldest first. A key reads the events of the resources it \
             may read (`<Resource>.Read`; an admin key all): naming a resource it may not read is 403, \
             and without `resource` the others are left out. With `wait`, an empty page is answered \
             only once `wait` seconds passed without an event.",
        other_answers: &[GONE],
        cli: Cli {
            command: "events",
            verb: "list",
            about: "One page of the change feed (see also `events tail`)",
            example: "prodops events list --since beginning --type worker.archived",
            flags: &[
                flag("type", "type", "Only these event types (comma-separated; `prefix.*`)"),
                flag(
                    "after",
                    "since",
                    "Only events after this cursor; `now`: after the newest event, `beginning`: from the oldest kept",
                ),
            ],
        },
    }
}
