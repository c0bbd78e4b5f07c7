//! `PUT /r/bulk`: many upserts in one transaction, with exactly the result of upserting the
//! records one by one in input order ([`upsert_record`]): every validation failure reported by
//! index and nothing written, or the first other failure (a unique key clash, ...) with its
//! index, or every record written.
//!
//! Where the resource allows it ([`Hooks::batch_creates`](crate::engine::hooks::Hooks::batch_creates)),
//! the work is done per batch instead of per record:
//!
//! - the ids the records name are looked up in one query per chunk, and the hooks read ahead
//!   what the records' writes need ([`Hooks::read_ahead`](crate::engine::hooks::Hooks::read_ahead));
//! - a plain create ([`Hooks::plain_create`](crate::engine::hooks::Hooks::plain_create)) is built as
//!   JSON text from the record's own text (the same candidate [`new_candidate`] builds), read
//!   straight into core's record type and checked (`ResourceKind::check_new_json`), and its
//!   stored text kept pending; pending creates are written with multi-row inserts;
//! - a create with hooks (naming an id the lookup did not find, or none) skips the lookup the
//!   one-by-one path would make again; where the resource's hooks allow it
//!   ([`Hooks::hold_hooked_creates`](crate::engine::hooks::Hooks::hold_hooked_creates)) it runs
//!   its hooks and checks at once and its row waits with the plain creates;
//! - anything else (an update, a record naming an id the batch already wrote, a record that
//!   does not read as the resource) goes through the one-by-one path, after the pending
//!   creates are written, so it sees what the one-by-one order would have shown it.
//!
//! A multi-row insert that fails is undone to its savepoint and redone one row at a time, so
//! the failure names the same record the one-by-one order stops at.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use prodops_core::Violation;
use prodops_core::resource::{Archive, COMMON_READ_ONLY};
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;
use uuid::Uuid;

use super::ServedResource;
use super::params::body_object;
use super::pipeline::{checked_create, create_record, new_candidate, upsert_record};
use crate::http::app::RawJsonBody;
use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult};
use crate::store::records::{self, NewRow};
use crate::store::{StoreError, Tx};

/// Upserts the records of `prepared` (the elements of the request's array) in order; answers
/// the id of each, in input order.
pub(crate) fn bulk_put(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    res: &ServedResource,
    prepared: &Prepared,
) -> ApiResult<Vec<Uuid>> {
    if res.hooks.batch_creates() {
        Batch::new(res, ctx).run(tx, prepared)
    } else {
        one_by_one(tx, ctx, res, prepared)
    }
}

/// The reference semantics: each record through the whole pipeline, in order.
fn one_by_one(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    res: &ServedResource,
    prepared: &Prepared,
) -> ApiResult<Vec<Uuid>> {
    let mut ids = Vec::with_capacity(prepared.len());
    let mut details: Vec<Violation> = Vec::new();
    for (i, item) in prepared.texts().enumerate() {
        match value_of(item).and_then(|item| upsert_record(tx, ctx, res, item)) {
            Ok(record) => ids.push(id_of(&record)),
            // Rules are checked before anything is written, so the transaction is still
            // usable and every bad record can be reported; anything else ends the batch.
            Err(e) if is_validation(&e) => details.extend(e.with_index(i).details),
            Err(e) => return Err(e.with_index(i)),
        }
    }
    rejected_or(details, ids)
}

fn value_of(item: &str) -> ApiResult<Value> {
    serde_json::from_str(item)
        .map_err(|e| ApiError::validation(format!("malformed JSON in the request body: {e}")))
}

fn is_validation(e: &ApiError) -> bool {
    e.code == "VALIDATION_ERROR"
}

fn id_of(record: &Value) -> Uuid {
    record
        .get("id")
        .and_then(Value::as_str)
        .and_then(|s| Uuid::parse_str(s).ok())
        .unwrap_or_default()
}

fn rejected_or(details: Vec<Violation>, ids: Vec<Uuid>) -> ApiResult<Vec<Uuid>> {
    if details.is_empty() {
        return Ok(ids);
    }
    let mut err = ApiError::violations(details);
    err.message = format!(
        "the batch was rejected and nothing was written: {}",
        err.message
    );
    Err(err)
}

// ---- a record's top-level fields as written --------------------------------------------------

/// An object key: borrowed from the request when it has no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a field name")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// The top-level fields of a JSON object: each key once, with its value's text. A repeated
/// key keeps its first place and its last value, as a parsed `Map` does.
struct Fields<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de> Deserialize<'de> for Fields<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct FieldsVisitor;
        impl<'de> Visitor<'de> for FieldsVisitor {
            type Value = Fields<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields<'de>, A::Error> {
                let mut out: Vec<(Cow<'de, str>, &'de RawValue)> = Vec::with_capacity(16);
                while let Some(Key(k)) = map.next_key::<Key<'de>>()? {
                    let v: &'de RawValue = map.next_value()?;
                    match out.iter_mut().find(|(key, _)| *key == k) {
                        Some(slot) => slot.1 = v,
                        None => out.push((k, v)),
                    }
                }
                Ok(Fields(out))
            }
        }
        d.deserialize_map(FieldsVisitor)
    }
}

impl<'a> Fields<'a> {
    /// The fields of `item`, or `None` when it is not an object.
    fn of(item: &'a RawValue) -> Option<Fields<'a>> {
        serde_json::from_str(item.get()).ok()
    }

    fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }

    fn remove(&mut self, key: &str) -> Option<&'a RawValue> {
        let i = self.0.iter().position(|(k, _)| k == key)?;
        Some(self.0.remove(i).1)
    }
}

// ---- the body, prepared -------------------------------------------------------------------

/// A bulk PUT's body and everything made of its records that needs no database: each record's
/// place in the body, the id it names, and each plain create built and checked. Made before the
/// write transaction ([`Prepared::new`]), so that while one request holds the database's
/// writer, the next one prepares; the transaction then only looks ids up and writes.
pub(crate) struct Prepared {
    /// The body: a JSON array (checked when the request was read), hence UTF-8.
    body: bytes::Bytes,
    items: Vec<Item>,
}

/// One record of the body.
struct Item {
    /// Where its text is in the body.
    span: std::ops::Range<usize>,
    /// The id it names, as written and parsed (`None`: no id, or one that does not parse,
    /// which the one-by-one path reports).
    named: Option<(String, Uuid)>,
    /// The record as a plain create (with the named id, or a new one), when it is one.
    create: Option<Create>,
    /// It names no id (none, or null): a create whatever the table holds.
    unnamed: bool,
}

/// A plain create, built from a record's own text and checked.
enum Create {
    Checked(Uuid, NewRow),
    /// Broken rules: reported for the record unless it turns out to be an update.
    Invalid(Uuid, ApiError),
}

impl Prepared {
    /// Splits `body` (a JSON array) into its records and, where the resource allows it
    /// ([`Hooks::batch_creates`](crate::engine::hooks::Hooks::batch_creates)), builds each plain create.
    /// `filled`: the fields whose filter columns the store's writes fill
    /// (`Store::filter_fields_written`), read ahead here for each create
    /// (`NewRow::read_filters`).
    pub(crate) fn new(
        res: &ServedResource,
        ctx: &Ctx,
        filled: &'static [String],
        body: RawJsonBody,
    ) -> ApiResult<Prepared> {
        let records: Vec<&RawValue> = body.parse()?;
        // docs/limits.md: a larger batch is refused whole, before anything is built or written.
        if records.len() as u64 > super::MAX_BULK_RECORDS {
            return Err(ApiError::validation(format!(
                "a bulk PUT takes at most {} records; this body has {}; split it into batches, nothing was written",
                super::MAX_BULK_RECORDS,
                records.len()
            )));
        }
        let base = body.0.as_ptr() as usize;
        let span_of = |item: &RawValue| {
            let start = item.get().as_ptr() as usize - base;
            start..start + item.get().len()
        };
        let items = if res.hooks.batch_creates() {
            let mut builder = CreateBuilder::new(res, ctx, filled)?;
            records
                .iter()
                .map(|item| builder.item(item, span_of(item)))
                .collect()
        } else {
            records
                .iter()
                .map(|item| Item {
                    span: span_of(item),
                    named: None,
                    create: None,
                    unnamed: false,
                })
                .collect()
        };
        Ok(Prepared {
            body: body.0,
            items,
        })
    }

    fn text(&self, item: &Item) -> &str {
        // In bounds and on character boundaries: the spans are those of the parsed body.
        std::str::from_utf8(&self.body[item.span.clone()]).unwrap_or("null")
    }

    fn texts(&self) -> impl Iterator<Item = &str> {
        self.items.iter().map(|item| self.text(item))
    }

    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }
}

/// Builds plain creates as JSON text from records' own text (the candidate `new_candidate`
/// would build from a parsed record) and checks them (`ResourceKind::check_new_json`).
struct CreateBuilder<'r> {
    res: &'r ServedResource,
    ctx: &'r Ctx,
    /// `"organizationId":"…"` and the request time as JSON, written into every new record.
    org_text: String,
    now_json: String,
    /// The request time as the table's `created_at` and `updated_at` columns hold it.
    now_column: String,
    /// The candidate being built (reused).
    buf: String,
    /// The fields whose filter columns are read ahead.
    filled: &'static [String],
}

impl<'r> CreateBuilder<'r> {
    fn new(res: &'r ServedResource, ctx: &'r Ctx, filled: &'static [String]) -> ApiResult<Self> {
        Ok(CreateBuilder {
            filled,
            res,
            ctx,
            org_text: format!("\"organizationId\":\"{}\"", ctx.org()),
            now_json: Value::String(ctx.now_text()).to_string(),
            now_column: records::sortable_time(&ctx.now_text())?,
            buf: String::new(),
        })
    }

    fn item(&mut self, item: &RawValue, span: std::ops::Range<usize>) -> Item {
        let mut out = Item {
            span,
            named: None,
            create: None,
            unnamed: false,
        };
        let Some(mut fields) = Fields::of(item) else {
            return out;
        };
        let res = self.res;
        let desc = res.desc();
        if !res.implied.is_empty() {
            return out;
        }
        // As `new_candidate`: read-only fields dropped, the id taken or generated.
        for field in COMMON_READ_ONLY.iter().chain(desc.read_only) {
            fields.remove(field);
        }
        let id = match fields.remove("id") {
            None => {
                out.unnamed = true;
                Uuid::now_v7()
            }
            Some(raw) if raw.get() == "null" => {
                out.unnamed = true;
                Uuid::now_v7()
            }
            Some(raw) => {
                let Ok(given) = serde_json::from_str::<Cow<'_, str>>(raw.get()) else {
                    return out;
                };
                let Ok(id) = Uuid::parse_str(&given) else {
                    return out;
                };
                out.named = Some((given.into_owned(), id));
                id
            }
        };
        out.create = self.create(id, fields);
        out
    }

    fn create(&mut self, id: Uuid, mut fields: Fields<'_>) -> Option<Create> {
        let res = self.res;
        let desc = res.desc();
        if desc.archive == Archive::Actions {
            fields.remove("isArchived");
        }
        let archived = fields.get("isArchived").is_some_and(|v| v.get() == "true");
        let now = &self.now_json;
        let field = |name: &str| -> Option<Value> {
            match name {
                "id" => Some(Value::String(id.to_string())),
                "organizationId" => Some(Value::String(self.ctx.org().to_string())),
                "createdAt" | "updatedAt" => serde_json::from_str(now).ok(),
                "archivedAt" if desc.archived_at => Some(if archived {
                    serde_json::from_str(now).ok()?
                } else {
                    Value::Null
                }),
                _ => serde_json::from_str(fields.get(name)?.get()).ok(),
            }
        };
        if !res.hooks.plain_create(&field) {
            return None;
        }
        // The id's text without the formatting machinery (this runs for every record).
        let mut id_buf = Uuid::encode_buffer();
        let id_text: &str = id.hyphenated().encode_lower(&mut id_buf);
        let buf = &mut self.buf;
        buf.clear();
        buf.push_str("{\"id\":\"");
        buf.push_str(id_text);
        buf.push_str("\",");
        buf.push_str(&self.org_text);
        for (k, v) in &fields.0 {
            buf.push(',');
            match k {
                Cow::Borrowed(k) => {
                    // Borrowed keys had no escapes: their text is the key.
                    buf.push('"');
                    buf.push_str(k);
                    buf.push('"');
                }
                Cow::Owned(k) => buf.push_str(&Value::String(k.clone()).to_string()),
            }
            buf.push(':');
            buf.push_str(v.get());
        }
        buf.push_str(",\"createdAt\":");
        buf.push_str(now);
        buf.push_str(",\"updatedAt\":");
        buf.push_str(now);
        if desc.archived_at {
            buf.push_str(",\"archivedAt\":");
            buf.push_str(if archived { now } else { "null" });
        }
        buf.push('}');
        match res.kind.check_new_json(buf) {
            // The columns are known without reading the text back: the id and time written
            // above, and `isArchived` as given (a record whose `isArchived` is not a boolean
            // does not read as the resource).
            Some(Ok(text)) => {
                // A long text in an indexed field (rare: more bytes as written than the limit
                // has characters) is judged on the checked record, as the pipeline judges it.
                let long = crate::http::text::indexed_fields(desc).any(|f| {
                    let top = f.split('.').next().unwrap_or(f);
                    fields
                        .get(top)
                        .is_some_and(|raw| raw.get().len() > crate::http::text::MAX_INDEXED_TEXT)
                });
                if long
                    && let Ok(record) = serde_json::from_str::<Value>(&text)
                    && let Err(e) = crate::http::text::check_indexed_lengths(desc, None, &record)
                {
                    return Some(Create::Invalid(id, e));
                }
                let row = NewRow {
                    id: id_text.to_string(),
                    archived,
                    created: self.now_column.clone(),
                    updated: self.now_column.clone(),
                    data: text,
                    filters: None,
                };
                debug_assert_eq!(
                    format!("{row:?}"),
                    NewRow::of_text(row.data.clone())
                        .map(|r| format!("{r:?}"))
                        .unwrap_or_default(),
                    "the columns are those of the stored text"
                );
                Some(Create::Checked(id, row.read_filters(self.filled)))
            }
            Some(Err(violations)) => Some(Create::Invalid(id, ApiError::violations(violations))),
            // Not the resource's shape: the one-by-one path names what is wrong.
            None => None,
        }
    }
}

// ---- the batch -----------------------------------------------------------------------------------

struct Batch<'r> {
    res: &'r ServedResource,
    ctx: &'r Ctx,
    /// Creates, checked, waiting to be written (plain ones as prepared, held ones with hooks
    /// built here), and the index of each one's record.
    pending: Vec<Cow<'r, NewRow>>,
    pending_index: Vec<usize>,
    /// Ids this batch has created or changed (or tried to): a later record naming one goes
    /// through the one-by-one path, which reads the table as it now is.
    touched: HashSet<Uuid>,
}

/// What one record turns into.
enum Step<'a, 'p> {
    /// A plain create, checked: its id and row.
    Create(Uuid, &'p NewRow),
    /// An update of a record stored before the batch: its id as given, and stored text.
    Update(&'a str, &'a str),
    /// A create whose hooks must run, naming an id the batch found unused or no id: the
    /// one-by-one path's create, without looking the id up again.
    New,
    /// Anything else: the one-by-one path, after the pending creates are written.
    Slow,
}

impl<'r> Batch<'r> {
    fn new(res: &'r ServedResource, ctx: &'r Ctx) -> Self {
        Batch {
            res,
            ctx,
            pending: Vec::new(),
            pending_index: Vec::new(),
            touched: HashSet::new(),
        }
    }

    fn run(mut self, tx: &mut dyn Tx, prepared: &'r Prepared) -> ApiResult<Vec<Uuid>> {
        let named: Vec<Uuid> = prepared
            .items
            .iter()
            .filter_map(|item| item.named.as_ref().map(|(_, id)| *id))
            .collect();
        let stored = if named.is_empty() {
            HashMap::new()
        } else {
            records::get_many_raw(tx, self.res.table(), self.ctx.org(), &named)?
        };
        let (mut updated, mut created) = (Vec::new(), Vec::new());
        for item in &prepared.items {
            match item.named.as_ref().and_then(|(_, id)| stored.get(id)) {
                Some(text) => updated.push(text.as_str()),
                None if !matches!(item.create, Some(Create::Checked(..))) => {
                    created.push(prepared.text(item));
                }
                None => {}
            }
        }
        if !updated.is_empty() || !created.is_empty() {
            self.res
                .hooks
                .read_ahead(tx, self.ctx, self.res, &updated, &created)?;
        }
        let mut ids = Vec::with_capacity(prepared.len());
        let mut details: Vec<Violation> = Vec::new();
        for (i, item) in prepared.items.iter().enumerate() {
            let text = prepared.text(item);
            // Errors of `flush` are final and already name their record; errors of this
            // record are collected (validation) or end the batch.
            let result = match self.step(&stored, item) {
                Ok(Step::Create(id, row)) => {
                    self.pending.push(Cow::Borrowed(row));
                    self.pending_index.push(i);
                    Ok(id)
                }
                Ok(Step::Update(given, raw)) => {
                    // Its hooks may read the table: the pending creates go in first.
                    self.flush(tx)?;
                    self.update(tx, given, raw, text)
                }
                Ok(Step::New) if self.res.hooks.hold_hooked_creates() => {
                    self.hold(tx, text).map(|(id, row)| {
                        self.pending.push(Cow::Owned(row));
                        self.pending_index.push(i);
                        id
                    })
                }
                Ok(Step::New) => {
                    self.flush(tx)?;
                    value_of(text)
                        .and_then(body_object)
                        .and_then(|body| create_record(tx, self.ctx, self.res, body))
                        .map(|record| id_of(&record))
                }
                Ok(Step::Slow) => {
                    self.flush(tx)?;
                    value_of(text)
                        .and_then(|item| upsert_record(tx, self.ctx, self.res, item))
                        .map(|record| {
                            let id = id_of(&record);
                            self.touched.insert(id);
                            id
                        })
                }
                Err(e) => Err(e),
            };
            match result {
                Ok(id) => ids.push(id),
                Err(e) if is_validation(&e) => details.extend(e.with_index(i).details),
                Err(e) => {
                    // Creates pending from earlier records come first: one of them may fail.
                    self.flush(tx)?;
                    return Err(e.with_index(i));
                }
            }
        }
        // A clash among the pending creates wins over validation failures, as it would have
        // stopped the one-by-one order.
        self.flush(tx)?;
        rejected_or(details, ids)
    }

    /// Decides what a record is from what was prepared and what is stored; reads nothing.
    fn step<'a>(
        &mut self,
        stored: &'a HashMap<Uuid, String>,
        item: &'r Item,
    ) -> ApiResult<Step<'a, 'r>>
    where
        'r: 'a,
    {
        if let Some((given, id)) = &item.named {
            if self.touched.contains(id) {
                return Ok(Step::Slow);
            }
            if let Some(text) = stored.get(id) {
                self.touched.insert(*id);
                return Ok(Step::Update(given, text));
            }
        }
        match &item.create {
            Some(Create::Checked(id, row)) => {
                self.touched.insert(*id);
                Ok(Step::Create(*id, row))
            }
            Some(Create::Invalid(id, e)) => {
                self.touched.insert(*id);
                Err(e.clone())
            }
            None => match &item.named {
                // Not stored (looked up above) and not written by this batch.
                Some((_, id)) => {
                    self.touched.insert(*id);
                    Ok(Step::New)
                }
                None if item.unnamed => Ok(Step::New),
                None => Ok(Step::Slow),
            },
        }
    }

    /// A create with hooks whose row waits ([`Hooks::hold_hooked_creates`]): checked as
    /// [`create_record`] checks it, its `after_write` run, its row kept for [`Batch::flush`].
    ///
    /// [`Hooks::hold_hooked_creates`]: crate::engine::hooks::Hooks::hold_hooked_creates
    fn hold(&mut self, tx: &mut dyn Tx, text: &str) -> ApiResult<(Uuid, NewRow)> {
        let body = value_of(text).and_then(body_object)?;
        let candidate = new_candidate(self.ctx, self.res, body, false)?;
        let record = checked_create(tx, self.ctx, self.res, candidate)?;
        let row = NewRow::of_record(&record)?;
        self.res
            .hooks
            .after_write(tx, self.ctx, self.res, None, &record)?;
        Ok((id_of(&record), row))
    }

    /// The update of a record stored before the batch, as [`upsert_record`] does it.
    fn update(
        &mut self,
        tx: &mut dyn Tx,
        given: &str,
        stored: &str,
        item: &str,
    ) -> ApiResult<Uuid> {
        let Value::Object(patch) = value_of(item)? else {
            return Err(ApiError::internal("an update that is not an object"));
        };
        let old: Value = serde_json::from_str(stored).map_err(ApiError::internal)?;
        if !self.res.matches_implied(&old) {
            return Err(ApiError::field(
                "id",
                format!("{given} is a record outside /{}", self.res.base),
            ));
        }
        self.res.allow(self.res.desc().ops.update, "PATCH")?;
        let record = super::update_record(tx, self.ctx, self.res, &old, patch)?;
        Ok(id_of(&record))
    }

    /// Writes the pending creates. A refused multi-row insert is undone and redone one row at
    /// a time: the first row refused is the record the one-by-one order would have stopped at.
    fn flush(&mut self, tx: &mut dyn Tx) -> ApiResult<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let table = self.res.table();
        let org = self.ctx.org();
        let rows = std::mem::take(&mut self.pending);
        let index = std::mem::take(&mut self.pending_index);
        tx.execute("SAVEPOINT bulk_put", &[])?;
        let rowids = match records::insert_rows(tx, table, org, &rows) {
            Ok(rowids) => rowids,
            Err(StoreError::Retry) => return Err(StoreError::Retry.into()),
            Err(_) => {
                tx.execute("ROLLBACK TO SAVEPOINT bulk_put", &[])?;
                for (row, i) in rows.iter().zip(index) {
                    records::insert_row(tx, table, org, row)
                        .map_err(|e| ApiError::from(e).with_index(i))?;
                }
                None
            }
        };
        tx.execute("RELEASE SAVEPOINT bulk_put", &[])?;
        // Their events, kept for the end of the transaction (appended in one batch there).
        super::events::created_rows(self.ctx, self.res, &rows, rowids.as_deref());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;

    #[test]
    fn fields_keep_first_place_and_last_value() {
        let raw: Box<RawValue> =
            serde_json::from_str(r#"{"a": 1, "b\u0041": [1, {"x": 2}], "a": "two"}"#).unwrap();
        let f = Fields::of(&raw).unwrap();
        let got: Vec<(String, String)> =
            f.0.iter()
                .map(|(k, v)| (k.to_string(), v.get().to_string()))
                .collect();
        assert_eq!(
            got,
            [
                ("a".to_string(), "\"two\"".to_string()),
                ("bA".to_string(), "[1, {\"x\": 2}]".to_string())
            ]
        );
        let parsed: Map<String, Value> = serde_json::from_str(raw.get()).unwrap();
        assert_eq!(
            parsed.keys().collect::<Vec<_>>(),
            ["a", "bA"],
            "the same order a parsed map keeps"
        );
        let not_object: Box<RawValue> = serde_json::from_str("[1]").unwrap();
        assert!(Fields::of(&not_object).is_none());
    }
}
