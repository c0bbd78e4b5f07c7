//! The deliverable tree's actions (spec 4.2, 4.3): hierarchy, roots, groups, crew time,
//! explain, reorder, progress, schedule, and work-session save and stop.

use crate::openapi::ToSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::endpoint::{
    Access, Cli, Empty, FreeJson, Json, JsonList, NoBody, PAGING, PageOf, ParamKind, ParamValues,
    Perm, QueryArgs, QueryParam, StreamedPageAtCursor, action, flag, push,
};
use crate::deliverable::Deliverable;
use crate::explain::Explanation;
use crate::progress::{ProgressAction, ProgressResult};
use crate::schedule::{ScheduleAction, ScheduleBatchItem};
use crate::work_session::{SaveRequest, StopRequest};

const READ: Access = Access::Key(&[("Deliverable", Perm::Read)]);
const UPDATE: Access = Access::Key(&[("Deliverable", Perm::Update)]);

/// The query of a hierarchy read: `select`, the fields to keep.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HierarchyQuery {
    /// Comma-separated field paths (`name,data.properties.area`); `None`: whole records.
    pub select: Option<String>,
}

impl QueryArgs for HierarchyQuery {
    const PARAMS: &'static [QueryParam] = &[QueryParam {
        name: "select",
        kind: ParamKind::Text,
        required: false,
        description: "fields, comma separated, as POST /deliverable/query selects them: each value is \
             then `id` and the selected fields, nested paths under flattened names \
             (`data.properties.area` as `dataPropertiesArea`)",
        values: ParamValues::FieldsOf("deliverable"),
    }];
    fn pairs(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        push(&mut out, "select", self.select.as_ref());
        out
    }
}

/// The query of a read of whole trees: the roots' filters, search and order, and the fields to
/// keep of every node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreesQuery {
    /// `field=value` filters on the roots (repeat a field to match any of its values).
    pub filters: Vec<(String, String)>,
    /// Search text over the roots' search columns.
    pub search: Option<String>,
    /// The roots' order.
    pub sort: Option<String>,
    /// Comma-separated field paths, as [`HierarchyQuery::select`].
    pub select: Option<String>,
}

impl QueryArgs for TreesQuery {
    const PARAMS: &'static [QueryParam] = &[
        QueryParam {
            name: "search",
            kind: ParamKind::Text,
            required: false,
            description: "Search text over the roots",
            values: ParamValues::SearchOf("deliverable"),
        },
        QueryParam {
            name: "sort",
            kind: ParamKind::Text,
            required: false,
            description: "The roots' order: field paths, comma separated, `-` for descending",
            values: ParamValues::SortOf("deliverable"),
        },
        HierarchyQuery::PARAMS[0],
    ];
    const FILTERS_OF: Option<&'static str> = Some("deliverable");
    fn pairs(&self) -> Vec<(String, String)> {
        let mut out = self.filters.clone();
        push(&mut out, "search", self.search.as_ref());
        push(&mut out, "sort", self.sort.as_ref());
        push(&mut out, "select", self.select.as_ref());
        out
    }
}

/// The query of a roots read: the list's filters, search, sort and paging.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RootsQuery {
    /// `field=value` filters (repeat a field to match any of its values).
    pub filters: Vec<(String, String)>,
    pub search: Option<String>,
    pub sort: Option<String>,
    pub page: Option<u64>,
    pub page_size: Option<u64>,
}

impl QueryArgs for RootsQuery {
    const PARAMS: &'static [QueryParam] = &[
        QueryParam {
            name: "search",
            kind: ParamKind::Text,
            required: false,
            description: "Search text",
            values: ParamValues::SearchOf("deliverable"),
        },
        QueryParam {
            name: "sort",
            kind: ParamKind::Text,
            required: false,
            description: "Field paths, comma separated, `-` for descending",
            values: ParamValues::SortOf("deliverable"),
        },
        PAGING[0],
        PAGING[1],
    ];
    const FILTERS_OF: Option<&'static str> = Some("deliverable");
    fn pairs(&self) -> Vec<(String, String)> {
        let mut out = self.filters.clone();
        push(&mut out, "search", self.search.as_ref());
        push(&mut out, "sort", self.sort.as_ref());
        push(&mut out, "page", self.page);
        push(&mut out, "pageSize", self.page_size);
        out
    }
}

/// The query of a crew-time read: the deliverables.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CrewTimeQuery {
    pub deliverable_id: Vec<Uuid>,
}

impl QueryArgs for CrewTimeQuery {
    const PARAMS: &'static [QueryParam] = &[QueryParam {
        name: "deliverableId",
        kind: ParamKind::UuidList,
        required: true,
        description: "The deliverables (comma-separated or repeated)",
        values: ParamValues::Any,
    }];
    fn pairs(&self) -> Vec<(String, String)> {
        self.deliverable_id
            .iter()
            .map(|id| ("deliverableId".to_string(), id.to_string()))
            .collect()
    }
}

/// `POST /deliverable/groups`.
///
/// ```
/// let r = prodops_core::api::deliverable::GroupsRequest { group_by: "stage".into(), filter: None };
/// assert_eq!(serde_json::to_value(&r).unwrap(), serde_json::json!({"groupBy": "stage"}));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(
    description = "`POST /deliverable/groups`: what to group by, and which deliverables (a filter as `POST /deliverable/query` takes it)."
)]
pub struct GroupsRequest {
    /// `project`, `stage`, `people`, `root` or `tags`.
    #[schema(schema_with = group_by_schema)]
    pub group_by: String,
    /// A query filter object, as `POST /deliverable/query` takes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = deliverable_filter)]
    pub filter: Option<Map<String, Value>>,
}

/// What `POST /deliverable/groups` groups by.
pub const GROUP_BY: &[&str] = &["project", "stage", "people", "root", "tags"];

#[cfg(feature = "openapi")]
fn group_by_schema() -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(GROUP_BY.iter().copied()))
        .build()
}

/// The filter of the deliverables' query bodies (the server's `DeliverableFilter`), or null.
#[cfg(feature = "openapi")]
fn deliverable_filter() -> crate::openapi::RefOr<crate::openapi::Schema> {
    let record = <Deliverable as crate::openapi::ToSchema>::name();
    crate::openapi::or_null(crate::openapi::named(&crate::openapi::filter_name(&record)))
}

/// `POST /deliverable/reorder`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReorderRequest {
    /// The root of the reordered nodes.
    pub root_parent_id: Uuid,
    /// The nodes in their new sibling order.
    pub ordered_deliverable_ids: Vec<Uuid>,
}

action! {
    /// `GET /deliverable/{id}/hierarchy`: the node and its whole subtree.
    Hierarchy: Get "/deliverable/{id}/hierarchy" {
        operation: "deliverable_hierarchy",
        tag: "deliverable",
        access: READ,
        path: Uuid,
        query: HierarchyQuery,
        body: NoBody,
        answer: StreamedPageAtCursor,
        status: 200,
        outcome: "The subtree",
        summary: "The node and its whole subtree",
        description: "Parents before children, siblings in their order (archived nodes included), read \
             in one snapshot whose feed cursor `Prodops-Feed-Cursor` names. Large subtrees are sent \
             in parts as they are read (chunked). No other parameter is taken.",
        cli: Cli {
            command: "deliverable",
            verb: "hierarchy",
            about: "The whole subtree under a deliverable",
            example: "prodops deliverable hierarchy 0191c3a8-... --output csv",
            flags: &[],
        },
    }
}

action! {
    /// `GET /deliverable/trees`: every tree whose root matches, in one snapshot.
    Trees: Get "/deliverable/trees" {
        operation: "deliverable_trees",
        tag: "deliverable",
        access: READ,
        path: (),
        query: TreesQuery,
        body: NoBody,
        answer: StreamedPageAtCursor,
        status: 200,
        outcome: "Every node of the matching trees",
        summary: "Whole trees: every node under the roots that match, read in one snapshot",
        description: "The roots are chosen as `GET /deliverable/roots` chooses them (the list's filters \
             and search; roots not archived unless `isArchived` is given) and taken in its order \
             (`sort`); each root is followed by its whole subtree as `GET /deliverable/{id}/hierarchy` \
             answers it (parents before children, siblings in their order, archived nodes \
             included). All of it is read in one snapshot, whose feed cursor `Prodops-Feed-Cursor` \
             names: the events after it are exactly the changes the answer does not hold. Sent in \
             parts as it is read (chunked); no paging.",
        cli: Cli {
            command: "deliverable",
            verb: "trees",
            about: "Every node of the trees whose roots match, in one snapshot",
            example: "prodops deliverable trees --filter type=order --select name,parentId -o ndjson",
            flags: &[],
        },
    }
}

action! {
    /// `GET /deliverable/roots`: the tops of the trees.
    Roots: Get "/deliverable/roots" {
        operation: "deliverable_roots",
        tag: "deliverable",
        access: READ,
        path: (),
        query: RootsQuery,
        body: NoBody,
        answer: PageOf<Deliverable>,
        status: 200,
        outcome: "A page of roots",
        summary: "The deliverables without a parent (the tops of the trees)",
        description: "From the tree index; takes the list's filters, search, sort, page and pageSize (no cursor).",
        cli: Cli {
            command: "deliverable",
            verb: "roots",
            about: "The deliverables without a parent (the tops of the trees)",
            example: "prodops deliverable roots --sort name --output csv",
            flags: &[],
        },
    }
}

action! {
    /// `POST /deliverable/groups`.
    Groups: Post "/deliverable/groups" {
        operation: "deliverable_groups",
        tag: "deliverable",
        access: READ,
        path: (),
        query: (),
        body: Json<GroupsRequest>,
        answer: FreeJson,
        status: 200,
        outcome: "Groups, largest first",
        summary: "Deliverables grouped by project, stage, people, root or tags",
        description: "",
        cli: Cli {
            command: "deliverable",
            verb: "groups",
            about: "Deliverables grouped by project, stage, people, root or tags (largest group first)",
            example: "prodops deliverable groups --group-by stage --filter '{\"type\": \"order\"}'",
            flags: &[
                flag("groupBy", "group-by", "project, stage, people, root or tags"),
                flag("filter", "filter", "A query filter object, e.g. '{\"type\": \"order\"}'"),
            ],
        },
    }
}

action! {
    /// `GET /deliverable/crew-time`.
    CrewTime: Get "/deliverable/crew-time" {
        operation: "deliverable_crew_time",
        tag: "deliverable",
        access: Access::Key(&[("Deliverable", Perm::Read), ("WorkSession", Perm::Read)]),
        path: (),
        query: CrewTimeQuery,
        body: NoBody,
        answer: FreeJson,
        status: 200,
        outcome: "Time keyed by deliverable id",
        summary: "Work-session time per worker on deliverables and their subtrees",
        description: "`deliverableId` may also hold several ids separated by commas.",
        cli: Cli {
            command: "deliverable",
            verb: "crew-time",
            about: "Work-session time on deliverables and their subtrees, per worker",
            example: "prodops deliverable crew-time --deliverable-id D1,D2",
            flags: &[],
        },
    }
}

action! {
    /// `GET /deliverable/{id}/explain`: why the deliverable waits, is late or at risk, cannot
    /// be completed, or is short of materials.
    Explain: Get "/deliverable/{id}/explain" {
        operation: "deliverable_explain",
        tag: "deliverable",
        // Beside the deliverable, the answer shows its dependencies, QC sets, BOM lines and
        // the stock of their items.
        access: Access::Key(&[
            ("Deliverable", Perm::Read),
            ("Dependency", Perm::Read),
            ("QcSet", Perm::Read),
            ("BomLine", Perm::Read),
            ("Item", Perm::Read),
        ]),
        path: Uuid,
        query: (),
        body: NoBody,
        answer: Json<Explanation>,
        status: 200,
        outcome: "The reasons, each as data and a sentence",
        summary: "Why a deliverable waits, is late or at risk, cannot be completed, or is short of materials",
        description: "As of the moment of the read. Reasons, in order: `waiting` (its predecessors and their \
             state), `late` and `at-risk` (which date against which, along the path from the \
             deliverable down to the node whose own dates make it so), `qc-gate` (a qcstep's gate \
             and its latest verdict; for a stage, its qcsteps), `materials-short` (one per BOM line \
             it draws that its stock does not cover, with on hand, reserved and on order). Each \
             reason carries a sentence and the one member its kind names.",
        cli: Cli {
            command: "deliverable",
            verb: "why",
            about: "Why a deliverable waits, is late or at risk, cannot be completed, or is short of materials",
            example: "prodops deliverable why 0191c3a8-...",
            flags: &[],
        },
    }
}

action! {
    /// `POST /deliverable/reorder`.
    Reorder: Post "/deliverable/reorder" {
        operation: "deliverable_reorder",
        tag: "deliverable",
        access: UPDATE,
        path: (),
        query: (),
        body: Json<ReorderRequest>,
        answer: Empty,
        status: 204,
        outcome: "Done",
        summary: "Sets the order of siblings under a root",
        description: "Every listed node must be under the root and listed once.",
        cli: Cli {
            command: "deliverable",
            verb: "reorder",
            about: "Reorders nodes among their siblings",
            example: "prodops deliverable reorder --root-parent-id R --ids C,A,B",
            flags: &[flag(
                "orderedDeliverableIds",
                "ids",
                "The nodes in their new sibling order (comma-separated)",
            )],
        },
    }
}

action! {
    /// `POST /deliverable/root/{rootId}/progress/{id}`.
    Progress: Post "/deliverable/root/{rootId}/progress/{id}" {
        operation: "deliverable_progress",
        tag: "deliverable",
        access: UPDATE,
        path: (Uuid, Uuid),
        query: (),
        body: Json<ProgressAction>,
        answer: Json<ProgressResult>,
        status: 200,
        outcome: "The kicked workers",
        summary: "A progress action on a node of an order",
        description: "",
        cli: Cli {
            command: "deliverable",
            verb: "progress",
            about: "Applies a progress action to a node of an order's tree; prints the workers it stopped",
            example: "prodops deliverable progress ROOT ID --type send-ahead --quantity 2",
            flags: &[
                flag("type", "type", "complete, uncomplete, send-ahead, rework, put-on-hold, resume-work or set-percentage"),
                flag("quantity", "quantity", "For uncomplete and send-ahead"),
                flag("percentage", "percentage", "For set-percentage (0 to 100)"),
            ],
        },
    }
}

action! {
    /// `POST /deliverable/root/{rootId}/schedule/{id}`.
    Schedule: Post "/deliverable/root/{rootId}/schedule/{id}" {
        operation: "deliverable_schedule",
        tag: "deliverable",
        access: UPDATE,
        path: (Uuid, Uuid),
        query: (),
        body: Json<ScheduleAction>,
        answer: Empty,
        status: 204,
        outcome: "Done",
        summary: "A schedule action on a node of an order",
        description: "",
        cli: Cli {
            command: "deliverable",
            verb: "schedule",
            about: "Applies a schedule action to a node of an order's tree",
            example: "prodops deliverable schedule ROOT ID --type schedule --new-start 1735689600",
            flags: &[
                flag("type", "type", "schedule, drag, shrink, expand or reschedule"),
                flag("newStart", "new-start", "New start, epoch seconds"),
                flag("newFinish", "new-finish", "New finish, epoch seconds"),
                flag("newDuration", "new-duration", "New duration, seconds (shrink, expand)"),
            ],
        },
    }
}

action! {
    /// `POST /deliverable/schedule/batch`.
    ScheduleBatch: Post "/deliverable/schedule/batch" {
        operation: "deliverable_schedule_batch",
        tag: "deliverable",
        access: UPDATE,
        path: (),
        query: (),
        body: JsonList<ScheduleBatchItem>,
        answer: Empty,
        status: 204,
        outcome: "Done",
        summary: "Schedule actions in order, all or nothing",
        description: "",
        cli: Cli {
            command: "deliverable",
            verb: "schedule-batch",
            about: "Applies schedule actions in order, all or nothing: --data '[{\"rootParentId\":..,\"targetId\":..,\"action\":{\"type\":..}}]'",
            example: "prodops deliverable schedule-batch --data @actions.json",
            flags: &[],
        },
    }
}

action! {
    /// `POST /deliverable/work-sessions/save`.
    SaveWorkSessions: Post "/deliverable/work-sessions/save" {
        operation: "work_sessions_save",
        tag: "deliverable",
        access: Access::Key(&[("WorkSession", Perm::Create), ("WorkSession", Perm::Update)]),
        path: (),
        query: (),
        body: Json<SaveRequest>,
        answer: Empty,
        status: 204,
        outcome: "Done",
        summary: "Saves the assignments of workers, diffed against open sessions",
        description: "",
        cli: Cli {
            command: "work-session",
            verb: "save",
            about: "Saves work-session assignments (starts and stops sessions to match)",
            example: "prodops work-session save --shop-id S --assignments '{\"W\": [\"D1\"]}'",
            flags: &[
                flag("shopId", "shop-id", "The shop"),
                flag("assignments", "assignments", "Worker id -> deliverable ids, as JSON (or @file)"),
                flag("startDate", "start-date", "Date-time (default now)"),
                flag(
                    "shouldStopEntireBatch",
                    "stop-entire-batch",
                    "The assignments are the whole crew of the shop: stop everyone else",
                ),
            ],
        },
    }
}

action! {
    /// `POST /deliverable/work-sessions/stop`.
    StopWorkSessions: Post "/deliverable/work-sessions/stop" {
        operation: "work_sessions_stop",
        tag: "deliverable",
        access: Access::Key(&[("WorkSession", Perm::Update)]),
        path: (),
        query: (),
        body: Json<StopRequest>,
        answer: Empty,
        status: 204,
        outcome: "Done",
        summary: "Stops open sessions and plans by deliverable or worker",
        description: "Needs deliverableIds or workerIds (there is no stop-everything form).",
        cli: Cli {
            command: "work-session",
            verb: "stop",
            about: "Stops open work sessions and plans by deliverable and/or worker",
            example: "prodops work-session stop --worker-ids W1,W2",
            flags: &[
                flag("deliverableIds", "deliverable-ids", "Stop sessions on these deliverables"),
                flag("workerIds", "worker-ids", "Stop sessions of these workers"),
                flag("endDate", "end-date", "Date-time (default now)"),
            ],
        },
    }
}
