//! Typed action endpoints (spec 4.2 to 4.13): each is one line over [`Client::action`].
//!
//! Request types hold the fields the specification names; the answers whose shape the
//! specification leaves open are `serde_json::Value`. Actions whose server endpoints are not in
//! this build answer 404 `NOT_FOUND` until they land; the methods need no change when they do.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::{Client, Method, Result};
use prodops_core::worker::Worker;

/// `{ "value": ... }`, the answer of the production and BOM actions (spec 4.4, 4.5).
///
/// ```
/// let v: prodops_client::actions::ValueAnswer = serde_json::from_str(r#"{"value":{"posted":2}}"#).unwrap();
/// assert_eq!(v.value["posted"], 2);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValueAnswer {
    /// What the action did.
    pub value: Value,
}

/// The body of `POST /production/produce` (spec 4.4).
///
/// ```
/// let r = prodops_client::actions::Produce { quantity_produced: Some(2.0), ..Default::default() };
/// assert_eq!(serde_json::to_value(&r).unwrap()["quantityProduced"], 2.0);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Produce {
    /// The order (or node) produced on.
    pub deliverable_id: Uuid,
    /// Run multiplier (the server's default is 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quantity_produced: Option<f64>,
    /// Where the output is put.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_location_id: Option<Uuid>,
    /// Explicit outputs (non-empty when given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outputs: Option<Vec<Value>>,
    /// The item of an ad-hoc declaration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_item_id: Option<Uuid>,
}

/// The body of `POST /production/consume` (spec 4.4).
///
/// ```
/// let r = prodops_client::actions::Consume::default();
/// assert!(serde_json::to_value(&r).unwrap().get("lines").is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Consume {
    /// The node consuming.
    pub deliverable_id: Uuid,
    /// Per-item quantity overrides (non-empty when given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<Vec<Value>>,
    /// Where the stock is drawn from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_location_id: Option<Uuid>,
}

/// The body of `POST /production/adjust-actual` (spec 4.4).
///
/// ```
/// let r = prodops_client::actions::AdjustActual { kind: "produce".into(), delta: -1.0, ..Default::default() };
/// assert_eq!(serde_json::to_value(&r).unwrap()["kind"], "produce");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdjustActual {
    /// The stamped deliverable.
    pub stamp_deliverable_id: Uuid,
    /// `consume` or `produce`.
    pub kind: String,
    /// The item adjusted.
    pub item_id: Uuid,
    /// Nonzero signed change.
    pub delta: f64,
}

/// The body of `POST /inventory-transaction` (spec 4.6): adjust, transfer or return.
///
/// ```
/// let r = prodops_client::actions::PostInventory { r#type: "adjust".into(), quantity: 5.0, ..Default::default() };
/// assert_eq!(serde_json::to_value(&r).unwrap()["type"], "adjust");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PostInventory {
    /// The item.
    pub item_id: Uuid,
    /// `adjust`, `transfer` or `return`.
    pub r#type: String,
    /// How much.
    pub quantity: f64,
    /// Source location.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_location_id: Option<Uuid>,
    /// Destination location.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_location_id: Option<Uuid>,
    /// Optional source description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<Value>,
}

/// The body of `POST /deliverable/work-sessions/save` (spec 4.3).
///
/// ```
/// let r = prodops_client::actions::SaveWorkSessions::default();
/// assert!(serde_json::to_value(&r).unwrap()["assignments"].is_object());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SaveWorkSessions {
    /// Worker id → the deliverable ids the worker works on (at least one each).
    pub assignments: std::collections::BTreeMap<Uuid, Vec<Uuid>>,
    /// The shop.
    pub shop_id: Uuid,
    /// When the sessions start (default now).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_date: Option<chrono::DateTime<chrono::Utc>>,
    /// Stop the whole batch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub should_stop_entire_batch: Option<bool>,
}

/// The body of `POST /deliverable/work-sessions/stop` (spec 4.3): at least one list nonempty.
///
/// ```
/// let r = prodops_client::actions::StopWorkSessions::default();
/// assert!(serde_json::to_value(&r).unwrap().get("endDate").is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StopWorkSessions {
    /// Stop sessions on these deliverables.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub deliverable_ids: Vec<Uuid>,
    /// Stop sessions of these workers.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub worker_ids: Vec<Uuid>,
    /// When they end (default now).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_date: Option<chrono::DateTime<chrono::Utc>>,
}

/// A stock row of `GET /stock` (decisions.md section 5).
///
/// ```
/// let s: prodops_client::actions::StockRow = serde_json::from_str(
///   r#"{"itemId":"00000000-0000-0000-0000-000000000001","locationId":"00000000-0000-0000-0000-000000000002","shopId":null,"onHand":3,"reserved":0}"#).unwrap();
/// assert_eq!(s.on_hand, 3.0);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StockRow {
    /// The item.
    pub item_id: Uuid,
    /// The location.
    pub location_id: Uuid,
    /// The location's shop.
    #[serde(default)]
    pub shop_id: Option<Uuid>,
    /// Stock on hand.
    pub on_hand: f64,
    /// Reserved by allocations.
    #[serde(default)]
    pub reserved: f64,
}

fn q(id: Uuid) -> String {
    id.to_string()
}

const NONE: Option<&()> = None;

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
        self.action(
            Method::PATCH,
            &format!("/worker/{id}"),
            Some(&serde_json::json!({"isArchived": true})),
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
            Some(&serde_json::json!({"isArchived": false})),
        )
        .await
    }

    // ---- production (spec 4.4) ----

    /// `POST /production/produce`.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, order: uuid::Uuid, loc: uuid::Uuid) -> prodops_client::Result<()> {
    /// use prodops_client::actions::Produce;
    /// let out = c.produce(&Produce { deliverable_id: order, quantity_produced: Some(1.0),
    ///     output_location_id: Some(loc), ..Default::default() }).await?;
    /// # Ok(()) }
    /// ```
    pub async fn produce(&self, body: &Produce) -> Result<ValueAnswer> {
        self.action(Method::POST, "/production/produce", Some(body))
            .await
    }

    /// `POST /production/consume`.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, node: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.consume(&prodops_client::actions::Consume { deliverable_id: node, ..Default::default() }).await?;
    /// # Ok(()) }
    /// ```
    pub async fn consume(&self, body: &Consume) -> Result<ValueAnswer> {
        self.action(Method::POST, "/production/consume", Some(body))
            .await
    }

    /// `POST /production/adjust-actual`.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, body: prodops_client::actions::AdjustActual) -> prodops_client::Result<()> {
    /// c.adjust_actual(&body).await?;
    /// # Ok(()) }
    /// ```
    pub async fn adjust_actual(&self, body: &AdjustActual) -> Result<ValueAnswer> {
        self.action(Method::POST, "/production/adjust-actual", Some(body))
            .await
    }

    /// `GET /production/order/{id}/status`.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, order: uuid::Uuid) -> prodops_client::Result<()> {
    /// let status = c.production_status(order).await?;
    /// # Ok(()) }
    /// ```
    pub async fn production_status(&self, order: Uuid) -> Result<Value> {
        self.action(
            Method::GET,
            &format!("/production/order/{}/status", q(order)),
            NONE,
        )
        .await
    }

    /// `GET /production/order/{id}/entries` (the production trace).
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, order: uuid::Uuid) -> prodops_client::Result<()> {
    /// let entries = c.production_entries(order).await?;
    /// # Ok(()) }
    /// ```
    pub async fn production_entries(&self, order: Uuid) -> Result<Value> {
        self.action(
            Method::GET,
            &format!("/production/order/{}/entries", q(order)),
            NONE,
        )
        .await
    }

    // ---- BOM (spec 4.5) ----

    /// `POST /bom-line/order/{id}/prepopulate` (`{}` or `{"routeDeliverableId": ...}`).
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, order: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.bom_prepopulate(order, None).await?;
    /// # Ok(()) }
    /// ```
    pub async fn bom_prepopulate(&self, order: Uuid, route: Option<Uuid>) -> Result<ValueAnswer> {
        let body = match route {
            Some(r) => serde_json::json!({ "routeDeliverableId": r }),
            None => serde_json::json!({}),
        };
        self.action(
            Method::POST,
            &format!("/bom-line/order/{order}/prepopulate"),
            Some(&body),
        )
        .await
    }

    /// `POST /bom-line/order/{id}/allocate` (all items, or only `item_ids`).
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, order: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.bom_allocate_order(order, &[]).await?;
    /// # Ok(()) }
    /// ```
    pub async fn bom_allocate_order(&self, order: Uuid, item_ids: &[Uuid]) -> Result<ValueAnswer> {
        let body = if item_ids.is_empty() {
            serde_json::json!({})
        } else {
            serde_json::json!({ "itemIds": item_ids })
        };
        self.action(
            Method::POST,
            &format!("/bom-line/order/{order}/allocate"),
            Some(&body),
        )
        .await
    }

    /// `POST /bom-line/project/{id}/allocate`.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, project: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.bom_allocate_project(project).await?;
    /// # Ok(()) }
    /// ```
    pub async fn bom_allocate_project(&self, project: Uuid) -> Result<ValueAnswer> {
        self.action(
            Method::POST,
            &format!("/bom-line/project/{project}/allocate"),
            NONE,
        )
        .await
    }

    /// `GET /bom-line/demand-rollup`.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client) -> prodops_client::Result<()> {
    /// let demand = c.bom_demand_rollup().await?;
    /// # Ok(()) }
    /// ```
    pub async fn bom_demand_rollup(&self) -> Result<ValueAnswer> {
        self.action(Method::GET, "/bom-line/demand-rollup", NONE)
            .await
    }

    /// `GET /bom-line/project/{id}/materials-rollup`.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, project: uuid::Uuid) -> prodops_client::Result<()> {
    /// let m = c.bom_materials_rollup(project).await?;
    /// # Ok(()) }
    /// ```
    pub async fn bom_materials_rollup(&self, project: Uuid) -> Result<ValueAnswer> {
        self.action(
            Method::GET,
            &format!("/bom-line/project/{project}/materials-rollup"),
            NONE,
        )
        .await
    }

    // ---- inventory (spec 4.6, decisions.md section 5) ----

    /// `POST /inventory-transaction` (adjust, transfer, return); answers the posted transaction.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, body: prodops_client::actions::PostInventory) -> prodops_client::Result<()> {
    /// let tx = c.post_inventory(&body).await?;
    /// # Ok(()) }
    /// ```
    pub async fn post_inventory(&self, body: &PostInventory) -> Result<Value> {
        self.action(Method::POST, "/inventory-transaction", Some(body))
            .await
    }

    /// `GET /stock?itemId=&locationId=`: stock on hand.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, item: uuid::Uuid) -> prodops_client::Result<()> {
    /// let rows = c.stock(Some(item), None).await?;
    /// # Ok(()) }
    /// ```
    pub async fn stock(
        &self,
        item: Option<Uuid>,
        location: Option<Uuid>,
    ) -> Result<crate::Page<StockRow>> {
        let mut query = Vec::new();
        if let Some(i) = item {
            query.push(format!("itemId={i}"));
        }
        if let Some(l) = location {
            query.push(format!("locationId={l}"));
        }
        self.action(Method::GET, &format!("/stock?{}", query.join("&")), NONE)
            .await
    }

    // ---- deliverable extras (spec 4.2) and work sessions (4.3) ----

    /// `GET /deliverable/{id}/hierarchy`: the whole subtree.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, root: uuid::Uuid) -> prodops_client::Result<()> {
    /// let tree = c.deliverable_hierarchy(root).await?;
    /// # Ok(()) }
    /// ```
    pub async fn deliverable_hierarchy(&self, id: Uuid) -> Result<crate::Page<Value>> {
        self.action(Method::GET, &format!("/deliverable/{id}/hierarchy"), NONE)
            .await
    }

    /// `POST /deliverable/root/{root}/progress/{id}` with a progress action (`{"type": "complete"}`, ...).
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, root: uuid::Uuid, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.deliverable_progress(root, id, &serde_json::json!({"type": "complete"})).await?;
    /// # Ok(()) }
    /// ```
    pub async fn deliverable_progress(
        &self,
        root: Uuid,
        id: Uuid,
        action: &Value,
    ) -> Result<Value> {
        self.action(
            Method::POST,
            &format!("/deliverable/root/{root}/progress/{id}"),
            Some(action),
        )
        .await
    }

    /// `POST /deliverable/root/{root}/schedule/{id}` with a schedule action (`{"type": "schedule", "newStart": 1700000000}`).
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, root: uuid::Uuid, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.deliverable_schedule(root, id, &serde_json::json!({"type": "reschedule"})).await?;
    /// # Ok(()) }
    /// ```
    pub async fn deliverable_schedule(&self, root: Uuid, id: Uuid, action: &Value) -> Result<()> {
        self.action(
            Method::POST,
            &format!("/deliverable/root/{root}/schedule/{id}"),
            Some(action),
        )
        .await
    }

    /// `POST /deliverable/work-sessions/save`.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, body: prodops_client::actions::SaveWorkSessions) -> prodops_client::Result<()> {
    /// c.save_work_sessions(&body).await?;
    /// # Ok(()) }
    /// ```
    pub async fn save_work_sessions(&self, body: &SaveWorkSessions) -> Result<()> {
        self.action(Method::POST, "/deliverable/work-sessions/save", Some(body))
            .await
    }

    /// `POST /deliverable/work-sessions/stop`.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, w: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.stop_work_sessions(&prodops_client::actions::StopWorkSessions { worker_ids: vec![w], ..Default::default() }).await?;
    /// # Ok(()) }
    /// ```
    pub async fn stop_work_sessions(&self, body: &StopWorkSessions) -> Result<()> {
        self.action(Method::POST, "/deliverable/work-sessions/stop", Some(body))
            .await
    }

    // ---- delivery (spec 4.8) ----

    /// `POST /delivery/{id}/<step>` for `receive`, `start`, `complete`, `cancel`, `archive`,
    /// `restore`, with an optional body.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, id: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.delivery_step(id, "start", None).await?;
    /// # Ok(()) }
    /// ```
    pub async fn delivery_step(&self, id: Uuid, step: &str, body: Option<&Value>) -> Result<Value> {
        self.action(
            Method::POST,
            &format!("/delivery/{id}/{}", crate::encode(step)),
            body,
        )
        .await
    }

    /// `POST /delivery/outbound`: creates an outbound delivery and its paired group.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client) -> prodops_client::Result<()> {
    /// c.create_outbound_delivery(&serde_json::json!({"name": "Truck 1"})).await?;
    /// # Ok(()) }
    /// ```
    pub async fn create_outbound_delivery(&self, body: &Value) -> Result<Value> {
        self.action(Method::POST, "/delivery/outbound", Some(body))
            .await
    }

    // ---- notifications (spec 4.13) ----

    /// `POST /notification/read-channel-comments`.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, ch: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.read_channel_comments(ch).await?;
    /// # Ok(()) }
    /// ```
    pub async fn read_channel_comments(&self, channel: Uuid) -> Result<()> {
        self.action(
            Method::POST,
            "/notification/read-channel-comments",
            Some(&serde_json::json!({ "channelId": channel })),
        )
        .await
    }

    /// `POST /notification/read-deliverable-documents`.
    ///
    /// ```no_run
    /// # async fn run(c: prodops_client::Client, d: uuid::Uuid) -> prodops_client::Result<()> {
    /// c.read_deliverable_documents(d).await?;
    /// # Ok(()) }
    /// ```
    pub async fn read_deliverable_documents(&self, deliverable: Uuid) -> Result<Value> {
        self.action(
            Method::POST,
            "/notification/read-deliverable-documents",
            Some(&serde_json::json!({ "deliverableId": deliverable })),
        )
        .await
    }
}
