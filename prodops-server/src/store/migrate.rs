//! Migrations, run on every start inside one transaction; idempotent.
//!
//! Fixed tables come from numbered steps recorded in `schema_migrations`. Resource tables are
//! derived from the resource descriptions of `prodops-core` (one table per resource, its list
//! index and its unique indexes), created when missing, so a new resource needs no hand-written
//! migration.

use prodops_core::registry;
use prodops_core::resource::ResourceDesc;

use crate::store::sql::{FieldPath, bounded_name, filter_column};
use crate::store::{Dialect, SqlValue, StoreResult, Tx};

/// Numbered steps; `{bool}` stands for the dialect's boolean column type.
const STEPS: &[(i64, &str)] = &[
    (
        1,
    "CREATE TABLE IF NOT EXISTS organizations (
        id TEXT PRIMARY KEY, name TEXT NOT NULL, flags TEXT NOT NULL, created_at TEXT NOT NULL);
     CREATE TABLE IF NOT EXISTS api_keys (
        id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, key_hash TEXT NOT NULL UNIQUE,
        is_admin {bool} NOT NULL, permissions TEXT NOT NULL, created_at TEXT NOT NULL, revoked_at TEXT);
     CREATE INDEX IF NOT EXISTS ix_api_keys_org ON api_keys (organization_id);
     CREATE TABLE IF NOT EXISTS idempotency_keys (
        organization_id TEXT NOT NULL, idem_key TEXT NOT NULL, fingerprint TEXT NOT NULL,
        status INTEGER NOT NULL, body TEXT NOT NULL, created_at BIGINT NOT NULL,
        PRIMARY KEY (organization_id, idem_key));
     CREATE INDEX IF NOT EXISTS ix_idempotency_created ON idempotency_keys (created_at);
     CREATE TABLE IF NOT EXISTS rate_limit_windows (
        bucket TEXT NOT NULL, window_start BIGINT NOT NULL, count BIGINT NOT NULL,
        PRIMARY KEY (bucket, window_start));
     CREATE TABLE IF NOT EXISTS jobs (
        id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, kind TEXT NOT NULL, payload TEXT NOT NULL,
        status TEXT NOT NULL, attempts INTEGER NOT NULL, run_after BIGINT NOT NULL, locked_until BIGINT,
        last_error TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
     CREATE INDEX IF NOT EXISTS ix_jobs_ready ON jobs (status, run_after);",
    ),
    (
        2,
        // Row counts per resource table, organization and archived flag, kept by triggers so that
        // the total of a plain list is one lookup instead of a scan. `counted_tables` records
        // which tables' counts were seeded from their rows.
        "CREATE TABLE IF NOT EXISTS record_counts (
        table_name TEXT NOT NULL, organization_id TEXT NOT NULL, is_archived {bool} NOT NULL, n BIGINT NOT NULL,
        PRIMARY KEY (table_name, organization_id, is_archived));
     CREATE TABLE IF NOT EXISTS counted_tables (table_name TEXT PRIMARY KEY)",
    ),
    (
        3,
        // The window length of each rate-limit row, so that cleanup follows the row's own window.
        "ALTER TABLE rate_limit_windows ADD COLUMN window_secs BIGINT NOT NULL DEFAULT 60",
    ),
    (
        10,
        // The tree index of deliverables (deliverables/tree.rs, store/deliverables.rs):
        // materialized path from the root (compared bytewise, so a subtree is one index range)
        // and the sort key among siblings.
        // Both indexes cover what subtree and children reads select, so they never visit rows.
        "CREATE TABLE IF NOT EXISTS deliverable_tree (
        organization_id TEXT NOT NULL, id TEXT NOT NULL, parent_id TEXT, root_id TEXT NOT NULL,
        path TEXT {collate_c} NOT NULL, sort_key BIGINT NOT NULL, PRIMARY KEY (organization_id, id));
     CREATE INDEX IF NOT EXISTS ix_deliverable_tree_path ON deliverable_tree (organization_id, path, id, parent_id, sort_key);
     CREATE INDEX IF NOT EXISTS ix_deliverable_tree_parent ON deliverable_tree (organization_id, parent_id, sort_key, id)",
    ),
    (
        11,
        // On SQLite, the rowid of each node's record (store/deliverables.rs `records_join`): tree
        // reads fetch records by rowid instead of a second index search by id. NULL on
        // PostgreSQL; filled and repaired on start (`store::deliverables::backfill_tree`).
        "ALTER TABLE deliverable_tree ADD COLUMN rid BIGINT",
    ),
    (
        12,
        // The path index also covers `rid`, so that a hierarchy read orders a subtree from the
        // index alone (without it, one row lookup per node for the rowid).
        "DROP INDEX IF EXISTS ix_deliverable_tree_path;
     CREATE INDEX IF NOT EXISTS ix_deliverable_tree_path ON deliverable_tree (organization_id, path, id, parent_id, sort_key, rid)",
    ),
    (
        20,
        // Stock on hand and reserved per organization, item and location, in millionths of the
        // item's base unit (exact integer sums); kept by `inventory::post` in the same
        // transaction as the ledger rows it sums.
        "CREATE TABLE IF NOT EXISTS stock (
        organization_id TEXT NOT NULL, item_id TEXT NOT NULL, location_id TEXT NOT NULL,
        shop_id TEXT NOT NULL, on_hand BIGINT NOT NULL, reserved BIGINT NOT NULL, updated_at TEXT NOT NULL,
        PRIMARY KEY (organization_id, item_id, location_id));
     CREATE INDEX IF NOT EXISTS ix_stock_location ON stock (organization_id, location_id)",
    ),
    (
        21,
        // Reservations made by the BOM allocate actions, one per BOM line (millionths);
        // `stock.reserved` is their sum per item and location, kept in the same transaction.
        "CREATE TABLE IF NOT EXISTS reservations (
        organization_id TEXT NOT NULL, bom_line_id TEXT NOT NULL, item_id TEXT NOT NULL,
        location_id TEXT NOT NULL, quantity BIGINT NOT NULL, updated_at TEXT NOT NULL,
        PRIMARY KEY (organization_id, bom_line_id))",
    ),
    (
        24,
        // Stock on hand per organization, item, location and lot of the items tracked by lot
        // or serial (issue 37), in millionths; kept by `inventory::post` (inventory/lots.rs) in
        // the same transaction and under the same policy as `stock`, which keeps the totals
        // per item and location. By lot: a serial's stock over every location, a lot's places.
        "CREATE TABLE IF NOT EXISTS stock_lot (
        organization_id TEXT NOT NULL, item_id TEXT NOT NULL, location_id TEXT NOT NULL,
        lot_id TEXT NOT NULL, shop_id TEXT NOT NULL, on_hand BIGINT NOT NULL, updated_at TEXT NOT NULL,
        PRIMARY KEY (organization_id, item_id, location_id, lot_id));
     CREATE INDEX IF NOT EXISTS ix_stock_lot_lot ON stock_lot (organization_id, lot_id)",
    ),
    (
        30,
        // Documents (issue 6): the link-signing secret shared by every replica; uploaded files
        // per organization; accounts (global, by email), invitation tokens (hashed) and the
        // outbox of messages to send.
        "CREATE TABLE IF NOT EXISTS server_secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL);
     CREATE TABLE IF NOT EXISTS blobs (
        organization_id TEXT NOT NULL, document_key TEXT NOT NULL, size_bytes BIGINT NOT NULL,
        mime_type TEXT, sha256 TEXT NOT NULL, created_at TEXT NOT NULL,
        PRIMARY KEY (organization_id, document_key));
     CREATE TABLE IF NOT EXISTS app_users (
        id TEXT PRIMARY KEY, email TEXT NOT NULL UNIQUE, name TEXT NOT NULL, status TEXT NOT NULL,
        created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
     CREATE TABLE IF NOT EXISTS invitations (
        token_hash TEXT PRIMARY KEY, organization_id TEXT NOT NULL, member_id TEXT NOT NULL,
        app_user_id TEXT NOT NULL, created_at TEXT NOT NULL, expires_at TEXT NOT NULL, used_at TEXT);
     CREATE INDEX IF NOT EXISTS ix_invitations_member ON invitations (organization_id, member_id);
     CREATE TABLE IF NOT EXISTS outbox (
        id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, kind TEXT NOT NULL, recipient TEXT NOT NULL,
        subject TEXT NOT NULL, body TEXT NOT NULL, payload TEXT NOT NULL, created_at TEXT NOT NULL,
        sent_at TEXT);
     CREATE INDEX IF NOT EXISTS ix_outbox_org ON outbox (organization_id, created_at)",
    ),
    (
        31,
        // Counts in shards: on PostgreSQL each connection adds to its own shard of a table's
        // count (`pg_backend_pid() % 16`), so concurrent inserts into one table of one
        // organization no longer queue on a single count row until each commits. Readers sum
        // the shards. SQLite has one writer and always uses shard 0.
        // The triggers of step 2's table are replaced as resource tables are set up.
        "CREATE TABLE IF NOT EXISTS record_count_shards (
        table_name TEXT NOT NULL, organization_id TEXT NOT NULL, is_archived {bool} NOT NULL,
        shard INTEGER NOT NULL, n BIGINT NOT NULL,
        PRIMARY KEY (table_name, organization_id, is_archived, shard));
     INSERT INTO record_count_shards (table_name, organization_id, is_archived, shard, n)
        SELECT table_name, organization_id, is_archived, 0, n FROM record_counts;
     DROP TABLE record_counts",
    ),
    (
        40,
        // The counters behind generated identifiers (deliverables/identifiers.rs,
        // store/deliverables.rs): the next number of each organization and scope, moved in the
        // write transaction that uses it.
        "CREATE TABLE IF NOT EXISTS identifier_counters (
        organization_id TEXT NOT NULL, scope TEXT NOT NULL, next BIGINT NOT NULL,
        PRIMARY KEY (organization_id, scope))",
    ),
    (
        42,
        // Named facts about the schema; `resource_ddl` holds the digest of the resource set-up
        // statements last applied in full (see `run`).
        "CREATE TABLE IF NOT EXISTS schema_state (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    ),
    (
        50,
        // The change feed (store/events.rs, docs/events.md): every write's events, numbered per
        // organization by `event_counters` in commit order; `occurred_ms` for pruning by age.
        "CREATE TABLE IF NOT EXISTS event_counters (
        organization_id TEXT PRIMARY KEY, last_seq BIGINT NOT NULL);
     CREATE TABLE IF NOT EXISTS events (
        organization_id TEXT NOT NULL, seq BIGINT NOT NULL, id TEXT NOT NULL, event_type TEXT NOT NULL,
        resource TEXT NOT NULL, record_id TEXT NOT NULL, key_id TEXT, request_id TEXT,
        occurred_at TEXT NOT NULL, occurred_ms BIGINT NOT NULL, data TEXT NOT NULL, changed TEXT,
        PRIMARY KEY (organization_id, seq));
     CREATE INDEX IF NOT EXISTS ix_events_record ON events (organization_id, record_id, seq);
     CREATE INDEX IF NOT EXISTS ix_events_occurred ON events (occurred_ms)",
    ),
    (
        51,
        // An event's `data` may be NULL: a bulk-created record's creation event keeps no copy
        // of the text while the record still holds it (store/events.rs, docs/events.md); the
        // resource tables' `event_keep` triggers copy it in before the record changes.
        "CREATE TABLE events_v2 (
        organization_id TEXT NOT NULL, seq BIGINT NOT NULL, id TEXT NOT NULL, event_type TEXT NOT NULL,
        resource TEXT NOT NULL, record_id TEXT NOT NULL, key_id TEXT, request_id TEXT,
        occurred_at TEXT NOT NULL, occurred_ms BIGINT NOT NULL, data TEXT, changed TEXT,
        PRIMARY KEY (organization_id, seq));
     INSERT INTO events_v2 (organization_id, seq, id, event_type, resource, record_id, key_id, request_id,
        occurred_at, occurred_ms, data, changed)
        SELECT organization_id, seq, id, event_type, resource, record_id, key_id, request_id,
        occurred_at, occurred_ms, data, changed FROM events;
     DROP TABLE events;
     ALTER TABLE events_v2 RENAME TO events;
     CREATE INDEX IF NOT EXISTS ix_events_record ON events (organization_id, record_id, seq);
     CREATE INDEX IF NOT EXISTS ix_events_occurred ON events (occurred_ms)",
    ),
    (
        60,
        // Webhooks (store/webhooks.rs, docs/events.md): each webhook's secret and feed position,
        // and one row per delivery of an event to a webhook, claimed with a lease.
        "CREATE TABLE IF NOT EXISTS webhook_state (
        organization_id TEXT NOT NULL, webhook_id TEXT NOT NULL, secret TEXT NOT NULL,
        last_seq BIGINT NOT NULL, PRIMARY KEY (organization_id, webhook_id));
     CREATE TABLE IF NOT EXISTS webhook_deliveries (
        id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, webhook_id TEXT NOT NULL,
        event_id TEXT NOT NULL, event_seq BIGINT NOT NULL, event_type TEXT NOT NULL,
        status TEXT NOT NULL, attempts BIGINT NOT NULL, next_attempt_ms BIGINT NOT NULL,
        lease_owner TEXT, lease_until_ms BIGINT, last_status BIGINT, last_error TEXT,
        created_at TEXT NOT NULL, updated_at TEXT NOT NULL, delivered_at TEXT,
        UNIQUE (webhook_id, event_id));
     CREATE INDEX IF NOT EXISTS ix_webhook_deliveries_due ON webhook_deliveries (status, next_attempt_ms);
     CREATE INDEX IF NOT EXISTS ix_webhook_deliveries_log ON webhook_deliveries (organization_id, webhook_id, event_seq)",
    ),
    (
        61,
        // Record counts per value of the enum fields users filter by (store/value_counts.rs),
        // kept by triggers, so a filtered count is a lookup however many records match.
        "CREATE TABLE IF NOT EXISTS record_value_counts (
        table_name TEXT NOT NULL, organization_id TEXT NOT NULL, field TEXT NOT NULL, value TEXT NOT NULL,
        is_archived {bool} NOT NULL, shard INTEGER NOT NULL, n BIGINT NOT NULL,
        PRIMARY KEY (table_name, organization_id, field, value, is_archived, shard))",
    ),
    (
        70,
        // The feed's per-event cost on a bulk import (bench/README.md, issue 17): what the events
        // of one transaction share (key, request, time, and the first event's id, from which the
        // others' ids follow) is stored once, in `event_origins`, keyed by the transaction's first
        // number; an event finds its origin as the one with the greatest `first_seq` not above
        // its own `seq`. Existing events get an origin each, with their own id. Pruning goes by those rows (store/events.rs),
        // so `ix_events_occurred` goes. On SQLite both tables are `WITHOUT ROWID`: the primary
        // key is the table, one B-tree less per row. `legacy_alter_table` keeps SQLite from
        // re-checking the resource tables' `event_keep` triggers while `events` is briefly
        // missing between the DROP and the RENAME (PostgreSQL skips PRAGMA statements).
        "PRAGMA legacy_alter_table = ON;
     CREATE TABLE IF NOT EXISTS event_origins (
        organization_id TEXT NOT NULL, first_seq BIGINT NOT NULL, first_id TEXT NOT NULL,
        key_id TEXT, request_id TEXT, occurred_at TEXT NOT NULL, occurred_ms BIGINT NOT NULL,
        PRIMARY KEY (organization_id, first_seq)){without_rowid};
     INSERT INTO event_origins (organization_id, first_seq, first_id, key_id, request_id, occurred_at, occurred_ms)
        SELECT organization_id, seq, id, key_id, request_id, occurred_at, occurred_ms FROM events;
     CREATE TABLE events_v3 (
        organization_id TEXT NOT NULL, seq BIGINT NOT NULL, event_type TEXT NOT NULL,
        resource TEXT NOT NULL, record_id TEXT NOT NULL, data TEXT, changed TEXT,
        PRIMARY KEY (organization_id, seq)){without_rowid};
     INSERT INTO events_v3 (organization_id, seq, event_type, resource, record_id, data, changed)
        SELECT organization_id, seq, event_type, resource, record_id, data, changed FROM events;
     DROP TABLE events;
     ALTER TABLE events_v3 RENAME TO events;
     CREATE INDEX IF NOT EXISTS ix_events_record ON events (organization_id, record_id, seq);
     PRAGMA legacy_alter_table = OFF",
    ),
    (
        71,
        // A claim takes due deliveries webhook by webhook, the least recently served first
        // (store/webhooks.rs, `claim`): each webhook's oldest pending delivery is one probe of
        // this index, so a large backlog of one receiver never stands in front of another
        // webhook's deliveries.
        "ALTER TABLE webhook_state ADD COLUMN last_claim_ms BIGINT NOT NULL DEFAULT 0;
     CREATE INDEX IF NOT EXISTS ix_webhook_deliveries_queue
        ON webhook_deliveries (organization_id, webhook_id, status, next_attempt_ms)",
    ),
    (
        72,
        // The audit trail's index leads with the record id (bench/README.md, issue 17): every
        // event of an organization shares its id, so with the organization first each
        // comparison of an insert's descent walked 36 equal bytes before the record id told
        // the entries apart. The entry holds the same columns (a `WITHOUT ROWID` table's
        // index carries its key anyway); lookups give both ids.
        "DROP INDEX IF EXISTS ix_events_record;
     CREATE INDEX IF NOT EXISTS ix_events_record ON events (record_id, organization_id, seq)",
    ),
];

/// A migration step done by code.
type CodeStep = fn(&mut dyn Tx) -> StoreResult<()>;

/// Steps done by code, once, after the resource tables exist: (version, step).
const CODE_STEPS: &[(i64, CodeStep)] = &[
    // A ledger row is reversed once (`POST /inventory/reverse`), also when two reversals race.
    (29, unique_reversals),
    // Deliverables stored before identifiers were generated get one (and their counters).
    (41, crate::store::deliverables::backfill_identifiers),
    // Deliverables stored before custom property values were indexed get their index rows.
    (43, crate::store::property_index::backfill),
    // Deliverables stored before alerts were answered as of the read get the instants.
    (44, crate::store::deliverables::backfill_alerts),
    // The property value index's rows gained the archived flag and creation time (a new table).
    (62, crate::store::property_index::backfill),
    // Deliverable rows keep the window in which their stored alerts hold (read without
    // looking at the text inside it); existing rows get theirs from their text.
    (63, crate::store::deliverables::add_alert_windows),
    // SQLite: events stored without their text leave `ix_events_record` (now partial) and are
    // found through their records' rowids (store/event_links.rs). Nothing on PostgreSQL.
    (73, crate::store::event_links::migrate),
    // PostgreSQL: the same events leave `ix_events_record` (now partial) for a partial hash
    // index on the record id (store/events.rs). Nothing on SQLite.
    (74, crate::store::events::migrate_created_index),
    // The bounds of the deliverables' alert windows, indexed across organizations, for the job
    // that announces what time changes (store/alert_times.rs).
    (85, crate::store::alert_times::add_indexes),
    // Those indexes hold only the rows a read can find (most rows' bounds are never asked
    // for), and the expression index on the identifier, which no read used any more (filters
    // go by `f_identifier`), goes: each was a write at a random place per deliverable.
    (86, slimmer_deliverable_indexes),
];

fn slimmer_deliverable_indexes(tx: &mut dyn Tx) -> StoreResult<()> {
    crate::store::alert_times::make_indexes_partial(tx)?;
    tx.execute("DROP INDEX IF EXISTS ix_deliverable_identifier", &[])?;
    Ok(())
}

/// The unique index behind "a ledger row is reversed once".
pub const REVERSES_INDEX: &str = "ux_inventory_transaction_reverses";

/// One reversal per ledger row: a unique index on the filter column of `reversesId`, partial,
/// so the rows that reverse nothing (nearly all) cost it nothing.
fn unique_reversals(tx: &mut dyn Tx) -> StoreResult<()> {
    let table = prodops_core::registry::ResourceId::InventoryTransaction
        .kind()
        .desc()
        .table;
    let column = filter_column("reversesId");
    tx.execute(
        &format!(
            "CREATE UNIQUE INDEX IF NOT EXISTS {REVERSES_INDEX} ON {table} (organization_id, {column}) \
             WHERE {column} IS NOT NULL"
        ),
        &[],
    )?;
    Ok(())
}

pub fn run(tx: &mut dyn Tx) -> StoreResult<()> {
    let dialect = tx.dialect();
    if dialect == Dialect::Postgres {
        // Several servers may start at once against one database: one migrates, the others wait.
        tx.query("SELECT pg_advisory_xact_lock(727583901)", &[])?;
    }
    tx.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, applied_at TEXT NOT NULL)",
        &[],
    )?;
    let applied: Vec<i64> = tx
        .query("SELECT version FROM schema_migrations", &[])?
        .into_iter()
        .filter_map(|r| r.first().and_then(SqlValue::as_i64))
        .collect();
    for (version, sql) in STEPS {
        if applied.contains(version) {
            continue;
        }
        for statement in sql.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            if statement.starts_with("PRAGMA") && dialect != Dialect::Sqlite {
                continue;
            }
            tx.execute(
                &statement
                    .replace("{bool}", dialect.bool_column_type())
                    .replace("{collate_c}", collate_c(dialect))
                    .replace("{without_rowid}", without_rowid(dialect)),
                &[],
            )?;
        }
        tx.execute(
            "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)",
            &[
                SqlValue::Int(*version),
                SqlValue::Text(chrono::Utc::now().to_rfc3339()),
            ],
        )?;
    }
    set_up_resources(tx)?;
    crate::store::deliverables::backfill_tree(tx)?;
    for (version, step) in CODE_STEPS {
        if applied.contains(version) {
            continue;
        }
        step(tx)?;
        tx.execute(
            "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)",
            &[
                SqlValue::Int(*version),
                SqlValue::Text(chrono::Utc::now().to_rfc3339()),
            ],
        )?;
    }
    crate::store::event_links::check(tx)?;
    Ok(())
}

/// Runs the resource set-up unless the database already holds all of it, which the digest of
/// its statements (`schema_state.resource_ddl`), stored after a complete run, tells. Skipping
/// matters on PostgreSQL: DDL takes table locks that wait for every open write on the table
/// and, while waiting, hold up every writer that comes after, so a server process starting
/// during another's long bulk write would stall the whole shop (and wait for it to finish).
fn set_up_resources(tx: &mut dyn Tx) -> StoreResult<()> {
    use sha2::{Digest, Sha256};
    let dialect = tx.dialect();
    // Every statement below, all idempotent, built once: the digest is of what runs.
    let functions: Vec<&str> = match dialect {
        Dialect::Postgres => vec![
            crate::store::value_counts::PG_LATER_TABLE,
            crate::store::value_counts::PG_LATER_INDEX,
            PG_COUNT_FUNCTION.as_str(),
            PG_EVENT_KEEP_FUNCTION,
        ],
        Dialect::Sqlite => Vec::new(),
    };
    let tables: Vec<(&str, Vec<String>)> = registry::resources()
        .iter()
        .map(|kind| (kind.desc().table, resource_ddl(dialect, kind.desc())))
        .collect();
    let side = crate::store::property_index::ddl(dialect);
    let mut extra = crate::store::deliverables::extra_ddl(dialect);
    extra.extend(
        registry::resources()
            .iter()
            .flat_map(|kind| filter_index_ddl(dialect, kind.desc())),
    );
    let mut hasher = Sha256::new();
    let statements = functions
        .iter()
        .copied()
        .chain(
            tables
                .iter()
                .flat_map(|(_, ddl)| ddl.iter().map(String::as_str)),
        )
        .chain(side.iter().map(String::as_str))
        .chain(extra.iter().map(String::as_str));
    for statement in statements {
        hasher.update(statement.as_bytes());
        hasher.update([0]);
    }
    let digest = hex::encode(hasher.finalize());
    let stored = tx.query(
        "SELECT value FROM schema_state WHERE name = 'resource_ddl'",
        &[],
    )?;
    if stored
        .first()
        .and_then(|r| r.first())
        .and_then(SqlValue::as_str)
        == Some(digest.as_str())
    {
        return Ok(());
    }
    for function in functions {
        tx.execute(function, &[])?;
    }
    for (table, ddl) in &tables {
        // The first statement creates the table; its filter columns go in before the
        // statements that name them.
        let (create, rest) = ddl
            .split_first()
            .expect("a resource's set-up creates its table");
        tx.execute(create, &[])?;
        crate::store::filter_columns::add_missing(tx, table)?;
        for statement in rest {
            tx.execute(statement, &[])?;
        }
        seed_counts(tx, table)?;
        crate::store::value_counts::seed(tx, table)?;
    }
    for statement in &side {
        tx.execute(statement, &[])?;
    }
    if dialect == Dialect::Postgres {
        // The row-level function of step 31; its triggers were dropped above.
        tx.execute("DROP FUNCTION IF EXISTS prodops_count_rows()", &[])?;
    }
    let mut complete = true;
    for statement in &extra {
        // These indexes only speed reads up: one the stored data cannot take (an index row
        // past PostgreSQL's limit, from text stored before the limits of docs/limits.md) must
        // not stop the server from starting. It is tried again on the next start (the digest
        // is not stored).
        tx.execute("SAVEPOINT extra_ddl", &[])?;
        match tx.execute(statement, &[]) {
            Ok(_) => {}
            Err(e) => {
                tracing::warn!("index not created, reads stay correct but slower: {e}");
                tx.execute("ROLLBACK TO SAVEPOINT extra_ddl", &[])?;
                complete = false;
            }
        }
        tx.execute("RELEASE SAVEPOINT extra_ddl", &[])?;
    }
    if complete {
        tx.execute(
            "INSERT INTO schema_state (name, value) VALUES ('resource_ddl', ?) \
             ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            &[SqlValue::Text(digest)],
        )?;
    }
    Ok(())
}

/// Bytewise text comparison, so that prefix ranges are index ranges (SQLite compares bytes).
/// SQLite's `WITHOUT ROWID` for a table whose primary key is how it is read and written (the
/// key is then the table, one B-tree less); PostgreSQL has no such thing.
fn without_rowid(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Sqlite => " WITHOUT ROWID",
        Dialect::Postgres => "",
    }
}

fn collate_c(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Sqlite => "",
        Dialect::Postgres => "COLLATE \"C\"",
    }
}

/// The PostgreSQL trigger function behind `record_count_shards`, run once per statement over
/// its transition tables: a bulk write of N rows adds one row per organization and archived
/// flag, where a row-level trigger updated the same shard row N times (each update a new row
/// version that the next one had to step over, so a 100,000-row bulk write took minutes).
/// Each connection counts in its own shard (step 31), so a shard's `n` may go below zero (a
/// row inserted through one connection and deleted through another); the sum over the shards
/// is the count.
static PG_COUNT_FUNCTION: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    // The moves of one statement, by `insert` (each operation in its own branch: an insert's
    // trigger has no `old_rows`); `values` fills the columns `record_counts_later` has more.
    let moves = |insert: &str, values: &str, on_conflict: &str| {
        format!(
            "IF TG_OP = 'INSERT' THEN
    {insert}
    SELECT TG_TABLE_NAME, organization_id, {values}is_archived, s, count(*) FROM new_rows
    GROUP BY organization_id, is_archived{on_conflict};
  ELSIF TG_OP = 'DELETE' THEN
    {insert}
    SELECT TG_TABLE_NAME, organization_id, {values}is_archived, s, -count(*) FROM old_rows
    GROUP BY organization_id, is_archived{on_conflict};
  ELSE
    -- An update moves a row between counts only when its archived flag changes.
    {insert}
    SELECT TG_TABLE_NAME, organization_id, {values}is_archived, s, sum(d) FROM (
      SELECT organization_id, is_archived, 1 AS d FROM new_rows
      UNION ALL SELECT organization_id, is_archived, -1 AS d FROM old_rows
    ) moved GROUP BY organization_id, is_archived HAVING sum(d) <> 0{on_conflict};
  END IF;"
        )
    };
    format!(
        "CREATE OR REPLACE FUNCTION prodops_count_statement() RETURNS trigger LANGUAGE plpgsql AS $body$
DECLARE
  s integer := pg_backend_pid() % 16;
BEGIN
  IF current_setting('prodops.count_later_' || TG_TABLE_NAME, true) = '1' THEN
  -- A bulk call counts later (store/value_counts.rs, `count_later`): the moves go to
  -- `record_counts_later` (inserts only) and are applied once when the call ends.
  {later}
  ELSE
  {now}
  END IF;
  RETURN NULL;
END $body$",
        later = moves(
            "INSERT INTO record_counts_later (table_name, organization_id, field, value, is_archived, shard, n)",
            "'', '', ",
            "",
        ),
        now = moves(
            "INSERT INTO record_count_shards (table_name, organization_id, is_archived, shard, n)",
            "",
            "\n    ON CONFLICT (table_name, organization_id, is_archived, shard) DO UPDATE SET n = record_count_shards.n + EXCLUDED.n",
        ),
    )
});

/// The PostgreSQL trigger function behind the `event_keep` triggers (see [`event_keep_triggers`]),
/// run once per statement over the rows it changed or removed; its arguments are the resource
/// paths the table serves. It also marks the table as touched for the rest of the transaction
/// (a transaction-local setting, `prodops.touched_<table>`), which the append of the feed asks.
///
/// Each changed row's creation event is looked up on its own: one probe of
/// `ix_events_created` (a hash index on the record id), whatever the statistics say. As one
/// `UPDATE events ... FROM old_rows` join, the plan was the planner's to choose, and with the
/// statistics of a freshly imported `events` table (which put the events without their text at
/// a few rows) it joined the changed rows to a materialized scan of the whole table: 17.5 s
/// for an `UPDATE` of 500 records over 200,000 events, and with fresh statistics still a hash
/// join reading the whole table once per statement (bench/README.md, "dependencies").
const PG_EVENT_KEEP_FUNCTION: &str =
    "CREATE OR REPLACE FUNCTION prodops_event_keep() RETURNS trigger LANGUAGE plpgsql AS $body$
DECLARE
  o record;
BEGIN
  FOR o IN SELECT organization_id, id, data FROM old_rows LOOP
    UPDATE events SET data = o.data::text
    WHERE record_id = o.id AND data IS NULL AND organization_id = o.organization_id
      AND resource = ANY(TG_ARGV);
  END LOOP;
  -- For the rest of this transaction, records of this table may differ from what they were
  -- created with: store/events.rs reads a bulk call's records back before appending.
  PERFORM set_config('prodops.touched_' || TG_TABLE_NAME, '1', true);
  RETURN NULL;
END $body$";

/// The triggers that keep the creation events of a table's bulk-created records true: an
/// event stored without its text (`data` NULL, store/events.rs) reads the record's text, so
/// before a record's text changes or the record goes, the text it had is copied into its
/// events that have none, in the same transaction.
fn event_keep_triggers(dialect: Dialect, t: &str) -> Vec<String> {
    let paths: Vec<&str> = registry::resources()
        .iter()
        .map(|k| k.desc())
        .filter(|d| d.table == t)
        .map(|d| d.path)
        .collect();
    match dialect {
        Dialect::Sqlite => {
            // The events stored without their text are not in `ix_events_record` on SQLite: the
            // record's creation event is found through its rowid (store/event_links.rs), one
            // probe of the links and one of the events' primary key.
            let keep = format!(
                "UPDATE events SET data = OLD.data WHERE organization_id = OLD.organization_id \
                 AND seq = {} AND record_id = OLD.id AND resource IN ({}) AND data IS NULL;",
                crate::store::event_links::linked_seq_sql(t, "OLD.rowid"),
                paths
                    .iter()
                    .map(|p| format!("'{p}'"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            // Dropped first, so a changed body replaces the one an older release created.
            vec![
                format!("DROP TRIGGER IF EXISTS tr_{t}_event_keep_update"),
                format!(
                    "CREATE TRIGGER tr_{t}_event_keep_update BEFORE UPDATE OF data ON {t} \
                     BEGIN {keep} END"
                ),
                format!("DROP TRIGGER IF EXISTS tr_{t}_event_keep_delete"),
                format!(
                    "CREATE TRIGGER tr_{t}_event_keep_delete BEFORE DELETE ON {t} BEGIN {keep} END"
                ),
            ]
        }
        Dialect::Postgres => {
            let args = paths
                .iter()
                .map(|p| format!("'{p}'"))
                .collect::<Vec<_>>()
                .join(", ");
            vec![
                format!(
                    "CREATE OR REPLACE TRIGGER tr_{t}_event_keep_update AFTER UPDATE ON {t} \
                     REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT \
                     EXECUTE FUNCTION prodops_event_keep({args})"
                ),
                format!(
                    "CREATE OR REPLACE TRIGGER tr_{t}_event_keep_delete AFTER DELETE ON {t} \
                     REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT \
                     EXECUTE FUNCTION prodops_event_keep({args})"
                ),
            ]
        }
    }
}

/// Seeds the counts of a table from its rows, once: for tables that held rows before their
/// triggers existed.
fn seed_counts(tx: &mut dyn Tx, table: &str) -> StoreResult<()> {
    let seeded = !tx
        .query(
            "SELECT table_name FROM counted_tables WHERE table_name = ?",
            &[table.into()],
        )?
        .is_empty();
    if seeded {
        return Ok(());
    }
    tx.execute(
        "DELETE FROM record_count_shards WHERE table_name = ?",
        &[table.into()],
    )?;
    tx.execute(
        &format!(
            "INSERT INTO record_count_shards (table_name, organization_id, is_archived, shard, n) \
             SELECT ?, organization_id, is_archived, 0, COUNT(*) FROM {table} GROUP BY organization_id, is_archived"
        ),
        &[table.into()],
    )?;
    tx.execute(
        "INSERT INTO counted_tables (table_name) VALUES (?)",
        &[table.into()],
    )?;
    Ok(())
}

/// The triggers that keep `record_count_shards` true for one table.
fn count_triggers(dialect: Dialect, t: &str) -> Vec<String> {
    match dialect {
        Dialect::Sqlite => {
            let plus = |row: &str| {
                format!(
                    "INSERT INTO record_count_shards (table_name, organization_id, is_archived, shard, n) \
                     VALUES ('{t}', {row}.organization_id, {row}.is_archived, 0, 1) \
                     ON CONFLICT (table_name, organization_id, is_archived, shard) DO UPDATE SET n = n + 1;"
                )
            };
            let minus = |row: &str| {
                format!(
                    "UPDATE record_count_shards SET n = n - 1 WHERE table_name = '{t}' \
                     AND organization_id = {row}.organization_id AND is_archived = {row}.is_archived AND shard = 0;"
                )
            };
            vec![
                // Step 2's triggers wrote to a table step 31 replaced.
                format!("DROP TRIGGER IF EXISTS tr_{t}_count_insert"),
                format!("DROP TRIGGER IF EXISTS tr_{t}_count_delete"),
                format!("DROP TRIGGER IF EXISTS tr_{t}_count_archive"),
                format!(
                    "CREATE TRIGGER IF NOT EXISTS tr_{t}_shard_insert AFTER INSERT ON {t} BEGIN {} END",
                    plus("NEW")
                ),
                format!(
                    "CREATE TRIGGER IF NOT EXISTS tr_{t}_shard_delete AFTER DELETE ON {t} BEGIN {} END",
                    minus("OLD")
                ),
                format!(
                    "CREATE TRIGGER IF NOT EXISTS tr_{t}_shard_archive AFTER UPDATE OF is_archived ON {t} \
                     WHEN OLD.is_archived <> NEW.is_archived BEGIN {} {} END",
                    minus("OLD"),
                    plus("NEW")
                ),
            ]
        }
        Dialect::Postgres => vec![
            // The row-level triggers of step 31, replaced by statement-level ones.
            format!("DROP TRIGGER IF EXISTS tr_{t}_count ON {t}"),
            format!("DROP TRIGGER IF EXISTS tr_{t}_count_archive ON {t}"),
            // Transition tables allow one event per trigger and no column list.
            format!(
                "CREATE OR REPLACE TRIGGER tr_{t}_count_insert AFTER INSERT ON {t} \
                 REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION prodops_count_statement()"
            ),
            format!(
                "CREATE OR REPLACE TRIGGER tr_{t}_count_delete AFTER DELETE ON {t} \
                 REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION prodops_count_statement()"
            ),
            format!(
                "CREATE OR REPLACE TRIGGER tr_{t}_count_update AFTER UPDATE ON {t} \
                 REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT \
                 EXECUTE FUNCTION prodops_count_statement()"
            ),
        ],
    }
}

/// The table and indexes of one resource.
pub fn resource_ddl(dialect: Dialect, desc: &ResourceDesc) -> Vec<String> {
    let t = desc.table;
    let mut ddl = vec![
        format!(
            "CREATE TABLE IF NOT EXISTS {t} (organization_id TEXT NOT NULL, id TEXT NOT NULL, \
             is_archived {} NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, data {} NOT NULL, \
             PRIMARY KEY (organization_id, id))",
            dialect.bool_column_type(),
            dialect.json_column_type()
        ),
        // The default list: one organization, archived or not, in creation order.
        format!(
            "CREATE INDEX IF NOT EXISTS ix_{t}_list ON {t} (organization_id, is_archived, created_at, id)"
        ),
    ];
    ddl.extend(count_triggers(dialect, t));
    ddl.extend(event_keep_triggers(dialect, t));
    ddl.extend(filter_column_ddl(dialect, desc));
    // After the filter columns: the PostgreSQL triggers read them.
    ddl.extend(crate::store::value_counts::ddl(dialect, t));
    for key in desc.unique {
        let exprs: Vec<String> = key
            .fields
            .iter()
            .map(|f| {
                let path = FieldPath::parse(f).expect("unique key fields are valid paths");
                let e = dialect.text_expr(&path);
                if key.case_insensitive {
                    format!("lower({e})")
                } else {
                    e
                }
            })
            .collect();
        let filter = if key.active_only {
            " WHERE is_archived = FALSE"
        } else {
            ""
        };
        ddl.push(format!(
            "CREATE UNIQUE INDEX IF NOT EXISTS {} ON {t} (organization_id, {}){filter}",
            unique_index_name(desc, key.name),
            exprs.join(", ")
        ));
    }
    ddl
}

/// The filter indexes of one resource: one per field users filter by
/// (`prodops_core::filter_fields`: enums, ids, external identifiers), on what the filter
/// compiles to ([`Cond::Indexed`](crate::store::sql::Cond::Indexed)), followed by the
/// columns of the default order, so a filtered page in that order is one index range and a
/// filtered count reads the index alone. That is the field's filter column ([`filter_column`],
/// store/filter_columns.rs, added by the resource's mandatory set-up), a column the writes
/// fill: PostgreSQL never counts from an index on an expression without visiting every row it
/// matches, and on SQLite an index on the expression parsed the record's JSON again for every
/// entry written.
///
/// After those, each index carries the resource's other enum fields ([`carried_fields`]), so
/// an enum filter next to this field's (`status=active&teamId=T`, `direction=in&status=open`)
/// is checked on the index entry: the page reads only the records it answers, and the count
/// reads the index alone instead of every record the selective filter matches.
///
/// Each index is partial, `WHERE <field> IS NOT NULL`: a filter on a value implies it (both
/// databases' planners prove it from `=` and `IN`), and records without the field (a worker
/// without a team, most optional ids) cost a write nothing. A filter on `null` reads the list
/// index instead. Earlier forms of these indexes (`ix_<table>_by_<field>`, then
/// `ix_<table>_on_<field>` on the expression, then the forms without the carried enums, then
/// SQLite's on the expression with them) are dropped.
pub fn filter_index_ddl(dialect: Dialect, desc: &ResourceDesc) -> Vec<String> {
    let t = desc.table;
    let mut ddl = Vec::new();
    for field in &prodops_core::filter_fields::of_table(t).filter_indexed {
        let lower = field.to_ascii_lowercase();
        let name = filter_index_name(t, field);
        let earlier = [
            format!("ix_{t}_by_{lower}"),
            format!("ix_{t}_on_{lower}"),
            format!("ix_{t}_on_{}", filter_column(field)),
            // SQLite's indexes on the field's expression, before the filter columns.
            format!("ix_{t}_on_{lower}{}", carried_suffix(t, field)),
        ];
        for old in earlier.into_iter().map(bounded_name) {
            if old != name {
                ddl.push(format!("DROP INDEX IF EXISTS {old}"));
            }
        }
        let expr = dialect.indexed_expr(field);
        let carried: String = carried_fields(t, field)
            .map(|other| format!(", {}", dialect.indexed_expr(other)))
            .collect();
        ddl.push(format!(
            "CREATE INDEX IF NOT EXISTS {name} ON {t} \
             (organization_id, {expr}, is_archived, created_at, id{carried}) \
             WHERE {expr} IS NOT NULL",
        ));
    }
    ddl
}

/// The enum fields (`FieldKinds::counted`) of the resource stored in `table` other than
/// `field`, which `field`'s filter index carries after its key columns.
fn carried_fields<'a>(table: &str, field: &'a str) -> impl Iterator<Item = &'static String> + 'a {
    prodops_core::filter_fields::of_table(table)
        .counted
        .iter()
        .filter(move |other| other.as_str() != field)
}

/// The triggers that set the filter columns ([`filter_column`]) from the records' text
/// (store/filter_columns.rs); the columns themselves are added by `filter_columns::add_missing`
/// before these run.
fn filter_column_ddl(dialect: Dialect, desc: &ResourceDesc) -> Vec<String> {
    match dialect {
        Dialect::Sqlite => crate::store::filter_columns::sqlite_ddl(desc.table),
        Dialect::Postgres => crate::store::filter_columns::postgres_ddl(desc.table),
    }
}

/// The name of a field's filter index: `ix_<table>_on_f_<field>` (on its filter column,
/// store/filter_columns.rs), followed by
/// `_with_<enum>` for each enum field it carries ([`carried_fields`]; a schema that gains an
/// enum renames the index, so a start builds the new form), within 63 bytes.
pub fn filter_index_name(table: &str, field: &str) -> String {
    let on = filter_column(field);
    bounded_name(format!(
        "ix_{table}_on_{on}{}",
        carried_suffix(table, field)
    ))
}

/// `_with_<enum>` for each enum field the filter index of `field` carries.
fn carried_suffix(table: &str, field: &str) -> String {
    carried_fields(table, field)
        .map(|other| format!("_with_{}", other.to_ascii_lowercase()))
        .collect()
}

/// The name of the unique index behind a `UniqueKey`, so a violation can be traced back to it.
pub fn unique_index_name(desc: &ResourceDesc, key: &str) -> String {
    format!("ux_{}_{}", desc.table, key)
}

/// Whether the database already holds any organization (first start detection).
pub fn has_organizations(tx: &mut dyn Tx) -> StoreResult<bool> {
    let rows = tx.query("SELECT id FROM organizations LIMIT 1", &[])?;
    Ok(!rows.is_empty())
}

/// The message of a 409 raised by the unique index `name`.
pub fn conflict_message(name: &str) -> String {
    if name == "primary_key" {
        return "a record with this id already exists".into();
    }
    // SQLite names a column index by its columns.
    if name == REVERSES_INDEX || name.contains(&filter_column("reversesId")) {
        return "this ledger row was reversed already; a posting is reversed once".into();
    }
    for kind in registry::resources() {
        for key in kind.desc().unique {
            if unique_index_name(kind.desc(), key.name) == name {
                return key.message.to_string();
            }
        }
    }
    "the write conflicts with an existing record".into()
}
