//! Notifications (spec 4.13): marking a channel's comments or a deliverable's documents read.

use super::endpoint::{Access, Cli, Empty, Json, Perm, action, flag};

const UPDATE: Access = Access::Key(&[("Notification", Perm::Update)]);

action! {
    /// `POST /notification/read-channel-comments`.
    ReadChannelComments: Post "/notification/read-channel-comments" {
        operation: "post_notification_read_channel_comments",
        tag: "notification",
        access: UPDATE,
        path: (),
        query: (),
        body: Json<crate::notification::ReadChannelComments>,
        answer: Empty,
        status: 204,
        outcome: "Done",
        summary: "Mark a channel's comment notifications read",
        description: "",
        cli: Cli {
            command: "notification",
            verb: "read-channel-comments",
            about: "Marks a channel's comment notifications read",
            example: "prodops notification read-channel-comments --channel-id C",
            flags: &[
                flag("channelId", "channel-id", "The channel"),
                flag("appUserId", "app-user-id", "Only this account's notifications"),
            ],
        },
    }
}

action! {
    /// `POST /notification/read-deliverable-documents`.
    ReadDeliverableDocuments: Post "/notification/read-deliverable-documents" {
        operation: "post_notification_read_deliverable_documents",
        tag: "notification",
        access: UPDATE,
        path: (),
        query: (),
        body: Json<crate::notification::ReadDeliverableDocuments>,
        answer: Empty,
        status: 204,
        outcome: "Done",
        summary: "Mark a deliverable's document notifications read",
        description: "",
        cli: Cli {
            command: "notification",
            verb: "read-deliverable-documents",
            about: "Marks a deliverable's document notifications read",
            example: "prodops notification read-deliverable-documents --deliverable-id D",
            flags: &[
                flag("deliverableId", "deliverable-id", "The deliverable"),
                flag("appUserId", "app-user-id", "Only this account's notifications"),
            ],
        },
    }
}
