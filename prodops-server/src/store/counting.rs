//! A transaction that counts the statements it runs, for tests that hold code to a statement
//! budget (a bulk call's statements grow with its batches, not with its records: the promises
//! of `engine::hooks::Hooks` that batching relies on). It forwards every method to the
//! transaction it wraps, so what runs is exactly what would run without it.

use super::sql::{Cond, FieldPath, Sort};
use super::{CellRef, Dialect, SqlValue, StoreResult, Tx};

/// `tx`, counting each statement (execute, query, row-by-row read, `COPY`).
pub struct CountingTx<'a> {
    tx: &'a mut dyn Tx,
    statements: u64,
    /// How often each statement text ran, to name the statements of a budget that is exceeded.
    texts: std::collections::BTreeMap<String, u64>,
}

impl<'a> CountingTx<'a> {
    pub fn new(tx: &'a mut dyn Tx) -> Self {
        CountingTx {
            tx,
            statements: 0,
            texts: Default::default(),
        }
    }

    /// The statements run through this wrapper so far.
    pub fn statements(&self) -> u64 {
        self.statements
    }

    /// Each statement text run, with how often, most frequent first.
    pub fn by_text(&self) -> Vec<(&str, u64)> {
        let mut texts: Vec<(&str, u64)> =
            self.texts.iter().map(|(t, n)| (t.as_str(), *n)).collect();
        texts.sort_by_key(|t| std::cmp::Reverse(t.1));
        texts
    }

    fn count(&mut self, sql: &str) {
        self.statements += 1;
        *self.texts.entry(sql.to_string()).or_default() += 1;
    }
}

impl Tx for CountingTx<'_> {
    fn dialect(&self) -> Dialect {
        self.tx.dialect()
    }
    fn in_block(&self) -> bool {
        self.tx.in_block()
    }
    fn text_expr(&self, path: &FieldPath) -> String {
        self.tx.text_expr(path)
    }
    fn plain_column(&self, column: &str) -> String {
        self.tx.plain_column(column)
    }
    fn json_expr(&self, path: &FieldPath) -> String {
        self.tx.json_expr(path)
    }
    fn where_clause(&self, org: uuid::Uuid, conds: &[Cond], params: &mut Vec<SqlValue>) -> String {
        self.tx.where_clause(org, conds, params)
    }
    fn order_by(&self, sort: &[Sort]) -> String {
        self.tx.order_by(sort)
    }
    fn execute(&mut self, sql: &str, params: &[SqlValue]) -> StoreResult<u64> {
        self.count(sql);
        self.tx.execute(sql, params)
    }
    fn execute_refs(&mut self, sql: &str, params: &[CellRef<'_>]) -> StoreResult<u64> {
        self.count(sql);
        self.tx.execute_refs(sql, params)
    }
    fn last_insert_rowid(&mut self) -> Option<i64> {
        self.tx.last_insert_rowid()
    }
    fn query(&mut self, sql: &str, params: &[SqlValue]) -> StoreResult<Vec<Vec<SqlValue>>> {
        self.count(sql);
        self.tx.query(sql, params)
    }
    fn copy_in(
        &mut self,
        table: &str,
        columns: &[&str],
        cells: &[CellRef<'_>],
    ) -> StoreResult<bool> {
        self.count(&format!("COPY {table}"));
        self.tx.copy_in(table, columns, cells)
    }
    fn set_triggers(&mut self, on: bool) -> StoreResult<bool> {
        self.tx.set_triggers(on)
    }
    fn for_each_row(
        &mut self,
        sql: &str,
        params: &[SqlValue],
        f: &mut dyn FnMut(&[CellRef<'_>]) -> StoreResult<()>,
    ) -> StoreResult<()> {
        self.count(sql);
        self.tx.for_each_row(sql, params, f)
    }
}
