//! Webhooks (docs/events.md, "Webhooks"): the actions beside the standard `/webhook`
//! endpoints. Admin keys only, like the resource itself.

use uuid::Uuid;

use super::endpoint::{
    Access, Cli, Json, NoBody, OptionalJson, PageOf, ParamKind, ParamValues, QueryArgs, QueryParam,
    action, flag, push,
};
use crate::webhook::{
    LOG_MAX_PAGE, LOG_MAX_PAGE_SIZE, RedeliverRequest, RedeliverResult, WebhookDelivery,
    WebhookDeliveryStatus, WebhookTestResult,
};

/// The parameters of `GET /webhook/{id}/deliveries`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeliveryQuery {
    /// Only deliveries with this status (`pending`, `delivered`, `dead`).
    pub status: Option<String>,
    /// Page (1-based).
    pub page: Option<u64>,
    /// Rows per page (1 to 1000, default 100).
    pub page_size: Option<u64>,
}

impl QueryArgs for DeliveryQuery {
    const PARAMS: &'static [QueryParam] = &[
        QueryParam {
            name: "status",
            kind: ParamKind::Text,
            required: false,
            description: "Only deliveries with this status: pending, delivered or dead",
            values: ParamValues::OneOf(WebhookDeliveryStatus::NAMES),
        },
        QueryParam {
            name: "page",
            kind: ParamKind::Integer,
            required: false,
            description: "1-based page",
            values: ParamValues::Range {
                min: 1,
                max: LOG_MAX_PAGE,
            },
        },
        QueryParam {
            name: "pageSize",
            kind: ParamKind::Integer,
            required: false,
            description: "records per page",
            values: ParamValues::Range {
                min: 1,
                max: LOG_MAX_PAGE_SIZE,
            },
        },
    ];
    fn pairs(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        push(&mut out, "status", self.status.as_ref());
        push(&mut out, "page", self.page);
        push(&mut out, "pageSize", self.page_size);
        out
    }
}

action! {
    /// `POST /webhook/{id}/redeliver`.
    Redeliver: Post "/webhook/{id}/redeliver" {
        operation: "post_webhook_redeliver",
        tag: "webhook",
        access: Access::Admin,
        path: Uuid,
        query: (),
        body: OptionalJson<RedeliverRequest>,
        answer: Json<RedeliverResult>,
        status: 200,
        outcome: "How many deliveries were queued again",
        summary: "Queue deliveries of a webhook again (admin keys only)",
        description: "With `eventId`, that event's delivery (any status; 404 when the webhook has \
             none for it); without, every dead delivery of the webhook. Attempts start over.",
        cli: Cli {
            command: "webhook",
            verb: "redeliver",
            about: "Queues a webhook's dead deliveries (or one event's) again",
            example: "prodops webhook redeliver ID --event-id E",
            flags: &[flag("eventId", "event-id", "Only this event's delivery")],
        },
    }
}

action! {
    /// `POST /webhook/{id}/test`.
    Test: Post "/webhook/{id}/test" {
        operation: "post_webhook_test",
        tag: "webhook",
        access: Access::Admin,
        path: Uuid,
        query: (),
        body: NoBody,
        answer: Json<WebhookTestResult>,
        status: 200,
        outcome: "How the receiver took the ping",
        summary: "Send a signed `webhook.ping` event now (admin keys only)",
        description: "One attempt, not retried and not logged, under the same signature, \
             address guard and time-out as deliveries; answered whatever the receiver said.",
        no_dry_run: "it sends a request to the receiver and writes nothing",
        cli: Cli {
            command: "webhook",
            verb: "test",
            about: "Sends a signed ping to a webhook and shows how the receiver answered",
            example: "prodops webhook test ID",
            flags: &[],
        },
    }
}

action! {
    /// `GET /webhook/{id}/deliveries`.
    Deliveries: Get "/webhook/{id}/deliveries" {
        operation: "get_webhook_deliveries",
        tag: "webhook",
        access: Access::Admin,
        path: Uuid,
        query: DeliveryQuery,
        body: NoBody,
        answer: PageOf<WebhookDelivery>,
        status: 200,
        outcome: "The delivery log",
        summary: "A webhook's delivery log, newest first (admin keys only)",
        description: "",
        cli: Cli {
            command: "webhook",
            verb: "deliveries",
            about: "A webhook's delivery log, newest first; admin keys only",
            example: "prodops webhook deliveries ID --status dead",
            flags: &[flag("status", "status", "pending, delivered or dead")],
        },
    }
}
