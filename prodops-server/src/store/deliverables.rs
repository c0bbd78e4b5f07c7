//! The SQL of the deliverable tables that differs between the dialects or that migrations
//! run: the tree index (`deliverable_tree`) and how reads join it to the records, the
//! identifier counter, the indexes the deliverable reads need and the backfills of databases
//! older than them. The rules stay with the deliverables family (`deliverables::tree`,
//! `deliverables::identifiers`); these functions only read and write rows.

use std::collections::HashMap;

use serde_json::{Value, json};
use uuid::Uuid;

use prodops_core::alerts::Window;

use super::sql::FieldPath;
use super::{Dialect, SqlValue, StoreError, StoreResult, Tx};

/// The deliverable records.
pub const TABLE: &str = "deliverable";
/// The tree index of deliverables, one row per deliverable.
pub const TREE: &str = "deliverable_tree";

/// One row of the tree index.
#[derive(Debug, Clone)]
pub struct TreeRow {
    pub id: Uuid,
    pub parent_id: Option<Uuid>,
    pub root_id: Uuid,
    pub path: String,
    pub sort_key: i64,
}

/// Tree rows per statement when new nodes' rows are written together: 8 parameters each on
/// SQLite (6 on PostgreSQL), well below either database's limit.
const TREE_ROWS_PER_INSERT: usize = 500;

/// Writes the index rows of new nodes, [`TREE_ROWS_PER_INSERT`] per statement; on SQLite with
/// each one's record rowid too (the records are written before their tree rows).
pub fn insert_tree_rows(tx: &mut dyn Tx, org: Uuid, rows: &[TreeRow]) -> StoreResult<()> {
    let sqlite = tx.dialect() == Dialect::Sqlite;
    let one = if sqlite {
        format!(
            "(?, ?, ?, ?, ?, ?, (SELECT rowid FROM {TABLE} WHERE organization_id = ? AND id = ?))"
        )
    } else {
        "(?, ?, ?, ?, ?, ?, NULL)".to_string()
    };
    for chunk in rows.chunks(TREE_ROWS_PER_INSERT) {
        let mut params = Vec::with_capacity(chunk.len() * if sqlite { 8 } else { 6 });
        for row in chunk {
            params.extend([
                org.into(),
                row.id.into(),
                row.parent_id.into(),
                row.root_id.into(),
                row.path.clone().into(),
                SqlValue::Int(row.sort_key),
            ]);
            if sqlite {
                params.extend([org.into(), row.id.into()]);
            }
        }
        tx.execute(
            &format!(
                "INSERT INTO {TREE} (organization_id, id, parent_id, root_id, path, sort_key, rid) VALUES {}",
                vec![one.as_str(); chunk.len()].join(", ")
            ),
            &params,
        )?;
    }
    Ok(())
}

/// How tree reads join the records to the index rows `t`, as `d`. On SQLite by the record's
/// rowid held in the index (one lookup instead of a search of the `(organization_id, id)`
/// index then one by rowid: the two searches were a third of a 10,000-node hierarchy read),
/// checked against the id, so that a stale rowid reads as a missing record (`data` NULL) which
/// [`record_text`] then reads by id. On PostgreSQL by id.
pub fn records_join(tx: &dyn Tx) -> String {
    records_join_of(tx.dialect())
}

fn records_join_of(dialect: Dialect) -> String {
    match dialect {
        Dialect::Sqlite => format!(
            "LEFT JOIN {TABLE} d ON d.rowid = t.rid AND d.organization_id = t.organization_id AND d.id = t.id"
        ),
        Dialect::Postgres => {
            format!("JOIN {TABLE} d ON d.organization_id = t.organization_id AND d.id = t.id")
        }
    }
}

/// The stored text of a record the rowid join missed (its rowid is repaired on the next start).
pub fn record_text(tx: &mut dyn Tx, org: Uuid, id: Uuid) -> StoreResult<Option<String>> {
    let rows = tx.query(
        &format!("SELECT data FROM {TABLE} WHERE organization_id = ? AND id = ?"),
        &[org.into(), id.into()],
    )?;
    Ok(rows
        .into_iter()
        .next()
        .and_then(|mut r| r.pop())
        .and_then(SqlValue::into_string))
}

/// What [`read_records`] hands each record to: the node's position, the record's stored text
/// and its alert window.
pub type EachRecord<'f> = dyn FnMut(usize, &[u8], Option<Window>) + 'f;

/// Reads the stored records of `nodes` (`key`: a node's id and its record's rowid hint) with
/// one query per call, handing each record's JSON text and its alert window (see
/// `records::ALERT_WINDOW_COLUMN`; `None` when it has none) to `each` with the node's position in
/// `nodes`, in any order (a node whose record is missing is left out). On SQLite the records
/// are looked up by the rowids the index holds, checked against the ids (a stale one is read
/// by id); on PostgreSQL by id.
pub fn read_records<N>(
    tx: &mut dyn Tx,
    org: Uuid,
    nodes: &[N],
    key: impl Fn(&N) -> (Uuid, Option<i64>),
    each: &mut EachRecord<'_>,
) -> StoreResult<()> {
    if nodes.is_empty() {
        return Ok(());
    }
    let mut params: Vec<SqlValue> = Vec::with_capacity(nodes.len() + 1);
    // Each rowid and the node it is read for, by rowid (looked up by binary search: a hierarchy
    // read finds every record of a large subtree here).
    let mut slots: Vec<(i64, usize)> = Vec::new();
    let mut by_id: HashMap<Uuid, usize> = HashMap::new();
    let sql = match tx.dialect() {
        Dialect::Sqlite => {
            slots.extend(
                nodes
                    .iter()
                    .enumerate()
                    .filter_map(|(i, n)| key(n).1.map(|rid| (rid, i))),
            );
            slots.sort_unstable();
            slots.dedup_by_key(|s| s.0);
            params.extend(slots.iter().map(|&(rid, _)| SqlValue::Int(rid)));
            // The rowids alone drive the search: `+` keeps the planner from scanning the
            // organization's index instead (measured: 3 s instead of 0.3 s for 100,000 nodes).
            let sql = format!(
                "SELECT rowid, id, data, alerts_window FROM {TABLE} WHERE rowid IN ({}) AND +organization_id = ?",
                placeholders(params.len())
            );
            params.push(org.into());
            sql
        }
        Dialect::Postgres => {
            params.push(org.into());
            for (i, n) in nodes.iter().enumerate() {
                let id = key(n).0;
                by_id.insert(id, i);
                params.push(id.into());
            }
            format!(
                "SELECT CAST(NULL AS BIGINT), id, data, alerts_window FROM {TABLE} WHERE organization_id = ? AND id IN ({})",
                placeholders(params.len() - 1)
            )
        }
    };
    let mut found = vec![false; nodes.len()];
    if params.len() > 1 {
        tx.for_each_row(&sql, &params, &mut |row| {
            let id = row
                .get(1)
                .and_then(|c| c.as_bytes())
                .and_then(|s| Uuid::try_parse_ascii(s).ok());
            let slot = match row.first().and_then(|c| c.as_i64()) {
                Some(rid) => slots
                    .binary_search_by_key(&rid, |s| s.0)
                    .ok()
                    .map(|k| slots[k].1),
                None => id.and_then(|id| by_id.get(&id).copied()),
            };
            // A rowid now naming another record is a stale hint: that node is read by id.
            if let (Some(slot), Some(id), Some(data)) =
                (slot, id, row.get(2).and_then(|c| c.as_bytes()))
                && key(&nodes[slot]).0 == id
            {
                found[slot] = true;
                let window = row.get(3).and_then(|c| c.as_i64()).map(Window::unpacked);
                each(slot, data, window);
            }
            Ok(())
        })?;
    }
    // Nodes without a rowid, or whose rowid named another record: by id.
    for slot in (0..nodes.len()).filter(|i| !found[*i]) {
        if let Some(data) = record_text(tx, org, key(&nodes[slot]).0)? {
            each(slot, data.as_bytes(), None);
        }
    }
    Ok(())
}

/// `?, ?, ...`: `n` placeholders.
pub fn placeholders(n: usize) -> String {
    let mut s = String::with_capacity(n * 3);
    for i in 0..n {
        if i > 0 {
            s.push_str(", ");
        }
        s.push('?');
    }
    s
}

/// Indexes on resource tables the deliverable reads need (run after the resource tables exist).
pub fn extra_ddl(dialect: Dialect) -> Vec<String> {
    let expr = |f: &str| dialect.text_expr(&FieldPath::parse(f).expect("static path"));
    vec![
        format!(
            "CREATE INDEX IF NOT EXISTS ix_work_session_deliverable ON work_session (organization_id, {})",
            expr("deliverableId")
        ),
        format!(
            "CREATE INDEX IF NOT EXISTS ix_work_session_worker ON work_session (organization_id, {})",
            expr("workerId")
        ),
        // A schedule action reads the dependencies of its order only
        // (`deliverables/actions.rs` `load_plan`).
        format!(
            "CREATE INDEX IF NOT EXISTS ix_dependency_predecessor ON dependency (organization_id, {})",
            expr("predecessorId")
        ),
        // Readiness reads the predecessors of one successor (`deliverables/readiness.rs`).
        format!(
            "CREATE INDEX IF NOT EXISTS ix_dependency_successor ON dependency (organization_id, {})",
            expr("successorId")
        ),
    ]
}

/// Fills the tree index of databases that held deliverables before it existed, and on SQLite
/// the record rowids it holds (missing, or stale after a `VACUUM` renumbered the rows).
pub fn backfill_tree(tx: &mut dyn Tx) -> StoreResult<()> {
    fill_tree(tx)?;
    if tx.dialect() == Dialect::Sqlite {
        let (t, d) = (TREE, TABLE);
        tx.execute(
            &format!(
                "UPDATE {t} SET rid = (SELECT x.rowid FROM {d} x WHERE x.organization_id = {t}.organization_id AND x.id = {t}.id) \
                 WHERE rid IS NULL OR NOT EXISTS (SELECT 1 FROM {d} x WHERE x.rowid = {t}.rid \
                 AND x.organization_id = {t}.organization_id AND x.id = {t}.id)"
            ),
            &[],
        )?;
    }
    Ok(())
}

fn fill_tree(tx: &mut dyn Tx) -> StoreResult<()> {
    let has_tree = !tx
        .query(&format!("SELECT id FROM {} LIMIT 1", TREE), &[])?
        .is_empty();
    if has_tree {
        return Ok(());
    }
    let rows = tx.query(
        &format!("SELECT organization_id, id, data FROM {}", TABLE),
        &[],
    )?;
    if rows.is_empty() {
        return Ok(());
    }
    let mut parent: HashMap<(String, String), Option<String>> = HashMap::new();
    for r in &rows {
        let (Some(org), Some(id), Some(data)) = (
            r.first().and_then(|v| v.as_str()),
            r.get(1).and_then(|v| v.as_str()),
            r.get(2).and_then(|v| v.as_str()),
        ) else {
            continue;
        };
        let v: serde_json::Value = serde_json::from_str(data).unwrap_or_default();
        let p = v
            .get("parentId")
            .and_then(|p| p.as_str())
            .map(str::to_string);
        parent.insert((org.to_string(), id.to_string()), p);
    }
    for (i, ((org, id), _)) in parent.iter().enumerate() {
        let mut path = vec![id.clone()];
        let mut cur = parent.get(&(org.clone(), id.clone())).cloned().flatten();
        while let Some(p) = cur {
            if path.contains(&p) || path.len() > 1000 {
                break;
            }
            path.push(p.clone());
            cur = parent.get(&(org.clone(), p)).cloned().flatten();
        }
        path.reverse();
        let text: String = path.iter().map(|p| format!("{p}/")).collect();
        let own_parent = parent.get(&(org.clone(), id.clone())).cloned().flatten();
        tx.execute(
            &format!(
                "INSERT INTO {} (organization_id, id, parent_id, root_id, path, sort_key) VALUES (?, ?, ?, ?, ?, ?)",
                TREE
            ),
            &[
                org.as_str().into(),
                id.as_str().into(),
                own_parent.into(),
                path[0].as_str().into(),
                text.into(),
                SqlValue::Int(i as i64),
            ],
        )?;
    }
    Ok(())
}

// Identifiers (`deliverables::identifiers`).

/// The prefix of generated identifiers.
pub const PREFIX: &str = "D-";
/// The counter row's scope (one counter per organization and scope).
pub const IDENTIFIER_SCOPE: &str = "deliverable";

/// The identifier of number `n`.
pub fn format(n: i64) -> String {
    format!("{PREFIX}{n:06}")
}

/// The number of an identifier in the generated form (`D-` and 1 to 18 digits), if it is one.
pub fn number_of(identifier: &str) -> Option<i64> {
    let digits = identifier.trim().strip_prefix(PREFIX)?;
    if digits.is_empty() || digits.len() > 18 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Serializes the transactions that write the organization's work trees, until they end
/// (`deliverables::tree`, docs/deliverables.md "Concurrent writers"): a transaction-scoped
/// advisory lock on PostgreSQL, nothing on SQLite, whose writers are serialized anyway.
pub fn lock_trees(tx: &mut dyn Tx, org: Uuid) -> StoreResult<()> {
    super::lock_scope(tx, &format!("deliverable-trees:{org}"))
}

/// Takes `count` numbers of the organization's deliverable identifier counter, none below
/// `at_least`; answers the first. `count` 0 only moves the counter to at least `at_least` (and
/// locks its row). The tree lock ([`lock_trees`]) is taken first: a create takes both, and
/// always in this order, so two creates never wait for each other's second lock.
pub fn take_numbers(tx: &mut dyn Tx, org: Uuid, count: i64, at_least: i64) -> StoreResult<i64> {
    lock_trees(tx, org)?;
    let greatest = tx.dialect().greatest();
    let start = at_least.max(1);
    let rows = tx.query(
        &format!(
            "INSERT INTO identifier_counters (organization_id, scope, next) VALUES (?, ?, ?) \
             ON CONFLICT (organization_id, scope) DO UPDATE \
             SET next = {greatest}(identifier_counters.next, ?) + ? RETURNING next"
        ),
        &[
            org.into(),
            IDENTIFIER_SCOPE.into(),
            SqlValue::Int(start + count),
            SqlValue::Int(start),
            SqlValue::Int(count),
        ],
    )?;
    let next = rows
        .first()
        .and_then(|r| r.first())
        .and_then(SqlValue::as_i64)
        .unwrap_or(start + count);
    Ok(next - count)
}

/// Migration: gives every stored deliverable without an identifier one
/// ([`backfill_identifiers_of`] for each organization holding such a deliverable).
pub fn backfill_identifiers(tx: &mut dyn Tx) -> StoreResult<()> {
    let expr = identifier_expr(tx.dialect());
    let orgs = tx.query(
        &format!(
            "SELECT DISTINCT organization_id FROM deliverable WHERE {expr} IS NULL OR TRIM({expr}) = ''"
        ),
        &[],
    )?;
    for org in orgs {
        if let Some(org) = org
            .first()
            .and_then(SqlValue::as_str)
            .and_then(|s| Uuid::parse_str(s).ok())
        {
            backfill_identifiers_of(tx, org)?;
        }
    }
    Ok(())
}

fn identifier_expr(dialect: Dialect) -> String {
    dialect.text_expr(&FieldPath::parse("identifier").expect("static path"))
}

/// Gives the organization's deliverables without an identifier one each, in creation order,
/// numbered after every number its identifiers and its counter already use; answers how many.
/// The records keep their `updatedAt` (nothing a user did changed).
pub fn backfill_identifiers_of(tx: &mut dyn Tx, org: Uuid) -> StoreResult<usize> {
    let expr = identifier_expr(tx.dialect());
    let used = tx.query(
        &format!("SELECT {expr} FROM deliverable WHERE organization_id = ? AND {expr} LIKE 'D-%'"),
        &[org.into()],
    )?;
    let largest = used
        .iter()
        .filter_map(|r| r.first().and_then(SqlValue::as_str).and_then(number_of))
        .max()
        .unwrap_or(0);
    let blank = tx.query(
        &format!(
            "SELECT id, data FROM deliverable WHERE organization_id = ? \
             AND ({expr} IS NULL OR TRIM({expr}) = '') ORDER BY created_at, id"
        ),
        &[org.into()],
    )?;
    if blank.is_empty() {
        return Ok(0);
    }
    let mut n = take_numbers(tx, org, blank.len() as i64, largest.saturating_add(1))?;
    for row in &blank {
        let (Some(id), Some(data)) = (
            row.first().and_then(SqlValue::as_str),
            row.get(1).and_then(SqlValue::as_str),
        ) else {
            continue;
        };
        let Ok(Value::Object(mut record)) = serde_json::from_str::<Value>(data) else {
            continue;
        };
        record.insert("identifier".into(), json!(format(n)));
        n += 1;
        tx.execute(
            "UPDATE deliverable SET data = ? WHERE organization_id = ? AND id = ?",
            &[
                Value::Object(record).to_string().into(),
                org.into(),
                id.into(),
            ],
        )?;
    }
    Ok(blank.len())
}

/// Deliverables stored before the alert instants existed (`computed.lateAt`, ...) get them,
/// organization by organization, each forest computed by core (`tree::backfill_alerts`). The
/// records keep their `updatedAt` (nothing a user did changed); a record that does not read
/// as a deliverable is left as it is.
pub fn backfill_alerts(tx: &mut dyn Tx) -> StoreResult<()> {
    let orgs = tx.query("SELECT DISTINCT organization_id FROM deliverable", &[])?;
    for org in orgs {
        let Some(org) = org.first().and_then(SqlValue::as_str).map(str::to_string) else {
            continue;
        };
        let rows = tx.query(
            "SELECT data FROM deliverable WHERE organization_id = ?",
            &[org.as_str().into()],
        )?;
        let mut nodes: Vec<prodops_core::deliverable::Deliverable> = rows
            .iter()
            .filter_map(|r| r.first().and_then(SqlValue::as_str))
            .filter_map(|data| serde_json::from_str(data).ok())
            .collect();
        for i in prodops_core::tree::backfill_alerts(&mut nodes, chrono::Utc::now()) {
            let node = &nodes[i];
            let data = serde_json::to_string(node).map_err(StoreError::other)?;
            tx.execute(
                "UPDATE deliverable SET data = ? WHERE organization_id = ? AND id = ?",
                &[data.into(), org.as_str().into(), node.id.to_string().into()],
            )?;
        }
    }
    Ok(())
}

/// Migration step: deliverable rows get their alert window (`records::ALERT_WINDOW_COLUMN`),
/// computed from the text each one stores, organization by organization. From then on every
/// write of a deliverable's text sets it (store/records.rs). Writes that change only what the
/// window does not depend on (an identifier, [`backfill_identifiers_of`]) leave it as it is.
pub fn add_alert_windows(tx: &mut dyn Tx) -> StoreResult<()> {
    let column = super::records::ALERT_WINDOW_COLUMN;
    tx.execute(
        &format!("ALTER TABLE {TABLE} ADD COLUMN {column} BIGINT"),
        &[],
    )?;
    let orgs = tx.query(
        &format!("SELECT DISTINCT organization_id FROM {TABLE}"),
        &[],
    )?;
    for org in orgs {
        let Some(org) = org.first().and_then(SqlValue::as_str).map(str::to_string) else {
            continue;
        };
        let rows = tx.query(
            &format!("SELECT id, data FROM {TABLE} WHERE organization_id = ?"),
            &[org.as_str().into()],
        )?;
        for row in rows {
            let (Some(id), Some(data)) = (
                row.first().and_then(SqlValue::as_str),
                row.get(1).and_then(SqlValue::as_str),
            ) else {
                continue;
            };
            let Some(window) = super::records::alert_window_of(data.as_bytes()) else {
                continue;
            };
            tx.execute(
                &format!("UPDATE {TABLE} SET {column} = ? WHERE organization_id = ? AND id = ?"),
                &[SqlValue::Int(window), org.as_str().into(), id.into()],
            )?;
        }
    }
    Ok(())
}

// ----- the tree index ------------------------------------------------------------------------

fn uuid_of(v: &SqlValue) -> Option<Uuid> {
    v.as_str().and_then(|s| Uuid::parse_str(s).ok())
}

fn row_of(r: &[SqlValue]) -> Option<TreeRow> {
    Some(TreeRow {
        id: uuid_of(r.first()?)?,
        parent_id: r.get(1).and_then(uuid_of),
        root_id: uuid_of(r.get(2)?)?,
        path: r.get(3)?.as_str()?.to_string(),
        sort_key: r.get(4)?.as_i64()?,
    })
}

/// The exclusive upper bound of the paths below `path` (which ends with `/`).
pub fn path_upper(path: &str) -> String {
    let mut upper = path[..path.len().saturating_sub(1)].to_string();
    upper.push('0');
    upper
}

pub fn tree_row(tx: &mut dyn Tx, org: Uuid, id: Uuid) -> StoreResult<Option<TreeRow>> {
    let rows = tx.query(
        &format!(
            "SELECT id, parent_id, root_id, path, sort_key FROM {TREE} WHERE organization_id = ? AND id = ?"
        ),
        &[org.into(), id.into()],
    )?;
    Ok(rows.first().and_then(|r| row_of(r)))
}

/// The tree rows of the deliverables among `ids` that exist, by id (one read per chunk).
pub fn tree_rows(tx: &mut dyn Tx, org: Uuid, ids: &[Uuid]) -> StoreResult<HashMap<Uuid, TreeRow>> {
    let mut found = HashMap::with_capacity(ids.len());
    for chunk in ids.chunks(500) {
        let marks = vec!["?"; chunk.len()].join(", ");
        let mut params: Vec<SqlValue> = Vec::with_capacity(chunk.len() + 1);
        params.push(org.into());
        params.extend(chunk.iter().map(|id| SqlValue::from(*id)));
        let rows = tx.query(
            &format!(
                "SELECT id, parent_id, root_id, path, sort_key FROM {TREE} \
                 WHERE organization_id = ? AND id IN ({marks})"
            ),
            &params,
        )?;
        for row in rows.iter().filter_map(|r| row_of(r)) {
            found.insert(row.id, row);
        }
    }
    Ok(found)
}

/// The rows of a node's subtree, the node included, in any order.
pub fn subtree_rows(tx: &mut dyn Tx, org: Uuid, top: &TreeRow) -> StoreResult<Vec<TreeRow>> {
    let rows = tx.query(
        &format!(
            "SELECT id, parent_id, root_id, path, sort_key FROM {TREE} \
             WHERE organization_id = ? AND path >= ? AND path < ?"
        ),
        &[
            org.into(),
            top.path.clone().into(),
            path_upper(&top.path).into(),
        ],
    )?;
    Ok(rows.iter().filter_map(|r| row_of(r)).collect())
}

/// The rows of a node's direct children, in sibling order.
pub fn child_rows(tx: &mut dyn Tx, org: Uuid, id: Uuid) -> StoreResult<Vec<TreeRow>> {
    let rows = tx.query(
        &format!(
            "SELECT id, parent_id, root_id, path, sort_key FROM {TREE} \
             WHERE organization_id = ? AND parent_id = ? ORDER BY sort_key, id"
        ),
        &[org.into(), id.into()],
    )?;
    Ok(rows.iter().filter_map(|r| row_of(r)).collect())
}

/// The sort key a new last child of `parent` takes.
pub fn next_sort_key(tx: &mut dyn Tx, org: Uuid, parent: Uuid) -> StoreResult<i64> {
    let next = tx.query(
        &format!(
            "SELECT COALESCE(MAX(sort_key), -1) + 1 FROM {TREE} WHERE organization_id = ? AND parent_id = ?"
        ),
        &[org.into(), parent.into()],
    )?;
    Ok(next
        .first()
        .and_then(|r| r.first())
        .and_then(SqlValue::as_i64)
        .unwrap_or(0))
}

pub fn set_sort_key(tx: &mut dyn Tx, org: Uuid, id: Uuid, key: i64) -> StoreResult<()> {
    tx.execute(
        &format!("UPDATE {TREE} SET sort_key = ? WHERE organization_id = ? AND id = ?"),
        &[SqlValue::Int(key), org.into(), id.into()],
    )?;
    Ok(())
}

/// A node of a subtree's index range, as a hierarchy read orders and fetches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexNode {
    pub id: Uuid,
    pub sort_key: i64,
    /// On SQLite, the rowid of the node's record (a hint, see `store::deliverables::records_join`).
    pub rid: Option<i64>,
    /// Its depth below the root (the number of ids in its path).
    pub depth: usize,
}

/// The index rows of a node's subtree, the node included, in path order: the node first, and
/// each node's subtree as one stretch right after it, siblings by id (one index range, read in
/// its order; no record is read).
pub fn subtree_index(tx: &mut dyn Tx, org: Uuid, top: &TreeRow) -> StoreResult<Vec<IndexNode>> {
    let sql = format!(
        "SELECT id, sort_key, rid, path FROM {TREE} \
         WHERE organization_id = ? AND path >= ? AND path < ? ORDER BY path"
    );
    let params = [
        org.into(),
        top.path.clone().into(),
        path_upper(&top.path).into(),
    ];
    let mut out = Vec::new();
    tx.for_each_row(&sql, &params, &mut |row| {
        if let Some(id) = row
            .first()
            .and_then(|c| c.as_bytes())
            .and_then(|s| Uuid::try_parse_ascii(s).ok())
        {
            out.push(IndexNode {
                id,
                sort_key: row.get(1).and_then(|c| c.as_i64()).unwrap_or(0),
                rid: row.get(2).and_then(|c| c.as_i64()),
                // Each id in a path is 36 characters and a '/' (SQL's LENGTH would count
                // characters, scanning the text).
                depth: row.get(3).and_then(|c| c.as_bytes()).map_or(0, <[u8]>::len) / 37,
            });
        }
        Ok(())
    })?;
    Ok(out)
}

/// The statement reading the records of `table` whose `field_expr` (a [`Tx::text_expr`] with
/// an expression index behind it) names a node of a subtree: parameters organization, path,
/// upper path. The subtree's range of the path index comes first (`CROSS JOIN`: SQLite has no
/// statistics to choose it), then each node's records through the field's index; `node_id` is
/// `t.id` as [`Tx::plain_column`] gives it, since on SQLite the TEXT column's affinity kept the
/// expression index out of use and each node scanned the organization's records
/// (`prodops-server/tests/lookup_plans.rs`).
pub fn subtree_records_sql(table: &str, field_expr: &str, node_id: &str) -> String {
    format!(
        "SELECT data FROM {TREE} t CROSS JOIN {table} r \
         WHERE t.organization_id = ? AND t.path >= ? AND t.path < ? \
         AND r.organization_id = t.organization_id AND {field_expr} = {node_id}"
    )
}

/// A node of a subtree read: id, parent, sort key, length of its path (grows with depth), and
/// the stored JSON text of the record.
pub type RawNode = (Uuid, Option<Uuid>, i64, usize, String);

/// The stored records of a node's subtree, the node included, in any order.
pub fn raw_records(tx: &mut dyn Tx, org: Uuid, top: &TreeRow) -> StoreResult<Vec<RawNode>> {
    let rows = tx.query(
        &format!(
            "SELECT t.id, t.parent_id, t.sort_key, LENGTH(t.path), d.data FROM {TREE} t {} \
             WHERE t.organization_id = ? AND t.path >= ? AND t.path < ?",
            records_join(&*tx)
        ),
        &[
            org.into(),
            top.path.clone().into(),
            path_upper(&top.path).into(),
        ],
    )?;
    let mut out = Vec::with_capacity(rows.len());
    for mut r in rows {
        let data = r.pop().and_then(SqlValue::into_string);
        let Some(id) = r.first().and_then(uuid_of) else {
            continue;
        };
        let Some(data) = (match data {
            Some(d) => Some(d),
            None => record_text(tx, org, id)?,
        }) else {
            continue;
        };
        let parent = r.get(1).and_then(uuid_of);
        let key = r.get(2).and_then(SqlValue::as_i64).unwrap_or(0);
        let len = r.get(3).and_then(SqlValue::as_i64).unwrap_or(0) as usize;
        out.push((id, parent, key, len, data));
    }
    Ok(out)
}

/// The statement of `deliverables::dependencies::tree_dependencies`: parameters organization, path, upper path; `node_id`
/// is `t.id` as [`Tx::plain_column`] gives it.
pub fn tree_dependencies_sql(table: &str, pred: &str, succ: &str, node_id: &str) -> String {
    format!(
        "SELECT x.id, t.id, t.path, u.id, u.path \
         FROM {TREE} t CROSS JOIN {table} x CROSS JOIN {TREE} u \
         WHERE t.organization_id = ? AND t.path >= ? AND t.path < ? \
         AND x.organization_id = t.organization_id AND {pred} = {node_id} \
         AND u.organization_id = x.organization_id AND u.id = {succ}"
    )
}

/// A page of the roots (deliverables without a parent) that `select` matches, in its order,
/// and how many match: (stored texts, total). The roots come from the tree index's children
/// by parent (parent NULL first), so the read costs the number of trees, not of nodes.
pub fn roots_page(
    tx: &mut dyn Tx,
    org: Uuid,
    select: &super::records::Select,
) -> StoreResult<(Vec<String>, i64)> {
    let mut args = Vec::new();
    let mut filter = tx.where_clause(org, &select.conds, &mut args);
    filter.push_str(&format!(
        " AND id IN (SELECT id FROM {TREE} WHERE organization_id = ? AND parent_id IS NULL)"
    ));
    args.push(org.into());
    let mut page_args = args.clone();
    page_args.push(SqlValue::Int(select.limit as i64));
    page_args.push(SqlValue::Int(select.offset as i64));
    let values: Vec<String> = tx
        .query(
            &format!(
                "SELECT data FROM {TABLE}{filter}{} LIMIT ? OFFSET ?",
                tx.order_by(&select.sort)
            ),
            &page_args,
        )?
        .into_iter()
        .filter_map(|mut r| r.pop().and_then(SqlValue::into_string))
        .collect();
    let total = tx
        .query(&format!("SELECT COUNT(*) FROM {TABLE}{filter}"), &args)?
        .first()
        .and_then(|r| r.first())
        .and_then(SqlValue::as_i64)
        .unwrap_or(0);
    Ok((values, total))
}

/// The ids of every root (a deliverable without a parent) `conds` match, in the order `sort`
/// gives (the roots of [`roots_page`], unpaged): what a read of whole trees walks. Only ids are
/// kept, so a million roots hold 16 MB.
pub fn root_ids(
    tx: &mut dyn Tx,
    org: Uuid,
    conds: &[super::sql::Cond],
    sort: &[super::sql::Sort],
) -> StoreResult<Vec<Uuid>> {
    let mut args = Vec::new();
    let mut filter = tx.where_clause(org, conds, &mut args);
    filter.push_str(&format!(
        " AND id IN (SELECT id FROM {TREE} WHERE organization_id = ? AND parent_id IS NULL)"
    ));
    args.push(org.into());
    let sql = format!("SELECT id FROM {TABLE}{filter}{}", tx.order_by(sort));
    let mut ids = Vec::new();
    tx.for_each_row(&sql, &args, &mut |row| {
        if let Some(id) = row
            .first()
            .and_then(|c| c.as_bytes())
            .and_then(|s| Uuid::try_parse_ascii(s).ok())
        {
            ids.push(id);
        }
        Ok(())
    })?;
    Ok(ids)
}

/// The id and the JSON text of the field `path` of every deliverable `conds` match, oldest
/// first (`None` where the record has no such field).
pub fn field_values(
    tx: &mut dyn Tx,
    org: Uuid,
    conds: &[super::sql::Cond],
    path: &FieldPath,
) -> StoreResult<Vec<(String, Option<String>)>> {
    let mut params = Vec::new();
    let sql = format!(
        "SELECT id, {} FROM {TABLE}{} ORDER BY created_at, id",
        tx.json_expr(path),
        tx.where_clause(org, conds, &mut params)
    );
    Ok(tx
        .query(&sql, &params)?
        .into_iter()
        .filter_map(|mut r| {
            let text = r.pop().and_then(SqlValue::into_string);
            let id = r.pop()?.into_string()?;
            Some((id, text))
        })
        .collect())
}

/// The length of the longest path of a node's subtree (the node's own when it is a leaf): one
/// read of the path index range.
pub fn longest_path(tx: &mut dyn Tx, org: Uuid, top: &TreeRow) -> StoreResult<Option<usize>> {
    let rows = tx.query(
        &format!(
            "SELECT MAX(LENGTH(path)) FROM {TREE} WHERE organization_id = ? AND path >= ? AND path < ?"
        ),
        &[
            org.into(),
            top.path.clone().into(),
            path_upper(&top.path).into(),
        ],
    )?;
    Ok(rows
        .first()
        .and_then(|r| r.first())
        .and_then(SqlValue::as_i64)
        .map(|n| n as usize))
}

/// Rewrites the index rows of the subtree at `row` for its move under a node whose path makes
/// the moved node's `new_path` (under `new_root`), and sets the node's parent and sort key.
pub fn move_subtree(
    tx: &mut dyn Tx,
    org: Uuid,
    row: &TreeRow,
    new_path: String,
    new_root: Uuid,
    new_parent: Option<Uuid>,
    sort_key: i64,
) -> StoreResult<()> {
    tx.execute(
        &format!(
            "UPDATE {TREE} SET path = CAST(? AS TEXT) || substr(path, CAST(? AS INTEGER)), root_id = ? \
             WHERE organization_id = ? AND path >= ? AND path < ?"
        ),
        &[
            new_path.into(),
            SqlValue::Int(row.path.len() as i64 + 1),
            new_root.into(),
            org.into(),
            row.path.clone().into(),
            path_upper(&row.path).into(),
        ],
    )?;
    tx.execute(
        &format!(
            "UPDATE {TREE} SET parent_id = ?, sort_key = ? WHERE organization_id = ? AND id = ?"
        ),
        &[
            new_parent.into(),
            SqlValue::Int(sort_key),
            org.into(),
            row.id.into(),
        ],
    )?;
    Ok(())
}

/// The children of `parents` (one statement), each as (parent, child, the child's stored
/// text), in sibling order per parent. The text is `None` where the rowid join missed the
/// record ([`records_join`]); [`record_text`] reads it by id.
pub fn children_with_records(
    tx: &mut dyn Tx,
    org: Uuid,
    parents: &[Uuid],
) -> StoreResult<Vec<(Uuid, Uuid, Option<String>)>> {
    let (sql, params) = children_with_records_statement(tx.dialect(), org, parents);
    let rows = with_index_probes(tx, |tx| tx.query(&sql, &params))?;
    Ok(rows
        .into_iter()
        .filter_map(|mut r| {
            let text = r.pop().and_then(SqlValue::into_string);
            Some((
                r.first().and_then(uuid_of)?,
                r.get(1).and_then(uuid_of)?,
                text,
            ))
        })
        .collect())
}

/// The statement of [`children_with_records`] and its parameters; run it through
/// [`with_index_probes`]. Public for the plan tests.
pub fn children_with_records_statement(
    dialect: Dialect,
    org: Uuid,
    parents: &[Uuid],
) -> (String, Vec<SqlValue>) {
    let mut params: Vec<SqlValue> = Vec::with_capacity(parents.len() + 1);
    let ids = parents.iter().map(|id| SqlValue::from(*id));
    let sql = match dialect {
        Dialect::Sqlite => {
            params.push(org.into());
            params.extend(ids);
            format!(
                "SELECT t.parent_id, t.id, d.data FROM {TREE} t {} \
                 WHERE t.organization_id = ? AND t.parent_id IN ({}) \
                 ORDER BY t.parent_id, t.sort_key, t.id",
                records_join_of(dialect),
                placeholders(parents.len())
            )
        }
        // One probe of the parent index per parent, whatever the statistics say. With
        // `parent_id IN (...)` PostgreSQL estimated 500 parents, none of them among the most
        // common values, as most of the organization's tree (a few hundred parents hold every
        // node) and read the organization's whole range of the index with the list as a
        // filter: 100-120 ms a statement once the organization held 200,000 nodes, a tree
        // import's rate falling with the organization's size (bench/README.md,
        // "tree-import-shapes"). `OFFSET 0` keeps the subquery from being flattened into a
        // join the planner could turn back into that scan. Even per parent, statistics that
        // put one parent over most nodes (an order of 2,000 steps, analyzed after its import)
        // estimate every probe at the whole organization, and PostgreSQL read the
        // organization's range of the primary key with the parent as a filter, 0.9 ms a
        // parent; and for an organization they do not know yet (its first import), estimated
        // at a row, the primary key's or the path index's range looked as cheap as the probe
        // (650 ms a statement). The subquery's order (`sort_key, id` under one parent) is the
        // parent index's own, and [`with_index_probes`] turns sorts off: every other index
        // needs a sort per parent, so the parent index is the only plan without one.
        Dialect::Postgres => {
            params.extend(ids);
            params.push(org.into());
            format!(
                "SELECT t.parent_id, t.id, d.data FROM (VALUES {}) AS p (id) \
                 CROSS JOIN LATERAL (SELECT c.organization_id, c.parent_id, c.id, c.sort_key \
                 FROM {TREE} c WHERE c.organization_id = ? AND c.parent_id = p.id \
                 ORDER BY c.sort_key, c.id OFFSET 0) t {} \
                 ORDER BY t.parent_id, t.sort_key, t.id",
                vec!["(?)"; parents.len()].join(", "),
                records_join_of(dialect),
            )
        }
    };
    (sql, params)
}

/// Runs `read` with PostgreSQL's sequential scans, bitmap scans and sorts off, for a statement
/// whose only right plan is index probes that read rows in the order it asks for: statistics
/// taken early in an import (few parents, thousands of children each) made a scan of the
/// whole tree table per parent look cheaper than the probe, seconds per statement as the table
/// grew. Transaction-local and set back at once to what they were, so the rest of the
/// transaction plans as before. Only in a transaction block (a write, where imports read): a
/// plain read's statements are transactions of their own, where a transaction-local setting
/// would only cost two round trips and a warning. Nothing on SQLite.
pub fn with_index_probes<T>(
    tx: &mut dyn Tx,
    read: impl FnOnce(&mut dyn Tx) -> StoreResult<T>,
) -> StoreResult<T> {
    const SETTINGS: [&str; 3] = ["enable_seqscan", "enable_bitmapscan", "enable_sort"];
    if tx.dialect() != Dialect::Postgres || !tx.in_block() {
        return read(tx);
    }
    // One statement each way, transaction-local (as `SET LOCAL`). The values before are read
    // in a subquery, which runs before the outer list turns them off; they are set back by
    // value rather than from `pg_settings` (a scan of every setting, 0.8 ms a call).
    let before = (SETTINGS.iter().enumerate())
        .map(|(i, s)| format!("current_setting('{s}') AS v{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    let off = SETTINGS
        .map(|s| format!("set_config('{s}', 'off', true)"))
        .join(", ");
    let values = tx.query(
        &format!("SELECT s.*, {off} FROM (SELECT {before} OFFSET 0) s"),
        &[],
    )?;
    let restore: Vec<SqlValue> = values
        .into_iter()
        .next()
        .map(|row| row.into_iter().take(SETTINGS.len()).collect())
        .unwrap_or_default();
    let out = read(tx)?;
    let back = SETTINGS
        .map(|s| format!("set_config('{s}', ?, true)"))
        .join(", ");
    tx.query(&format!("SELECT {back}"), &restore)?;
    Ok(out)
}

/// The workers of the open sessions (no `endDate`) on each of `deliverables` (one statement),
/// as (deliverable, worker) pairs in any order; `table` holds the work sessions.
pub fn open_session_workers(
    tx: &mut dyn Tx,
    org: Uuid,
    table: &str,
    deliverables: &[Uuid],
) -> StoreResult<Vec<(Uuid, Uuid)>> {
    let path = |f: &str| FieldPath::parse(f).expect("static path");
    let deliverable = tx.text_expr(&path("deliverableId"));
    let worker = tx.text_expr(&path("workerId"));
    let end = tx.text_expr(&path("endDate"));
    let mut params: Vec<SqlValue> = Vec::with_capacity(deliverables.len() + 1);
    params.push(org.into());
    params.extend(deliverables.iter().map(|id| SqlValue::from(*id)));
    let rows = tx.query(
        &format!(
            "SELECT {deliverable}, {worker} FROM {table} WHERE organization_id = ? \
             AND {deliverable} IN ({}) AND {end} IS NULL",
            placeholders(deliverables.len())
        ),
        &params,
    )?;
    Ok(rows
        .iter()
        .filter_map(|r| Some((r.first().and_then(uuid_of)?, r.get(1).and_then(uuid_of)?)))
        .collect())
}

/// Gives a bulk call's unused identifier numbers (`next` up to `end`) back to the counter,
/// unless another call has taken numbers since.
pub fn give_back_numbers(tx: &mut dyn Tx, org: Uuid, next: i64, end: i64) -> StoreResult<()> {
    tx.execute(
        "UPDATE identifier_counters SET next = ? \
         WHERE organization_id = ? AND scope = ? AND next = ?",
        &[
            SqlValue::Int(next),
            org.into(),
            IDENTIFIER_SCOPE.into(),
            SqlValue::Int(end),
        ],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn record_reads_by_rowid_search_the_table_by_rowid() {
        let store = super::super::Store::open("sqlite::memory:").await.unwrap();
        store
            .read(move |tx| {
                let sql = format!(
                    "EXPLAIN QUERY PLAN SELECT rowid, id, data FROM {TABLE} WHERE rowid IN ({}) AND +organization_id = ?",
                    placeholders(512)
                );
                let mut params: Vec<SqlValue> = (0..512).map(SqlValue::Int).collect();
                params.push(Uuid::nil().into());
                let plan: Vec<String> = tx
                    .query(&sql, &params)?
                    .into_iter()
                    .filter_map(|r| r.last().and_then(|c| c.as_str()).map(str::to_string))
                    .collect();
                assert!(
                    plan.iter().any(|p| p.contains("INTEGER PRIMARY KEY"))
                        && !plan.iter().any(|p| p.contains("INDEX")),
                    "{plan:?}"
                );
                Ok::<_, super::super::StoreError>(())
            })
            .await
            .unwrap();
    }

    /// A deliverable's record text with these alert members (the server's tail of `computed`).
    fn record(id: Uuid, late: bool, alert: &str, ordinal: u8, late_at: &str) -> Value {
        serde_json::from_str(&format!(
            r#"{{"id":"{id}","progress":null,"computed":{{"isAtRisk":false,"isLate":{late},"effectiveDueDate":null,"effectiveDueDateIsInherited":false,"effectiveDueDateIsLate":false,"alertType":"{alert}","alertTypeOrdinal":{ordinal},"effectiveDueAt":null,"lateAt":{late_at},"atRiskUntil":null}},"isArchived":false,"createdAt":"2026-11-25T00:00:00.000Z","updatedAt":"2026-11-25T00:00:00.000Z"}}"#
        ))
        .unwrap()
    }

    /// Every row's window columns, by id, and the window its text gives.
    fn windows(tx: &mut dyn Tx) -> Vec<(String, Option<i64>, Option<i64>)> {
        tx.query(
            &format!("SELECT id, alerts_window, data FROM {TABLE} ORDER BY id"),
            &[],
        )
        .unwrap()
        .into_iter()
        .map(|r| {
            let data = r[2].as_str().unwrap().as_bytes();
            (
                r[0].as_str().unwrap().to_string(),
                r[1].as_i64(),
                super::super::records::alert_window_of(data),
            )
        })
        .collect()
    }

    /// Every way the store writes a deliverable's text sets the window from that text, and the
    /// migration step gives rows written before it theirs.
    #[tokio::test]
    async fn every_write_of_a_deliverable_keeps_its_alert_window() {
        use super::super::records;
        let store = super::super::Store::open("sqlite::memory:").await.unwrap();
        store
            .write(move |tx| {
                let org = Uuid::from_u128(1);
                let id = |n: u128| Uuid::from_u128(0x100 + n);
                let soon = "\"2026-11-26T00:00:00Z\"";
                // Late-from-tomorrow but not late yet: a window up to tomorrow.
                records::insert(tx, TABLE, org, &record(id(0), false, "no-risk", 0, soon))?;
                // Answers no moment gives (late without an instant): no window.
                records::insert(tx, TABLE, org, &record(id(1), true, "late", 2, "null"))?;
                let rows: Vec<records::NewRow> = (2..70)
                    .map(|n| {
                        records::NewRow::of_text(
                            record(
                                id(n),
                                n % 2 == 0,
                                if n % 2 == 0 { "late" } else { "no-risk" },
                                if n % 2 == 0 { 2 } else { 0 },
                                soon,
                            )
                            .to_string(),
                        )
                    })
                    .collect::<Result<_, _>>()?;
                records::insert_rows(tx, TABLE, org, &rows)?;
                records::update(tx, TABLE, org, &record(id(0), true, "late", 2, soon))?;
                records::update_text(
                    tx,
                    TABLE,
                    org,
                    id(1),
                    false,
                    "2026-11-25T00:00:00.000Z",
                    record(id(1), false, "no-risk", 0, "null").to_string(),
                )?;
                records::insert(tx, TABLE, org, &record(id(70), true, "late", 2, "null"))?;
                let written = windows(tx);
                assert_eq!(written.len(), 71);
                for (id, stored, of_text) in &written {
                    assert_eq!(stored, of_text, "{id}");
                }
                let tomorrow = prodops_core::alerts::stamp_secs("2026-11-26T00:00:00Z").unwrap();
                let window = |w: Option<i64>| {
                    w.map(|w| {
                        let w = Window::unpacked(w);
                        (w.from, w.until)
                    })
                };
                let end = i64::from(u32::MAX);
                assert_eq!(window(written[0].1), Some((tomorrow, end)));
                assert_eq!(window(written[1].1), Some((0, end)));
                assert_eq!(window(written[3].1), Some((0, tomorrow)));
                assert_eq!(window(written[2].1), Some((tomorrow, end)));
                // Answers no moment gives: none.
                assert_eq!(written[70].1, None);

                // As a database from before the windows: the step adds and fills them. (The
                // later step's indexes on the window, `alert_times`, did not exist then.)
                for index in ["ix_deliverable_alert_until", "ix_deliverable_alert_from"] {
                    tx.execute(&format!("DROP INDEX IF EXISTS {index}"), &[])?;
                }
                tx.execute(
                    &format!(
                        "ALTER TABLE {TABLE} DROP COLUMN {}",
                        records::ALERT_WINDOW_COLUMN
                    ),
                    &[],
                )?;
                add_alert_windows(tx)?;
                let filled = windows(tx);
                assert_eq!(
                    filled.iter().map(|w| &w.1).collect::<Vec<_>>(),
                    written.iter().map(|w| &w.1).collect::<Vec<_>>()
                );
                Ok::<_, super::super::StoreError>(())
            })
            .await
            .unwrap();
    }
}
