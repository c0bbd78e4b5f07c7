//! Migrations, run on every start inside one transaction; idempotent.
//!
//! Fixed tables come from numbered steps recorded in `schema_migrations`. Resource tables are
//! derived from the resource descriptions of `prodops-core` (one table per resource, its list
//! index and its unique indexes), created when missing, so a new resource needs no hand-written
//! migration.

use prodops_core::registry;
use prodops_core::resource::ResourceDesc;

use crate::store::sql::FieldPath;
use crate::store::{Dialect, SqlValue, StoreResult, Tx};

/// Numbered steps; `{bool}` stands for the dialect's boolean column type.
const STEPS: &[(i64, &str)] = &[(
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
)];

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
            tx.execute(
                &statement.replace("{bool}", dialect.bool_column_type()),
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
    for kind in registry::resources() {
        for statement in resource_ddl(dialect, kind.desc()) {
            tx.execute(&statement, &[])?;
        }
    }
    Ok(())
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

/// The name of the unique index behind a `UniqueKey`, so a violation can be traced back to it.
pub fn unique_index_name(desc: &ResourceDesc, key: &str) -> String {
    format!("ux_{}_{}", desc.table, key)
}

/// Whether the database already holds any organization (first start detection).
pub fn has_organizations(tx: &mut dyn Tx) -> StoreResult<bool> {
    let rows = tx.query("SELECT id FROM organizations LIMIT 1", &[])?;
    Ok(!rows.is_empty())
}
