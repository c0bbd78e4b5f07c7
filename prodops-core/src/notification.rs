//! Notifications (spec 2.15, 4.13): what a user is told about new comments and documents.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
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
    pub read_at: Option<DateTime<Utc>>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last update time.
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
