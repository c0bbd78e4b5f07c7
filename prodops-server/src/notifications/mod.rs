//! Notifications (spec 2.15, 4.13): produced by events, read through the standard endpoints,
//! marked read by two actions.
//!
//! Events: a comment created with a `channelId` (kind `channel_comment`), and a document
//! attached to a deliverable by the Hub upload or a link action (kind `deliverable_document`).
//! Recipients: every member of the organization who is not deactivated, one notification per
//! account, except the account that caused the event ([`prodops_core::notification::recipients`]).

use prodops_core::api;
use prodops_core::registry::ResourceId;

use prodops_core::minimal::Comment;
use prodops_core::notification::{
    Notification, NotificationKind, ReadChannelComments, ReadDeliverableDocuments, Subject,
    recipients,
};
use prodops_core::organization::OrganizationMember;
use serde_json::Value;
use uuid::Uuid;

use crate::engine::hooks::Hooks;
use crate::engine::{self, ServedResource, apply_typed_change, create_server_typed};
use crate::http::call::Call;
use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult, read_stored};
use crate::http::typed::Answered;
use crate::store::Tx;
use crate::store::records::{self, Select};
use crate::store::sql::{Cond, FieldPath};

// The handlers of this family's declared actions (`prodops_core::api::notification`); the router
// serves each on its declared method and path, behind its declared access.
crate::http::action::handle! {
    api::notification::ReadChannelComments => read_channel_comments;
    api::notification::ReadDeliverableDocuments => read_deliverable_documents;
}

fn field(path: &str, value: String) -> Cond {
    Cond::Field {
        path: FieldPath::parse(path).expect("static field path"),
        values: vec![value],
    }
}

/// The members of the organization (at most 100,000).
pub fn members(tx: &mut dyn Tx, org: Uuid) -> ApiResult<Vec<OrganizationMember>> {
    let table = ResourceId::OrganizationMember.kind().desc().table;
    let select = Select {
        limit: 100_000,
        ..Default::default()
    };
    records::select_values(tx, table, org, &select)?
        .into_iter()
        .map(|v| serde_json::from_value(v).map_err(ApiError::internal))
        .collect()
}

/// Creates one notification per recipient of an event.
pub fn notify(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    kind: NotificationKind,
    about: Subject,
    message: &str,
    actor: Option<Uuid>,
) -> ApiResult<usize> {
    let res = ctx.resource(ResourceId::Notification);
    let to = recipients(&members(tx, ctx.org())?, actor);
    for user in &to {
        let notification = Notification::unread(
            Uuid::now_v7(),
            ctx.org(),
            *user,
            kind,
            about,
            message,
            ctx.now,
        );
        create_server_typed(tx, ctx, res, &notification)?;
    }
    Ok(to.len())
}

/// Marks read the unread notifications matching `conds`; returns how many changed.
fn mark_read(tx: &mut dyn Tx, ctx: &Ctx, mut conds: Vec<Cond>) -> ApiResult<usize> {
    let res = ctx.resource(ResourceId::Notification);
    conds.push(field("isRead", "false".into()));
    let select = Select {
        conds,
        limit: engine::MAX_BULK_RECORDS,
        ..Default::default()
    };
    let unread = records::select_values(tx, res.table(), ctx.org(), &select)?;
    for old in &unread {
        let before: Notification = read_stored(old)?;
        let mut after = before.clone();
        after.mark_read(ctx.now);
        apply_typed_change(tx, ctx, res, old, &before, &after)?;
    }
    Ok(unread.len())
}

fn user_cond(user: Option<Uuid>) -> Option<Cond> {
    user.map(|u| field("appUserId", u.to_string()))
}

async fn read_channel_comments(
    call: Call,
    (): (),
    (): (),
    body: ReadChannelComments,
) -> ApiResult<Answered<api::notification::ReadChannelComments>> {
    call.write(move |tx, ctx| {
        let mut conds = vec![
            field("kind", "channel_comment".into()),
            field("channelId", body.channel_id.to_string()),
        ];
        conds.extend(user_cond(body.app_user_id));
        mark_read(tx, ctx, conds)?;
        Ok(())
    })
    .await
}

async fn read_deliverable_documents(
    call: Call,
    (): (),
    (): (),
    body: ReadDeliverableDocuments,
) -> ApiResult<Answered<api::notification::ReadDeliverableDocuments>> {
    call.write(move |tx, ctx| {
        let mut conds = vec![
            field("kind", "deliverable_document".into()),
            field("deliverableId", body.deliverable_id.to_string()),
        ];
        conds.extend(user_cond(body.app_user_id));
        mark_read(tx, ctx, conds)?;
        Ok(())
    })
    .await
}

/// Comments: a new comment in a channel notifies the organization's members.
pub struct CommentHooks;

impl Hooks for CommentHooks {
    fn after_write(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        old: Option<&Value>,
        new: &Value,
    ) -> ApiResult<()> {
        // Only a new comment in a channel notifies; the test reads one field, so a bulk create
        // of comments outside channels parses nothing here.
        if old.is_some() || new.get("channelId").is_none_or(Value::is_null) {
            return Ok(());
        }
        let comment: Comment = read_stored(new)?;
        let about = Subject {
            channel_id: comment.channel_id,
            comment_id: Some(comment.id),
            deliverable_id: comment.deliverable_id,
            ..Subject::default()
        };
        let text: String = comment.body.chars().take(200).collect();
        notify(
            tx,
            ctx,
            NotificationKind::ChannelComment,
            about,
            &format!("New comment: {text}"),
            comment.author_app_user_id,
        )?;
        Ok(())
    }
}
