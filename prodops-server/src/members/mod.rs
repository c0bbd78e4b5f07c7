//! Organization members (spec 2.13, 4.12): invitations, acceptance, resend, deactivate and
//! reactivate, and the outbox the invitation messages go to.
//!
//! Accounts (`app_users`) are global and keyed by email; a member record embeds a copy of its
//! account (`appUser`), kept in step on every organization when the account changes.
//!
//! - `POST /organization-member` `{email, name?, roleId?, roleType?, workerId?}` → 201 member
//! - `POST /organization-member/accept-invitation` `{token}` (no API key) → 200 member
//! - `POST /organization-member/{id}/resend-invitation`, `/deactivate`, `/reactivate` → 204
//! - `GET /outbox` (admin keys only) → the organization's outgoing messages
//!
//! Every member endpoint needs an admin key, or both `User.Read` and `User.Update`.

use prodops_core::api::{self, Endpoint};
use prodops_core::registry::ResourceId;
use std::sync::Arc;

use chrono::Duration;
use prodops_core::organization::{
    AcceptInvitation, AppUser, AppUserStatus, InviteRequest, MemberStatus, OrganizationMember,
    can_resend, new_account_name, status_after_accept, status_after_reactivate,
};
use rand::RngCore;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::engine::hooks::{DeleteAction, Hooks};
use crate::engine::{ServedResource, apply_typed_change, create_server_typed};
use crate::http::app::hash_key;
use crate::http::call::{Call, Open};
use crate::http::context::{Action, Auth, Ctx, format_time};
use crate::http::error::{ApiError, ApiResult, read_stored};
use crate::http::typed::{Answered, Served, ServedQuery, Shaped, write_answer};
use crate::store::records;
use crate::store::sql::FieldPath;
use crate::store::{SqlValue, Tx};
use prodops_core::api::Page;

/// How long an invitation token works.
pub const INVITATION_DAYS: i64 = 14;

// The handlers of this family's declared actions (`prodops_core::api::member`); the router
// serves each on its declared method and path, behind its declared access.
crate::http::action::handle! {
    api::member::Invite => invite;
    api::member::AcceptInvitation => accept;
    api::member::ResendInvitation => resend;
    api::member::Deactivate => deactivate;
    api::member::Reactivate => reactivate;
    api::member::Outbox => outbox;
}

/// Admin, or both `User.Read` and `User.Update` (spec 4.12); DELETE also needs `User.Delete`.
fn member_auth(auth: &Auth, action: Action) -> ApiResult<()> {
    auth.require("User", Action::Read)?;
    auth.require("User", Action::Update)?;
    if action == Action::Delete || action == Action::Create {
        auth.require("User", action)?;
    }
    Ok(())
}

fn org_name(tx: &mut dyn Tx, org: Uuid) -> ApiResult<String> {
    Ok(crate::admin::org_name(tx, org)?.unwrap_or_else(|| "the organization".to_string()))
}

/// Issues an invitation token for a member (revoking earlier unused ones) and writes the
/// message to the outbox.
fn send_invitation(tx: &mut dyn Tx, ctx: &Ctx, member: &OrganizationMember) -> ApiResult<()> {
    tx.execute(
        "DELETE FROM invitations WHERE organization_id = ? AND member_id = ? AND used_at IS NULL",
        &[ctx.org().into(), member.id.into()],
    )?;
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let token = format!("inv_{}", hex::encode(bytes));
    let expires = ctx.now + Duration::days(INVITATION_DAYS);
    tx.execute(
        "INSERT INTO invitations (token_hash, organization_id, member_id, app_user_id, created_at, expires_at, used_at) \
         VALUES (?, ?, ?, ?, ?, ?, NULL)",
        &[
            hash_key(&token).into(),
            ctx.org().into(),
            member.id.into(),
            member.app_user_id.into(),
            ctx.now_text().into(),
            format_time(expires).into(),
        ],
    )?;
    let org = org_name(tx, ctx.org())?;
    let subject = format!("You are invited to {org}");
    let body = format!(
        "Hello {name},\n\nyou have been invited to {org}. To accept, send\n\n  POST /api/v2{accept}\n  {{\"token\": \"{token}\"}}\n\nThe invitation expires on {expires}.\n",
        name = member.app_user.name,
        accept = api::member::AcceptInvitation::DESC.path,
        expires = format_time(expires),
    );
    let payload = json!({
        "token": token,
        "memberId": member.id,
        "appUserId": member.app_user_id,
        "organizationId": ctx.org(),
        "expiresAt": format_time(expires),
    });
    tx.execute(
        "INSERT INTO outbox (id, organization_id, kind, recipient, subject, body, payload, created_at, sent_at) \
         VALUES (?, ?, 'invitation', ?, ?, ?, ?, ?, NULL)",
        &[
            Uuid::now_v7().into(),
            ctx.org().into(),
            member.app_user.email.clone().into(),
            subject.into(),
            body.into(),
            payload.to_string().into(),
            ctx.now_text().into(),
        ],
    )?;
    Ok(())
}

/// The account with this email, created (pending) when there is none: `(id, name, status)`.
fn account_for(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    email: &str,
    name: Option<&str>,
) -> ApiResult<(Uuid, String, AppUserStatus)> {
    let find = |tx: &mut dyn Tx| {
        tx.query(
            "SELECT id, name, status FROM app_users WHERE email = ?",
            &[email.into()],
        )
    };
    let mut rows = find(tx)?;
    if rows.is_empty() {
        tx.execute(
            "INSERT INTO app_users (id, email, name, status, created_at, updated_at) VALUES (?, ?, ?, 'pending', ?, ?) \
             ON CONFLICT (email) DO NOTHING",
            &[
                Uuid::now_v7().into(),
                email.into(),
                new_account_name(name, email).into(),
                ctx.now_text().into(),
                ctx.now_text().into(),
            ],
        )?;
        rows = find(tx)?;
    }
    let row = rows
        .into_iter()
        .next()
        .ok_or_else(|| ApiError::internal("account vanished"))?;
    let text = |i: usize| {
        row.get(i)
            .and_then(SqlValue::as_str)
            .unwrap_or("")
            .to_string()
    };
    let id = Uuid::parse_str(&text(0)).map_err(ApiError::internal)?;
    let status = if text(2) == "active" {
        AppUserStatus::Active
    } else {
        AppUserStatus::Pending
    };
    Ok((id, text(1), status))
}

async fn invite(
    call: Call,
    (): (),
    (): (),
    req: InviteRequest,
) -> ApiResult<Answered<api::member::Invite>> {
    let violations = req.violations();
    if !violations.is_empty() {
        return Err(ApiError::violations(violations));
    }
    let email = req
        .normalized_email()
        .map_err(|v| ApiError::violations(vec![v]))?;
    call.write(move |tx, ctx| {
        let res = ctx.resource(ResourceId::OrganizationMember);
        let (account, name, status) = account_for(tx, ctx, &email, req.name.as_deref())?;
        let member = OrganizationMember {
            id: Uuid::now_v7(),
            organization_id: ctx.org(),
            app_user_id: account,
            app_user: AppUser {
                id: account,
                name,
                email: email.clone(),
                status,
            },
            status: MemberStatus::Pending,
            role_id: req.role_id,
            role_type: req.role_type.clone(),
            worker_id: req.worker_id,
            // The account's name is set above; this write-only alias stays empty.
            name: None,
            created_at: ctx.now,
            updated_at: ctx.now,
        };
        let record = create_server_typed(tx, ctx, res, &member)?;
        let member: OrganizationMember = read_stored(&record)?;
        send_invitation(tx, ctx, &member)?;
        Ok(Shaped::record(record))
    })
    .await
}

/// Rewrites the embedded copy of an account on every organization's member records, as
/// `change` changes the account.
fn sync_account(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    account: Uuid,
    change: impl Fn(&mut AppUser),
) -> ApiResult<()> {
    let res = ctx.resource(ResourceId::OrganizationMember);
    let expr = tx.text_expr(&FieldPath::parse("appUserId").expect("static path"));
    let rows = tx.query(
        &format!(
            "SELECT organization_id, data FROM {} WHERE {expr} = ?",
            res.table()
        ),
        &[account.into()],
    )?;
    for row in rows {
        let org = row
            .first()
            .and_then(SqlValue::as_str)
            .and_then(|s| Uuid::parse_str(s).ok())
            .ok_or_else(|| ApiError::internal("member row without organization"))?;
        let mut record: Value = match row.get(1) {
            Some(SqlValue::Text(t)) => serde_json::from_str(t).map_err(ApiError::internal)?,
            _ => continue,
        };
        let Some(embedded) = record.get_mut("appUser") else {
            continue;
        };
        let before: AppUser = read_stored(embedded)?;
        let mut after = before.clone();
        change(&mut after);
        if after != before {
            // Stored as the pipeline stores a change: the record's text otherwise untouched,
            // `updatedAt` stamped (the members of other organizations are written directly).
            *embedded = serde_json::to_value(&after).map_err(ApiError::internal)?;
            record["updatedAt"] = json!(ctx.now_text());
            records::update(tx, res.table(), org, &record)?;
        }
    }
    Ok(())
}

async fn accept(
    Open { state }: Open,
    (): (),
    (): (),
    req: AcceptInvitation,
) -> ApiResult<Answered<api::member::AcceptInvitation>> {
    let hash = hash_key(req.token.trim());
    let refused = || ApiError::forbidden("the invitation token is unknown, used or expired");
    let lookup = hash.clone();
    let found = state
        .store
        .read(move |tx| {
            Ok::<_, ApiError>(tx.query(
                "SELECT organization_id FROM invitations WHERE token_hash = ?",
                &[lookup.clone().into()],
            )?)
        })
        .await?;
    let org = found
        .first()
        .and_then(|r| r.first())
        .and_then(SqlValue::as_str)
        .and_then(|s| Uuid::parse_str(s).ok())
        .ok_or_else(refused)?;
    // The token stands for the invited person; the actions run in the invitation's organization.
    let auth = Auth {
        key_id: Uuid::nil(),
        org,
        admin: false,
        permissions: Arc::new(Default::default()),
        flags: Arc::new(Map::new()),
    };
    let ctx = Ctx::new(state.resources.clone(), auth, None);
    write_answer(&state, ctx, move |tx, ctx| {
        let rows = tx.query(
            "SELECT member_id, app_user_id, expires_at FROM invitations \
             WHERE token_hash = ? AND organization_id = ? AND used_at IS NULL",
            &[hash.clone().into(), ctx.org().into()],
        )?;
        let row = rows.into_iter().next().ok_or_else(refused)?;
        let text = |i: usize| {
            row.get(i)
                .and_then(SqlValue::as_str)
                .unwrap_or("")
                .to_string()
        };
        let expires = chrono::DateTime::parse_from_rfc3339(&text(2)).map_err(ApiError::internal)?;
        if expires <= ctx.now {
            return Err(refused());
        }
        let member_id = Uuid::parse_str(&text(0)).map_err(ApiError::internal)?;
        let account = Uuid::parse_str(&text(1)).map_err(ApiError::internal)?;
        tx.execute(
            "UPDATE invitations SET used_at = ? WHERE token_hash = ?",
            &[ctx.now_text().into(), hash.clone().into()],
        )?;
        tx.execute(
            "UPDATE app_users SET status = 'active', updated_at = ? WHERE id = ?",
            &[ctx.now_text().into(), account.into()],
        )?;
        sync_account(tx, ctx, account, |user| user.status = AppUserStatus::Active)?;
        let res = ctx.resource(ResourceId::OrganizationMember);
        let old = records::get(tx, res.table(), ctx.org(), member_id)?.ok_or_else(refused)?;
        let member: OrganizationMember = read_stored(&old)?;
        let accepted = OrganizationMember {
            status: status_after_accept(member.status),
            ..member.clone()
        };
        let record = apply_typed_change(tx, ctx, res, &old, &member, &accepted)?;
        Ok(Shaped::record(record))
    })
    .await
}

/// Runs a member action: loads the member, lets `f` change it, answers 204.
async fn member_action<E, F>(call: Call, id: Uuid, f: F) -> ApiResult<Answered<E>>
where
    E: Served + Endpoint<Answer = api::Empty>,
    F: Fn(&mut dyn Tx, &Ctx, &ServedResource, &Value, &OrganizationMember) -> ApiResult<()>
        + Send
        + 'static,
{
    call.write(move |tx, ctx| {
        let res = ctx.resource(ResourceId::OrganizationMember);
        let old = records::get(tx, res.table(), ctx.org(), id)?.ok_or_else(ApiError::not_found)?;
        let member: OrganizationMember =
            serde_json::from_value(old.clone()).map_err(ApiError::internal)?;
        f(tx, ctx, res, &old, &member)
    })
    .await
}

fn set_status(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    res: &ServedResource,
    old: &Value,
    member: &OrganizationMember,
    status: MemberStatus,
) -> ApiResult<()> {
    let after = OrganizationMember {
        status,
        ..member.clone()
    };
    apply_typed_change(tx, ctx, res, old, member, &after)?;
    Ok(())
}

async fn resend(
    call: Call,
    id: Uuid,
    (): (),
    (): (),
) -> ApiResult<Answered<api::member::ResendInvitation>> {
    member_action(call, id, |tx, ctx, _res, _old, member| {
        can_resend(member).map_err(|v| ApiError::violations(vec![v]))?;
        send_invitation(tx, ctx, member)
    })
    .await
}

async fn deactivate(
    call: Call,
    id: Uuid,
    (): (),
    (): (),
) -> ApiResult<Answered<api::member::Deactivate>> {
    member_action(call, id, |tx, ctx, res, old, member| {
        tx.execute(
            "DELETE FROM invitations WHERE organization_id = ? AND member_id = ? AND used_at IS NULL",
            &[ctx.org().into(), member.id.into()],
        )?;
        set_status(tx, ctx, res, old, member, MemberStatus::Inactive)
    })
    .await
}

async fn reactivate(
    call: Call,
    id: Uuid,
    (): (),
    (): (),
) -> ApiResult<Answered<api::member::Reactivate>> {
    member_action(call, id, |tx, ctx, res, old, member| {
        if member.status != MemberStatus::Inactive {
            return Ok(());
        }
        set_status(
            tx,
            ctx,
            res,
            old,
            member,
            status_after_reactivate(member.app_user.status),
        )
    })
    .await
}

/// `GET /outbox?kind=&recipient=`: the organization's outgoing messages, oldest first
/// (admin keys only).
async fn outbox(
    call: Call,
    (): (),
    filter: OutboxFilter,
    (): (),
) -> ApiResult<Answered<api::member::Outbox>> {
    let mut sql = String::from(
        "SELECT id, kind, recipient, subject, body, payload, created_at, sent_at FROM outbox WHERE organization_id = ?",
    );
    sql.push_str(&filter.conds);
    let mut params: Vec<SqlValue> = vec![call.org().into()];
    params.extend(filter.args);
    sql.push_str(" ORDER BY created_at, id LIMIT 10000");
    let rows = call
        .state
        .store
        .read(move |tx| Ok::<_, ApiError>(tx.query(&sql, &params)?))
        .await?;
    let values: Vec<Value> = rows
        .into_iter()
        .map(|r| {
            let text = |i: usize| r.get(i).and_then(SqlValue::as_str).map(str::to_string);
            json!({
                "id": text(0),
                "kind": text(1),
                "recipient": text(2),
                "subject": text(3),
                "body": text(4),
                "payload": text(5).and_then(|p| serde_json::from_str::<Value>(&p).ok()),
                "createdAt": text(6),
                "sentAt": text(7),
            })
        })
        .collect();
    let total = values.len() as u64;
    Ok(Answered::new(Page {
        values,
        total_count: total,
        next_cursor: None,
    }))
}

/// The filters of `GET /outbox`, read from its query: SQL conditions and their arguments after
/// the organization's.
pub struct OutboxFilter {
    conds: String,
    args: Vec<SqlValue>,
}

impl ServedQuery for api::member::OutboxQuery {
    type Value = OutboxFilter;
    fn from_query(query: Option<&str>) -> ApiResult<OutboxFilter> {
        outbox_filter(query)
    }
}

fn outbox_filter(query: Option<&str>) -> ApiResult<OutboxFilter> {
    let mut sql = String::new();
    let mut params: Vec<SqlValue> = Vec::new();
    for (k, v) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match k.as_ref() {
            "kind" => {
                sql.push_str(" AND kind = ?");
                params.push(v.into_owned().into());
            }
            "recipient" => {
                sql.push_str(" AND recipient = ?");
                params.push(v.trim().to_lowercase().into());
            }
            other => {
                return Err(ApiError::field(
                    other,
                    "unknown filter; use kind or recipient",
                ));
            }
        }
    }
    Ok(OutboxFilter {
        conds: sql,
        args: params,
    })
}

/// Organization members: the permission rule, facts behind `roleId` and `workerId`, the
/// account's name written through, invitations removed with the member.
pub struct MemberHooks;

fn exists(tx: &mut dyn Tx, ctx: &Ctx, resource: ResourceId, id: &Value) -> ApiResult<bool> {
    let Some(id) = id.as_str().and_then(|s| Uuid::parse_str(s).ok()) else {
        return Ok(true);
    };
    let table = resource.kind().desc().table;
    Ok(records::get(tx, table, ctx.org(), id)?.is_some())
}

impl Hooks for MemberHooks {
    fn authorize(&self, auth: &Auth, _res: &ServedResource, action: Action) -> ApiResult<()> {
        member_auth(auth, action)
    }

    fn check_facts(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        old: Option<&Value>,
        new: &Value,
    ) -> ApiResult<()> {
        for (field, resource) in [
            ("roleId", ResourceId::Role),
            ("workerId", ResourceId::Worker),
        ] {
            let value = new.get(field).cloned().unwrap_or(Value::Null);
            let unchanged = old.is_some_and(|o| o.get(field) == Some(&value));
            if !unchanged && !value.is_null() && !exists(tx, ctx, resource, &value)? {
                let path = resource.kind().desc().path;
                return Err(ApiError::field(field, format!("no such {path}")));
            }
        }
        Ok(())
    }

    fn after_write(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        old: Option<&Value>,
        new: &Value,
    ) -> ApiResult<()> {
        let Some(old) = old else { return Ok(()) };
        let old: OrganizationMember = read_stored(old)?;
        let new: OrganizationMember = read_stored(new)?;
        let name = new.app_user.name;
        if old.app_user.name == name {
            return Ok(());
        }
        let account = new.app_user_id;
        tx.execute(
            "UPDATE app_users SET name = ?, updated_at = ? WHERE id = ?",
            &[name.clone().into(), ctx.now_text().into(), account.into()],
        )?;
        sync_account(tx, ctx, account, |user| user.name = name.clone())
    }

    fn before_delete(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        record: &Value,
    ) -> ApiResult<DeleteAction> {
        let id = record.get("id").and_then(Value::as_str).unwrap_or("");
        tx.execute(
            "DELETE FROM invitations WHERE organization_id = ? AND member_id = ?",
            &[ctx.org().into(), id.into()],
        )?;
        Ok(DeleteAction::Proceed)
    }
}
