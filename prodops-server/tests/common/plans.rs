//! What the plan tests share (included with `#[path]` by those that read plans only).

use prodops_server::store::{Dialect, SqlValue, Store, StoreError};

/// The plan of `sql` as one text: `EXPLAIN QUERY PLAN` on SQLite, `EXPLAIN` on PostgreSQL.
pub async fn plan(store: &Store, sql: String, params: Vec<SqlValue>) -> String {
    let dialect = store.dialect();
    store
        .read(move |tx| {
            let explain = match dialect {
                Dialect::Sqlite => format!("EXPLAIN QUERY PLAN {sql}"),
                Dialect::Postgres => format!("EXPLAIN {sql}"),
            };
            let rows = tx.query(&explain, &params)?;
            Ok::<_, StoreError>(
                rows.into_iter()
                    .flat_map(|r| r.into_iter().filter_map(SqlValue::into_string))
                    .collect::<Vec<_>>()
                    .join("\n"),
            )
        })
        .await
        .unwrap()
}
