//! Alerts as of the moment of a read: the time-dependent computed fields of a deliverable
//! (`isLate`, `isAtRisk`, `effectiveDueDateIsLate`, `alertType`, `alertTypeOrdinal`) and a
//! delivery's `isLate`.
//!
//! A write cannot know when a record will be read, so it stores *instants* instead of answers
//! (`computed.lateAt`: from when the node or a node below it is late; `computed.atRiskUntil`:
//! until when one of them is at risk; `computed.effectiveDueAt`: when the effective due date
//! passes), and every read derives the answers from them and the request's clock: [`as_of`] on
//! the stored fields, [`patch_deliverable_text`] on a stored record's text, and [`derived`] for
//! the database, which filters, sorts and groups by the same rule written as SQL. The tree
//! computes the instants (`tree::compute`); the rules here only compare them with now. The
//! [`Window`] of a stored record ([`stored_window`]) is the moments its stored answers hold in:
//! the server keeps it beside the text, and a read inside it sends the text without a look.
//!
//! Instants are stored as [`stamp`]s, `YYYY-MM-DDTHH:MM:SSZ` (whole seconds, years 0 to 9999),
//! so that text order is time order, in SQL as in Rust. Comparisons are at whole seconds: an
//! instant counts as reached during the second it falls in (its fraction is ignored).

use std::sync::LazyLock;

use chrono::{DateTime, Datelike, NaiveDate, NaiveTime, TimeZone, Timelike, Utc};
use memchr::memmem::FinderRev;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::deliverable::AlertType;

/// An instant as the alert fields store it: `YYYY-MM-DDTHH:MM:SSZ`, the fraction of a second
/// dropped, the year held to 0..=9999 (earlier is the start of year 0, later the end of 9999).
pub fn stamp(t: DateTime<Utc>) -> String {
    // Written digit by digit: chrono's `format` walks a format string on every call, and
    // every read with alerts stamps its moment (a tenth of a read by id's instructions).
    let t = held(t);
    // chrono keeps a leap second as second 59 with a nanosecond past 10^9; `%S` prints 60.
    let second = t.second() + u32::from(t.nanosecond() >= 1_000_000_000);
    let mut out = String::with_capacity(20);
    for (n, width, after) in [
        (t.year() as u32, 4, '-'), // 0..=9999, held above
        (t.month(), 2, '-'),
        (t.day(), 2, 'T'),
        (t.hour(), 2, ':'),
        (t.minute(), 2, ':'),
        (second, 2, 'Z'),
    ] {
        for place in (0..width).rev() {
            out.push(char::from(b'0' + (n / 10u32.pow(place) % 10) as u8));
        }
        out.push(after);
    }
    out
}

/// `t` held to the years a [`stamp`] holds.
fn held(t: DateTime<Utc>) -> DateTime<Utc> {
    if t.year() < 0 {
        Utc.with_ymd_and_hms(0, 1, 1, 0, 0, 0).unwrap()
    } else if t.year() > 9999 {
        Utc.with_ymd_and_hms(9999, 12, 31, 23, 59, 59).unwrap()
    } else {
        t
    }
}

/// When a due date passes: a date alone (`YYYY-MM-DD`) at the end of that day in UTC (the
/// start of the next day), a date-time at that instant. `None` for text that is neither.
pub fn due_instant(text: &str) -> Option<DateTime<Utc>> {
    let text = text.trim();
    if let Ok(date) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        let next = date.succ_opt().unwrap_or(date);
        return Some(Utc.from_utc_datetime(&next.and_time(NaiveTime::MIN)));
    }
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The moment alerts are evaluated at: a request's clock reading, as the first 19 characters
/// of its [`stamp`] (`YYYY-MM-DDTHH:MM:SS`). Only made from a time, so it is always that form
/// (and can be written into SQL text as a literal).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AsOf {
    text: String,
    /// The same moment in whole seconds after the Unix epoch (what a [`Window`] holds).
    secs: i64,
}

impl AsOf {
    /// The moment `t`.
    pub fn at(t: DateTime<Utc>) -> AsOf {
        let mut text = stamp(t);
        text.truncate(19);
        // The seconds of the stamp (its year held to 0..=9999, its fraction dropped), not of
        // `t`, so that comparing seconds and comparing text agree.
        let secs = held(t).timestamp();
        AsOf { text, secs }
    }

    /// The moment `secs` seconds after the Unix epoch.
    pub fn from_secs(secs: i64) -> AsOf {
        AsOf::at(DateTime::from_timestamp(secs, 0).unwrap_or_default())
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whole seconds after the Unix epoch.
    pub fn secs(&self) -> i64 {
        self.secs
    }
}

/// The whole seconds after the Unix epoch of a stored instant (its first 19 characters,
/// `YYYY-MM-DDTHH:MM:SS`); `None` for text that does not start that way.
pub fn stamp_secs(text: &str) -> Option<i64> {
    let seconds = text.get(..19)?;
    chrono::NaiveDateTime::parse_from_str(seconds, "%Y-%m-%dT%H:%M:%S")
        .ok()
        .map(|t| t.and_utc().timestamp())
}

/// The stored text of an instant, up to its seconds (what is compared with an [`AsOf`]).
fn seconds_of(text: &str) -> &[u8] {
    let b = text.as_bytes();
    &b[..b.len().min(19)]
}

/// Whether the instant stored as `text` has been reached at `now` (null: never).
pub fn reached(text: Option<&str>, now: &AsOf) -> bool {
    text.is_some_and(|t| seconds_of(t) <= now.text.as_bytes())
}

/// Whether `now` is before the instant stored as `text` (null: no).
pub fn ahead(text: Option<&str>, now: &AsOf) -> bool {
    text.is_some_and(|t| seconds_of(t) > now.text.as_bytes())
}

/// What the time-dependent fields of a deliverable derive from, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Basis<'a> {
    /// The node or a node below it is on hold (a stored `alertType` of `on-hold`, which no
    /// clock changes).
    pub on_hold: bool,
    /// The node is done.
    pub done: bool,
    /// `computed.effectiveDueAt`.
    pub effective_due_at: Option<&'a str>,
    /// `computed.lateAt`.
    pub late_at: Option<&'a str>,
    /// `computed.atRiskUntil`.
    pub at_risk_until: Option<&'a str>,
}

/// The time-dependent computed fields of a deliverable at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Alerts {
    pub is_late: bool,
    pub is_at_risk: bool,
    pub effective_due_date_is_late: bool,
    pub alert_type: AlertType,
}

/// The alerts of a deliverable at `now`: late once `lateAt` is reached, at risk before
/// `atRiskUntil`, its effective due date late once `effectiveDueAt` is reached unless done,
/// and the alert the highest of on-hold, late, at-risk, no-risk that holds.
pub fn as_of(basis: &Basis, now: &AsOf) -> Alerts {
    let is_late = reached(basis.late_at, now);
    let is_at_risk = ahead(basis.at_risk_until, now);
    Alerts {
        is_late,
        is_at_risk,
        effective_due_date_is_late: !basis.done && reached(basis.effective_due_at, now),
        alert_type: alert_type_of(basis.on_hold, is_late, is_at_risk),
    }
}

/// The highest of on-hold, late, at-risk, no-risk that holds.
fn alert_type_of(on_hold: bool, is_late: bool, is_at_risk: bool) -> AlertType {
    if on_hold {
        AlertType::OnHold
    } else if is_late {
        AlertType::Late
    } else if is_at_risk {
        AlertType::AtRisk
    } else {
        AlertType::NoRisk
    }
}

/// The moments `[from, until)`, in whole seconds after the Unix epoch, at which a
/// deliverable's stored answers are those [`as_of`] gives: a read whose now is inside sends
/// the stored record as it is, without looking at its text (see [`stored_window`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub from: i64,
    pub until: i64,
}

impl Window {
    /// Every moment: answers that no instant changes.
    pub const ALWAYS: Window = Window {
        from: i64::MIN,
        until: i64::MAX,
    };

    pub fn contains(&self, now: &AsOf) -> bool {
        self.from <= now.secs && now.secs < self.until
    }

    /// The window as one integer, for a database column: its bounds held to what 32 bits of
    /// seconds after the Unix epoch hold (1970 to 2106), `from` in the high half, `until` in
    /// the low one. Holding the bounds only narrows the window, which stays right (a read
    /// outside it looks at the text); `None` when nothing is left. One column, not two: each
    /// column a read fetches costs about 250 instructions per record on SQLite.
    pub fn packed(&self) -> Option<i64> {
        let hold = |t: i64| t.clamp(0, i64::from(u32::MAX)) as u64;
        let (from, until) = (hold(self.from), hold(self.until));
        (from < until).then_some(((from << 32) | until) as i64)
    }

    /// The window [`Window::packed`] gives `packed`.
    pub fn unpacked(packed: i64) -> Window {
        let bits = packed as u64;
        Window {
            from: (bits >> 32) as i64,
            until: (bits & u64::from(u32::MAX)) as i64,
        }
    }

    /// Narrowed to the moments at which `reached(instant)` answers `answer`: from the instant
    /// on if it does, before it if not. `None` when no moment does.
    fn reached(&mut self, instant: Option<&str>, answer: bool) -> Option<()> {
        match instant {
            None => (!answer).then_some(()),
            Some(t) => {
                let t = stamp_secs(t)?;
                if answer {
                    self.from = self.from.max(t);
                } else {
                    self.until = self.until.min(t);
                }
                Some(())
            }
        }
    }

    /// Narrowed to the moments at which `ahead(instant)` answers `answer`.
    fn ahead(&mut self, instant: Option<&str>, answer: bool) -> Option<()> {
        match instant {
            None => (!answer).then_some(()),
            Some(t) => {
                let t = stamp_secs(t)?;
                if answer {
                    self.until = self.until.min(t);
                } else {
                    self.from = self.from.max(t);
                }
                Some(())
            }
        }
    }
}

/// Exactly the moments at which `as_of(basis, now)` answers `stored`, or `None` when there
/// are none (answers no moment gives, or an instant that is not a stamp).
///
/// Each answer compares now with one instant (`lateAt`, `atRiskUntil`, and `effectiveDueAt`
/// unless done; on-hold and done do not depend on now), so it holds on a half-line of moments,
/// and the moments where all hold are their intersection: from the latest instant whose
/// answer is "reached" to the earliest whose answer is "not yet". For the answers of a
/// write's now, that is from the latest instant at or before it to the earliest after it.
/// A clock that moves backwards leaves the window by its lower bound.
pub fn window(basis: &Basis, stored: &Alerts) -> Option<Window> {
    if stored.alert_type != alert_type_of(basis.on_hold, stored.is_late, stored.is_at_risk) {
        return None;
    }
    let mut w = Window::ALWAYS;
    w.reached(basis.late_at, stored.is_late)?;
    w.ahead(basis.at_risk_until, stored.is_at_risk)?;
    if basis.done {
        if stored.effective_due_date_is_late {
            return None;
        }
    } else {
        w.reached(basis.effective_due_at, stored.effective_due_date_is_late)?;
    }
    (w.from < w.until).then_some(w)
}

/// The statuses in which a delivery is over (received, delivered, cancelled): never late.
pub const DELIVERY_FINAL: &[&str] = &["received", "delivered", "cancelled"];

/// A delivery is late once its `plannedEndAt` is reached while it is not over.
pub fn delivery_is_late(status: &str, planned_end_at: Option<&str>, now: &AsOf) -> bool {
    !DELIVERY_FINAL.contains(&status) && reached(planned_end_at, now)
}

/// The part of a deliverable's stored `computed` that [`patch_deliverable_text`] rewrites:
/// from `isAtRisk` to the end, in the order `Computed` serializes it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Tail {
    is_at_risk: bool,
    is_late: bool,
    effective_due_date: Option<String>,
    effective_due_date_is_inherited: bool,
    effective_due_date_is_late: bool,
    alert_type: AlertType,
    alert_type_ordinal: i64,
    effective_due_at: Option<String>,
    late_at: Option<String>,
    at_risk_until: Option<String>,
}

/// A deliverable's stored record text with its alerts as of `now`; `None` when the stored
/// ones are already those (the common case, and the text is then answered as stored).
/// See [`patch_deliverable_bytes`].
pub fn patch_deliverable_text(text: &str, now: &AsOf) -> Option<String> {
    // The patch replaces ASCII members of valid text at ASCII boundaries: still valid.
    patch_deliverable_bytes(text.as_bytes(), now).and_then(|v| String::from_utf8(v).ok())
}

/// [`patch_deliverable_text`] on the stored bytes, as the reads get them from the database.
///
/// The text is found by structure, without parsing the record: `computed` is the last object
/// member before `isArchived`, `createdAt` and `updatedAt`, and its members from `isAtRisk` on
/// are the server's own values (booleans, dates, stamps), so the last `"alertTypeOrdinal":`
/// of the text is `computed`'s (a key a user wrote elsewhere comes before it, and a quote
/// inside a string is escaped). A text without these members (not written by this server) is
/// left as it is.
///
/// Every read of a deliverable goes through here (a hierarchy of 10,000 nodes, 10,000 times),
/// and nearly every record's stored answers are still right: that case only finds and compares
/// the stored members, allocating nothing and never validating or parsing the record. The
/// rewrite (an answer changed since the write) parses the tail of `computed` alone.
pub fn patch_deliverable_bytes(text: &[u8], now: &AsOf) -> Option<Vec<u8>> {
    let (start, end, stored) = StoredTail::locate(text)?;
    let tail = &text[start..end];
    let basis = Basis {
        on_hold: stored.alerts.alert_type == AlertType::OnHold,
        // Only asked when the effective due date has passed (below).
        done: false,
        effective_due_at: stored.effective_due_at,
        late_at: stored.late_at,
        at_risk_until: stored.at_risk_until,
    };
    let mut alerts = as_of(&basis, now);
    if alerts.effective_due_date_is_late && progress_done(&text[..start]) {
        alerts.effective_due_date_is_late = false;
    }
    if stored.alerts == alerts && stored.ordinal == alerts.alert_type.ordinal() {
        return None;
    }
    let mut members: Tail = serde_json::from_slice(&[b"{", tail, b"}"].concat()).ok()?;
    members.is_late = alerts.is_late;
    members.is_at_risk = alerts.is_at_risk;
    members.effective_due_date_is_late = alerts.effective_due_date_is_late;
    members.alert_type = alerts.alert_type;
    members.alert_type_ordinal = alerts.alert_type.ordinal();
    let members = serde_json::to_vec(&members).ok()?;
    let mut out = Vec::with_capacity(text.len() + 16);
    out.extend_from_slice(&text[..start]);
    out.extend_from_slice(&members[1..members.len() - 1]);
    out.extend_from_slice(&text[end..]);
    Some(out)
}

/// The [`Window`] of a deliverable's stored record text: the moments at which its stored
/// answers are those of the moment, so that [`patch_deliverable_bytes`] leaves it as it is.
/// `None` when there are none or the text is not of the server's form (a read then patches
/// it). The server computes it from the text it stores and keeps it beside the text, so that
/// a read in the window costs one comparison per record instead of a look at its text.
pub fn stored_window(text: &[u8]) -> Option<Window> {
    let (start, _, stored) = StoredTail::locate(text)?;
    if stored.ordinal != stored.alerts.alert_type.ordinal() {
        return None;
    }
    let basis = Basis {
        on_hold: stored.alerts.alert_type == AlertType::OnHold,
        done: progress_done(&text[..start]),
        effective_due_at: stored.effective_due_at,
        late_at: stored.late_at,
        at_risk_until: stored.at_risk_until,
    };
    window(&basis, &stored.alerts)
}

/// The width of a stored [`stamp`] with its quotes (`"YYYY-MM-DDTHH:MM:SSZ"`).
const STAMP_VALUE: usize = 22;

/// The stored answers and instants of a deliverable, read off the tail of its `computed`
/// (from `"isAtRisk":` to its closing brace) without parsing it.
#[derive(Debug, PartialEq)]
struct StoredTail<'a> {
    alerts: Alerts,
    ordinal: i64,
    effective_due_at: Option<&'a str>,
    late_at: Option<&'a str>,
    at_risk_until: Option<&'a str>,
}

impl<'a> StoredTail<'a> {
    /// The tail of a record's text: where it starts and ends, and what it says; read from the
    /// end ([`Self::from_end`]), else searched for. `None` for text without it.
    fn locate(text: &'a [u8]) -> Option<(usize, usize, StoredTail<'a>)> {
        if let Some(found) = StoredTail::from_end(text) {
            return Some(found);
        }
        // Searchers built once: building one per call costs more than the search itself.
        static ORDINAL: LazyLock<FinderRev<'static>> =
            LazyLock::new(|| FinderRev::new(b"\"alertTypeOrdinal\":"));
        static AT_RISK: LazyLock<FinderRev<'static>> =
            LazyLock::new(|| FinderRev::new(b"\"isAtRisk\":"));
        let ordinal = ORDINAL.rfind(text)?;
        let start = AT_RISK.rfind(&text[..ordinal])?;
        let end = ordinal + memchr::memchr(b'}', &text[ordinal..])?;
        Some((start, end, StoredTail::find(&text[start..end])?))
    }

    /// The tail as the server writes it, read backwards from the end of the record: `computed`
    /// closes at the last `}` before the record's own (the members after it, `isArchived`,
    /// `createdAt` and `updatedAt`, hold none), and its last members are these, in this order.
    /// Each step compares a known key and takes a value that is a literal, a number or a
    /// quoted date or stamp, so a record costs a few hundred instructions, whatever its size.
    /// Answers where the tail starts and ends, or `None` for any other shape (the caller then
    /// searches for the members).
    fn from_end(text: &'a [u8]) -> Option<(usize, usize, StoredTail<'a>)> {
        let end = memchr::memrchr(b'}', text.strip_suffix(b"}")?)?;
        let mut rest = &text[..end];
        let at_risk_until = Self::instant(Self::take_back(&mut rest, b",\"atRiskUntil\":")?)?;
        let late_at = Self::instant(Self::take_back(&mut rest, b",\"lateAt\":")?)?;
        let effective_due_at = Self::instant(Self::take_back(&mut rest, b",\"effectiveDueAt\":")?)?;
        let ordinal = Self::take_back(&mut rest, b",\"alertTypeOrdinal\":")?;
        let alert_type = Self::take_back(&mut rest, b",\"alertType\":")?;
        let due_is_late =
            Self::boolean(Self::take_back(&mut rest, b",\"effectiveDueDateIsLate\":")?)?;
        Self::take_back(&mut rest, b",\"effectiveDueDateIsInherited\":")?;
        Self::take_back(&mut rest, b",\"effectiveDueDate\":")?;
        let is_late = Self::boolean(Self::take_back(&mut rest, b",\"isLate\":")?)?;
        let is_at_risk = Self::boolean(Self::take_back(&mut rest, b"\"isAtRisk\":")?)?;
        let start = rest.len();
        let stored = StoredTail {
            alerts: Alerts {
                is_late,
                is_at_risk,
                effective_due_date_is_late: due_is_late,
                alert_type: Self::alert_type(alert_type)?,
            },
            ordinal: match ordinal {
                [d @ b'0'..=b'9'] => i64::from(d - b'0'),
                _ => return None,
            },
            effective_due_at,
            late_at,
            at_risk_until,
        };
        Some((start, end, stored))
    }

    /// Takes the last member of `rest` if its key (with the comma before it) is `key`: answers
    /// its value and leaves `rest` before the key. The key's length is known when compiled,
    /// so its comparison is a few wide loads rather than a call.
    #[inline(always)]
    fn take_back<const N: usize>(rest: &mut &'a [u8], key: &[u8; N]) -> Option<&'a [u8]> {
        let r: &'a [u8] = rest;
        let n = r.len();
        // The length of the value, from its last byte: the server's values here are literals,
        // one digit, or stamps of a fixed width, so most are known without a scan.
        let fixed = match r.last()? {
            b'e' if r.ends_with(b":true") => Some(4),
            b'e' if r.ends_with(b":false") => Some(5),
            b'l' if r.ends_with(b":null") => Some(4),
            b'0'..=b'9' if n >= 2 && r[n - 2] == b':' => Some(1),
            b'"' if n > STAMP_VALUE
                && r[n - STAMP_VALUE] == b'"'
                && r[n - STAMP_VALUE - 1] == b':' =>
            {
                Some(STAMP_VALUE)
            }
            _ => None,
        };
        let at = match fixed {
            Some(len) => n - len,
            // Values are a few bytes long: a plain scan beats setting up a vector search.
            None => match r.last()? {
                b'"' => r[..n - 1].iter().rposition(|&b| b == b'"')?,
                _ => r.iter().rposition(|&b| b == b':')? + 1,
            },
        };
        let (before, found) = r[..at].split_last_chunk::<N>()?;
        if found != key {
            return None;
        }
        *rest = before;
        Some(&r[at..])
    }

    fn alert_type(value: &[u8]) -> Option<AlertType> {
        Some(match value {
            b"\"no-risk\"" => AlertType::NoRisk,
            b"\"at-risk\"" => AlertType::AtRisk,
            b"\"late\"" => AlertType::Late,
            b"\"on-hold\"" => AlertType::OnHold,
            _ => return None,
        })
    }

    /// `None` when a member is missing or not of the server's form (then the text is left as
    /// it is): a record stored before the instants existed has no `lateAt`.
    ///
    /// One pass over the members (`"key":value`, separated by commas): every value here is a
    /// boolean, a number, null or a string the server wrote (a date or a stamp: no comma, no
    /// escaped quote).
    fn find(tail: &'a [u8]) -> Option<StoredTail<'a>> {
        let (mut is_late, mut is_at_risk, mut due_is_late) = (None, None, None);
        let (mut alert_type, mut ordinal) = (None, None);
        let (mut effective_due_at, mut late_at, mut at_risk_until) = (None, None, None);
        let mut rest = tail;
        while !rest.is_empty() {
            let body = rest.strip_prefix(b"\"")?;
            let close = memchr::memchr(b'"', body)?;
            let key = &body[..close];
            let after = body[close + 1..].strip_prefix(b":")?;
            let len = if after.first() == Some(&b'"') {
                2 + memchr::memchr(b'"', &after[1..])?
            } else {
                memchr::memchr(b',', after).unwrap_or(after.len())
            };
            let value = &after[..len];
            rest = &after[len..];
            if let Some(next) = rest.strip_prefix(b",") {
                rest = next;
            } else if !rest.is_empty() {
                return None;
            }
            match key {
                b"isAtRisk" => is_at_risk = Some(Self::boolean(value)?),
                b"isLate" => is_late = Some(Self::boolean(value)?),
                b"effectiveDueDateIsLate" => due_is_late = Some(Self::boolean(value)?),
                b"alertType" => alert_type = Some(Self::alert_type(value)?),
                b"alertTypeOrdinal" => {
                    ordinal = Some(std::str::from_utf8(value).ok()?.parse().ok()?)
                }
                b"effectiveDueAt" => effective_due_at = Some(Self::instant(value)?),
                b"lateAt" => late_at = Some(Self::instant(value)?),
                b"atRiskUntil" => at_risk_until = Some(Self::instant(value)?),
                _ => {}
            }
        }
        Some(StoredTail {
            alerts: Alerts {
                is_late: is_late?,
                is_at_risk: is_at_risk?,
                effective_due_date_is_late: due_is_late?,
                alert_type: alert_type?,
            },
            ordinal: ordinal?,
            effective_due_at: effective_due_at?,
            late_at: late_at?,
            at_risk_until: at_risk_until?,
        })
    }

    fn boolean(value: &[u8]) -> Option<bool> {
        match value {
            b"true" => Some(true),
            b"false" => Some(false),
            _ => None,
        }
    }

    /// A stored instant: `Some(None)` for null, `None` for anything not of its form.
    fn instant(value: &'a [u8]) -> Option<Option<&'a str>> {
        if value == b"null" {
            return Some(None);
        }
        let inner = value.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
        std::str::from_utf8(inner).ok().map(Some)
    }
}

/// Whether the record text before `computed` says `"progress":{"status":"done"`: `progress` is
/// the last member before `computed`, so its last occurrence is the record's.
fn progress_done(head: &[u8]) -> bool {
    static COMPUTED: LazyLock<FinderRev<'static>> =
        LazyLock::new(|| FinderRev::new(b"\"computed\":"));
    static PROGRESS: LazyLock<FinderRev<'static>> =
        LazyLock::new(|| FinderRev::new(b"\"progress\":"));
    let Some(computed) = COMPUTED.rfind(head) else {
        return false;
    };
    let Some(at) = PROGRESS.rfind(&head[..computed]) else {
        return false;
    };
    head[at + b"\"progress\":".len()..computed]
        .trim_ascii_start()
        .starts_with(b"{\"status\":\"done\"")
}

/// Whether stored records of the resource in `table` may need [`patch_stored`].
pub fn patches_stored(table: &str) -> bool {
    table == "deliverable"
}

/// The stored record text of a resource in `table` with its fields answered as of `now`;
/// `None` when it needs no change. (A delivery's `isLate` is set where its answers are
/// presented, which parses them anyway.)
pub fn patch_stored(table: &str, text: &str, now: &AsOf) -> Option<String> {
    match table {
        "deliverable" => patch_deliverable_text(text, now),
        _ => None,
    }
}

// ----- the same rules for the database ---------------------------------------------------------

/// A condition on a stored record at the moment of a read, for the database to evaluate (the
/// server writes it as SQL on both dialects). Paths are dotted field paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pred {
    /// The instant at the path is reached ([`reached`]).
    Reached(&'static str),
    /// The instant at the path is ahead ([`ahead`]).
    Ahead(&'static str),
    /// The text at the path is one of these (null or absent: none).
    Is(&'static str, &'static [&'static str]),
    Not(&'static Pred),
    Both(&'static Pred, &'static Pred),
}

/// A value a [`Derived`] field takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lit {
    Bool(bool),
    Text(&'static str),
    Int(i64),
}

impl Lit {
    pub fn to_json(self) -> Value {
        match self {
            Lit::Bool(b) => Value::Bool(b),
            Lit::Text(t) => Value::String(t.to_string()),
            Lit::Int(n) => Value::from(n),
        }
    }
}

/// A field whose answer depends on the moment of the read: the value of the first case whose
/// condition holds, else `otherwise`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Derived {
    pub cases: &'static [(Pred, Lit)],
    pub otherwise: Lit,
}

impl Derived {
    /// Every value the field can take, in the order of its cases.
    pub fn values(&self) -> Vec<Lit> {
        let mut out: Vec<Lit> = self.cases.iter().map(|(_, l)| *l).collect();
        out.push(self.otherwise);
        out
    }

    /// The field of a parsed `record` at `now` (what the SQL form answers).
    pub fn eval(&self, record: &Value, now: &AsOf) -> Lit {
        self.cases
            .iter()
            .find(|(p, _)| holds(p, record, now))
            .map_or(self.otherwise, |(_, l)| *l)
    }
}

fn text_at<'v>(record: &'v Value, path: &str) -> Option<&'v str> {
    path.split('.')
        .try_fold(record, |v, seg| v.get(seg))
        .and_then(Value::as_str)
}

/// Whether `pred` holds for a parsed `record` at `now`.
pub fn holds(pred: &Pred, record: &Value, now: &AsOf) -> bool {
    match pred {
        Pred::Reached(p) => reached(text_at(record, p), now),
        Pred::Ahead(p) => ahead(text_at(record, p), now),
        Pred::Is(p, values) => text_at(record, p).is_some_and(|t| values.contains(&t)),
        Pred::Not(p) => !holds(p, record, now),
        Pred::Both(a, b) => holds(a, record, now) && holds(b, record, now),
    }
}

const LATE: Pred = Pred::Reached("computed.lateAt");
const AT_RISK: Pred = Pred::Ahead("computed.atRiskUntil");
const ON_HOLD: Pred = Pred::Is("computed.alertType", &["on-hold"]);
const DUE_PASSED: Pred = Pred::Reached("computed.effectiveDueAt");
const DONE: Pred = Pred::Is("progress.status", &["done"]);
const NOT_DONE: Pred = Pred::Not(&DONE);

const IS_LATE: Derived = Derived {
    cases: &[(LATE, Lit::Bool(true))],
    otherwise: Lit::Bool(false),
};
const IS_AT_RISK: Derived = Derived {
    cases: &[(AT_RISK, Lit::Bool(true))],
    otherwise: Lit::Bool(false),
};
const DUE_IS_LATE: Derived = Derived {
    cases: &[(Pred::Both(&DUE_PASSED, &NOT_DONE), Lit::Bool(true))],
    otherwise: Lit::Bool(false),
};
const ALERT_TYPE: Derived = Derived {
    cases: &[
        (ON_HOLD, Lit::Text("on-hold")),
        (LATE, Lit::Text("late")),
        (AT_RISK, Lit::Text("at-risk")),
    ],
    otherwise: Lit::Text("no-risk"),
};
const ALERT_ORDINAL: Derived = Derived {
    cases: &[
        (ON_HOLD, Lit::Int(3)),
        (LATE, Lit::Int(2)),
        (AT_RISK, Lit::Int(1)),
    ],
    otherwise: Lit::Int(0),
};
const DELIVERY_LATE: Derived = Derived {
    cases: &[(
        Pred::Both(
            &Pred::Reached("plannedEndAt"),
            &Pred::Not(&Pred::Is("status", DELIVERY_FINAL)),
        ),
        Lit::Bool(true),
    )],
    otherwise: Lit::Bool(false),
};

/// The fields of the resource stored in `table` whose answer depends on the moment of the
/// read, by path: filters, sorts and group-and-count on them use this rule, not the stored
/// value.
pub fn derived(table: &str, path: &[String]) -> Option<&'static Derived> {
    let path: Vec<&str> = path.iter().map(String::as_str).collect();
    match (table, path.as_slice()) {
        ("deliverable", ["computed", field]) => match *field {
            "isLate" => Some(&IS_LATE),
            "isAtRisk" => Some(&IS_AT_RISK),
            "effectiveDueDateIsLate" => Some(&DUE_IS_LATE),
            "alertType" => Some(&ALERT_TYPE),
            "alertTypeOrdinal" => Some(&ALERT_ORDINAL),
            _ => None,
        },
        ("delivery", ["isLate"]) => Some(&DELIVERY_LATE),
        _ => None,
    }
}

/// Whether a resource table has any field [`derived`] knows.
pub fn has_derived(table: &str) -> bool {
    matches!(table, "deliverable" | "delivery")
}

#[cfg(test)]
mod tests;
