//! Reads of the work tree: hierarchy, groups, crew time.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Extension, Path, RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use prodops_core::tree::hierarchy_order;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::tree::{TABLE, TREE, path_upper, subtree_text, tree_row};
use super::{buffers, resource};
use crate::app::{AppState, JsonBody};
use crate::context::{Action, Auth};
use crate::engine::{filter_conds, parse_body, parse_id};
use crate::error::{ApiError, ApiResult};
use crate::store::SqlValue;
use crate::store::sql::FieldPath;

/// `GET /deliverable/{id}/hierarchy`: the node and its whole subtree (archived nodes
/// included), parents before children, siblings in their order. The stored records are sent
/// as they are, without parsing them.
pub async fn hierarchy(
    State(state): State<Arc<AppState>>,
    Extension(auth): Extension<Auth>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    auth.require("Deliverable", Action::Read)?;
    let id = parse_id(&id)?;
    let org = auth.org;
    let body = state
        .store
        .read(move |tx| {
            let row = tree_row(tx, org, id)?.ok_or_else(ApiError::not_found)?;
            let sub = subtree_text(tx, org, &row, buffers::take(0))?;
            let entries: Vec<(Uuid, Option<Uuid>, i64)> =
                sub.nodes.iter().map(|r| (r.0, r.1, r.2)).collect();
            let order = hierarchy_order(id, &entries);
            let mut body = buffers::take(sub.text.len() + sub.nodes.len() + 64);
            body.extend_from_slice(b"{\"values\":[");
            for (n, i) in order.iter().enumerate() {
                if n > 0 {
                    body.push(b',');
                }
                body.extend_from_slice(&sub.text[sub.nodes[*i].3.clone()]);
            }
            body.extend_from_slice(b"],\"totalCount\":");
            body.extend_from_slice(order.len().to_string().as_bytes());
            body.push(b'}');
            buffers::give(sub.text);
            Ok::<_, ApiError>(body)
        })
        .await?;
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        buffers::body(body),
    )
        .into_response())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GroupsRequest {
    group_by: String,
    #[serde(default)]
    filter: Option<Map<String, Value>>,
}

/// The field each grouping reads (arrays put a record in every group they list).
fn group_field(group_by: &str) -> Option<&'static str> {
    match group_by {
        "project" => Some("computed.projectId"),
        "stage" => Some("computed.currentStageIds"),
        "people" => Some("computed.workerIds"),
        "root" => Some("rootParentId"),
        "tags" => Some("computed.tags"),
        _ => None,
    }
}

/// `POST /deliverable/groups` `{groupBy, filter?}`: `{"groupBy", "values": [{"groupId",
/// "count", "deliverableIds"}]}`, largest group first; records with nothing to group by fall in
/// the `null` group. For `root`, a root is in its own group.
pub async fn groups(
    State(state): State<Arc<AppState>>,
    Extension(auth): Extension<Auth>,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    auth.require("Deliverable", Action::Read)?;
    let req: GroupsRequest = parse_body(body)?;
    let Some(field) = group_field(&req.group_by) else {
        return Err(ApiError::field(
            "groupBy",
            "must be one of project, stage, people, root, tags",
        ));
    };
    let res = resource("deliverable");
    let conds = filter_conds(res, req.filter.as_ref(), true)?;
    let org = auth.org;
    let group_by = req.group_by.clone();
    let values = state
        .store
        .read(move |tx| {
            let dialect = tx.dialect();
            let path = FieldPath::parse(field).expect("static path");
            let mut params = Vec::new();
            let sql = format!(
                "SELECT id, {} FROM {TABLE}{} ORDER BY created_at, id",
                dialect.json_expr(&path),
                dialect.where_clause(org, &conds, &mut params)
            );
            let rows = tx.query(&sql, &params)?;
            let mut groups: BTreeMap<String, (Value, Vec<String>)> = BTreeMap::new();
            for r in rows {
                let Some(id) = r.first().and_then(SqlValue::as_str).map(str::to_string) else {
                    continue;
                };
                let value: Value = r
                    .get(1)
                    .and_then(SqlValue::as_str)
                    .and_then(|t| serde_json::from_str(t).ok())
                    .unwrap_or(Value::Null);
                let keys: Vec<Value> = match value {
                    Value::Array(a) if !a.is_empty() => a,
                    Value::Array(_) | Value::Null if field == "rootParentId" => vec![json!(id)],
                    Value::Array(_) => vec![Value::Null],
                    v => vec![v],
                };
                for k in keys {
                    groups
                        .entry(k.to_string())
                        .or_insert_with(|| (k.clone(), Vec::new()))
                        .1
                        .push(id.clone());
                }
            }
            let mut values: Vec<(Value, Vec<String>)> = groups.into_values().collect();
            values.sort_by_key(|v| std::cmp::Reverse(v.1.len()));
            Ok::<_, ApiError>(
                values
                    .into_iter()
                    .map(
                        |(g, ids)| json!({"groupId": g, "count": ids.len(), "deliverableIds": ids}),
                    )
                    .collect::<Vec<_>>(),
            )
        })
        .await?;
    Ok(axum::Json(json!({"groupBy": group_by, "values": values})).into_response())
}

/// `GET /deliverable/crew-time?deliverableId=<uuid>` (repeatable): for each deliverable, the
/// work-session time on it and its subtree: `{"<id>": {"totalSeconds", "openSessions",
/// "workers": [{"workerId", "seconds", "sessions", "open"}]}}`. Open sessions count up to now;
/// plans are not time worked and are left out.
pub async fn crew_time(
    State(state): State<Arc<AppState>>,
    Extension(auth): Extension<Auth>,
    RawQuery(query): RawQuery,
) -> ApiResult<Response> {
    auth.require("Deliverable", Action::Read)?;
    auth.require("WorkSession", Action::Read)?;
    let mut ids = Vec::new();
    for (k, v) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match k.as_ref() {
            "deliverableId" => {
                for part in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                    ids.push(Uuid::parse_str(part).map_err(|_| {
                        ApiError::field("deliverableId", format!("'{part}' is not a UUID"))
                    })?);
                }
            }
            other => {
                return Err(ApiError::field(
                    other,
                    "unknown parameter; use deliverableId",
                ));
            }
        }
    }
    if ids.is_empty() {
        return Err(ApiError::field(
            "deliverableId",
            "deliverableId is required",
        ));
    }
    let org = auth.org;
    let now = chrono::Utc::now();
    let out = state
        .store
        .read(move |tx| {
            let sessions_table = resource("deliverable/work-sessions").table();
            let expr = tx
                .dialect()
                .text_expr(&FieldPath::parse("deliverableId").expect("static path"));
            let mut out = Map::new();
            for id in &ids {
                let row = tree_row(tx, org, *id)?.ok_or_else(ApiError::not_found)?;
                // The sessions of the whole subtree in one query: the subtree's index range,
                // each node's sessions through the `(organization_id, deliverableId)` index.
                let rows = tx.query(
                    &format!(
                        "SELECT data FROM {TREE} t JOIN {sessions_table} s \
                         ON s.organization_id = t.organization_id AND {expr} = t.id \
                         WHERE t.organization_id = ? AND t.path >= ? AND t.path < ?"
                    ),
                    &[
                        org.into(),
                        row.path.clone().into(),
                        path_upper(&row.path).into(),
                    ],
                )?;
                let mut per_worker: BTreeMap<Uuid, (i64, u64, bool)> = BTreeMap::new();
                let mut total = 0i64;
                let mut open = 0u64;
                for mut r in rows {
                    let Some(text) = r.pop().and_then(SqlValue::into_string) else {
                        continue;
                    };
                    let s: prodops_core::work_session::WorkSession =
                        serde_json::from_str(&text).map_err(ApiError::internal)?;
                    if s.kind != prodops_core::work_session::WorkSessionKind::Session {
                        continue;
                    }
                    let end = s.end_date.unwrap_or(now);
                    let secs = (end - s.start_date).num_seconds().max(0);
                    let e = per_worker.entry(s.worker_id).or_insert((0, 0, false));
                    e.0 += secs;
                    e.1 += 1;
                    e.2 |= s.is_open();
                    total += secs;
                    open += u64::from(s.is_open());
                }
                let workers: Vec<Value> = per_worker
                    .into_iter()
                    .map(|(w, (secs, n, o))| {
                        json!({"workerId": w, "seconds": secs, "sessions": n, "open": o})
                    })
                    .collect();
                out.insert(
                    id.to_string(),
                    json!({"totalSeconds": total, "openSessions": open, "workers": workers}),
                );
            }
            Ok::<_, ApiError>(Value::Object(out))
        })
        .await?;
    Ok(axum::Json(out).into_response())
}
