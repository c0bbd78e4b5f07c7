//! Organization members (spec 4.12): invite, accept, resend, deactivate, reactivate, and the
//! outbox of messages waiting to be sent. Every member action needs an admin key, or both
//! `User.Read` and `User.Update` (an invitation also `User.Create`).

use uuid::Uuid;

use super::endpoint::{
    Access, Cli, Empty, FreePage, Json, NoBody, ParamKind, ParamValues, Perm, QueryArgs,
    QueryParam, action, flag, push,
};
use crate::organization::{InviteRequest, OrganizationMember};

const MEMBERS: Access = Access::Key(&[("User", Perm::Read), ("User", Perm::Update)]);

/// The filters of `GET /outbox`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutboxQuery {
    /// Only messages of this kind (`invitation`).
    pub kind: Option<String>,
    /// Only messages to this address.
    pub recipient: Option<String>,
}

impl QueryArgs for OutboxQuery {
    const PARAMS: &'static [QueryParam] = &[
        QueryParam {
            name: "kind",
            kind: ParamKind::Text,
            required: false,
            description: "only messages of this kind",
            values: ParamValues::Any,
        },
        QueryParam {
            name: "recipient",
            kind: ParamKind::Text,
            required: false,
            description: "only messages to this address",
            values: ParamValues::Any,
        },
    ];
    fn pairs(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        push(&mut out, "kind", self.kind.as_ref());
        push(&mut out, "recipient", self.recipient.as_ref());
        out
    }
}

action! {
    /// `POST /organization-member`: an invitation.
    Invite: Post "/organization-member" {
        operation: "organization_member_create",
        tag: "organization-member",
        access: Access::Key(&[("User", Perm::Read), ("User", Perm::Update), ("User", Perm::Create)]),
        path: (),
        query: (),
        body: Json<InviteRequest>,
        answer: Json<OrganizationMember>,
        status: 201,
        outcome: "The member",
        summary: "Invite a member (queues the invitation message)",
        description: "",
        cli: Cli {
            command: "member",
            verb: "invite",
            about: "Invites a member (creates the account if needed); the invitation waits in the outbox",
            example: "prodops member invite --email ann@example.com --role-id R",
            flags: &[
                flag("email", "email", "Email address"),
                flag("name", "name", "Name of a brand-new account"),
            ],
        },
    }
}

action! {
    /// `POST /organization-member/accept-invitation`.
    AcceptInvitation: Post "/organization-member/accept-invitation" {
        operation: "post_organization_member_accept_invitation",
        tag: "organization-member",
        access: Access::Open,
        path: (),
        query: (),
        body: Json<crate::organization::AcceptInvitation>,
        answer: Json<OrganizationMember>,
        status: 200,
        outcome: "The member",
        summary: "Accept an invitation (no API key: the token is the credential)",
        description: "",
        cli: Cli {
            command: "member",
            verb: "accept",
            about: "Accepts an invitation",
            example: "prodops member accept --token inv_...",
            flags: &[flag("token", "token", "The invitation token (inv_...)")],
        },
    }
}

action! {
    /// `POST /organization-member/{id}/resend-invitation`.
    ResendInvitation: Post "/organization-member/{id}/resend-invitation" {
        operation: "post_organization_member_id_resend_invitation",
        tag: "organization-member",
        access: MEMBERS,
        path: Uuid,
        query: (),
        body: NoBody,
        answer: Empty,
        status: 204,
        outcome: "Done",
        summary: "Resend an invitation",
        description: "",
        cli: Cli {
            command: "member",
            verb: "resend-invitation",
            about: "Sends a new invitation (earlier tokens stop working)",
            example: "prodops member resend-invitation ID",
            flags: &[],
        },
    }
}

action! {
    /// `POST /organization-member/{id}/deactivate`.
    Deactivate: Post "/organization-member/{id}/deactivate" {
        operation: "post_organization_member_id_deactivate",
        tag: "organization-member",
        access: MEMBERS,
        path: Uuid,
        query: (),
        body: NoBody,
        answer: Empty,
        status: 204,
        outcome: "Done",
        summary: "Deactivate a member",
        description: "",
        cli: Cli {
            command: "member",
            verb: "deactivate",
            about: "Deactivates a member and revokes open invitations",
            example: "prodops member deactivate ID",
            flags: &[],
        },
    }
}

action! {
    /// `POST /organization-member/{id}/reactivate`.
    Reactivate: Post "/organization-member/{id}/reactivate" {
        operation: "post_organization_member_id_reactivate",
        tag: "organization-member",
        access: MEMBERS,
        path: Uuid,
        query: (),
        body: NoBody,
        answer: Empty,
        status: 204,
        outcome: "Done",
        summary: "Reactivate a member",
        description: "",
        cli: Cli {
            command: "member",
            verb: "reactivate",
            about: "Reactivates a member",
            example: "prodops member reactivate ID",
            flags: &[],
        },
    }
}

action! {
    /// `GET /outbox`.
    Outbox: Get "/outbox" {
        operation: "get_outbox",
        tag: "organization-member",
        access: Access::Admin,
        path: (),
        query: OutboxQuery,
        body: NoBody,
        answer: FreePage,
        status: 200,
        outcome: "The messages",
        summary: "Outgoing messages, oldest first (admin keys only)",
        description: "",
        cli: Cli {
            command: "member",
            verb: "outbox",
            about: "Outgoing messages (invitations) waiting to be sent; admin keys only",
            example: "prodops member outbox --kind invitation --recipient ann@example.com",
            flags: &[
                flag("kind", "kind", "For example invitation"),
                flag("recipient", "recipient", "Email address"),
            ],
        },
    }
}
