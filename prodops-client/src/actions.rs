//! The named action methods (spec 4.2 to 4.13). Every action endpoint is declared once, in
//! `prodops_core::api` (its method, path template, query, request and answer types); each
//! method here is one call of [`Client::call`] with that declaration's type
//! (`self.call::<api::production::Produce>(...)`), so no path is written here and the client
//! cannot disagree with the server on a path, a field or an answer's shape.
//!
//! Answers the server wraps in `{"value": ...}` (the production and BOM actions) are unwrapped:
//! the methods return the inner value. Answers whose shape has no core type (groups, crew time,
//! itinerary, cargo plan, outbox) are `serde_json::Value`. The request types that live with
//! the declarations are re-exported here under their former names ([`PostInventory`],
//! [`StockParams`], [`ValueAnswer`]).

use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::{Client, Error, GroupCount, Page, Result};
use prodops_core::api::event::EventQuery;
use prodops_core::api::webhook::DeliveryQuery;
use prodops_core::api::{
    self, FileBody, PageQuery, deliverable::CrewTimeQuery, deliverable::GroupsRequest,
    deliverable::HierarchyQuery, deliverable::ReorderRequest, deliverable::TreesQuery,
    member::OutboxQuery,
};
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
use prodops_core::event::{Event, EventPage};
use prodops_core::inventory::{InventoryTransaction, Stock};
use prodops_core::notification::{ReadChannelComments, ReadDeliverableDocuments};
use prodops_core::organization::{AcceptInvitation, InviteRequest, OrganizationMember};
use prodops_core::production_actions::{
    AdjustActualRequest, AdjustActualResult, ConsumeRequest, ConsumeResult, OrderEntry,
    OrderStatus, ProduceRequest, ProduceResult,
};
use prodops_core::progress::{ProgressAction, ProgressResult};
use prodops_core::qc::{QcTemplateVersion, QcTemplateVersionCreate};
use prodops_core::schedule::{ScheduleAction, ScheduleBatchItem};
use prodops_core::stock_count::{CountRequest, CountResult};
use prodops_core::template::{ApplyTemplateRequest, ApplyTemplateResult};
use prodops_core::webhook::{
    RedeliverRequest, RedeliverResult, WebhookDelivery, WebhookTestResult,
};
use prodops_core::work_session::{SaveRequest, StopRequest};
use prodops_core::worker::Worker;

/// `{ "value": ... }`, how the production and BOM actions answer (spec 4.4, 4.5); declared in
/// `prodops_core::api`.
///
/// ```
/// let v: prodops_client::actions::ValueAnswer = serde_json::from_str(r#"{"value":{"posted":2}}"#).unwrap();
/// assert_eq!(v.value["posted"], 2);
/// ```
pub use prodops_core::api::ValueAnswer;

/// The body of `POST /inventory-transaction` (spec 4.6), declared with the action in
/// `prodops_core::api::inventory`.
///
/// ```
/// use prodops_core::inventory::TransactionType;
/// let r = prodops_client::actions::PostInventory::new(uuid::Uuid::nil(), TransactionType::Return, 1.0);
/// assert!(r.from_location_id.is_none());
/// assert_eq!(serde_json::to_value(&r).unwrap()["type"], "return");
/// ```
pub use prodops_core::api::inventory::PostInventory;

/// The filters of `GET /stock`: `prodops_core::api::inventory::StockQuery` under its former
/// client name (its query pairs: `prodops_core::api::QueryArgs::pairs`).
///
/// ```
/// use prodops_core::api::QueryArgs;
/// let p = prodops_client::actions::StockParams { item_id: Some(uuid::Uuid::nil()), ..Default::default() };
/// assert_eq!(p.pairs()[0], ("itemId".to_string(), uuid::Uuid::nil().to_string()));
/// ```
pub use prodops_core::api::inventory::StockQuery as StockParams;

pub use prodops_core::api::inventory::StockQuery;

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

/// Reads a free-form JSON answer as the method's type.
fn typed<T: DeserializeOwned>(value: Value) -> Result<T> {
    crate::compat::from_value_keeping(&value)
        .map(|(t, _)| t)
        .map_err(|e| Error::Decode(e.to_string()))
}

impl Client {
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
        self.workers()
            .update(id, &json!({"isArchived": true}))
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
        self.workers()
            .update(id, &json!({"isArchived": false}))
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
        self.call::<api::deliverable::Hierarchy>(id, &HierarchyQuery::default(), &())
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
        use api::{Endpoint, QueryArgs};
        let query = HierarchyQuery {
            select: (!select.is_empty()).then(|| select.join(",")),
        };
        let path = crate::action_path(
            &api::deliverable::Hierarchy::DESC,
            &[id.to_string()],
            &query.pairs(),
        );
        self.values_stream(&path).await
    }

    /// `GET /deliverable/trees`: every tree whose root matches the filters and search of
    /// `params` (roots not archived unless an `isArchived` filter is given; its `sort` orders
    /// the roots, its paging is not sent), each root followed by its subtree, parents before
    /// children, read as it arrives: each record's JSON text in turn, only `id` and the
    /// `select`ed fields (all fields when `select` is empty). The server reads it all in one
    /// snapshot; [`ValuesStream::feed_cursor`](crate::ValuesStream::feed_cursor) names that
    /// snapshot's feed cursor, after which the events are exactly the changes the answer does
    /// not hold (docs/events.md, "Reads that name their cursor").
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client) -> prodops_client::Result<()> {
    /// let orders = prodops_client::ListParams::new().filter("type", "order");
    /// let mut nodes = c.deliverable_trees_stream(&orders, &["name", "parentId"]).await?;
    /// let cursor = nodes.feed_cursor().map(str::to_string);
    /// while let Some(text) = nodes.next_value().await? {
    ///     let node: serde_json::Value = serde_json::from_slice(&text).unwrap();
    /// }
    /// // then: the events after `cursor` (`c.event_stream`)
    /// # Ok(()) }
    /// ```
    pub async fn deliverable_trees_stream(
        &self,
        params: &crate::ListParams,
        select: &[&str],
    ) -> Result<crate::ValuesStream> {
        use api::{Endpoint, QueryArgs};
        let query = TreesQuery {
            filters: params.filters.clone(),
            search: params.search.clone(),
            sort: params.sort.clone(),
            select: (!select.is_empty()).then(|| select.join(",")),
        };
        let path = crate::action_path(&api::deliverable::Trees::DESC, &[], &query.pairs());
        self.values_stream(&path).await
    }

    /// `GET /deliverable/{id}/explain`: why the deliverable waits, is late or at risk, cannot be
    /// completed, or is short of materials, each reason as data and a sentence.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// for reason in c.deliverable_explain(id).await?.reasons {
    ///     println!("{}", reason.sentence);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn deliverable_explain(&self, id: Uuid) -> Result<crate::explain::Explanation> {
        self.call::<api::deliverable::Explain>(id, &(), &()).await
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
        let filter = match filter {
            None | Some(Value::Null) => None,
            Some(Value::Object(map)) => Some(map.clone()),
            Some(other) => {
                return Err(Error::Config(format!(
                    "the groups filter must be a JSON object, not {other}"
                )));
            }
        };
        let body = GroupsRequest {
            group_by: group_by.to_string(),
            filter,
        };
        self.call::<api::deliverable::Groups>((), &(), &body).await
    }

    /// `POST /deliverable/reorder`: the listed nodes take this order among their siblings.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, root: uuid::Uuid, a: uuid::Uuid, b: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.deliverable_reorder(root, &[b, a]).await?;
    /// # Ok(()) }
    /// ```
    pub async fn deliverable_reorder(&self, root_parent_id: Uuid, ordered: &[Uuid]) -> Result<()> {
        let body = ReorderRequest {
            root_parent_id,
            ordered_deliverable_ids: ordered.to_vec(),
        };
        self.call::<api::deliverable::Reorder>((), &(), &body).await
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
        let query = CrewTimeQuery {
            deliverable_id: ids.to_vec(),
        };
        self.call::<api::deliverable::CrewTime>((), &query, &())
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
        self.call::<api::deliverable::Progress>((root, id), &(), action)
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
        self.call::<api::deliverable::Schedule>((root, id), &(), action)
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
        self.call::<api::deliverable::ScheduleBatch>((), &(), items)
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
        self.call::<api::deliverable::SaveWorkSessions>((), &(), body)
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
        self.call::<api::deliverable::StopWorkSessions>((), &(), body)
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
        self.call::<api::production::Produce>((), &(), body).await
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
        self.call::<api::production::Consume>((), &(), body).await
    }

    /// `POST /deliverable/{id}/apply-template`: a route (onto an order, phase or component) or
    /// template-phase (onto a phase) copied under `target`, with its lines and declarations.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, phase: uuid::Uuid, route: uuid::Uuid) -> prodops_client::Result<()> {
    /// use prodops_core::template::ApplyTemplateRequest;
    /// let applied = c.apply_template(phase, &ApplyTemplateRequest { template_id: route }).await?;
    /// # Ok(()) }
    /// ```
    pub async fn apply_template(
        &self,
        target: Uuid,
        body: &ApplyTemplateRequest,
    ) -> Result<ApplyTemplateResult> {
        self.call::<api::production::ApplyTemplate>(target, &(), body)
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
        self.call::<api::production::AdjustActual>((), &(), body)
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
        self.call::<api::production::OrderStatus>(order, &(), &())
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
        let query = PageQuery { page, page_size };
        self.call::<api::production::OrderEntries>(order, &query, &())
            .await
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
        self.call::<api::bom::Prepopulate>(order, &(), body).await
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
        self.call::<api::bom::AllocateOrder>(order, &(), body).await
    }

    /// `POST /bom-line/project/{id}/allocate` (no body).
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, project: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.bom_allocate_project(project).await?;
    /// # Ok(()) }
    /// ```
    pub async fn bom_allocate_project(&self, project: Uuid) -> Result<AllocateResult> {
        self.call::<api::bom::AllocateProject>(project, &(), &api::NoFields {})
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
        self.call::<api::bom::DemandRollup>((), &(), &()).await
    }

    /// `GET /bom-line/project/{id}/materials-rollup`.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, project: uuid::Uuid) -> prodops_client::Result<()> {
    /// let m = c.bom_materials_rollup(project).await?;
    /// # Ok(()) }
    /// ```
    pub async fn bom_materials_rollup(&self, project: Uuid) -> Result<MaterialsRollup> {
        self.call::<api::bom::MaterialsRollup>(project, &(), &())
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
        self.call::<api::inventory::PostTransaction>((), &(), body)
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
        self.call::<api::inventory::StockList>((), params, &())
            .await
    }

    /// `POST /inventory/count`: counted quantities per item and location; one `adjust` row per
    /// difference from the ledger, in one transaction (`dry_run`: the differences only).
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, item: uuid::Uuid, at: uuid::Uuid) -> prodops_client::Result<()> {
    /// use prodops_core::stock_count::{CountLine, CountRequest};
    /// let line = CountLine { item_id: item, location_id: at, quantity: 12.0, unit_measure_id: None, lot_id: None };
    /// let req = CountRequest { lines: vec![line], reason: None, dry_run: true };
    /// let answer = c.count_stock(&req).await?;
    /// println!("{} differences", answer.differences);
    /// # Ok(()) }
    /// ```
    pub async fn count_stock(&self, body: &CountRequest) -> Result<CountResult> {
        self.call::<api::inventory::Count>((), &(), body).await
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
        self.call::<api::delivery::CreateOutbound>((), &(), body)
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
        self.call::<api::delivery::PatchOutbound>(id, &(), body)
            .await
    }

    /// `POST /delivery/{id}/receive`: receipts for an inbound delivery (every outstanding line
    /// when `lines` is `None`). Receipts accumulate; the delivery is `received` once everything
    /// is in.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.receive_delivery(id, &Default::default()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn receive_delivery(&self, id: Uuid, body: &ReceiveRequest) -> Result<Delivery> {
        self.call::<api::delivery::Receive>(id, &(), body).await
    }

    /// `POST /delivery/{id}/close-short`: ends receiving with what is in (`received`); each
    /// manifest line's outstanding quantity is kept as its `quantityShort`.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// use prodops_core::delivery::LifecycleRequest;
    /// c.close_delivery_short(id, &LifecycleRequest { reason: Some("supplier out of stock".into()) }).await?;
    /// # Ok(()) }
    /// ```
    pub async fn close_delivery_short(
        &self,
        id: Uuid,
        body: &LifecycleRequest,
    ) -> Result<Delivery> {
        self.call::<api::delivery::CloseShort>(id, &(), body).await
    }

    /// `POST /delivery/{id}/start` (optional `reason`).
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.start_delivery(id, &Default::default()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn start_delivery(&self, id: Uuid, body: &LifecycleRequest) -> Result<Delivery> {
        self.call::<api::delivery::Start>(id, &(), body).await
    }

    /// `POST /delivery/{id}/complete`: delivered; ships every manifest line.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.complete_delivery(id, &Default::default()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn complete_delivery(&self, id: Uuid, body: &LifecycleRequest) -> Result<Delivery> {
        self.call::<api::delivery::Complete>(id, &(), body).await
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
        self.call::<api::delivery::Cancel>(id, &(), body).await
    }

    /// `POST /delivery/{id}/archive` (received, delivered or cancelled deliveries).
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.archive_delivery(id).await?;
    /// # Ok(()) }
    /// ```
    pub async fn archive_delivery(&self, id: Uuid) -> Result<Delivery> {
        self.call::<api::delivery::Archive>(id, &(), &()).await
    }

    /// `POST /delivery/{id}/restore`.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.restore_delivery(id).await?;
    /// # Ok(()) }
    /// ```
    pub async fn restore_delivery(&self, id: Uuid) -> Result<Delivery> {
        self.call::<api::delivery::Restore>(id, &(), &()).await
    }

    /// `GET /delivery/{id}/itinerary`: `{deliveryId, stops, legs}`.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// let it = c.delivery_itinerary(id).await?;
    /// # Ok(()) }
    /// ```
    pub async fn delivery_itinerary(&self, id: Uuid) -> Result<Value> {
        self.call::<api::delivery::Itinerary>(id, &(), &()).await
    }

    /// `GET /delivery/{id}/cargo-plan`: `{deliveryId, cargoCount, spans}`.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// let plan = c.delivery_cargo_plan(id).await?;
    /// # Ok(()) }
    /// ```
    pub async fn delivery_cargo_plan(&self, id: Uuid) -> Result<Value> {
        self.call::<api::delivery::CargoPlan>(id, &(), &()).await
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
        let file = FileBody {
            bytes: bytes.to_vec(),
            content_type: content_type.to_string(),
        };
        self.call::<api::document::Upload>((), &(), &file).await
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
        typed(
            self.call::<api::document::HubBulkUpload>((), &(), body)
                .await?,
        )
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
        self.call::<api::document::AddVersion>(document, &(), body)
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
        self.call::<api::document::CreateVersion>((), &(), body)
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
        let body = LinkRequest {
            deliverable_id: deliverable,
        };
        self.call::<api::document::Link>(document, &(), &body).await
    }

    /// `DELETE /document/{id}/links/{deliverableId}`: detaches it.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, doc: uuid::Uuid, d: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.unlink_document(doc, d).await?;
    /// # Ok(()) }
    /// ```
    pub async fn unlink_document(&self, document: Uuid, deliverable: Uuid) -> Result<Document> {
        self.call::<api::document::Unlink>((document, deliverable), &(), &())
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
        let body = CopyModeRequest { copy_mode: mode };
        self.call::<api::document::SetCopyMode>(document, &(), &body)
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
        let body = CountsByDeliverable {
            deliverable_ids: ids.to_vec(),
        };
        let answer: Values<GroupCount> = typed(
            self.call::<api::document::CountsByDeliverable>((), &(), &body)
                .await?,
        )?;
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
        self.call::<api::qc::PublishVersion>((), &(), body).await
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
        self.call::<api::member::Invite>((), &(), body).await
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
        let body = AcceptInvitation {
            token: token.to_string(),
        };
        self.call::<api::member::AcceptInvitation>((), &(), &body)
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
        self.call::<api::member::ResendInvitation>(member, &(), &())
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
        self.call::<api::member::Deactivate>(member, &(), &()).await
    }

    /// `POST /organization-member/{id}/reactivate` (204).
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.reactivate_member(id).await?;
    /// # Ok(()) }
    /// ```
    pub async fn reactivate_member(&self, member: Uuid) -> Result<()> {
        self.call::<api::member::Reactivate>(member, &(), &()).await
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
        let query = OutboxQuery {
            kind: kind.map(str::to_string),
            recipient: recipient.map(str::to_string),
        };
        self.call::<api::member::Outbox>((), &query, &()).await
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
        self.call::<api::notification::ReadChannelComments>((), &(), body)
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
        self.call::<api::notification::ReadDeliverableDocuments>((), &(), body)
            .await
    }

    // ---- the change feed (docs/events.md) ----

    /// `GET /event`: one page of the change feed, the events after `query.after` in commit
    /// order (with `wait`, the server holds an empty answer up to that many seconds).
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client) -> prodops_client::Result<()> {
    /// use prodops_core::api::event::EventQuery;
    /// let page = c.events(&EventQuery { event_type: Some("worker.archived".into()), ..Default::default() }).await?;
    /// # Ok(()) }
    /// ```
    pub async fn events(&self, query: &EventQuery) -> Result<EventPage> {
        self.call::<api::event::List>((), query, &()).await
    }

    /// The change feed as a stream of events, resuming after `query.after`: page after page
    /// until the feed is read; with `follow`, it never ends and waits on the server for new
    /// events (long polling, `wait` of 30 seconds unless `query.wait` says otherwise). Each
    /// event carries its `cursor`: keep the last one to resume from it later. A failed request
    /// ends the stream with its error.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client) -> prodops_client::Result<()> {
    /// use futures::StreamExt;
    /// use prodops_core::api::event::EventQuery;
    /// let mut feed = c.event_stream(EventQuery::default(), true);
    /// while let Some(event) = feed.next().await {
    ///     let event = event?;
    ///     println!("{} {}", event.cursor, event.event_type);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn event_stream(
        &self,
        mut query: EventQuery,
        follow: bool,
    ) -> futures::stream::BoxStream<'static, Result<Event>> {
        if follow && query.wait.is_none() {
            query.wait = Some(api::event::MAX_WAIT_SECS);
        }
        let client = self.clone();
        let state = (query, std::collections::VecDeque::<Event>::new(), false);
        let stream = futures::stream::unfold(state, move |(mut query, mut buffered, done)| {
            let client = client.clone();
            async move {
                loop {
                    if let Some(event) = buffered.pop_front() {
                        return Some((Ok(event), (query, buffered, done)));
                    }
                    if done {
                        return None;
                    }
                    match client.events(&query).await {
                        Ok(page) => {
                            let empty = page.values.is_empty();
                            query.after = Some(page.next_cursor);
                            buffered.extend(page.values);
                            if empty && !follow {
                                return None;
                            }
                        }
                        Err(e) => return Some((Err(e), (query, buffered, true))),
                    }
                }
            }
        });
        futures::StreamExt::boxed(stream)
    }

    // ---- webhooks (docs/events.md, "Webhooks"); create, list, update and delete them as the
    // standard resource `webhook` (`Resource<Webhook>`) ----

    /// `POST /webhook/{id}/redeliver`: queues the webhook's dead deliveries again, or with
    /// `event_id` that event's delivery (whatever its status). Admin keys only.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// let requeued = c.webhook_redeliver(id, None).await?.requeued;
    /// # Ok(()) }
    /// ```
    pub async fn webhook_redeliver(
        &self,
        id: Uuid,
        event_id: Option<Uuid>,
    ) -> Result<RedeliverResult> {
        self.call::<api::webhook::Redeliver>(id, &(), &RedeliverRequest { event_id })
            .await
    }

    /// `POST /webhook/{id}/test`: sends a signed `webhook.ping` event now and answers how the
    /// receiver took it. Admin keys only.
    pub async fn webhook_test(&self, id: Uuid) -> Result<WebhookTestResult> {
        self.call::<api::webhook::Test>(id, &(), &()).await
    }

    /// `GET /webhook/{id}/deliveries`: the webhook's delivery log, newest first. Admin keys only.
    pub async fn webhook_deliveries(
        &self,
        id: Uuid,
        query: &DeliveryQuery,
    ) -> Result<Page<WebhookDelivery>> {
        self.call::<api::webhook::Deliveries>(id, query, &()).await
    }
}
