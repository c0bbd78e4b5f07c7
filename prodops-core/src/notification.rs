//! Notifications (spec 2.15, 4.13): what a user is told about new comments and documents.

use crate::openapi::ToSchema;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::resource::{Allow, Ops, Record, ResourceDesc};

/// What a notification is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum NotificationKind {
    /// A comment in a channel.
    ChannelComment,
    /// A document on a deliverable.
    DeliverableDocument,
}

/// A notification for one user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Notification {
    /// Record id.
    pub id: Uuid,
    /// Owning organization, from the API key.
    pub organization_id: Uuid,
    /// The user notified.
    #[serde(default)]
    pub app_user_id: Option<Uuid>,
    /// What the notification is about.
    pub kind: NotificationKind,
    /// The channel of a comment notification.
    #[serde(default)]
    pub channel_id: Option<Uuid>,
    /// The deliverable concerned.
    #[serde(default)]
    pub deliverable_id: Option<Uuid>,
    /// The document of a document notification.
    #[serde(default)]
    pub document_id: Option<Uuid>,
    /// The comment of a comment notification.
    #[serde(default)]
    pub comment_id: Option<Uuid>,
    /// Text shown to the user.
    #[serde(default)]
    pub message: String,
    /// Whether the user has read it.
    #[serde(default)]
    pub is_read: bool,
    /// When it was read.
    #[serde(default)]
    #[serde(with = "crate::time::iso_opt")]
    pub read_at: Option<DateTime<Utc>>,
    /// Creation time.
    #[serde(with = "crate::time::iso")]
    pub created_at: DateTime<Utc>,
    /// Last update time.
    #[serde(with = "crate::time::iso")]
    pub updated_at: DateTime<Utc>,
}

impl Notification {
    /// Marks the notification read at `now`; returns whether it was unread. Used by the
    /// read-channel-comments and read-deliverable-documents actions.
    pub fn mark_read(&mut self, now: DateTime<Utc>) -> bool {
        if self.is_read {
            return false;
        }
        self.is_read = true;
        self.read_at = Some(now);
        true
    }

    /// The unread notification of `user` about `subject`, created at `now`.
    pub fn unread(
        id: Uuid,
        organization_id: Uuid,
        user: Uuid,
        kind: NotificationKind,
        subject: Subject,
        message: &str,
        now: DateTime<Utc>,
    ) -> Notification {
        Notification {
            id,
            organization_id,
            app_user_id: Some(user),
            kind,
            channel_id: subject.channel_id,
            deliverable_id: subject.deliverable_id,
            document_id: subject.document_id,
            comment_id: subject.comment_id,
            message: message.to_string(),
            is_read: false,
            read_at: None,
            created_at: now,
            updated_at: now,
        }
    }
}

/// What the notifications of one event are about: the records the event names (a comment and
/// its channel, a document and its deliverable). Each id lands in the field of the same name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Subject {
    pub channel_id: Option<Uuid>,
    pub deliverable_id: Option<Uuid>,
    pub document_id: Option<Uuid>,
    pub comment_id: Option<Uuid>,
}

/// `POST /notification/read-channel-comments`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadChannelComments {
    /// The channel whose comment notifications become read.
    pub channel_id: Uuid,
    /// Only this user's notifications; all users' when omitted.
    #[serde(default)]
    pub app_user_id: Option<Uuid>,
}

/// `POST /notification/read-deliverable-documents`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadDeliverableDocuments {
    /// The deliverable whose document notifications become read.
    pub deliverable_id: Uuid,
    /// Only this user's notifications; all users' when omitted.
    #[serde(default)]
    pub app_user_id: Option<Uuid>,
}

/// Who is told about an event: every member of the organization who is not deactivated,
/// once per account, except the account that caused it.
pub fn recipients(
    members: &[crate::organization::OrganizationMember],
    actor: Option<Uuid>,
) -> Vec<Uuid> {
    let mut out: Vec<Uuid> = members
        .iter()
        .filter(|m| m.status != crate::organization::MemberStatus::Inactive)
        .map(|m| m.app_user_id)
        .filter(|id| Some(*id) != actor && !id.is_nil())
        .collect();
    out.sort();
    out.dedup();
    out
}

impl Record for Notification {
    const DESC: ResourceDesc = ResourceDesc {
        search_columns: &["message"],
        ops: Ops {
            delete: Allow::Yes,
            ..Ops::READ_ONLY
        },
        summary: "Notifications: new channel comments and deliverable documents",
        ..ResourceDesc::new("notification", "notification", "Notification")
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::testing::parse;
    use serde_json::json;

    #[test]
    fn recipients_are_active_members_but_the_actor() {
        use crate::organization::{MemberStatus, OrganizationMember};
        let member = |n: u128, status: MemberStatus| {
            let mut m: OrganizationMember = parse(json!({}));
            m.app_user_id = Uuid::from_u128(n);
            m.status = status;
            m
        };
        let members = vec![
            member(1, MemberStatus::Active),
            member(2, MemberStatus::Pending),
            member(3, MemberStatus::Inactive),
            member(1, MemberStatus::Active),
            member(4, MemberStatus::Active),
        ];
        assert_eq!(
            recipients(&members, Some(Uuid::from_u128(4))),
            vec![Uuid::from_u128(1), Uuid::from_u128(2)]
        );
        assert_eq!(recipients(&members, None).len(), 3);
    }

    #[test]
    fn mark_read_once() {
        let mut n: Notification = parse(json!({"kind": "channel_comment", "message": "hi"}));
        assert!(!n.is_read);
        let t = DateTime::<Utc>::UNIX_EPOCH;
        assert!(n.mark_read(t));
        assert_eq!(n.read_at, Some(t));
        assert!(!n.mark_read(t + chrono::Duration::seconds(5)));
        assert_eq!(n.read_at, Some(t));
    }
}
