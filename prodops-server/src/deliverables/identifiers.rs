//! Deliverable identifiers (spec 2.1: "auto-generated"): a deliverable created without one
//! (absent, null, empty or blank) gets `D-` and the next number of its organization, at least
//! six digits (`D-000001`, `D-000002`, ..., `D-1000000`); a given identifier is kept as given
//! (trimmed). An update never clears it: a blank identifier in a PATCH keeps the stored one.
//!
//! The numbers come from one counter row per organization (`identifier_counters`), moved with
//! `INSERT .. ON CONFLICT DO UPDATE .. RETURNING` in the write transaction: the row stays locked
//! until the transaction ends (PostgreSQL's row lock; SQLite has one writer), so concurrent
//! writers, on any number of server processes, never take the same number, and a transaction
//! that rolls back gives its numbers back. An identifier a user gives in the generated form
//! (`D-` and digits) moves the counter past its number, so a generated one never repeats it.
//!
//! A bulk write takes numbers in blocks (`Block`, kept in the call's `ctx.deferred`): one
//! statement per block, not per record, and the block's unused tail goes back to the counter
//! at the end of the call (`end_bulk`).

use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::http::context::Ctx;
use crate::http::error::ApiResult;
// The generated form of identifiers and the counter's SQL live in the store, whose migration
// backfills the identifiers of older databases with them.
use crate::store::Tx;
use crate::store::deliverables::take_numbers;
pub use crate::store::deliverables::{PREFIX, format, number_of};

/// The first block a bulk call takes; each next one is twice as large, up to [`MAX_BLOCK`].
const FIRST_BLOCK: i64 = 32;
const MAX_BLOCK: i64 = 8192;

/// Takes `count` numbers of the organization's counter, none below `at_least`; answers the
/// first. `count` 0 only moves the counter to at least `at_least` (and locks its row).
fn take(tx: &mut dyn Tx, org: Uuid, count: i64, at_least: i64) -> ApiResult<i64> {
    Ok(take_numbers(tx, org, count, at_least)?)
}

/// The numbers a bulk call has taken and not used yet: `next..end`.
#[derive(Default)]
struct Block {
    next: i64,
    end: i64,
    /// The size of the last block taken.
    size: i64,
}

/// Whether an identifier field counts as not given.
fn blank(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.trim().is_empty(),
        Some(_) => false,
    }
}

/// Gives a new deliverable's candidate its identifier when it has none; a given identifier in
/// the generated form moves the counter past it.
pub fn on_create(tx: &mut dyn Tx, ctx: &Ctx, candidate: &mut Map<String, Value>) -> ApiResult<()> {
    let given = candidate.get("identifier");
    if blank(given) {
        let n = next_number(tx, ctx)?;
        candidate.insert("identifier".into(), json!(format(n)));
        return Ok(());
    }
    if let Some(n) = given.and_then(Value::as_str).and_then(number_of) {
        skip_past(tx, ctx, n)?;
    }
    Ok(())
}

/// An update that leaves the identifier blank keeps the stored one (an identifier is never
/// cleared: a re-import of rows whose identifier cell is empty changes nothing); a change to
/// one in the generated form moves the counter past it.
pub fn on_update(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    old: &Value,
    candidate: &mut Map<String, Value>,
) -> ApiResult<()> {
    let stored = old.get("identifier").filter(|v| !blank(Some(v)));
    if blank(candidate.get("identifier")) {
        let kept = match stored {
            Some(v) => v.clone(),
            None => json!(format(next_number(tx, ctx)?)),
        };
        candidate.insert("identifier".into(), kept);
        return Ok(());
    }
    let new = candidate.get("identifier").and_then(Value::as_str);
    if new != stored.and_then(Value::as_str)
        && let Some(n) = new.and_then(number_of)
    {
        skip_past(tx, ctx, n)?;
    }
    Ok(())
}

/// The next number: one statement outside a bulk call, else from the call's block.
fn next_number(tx: &mut dyn Tx, ctx: &Ctx) -> ApiResult<i64> {
    let Some(deferred) = &ctx.deferred else {
        return take(tx, ctx.org(), 1, 0);
    };
    if let Some(n) = deferred.with(|b: &mut Block| {
        (b.next < b.end).then(|| {
            b.next += 1;
            b.next - 1
        })
    }) {
        return Ok(n);
    }
    let size = deferred.with(|b: &mut Block| (b.size * 2).clamp(FIRST_BLOCK, MAX_BLOCK));
    let first = take(tx, ctx.org(), size, 0)?;
    deferred.with(|b: &mut Block| {
        *b = Block {
            next: first + 1,
            end: first + size,
            size,
        }
    });
    Ok(first)
}

/// Makes sure no number up to `n` is generated from now on.
fn skip_past(tx: &mut dyn Tx, ctx: &Ctx, n: i64) -> ApiResult<()> {
    if let Some(deferred) = &ctx.deferred {
        // Numbers of the call's block up to `n` are simply not used; a number past the block
        // moves the counter, as outside a bulk call.
        let in_block = deferred.with(|b: &mut Block| {
            if b.end == 0 || n >= b.end {
                return false;
            }
            b.next = b.next.max(n.saturating_add(1));
            true
        });
        if in_block {
            return Ok(());
        }
    }
    take(tx, ctx.org(), 0, n.saturating_add(1))?;
    Ok(())
}

/// The end of a bulk call: the unused tail of its block goes back to the counter (the call
/// still holds the counter row, so nobody took a number after it).
pub fn end_bulk(tx: &mut dyn Tx, ctx: &Ctx) -> ApiResult<()> {
    let Some(block) = ctx.deferred.as_ref().and_then(|d| d.take::<Block>()) else {
        return Ok(());
    };
    if block.next < block.end {
        crate::store::deliverables::give_back_numbers(tx, ctx.org(), block.next, block.end)?;
    }
    Ok(())
}

/// Gives the organization's deliverables without an identifier one each, in creation order,
/// numbered after every number its identifiers and its counter already use; answers how many
/// (`store::deliverables::backfill_identifiers_of`, also run by the migration that gave every
/// stored deliverable one).
pub fn backfill_org(tx: &mut dyn Tx, org: Uuid) -> ApiResult<usize> {
    Ok(crate::store::deliverables::backfill_identifiers_of(
        tx, org,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_read_back_as_their_numbers() {
        assert_eq!(format(1), "D-000001");
        assert_eq!(format(1_234_567), "D-1234567");
        for n in [1, 42, 999_999, 1_000_000, 123_456_789] {
            assert_eq!(number_of(&format(n)), Some(n));
        }
        for other in [
            "",
            "D-",
            "D-12a",
            "X-000001",
            "d-000001",
            "D-1234567890123456789",
        ] {
            assert_eq!(number_of(other), None, "{other}");
        }
    }
}
