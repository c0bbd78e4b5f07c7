//! BOM actions (spec 4.5): prepopulate, allocate, and the demand and materials rollups. They
//! answer `{"value": ...}`.

use uuid::Uuid;

use super::endpoint::{
    Access, Cli, NoBody, NoFields, OptionalJson, Perm, ValueList, ValueOf, action, flag,
};
use crate::bom_actions::{
    AllocateRequest, AllocateResult, DemandRow, PrepopulateRequest, PrepopulateResult,
};

const UPDATE: Access = Access::Key(&[("BomLine", Perm::Update)]);
const READ: Access = Access::Key(&[("BomLine", Perm::Read)]);

action! {
    /// `POST /bom-line/order/{id}/prepopulate`.
    Prepopulate: Post "/bom-line/order/{id}/prepopulate" {
        operation: "bom_line_order_prepopulate",
        tag: "bom-line",
        access: Access::Key(&[("BomLine", Perm::Create), ("ProductionOutput", Perm::Create)]),
        path: Uuid,
        query: (),
        body: OptionalJson<PrepopulateRequest>,
        answer: ValueOf<PrepopulateResult>,
        status: 200,
        outcome: "Success",
        summary: "Seed an order's BOM from its project BOM, else a route's inputs (idempotent)",
        description: "",
        cli: Cli {
            command: "bom",
            verb: "prepopulate",
            about: "Seeds an order's BOM lines from its project (or a route); re-runs copy only what is new",
            example: "prodops bom prepopulate ORDER --route-deliverable-id ROUTE",
            flags: &[flag(
                "routeDeliverableId",
                "route-deliverable-id",
                "Without a project BOM: copy this route's lines and outputs",
            )],
        },
    }
}

action! {
    /// `POST /bom-line/order/{id}/allocate`.
    AllocateOrder: Post "/bom-line/order/{id}/allocate" {
        operation: "bom_line_order_allocate",
        tag: "bom-line",
        access: UPDATE,
        path: Uuid,
        query: (),
        body: OptionalJson<AllocateRequest>,
        answer: ValueOf<AllocateResult>,
        status: 200,
        outcome: "Success",
        summary: "Reserve an order's remaining materials",
        description: "",
        cli: Cli {
            command: "bom",
            verb: "allocate",
            about: "Reserves what an order's lines still need",
            example: "prodops bom allocate ORDER --item-ids I1,I2",
            flags: &[flag("itemIds", "item-ids", "Only lines of these items")],
        },
    }
}

action! {
    /// `POST /bom-line/project/{id}/allocate`.
    AllocateProject: Post "/bom-line/project/{id}/allocate" {
        operation: "bom_line_project_allocate",
        tag: "bom-line",
        access: UPDATE,
        path: Uuid,
        query: (),
        body: OptionalJson<NoFields>,
        answer: ValueOf<AllocateResult>,
        status: 200,
        outcome: "Success",
        summary: "Reserve a project's materials",
        description: "",
        cli: Cli {
            command: "bom",
            verb: "allocate-project",
            about: "Reserves what a project's lines still need",
            example: "prodops bom allocate-project PROJECT",
            flags: &[],
        },
    }
}

action! {
    /// `GET /bom-line/demand-rollup`.
    DemandRollup: Get "/bom-line/demand-rollup" {
        operation: "bom_line_demand_rollup",
        tag: "bom-line",
        access: READ,
        path: (),
        query: (),
        body: NoBody,
        answer: ValueList<DemandRow>,
        status: 200,
        outcome: "Success",
        summary: "Material demand per item with its sources, stock and shortage",
        description: "",
        cli: Cli {
            command: "bom",
            verb: "demand-rollup",
            about: "Material demand per item, largest shortage first",
            example: "prodops bom demand-rollup --output json",
            flags: &[],
        },
    }
}

action! {
    /// `GET /bom-line/project/{id}/materials-rollup`.
    MaterialsRollup: Get "/bom-line/project/{id}/materials-rollup" {
        operation: "bom_line_project_materials_rollup",
        tag: "bom-line",
        access: READ,
        path: Uuid,
        query: (),
        body: NoBody,
        answer: ValueOf<crate::bom_actions::MaterialsRollup>,
        status: 200,
        outcome: "Success",
        summary: "A project's estimate, planned, on-order, used and variance per item",
        description: "",
        cli: Cli {
            command: "bom",
            verb: "materials-rollup",
            about: "Estimate, planned, on-order, used and variance of a project",
            example: "prodops bom materials-rollup PROJECT",
            flags: &[],
        },
    }
}
