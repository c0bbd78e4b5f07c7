//! Batches: the rows placed in one `PUT /r/bulk` request body ([`Batch`], [`Row`]), and how a
//! batch is sent ([`send_batch`]): its `--key` values resolved to ids ([`resolve_keys`]), a body
//! too large cut in halves, the rows the server rejects cut out and the rest sent again.

use std::collections::{HashMap, HashSet};

use prodops_client::{Error, Query, Tally};
use serde_json::{Value, json};
use uuid::Uuid;

use super::rows::Checked;
use crate::context::CommandContext;
use crate::csvio::spec::Spec;
use crate::fail::CmdResult;

/// A row placed in a batch: its line and where its JSON object lies in the batch's body.
pub(super) struct Row {
    line: u64,
    json: std::ops::Range<usize>,
    /// Its id, parent and key where they are used once it is placed (a tree's rows, rows with a
    /// key); `None` for the rest, which keeps a batch of 10,000 workers' rows at 320 KB.
    links: Option<Box<Links>>,
}

/// What a placed row is matched and ordered by (see [`Checked`]).
struct Links {
    id: Option<Uuid>,
    parent: Option<Uuid>,
    key: Option<String>,
}

impl Row {
    fn id(&self) -> Option<Uuid> {
        self.links.as_ref().and_then(|l| l.id)
    }

    fn parent(&self) -> Option<Uuid> {
        self.links.as_ref().and_then(|l| l.parent)
    }

    fn key(&self) -> Option<&str> {
        self.links.as_ref().and_then(|l| l.key.as_deref())
    }
}

/// A batch of rows ready to send, and the rows of its stretch of the file already rejected.
pub(super) struct Batch {
    pub(super) index: usize,
    /// Every batch up to this one must be written before this one is sent.
    pub(super) after: Option<usize>,
    /// The body sent for the batch: the JSON array of its rows' objects, written as they are
    /// placed (each row's text is held once, here, and sent without a copy).
    pub(super) body: Vec<u8>,
    pub(super) rows: Vec<Row>,
    /// Some row has no id.
    pub(super) without_id: bool,
    /// Some row has neither an id nor a key: it creates a record.
    pub(super) creates: bool,
    pub(super) rejected: Vec<(u64, String)>,
}

impl Batch {
    pub(super) fn new(index: usize, capacity: usize, body_capacity: usize) -> Batch {
        let mut body = Vec::with_capacity(body_capacity);
        body.push(b'[');
        Batch {
            index,
            after: None,
            body,
            rows: Vec::with_capacity(capacity),
            without_id: false,
            creates: false,
            rejected: Vec::new(),
        }
    }

    /// Appends a row's JSON object to the body.
    pub(super) fn push(&mut self, row: &Checked, json: &[u8], keep_links: bool) {
        if !self.rows.is_empty() {
            self.body.push(b',');
        }
        let start = self.body.len();
        self.body.extend_from_slice(json);
        self.without_id |= row.id.is_none();
        self.creates |= row.id.is_none() && row.key.is_none();
        self.rows.push(Row {
            line: row.line,
            json: start..self.body.len(),
            links: (keep_links || row.key.is_some()).then(|| {
                Box::new(Links {
                    id: row.id,
                    parent: row.parent,
                    key: row.key.clone(),
                })
            }),
        });
    }

    /// Ends the body's array: the batch is complete.
    pub(super) fn close(&mut self) {
        self.body.push(b']');
    }
}

/// The JSON array of `rows`, whose objects lie in `from`, as a new body; each row's range then
/// points into it.
fn body_of(from: &[u8], mut rows: Vec<Row>) -> (bytes::Bytes, Vec<Row>) {
    let mut body = Vec::with_capacity(rows.iter().map(|r| r.json.len() + 1).sum::<usize>() + 2);
    body.push(b'[');
    for (i, r) in rows.iter_mut().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        let start = body.len();
        body.extend_from_slice(&from[r.json.clone()]);
        r.json = start..body.len();
    }
    body.push(b']');
    (body.into(), rows)
}

/// Finds the ids of the records carrying the batch's keys (active and archived ones). A scoped
/// key (a lot's code, per item) is looked up by the key alone and matched with its scope.
async fn resolve_keys(ctx: &CommandContext, spec: &Spec, batch: &mut Batch) -> CmdResult {
    let Some(key_field) = spec.key else {
        return Ok(());
    };
    // A scoped row's key is `{scope's UUID} {key}` (`Spec::key_text`): the key is what follows.
    let bare = |k: &str| -> String {
        match spec.key_scope {
            Some(_) => k.get(37..).unwrap_or("").to_string(),
            None => k.to_string(),
        }
    };
    let mut keys: Vec<Value> = batch
        .rows
        .iter()
        .filter_map(|r| r.key().map(|k| Value::String(bare(k))))
        .collect();
    keys.sort_unstable_by(|a, b| a.as_str().cmp(&b.as_str()));
    keys.dedup();
    if keys.is_empty() {
        return Ok(());
    }
    let records = ctx.client.resource_at(spec.path);
    let mut found: HashMap<String, Vec<String>> = HashMap::new();
    for archived in [false, true] {
        let mut page = 1;
        loop {
            let mut q = Query::new()
                .filter(key_field, Value::Array(keys.clone()))
                .filter("isArchived", json!(archived))
                .select(std::iter::once(key_field).chain(spec.key_scope))
                .page_size(10_000);
            q.page = Some(page);
            let answer = records.query_values(&q).await?;
            let n = answer.values.len();
            for v in answer.values {
                let scope = match spec.key_scope {
                    Some(s) => match v
                        .get(s)
                        .and_then(Value::as_str)
                        .and_then(|s| Uuid::parse_str(s).ok())
                    {
                        Some(u) => Some(u),
                        None => continue,
                    },
                    None => None,
                };
                if let (Some(id), Some(k)) = (
                    v.get("id").and_then(Value::as_str),
                    v.get(key_field).and_then(Value::as_str),
                ) {
                    found
                        .entry(Spec::key_text(scope, k))
                        .or_default()
                        .push(id.to_string());
                }
            }
            if n < 10_000 {
                break;
            }
            page += 1;
        }
    }
    // The body is written again: rows matching one record get its id, rows matching several
    // are rejected.
    let rows = std::mem::take(&mut batch.rows);
    let old = std::mem::take(&mut batch.body);
    let mut body = Vec::with_capacity(old.len() + 48 * found.len());
    body.push(b'[');
    for mut row in rows {
        let ids = row.key().and_then(|k| found.get(k));
        if let Some(ids) = ids.filter(|ids| ids.len() > 1) {
            batch.rejected.push((
                row.line,
                format!(
                    "{} matches {} {}s; give the id instead",
                    spec.describe_key(row.key().unwrap_or("")),
                    ids.len(),
                    spec.noun
                ),
            ));
            continue;
        }
        if !batch.rows.is_empty() {
            body.push(b',');
        }
        let json = &old[row.json.clone()];
        let start = body.len();
        match ids {
            Some(ids) => {
                // The row's object gets the id as its first field.
                body.extend_from_slice(format!("{{\"id\":{},", json!(ids[0])).as_bytes());
                if json.len() > 2 {
                    body.extend_from_slice(&json[1..]);
                } else {
                    body.pop();
                    body.push(b'}');
                }
                if let Some(links) = &mut row.links {
                    links.id = Uuid::parse_str(&ids[0]).ok();
                }
            }
            None => body.extend_from_slice(json),
        }
        row.json = start..body.len();
        batch.rows.push(row);
    }
    body.push(b']');
    batch.body = body;
    Ok(())
}

/// `PUT /r/bulk` of a body: how many records the server wrote. The answer also lists every
/// record's id, which the import does not use: they are read past, not collected into strings.
async fn bulk_put(ctx: &CommandContext, path: &str, body: bytes::Bytes) -> Result<u64, Error> {
    #[derive(serde::Deserialize)]
    struct Answer {
        count: u64,
        #[allow(dead_code)]
        ids: serde::de::IgnoredAny,
    }
    let answer = ctx
        .client
        .send(prodops_client::Method::PUT, path, Some(body))
        .await?;
    serde_json::from_slice::<Answer>(&answer)
        .map(|a| a.count)
        .map_err(|e| {
            let sample: String = String::from_utf8_lossy(&answer).chars().take(200).collect();
            Error::Decode(format!("{e} in {sample}"))
        })
}

/// `PUT /r/bulk?dryRun=true` of a body: how many records the server would write, and what it
/// says it would do to each ([`Tally`], from the events it would append).
async fn bulk_put_dry(
    ctx: &CommandContext,
    resource: &str,
    path: &str,
    body: bytes::Bytes,
    rows: usize,
) -> Result<(u64, Tally), Error> {
    let report = ctx
        .client
        .dry_run(prodops_client::Method::PUT, path, Some(body))
        .await?;
    let count = report.answer["count"].as_u64().ok_or_else(|| {
        Error::Decode(format!(
            "a bulk PUT's dry run answered without a count: {}",
            report.answer
        ))
    })?;
    Ok((count, Tally::of(resource, rows, &report.events)))
}

/// Sends a batch; rows the server rejects are taken out and the rest sent again. With
/// `dry_run`, every request is the server's dry run: nothing is written, and the server says
/// what it would do with each row that it takes.
/// Returns (written, rejected rows in line order, what a dry run would do).
pub(super) async fn send_batch(
    ctx: &CommandContext,
    spec: &Spec,
    mut batch: Batch,
    key_mode: bool,
    dry_run: bool,
) -> CmdResult<(u64, Vec<(u64, String)>, Tally)> {
    if key_mode {
        resolve_keys(ctx, spec, &mut batch).await?;
    }
    let path = format!("/{}/bulk", spec.path);
    let Batch {
        body,
        rows,
        mut rejected,
        ..
    } = batch;
    let mut written = 0u64;
    let mut tally = Tally::default();
    // Each body with its rows (their ranges point into it); the first is the batch's own.
    let mut pending: Vec<(bytes::Bytes, Vec<Row>)> = vec![(body.into(), rows)];
    while let Some((body, rows)) = pending.pop() {
        if rows.is_empty() {
            continue;
        }
        let sent = if dry_run {
            bulk_put_dry(ctx, spec.path, &path, body.clone(), rows.len()).await
        } else {
            bulk_put(ctx, &path, body.clone())
                .await
                .map(|count| (count, Tally::default()))
        };
        match sent {
            Ok((count, would)) => {
                written += count;
                tally = tally + would;
            }
            Err(Error::Api { status: 413, .. }) if rows.len() > 1 => {
                // Halves keep their order: the first goes first (parents before children).
                let mut rows = rows;
                let second = rows.split_off(rows.len() / 2);
                pending.push(body_of(&body, second));
                pending.push(body_of(&body, rows));
            }
            Err(Error::Api {
                status: 400 | 409,
                message,
                details,
                ..
            }) => {
                let mut bad: std::collections::BTreeMap<usize, Vec<String>> =
                    std::collections::BTreeMap::new();
                for d in &details {
                    if let Some(i) = d
                        .index
                        .and_then(|i| usize::try_from(i).ok())
                        .filter(|i| *i < rows.len())
                    {
                        let field = d
                            .field
                            .as_deref()
                            .map(|f| {
                                f.trim_start_matches(|c: char| {
                                    c == '[' || c.is_ascii_digit() || c == ']' || c == '.'
                                })
                            })
                            .filter(|f| !f.is_empty());
                        bad.entry(i).or_default().push(match field {
                            Some(f) => format!("{f}: {}", d.message),
                            None => d.message.clone(),
                        });
                    }
                }
                if bad.is_empty() {
                    // The server named no record: the whole stretch is rejected.
                    for r in &rows {
                        rejected.push((r.line, message.clone()));
                    }
                    continue;
                }
                let mut good = Vec::with_capacity(rows.len());
                let mut dropped: HashSet<Uuid> = HashSet::new();
                for (i, r) in rows.into_iter().enumerate() {
                    match bad.get(&i) {
                        Some(msgs) => {
                            dropped.extend(r.id());
                            rejected.push((r.line, msgs.join("; ")))
                        }
                        // A child of a rejected row cannot be written either.
                        None if r.parent().is_some_and(|p| dropped.contains(&p)) => {
                            dropped.extend(r.id());
                            rejected
                                .push((r.line, "parentId: the parent's row was rejected".into()));
                        }
                        None => good.push(r),
                    }
                }
                pending.push(body_of(&body, good));
            }
            Err(e) => return Err(e.into()),
        }
    }
    rejected.sort_by_key(|(line, _)| *line);
    Ok((written, rejected, tally))
}
