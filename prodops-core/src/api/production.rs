//! Production (spec 4.4): produce, consume, adjust an actual, an order's status and trace; and
//! applying a route or template-phase onto an order's node (spec 2.1). The POSTs answer
//! `{"value": ...}`.

use uuid::Uuid;

use super::endpoint::{Access, Cli, Json, NoBody, PageOf, PageQuery, Perm, ValueOf, action, flag};
use crate::production_actions::{
    AdjustActualRequest, AdjustActualResult, ConsumeRequest, ConsumeResult, OrderEntry,
    ProduceRequest, ProduceResult,
};
use crate::template::{ApplyTemplateRequest, ApplyTemplateResult};

/// Production posts to, and reads, the item ledger.
const ITEM_UPDATE: Access = Access::Key(&[("Item", Perm::Update)]);

action! {
    /// `POST /production/produce`.
    Produce: Post "/production/produce" {
        operation: "production_produce",
        tag: "production",
        access: ITEM_UPDATE,
        path: (),
        query: (),
        body: Json<ProduceRequest>,
        answer: ValueOf<ProduceResult>,
        status: 200,
        outcome: "Success",
        summary: "Post produced output of an order's declarations (or ad-hoc items)",
        description: "",
        cli: Cli {
            command: "production",
            verb: "produce",
            about: "Posts production output on an order (posted once, however often retried)",
            example: "prodops production produce --deliverable-id ORDER --quantity 2 --output-location-id LOC",
            flags: &[
                flag("deliverableId", "deliverable-id", "The order (or a node under it) produced on"),
                flag("quantityProduced", "quantity", "Run multiplier (default 1)"),
                flag("outputLocationId", "output-location-id", "Where the output goes"),
                flag("outputItemId", "output-item-id", "Shorthand for --outputs '[{\"itemId\": I}]'"),
                flag("outputs", "outputs", "Explicit outputs: [{\"itemId\", \"quantity\"?, \"locationId\"?}]"),
            ],
        },
    }
}

action! {
    /// `POST /production/consume`.
    Consume: Post "/production/consume" {
        operation: "production_consume",
        tag: "production",
        access: ITEM_UPDATE,
        path: (),
        query: (),
        body: Json<ConsumeRequest>,
        answer: ValueOf<ConsumeResult>,
        status: 200,
        outcome: "Success",
        summary: "Post consumption of a node's BOM lines (placed on it or below it; the order: all)",
        description: "",
        cli: Cli {
            command: "production",
            verb: "consume",
            about: "Consumes the BOM lines placed on a node and below it (the order: all), the full recipe or the given lines",
            example: "prodops production consume --deliverable-id ORDER --from-location-id LOC",
            flags: &[
                flag("deliverableId", "deliverable-id", "The order (or a node under it) consuming"),
                flag("fromLocationId", "from-location-id", "Where material is drawn from"),
                flag("lines", "lines", "Explicit draws: [{\"bomLineId\"|\"itemId\", \"quantity\", \"fromLocationId\"?}]"),
            ],
        },
    }
}

action! {
    /// `POST /production/adjust-actual`.
    AdjustActual: Post "/production/adjust-actual" {
        operation: "production_adjust_actual",
        tag: "production",
        access: ITEM_UPDATE,
        path: (),
        query: (),
        body: Json<AdjustActualRequest>,
        answer: ValueOf<AdjustActualResult>,
        status: 200,
        outcome: "Success",
        summary: "Correct a declaration's or BOM line's actual quantity (posts an adjust row)",
        description: "",
        cli: Cli {
            command: "production",
            verb: "adjust-actual",
            about: "Corrects an actual produced or consumed quantity (posts an adjust row)",
            example: "prodops production adjust-actual --stamp-deliverable-id ORDER --kind produce --item-id I --delta -1",
            flags: &[
                flag("stampDeliverableId", "stamp-deliverable-id", "The order or node"),
                flag("kind", "kind", "consume or produce"),
                flag("itemId", "item-id", "The item"),
                flag("delta", "delta", "Nonzero signed change"),
            ],
        },
    }
}

action! {
    /// `GET /production/order/{id}/status`.
    OrderStatus: Get "/production/order/{id}/status" {
        operation: "production_order_status",
        tag: "production",
        access: ITEM_UPDATE,
        path: Uuid,
        query: (),
        body: NoBody,
        answer: Json<crate::production_actions::OrderStatus>,
        status: 200,
        outcome: "Success",
        summary: "Planned against actual output and material of an order",
        description: "",
        cli: Cli {
            command: "production",
            verb: "status",
            about: "Planned, actual and remaining outputs and materials of an order",
            example: "prodops production status ORDER",
            flags: &[],
        },
    }
}

action! {
    /// `GET /production/order/{id}/entries`.
    OrderEntries: Get "/production/order/{id}/entries" {
        operation: "production_order_entries",
        tag: "production",
        access: ITEM_UPDATE,
        path: Uuid,
        query: PageQuery,
        body: NoBody,
        answer: PageOf<OrderEntry>,
        status: 200,
        outcome: "Success",
        summary: "The production trace of an order: its production ledger rows (page, pageSize)",
        description: "",
        cli: Cli {
            command: "production",
            verb: "entries",
            about: "The production trace of an order, oldest first",
            example: "prodops production entries ORDER --output ndjson",
            flags: &[flag("pageSize", "page-size", "Entries per page")],
        },
    }
}

action! {
    /// `POST /deliverable/{id}/apply-template`.
    ApplyTemplate: Post "/deliverable/{id}/apply-template" {
        operation: "deliverable_apply_template",
        tag: "deliverable",
        access: Access::Key(&[
            ("Deliverable", Perm::Create),
            ("Dependency", Perm::Create),
            ("BomLine", Perm::Create),
            ("ProductionOutput", Perm::Create),
        ]),
        path: Uuid,
        query: (),
        body: Json<ApplyTemplateRequest>,
        answer: ValueOf<ApplyTemplateResult>,
        status: 200,
        outcome: "Success",
        summary: "Apply a route (onto an order, phase or component) or a template-phase (onto a phase)",
        description: "Copies the template's nodes below the target (originTemplateId set, new identifiers), \
             the dependencies between them, and the route's BOM lines and output declarations onto the \
             target's order, scaled to the target's quantity; in one transaction. Each call applies once. \
             `templateId` must name a root route or template-phase of the organization, and the target \
             a node inside an order that the template may be applied to (a route onto an order, phase or \
             component; a template-phase onto a phase): otherwise 400 naming the field.",
        cli: Cli {
            command: "deliverable",
            verb: "apply-template",
            about: "Applies a route or template-phase onto an order, phase or component",
            example: "prodops deliverable apply-template PHASE --template-id ROUTE",
            flags: &[flag("templateId", "template-id", "The root route or template-phase applied")],
        },
    }
}
