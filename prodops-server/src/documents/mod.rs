//! Documents and their versions (spec 2.9, 4.7): file upload and signed downloads, version
//! create, link and copy-mode actions, the Hub bulk upload, counts by deliverable, and the
//! hooks that give every answer a fresh `documentUrl`.
//!
//! Paths (docs/documents.md):
//! - `POST /document/upload` (raw bytes) → 201 `{documentKey, sizeBytes, mimeType, sha256}`
//! - `GET /document/file/{org}/{key}?expires=&signature=` (no API key; the signature is the credential)
//! - `POST /document/hub/bulk-upload` `{documents: [...]}` → 201 `{values, count}`
//! - `POST /document-version`, `POST /document/{id}/versions` → 201 the version, made current
//! - `POST /document/{id}/links` `{deliverableId}`, `DELETE /document/{id}/links/{deliverableId}` → 200 the document
//! - `POST /document/{id}/copy-mode` `{copyMode}` → 200 the document
//! - `POST /document/counts-by-deliverable` `{deliverableIds}` → 200 `{values: [{groupId, count}]}`
//!
//! Everything but the reads, archive/restore, permanent DELETE, counts and downloads needs the
//! organization flag `documentsHubEnabled` (403 without it).

use prodops_core::api;
use prodops_core::registry::ResourceId;
use std::sync::Arc;

use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use prodops_core::Violation;
use prodops_core::document::{
    CopyModeRequest, CountsByDeliverable, Document, DocumentVersion, HubBulkUpload, LinkRequest,
    MAX_HUB_UPLOAD, UploadedFile, VersionCreate,
};
use prodops_core::notification::{NotificationKind, Subject};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::blob::{Files, LinkError, is_key};
use crate::engine::hooks::{DeleteAction, Hooks};
use crate::engine::{self, ServedResource, apply_typed_change, create_server_typed, parse_id};
use crate::http::app::AppState;
use crate::http::call::{Call, Open};
use crate::http::context::{Action, Auth, Ctx};
use crate::http::error::{ApiError, ApiResult, read_stored};
use crate::http::typed::{Answered, FileBody, Served, ServedQuery, Shaped, Streamed};
use crate::store::records::{self, Select};
use crate::store::sql::Cond;
use crate::store::{SqlValue, Tx};
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use prodops_core::api::Endpoint;

pub const HUB_FLAG: &str = "documentsHubEnabled";

// The handlers of this family's declared actions (`prodops_core::api::document`); the router
// serves each on its declared method and path, behind its declared access.
crate::http::action::handle! {
    api::document::Upload => upload;
    api::document::Download => download, path refused: refused_link;
    api::document::HubBulkUpload => hub_bulk_upload;
    api::document::CountsByDeliverable => counts_by_deliverable;
    api::document::CreateVersion => create_version_body;
    api::document::AddVersion => create_version_path;
    api::document::Link => link;
    api::document::Unlink => unlink;
    api::document::SetCopyMode => copy_mode;
}

/// A call of an endpoint of the Hub's documents: refused unless the organization has the
/// flag, before anything of the request is read.
pub struct HubCall(Call);

impl FromRequestParts<Arc<AppState>> for HubCall {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<AppState>,
    ) -> Result<Self, ApiError> {
        let call = Call::from_request_parts(parts, state).await?;
        require_hub(&call.auth)?;
        Ok(HubCall(call))
    }
}

/// A malformed download link is refused like any other invalid link.
fn refused_link(_: ApiError) -> ApiError {
    ApiError::forbidden("the download link is invalid")
}

impl ServedQuery for api::document::LinkQuery {
    type Value = api::document::LinkQuery;
    /// Lenient: a missing or malformed credential refuses the link, in the handler.
    fn from_query(query: Option<&str>) -> ApiResult<Self> {
        let mut link = api::document::LinkQuery::default();
        for (k, v) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
            match k.as_ref() {
                "expires" => link.expires = v.parse::<i64>().ok(),
                "signature" => link.signature = Some(v.into_owned()),
                _ => {}
            }
        }
        Ok(link)
    }
}

fn require_hub(auth: &Auth) -> ApiResult<()> {
    if auth.flag(HUB_FLAG) {
        Ok(())
    } else {
        Err(ApiError::forbidden(format!(
            "this endpoint needs the organization flag {HUB_FLAG}"
        )))
    }
}

/// An uploaded file of the organization: size and MIME type.
struct BlobRow {
    size_bytes: i64,
    mime_type: Option<String>,
}

fn blob_row(tx: &mut dyn Tx, org: Uuid, key: &str) -> ApiResult<Option<BlobRow>> {
    let rows = tx.query(
        "SELECT size_bytes, mime_type FROM blobs WHERE organization_id = ? AND document_key = ?",
        &[org.into(), key.into()],
    )?;
    Ok(rows.into_iter().next().map(|r| BlobRow {
        size_bytes: r.first().and_then(SqlValue::as_i64).unwrap_or(0),
        mime_type: r.get(1).and_then(SqlValue::as_str).map(str::to_string),
    }))
}

fn deliverable_exists(tx: &mut dyn Tx, org: Uuid, id: Uuid) -> ApiResult<bool> {
    let table = ResourceId::Deliverable.kind().desc().table;
    Ok(records::get(tx, table, org, id)?.is_some())
}

// ----- upload and download ---------------------------------------------------------------------

async fn upload(
    HubCall(call): HubCall,
    (): (),
    (): (),
    file: FileBody,
) -> ApiResult<Answered<api::document::Upload>> {
    if call.require("Document", Action::Create).is_err() {
        call.require("Document", Action::Update)?;
    }
    let headers = file.headers.clone();
    let bytes = file.bytes().await?;
    if bytes.is_empty() {
        return Err(ApiError::validation(
            "the request body is empty; send the file's bytes",
        ));
    }
    let mime_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty() && v.len() <= 255);
    let sha256 = hex::encode(Sha256::digest(&bytes));
    let size_bytes = bytes.len() as i64;
    let org = call.org();
    // A dry run stores no bytes: the key it answers names nothing.
    let key = if call.dry_run {
        Files::new_key()
    } else {
        Files::of(&call.state).put(org, bytes).await?
    };
    call.write(move |tx, ctx| {
        tx.execute(
            "INSERT INTO blobs (organization_id, document_key, size_bytes, mime_type, sha256, created_at) \
             VALUES (?, ?, ?, ?, ?, ?)",
            &[
                org.into(),
                key.clone().into(),
                size_bytes.into(),
                mime_type.clone().into(),
                sha256.clone().into(),
                ctx.now_text().into(),
            ],
        )?;
        let answer = UploadedFile {
            document_key: key.clone(),
            size_bytes,
            mime_type: mime_type.clone(),
            sha256: sha256.clone(),
        };
        Ok(answer.into())
    })
    .await
}

async fn download(
    Open { state }: Open,
    (org, key): (Uuid, String),
    link: api::document::LinkQuery,
    (): (),
) -> ApiResult<Answered<api::document::Download>> {
    let refused = || ApiError::forbidden("the download link is invalid");
    if !is_key(&key) {
        return Err(refused());
    }
    let api::document::LinkQuery { expires, signature } = link;
    let (Some(expires), Some(signature)) = (expires, signature) else {
        return Err(refused());
    };
    let now = Files::of(&state).now();
    match Files::of(&state).verify(org, &key, expires, &signature, now) {
        Ok(()) => {}
        Err(LinkError::Expired) => {
            return Err(ApiError::forbidden(
                "the download link has expired; read the document again for a fresh link",
            ));
        }
        Err(LinkError::BadSignature) => return Err(refused()),
    }
    let lookup_key = key.clone();
    let row = state
        .store
        .read(move |tx| blob_row(tx, org, &lookup_key))
        .await?
        .ok_or_else(ApiError::not_found)?;
    let bytes = Files::of(&state)
        .get(org, &key)
        .await?
        .ok_or_else(ApiError::not_found)?;
    let mime = row
        .mime_type
        .unwrap_or_else(|| "application/octet-stream".into());
    // The file's own media type, and not to be cached: a streamed answer, as declared.
    Ok(Answered::new(Streamed(
        (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, mime),
                (header::CACHE_CONTROL, "private, no-store".to_string()),
            ],
            bytes,
        )
            .into_response(),
    )))
}

// ----- versions ----------------------------------------------------------------------------------

/// Creates a version of a document and makes it current; returns the stored version.
fn create_version(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    document_id: Uuid,
    req: &VersionCreate,
) -> ApiResult<Value> {
    let docs = ctx.resource(ResourceId::Document);
    let versions = ctx.resource(ResourceId::DocumentVersion);
    let doc =
        records::get(tx, docs.table(), ctx.org(), document_id)?.ok_or_else(ApiError::not_found)?;
    let mut size = None;
    let mut mime_type = req.mime_type.clone();
    if let Some(key) = req
        .document_key
        .as_deref()
        .map(str::trim)
        .filter(|k| !k.is_empty())
    {
        let blob = blob_row(tx, ctx.org(), key)?.ok_or_else(|| {
            ApiError::field(
                "documentKey",
                "no uploaded file has this key; upload it with POST /document/upload",
            )
        })?;
        size = Some(blob.size_bytes);
        mime_type = mime_type.or(blob.mime_type);
    } else if let Some(url) = req
        .document_url
        .as_deref()
        .map(str::trim)
        .filter(|u| !u.is_empty())
        && !(url.starts_with("https://") || url.starts_with("http://"))
    {
        return Err(ApiError::field(
            "documentUrl",
            "must be an http:// or https:// link",
        ));
    }
    let version = DocumentVersion {
        id: req.id.unwrap_or_else(Uuid::now_v7),
        organization_id: ctx.org(),
        document_id,
        version_label: req.version_label.clone(),
        name: req.name.clone(),
        document_key: req.document_key.clone(),
        document_url: req.document_url.clone(),
        mime_type,
        last_modified_at: req.last_modified_at,
        metadata: req.metadata.clone(),
        app_user_id: None,
        is_archived: false,
        archived_at: None,
        created_at: ctx.now,
        updated_at: ctx.now,
    };
    let stored = create_server_typed(tx, ctx, versions, &version)?;
    // The version as stored (normalized) is what the document takes on.
    let version: DocumentVersion = read_stored(&stored)?;
    let before: Document = read_stored(&doc)?;
    let mut after = before.clone();
    after.make_current(&version, size);
    apply_typed_change(tx, ctx, docs, &doc, &before, &after)?;
    Ok(stored)
}

async fn version_reply<E>(
    call: Call,
    document_id: Uuid,
    req: VersionCreate,
) -> ApiResult<Answered<E>>
where
    E: Served + Endpoint<Answer = api::Json<DocumentVersion>>,
{
    let st = call.state.clone();
    call.write(move |tx, ctx| {
        let mut version = create_version(tx, ctx, document_id, &req)?;
        present_file(&st, ctx.org(), &mut version);
        Ok(Shaped::record(version))
    })
    .await
}

async fn create_version_body(
    HubCall(call): HubCall,
    (): (),
    (): (),
    req: VersionCreate,
) -> ApiResult<Answered<api::document::CreateVersion>> {
    let document_id = req
        .document_id
        .ok_or_else(|| ApiError::field("documentId", "documentId is required"))?;
    check_version(&req)?;
    version_reply(call, document_id, req).await
}

async fn create_version_path(
    HubCall(call): HubCall,
    document_id: Uuid,
    (): (),
    req: VersionCreate,
) -> ApiResult<Answered<api::document::AddVersion>> {
    if req.document_id.is_some_and(|d| d != document_id) {
        return Err(ApiError::field(
            "documentId",
            "differs from the document of the path",
        ));
    }
    check_version(&req)?;
    version_reply(call, document_id, req).await
}

/// The request rules a version create can be judged by before any read: a name and a file.
fn check_version(req: &VersionCreate) -> ApiResult<()> {
    let given = |s: &Option<String>| s.as_deref().is_some_and(|s| !s.trim().is_empty());
    let mut v = Vec::new();
    if req.name.trim().is_empty() {
        v.push(Violation::field("name", "name must not be empty"));
    }
    if !given(&req.document_key) && !given(&req.document_url) {
        v.push(Violation::general(
            "a document version needs documentKey or documentUrl",
        ));
    }
    if v.is_empty() {
        Ok(())
    } else {
        Err(ApiError::violations(v))
    }
}

// ----- Hub bulk upload ---------------------------------------------------------------------------

async fn hub_bulk_upload(
    HubCall(call): HubCall,
    (): (),
    (): (),
    req: HubBulkUpload,
) -> ApiResult<Answered<api::document::HubBulkUpload>> {
    if req.documents.is_empty() || req.documents.len() > MAX_HUB_UPLOAD {
        return Err(ApiError::field(
            "documents",
            format!("send 1 to {MAX_HUB_UPLOAD} documents"),
        ));
    }
    let mut violations = Vec::new();
    for (i, item) in req.documents.iter().enumerate() {
        violations.extend(item.validate().into_iter().map(|mut v| {
            v.index = Some(i);
            v
        }));
    }
    if !violations.is_empty() {
        return Err(ApiError::violations(violations));
    }
    let st = call.state.clone();
    call.write(move |tx, ctx| {
        let docs = ctx.resource(ResourceId::Document);
        let mut out = Vec::with_capacity(req.documents.len());
        for (i, item) in req.documents.iter().enumerate() {
            let key = item.document_key.trim();
            if blob_row(tx, ctx.org(), key)?.is_none() {
                return Err(ApiError::field(
                    "documentKey",
                    "no uploaded file has this key; upload it with POST /document/upload",
                )
                .with_index(i));
            }
            if let Some(d) = item.deliverable_id
                && !deliverable_exists(tx, ctx.org(), d)?
            {
                return Err(ApiError::field("deliverableId", "no such deliverable").with_index(i));
            }
            // The file fields come with its first version, below.
            let doc = Document {
                id: Uuid::now_v7(),
                organization_id: ctx.org(),
                name: item.name.clone(),
                deliverable_id: item.deliverable_id,
                document_key: None,
                document_url: None,
                mime_type: None,
                size_bytes: None,
                copy_mode: item.copy_mode,
                deliverable_document: item.deliverable_document(),
                copy_with_deliverable: item.copy_with_deliverable.unwrap_or(false),
                is_hub: true,
                linked_deliverable_ids: Vec::new(),
                external_url: None,
                current_version_id: None,
                metadata: item.metadata.clone(),
                app_user_id: None,
                is_archived: false,
                archived_at: None,
                created_at: ctx.now,
                updated_at: ctx.now,
            };
            create_server_typed(tx, ctx, docs, &doc).map_err(|e| e.with_index(i))?;
            let doc_id = doc.id;
            let version = VersionCreate {
                document_id: Some(doc_id),
                id: None,
                version_label: Some(item.version_label.clone().unwrap_or_else(|| "v1".into())),
                name: item.name.clone(),
                document_key: Some(key.to_string()),
                document_url: None,
                mime_type: item.mime_type.clone(),
                last_modified_at: None,
                metadata: Map::new(),
            };
            create_version(tx, ctx, doc_id, &version).map_err(|e| e.with_index(i))?;
            let mut doc = records::get(tx, docs.table(), ctx.org(), doc_id)?
                .ok_or_else(|| ApiError::internal("document vanished"))?;
            if let Some(d) = item.deliverable_id {
                notify_attached(tx, ctx, doc_id, d, &item.name)?;
            }
            present_file(&st, ctx.org(), &mut doc);
            out.push(doc);
        }
        Ok(json!({ "values": out, "count": out.len() }))
    })
    .await
}

fn notify_attached(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    document: Uuid,
    deliverable: Uuid,
    name: &str,
) -> ApiResult<()> {
    let about = Subject {
        document_id: Some(document),
        deliverable_id: Some(deliverable),
        ..Subject::default()
    };
    crate::notifications::notify(
        tx,
        ctx,
        NotificationKind::DeliverableDocument,
        about,
        &format!("Document attached: {name}"),
        None,
    )?;
    Ok(())
}

// ----- links and copy mode -----------------------------------------------------------------------

fn load_document(tx: &mut dyn Tx, ctx: &Ctx, id: Uuid) -> ApiResult<(Arc<ServedResource>, Value)> {
    let docs = ctx.resource(ResourceId::Document).clone();
    let doc = records::get(tx, docs.table(), ctx.org(), id)?.ok_or_else(ApiError::not_found)?;
    Ok((docs, doc))
}

async fn link(
    HubCall(call): HubCall,
    id: Uuid,
    (): (),
    req: LinkRequest,
) -> ApiResult<Answered<api::document::Link>> {
    let st = call.state.clone();
    call.write(move |tx, ctx| {
        let (docs, old) = load_document(tx, ctx, id)?;
        if !deliverable_exists(tx, ctx.org(), req.deliverable_id)? {
            return Err(ApiError::field("deliverableId", "no such deliverable"));
        }
        let doc: Document = read_stored(&old)?;
        let attached = prodops_core::document::is_attached_to(&doc, req.deliverable_id);
        let mut after = doc.clone();
        if doc.deliverable_id.is_none() {
            after.deliverable_id = Some(req.deliverable_id);
        } else if !attached {
            after.linked_deliverable_ids.push(req.deliverable_id);
        }
        let mut record = apply_typed_change(tx, ctx, &docs, &old, &doc, &after)?;
        if !attached {
            notify_attached(tx, ctx, id, req.deliverable_id, &doc.name)?;
        }
        present_file(&st, ctx.org(), &mut record);
        Ok(Shaped::record(record))
    })
    .await
}

async fn unlink(
    HubCall(call): HubCall,
    (id, deliverable): (Uuid, Uuid),
    (): (),
    (): (),
) -> ApiResult<Answered<api::document::Unlink>> {
    let st = call.state.clone();
    call.write(move |tx, ctx| {
        let (docs, old) = load_document(tx, ctx, id)?;
        let doc: Document = read_stored(&old)?;
        if !prodops_core::document::is_attached_to(&doc, deliverable) {
            return Err(ApiError::not_found());
        }
        let mut after = doc.clone();
        after.linked_deliverable_ids.retain(|d| *d != deliverable);
        if doc.deliverable_id == Some(deliverable) {
            // The first further link takes the place of the removed attachment.
            after.deliverable_id = if after.linked_deliverable_ids.is_empty() {
                None
            } else {
                Some(after.linked_deliverable_ids.remove(0))
            };
        }
        let mut record = apply_typed_change(tx, ctx, &docs, &old, &doc, &after)?;
        present_file(&st, ctx.org(), &mut record);
        Ok(Shaped::record(record))
    })
    .await
}

async fn copy_mode(
    HubCall(call): HubCall,
    id: Uuid,
    (): (),
    req: CopyModeRequest,
) -> ApiResult<Answered<api::document::SetCopyMode>> {
    let st = call.state.clone();
    call.write(move |tx, ctx| {
        let (docs, old) = load_document(tx, ctx, id)?;
        let doc: Document = read_stored(&old)?;
        let after = Document {
            copy_mode: Some(req.copy_mode),
            ..doc.clone()
        };
        let mut record = apply_typed_change(tx, ctx, &docs, &old, &doc, &after)?;
        present_file(&st, ctx.org(), &mut record);
        Ok(Shaped::record(record))
    })
    .await
}

// ----- counts ------------------------------------------------------------------------------------

async fn counts_by_deliverable(
    call: Call,
    (): (),
    (): (),
    req: CountsByDeliverable,
) -> ApiResult<Answered<api::document::CountsByDeliverable>> {
    let v = req.validate();
    if !v.is_empty() {
        return Err(ApiError::violations(v));
    }
    let org = call.org();
    let values = call
        .state
        .store
        .read(move |tx| {
            let docs = ResourceId::Document.kind().desc();
            let deliverables = ResourceId::Deliverable.kind().desc();
            let mut ids = req.deliverable_ids.clone();
            ids.sort();
            ids.dedup();
            // Only deliverables of the organization count; others are left out of the answer.
            let found = records::select_values(
                tx,
                deliverables.table,
                org,
                &Select {
                    conds: vec![Cond::Ids(ids.clone())],
                    limit: ids.len().max(1) as u64,
                    ..Default::default()
                },
            )?;
            let mut out = Vec::with_capacity(found.len());
            for d in req.deliverable_ids.iter().filter(|id| {
                found
                    .iter()
                    .any(|f| f.get("id").and_then(Value::as_str) == Some(&id.to_string()))
            }) {
                if out.iter().any(|(g, _): &(Uuid, u64)| g == d) {
                    continue;
                }
                let mut n = 0;
                for path in ["deliverableId", "linkedDeliverableIds"] {
                    n += records::count(
                        tx,
                        docs.table,
                        org,
                        &[
                            Cond::Archived(false),
                            Cond::field_equals(path, d.to_string()),
                        ],
                    )?;
                }
                out.push((*d, n));
            }
            Ok::<_, ApiError>(out)
        })
        .await?;
    let values: Vec<Value> = values
        .into_iter()
        .map(|(g, n)| json!({ "groupId": g, "count": n }))
        .collect();
    Ok(Answered::new(json!({ "values": values })))
}

// ----- hooks -------------------------------------------------------------------------------------

/// Sets `documentUrl`: a fresh signed link when the record has a `documentKey`, else the
/// external link a key-less version carries.
fn present_file(state: &AppState, org: Uuid, record: &mut Value) {
    let Some(obj) = record.as_object_mut() else {
        return;
    };
    let key = obj
        .get("documentKey")
        .and_then(Value::as_str)
        .filter(|k| !k.is_empty())
        .map(str::to_string);
    let url = match key {
        Some(key) => json!(Files::of(state).link(org, &key, Files::of(state).now())),
        None => obj
            .get("externalUrl")
            .or_else(|| obj.get("documentUrl"))
            .cloned()
            .unwrap_or(Value::Null),
    };
    obj.insert("documentUrl".into(), url);
}

/// The keys among `keys` that no document or version of the organization names any more.
fn unreferenced(tx: &mut dyn Tx, org: Uuid, keys: &[String]) -> ApiResult<Vec<String>> {
    let mut out = Vec::new();
    for key in keys {
        let mut used = 0;
        for resource in [ResourceId::Document, ResourceId::DocumentVersion] {
            used += records::count(
                tx,
                resource.kind().desc().table,
                org,
                &[Cond::field_equals("documentKey", key.clone())],
            )?;
        }
        if used == 0 {
            out.push(key.clone());
        }
    }
    Ok(out)
}

/// Forgets uploaded files nothing names any more: their download links stop working at once.
fn forget_files(tx: &mut dyn Tx, org: Uuid, keys: Vec<String>) -> ApiResult<()> {
    for key in unreferenced(tx, org, &keys)? {
        tx.execute(
            "DELETE FROM blobs WHERE organization_id = ? AND document_key = ?",
            &[org.into(), key.into()],
        )?;
    }
    Ok(())
}

/// Documents: generated links on every answer; permanent DELETE removes the versions too.
pub struct DocumentHooks;

impl Hooks for DocumentHooks {
    fn presents(&self) -> bool {
        true
    }

    fn present(
        &self,
        state: &AppState,
        _tx: &mut dyn Tx,
        auth: &Auth,
        record: &mut Value,
    ) -> ApiResult<()> {
        present_file(state, auth.org, record);
        Ok(())
    }

    fn before_delete(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        res: &ServedResource,
        record: &Value,
    ) -> ApiResult<DeleteAction> {
        let id = parse_id(record.get("id").and_then(Value::as_str).unwrap_or(""))?;
        let versions = ctx.resource(ResourceId::DocumentVersion);
        let select = Select {
            conds: vec![Cond::field_equals("documentId", id.to_string())],
            limit: engine::MAX_BULK_RECORDS,
            ..Default::default()
        };
        let mut keys: Vec<String> = Vec::new();
        for v in records::select_values(tx, versions.table(), ctx.org(), &select)? {
            keys.extend(
                v.get("documentKey")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            );
            if let Some(vid) = v
                .get("id")
                .and_then(Value::as_str)
                .and_then(|s| Uuid::parse_str(s).ok())
                && records::delete(tx, versions.table(), ctx.org(), vid)?
            {
                engine::events::deleted(ctx, versions, &v);
            }
        }
        keys.extend(
            record
                .get("documentKey")
                .and_then(Value::as_str)
                .map(str::to_string),
        );
        if records::delete(tx, res.table(), ctx.org(), id)? {
            engine::events::deleted(ctx, res, record);
        }
        keys.sort();
        keys.dedup();
        forget_files(tx, ctx.org(), keys)?;
        Ok(DeleteAction::Handled)
    }
}

/// Document versions: generated links; every write needs `Document.Update` (spec 4.7).
pub struct VersionHooks;

impl Hooks for VersionHooks {
    fn authorize(&self, auth: &Auth, _res: &ServedResource, action: Action) -> ApiResult<()> {
        match action {
            Action::Read => auth.require("Document", Action::Read),
            _ => auth.require("Document", Action::Update),
        }
    }

    fn presents(&self) -> bool {
        true
    }

    fn present(
        &self,
        state: &AppState,
        _tx: &mut dyn Tx,
        auth: &Auth,
        record: &mut Value,
    ) -> ApiResult<()> {
        present_file(state, auth.org, record);
        Ok(())
    }
}
