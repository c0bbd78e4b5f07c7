//! Typed action endpoints (spec 4.2 to 4.13): each is one call of [`Client::action`] (or
//! [`Client::action_bytes`] for a file upload) with the server's own request and answer types
//! from `prodops-core`, so the client and the server cannot disagree on a field.
//!
//! Answers the server wraps in `{"value": ...}` (the production and BOM actions) are unwrapped:
//! the methods return the inner value. Answers whose shape has no core type (groups, crew time,
//! itinerary, cargo plan, outbox) are `serde_json::Value`.

use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::{Client, GroupCount, Method, Page, Result, encode};
use prodops_core::bom_actions::{
    AllocateRequest, AllocateResult, DemandRow, MaterialsRollup, PrepopulateRequest,
    PrepopulateResult,
};
use prodops_core::delivery::{
    Delivery, LifecycleRequest, OutboundCreate, OutboundPatch, ReceiveRequest,
};
use prodops_core::document::{
    CopyMode, CopyModeRequest, CountsByDeliverable, Document, DocumentVersion, HubBulkUpload,
    LinkRequest, UploadedFile, VersionCreate,
};
use prodops_core::inventory::{InventoryTransaction, Stock, TransactionSource, TransactionType};
use prodops_core::notification::{ReadChannelComments, ReadDeliverableDocuments};
use prodops_core::organization::{AcceptInvitation, InviteRequest, OrganizationMember};
use prodops_core::production_actions::{
    AdjustActualRequest, AdjustActualResult, ConsumeRequest, ConsumeResult, OrderEntry,
    OrderStatus, ProduceRequest, ProduceResult,
};
use prodops_core::progress::{ProgressAction, ProgressResult};
use prodops_core::qc::{QcTemplateVersion, QcTemplateVersionCreate};
use prodops_core::schedule::{ScheduleAction, ScheduleBatchItem};
use prodops_core::work_session::{SaveRequest, StopRequest};
use prodops_core::worker::Worker;

/// `{ "value": ... }`, how the production and BOM actions answer (spec 4.4, 4.5).
///
/// ```
/// let v: prodops_client::actions::ValueAnswer = serde_json::from_str(r#"{"value":{"posted":2}}"#).unwrap();
/// assert_eq!(v.value["posted"], 2);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValueAnswer<T = Value> {
    /// What the action did.
    pub value: T,
}

/// The body of `POST /inventory-transaction` (spec 4.6): an adjust, transfer or return. (The
/// server stores it as an [`InventoryTransaction`], whose other fields it fills in.)
///
/// ```
/// use prodops_core::inventory::TransactionType;
/// let r = prodops_client::actions::PostInventory::new(uuid::Uuid::nil(), TransactionType::Adjust, 5.0);
/// assert_eq!(serde_json::to_value(&r).unwrap()["type"], "adjust");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PostInventory {
    /// The item.
    pub item_id: Uuid,
    /// `adjust`, `transfer` or `return` (the other types are posted by their workflows).
    #[serde(rename = "type")]
    pub kind: TransactionType,
    /// How much (signed for an adjust).
    pub quantity: f64,
    /// Source location.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_location_id: Option<Uuid>,
    /// Destination location.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_location_id: Option<Uuid>,
    /// How the row was captured (default `manual`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<TransactionSource>,
    /// Why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Cost of one unit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit_cost: Option<f64>,
}

impl PostInventory {
    /// A posting of `quantity` of `item_id` with no location yet.
    ///
    /// ```
    /// use prodops_core::inventory::TransactionType;
    /// let r = prodops_client::actions::PostInventory::new(uuid::Uuid::nil(), TransactionType::Return, 1.0);
    /// assert!(r.from_location_id.is_none());
    /// ```
    pub fn new(item_id: Uuid, kind: TransactionType, quantity: f64) -> PostInventory {
        PostInventory {
            item_id,
            kind,
            quantity,
            from_location_id: None,
            to_location_id: None,
            source: None,
            reason: None,
            unit_cost: None,
        }
    }
}

/// The filters of `GET /stock`.
///
/// ```
/// let p = prodops_client::actions::StockParams { item_id: Some(uuid::Uuid::nil()), ..Default::default() };
/// assert!(p.query_string().starts_with("itemId=00000000"));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StockParams {
    /// Only this item.
    pub item_id: Option<Uuid>,
    /// Only this location.
    pub location_id: Option<Uuid>,
    /// Only locations of this shop.
    pub shop_id: Option<Uuid>,
    /// Page (1-based).
    pub page: Option<u64>,
    /// Page size.
    pub page_size: Option<u64>,
}

impl StockParams {
    /// The query string, without `?`.
    ///
    /// ```
    /// assert_eq!(prodops_client::actions::StockParams::default().query_string(), "");
    /// ```
    pub fn query_string(&self) -> String {
        let mut q = Vec::new();
        for (k, v) in [
            ("itemId", self.item_id),
            ("locationId", self.location_id),
            ("shopId", self.shop_id),
        ] {
            if let Some(v) = v {
                q.push(format!("{k}={v}"));
            }
        }
        if let Some(p) = self.page {
            q.push(format!("page={p}"));
        }
        if let Some(p) = self.page_size {
            q.push(format!("pageSize={p}"));
        }
        q.join("&")
    }
}

/// The answer of `POST /document/hub/bulk-upload`: the created documents.
///
/// ```
/// let a: prodops_client::actions::HubUploaded = serde_json::from_str(r#"{"values":[],"count":0}"#).unwrap();
/// assert_eq!(a.count, 0);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HubUploaded {
    /// The documents, in request order.
    pub values: Vec<Document>,
    /// How many.
    pub count: u64,
}

#[derive(Deserialize)]
struct Values<T> {
    values: Vec<T>,
}

const NONE: Option<&()> = None;

fn with_query(path: String, query: String) -> String {
    if query.is_empty() {
        path
    } else {
        format!("{path}?{query}")
    }
}

impl Client {
    async fn value_action<B, T>(&self, method: Method, path: &str, body: Option<&B>) -> Result<T>
    where
        B: Serialize + ?Sized,
        T: DeserializeOwned,
    {
        let answer: ValueAnswer<T> = self.action(method, path, body).await?;
        Ok(answer.value)
    }

    // ---- worker (spec 4.11): archive and restore are PATCHes of `isArchived` ----

    /// Archives a worker (`PATCH /worker/{id}` `{"isArchived": true}`); the name and
    /// `customerIdentifier` get the ` - (archived <n>)` suffix.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// let w = c.archive_worker(id).await?;
    /// # Ok(()) }
    /// ```
    pub async fn archive_worker(&self, id: Uuid) -> Result<Worker> {
        self.action(
            Method::PATCH,
            &format!("/worker/{id}"),
            Some(&json!({"isArchived": true})),
        )
        .await
    }

    /// Restores an archived worker (`PATCH /worker/{id}` `{"isArchived": false}`).
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// let w = c.restore_worker(id).await?;
    /// # Ok(()) }
    /// ```
    pub async fn restore_worker(&self, id: Uuid) -> Result<Worker> {
        self.action(
            Method::PATCH,
            &format!("/worker/{id}"),
            Some(&json!({"isArchived": false})),
        )
        .await
    }

    // ---- deliverable extras (spec 4.2) and work sessions (4.3) ----

    /// `GET /deliverable/{id}/hierarchy`: the node and its whole subtree.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, root: uuid::Uuid) -> prodops_client::Result<()> {
    /// let tree = c.deliverable_hierarchy(root).await?;
    /// # Ok(()) }
    /// ```
    pub async fn deliverable_hierarchy(&self, id: Uuid) -> Result<Page<Value>> {
        self.action(Method::GET, &format!("/deliverable/{id}/hierarchy"), NONE)
            .await
    }

    /// `GET /deliverable/{id}/hierarchy?select=...` read as it arrives (parents before
    /// children, siblings in order): each record's JSON text in turn, only `id` and the
    /// `select`ed fields (all fields when `select` is empty). For subtrees too large to hold.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, root: uuid::Uuid) -> prodops_client::Result<()> {
    /// let mut nodes = c.deliverable_hierarchy_stream(root, &["name", "parentId"]).await?;
    /// while let Some(text) = nodes.next_value().await? {
    ///     let node: serde_json::Value = serde_json::from_slice(&text).unwrap();
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn deliverable_hierarchy_stream(
        &self,
        id: Uuid,
        select: &[&str],
    ) -> Result<crate::ValuesStream> {
        let mut path = format!("/deliverable/{id}/hierarchy");
        if !select.is_empty() {
            path.push_str("?select=");
            path.push_str(&crate::encode(&select.join(",")));
        }
        self.values_stream(&path).await
    }

    /// `POST /deliverable/groups` `{groupBy, filter?}` (`project`, `stage`, `people`, `root`,
    /// `tags`): `{"groupBy", "values": [{"groupId", "count", "deliverableIds"}]}`.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client) -> prodops_client::Result<()> {
    /// let groups = c.deliverable_groups("stage", None).await?;
    /// # Ok(()) }
    /// ```
    pub async fn deliverable_groups(
        &self,
        group_by: &str,
        filter: Option<&Value>,
    ) -> Result<Value> {
        let mut body = json!({ "groupBy": group_by });
        if let Some(f) = filter {
            body["filter"] = f.clone();
        }
        self.action(Method::POST, "/deliverable/groups", Some(&body))
            .await
    }

    /// `POST /deliverable/reorder`: the listed nodes take this order among their siblings.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, root: uuid::Uuid, a: uuid::Uuid, b: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.deliverable_reorder(root, &[b, a]).await?;
    /// # Ok(()) }
    /// ```
    pub async fn deliverable_reorder(&self, root_parent_id: Uuid, ordered: &[Uuid]) -> Result<()> {
        self.action(
            Method::POST,
            "/deliverable/reorder",
            Some(&json!({ "rootParentId": root_parent_id, "orderedDeliverableIds": ordered })),
        )
        .await
    }

    /// `GET /deliverable/crew-time?deliverableId=..`: `{"<id>": {"totalSeconds", "openSessions",
    /// "workers": [...]}}` for each deliverable.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, d: uuid::Uuid) -> prodops_client::Result<()> {
    /// let time = c.deliverable_crew_time(&[d]).await?;
    /// # Ok(()) }
    /// ```
    pub async fn deliverable_crew_time(&self, ids: &[Uuid]) -> Result<Value> {
        let query: Vec<String> = ids.iter().map(|i| format!("deliverableId={i}")).collect();
        self.action(
            Method::GET,
            &format!("/deliverable/crew-time?{}", query.join("&")),
            NONE,
        )
        .await
    }

    /// `POST /deliverable/root/{root}/progress/{id}`: a progress action; answers the workers
    /// whose sessions the transition to done stopped.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, root: uuid::Uuid, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// use prodops_core::progress::ProgressAction;
    /// c.deliverable_progress(root, id, &ProgressAction::SendAhead { quantity: 2.0 }).await?;
    /// # Ok(()) }
    /// ```
    pub async fn deliverable_progress(
        &self,
        root: Uuid,
        id: Uuid,
        action: &ProgressAction,
    ) -> Result<ProgressResult> {
        self.action(
            Method::POST,
            &format!("/deliverable/root/{root}/progress/{id}"),
            Some(action),
        )
        .await
    }

    /// `POST /deliverable/root/{root}/schedule/{id}`: a schedule action (204).
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, root: uuid::Uuid, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// use prodops_core::schedule::ScheduleAction;
    /// c.deliverable_schedule(root, id, &ScheduleAction::Schedule { new_start: 1_735_689_600 }).await?;
    /// # Ok(()) }
    /// ```
    pub async fn deliverable_schedule(
        &self,
        root: Uuid,
        id: Uuid,
        action: &ScheduleAction,
    ) -> Result<()> {
        self.action(
            Method::POST,
            &format!("/deliverable/root/{root}/schedule/{id}"),
            Some(action),
        )
        .await
    }

    /// `POST /deliverable/schedule/batch`: schedule actions in order, all or nothing (204).
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, items: Vec<prodops_core::schedule::ScheduleBatchItem>) -> prodops_client::Result<()> {
    /// c.deliverable_schedule_batch(&items).await?;
    /// # Ok(()) }
    /// ```
    pub async fn deliverable_schedule_batch(&self, items: &[ScheduleBatchItem]) -> Result<()> {
        self.action(Method::POST, "/deliverable/schedule/batch", Some(items))
            .await
    }

    /// `POST /deliverable/work-sessions/save` (204).
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, body: prodops_core::work_session::SaveRequest) -> prodops_client::Result<()> {
    /// c.save_work_sessions(&body).await?;
    /// # Ok(()) }
    /// ```
    pub async fn save_work_sessions(&self, body: &SaveRequest) -> Result<()> {
        self.action(Method::POST, "/deliverable/work-sessions/save", Some(body))
            .await
    }

    /// `POST /deliverable/work-sessions/stop` (204).
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, w: uuid::Uuid) -> prodops_client::Result<()> {
    /// use prodops_core::work_session::StopRequest;
    /// c.stop_work_sessions(&StopRequest { worker_ids: vec![w], ..Default::default() }).await?;
    /// # Ok(()) }
    /// ```
    pub async fn stop_work_sessions(&self, body: &StopRequest) -> Result<()> {
        self.action(Method::POST, "/deliverable/work-sessions/stop", Some(body))
            .await
    }

    // ---- production (spec 4.4) ----

    /// `POST /production/produce`: the posted ledger rows and the credited declarations.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, order: uuid::Uuid, loc: uuid::Uuid) -> prodops_client::Result<()> {
    /// use prodops_core::production_actions::ProduceRequest;
    /// let out = c.produce(&ProduceRequest { deliverable_id: order, quantity_produced: 1.0,
    ///     output_location_id: Some(loc), outputs: None, output_item_id: None }).await?;
    /// # Ok(()) }
    /// ```
    pub async fn produce(&self, body: &ProduceRequest) -> Result<ProduceResult> {
        self.value_action(Method::POST, "/production/produce", Some(body))
            .await
    }

    /// `POST /production/consume`: the posted rows, the drawn lines, the ignored entries.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, node: uuid::Uuid) -> prodops_client::Result<()> {
    /// use prodops_core::production_actions::ConsumeRequest;
    /// c.consume(&ConsumeRequest { deliverable_id: node, lines: None, from_location_id: None }).await?;
    /// # Ok(()) }
    /// ```
    pub async fn consume(&self, body: &ConsumeRequest) -> Result<ConsumeResult> {
        self.value_action(Method::POST, "/production/consume", Some(body))
            .await
    }

    /// `POST /production/adjust-actual`.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, body: prodops_core::production_actions::AdjustActualRequest) -> prodops_client::Result<()> {
    /// c.adjust_actual(&body).await?;
    /// # Ok(()) }
    /// ```
    pub async fn adjust_actual(&self, body: &AdjustActualRequest) -> Result<AdjustActualResult> {
        self.value_action(Method::POST, "/production/adjust-actual", Some(body))
            .await
    }

    /// `GET /production/order/{id}/status`.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, order: uuid::Uuid) -> prodops_client::Result<()> {
    /// let status = c.production_status(order).await?;
    /// # Ok(()) }
    /// ```
    pub async fn production_status(&self, order: Uuid) -> Result<OrderStatus> {
        self.action(
            Method::GET,
            &format!("/production/order/{order}/status"),
            NONE,
        )
        .await
    }

    /// `GET /production/order/{id}/entries?page=&pageSize=`: the production trace, oldest first
    /// (`page` and `page_size` `None`: the server's defaults).
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, order: uuid::Uuid) -> prodops_client::Result<()> {
    /// let entries = c.production_entries(order, None, Some(1000)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn production_entries(
        &self,
        order: Uuid,
        page: Option<u64>,
        page_size: Option<u64>,
    ) -> Result<Page<OrderEntry>> {
        let mut q = Vec::new();
        if let Some(p) = page {
            q.push(format!("page={p}"));
        }
        if let Some(p) = page_size {
            q.push(format!("pageSize={p}"));
        }
        let path = with_query(format!("/production/order/{order}/entries"), q.join("&"));
        self.action(Method::GET, &path, NONE).await
    }

    // ---- BOM (spec 4.5) ----

    /// `POST /bom-line/order/{id}/prepopulate`: seeds the order's BOM from its project, else
    /// from `routeDeliverableId`.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, order: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.bom_prepopulate(order, &Default::default()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn bom_prepopulate(
        &self,
        order: Uuid,
        body: &PrepopulateRequest,
    ) -> Result<PrepopulateResult> {
        self.value_action(
            Method::POST,
            &format!("/bom-line/order/{order}/prepopulate"),
            Some(body),
        )
        .await
    }

    /// `POST /bom-line/order/{id}/allocate` (every line, or the lines of `itemIds`).
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, order: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.bom_allocate_order(order, &Default::default()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn bom_allocate_order(
        &self,
        order: Uuid,
        body: &AllocateRequest,
    ) -> Result<AllocateResult> {
        self.value_action(
            Method::POST,
            &format!("/bom-line/order/{order}/allocate"),
            Some(body),
        )
        .await
    }

    /// `POST /bom-line/project/{id}/allocate` (no body).
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, project: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.bom_allocate_project(project).await?;
    /// # Ok(()) }
    /// ```
    pub async fn bom_allocate_project(&self, project: Uuid) -> Result<AllocateResult> {
        self.value_action(
            Method::POST,
            &format!("/bom-line/project/{project}/allocate"),
            NONE,
        )
        .await
    }

    /// `GET /bom-line/demand-rollup`: demand per item, largest shortage first.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client) -> prodops_client::Result<()> {
    /// let demand = c.bom_demand_rollup().await?;
    /// # Ok(()) }
    /// ```
    pub async fn bom_demand_rollup(&self) -> Result<Vec<DemandRow>> {
        self.value_action(Method::GET, "/bom-line/demand-rollup", NONE)
            .await
    }

    /// `GET /bom-line/project/{id}/materials-rollup`.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, project: uuid::Uuid) -> prodops_client::Result<()> {
    /// let m = c.bom_materials_rollup(project).await?;
    /// # Ok(()) }
    /// ```
    pub async fn bom_materials_rollup(&self, project: Uuid) -> Result<MaterialsRollup> {
        self.value_action(
            Method::GET,
            &format!("/bom-line/project/{project}/materials-rollup"),
            NONE,
        )
        .await
    }

    // ---- inventory (spec 4.6, decisions.md section 5) ----

    /// `POST /inventory-transaction` (adjust, transfer, return): the stored ledger row. A
    /// posting that would take stock below zero is a 409.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, body: prodops_client::actions::PostInventory) -> prodops_client::Result<()> {
    /// let row = c.post_inventory(&body).await?;
    /// # Ok(()) }
    /// ```
    pub async fn post_inventory(&self, body: &PostInventory) -> Result<InventoryTransaction> {
        self.action(Method::POST, "/inventory-transaction", Some(body))
            .await
    }

    /// `GET /stock?itemId=&locationId=&shopId=`: stock on hand and reserved.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, item: uuid::Uuid) -> prodops_client::Result<()> {
    /// use prodops_client::actions::StockParams;
    /// let rows = c.stock(&StockParams { item_id: Some(item), ..Default::default() }).await?;
    /// # Ok(()) }
    /// ```
    pub async fn stock(&self, params: &StockParams) -> Result<Page<Stock>> {
        let path = with_query("/stock".into(), params.query_string());
        self.action(Method::GET, &path, NONE).await
    }

    // ---- delivery (spec 4.8) ----

    /// `POST /delivery/outbound`: an outbound (or transfer) delivery with its paired group,
    /// stops, leg and cargo spans.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client) -> prodops_client::Result<()> {
    /// let body: prodops_core::delivery::OutboundCreate =
    ///     serde_json::from_value(serde_json::json!({"name": "Truck 1", "itemIds": []})).unwrap();
    /// c.create_outbound_delivery(&body).await?;
    /// # Ok(()) }
    /// ```
    pub async fn create_outbound_delivery(&self, body: &OutboundCreate) -> Result<Delivery> {
        self.action(Method::POST, "/delivery/outbound", Some(body))
            .await
    }

    /// `PATCH /delivery/{id}/outbound`: the planned start and end of an outbound delivery.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, id: uuid::Uuid, body: prodops_core::delivery::OutboundPatch) -> prodops_client::Result<()> {
    /// c.patch_outbound_delivery(id, &body).await?;
    /// # Ok(()) }
    /// ```
    pub async fn patch_outbound_delivery(
        &self,
        id: Uuid,
        body: &OutboundPatch,
    ) -> Result<Delivery> {
        self.action(
            Method::PATCH,
            &format!("/delivery/{id}/outbound"),
            Some(body),
        )
        .await
    }

    /// `POST /delivery/{id}/receive`: receipts for an inbound delivery (every outstanding line
    /// when `lines` is `None`).
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.receive_delivery(id, &Default::default()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn receive_delivery(&self, id: Uuid, body: &ReceiveRequest) -> Result<Delivery> {
        self.action(Method::POST, &format!("/delivery/{id}/receive"), Some(body))
            .await
    }

    /// `POST /delivery/{id}/start` (optional `reason`).
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.start_delivery(id, &Default::default()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn start_delivery(&self, id: Uuid, body: &LifecycleRequest) -> Result<Delivery> {
        self.action(Method::POST, &format!("/delivery/{id}/start"), Some(body))
            .await
    }

    /// `POST /delivery/{id}/complete`: delivered; ships every manifest line.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.complete_delivery(id, &Default::default()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn complete_delivery(&self, id: Uuid, body: &LifecycleRequest) -> Result<Delivery> {
        self.action(
            Method::POST,
            &format!("/delivery/{id}/complete"),
            Some(body),
        )
        .await
    }

    /// `POST /delivery/{id}/cancel`.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// use prodops_core::delivery::LifecycleRequest;
    /// c.cancel_delivery(id, &LifecycleRequest { reason: Some("truck broke down".into()) }).await?;
    /// # Ok(()) }
    /// ```
    pub async fn cancel_delivery(&self, id: Uuid, body: &LifecycleRequest) -> Result<Delivery> {
        self.action(Method::POST, &format!("/delivery/{id}/cancel"), Some(body))
            .await
    }

    /// `POST /delivery/{id}/archive` (received, delivered or cancelled deliveries).
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.archive_delivery(id).await?;
    /// # Ok(()) }
    /// ```
    pub async fn archive_delivery(&self, id: Uuid) -> Result<Delivery> {
        self.action(Method::POST, &format!("/delivery/{id}/archive"), NONE)
            .await
    }

    /// `POST /delivery/{id}/restore`.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.restore_delivery(id).await?;
    /// # Ok(()) }
    /// ```
    pub async fn restore_delivery(&self, id: Uuid) -> Result<Delivery> {
        self.action(Method::POST, &format!("/delivery/{id}/restore"), NONE)
            .await
    }

    /// `GET /delivery/{id}/itinerary`: `{deliveryId, stops, legs}`.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// let it = c.delivery_itinerary(id).await?;
    /// # Ok(()) }
    /// ```
    pub async fn delivery_itinerary(&self, id: Uuid) -> Result<Value> {
        self.action(Method::GET, &format!("/delivery/{id}/itinerary"), NONE)
            .await
    }

    /// `GET /delivery/{id}/cargo-plan`: `{deliveryId, cargoCount, spans}`.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// let plan = c.delivery_cargo_plan(id).await?;
    /// # Ok(()) }
    /// ```
    pub async fn delivery_cargo_plan(&self, id: Uuid) -> Result<Value> {
        self.action(Method::GET, &format!("/delivery/{id}/cargo-plan"), NONE)
            .await
    }

    // ---- documents (spec 4.7) ----

    /// `POST /document/upload`: stores a file's bytes (sent raw with `content_type`); the
    /// answer's `documentKey` is then named by a version or a Hub upload.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client) -> prodops_client::Result<()> {
    /// let file = c.upload_file(std::fs::read("plan.pdf").unwrap().into(), "application/pdf").await?;
    /// # Ok(()) }
    /// ```
    pub async fn upload_file(&self, bytes: Bytes, content_type: &str) -> Result<UploadedFile> {
        self.action_bytes(Method::POST, "/document/upload", bytes, content_type)
            .await
    }

    /// `POST /document/hub/bulk-upload`: Hub documents with a first version each, all or
    /// nothing.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, body: prodops_core::document::HubBulkUpload) -> prodops_client::Result<()> {
    /// let docs = c.hub_bulk_upload(&body).await?;
    /// # Ok(()) }
    /// ```
    pub async fn hub_bulk_upload(&self, body: &HubBulkUpload) -> Result<HubUploaded> {
        self.action(Method::POST, "/document/hub/bulk-upload", Some(body))
            .await
    }

    /// `POST /document/{id}/versions`: a new version of a document, made current.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, doc: uuid::Uuid, body: prodops_core::document::VersionCreate) -> prodops_client::Result<()> {
    /// let v = c.create_document_version(doc, &body).await?;
    /// # Ok(()) }
    /// ```
    pub async fn create_document_version(
        &self,
        document: Uuid,
        body: &VersionCreate,
    ) -> Result<DocumentVersion> {
        self.action(
            Method::POST,
            &format!("/document/{document}/versions"),
            Some(body),
        )
        .await
    }

    /// `POST /document-version`: the same with the document named by `documentId` in the body.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, body: prodops_core::document::VersionCreate) -> prodops_client::Result<()> {
    /// let v = c.create_document_version_by_body(&body).await?;
    /// # Ok(()) }
    /// ```
    pub async fn create_document_version_by_body(
        &self,
        body: &VersionCreate,
    ) -> Result<DocumentVersion> {
        self.action(Method::POST, "/document-version", Some(body))
            .await
    }

    /// `POST /document/{id}/links`: attaches a document to a deliverable.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, doc: uuid::Uuid, d: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.link_document(doc, d).await?;
    /// # Ok(()) }
    /// ```
    pub async fn link_document(&self, document: Uuid, deliverable: Uuid) -> Result<Document> {
        self.action(
            Method::POST,
            &format!("/document/{document}/links"),
            Some(&LinkRequest {
                deliverable_id: deliverable,
            }),
        )
        .await
    }

    /// `DELETE /document/{id}/links/{deliverableId}`: detaches it.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, doc: uuid::Uuid, d: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.unlink_document(doc, d).await?;
    /// # Ok(()) }
    /// ```
    pub async fn unlink_document(&self, document: Uuid, deliverable: Uuid) -> Result<Document> {
        self.action(
            Method::DELETE,
            &format!("/document/{document}/links/{deliverable}"),
            NONE,
        )
        .await
    }

    /// `POST /document/{id}/copy-mode`.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, doc: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.set_document_copy_mode(doc, prodops_core::document::CopyMode::Reference).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_document_copy_mode(&self, document: Uuid, mode: CopyMode) -> Result<Document> {
        self.action(
            Method::POST,
            &format!("/document/{document}/copy-mode"),
            Some(&CopyModeRequest { copy_mode: mode }),
        )
        .await
    }

    /// `POST /document/counts-by-deliverable`: unarchived documents per deliverable (ids that
    /// are not deliverables of the organization are left out).
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, d: uuid::Uuid) -> prodops_client::Result<()> {
    /// let counts = c.document_counts_by_deliverable(&[d]).await?;
    /// # Ok(()) }
    /// ```
    pub async fn document_counts_by_deliverable(&self, ids: &[Uuid]) -> Result<Vec<GroupCount>> {
        let answer: Values<GroupCount> = self
            .action(
                Method::POST,
                "/document/counts-by-deliverable",
                Some(&CountsByDeliverable {
                    deliverable_ids: ids.to_vec(),
                }),
            )
            .await?;
        Ok(answer.values)
    }

    // ---- QC templates (spec 4.10) ----

    /// `POST /qc-template/versions`: publishes a version (a new template without
    /// `qcTemplateId`).
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, body: prodops_core::qc::QcTemplateVersionCreate) -> prodops_client::Result<()> {
    /// let v = c.publish_qc_template_version(&body).await?;
    /// # Ok(()) }
    /// ```
    pub async fn publish_qc_template_version(
        &self,
        body: &QcTemplateVersionCreate,
    ) -> Result<QcTemplateVersion> {
        self.action(Method::POST, "/qc-template/versions", Some(body))
            .await
    }

    // ---- organization members (spec 4.12) ----

    /// `POST /organization-member`: invites (and creates the account if needed); the
    /// invitation waits in the outbox.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, body: prodops_core::organization::InviteRequest) -> prodops_client::Result<()> {
    /// let member = c.invite_member(&body).await?;
    /// # Ok(()) }
    /// ```
    pub async fn invite_member(&self, body: &InviteRequest) -> Result<OrganizationMember> {
        self.action(Method::POST, "/organization-member", Some(body))
            .await
    }

    /// `POST /organization-member/accept-invitation` `{token}`: the token is the credential
    /// (any client works, with or without a key).
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client) -> prodops_client::Result<()> {
    /// let member = c.accept_invitation("inv_...").await?;
    /// # Ok(()) }
    /// ```
    pub async fn accept_invitation(&self, token: &str) -> Result<OrganizationMember> {
        self.action(
            Method::POST,
            "/organization-member/accept-invitation",
            Some(&AcceptInvitation {
                token: token.to_string(),
            }),
        )
        .await
    }

    /// `POST /organization-member/{id}/resend-invitation` (204): a new token, earlier ones
    /// revoked.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.resend_invitation(id).await?;
    /// # Ok(()) }
    /// ```
    pub async fn resend_invitation(&self, member: Uuid) -> Result<()> {
        self.action(
            Method::POST,
            &format!("/organization-member/{member}/resend-invitation"),
            NONE,
        )
        .await
    }

    /// `POST /organization-member/{id}/deactivate` (204).
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.deactivate_member(id).await?;
    /// # Ok(()) }
    /// ```
    pub async fn deactivate_member(&self, member: Uuid) -> Result<()> {
        self.action(
            Method::POST,
            &format!("/organization-member/{member}/deactivate"),
            NONE,
        )
        .await
    }

    /// `POST /organization-member/{id}/reactivate` (204).
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.reactivate_member(id).await?;
    /// # Ok(()) }
    /// ```
    pub async fn reactivate_member(&self, member: Uuid) -> Result<()> {
        self.action(
            Method::POST,
            &format!("/organization-member/{member}/reactivate"),
            NONE,
        )
        .await
    }

    /// `GET /outbox?kind=&recipient=` (admin keys): the organization's outgoing messages
    /// (invitations), oldest first.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client) -> prodops_client::Result<()> {
    /// let mail = c.outbox(Some("invitation"), Some("ann@example.com")).await?;
    /// # Ok(()) }
    /// ```
    pub async fn outbox(&self, kind: Option<&str>, recipient: Option<&str>) -> Result<Page<Value>> {
        let mut q = Vec::new();
        if let Some(k) = kind {
            q.push(format!("kind={}", encode(k)));
        }
        if let Some(r) = recipient {
            q.push(format!("recipient={}", encode(r)));
        }
        self.action(
            Method::GET,
            &with_query("/outbox".into(), q.join("&")),
            NONE,
        )
        .await
    }

    // ---- notifications (spec 4.13) ----

    /// `POST /notification/read-channel-comments` (204).
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, ch: uuid::Uuid) -> prodops_client::Result<()> {
    /// use prodops_core::notification::ReadChannelComments;
    /// c.read_channel_comments(&ReadChannelComments { channel_id: ch, app_user_id: None }).await?;
    /// # Ok(()) }
    /// ```
    pub async fn read_channel_comments(&self, body: &ReadChannelComments) -> Result<()> {
        self.action(
            Method::POST,
            "/notification/read-channel-comments",
            Some(body),
        )
        .await
    }

    /// `POST /notification/read-deliverable-documents` (204).
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, d: uuid::Uuid) -> prodops_client::Result<()> {
    /// use prodops_core::notification::ReadDeliverableDocuments;
    /// c.read_deliverable_documents(&ReadDeliverableDocuments { deliverable_id: d, app_user_id: None }).await?;
    /// # Ok(()) }
    /// ```
    pub async fn read_deliverable_documents(&self, body: &ReadDeliverableDocuments) -> Result<()> {
        self.action(
            Method::POST,
            "/notification/read-deliverable-documents",
            Some(body),
        )
        .await
    }
}
