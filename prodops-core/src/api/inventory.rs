//! Inventory (spec 4.6): posting an adjust, transfer or return, reading stock, and posting a
//! stock count.

use crate::openapi::ToSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::endpoint::{
    Access, Cli, Json, NoBody, PAGING, PageOf, ParamKind, ParamValues, Perm, QueryArgs, QueryParam,
    RecordJson, action, flag, push,
};
use crate::inventory::{InventoryTransaction, Stock, TransactionSource, TransactionType};
use crate::stock_count::{CountRequest, CountResult};

/// The body of `POST /inventory-transaction`: an adjust, transfer or return. (The server
/// stores it as an [`InventoryTransaction`], whose other fields it fills in.)
///
/// ```
/// use prodops_core::inventory::TransactionType;
/// let r = prodops_core::api::inventory::PostInventory::new(uuid::Uuid::nil(), TransactionType::Adjust, 5.0);
/// assert_eq!(serde_json::to_value(&r).unwrap()["type"], "adjust");
/// assert!(r.from_location_id.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PostInventory {
    /// The item.
    pub item_id: Uuid,
    /// `adjust`, `transfer` or `return` (the other types are posted by their workflows).
    #[serde(rename = "type")]
    pub kind: TransactionType,
    /// How much (signed for an adjust), in `unitMeasureId`.
    pub quantity: f64,
    /// The unit `quantity` is in (default the item's base unit); converted to the base unit
    /// when posted (400 naming it when it has no conversion).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit_measure_id: Option<Uuid>,
    /// Source location.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_location_id: Option<Uuid>,
    /// Destination location.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_location_id: Option<Uuid>,
    /// How the row was captured (default `manual`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<TransactionSource>,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Cost of one unit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit_cost: Option<f64>,
}

impl PostInventory {
    /// A posting of `quantity` of `item_id` with no location yet.
    pub fn new(item_id: Uuid, kind: TransactionType, quantity: f64) -> PostInventory {
        PostInventory {
            item_id,
            kind,
            quantity,
            unit_measure_id: None,
            from_location_id: None,
            to_location_id: None,
            source: None,
            reason: None,
            unit_cost: None,
        }
    }
}

/// The body of `POST /inventory/reverse`: the ledger rows of one posting to reverse.
///
/// ```
/// let r = prodops_core::api::inventory::ReverseRequest::of(uuid::Uuid::nil());
/// assert_eq!(serde_json::to_value(&r).unwrap()["transactionIds"][0], uuid::Uuid::nil().to_string());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReverseRequest {
    /// The ledger rows to reverse (1 to 1,000, each once): a posting's rows, reversed together.
    pub transaction_ids: Vec<Uuid>,
    /// Why (default `reversal of <id>` on each row).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl ReverseRequest {
    /// The reversal of one row.
    pub fn of(transaction_id: Uuid) -> ReverseRequest {
        ReverseRequest {
            transaction_ids: vec![transaction_id],
            reason: None,
        }
    }
}

/// The most rows one reversal names.
pub const MAX_REVERSED_ROWS: usize = 1000;

/// The answer of `POST /inventory/reverse`: the reversal rows posted, in the request's order,
/// each with `reversesId` naming the row it reverses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReverseResult {
    pub transactions: Vec<InventoryTransaction>,
}

/// The filters of `GET /stock`.
///
/// ```
/// use prodops_core::api::QueryArgs;
/// let p = prodops_core::api::inventory::StockQuery { item_id: Some(uuid::Uuid::nil()), ..Default::default() };
/// assert_eq!(p.pairs()[0].0, "itemId");
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StockQuery {
    /// Only this item.
    pub item_id: Option<Uuid>,
    /// Only this location.
    pub location_id: Option<Uuid>,
    /// Only locations of this shop.
    pub shop_id: Option<Uuid>,
    /// Only this lot (implies `groupBy=lot`).
    pub lot_id: Option<Uuid>,
    /// `lot`: one row per item, location and lot for items tracked by lot or serial (with
    /// `lotId`), untracked items as without it.
    pub group_by: Option<String>,
    /// Page (1-based).
    pub page: Option<u64>,
    /// Page size.
    pub page_size: Option<u64>,
}

impl QueryArgs for StockQuery {
    const PARAMS: &'static [QueryParam] = &[
        QueryParam {
            name: "itemId",
            kind: ParamKind::Uuid,
            required: false,
            description: "Only this item",
            values: ParamValues::Any,
        },
        QueryParam {
            name: "locationId",
            kind: ParamKind::Uuid,
            required: false,
            description: "Only this location",
            values: ParamValues::Any,
        },
        QueryParam {
            name: "shopId",
            kind: ParamKind::Uuid,
            required: false,
            description: "Only locations of this shop",
            values: ParamValues::Any,
        },
        QueryParam {
            name: "lotId",
            kind: ParamKind::Uuid,
            required: false,
            description: "Only this lot (implies groupBy=lot)",
            values: ParamValues::Any,
        },
        QueryParam {
            name: "groupBy",
            kind: ParamKind::Text,
            required: false,
            description: "lot: one row per item, location and lot (with lotId) for items tracked by lot or serial; untracked items as without it",
            values: ParamValues::OneOf(&["lot"]),
        },
        PAGING[0],
        PAGING[1],
    ];
    fn pairs(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        push(&mut out, "itemId", self.item_id);
        push(&mut out, "locationId", self.location_id);
        push(&mut out, "shopId", self.shop_id);
        push(&mut out, "lotId", self.lot_id);
        push(&mut out, "groupBy", self.group_by.clone());
        push(&mut out, "page", self.page);
        push(&mut out, "pageSize", self.page_size);
        out
    }
}

action! {
    /// `POST /inventory-transaction`.
    PostTransaction: Post "/inventory-transaction" {
        operation: "inventory_transaction_post",
        tag: "inventory-transaction",
        access: Access::Key(&[("Item", Perm::Update)]),
        path: (),
        query: (),
        body: RecordJson<PostInventory>,
        answer: Json<InventoryTransaction>,
        status: 201,
        outcome: "Success",
        summary: "Post an adjust, transfer or return (Item.Update); stock updated atomically; 409 when stock would go below zero",
        description: "",
        // The server takes the record's create form; `PostInventory` is the part a client fills.
        body_schema: super::endpoint::create_form_of::<crate::inventory::InventoryTransaction>,
        cli: Cli {
            command: "inventory",
            verb: "post",
            about: "Posts an adjust, transfer or return (refused with exit 5 when stock would go below zero)",
            example: "prodops inventory post --item-id I --type adjust --quantity 5 --to-location-id L",
            flags: &[
                flag("type", "type", "adjust, transfer or return"),
                flag("quantity", "quantity", "How much (signed for adjust)"),
                flag("source", "source", "manual, import, scan, count or integration"),
            ],
        },
    }
}

action! {
    /// `GET /stock`.
    StockList: Get "/stock" {
        operation: "stock_list",
        tag: "stock",
        access: Access::Key(&[("Item", Perm::Read)]),
        path: (),
        query: StockQuery,
        body: NoBody,
        answer: PageOf<Stock>,
        status: 200,
        outcome: "Success",
        summary: "Stock on hand and reserved per item and location, or per lot with groupBy=lot (filters itemId, locationId, shopId, lotId; page, pageSize)",
        description: "",
        cli: Cli {
            command: "inventory",
            verb: "stock",
            about: "Stock on hand and reserved per item and location",
            example: "prodops inventory stock --item-id I --output csv",
            flags: &[],
        },
    }
}

action! {
    /// `POST /inventory/count`.
    Count: Post "/inventory/count" {
        operation: "inventory_count",
        tag: "inventory-transaction",
        access: Access::Key(&[("Item", Perm::Update)]),
        path: (),
        query: (),
        body: Json<CountRequest>,
        answer: Json<CountResult>,
        status: 200,
        outcome: "Success",
        summary: "Post a stock count (Item.Update): each line compared with the ledger as of the count, one adjust row (source count) per difference, in one transaction",
        description: "",
        cli: Cli {
            command: "inventory",
            verb: "count",
            about: "Posts a stock count from a CSV file (itemId,locationId,quantity[,unitMeasureId]); --dry-run shows the differences and posts nothing",
            example: "prodops inventory count count.csv --dry-run",
            flags: &[
                flag("lines", "lines", "The counted lines as JSON, instead of FILE: [{\"itemId\", \"locationId\", \"quantity\", \"unitMeasureId\"?}]"),
                flag("dryRun", "dry-run", "Show the differences; post nothing"),
            ],
        },
    }
}

action! {
    /// `POST /inventory/reverse`.
    Reverse: Post "/inventory/reverse" {
        operation: "inventory_reverse",
        tag: "inventory-transaction",
        access: Access::Key(&[("Item", Perm::Update)]),
        path: (),
        query: (),
        body: Json<ReverseRequest>,
        answer: Json<ReverseResult>,
        status: 201,
        outcome: "Success",
        summary: "Reverse ledger rows (Item.Update): posts the opposite of each, linked by reversesId, once; 409 when reversed already, a reversal, frozen, or stock would go below zero",
        description: "",
        cli: Cli {
            command: "inventory",
            verb: "reverse",
            about: "Reverses ledger rows: posts the opposite of each, linked to it (refused with exit 5 when reversed already or stock would go below zero)",
            example: "prodops inventory reverse --ids T1,T2 --reason 'posted twice'",
            flags: &[
                flag("transactionIds", "ids", "The ledger rows to reverse (a posting's rows), comma-separated"),
            ],
        },
    }
}
