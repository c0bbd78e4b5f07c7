//! The change feed (docs/events.md): `GET /event`, every write of the organization as an
//! event, read by cursor, with long polling.

use uuid::Uuid;

use super::endpoint::{
    Access, Cli, Json, NoBody, ParamKind, QueryArgs, QueryParam, action, flag, push,
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

impl QueryArgs for EventQuery {
    const PARAMS: &'static [QueryParam] = &[
        QueryParam {
            name: "after",
            kind: ParamKind::Text,
            required: false,
            description: "Only events after this cursor (an event's `cursor`, or a page's `nextCursor`)",
        },
        QueryParam {
            name: "type",
            kind: ParamKind::Text,
            required: false,
            description: "Only these event types, comma-separated; `prefix.*` matches a prefix",
        },
        QueryParam {
            name: "resource",
            kind: ParamKind::Text,
            required: false,
            description: "Only events of these resources (resource paths), comma-separated",
        },
        QueryParam {
            name: "recordId",
            kind: ParamKind::Uuid,
            required: false,
            description: "Only events of this record (its audit trail)",
        },
        QueryParam {
            name: "limit",
            kind: ParamKind::Integer,
            required: false,
            description: "At most this many events (default 100, at most 1000)",
        },
        QueryParam {
            name: "wait",
            kind: ParamKind::Integer,
            required: false,
            description: "Seconds to wait for an event when none follows the cursor (0 to 30)",
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
