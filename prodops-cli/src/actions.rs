//! Action commands, declared as data: one `ActionSpec` per server action endpoint. Adding an
//! action is adding one entry to `ACTIONS`; the command, its flags, the request and the output
//! are all derived from it.
//!
//! A path template's `{name}` segments become positional arguments in order; each `Flag` maps
//! `--flag VALUE` to a body field (or a query parameter), parsed by its `Kind`. Every action with
//! a body also takes `--data JSON|@file|@-`, the base the flags are set on, for fields without a
//! flag of their own.

/// How a flag's text becomes a JSON value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A UUID, sent as a string.
    Uuid,
    /// Comma-separated UUIDs (the flag may repeat), sent as an array.
    UuidList,
    /// A number.
    Number,
    /// Text.
    Text,
    /// `true` or `false`.
    Bool,
    /// Any JSON value (`[...]`, `{...}`), or `@file`.
    Json,
}

/// Where a flag's value goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum To {
    Body,
    Query,
}

#[derive(Debug, Clone, Copy)]
pub struct Flag {
    /// `--name` on the command line.
    pub name: &'static str,
    /// The body field or query parameter.
    pub field: &'static str,
    pub kind: Kind,
    pub to: To,
    pub required: bool,
    pub help: &'static str,
}

#[derive(Debug, Clone, Copy)]
pub struct ActionSpec {
    /// The command it hangs under (`worker`, `production`, ...): a resource's command or a
    /// group of its own.
    pub command: &'static str,
    pub verb: &'static str,
    pub method: &'static str,
    /// Relative to `/api/v2`; `{name}` segments are positional arguments.
    pub path: &'static str,
    pub flags: &'static [Flag],
    /// Whether the request has a JSON body (and so `--data`).
    pub body: bool,
    pub about: &'static str,
    pub example: &'static str,
}

const fn f(name: &'static str, field: &'static str, kind: Kind, help: &'static str) -> Flag {
    Flag {
        name,
        field,
        kind,
        to: To::Body,
        required: false,
        help,
    }
}

const fn req(name: &'static str, field: &'static str, kind: Kind, help: &'static str) -> Flag {
    Flag {
        name,
        field,
        kind,
        to: To::Body,
        required: true,
        help,
    }
}

const fn query(name: &'static str, field: &'static str, kind: Kind, help: &'static str) -> Flag {
    Flag {
        name,
        field,
        kind,
        to: To::Query,
        required: false,
        help,
    }
}

use Kind::*;

pub const ACTIONS: &[ActionSpec] = &[
    // ---- 4.2 deliverable extras ----
    ActionSpec {
        command: "deliverable",
        verb: "hierarchy",
        method: "GET",
        path: "/deliverable/{id}/hierarchy",
        flags: &[],
        body: false,
        about: "The whole subtree under a deliverable",
        example: "prodops deliverable hierarchy 0191c3a8-... --output csv",
    },
    ActionSpec {
        command: "deliverable",
        verb: "groups",
        method: "POST",
        path: "/deliverable/groups",
        flags: &[req(
            "group-by",
            "groupBy",
            Text,
            "project, stage, people, root or tags",
        )],
        body: true,
        about: "Deliverables grouped by project, stage, people, root or tags",
        example: "prodops deliverable groups --group-by stage",
    },
    ActionSpec {
        command: "deliverable",
        verb: "reorder",
        method: "POST",
        path: "/deliverable/reorder",
        flags: &[
            req(
                "root-parent-id",
                "rootParentId",
                Uuid,
                "The root whose children are reordered",
            ),
            req(
                "ids",
                "orderedDeliverableIds",
                UuidList,
                "The children in their new order (comma-separated)",
            ),
        ],
        body: true,
        about: "Reorders the children of a root",
        example: "prodops deliverable reorder --root-parent-id R --ids A,B,C",
    },
    ActionSpec {
        command: "deliverable",
        verb: "crew-time",
        method: "GET",
        path: "/deliverable/crew-time",
        flags: &[query(
            "deliverable-id",
            "deliverableId",
            Uuid,
            "The deliverable",
        )],
        body: false,
        about: "Crew time by deliverable",
        example: "prodops deliverable crew-time --deliverable-id D",
    },
    ActionSpec {
        command: "deliverable",
        verb: "schedule",
        method: "POST",
        path: "/deliverable/root/{rootId}/schedule/{id}",
        flags: &[
            req(
                "type",
                "type",
                Text,
                "schedule, drag, shrink, expand or reschedule",
            ),
            f("new-start", "newStart", Number, "New start, epoch seconds"),
            f(
                "new-finish",
                "newFinish",
                Number,
                "New finish, epoch seconds",
            ),
            f("new-duration", "newDuration", Number, "New duration"),
        ],
        body: true,
        about: "Applies a schedule action to a deliverable",
        example: "prodops deliverable schedule ROOT ID --type schedule --new-start 1735689600",
    },
    ActionSpec {
        command: "deliverable",
        verb: "schedule-batch",
        method: "POST",
        path: "/deliverable/schedule/batch",
        flags: &[],
        body: true,
        about: "Applies many schedule actions: --data '[{\"rootParentId\":..,\"targetId\":..,\"action\":{..}}]'",
        example: "prodops deliverable schedule-batch --data @actions.json",
    },
    ActionSpec {
        command: "deliverable",
        verb: "progress",
        method: "POST",
        path: "/deliverable/root/{rootId}/progress/{id}",
        flags: &[
            req(
                "type",
                "type",
                Text,
                "complete, uncomplete, send-ahead, rework, put-on-hold, resume-work or set-percentage",
            ),
            f(
                "quantity",
                "quantity",
                Number,
                "For uncomplete and send-ahead",
            ),
            f("percentage", "percentage", Number, "For set-percentage"),
        ],
        body: true,
        about: "Applies a progress action to a deliverable",
        example: "prodops deliverable progress ROOT ID --type send-ahead --quantity 2",
    },
    ActionSpec {
        command: "deliverable",
        verb: "property-counts",
        method: "POST",
        path: "/deliverable/group-and-count",
        flags: &[req(
            "group-by-field",
            "groupByField",
            Text,
            "For example data.properties.<key>",
        )],
        body: true,
        about: "Counts deliverables by the exact stored value of a field",
        example: "prodops deliverable property-counts --group-by-field data.properties.color",
    },
    // ---- 4.3 work sessions ----
    ActionSpec {
        command: "work-session",
        verb: "save",
        method: "POST",
        path: "/deliverable/work-sessions/save",
        flags: &[
            req("shop-id", "shopId", Uuid, "The shop"),
            f(
                "assignments",
                "assignments",
                Json,
                "Worker id -> deliverable ids, as JSON",
            ),
            f("start-date", "startDate", Text, "Date-time (default now)"),
            f(
                "stop-entire-batch",
                "shouldStopEntireBatch",
                Bool,
                "Stop the whole batch",
            ),
        ],
        body: true,
        about: "Saves work-session assignments (starts and stops sessions to match)",
        example: "prodops work-session save --shop-id S --assignments '{\"W\": [\"D1\"]}'",
    },
    ActionSpec {
        command: "work-session",
        verb: "stop",
        method: "POST",
        path: "/deliverable/work-sessions/stop",
        flags: &[
            f(
                "deliverable-ids",
                "deliverableIds",
                UuidList,
                "Stop sessions on these deliverables",
            ),
            f(
                "worker-ids",
                "workerIds",
                UuidList,
                "Stop sessions of these workers",
            ),
            f("end-date", "endDate", Text, "Date-time (default now)"),
        ],
        body: true,
        about: "Stops work sessions by deliverable or worker",
        example: "prodops work-session stop --worker-ids W1,W2",
    },
    // ---- 4.4 production ----
    ActionSpec {
        command: "production",
        verb: "produce",
        method: "POST",
        path: "/production/produce",
        flags: &[
            req(
                "deliverable-id",
                "deliverableId",
                Uuid,
                "The order (or node) produced on",
            ),
            f(
                "quantity",
                "quantityProduced",
                Number,
                "Run multiplier (default 1)",
            ),
            f(
                "output-location-id",
                "outputLocationId",
                Uuid,
                "Where the output goes",
            ),
            f(
                "output-item-id",
                "outputItemId",
                Uuid,
                "Item of an ad-hoc declaration",
            ),
            f("outputs", "outputs", Json, "Explicit outputs, a JSON array"),
        ],
        body: true,
        about: "Posts production output on an order (never posted twice on retries)",
        example: "prodops production produce --deliverable-id ORDER --quantity 2 --output-location-id LOC",
    },
    ActionSpec {
        command: "production",
        verb: "consume",
        method: "POST",
        path: "/production/consume",
        flags: &[
            req(
                "deliverable-id",
                "deliverableId",
                Uuid,
                "The node consuming",
            ),
            f(
                "from-location-id",
                "fromLocationId",
                Uuid,
                "Where stock is drawn from",
            ),
            f(
                "lines",
                "lines",
                Json,
                "Per-item quantity overrides, a JSON array",
            ),
        ],
        body: true,
        about: "Consumes the materials of a node",
        example: "prodops production consume --deliverable-id NODE --from-location-id LOC",
    },
    ActionSpec {
        command: "production",
        verb: "adjust-actual",
        method: "POST",
        path: "/production/adjust-actual",
        flags: &[
            req(
                "stamp-deliverable-id",
                "stampDeliverableId",
                Uuid,
                "The stamped deliverable",
            ),
            req("kind", "kind", Text, "consume or produce"),
            req("item-id", "itemId", Uuid, "The item"),
            req("delta", "delta", Number, "Nonzero signed change"),
        ],
        body: true,
        about: "Corrects an actual produced or consumed quantity",
        example: "prodops production adjust-actual --stamp-deliverable-id D --kind produce --item-id I --delta -1",
    },
    ActionSpec {
        command: "production",
        verb: "status",
        method: "GET",
        path: "/production/order/{id}/status",
        flags: &[],
        body: false,
        about: "Production status of an order",
        example: "prodops production status ORDER",
    },
    ActionSpec {
        command: "production",
        verb: "entries",
        method: "GET",
        path: "/production/order/{id}/entries",
        flags: &[],
        body: false,
        about: "Production trace of an order",
        example: "prodops production entries ORDER --output ndjson",
    },
    // ---- 4.5 BOM ----
    ActionSpec {
        command: "bom-line",
        verb: "prepopulate",
        method: "POST",
        path: "/bom-line/order/{id}/prepopulate",
        flags: &[f(
            "route-deliverable-id",
            "routeDeliverableId",
            Uuid,
            "Fall back to this route's inputs",
        )],
        body: true,
        about: "Seeds an order's BOM from its project (or a route)",
        example: "prodops bom-line prepopulate ORDER --route-deliverable-id ROUTE",
    },
    ActionSpec {
        command: "bom-line",
        verb: "allocate",
        method: "POST",
        path: "/bom-line/order/{id}/allocate",
        flags: &[f("item-ids", "itemIds", UuidList, "Only these items")],
        body: true,
        about: "Reserves an order's materials",
        example: "prodops bom-line allocate ORDER --item-ids I1,I2",
    },
    ActionSpec {
        command: "bom-line",
        verb: "allocate-project",
        method: "POST",
        path: "/bom-line/project/{id}/allocate",
        flags: &[],
        body: false,
        about: "Reserves a project's materials",
        example: "prodops bom-line allocate-project PROJECT",
    },
    ActionSpec {
        command: "bom-line",
        verb: "demand-rollup",
        method: "GET",
        path: "/bom-line/demand-rollup",
        flags: &[],
        body: false,
        about: "Material demand of the organization and its sources",
        example: "prodops bom-line demand-rollup --output json",
    },
    ActionSpec {
        command: "bom-line",
        verb: "materials-rollup",
        method: "GET",
        path: "/bom-line/project/{projectId}/materials-rollup",
        flags: &[],
        body: false,
        about: "Estimate, planned, on-order, used and variance totals of a project",
        example: "prodops bom-line materials-rollup PROJECT",
    },
    // ---- 4.6 inventory ----
    ActionSpec {
        command: "inventory-transaction",
        verb: "post",
        method: "POST",
        path: "/inventory-transaction",
        flags: &[
            req("item-id", "itemId", Uuid, "The item"),
            req("type", "type", Text, "adjust, transfer or return"),
            req("quantity", "quantity", Number, "How much"),
            f(
                "from-location-id",
                "fromLocationId",
                Uuid,
                "Source location",
            ),
            f(
                "to-location-id",
                "toLocationId",
                Uuid,
                "Destination location",
            ),
            f("source", "source", Text, "Optional source"),
        ],
        body: true,
        about: "Posts an adjust, transfer or return and updates stock atomically",
        example: "prodops inventory-transaction post --item-id I --type adjust --quantity 5 --to-location-id L",
    },
    ActionSpec {
        command: "stock",
        verb: "list",
        method: "GET",
        path: "/stock",
        flags: &[
            query("item-id", "itemId", Uuid, "Only this item"),
            query("location-id", "locationId", Uuid, "Only this location"),
        ],
        body: false,
        about: "Stock on hand per item and location",
        example: "prodops stock list --item-id I --output csv",
    },
    // ---- 4.8 delivery ----
    ActionSpec {
        command: "delivery",
        verb: "create-outbound",
        method: "POST",
        path: "/delivery/outbound",
        flags: &[
            req("name", "name", Text, "Name"),
            f("direction", "direction", Text, "outbound or transfer"),
            f("item-ids", "itemIds", UuidList, "Cargo items"),
            f("worker-ids", "workerIds", UuidList, "Crew"),
            f("planned-start-at", "plannedStartAt", Text, "Date-time"),
            f("planned-end-at", "plannedEndAt", Text, "Date-time"),
        ],
        body: true,
        about: "Creates an outbound delivery with its paired deliverable group",
        example: "prodops delivery create-outbound --name 'Truck 7' --item-ids I1,I2",
    },
    ActionSpec {
        command: "delivery",
        verb: "reschedule",
        method: "PATCH",
        path: "/delivery/{id}/outbound",
        flags: &[
            f("planned-start-at", "plannedStartAt", Text, "Date-time"),
            f("planned-end-at", "plannedEndAt", Text, "Date-time"),
        ],
        body: true,
        about: "Edits an outbound delivery's planned times",
        example: "prodops delivery reschedule ID --planned-start-at 2025-01-02T08:00:00Z",
    },
    ActionSpec {
        command: "delivery",
        verb: "receive",
        method: "POST",
        path: "/delivery/{id}/receive",
        flags: &[],
        body: true,
        about: "Receives an inbound delivery (posts inventory receipts)",
        example: "prodops delivery receive ID --data @receipt.json",
    },
    ActionSpec {
        command: "delivery",
        verb: "start",
        method: "POST",
        path: "/delivery/{id}/start",
        flags: &[],
        body: true,
        about: "Starts an outbound delivery",
        example: "prodops delivery start ID",
    },
    ActionSpec {
        command: "delivery",
        verb: "complete",
        method: "POST",
        path: "/delivery/{id}/complete",
        flags: &[],
        body: true,
        about: "Completes an outbound delivery",
        example: "prodops delivery complete ID",
    },
    ActionSpec {
        command: "delivery",
        verb: "cancel",
        method: "POST",
        path: "/delivery/{id}/cancel",
        flags: &[],
        body: true,
        about: "Cancels a delivery",
        example: "prodops delivery cancel ID",
    },
    ActionSpec {
        command: "delivery",
        verb: "itinerary",
        method: "GET",
        path: "/delivery/{id}/itinerary",
        flags: &[],
        body: false,
        about: "Stops and legs of a delivery",
        example: "prodops delivery itinerary ID",
    },
    ActionSpec {
        command: "delivery",
        verb: "cargo-plan",
        method: "GET",
        path: "/delivery/{id}/cargo-plan",
        flags: &[],
        body: false,
        about: "Cargo spans of a delivery",
        example: "prodops delivery cargo-plan ID",
    },
    // ---- 4.12 organization members (paths the spec leaves open are the documented choice) ----
    ActionSpec {
        command: "organization-member",
        verb: "invite",
        method: "POST",
        path: "/organization-member",
        flags: &[
            req("email", "email", Text, "Email address"),
            f("name", "name", Text, "Name of a brand-new account"),
            f("role-id", "roleId", Uuid, "Role"),
            f("role-type", "roleType", Text, "Role type"),
        ],
        body: true,
        about: "Invites a member (creates the account if needed)",
        example: "prodops organization-member invite --email ann@example.com --role-id R",
    },
    ActionSpec {
        command: "organization-member",
        verb: "resend-invitation",
        method: "POST",
        path: "/organization-member/{id}/resend-invitation",
        flags: &[],
        body: false,
        about: "Sends a member's invitation again",
        example: "prodops organization-member resend-invitation ID",
    },
    ActionSpec {
        command: "organization-member",
        verb: "deactivate",
        method: "POST",
        path: "/organization-member/{id}/deactivate",
        flags: &[],
        body: false,
        about: "Deactivates a member",
        example: "prodops organization-member deactivate ID",
    },
    ActionSpec {
        command: "organization-member",
        verb: "reactivate",
        method: "POST",
        path: "/organization-member/{id}/reactivate",
        flags: &[],
        body: false,
        about: "Reactivates a member",
        example: "prodops organization-member reactivate ID",
    },
    // ---- 4.13 notifications ----
    ActionSpec {
        command: "notification",
        verb: "read-channel-comments",
        method: "POST",
        path: "/notification/read-channel-comments",
        flags: &[req("channel-id", "channelId", Uuid, "The channel")],
        body: true,
        about: "Marks a channel's comment notifications read",
        example: "prodops notification read-channel-comments --channel-id C",
    },
    ActionSpec {
        command: "notification",
        verb: "read-deliverable-documents",
        method: "POST",
        path: "/notification/read-deliverable-documents",
        flags: &[req(
            "deliverable-id",
            "deliverableId",
            Uuid,
            "The deliverable",
        )],
        body: true,
        about: "Marks a deliverable's document notifications read",
        example: "prodops notification read-deliverable-documents --deliverable-id D",
    },
];

/// The `{name}` segments of a path template, in order.
pub fn path_params(path: &str) -> Vec<&str> {
    path.split('/')
        .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn actions_are_unique_and_well_formed() {
        let mut seen = HashSet::new();
        for a in ACTIONS {
            assert!(
                seen.insert((a.command, a.verb)),
                "duplicate {} {}",
                a.command,
                a.verb
            );
            assert!(a.path.starts_with('/'), "{}", a.path);
            assert!(["GET", "POST", "PATCH", "PUT", "DELETE"].contains(&a.method));
            assert!(
                a.example
                    .starts_with(&format!("prodops {} {}", a.command, a.verb)),
                "{}",
                a.example
            );
            let mut names = HashSet::new();
            for f in a.flags {
                assert!(
                    names.insert(f.name),
                    "{} {}: duplicate flag {}",
                    a.command,
                    a.verb,
                    f.name
                );
                assert!(!["data", "output", "select"].contains(&f.name));
                assert!(
                    a.body || f.to == To::Query,
                    "{} {}: body flag without a body",
                    a.command,
                    a.verb
                );
            }
        }
    }

    #[test]
    fn path_params_in_order() {
        assert_eq!(
            path_params("/deliverable/root/{rootId}/progress/{id}"),
            ["rootId", "id"]
        );
        assert!(path_params("/stock").is_empty());
    }
}
