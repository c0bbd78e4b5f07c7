//! Action commands, declared as data: one `ActionSpec` per server action endpoint. Adding an
//! action is adding one entry to `ACTIONS`; the command, its flags, the request and the output
//! are all derived from it.
//!
//! A path template's `{name}` segments become positional arguments in order; each `Flag` maps
//! `--flag VALUE` to a body field (or a query parameter), parsed by its `FlagKind`. Every action with
//! a body also takes `--data JSON|@file|@-`, the base the flags are set on, for fields without a
//! flag of their own. A `File` flag (`To::Raw`) is a positional `FILE` (or `-` for stdin) whose
//! bytes are the request body, sent with the `To::ContentType` flag's value (else a type guessed
//! from the file name).

/// How a flag's text becomes a JSON value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagKind {
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
    /// A file name (`-`: stdin), read as bytes.
    File,
}

/// Where a flag's value goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum To {
    Body,
    Query,
    /// The raw request body (a `File` flag, positional).
    Raw,
    /// The `Content-Type` of the raw body.
    ContentType,
}

#[derive(Debug, Clone, Copy)]
pub struct Flag {
    /// `--name` on the command line.
    pub name: &'static str,
    /// The body field or query parameter.
    pub field: &'static str,
    pub kind: FlagKind,
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

const fn f(name: &'static str, field: &'static str, kind: FlagKind, help: &'static str) -> Flag {
    Flag {
        name,
        field,
        kind,
        to: To::Body,
        required: false,
        help,
    }
}

const fn req(name: &'static str, field: &'static str, kind: FlagKind, help: &'static str) -> Flag {
    Flag {
        name,
        field,
        kind,
        to: To::Body,
        required: true,
        help,
    }
}

const fn query(
    name: &'static str,
    field: &'static str,
    kind: FlagKind,
    help: &'static str,
) -> Flag {
    Flag {
        name,
        field,
        kind,
        to: To::Query,
        required: false,
        help,
    }
}

const fn qreq(name: &'static str, field: &'static str, kind: FlagKind, help: &'static str) -> Flag {
    Flag {
        name,
        field,
        kind,
        to: To::Query,
        required: true,
        help,
    }
}

const fn file(name: &'static str, help: &'static str) -> Flag {
    Flag {
        name,
        field: "",
        kind: FlagKind::File,
        to: To::Raw,
        required: true,
        help,
    }
}

const fn content_type(help: &'static str) -> Flag {
    Flag {
        name: "content-type",
        field: "",
        kind: FlagKind::Text,
        to: To::ContentType,
        required: false,
        help,
    }
}

use FlagKind::*;

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
        flags: &[
            req(
                "group-by",
                "groupBy",
                Text,
                "project, stage, people, root or tags",
            ),
            f(
                "filter",
                "filter",
                Json,
                "A query filter object, e.g. '{\"type\": \"order\"}'",
            ),
        ],
        body: true,
        about: "Deliverables grouped by project, stage, people, root or tags (largest group first)",
        example: "prodops deliverable groups --group-by stage --filter '{\"type\": \"order\"}'",
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
                "The root of the reordered nodes",
            ),
            req(
                "ids",
                "orderedDeliverableIds",
                UuidList,
                "The nodes in their new sibling order (comma-separated)",
            ),
        ],
        body: true,
        about: "Reorders nodes among their siblings",
        example: "prodops deliverable reorder --root-parent-id R --ids C,A,B",
    },
    ActionSpec {
        command: "deliverable",
        verb: "crew-time",
        method: "GET",
        path: "/deliverable/crew-time",
        flags: &[qreq(
            "deliverable-id",
            "deliverableId",
            UuidList,
            "The deliverables (comma-separated or repeated)",
        )],
        body: false,
        about: "Work-session time on deliverables and their subtrees, per worker",
        example: "prodops deliverable crew-time --deliverable-id D1,D2",
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
            f(
                "new-duration",
                "newDuration",
                Number,
                "New duration, seconds (shrink, expand)",
            ),
        ],
        body: true,
        about: "Applies a schedule action to a node of an order's tree",
        example: "prodops deliverable schedule ROOT ID --type schedule --new-start 1735689600",
    },
    ActionSpec {
        command: "deliverable",
        verb: "schedule-batch",
        method: "POST",
        path: "/deliverable/schedule/batch",
        flags: &[],
        body: true,
        about: "Applies schedule actions in order, all or nothing: --data '[{\"rootParentId\":..,\"targetId\":..,\"action\":{\"type\":..}}]'",
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
            f(
                "percentage",
                "percentage",
                Number,
                "For set-percentage (0 to 100)",
            ),
        ],
        body: true,
        about: "Applies a progress action to a node of an order's tree; prints the workers it stopped",
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
            req(
                "assignments",
                "assignments",
                Json,
                "Worker id -> deliverable ids, as JSON (or @file)",
            ),
            f("start-date", "startDate", Text, "Date-time (default now)"),
            f(
                "stop-entire-batch",
                "shouldStopEntireBatch",
                Bool,
                "The assignments are the whole crew of the shop: stop everyone else",
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
        about: "Stops open work sessions and plans by deliverable and/or worker",
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
                "The order (or a node under it) produced on",
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
                "Shorthand for --outputs '[{\"itemId\": I}]'",
            ),
            f(
                "outputs",
                "outputs",
                Json,
                "Explicit outputs: [{\"itemId\", \"quantity\"?, \"locationId\"?}]",
            ),
        ],
        body: true,
        about: "Posts production output on an order (posted once, however often retried)",
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
                "The order (or a node under it) consuming",
            ),
            f(
                "from-location-id",
                "fromLocationId",
                Uuid,
                "Where material is drawn from",
            ),
            f(
                "lines",
                "lines",
                Json,
                "Explicit draws: [{\"bomLineId\"|\"itemId\", \"quantity\", \"fromLocationId\"?}]",
            ),
        ],
        body: true,
        about: "Consumes an order's BOM lines (what remains of each recipe, or the given lines)",
        example: "prodops production consume --deliverable-id ORDER --from-location-id LOC",
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
                "The order or node",
            ),
            req("kind", "kind", Text, "consume or produce"),
            req("item-id", "itemId", Uuid, "The item"),
            req("delta", "delta", Number, "Nonzero signed change"),
        ],
        body: true,
        about: "Corrects an actual produced or consumed quantity (posts an adjust row)",
        example: "prodops production adjust-actual --stamp-deliverable-id ORDER --kind produce --item-id I --delta -1",
    },
    ActionSpec {
        command: "production",
        verb: "status",
        method: "GET",
        path: "/production/order/{id}/status",
        flags: &[],
        body: false,
        about: "Planned, actual and remaining outputs and materials of an order",
        example: "prodops production status ORDER",
    },
    ActionSpec {
        command: "production",
        verb: "entries",
        method: "GET",
        path: "/production/order/{id}/entries",
        flags: &[
            query("page", "page", Number, "Page (default 1)"),
            query("page-size", "pageSize", Number, "Entries per page"),
        ],
        body: false,
        about: "The production trace of an order, oldest first",
        example: "prodops production entries ORDER --output ndjson",
    },
    // ---- 4.5 BOM ----
    ActionSpec {
        command: "bom",
        verb: "prepopulate",
        method: "POST",
        path: "/bom-line/order/{id}/prepopulate",
        flags: &[f(
            "route-deliverable-id",
            "routeDeliverableId",
            Uuid,
            "Without a project BOM: copy this route's lines and outputs",
        )],
        body: true,
        about: "Seeds an order's BOM lines from its project (or a route); re-runs copy only what is new",
        example: "prodops bom prepopulate ORDER --route-deliverable-id ROUTE",
    },
    ActionSpec {
        command: "bom",
        verb: "allocate",
        method: "POST",
        path: "/bom-line/order/{id}/allocate",
        flags: &[f(
            "item-ids",
            "itemIds",
            UuidList,
            "Only lines of these items",
        )],
        body: true,
        about: "Reserves what an order's lines still need",
        example: "prodops bom allocate ORDER --item-ids I1,I2",
    },
    ActionSpec {
        command: "bom",
        verb: "allocate-project",
        method: "POST",
        path: "/bom-line/project/{id}/allocate",
        flags: &[],
        body: false,
        about: "Reserves what a project's lines still need",
        example: "prodops bom allocate-project PROJECT",
    },
    ActionSpec {
        command: "bom",
        verb: "demand-rollup",
        method: "GET",
        path: "/bom-line/demand-rollup",
        flags: &[],
        body: false,
        about: "Material demand per item, largest shortage first",
        example: "prodops bom demand-rollup --output json",
    },
    ActionSpec {
        command: "bom",
        verb: "materials-rollup",
        method: "GET",
        path: "/bom-line/project/{projectId}/materials-rollup",
        flags: &[],
        body: false,
        about: "Estimate, planned, on-order, used and variance of a project",
        example: "prodops bom materials-rollup PROJECT",
    },
    // ---- 4.6 inventory ----
    ActionSpec {
        command: "inventory",
        verb: "post",
        method: "POST",
        path: "/inventory-transaction",
        flags: &[
            req("item-id", "itemId", Uuid, "The item"),
            req("type", "type", Text, "adjust, transfer or return"),
            req(
                "quantity",
                "quantity",
                Number,
                "How much (signed for adjust)",
            ),
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
            f("reason", "reason", Text, "Why"),
            f(
                "source",
                "source",
                Text,
                "manual, import, scan, count or integration",
            ),
        ],
        body: true,
        about: "Posts an adjust, transfer or return (refused with exit 5 when stock would go below zero)",
        example: "prodops inventory post --item-id I --type adjust --quantity 5 --to-location-id L",
    },
    ActionSpec {
        command: "inventory",
        verb: "stock",
        method: "GET",
        path: "/stock",
        flags: &[
            query("item-id", "itemId", Uuid, "Only this item"),
            query("location-id", "locationId", Uuid, "Only this location"),
            query("shop-id", "shopId", Uuid, "Only locations of this shop"),
            query("page", "page", Number, "Page (default 1)"),
            query("page-size", "pageSize", Number, "Rows per page"),
        ],
        body: false,
        about: "Stock on hand and reserved per item and location",
        example: "prodops inventory stock --item-id I --output csv",
    },
    // ---- 4.7 documents ----
    ActionSpec {
        command: "document",
        verb: "upload",
        method: "POST",
        path: "/document/upload",
        flags: &[
            file("file", "The file to upload (- for stdin)"),
            content_type("Its media type (default: guessed from the file name)"),
        ],
        body: false,
        about: "Uploads a file's bytes; prints its documentKey for add-version or hub-upload",
        example: "prodops document upload plan.pdf",
    },
    ActionSpec {
        command: "document",
        verb: "add-version",
        method: "POST",
        path: "/document/{id}/versions",
        flags: &[
            req("name", "name", Text, "The version's file name"),
            f(
                "document-key",
                "documentKey",
                Text,
                "The key `document upload` printed",
            ),
            f(
                "document-url",
                "documentUrl",
                Text,
                "An external link instead of a stored file",
            ),
            f("version-label", "versionLabel", Text, "For example v2"),
            f("mime-type", "mimeType", Text, "Media type"),
        ],
        body: true,
        about: "Adds a version to a document and makes it current",
        example: "prodops document add-version DOC --name plan-v2.pdf --document-key KEY --version-label v2",
    },
    ActionSpec {
        command: "document",
        verb: "hub-upload",
        method: "POST",
        path: "/document/hub/bulk-upload",
        flags: &[req(
            "documents",
            "documents",
            Json,
            "[{\"name\", \"documentKey\", \"deliverableId\"?, ...}] (or @file)",
        )],
        body: true,
        about: "Creates Hub documents from uploaded files, all or nothing",
        example: "prodops document hub-upload --documents '[{\"name\": \"plan.pdf\", \"documentKey\": \"KEY\"}]'",
    },
    ActionSpec {
        command: "document",
        verb: "link",
        method: "POST",
        path: "/document/{id}/links",
        flags: &[req(
            "deliverable-id",
            "deliverableId",
            Uuid,
            "The deliverable",
        )],
        body: true,
        about: "Attaches a document to a deliverable",
        example: "prodops document link DOC --deliverable-id D",
    },
    ActionSpec {
        command: "document",
        verb: "unlink",
        method: "DELETE",
        path: "/document/{id}/links/{deliverableId}",
        flags: &[],
        body: false,
        about: "Detaches a document from a deliverable",
        example: "prodops document unlink DOC DELIVERABLE",
    },
    ActionSpec {
        command: "document",
        verb: "copy-mode",
        method: "POST",
        path: "/document/{id}/copy-mode",
        flags: &[req(
            "copy-mode",
            "copyMode",
            Text,
            "none, copy or reference",
        )],
        body: true,
        about: "Sets how a document follows its deliverable when that is copied",
        example: "prodops document copy-mode DOC --copy-mode reference",
    },
    ActionSpec {
        command: "document",
        verb: "counts-by-deliverable",
        method: "POST",
        path: "/document/counts-by-deliverable",
        flags: &[req(
            "deliverable-ids",
            "deliverableIds",
            UuidList,
            "The deliverables (comma-separated)",
        )],
        body: true,
        about: "Unarchived documents per deliverable",
        example: "prodops document counts-by-deliverable --deliverable-ids D1,D2 --output csv",
    },
    // ---- 4.8 delivery (archive and restore are the resource's own verbs) ----
    ActionSpec {
        command: "delivery",
        verb: "create-outbound",
        method: "POST",
        path: "/delivery/outbound",
        flags: &[
            req("name", "name", Text, "Name"),
            f(
                "direction",
                "direction",
                Text,
                "outbound (default) or transfer",
            ),
            f("identifier", "identifier", Text, "Identifier"),
            f("po-number", "poNumber", Text, "Purchase order number"),
            f(
                "item-ids",
                "itemIds",
                UuidList,
                "Cargo deliverables (orders, phases)",
            ),
            f("worker-ids", "workerIds", UuidList, "Crew"),
            f("truck-name", "truckName", Text, "Truck"),
            f(
                "source-location-id",
                "sourceLocationId",
                Uuid,
                "Where it leaves from",
            ),
            f(
                "destination-location-id",
                "destinationLocationId",
                Uuid,
                "Where it goes",
            ),
            f("planned-start-at", "plannedStartAt", Text, "Date-time"),
            f("planned-end-at", "plannedEndAt", Text, "Date-time"),
        ],
        body: true,
        about: "Creates an outbound delivery with its paired deliverable group, stops, leg and cargo spans",
        example: "prodops delivery create-outbound --name 'Truck 7' --item-ids ORDER1,ORDER2",
    },
    ActionSpec {
        command: "delivery",
        verb: "update-outbound",
        method: "PATCH",
        path: "/delivery/{id}/outbound",
        flags: &[
            f("planned-start-at", "plannedStartAt", Text, "Date-time"),
            f("planned-end-at", "plannedEndAt", Text, "Date-time"),
        ],
        body: true,
        about: "Changes an outbound delivery's planned start and end",
        example: "prodops delivery update-outbound ID --planned-start-at 2025-01-02T08:00:00Z",
    },
    ActionSpec {
        command: "delivery",
        verb: "receive",
        method: "POST",
        path: "/delivery/{id}/receive",
        flags: &[f(
            "lines",
            "lines",
            Json,
            "[{\"manifestLineId\", \"quantity\", \"locationId\"?}] (default: everything outstanding)",
        )],
        body: true,
        about: "Receives an inbound delivery: posts receipts to stock",
        example: "prodops delivery receive ID",
    },
    ActionSpec {
        command: "delivery",
        verb: "start",
        method: "POST",
        path: "/delivery/{id}/start",
        flags: &[f("reason", "reason", Text, "Kept as lastReason")],
        body: true,
        about: "Puts a delivery in transit",
        example: "prodops delivery start ID",
    },
    ActionSpec {
        command: "delivery",
        verb: "complete",
        method: "POST",
        path: "/delivery/{id}/complete",
        flags: &[f("reason", "reason", Text, "Kept as lastReason")],
        body: true,
        about: "Marks an outbound or transfer delivery delivered (ships its manifest lines)",
        example: "prodops delivery complete ID",
    },
    ActionSpec {
        command: "delivery",
        verb: "cancel",
        method: "POST",
        path: "/delivery/{id}/cancel",
        flags: &[f("reason", "reason", Text, "Kept as lastReason")],
        body: true,
        about: "Cancels a delivery",
        example: "prodops delivery cancel ID --reason 'customer postponed'",
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
    // ---- 4.10 QC templates ----
    ActionSpec {
        command: "qc-template",
        verb: "publish",
        method: "POST",
        path: "/qc-template/versions",
        flags: &[
            req("name", "name", Text, "Name"),
            f(
                "qc-template-id",
                "qcTemplateId",
                Uuid,
                "The template (omitted: a new template)",
            ),
            f("description", "description", Text, "Description"),
            f(
                "questions",
                "questions",
                Json,
                "The questions, a JSON array (or @file)",
            ),
            f(
                "requires-pass-fail",
                "requiresPassFail",
                Bool,
                "true or false",
            ),
            f("is-draft", "isDraft", Bool, "true or false"),
        ],
        body: true,
        about: "Publishes a QC template version (the next version number)",
        example: "prodops qc-template publish --name 'Weld check' --questions @questions.json",
    },
    // ---- 4.12 organization members (the records: `prodops organization-member list|get|update|delete`) ----
    ActionSpec {
        command: "member",
        verb: "invite",
        method: "POST",
        path: "/organization-member",
        flags: &[
            req("email", "email", Text, "Email address"),
            f("name", "name", Text, "Name of a brand-new account"),
            f("role-id", "roleId", Uuid, "Role"),
            f("role-type", "roleType", Text, "Role type"),
            f("worker-id", "workerId", Uuid, "The member's worker"),
        ],
        body: true,
        about: "Invites a member (creates the account if needed); the invitation waits in the outbox",
        example: "prodops member invite --email ann@example.com --role-id R",
    },
    ActionSpec {
        command: "member",
        verb: "accept",
        method: "POST",
        path: "/organization-member/accept-invitation",
        flags: &[req(
            "token",
            "token",
            Text,
            "The invitation token (inv_...)",
        )],
        body: true,
        about: "Accepts an invitation",
        example: "prodops member accept --token inv_...",
    },
    ActionSpec {
        command: "member",
        verb: "resend-invitation",
        method: "POST",
        path: "/organization-member/{id}/resend-invitation",
        flags: &[],
        body: false,
        about: "Sends a new invitation (earlier tokens stop working)",
        example: "prodops member resend-invitation ID",
    },
    ActionSpec {
        command: "member",
        verb: "deactivate",
        method: "POST",
        path: "/organization-member/{id}/deactivate",
        flags: &[],
        body: false,
        about: "Deactivates a member and revokes open invitations",
        example: "prodops member deactivate ID",
    },
    ActionSpec {
        command: "member",
        verb: "reactivate",
        method: "POST",
        path: "/organization-member/{id}/reactivate",
        flags: &[],
        body: false,
        about: "Reactivates a member",
        example: "prodops member reactivate ID",
    },
    ActionSpec {
        command: "member",
        verb: "outbox",
        method: "GET",
        path: "/outbox",
        flags: &[
            query("kind", "kind", Text, "For example invitation"),
            query("recipient", "recipient", Text, "Email address"),
        ],
        body: false,
        about: "Outgoing messages (invitations) waiting to be sent; admin keys only",
        example: "prodops member outbox --kind invitation --recipient ann@example.com",
    },
    // ---- 4.13 notifications ----
    ActionSpec {
        command: "notification",
        verb: "read-channel-comments",
        method: "POST",
        path: "/notification/read-channel-comments",
        flags: &[
            req("channel-id", "channelId", Uuid, "The channel"),
            f(
                "app-user-id",
                "appUserId",
                Uuid,
                "Only this account's notifications",
            ),
        ],
        body: true,
        about: "Marks a channel's comment notifications read",
        example: "prodops notification read-channel-comments --channel-id C",
    },
    ActionSpec {
        command: "notification",
        verb: "read-deliverable-documents",
        method: "POST",
        path: "/notification/read-deliverable-documents",
        flags: &[
            req("deliverable-id", "deliverableId", Uuid, "The deliverable"),
            f(
                "app-user-id",
                "appUserId",
                Uuid,
                "Only this account's notifications",
            ),
        ],
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
                    a.body || f.to != To::Body,
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
