//! Webhooks (docs/events.md, "Webhooks"): the change feed pushed to a URL, signed, retried.
//!
//! The rules here are plain functions: which events a webhook takes (`matches`), what a URL
//! must look like (`check_url`), how long to wait before the next attempt (`backoff_ms`), and
//! which addresses a delivery may connect to (the SSRF guard, `AllowList::permits`). The
//! server does the I/O (resolving, connecting, signing).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::openapi::ToSchema;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::resource::{Ops, Record, ResourceDesc};
use crate::violation::Violation;

/// The shortest and longest secret.
pub const SECRET_MIN: usize = 16;
pub const SECRET_MAX: usize = 256;

/// A subscription of a URL to the organization's events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Webhook {
    /// Record id.
    pub id: Uuid,
    /// Owning organization, from the API key.
    pub organization_id: Uuid,
    /// Where deliveries are POSTed: `http://` or `https://`, with a host.
    pub url: String,
    /// The event types delivered: exact (`worker.archived`), a prefix pattern ending in `.*`
    /// (`deliverable.progress.*`), or `*` for every event.
    pub event_types: Vec<String>,
    /// The key of the `X-Prodops-Signature` HMAC (16 to 256 characters). Write-only: required
    /// on create, changed by a PATCH naming it, never answered.
    #[serde(default, skip_serializing)]
    #[schema(write_only)]
    pub secret: Option<String>,
    /// Whether events are delivered; events that occur while it is off are not delivered.
    #[serde(default = "yes")]
    pub is_active: bool,
    /// What the webhook is for.
    #[serde(default)]
    pub description: Option<String>,
    /// Creation time.
    #[serde(with = "crate::time::iso")]
    pub created_at: DateTime<Utc>,
    /// Last update time.
    #[serde(with = "crate::time::iso")]
    pub updated_at: DateTime<Utc>,
}

fn yes() -> bool {
    true
}

impl Record for Webhook {
    const DESC: ResourceDesc = ResourceDesc {
        search_columns: &["url", "description"],
        ops: Ops::ALL,
        summary: "Webhooks: the change feed pushed to a URL, signed, retried (admin keys only)",
        ..ResourceDesc::new("webhook", "webhook", "Webhook")
    };

    fn normalize(&mut self) {
        self.url = self.url.trim().to_string();
    }

    fn validate(&self) -> Vec<Violation> {
        let mut v = Vec::new();
        if let Err(m) = check_url(&self.url) {
            v.push(Violation::field("url", m));
        }
        if self.event_types.is_empty() {
            v.push(Violation::field(
                "eventTypes",
                "name at least one event type (`*` for every event)",
            ));
        }
        for t in &self.event_types {
            if let Err(m) = check_pattern(t) {
                v.push(Violation::field("eventTypes", m));
            }
        }
        if let Some(s) = &self.secret {
            let n = s.chars().count();
            if !(SECRET_MIN..=SECRET_MAX).contains(&n) {
                v.push(Violation::field(
                    "secret",
                    format!("must be {SECRET_MIN} to {SECRET_MAX} characters"),
                ));
            }
        }
        if self
            .description
            .as_ref()
            .is_some_and(|d| d.chars().count() > DESCRIPTION_MAX_LEN)
        {
            v.push(Violation::field(
                "description",
                format!("at most {DESCRIPTION_MAX_LEN} characters"),
            ));
        }
        v
    }

    /// The secret is write-only: the record never writes it out, so its schema (and the forms
    /// derived from it) lacks it; a request names it. The URL, event types and description as
    /// [`check_url`], [`check_pattern`] and the rules above take them.
    #[cfg(feature = "openapi")]
    fn refine_form(form: crate::openapi::Form, schema: &mut serde_json::Value) {
        use serde_json::json;
        let create = form == crate::openapi::Form::Create;
        let Some(props) = schema["properties"].as_object_mut() else {
            return;
        };
        props.insert(
            "secret".into(),
            json!({
                // A PATCH's `null` leaves the secret as it is.
                "type": if create { json!("string") } else { json!(["string", "null"]) },
                "minLength": SECRET_MIN,
                "maxLength": SECRET_MAX,
                "writeOnly": true,
                "description": "The key of the `X-Prodops-Signature` HMAC; required on create, never answered"
            }),
        );
        if let Some(url) = props.get_mut("url") {
            url["pattern"] = json!(URL_PATTERN);
            url["maxLength"] = json!(URL_MAX_LEN);
        }
        if let Some(types) = props.get_mut("eventTypes") {
            types["minItems"] = json!(1);
            types["items"] = json!({ "type": "string", "pattern": EVENT_TYPES_PATTERN });
        }
        if let Some(d) = props.get_mut("description") {
            d["maxLength"] = json!(DESCRIPTION_MAX_LEN);
        }
        if create {
            match schema["required"].as_array_mut() {
                Some(list) => list.push(json!("secret")),
                None => schema["required"] = json!(["secret"]),
            }
        }
    }
}

/// The longest URL and description a webhook takes.
pub const URL_MAX_LEN: usize = 2000;
pub const DESCRIPTION_MAX_LEN: usize = 1000;

/// A webhook URL as [`check_url`] takes it, for the OpenAPI document: http or https, a host
/// name or IPv4 address, a port from 1 to 65535, printable ASCII without spaces or `#` (IPv6
/// literal hosts, which it also takes, left out).
pub const URL_PATTERN: &str = r"^[Hh][Tt][Tt][Pp][Ss]?://[A-Za-z0-9.-]{1,253}(?::(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?(?:[/?][!-\x22$-~]*)?$";

/// An item of `eventTypes` as [`check_pattern`] takes it.
pub const EVENT_TYPES_PATTERN: &str = r"^(?:\*|[A-Za-z0-9_./-]{1,200}|[A-Za-z0-9_./-]{1,198}\.\*)$";

/// An event type pattern: `*`, an exact type, or a prefix ending in `.*`; types are letters,
/// digits and `_./-`, as `GET /event`'s `type`.
pub fn check_pattern(p: &str) -> Result<(), String> {
    if p == "*" {
        return Ok(());
    }
    let name = p.strip_suffix(".*").unwrap_or(p);
    let ok = !name.is_empty()
        && p.len() <= 200
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_./-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{p:?} is not an event type, `prefix.*` or `*` (letters, digits and _./-)"
        ))
    }
}

/// Whether an event of type `t` is delivered to a webhook with these patterns.
pub fn matches(patterns: &[String], t: &str) -> bool {
    patterns.iter().any(|p| {
        p == "*"
            || p == t
            || p.strip_suffix('*')
                .is_some_and(|prefix| prefix.ends_with('.') && t.starts_with(prefix))
    })
}

/// The exact types and the prefixes (`deliverable.progress.`) of the patterns, as the feed's
/// reader filters by; `None` when a `*` takes every event.
pub fn feed_filter(patterns: &[String]) -> Option<(Vec<String>, Vec<String>)> {
    if patterns.iter().any(|p| p == "*") {
        return None;
    }
    let mut exact = Vec::new();
    let mut prefixes = Vec::new();
    for p in patterns {
        match p.strip_suffix('*') {
            Some(prefix) => prefixes.push(prefix.to_string()),
            None => exact.push(p.clone()),
        }
    }
    Some((exact, prefixes))
}

/// The parts of a webhook URL the server needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlParts {
    pub https: bool,
    /// The host as written (an IPv6 literal without brackets).
    pub host: String,
    pub port: u16,
}

/// Checks a webhook URL: `http://` or `https://`, a host, an optional port, no user
/// information, no fragment, at most 2000 characters, no spaces or control characters.
pub fn check_url(url: &str) -> Result<UrlParts, String> {
    if url.len() > URL_MAX_LEN {
        return Err(format!("must be at most {URL_MAX_LEN} characters"));
    }
    if !url.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(
            "must be printable ASCII without spaces (percent-encode other characters)".into(),
        );
    }
    let lower = url.to_ascii_lowercase();
    let (https, rest) = if lower.starts_with("https://") {
        (true, &url[8..])
    } else if lower.starts_with("http://") {
        (false, &url[7..])
    } else {
        return Err("must start with http:// or https://".into());
    };
    if url.contains('#') {
        return Err("must not have a fragment (#)".into());
    }
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..end];
    if authority.contains('@') {
        return Err("must not carry a user name or password".into());
    }
    let (host, port) = if let Some(inner) = authority.strip_prefix('[') {
        let close = inner.find(']').ok_or("an IPv6 host must end with ]")?;
        let host = &inner[..close];
        host.parse::<Ipv6Addr>()
            .map_err(|_| "the bracketed host is not an IPv6 address")?;
        (host, &inner[close + 1..])
    } else {
        match authority.find(':') {
            Some(i) => (&authority[..i], &authority[i..]),
            None => (authority, ""),
        }
    };
    let port = match port {
        "" => {
            if https {
                443
            } else {
                80
            }
        }
        p => p
            .strip_prefix(':')
            .and_then(|p| p.parse::<u16>().ok())
            .filter(|p| *p > 0)
            .ok_or("the port must be a number from 1 to 65535")?,
    };
    if host.is_empty() {
        return Err("must name a host".into());
    }
    let host_ok = host.contains(':')
        || host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    if !host_ok || host.len() > 253 {
        return Err("the host must be a name or an IP address".into());
    }
    Ok(UrlParts {
        https,
        host: host.to_ascii_lowercase(),
        port,
    })
}

/// The wait before attempt `attempt + 1` after `attempt` failed attempts (1 or more): full
/// jitter over `base * 2^(attempt - 1)`, capped at `cap`. `random` is uniform in `[0, 1)`.
pub fn backoff_ms(attempt: u32, base_ms: u64, cap_ms: u64, random: f64) -> u64 {
    let exp = attempt.saturating_sub(1).min(40);
    let ceiling = base_ms.saturating_mul(1u64 << exp).min(cap_ms);
    let r = random.clamp(0.0, 1.0);
    ((ceiling as f64) * r) as u64
}

/// Whether an address is on the public internet: not loopback, private, link-local,
/// shared (100.64/10), unspecified, broadcast, multicast, documentation or reserved (and for
/// IPv6 also unique-local, and IPv4 embedded in IPv6 judged as IPv4).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public_v4(v4);
            }
            let s = v6.segments();
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
                || (s[0] & 0xffc0) == 0xfe80 // link local fe80::/10
                || (s[0] & 0xffc0) == 0xfec0 // site local (deprecated)
                || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
                || (s[0] == 0x64 && s[1] == 0xff9b) // NAT64 to IPv4
                || (s[0..6] == [0, 0, 0, 0, 0, 0])) // IPv4-compatible, deprecated
        }
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let o = ip.octets();
    !(ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || o[0] == 0
        || (o[0] == 100 && (o[1] & 0xc0) == 64) // shared 100.64/10
        || (o[0] == 192 && o[1] == 0 && o[2] == 0) // IETF 192.0.0/24
        || (o[0] == 198 && (o[1] & 0xfe) == 18) // benchmarking 198.18/15
        || o[0] >= 240) // reserved
}

/// One entry of the allowed hosts: a host name, an address, or a CIDR range.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Allowed {
    Host(String),
    Net(IpAddr, u8),
}

/// The hosts and ranges a delivery may reach although they are not public
/// (`PRODOPS_WEBHOOK_ALLOW_HOSTS`: `127.0.0.1,10.0.0.0/8,hooks.internal`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList(Vec<Allowed>);

impl AllowList {
    /// Parses a comma-separated list; an entry that is neither a host name, an address nor a
    /// CIDR range is an error naming it.
    pub fn parse(list: &str) -> Result<AllowList, String> {
        let mut out = Vec::new();
        for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            if let Some((addr, bits)) = entry.split_once('/') {
                let ip: IpAddr = addr
                    .parse()
                    .map_err(|_| format!("{entry:?} is not a CIDR range"))?;
                let max = if ip.is_ipv4() { 32 } else { 128 };
                let bits: u8 = bits
                    .parse()
                    .ok()
                    .filter(|b| *b <= max)
                    .ok_or_else(|| format!("{entry:?} is not a CIDR range"))?;
                out.push(Allowed::Net(ip, bits));
            } else if let Ok(ip) = entry.trim_matches(['[', ']']).parse::<IpAddr>() {
                out.push(Allowed::Net(ip, if ip.is_ipv4() { 32 } else { 128 }));
            } else if check_url(&format!("http://{entry}/")).is_ok() {
                out.push(Allowed::Host(entry.to_ascii_lowercase()));
            } else {
                return Err(format!("{entry:?} is not a host, address or CIDR range"));
            }
        }
        Ok(AllowList(out))
    }

    /// Whether a delivery to `host` (as the URL names it) may connect to `ip`: a public
    /// address always; another one only when the host or a range holding the address is
    /// listed.
    pub fn permits(&self, host: &str, ip: IpAddr) -> bool {
        is_public(ip)
            || self.0.iter().any(|a| match a {
                Allowed::Host(h) => h.eq_ignore_ascii_case(host),
                Allowed::Net(net, bits) => in_net(ip, *net, *bits),
            })
    }
}

fn in_net(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            (u32::from(a) & mask) == (u32::from(n) & mask)
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            (u128::from(a) & mask) == (u128::from(n) & mask)
        }
        _ => false,
    }
}

/// The status of one delivery of one event to one webhook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WebhookDeliveryStatus {
    /// Waiting for its next attempt (or being attempted).
    Pending,
    /// A receiver answered 2xx.
    Delivered,
    /// Every attempt failed (or it cannot be delivered); `redeliver` queues it again.
    Dead,
}

/// The most pages, and rows per page, a webhook's delivery log reads.
pub const LOG_MAX_PAGE: u64 = 1_000_000;
pub const LOG_MAX_PAGE_SIZE: u64 = 1000;

impl WebhookDeliveryStatus {
    /// Every status, as [`as_str`](WebhookDeliveryStatus::as_str) writes it.
    pub const NAMES: &'static [&'static str] = &["pending", "delivered", "dead"];

    pub fn as_str(self) -> &'static str {
        match self {
            WebhookDeliveryStatus::Pending => "pending",
            WebhookDeliveryStatus::Delivered => "delivered",
            WebhookDeliveryStatus::Dead => "dead",
        }
    }

    pub fn parse(s: &str) -> Option<WebhookDeliveryStatus> {
        match s {
            "pending" => Some(WebhookDeliveryStatus::Pending),
            "delivered" => Some(WebhookDeliveryStatus::Delivered),
            "dead" => Some(WebhookDeliveryStatus::Dead),
            _ => None,
        }
    }
}

/// One row of a webhook's delivery log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookDelivery {
    /// Delivery id (`X-Prodops-Delivery-Id`).
    pub id: Uuid,
    pub webhook_id: Uuid,
    /// The event delivered (`X-Prodops-Event-Id`): deduplicate by it.
    pub event_id: Uuid,
    /// The event's cursor in the feed.
    pub cursor: String,
    pub event_type: String,
    pub status: WebhookDeliveryStatus,
    /// Attempts made so far.
    pub attempts: u32,
    /// When the next attempt is due (pending deliveries).
    pub next_attempt_at: Option<String>,
    /// The receiver's status code of the last attempt.
    pub last_status_code: Option<u16>,
    /// Why the last attempt failed (time-out, connection refused, refused address, ...).
    pub last_error: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    /// When a receiver accepted it.
    pub delivered_at: Option<String>,
}

/// `POST /webhook/{id}/redeliver`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RedeliverRequest {
    /// Queue the delivery of this event again (whatever its status). Without it, every dead
    /// delivery of the webhook is queued again.
    #[serde(default)]
    pub event_id: Option<Uuid>,
}

/// The answer of `POST /webhook/{id}/redeliver`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RedeliverResult {
    /// How many deliveries were queued again (attempts start over).
    pub requeued: u64,
}

/// The answer of `POST /webhook/{id}/test`: how the receiver took a `webhook.ping` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookTestResult {
    /// Whether the receiver answered 2xx.
    pub delivered: bool,
    /// The receiver's status code, when it answered.
    pub status_code: Option<u16>,
    /// Why it failed (time-out, refused address, ...).
    pub error: Option<String>,
    /// The ping's event id.
    pub event_id: Uuid,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::testing::parse;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn urls_are_checked() {
        let p = check_url("https://hooks.example.com/x?y=1").unwrap();
        assert_eq!(
            (p.https, p.host.as_str(), p.port),
            (true, "hooks.example.com", 443)
        );
        let p = check_url("http://127.0.0.1:8081").unwrap();
        assert_eq!((p.host.as_str(), p.port), ("127.0.0.1", 8081));
        let p = check_url("http://[::1]:9/").unwrap();
        assert_eq!((p.host.as_str(), p.port), ("::1", 9));
        for bad in [
            "ftp://x",
            "http://",
            "http:///a",
            "http://u:p@h/",
            "http://h:0/",
            "http://h:99999/",
            "http://h/#f",
            "http://h /",
            "http://h/\u{e9}",
            "http://[zz]/",
            "http://a_b/",
            "hooks.example.com",
        ] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_record_names_its_bad_fields() {
        let w: Webhook = parse(json!({"url": "ftp://x", "eventTypes": ["a*"], "secret": "short"}));
        let fields: Vec<_> = w.validate().into_iter().map(|v| v.field).collect();
        assert_eq!(
            fields,
            [
                Some("url".to_string()),
                Some("eventTypes".to_string()),
                Some("secret".to_string())
            ]
        );
        let w: Webhook = parse(
            json!({"url": "http://h/", "eventTypes": ["*", "worker.*", "worker.created"], "secret": "0123456789abcdef"}),
        );
        assert!(w.validate().is_empty());
        assert!(w.is_active);
        // The secret is never written out.
        assert!(serde_json::to_value(&w).unwrap().get("secret").is_none());
    }

    #[test]
    fn patterns_match_like_the_feed_reader() {
        let p = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(matches(&p(&["*"]), "worker.created"));
        assert!(matches(
            &p(&["deliverable.progress.*"]),
            "deliverable.progress.done"
        ));
        assert!(!matches(
            &p(&["deliverable.progress.*"]),
            "deliverable.updated"
        ));
        assert!(matches(&p(&["worker.created"]), "worker.created"));
        assert!(!matches(&p(&["worker.created"]), "worker.created2"));
        assert_eq!(feed_filter(&p(&["a", "*"])), None);
        assert_eq!(
            feed_filter(&p(&["a.b", "c.*"])),
            Some((p(&["a.b"]), p(&["c."])))
        );
    }

    #[test]
    fn the_guard_refuses_private_addresses_unless_listed() {
        let none = AllowList::default();
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:10.0.0.1",
            "::ffff:127.0.0.1",
        ] {
            assert!(!none.permits("h", ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "2606:4700::1111", "8.8.8.8"] {
            assert!(none.permits("h", ip.parse().unwrap()), "{ip}");
        }
        let list = AllowList::parse("127.0.0.1, 10.0.0.0/8,hooks.internal").unwrap();
        assert!(list.permits("x", "127.0.0.1".parse().unwrap()));
        assert!(!list.permits("x", "127.0.0.2".parse().unwrap()));
        assert!(list.permits("x", "10.200.0.1".parse().unwrap()));
        assert!(list.permits("x", "::ffff:10.200.0.1".parse().unwrap()));
        assert!(list.permits("HOOKS.internal", "192.168.0.9".parse().unwrap()));
        assert!(!list.permits("other", "192.168.0.9".parse().unwrap()));
        assert!(AllowList::parse("10.0.0.0/33").is_err());
        assert!(AllowList::parse("a b").is_err());
    }

    #[test]
    fn statuses_round_trip() {
        for s in [
            WebhookDeliveryStatus::Pending,
            WebhookDeliveryStatus::Delivered,
            WebhookDeliveryStatus::Dead,
        ] {
            assert_eq!(WebhookDeliveryStatus::parse(s.as_str()), Some(s));
            assert_eq!(json!(s), json!(s.as_str()));
        }
    }

    proptest! {
        #[test]
        fn backoff_stays_under_its_doubling_ceiling_and_the_cap(
            attempt in 1u32..80, base in 1u64..10_000, cap in 1u64..10_000_000, r in 0.0f64..1.0
        ) {
            let wait = backoff_ms(attempt, base, cap, r);
            let ceiling = base.saturating_mul(1u64 << (attempt - 1).min(40)).min(cap);
            prop_assert!(wait <= ceiling);
            prop_assert!(wait <= cap);
            // Full jitter: the same draw scales with the ceiling.
            prop_assert_eq!(backoff_ms(attempt, base, cap, 0.0), 0);
        }

        #[test]
        fn a_listed_range_permits_exactly_its_addresses(a in any::<u32>(), n in any::<u32>(), bits in 0u8..=32) {
            let list = AllowList::parse(&format!("{}/{bits}", Ipv4Addr::from(n))).unwrap();
            let ip = IpAddr::V4(Ipv4Addr::from(a));
            let mask = if bits == 0 { 0 } else { u32::MAX << (32 - bits) };
            let inside = (a & mask) == (n & mask);
            prop_assert_eq!(list.permits("h", ip), inside || is_public(ip));
        }
    }
}
