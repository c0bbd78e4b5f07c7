//! Deliveries (spec 4.8): outbound create and planned times, the lifecycle actions, receiving
//! and closing short, archive and restore, itinerary and cargo plan.

use uuid::Uuid;

use super::endpoint::{Access, Cli, FreeJson, Json, NoBody, OptionalJson, Perm, action, flag};
use crate::delivery::{Delivery, LifecycleRequest, OutboundCreate, OutboundPatch, ReceiveRequest};

const UPDATE: Access = Access::Key(&[("Delivery", Perm::Update)]);
const READ: Access = Access::Key(&[("Delivery", Perm::Read)]);
const ARCHIVE: Access = Access::Key(&[("Delivery", Perm::Delete)]);

action! {
    /// `POST /delivery/outbound`.
    CreateOutbound: Post "/delivery/outbound" {
        operation: "post_delivery_outbound",
        tag: "delivery",
        access: Access::Key(&[("Delivery", Perm::Create)]),
        path: (),
        query: (),
        body: Json<OutboundCreate>,
        answer: Json<Delivery>,
        status: 201,
        outcome: "The delivery",
        summary: "Create an outbound or transfer delivery",
        description: "",
        cli: Cli {
            command: "delivery",
            verb: "create-outbound",
            about: "Creates an outbound delivery with its paired deliverable group, stops, leg and cargo spans",
            example: "prodops delivery create-outbound --name 'Truck 7' --item-ids ORDER1,ORDER2",
            flags: &[
                flag("direction", "direction", "outbound (default) or transfer"),
                flag("poNumber", "po-number", "Purchase order number"),
                flag("itemIds", "item-ids", "Cargo deliverables (orders, phases)"),
                flag("workerIds", "worker-ids", "Crew"),
                flag("truckName", "truck-name", "Truck"),
                flag("sourceLocationId", "source-location-id", "Where it leaves from"),
                flag("destinationLocationId", "destination-location-id", "Where it goes"),
                flag("plannedStartAt", "planned-start-at", "Date-time"),
                flag("plannedEndAt", "planned-end-at", "Date-time"),
            ],
        },
    }
}

action! {
    /// `PATCH /delivery/{id}/outbound`.
    PatchOutbound: Patch "/delivery/{id}/outbound" {
        operation: "patch_delivery_id_outbound",
        tag: "delivery",
        access: UPDATE,
        path: Uuid,
        query: (),
        body: Json<OutboundPatch>,
        answer: Json<Delivery>,
        status: 200,
        outcome: "The delivery",
        summary: "Change planned start and end",
        description: "",
        cli: Cli {
            command: "delivery",
            verb: "update-outbound",
            about: "Changes an outbound delivery's planned start and end",
            example: "prodops delivery update-outbound ID --planned-start-at 2025-01-02T08:00:00Z",
            flags: &[
                flag("plannedStartAt", "planned-start-at", "Date-time"),
                flag("plannedEndAt", "planned-end-at", "Date-time"),
            ],
        },
    }
}

action! {
    /// `POST /delivery/{id}/start`.
    Start: Post "/delivery/{id}/start" {
        operation: "post_delivery_id_start",
        tag: "delivery",
        access: UPDATE,
        path: Uuid,
        query: (),
        body: OptionalJson<LifecycleRequest>,
        answer: Json<Delivery>,
        status: 200,
        outcome: "The delivery",
        summary: "Start a delivery",
        description: "The body is optional.",
        cli: Cli {
            command: "delivery",
            verb: "start",
            about: "Puts a delivery in transit",
            example: "prodops delivery start ID",
            flags: &[
                flag("reason", "reason", "Kept as lastReason"),
            ],
        },
    }
}

action! {
    /// `POST /delivery/{id}/complete`.
    Complete: Post "/delivery/{id}/complete" {
        operation: "post_delivery_id_complete",
        tag: "delivery",
        // Completing posts `ship` rows to the item ledger.
        access: Access::Key(&[("Delivery", Perm::Update), ("Item", Perm::Update)]),
        path: Uuid,
        query: (),
        body: OptionalJson<LifecycleRequest>,
        answer: Json<Delivery>,
        status: 200,
        outcome: "The delivery",
        summary: "Complete a delivery (an outbound one posts ship rows)",
        description: "The body is optional.",
        cli: Cli {
            command: "delivery",
            verb: "complete",
            about: "Marks an outbound or transfer delivery delivered (ships its manifest lines)",
            example: "prodops delivery complete ID",
            flags: &[
                flag("reason", "reason", "Kept as lastReason"),
            ],
        },
    }
}

action! {
    /// `POST /delivery/{id}/cancel`.
    Cancel: Post "/delivery/{id}/cancel" {
        operation: "post_delivery_id_cancel",
        tag: "delivery",
        access: UPDATE,
        path: Uuid,
        query: (),
        body: OptionalJson<LifecycleRequest>,
        answer: Json<Delivery>,
        status: 200,
        outcome: "The delivery",
        summary: "Cancel a delivery",
        description: "The body is optional.",
        cli: Cli {
            command: "delivery",
            verb: "cancel",
            about: "Cancels a delivery",
            example: "prodops delivery cancel ID --reason 'customer postponed'",
            flags: &[
                flag("reason", "reason", "Kept as lastReason"),
            ],
        },
    }
}

action! {
    /// `POST /delivery/{id}/receive`.
    Receive: Post "/delivery/{id}/receive" {
        operation: "post_delivery_id_receive",
        tag: "delivery",
        access: Access::Key(&[("Item", Perm::Update)]),
        path: Uuid,
        query: (),
        body: OptionalJson<ReceiveRequest>,
        answer: Json<Delivery>,
        status: 200,
        outcome: "The delivery",
        summary: "Receive an inbound delivery (posts receipt rows)",
        description: "The body is optional: without `lines`, everything outstanding is received. Receipts accumulate: the delivery becomes `received` only when every manifest line is in (or it is closed short); a line may not receive more than its `quantityExpected` (400 naming `lines[i].quantity`, nothing posted).",
        cli: Cli {
            command: "delivery",
            verb: "receive",
            about: "Receives (part of) an inbound delivery: posts receipts to stock",
            example: "prodops delivery receive ID",
            flags: &[
                flag("lines", "lines", "[{\"manifestLineId\", \"quantity\", \"locationId\"?}] (default: everything outstanding)"),
            ],
        },
    }
}

action! {
    /// `POST /delivery/{id}/close-short`.
    CloseShort: Post "/delivery/{id}/close-short" {
        operation: "post_delivery_id_close_short",
        tag: "delivery",
        // The receiving clerk's action, with the same permission as receive.
        access: Access::Key(&[("Item", Perm::Update)]),
        path: Uuid,
        query: (),
        body: OptionalJson<LifecycleRequest>,
        answer: Json<Delivery>,
        status: 200,
        outcome: "The delivery",
        summary: "Close receiving of an inbound delivery short (records each line's shortfall)",
        description: "Ends receiving with what is in: the delivery becomes `received` and each manifest line's outstanding quantity is kept as its `quantityShort`; nothing is posted to the ledger. Only an inbound delivery still receiving (`expected` or `in_transit`) and not archived can be closed short; otherwise 400 naming `status`. The body is optional; `reason` is kept as `lastReason`.",
        cli: Cli {
            command: "delivery",
            verb: "close-short",
            about: "Closes receiving of an inbound delivery short: received with what is in, the rest recorded as shortfall",
            example: "prodops delivery close-short ID --reason 'supplier cannot send the rest'",
            flags: &[
                flag("reason", "reason", "Why (kept as lastReason)"),
            ],
        },
    }
}

action! {
    /// `POST /delivery/{id}/archive`.
    Archive: Post "/delivery/{id}/archive" {
        operation: "post_delivery_id_archive",
        tag: "delivery",
        access: ARCHIVE,
        path: Uuid,
        query: (),
        body: NoBody,
        answer: Json<Delivery>,
        status: 200,
        outcome: "The delivery",
        summary: "Archive a final delivery",
        description: "",
        cli: Cli {
            command: "delivery",
            verb: "archive",
            about: "Archives a delivered or canceled delivery",
            example: "prodops delivery archive ID",
            flags: &[],
        },
    }
}

action! {
    /// `POST /delivery/{id}/restore`.
    Restore: Post "/delivery/{id}/restore" {
        operation: "post_delivery_id_restore",
        tag: "delivery",
        access: ARCHIVE,
        path: Uuid,
        query: (),
        body: NoBody,
        answer: Json<Delivery>,
        status: 200,
        outcome: "The delivery",
        summary: "Restore an archived delivery",
        description: "",
        cli: Cli {
            command: "delivery",
            verb: "restore",
            about: "Restores an archived delivery",
            example: "prodops delivery restore ID",
            flags: &[],
        },
    }
}

action! {
    /// `GET /delivery/{id}/itinerary`.
    Itinerary: Get "/delivery/{id}/itinerary" {
        operation: "get_delivery_id_itinerary",
        tag: "delivery",
        access: READ,
        path: Uuid,
        query: (),
        body: NoBody,
        answer: FreeJson,
        status: 200,
        outcome: "Stops and legs",
        summary: "Stops and legs",
        description: "",
        cli: Cli {
            command: "delivery",
            verb: "itinerary",
            about: "Stops and legs of a delivery",
            example: "prodops delivery itinerary ID",
            flags: &[],
        },
    }
}

action! {
    /// `GET /delivery/{id}/cargo-plan`.
    CargoPlan: Get "/delivery/{id}/cargo-plan" {
        operation: "get_delivery_id_cargo_plan",
        tag: "delivery",
        access: READ,
        path: Uuid,
        query: (),
        body: NoBody,
        answer: FreeJson,
        status: 200,
        outcome: "Cargo spans",
        summary: "Cargo spans",
        description: "",
        cli: Cli {
            command: "delivery",
            verb: "cargo-plan",
            about: "Cargo spans of a delivery",
            example: "prodops delivery cargo-plan ID",
            flags: &[],
        },
    }
}
