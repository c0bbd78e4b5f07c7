//! SQL text for the resource tables, in the two dialects.
//!
//! A resource table holds `organization_id`, `id`, `is_archived`, `created_at`, `updated_at`
//! as columns and the whole record as JSON in `data`. Filters, search, sorting and grouping
//! address record fields by path inside `data`, so one builder serves every resource.

use prodops_core::alerts::{AsOf, Derived, Lit, Pred};
use uuid::Uuid;

use super::SqlValue;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

/// A field path (`status`, `data.properties.width`): letters, digits and `_` in each dotted
/// segment, so it can be written into SQL text safely.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldPath(Vec<String>);

impl FieldPath {
    pub fn parse(path: &str) -> Option<FieldPath> {
        let segments: Vec<String> = path.split('.').map(str::to_string).collect();
        let valid = !path.is_empty()
            && segments.len() <= 8
            && segments.iter().all(|s| {
                !s.is_empty()
                    && s.len() <= 64
                    && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            });
        valid.then_some(FieldPath(segments))
    }

    pub fn first(&self) -> &str {
        &self.0[0]
    }

    pub fn segments(&self) -> &[String] {
        &self.0
    }

    /// The column that mirrors this field, for the fields kept as columns.
    fn column(&self) -> Option<&'static str> {
        if self.0.len() != 1 {
            return None;
        }
        match self.0[0].as_str() {
            "id" => Some("id"),
            "createdAt" => Some("created_at"),
            "updatedAt" => Some("updated_at"),
            _ => None,
        }
    }
}

/// Filter values as a column mirroring a field holds them: the time columns hold the sortable
/// form of the record's instant (six decimals, `records::sortable_time`), so `?createdAt=` with
/// the text a record answers matches it; text that is no instant is left as it is (it matches
/// nothing).
fn column_texts(column: &str, texts: Vec<String>) -> Vec<String> {
    match column {
        "created_at" | "updated_at" => texts
            .into_iter()
            .map(|t| super::records::sortable_time(&t).unwrap_or(t))
            .collect(),
        _ => texts,
    }
}

/// Up to this many values of a filter are bound one by one on SQLite (`IN (?, ?, ...)`), more
/// as one array: SQLite's planner uses an index for a listed IN, not for one over `json_each`.
const LISTED_VALUES: usize = 64;

/// One condition of a WHERE clause.
#[derive(Debug, Clone)]
pub enum Cond {
    /// The field equals one of the values (given as text, compared by the stored value's JSON
    /// type: `5` matches the number 5 and the string "5"); an array field matches when it
    /// contains one of them.
    ///
    /// Any number of values: each kind of value (texts, numbers) is bound as one array
    /// parameter and matched through a hash or an ephemeral index, so the cost grows with the
    /// values plus the rows, not their product.
    Field {
        path: FieldPath,
        values: Vec<String>,
    },
    /// [`Cond::Field`] on a top-level field whose stored value is always a string or null (by
    /// the resource's schema): the same answer, written as `field IN (...)` on the field's
    /// text, which an expression index on the field (a unique key's) can serve.
    Text {
        path: FieldPath,
        values: Vec<String>,
    },
    /// [`Cond::Text`] on a top-level field that has a filter index
    /// (`prodops_core::filter_fields::FieldKinds::filter_indexed`): the same answer, written
    /// on the field's filter column ([`filter_column`], store/filter_columns.rs), which holds
    /// what `Text` reads from the record and which the index is built on: PostgreSQL counts from
    /// an index alone (an index-only scan) only when the query names columns, never when it
    /// names an expression over `data`, and SQLite wrote an index on the expression at the cost
    /// of parsing each record again.
    Indexed {
        field: String,
        values: Vec<String>,
        /// The field is an enum (`prodops_core::filter_fields::FieldKinds::counted`), whose
        /// value may match most records. Next to a filter on another index (an id, an
        /// identifier, a custom property), SQLite, whose planner has no statistics and sees
        /// equal indexes, is kept from reading the enum's index: it read 196,000 entries of
        /// `status=active` where the team's index held 2,000 (`Dialect::where_clause`).
        broad: bool,
    },
    /// [`Cond::Field`] on the custom property `data.properties.<key>` of a deliverable: the
    /// same answer, looked up in the property value index (`property_index`). Most filters it
    /// finds exactly ([`property_lookup`]`.exact`); for the others the exact match runs on its
    /// candidates alone.
    Property {
        key: String,
        values: Vec<String>,
    },
    /// A field answered as of the moment of the read equals one of the values (compared as
    /// [`Cond::Field`] compares a stored value of the same JSON type).
    AsOf {
        field: AsOfField,
        values: Vec<String>,
    },
    Archived(bool),
    Ids(Vec<Uuid>),
    /// Case-insensitive substring over any of the columns.
    Search {
        columns: Vec<FieldPath>,
        text: String,
    },
}

impl Cond {
    /// [`Cond::Field`]: the field at `path` (a path the code names, hence valid) equals
    /// `value`. For the server's own lookups; filters from a request go through the engine.
    pub fn field_equals(path: &str, value: impl Into<String>) -> Cond {
        Cond::Field {
            path: FieldPath::parse(path).expect("a path the code names is valid"),
            values: vec![value.into()],
        }
    }
}

/// The column holding a filter-indexed field's text (see [`Cond::Indexed`]): `f_<field>` (lower
/// case, within PostgreSQL's 63 bytes of a name), filled by the writes and set from `data` by
/// triggers for any other write (store/filter_columns.rs), so no write path leaves it behind.
pub fn filter_column(field: &str) -> String {
    bounded_name(format!("f_{}", field.to_ascii_lowercase()))
}

/// `name` if it fits PostgreSQL's 63 bytes, else its first 50 bytes and a digest of the whole.
pub fn bounded_name(name: String) -> String {
    if name.len() <= 63 {
        return name;
    }
    use sha2::{Digest, Sha256};
    let digest = hex::encode(Sha256::digest(name.as_bytes()));
    format!("{}_{}", &name[..50], &digest[..12])
}

#[derive(Debug, Clone)]
pub struct Sort {
    pub path: FieldPath,
    pub descending: bool,
    /// Set when the field is answered as of the moment of the read: the sort is by that answer.
    pub as_of: Option<AsOfField>,
}

/// A field whose answer depends on the moment of the read (`prodops_core::alerts::derived`),
/// with that moment: filters, sorts and groups on it evaluate its rule in SQL. The moment is
/// written into the SQL text as a literal (an [`AsOf`] is only ever `YYYY-MM-DDTHH:MM:SS`).
#[derive(Debug, Clone)]
pub struct AsOfField {
    pub rule: &'static Derived,
    pub now: AsOf,
}

impl Dialect {
    pub fn json_column_type(self) -> &'static str {
        match self {
            Dialect::Sqlite => "TEXT",
            // `json` keeps the text as written (field order included), unlike `jsonb`.
            Dialect::Postgres => "JSON",
        }
    }

    pub fn bool_column_type(self) -> &'static str {
        match self {
            Dialect::Sqlite => "INTEGER",
            Dialect::Postgres => "BOOLEAN",
        }
    }

    /// The function answering the largest of its arguments.
    pub fn greatest(self) -> &'static str {
        match self {
            Dialect::Sqlite => "MAX",
            Dialect::Postgres => "GREATEST",
        }
    }

    /// `column` compared without its type affinity: on SQLite `+column`, so that a comparison
    /// with an expression index's value ([`Dialect::text_expr`]) may use that index (a TEXT
    /// column's affinity applied to the other side keeps it out of use); as it is elsewhere.
    pub fn plain_column(self, column: &str) -> String {
        match self {
            Dialect::Sqlite => format!("+{column}"),
            Dialect::Postgres => column.to_string(),
        }
    }

    /// The field as SQL text (strings unquoted), NULL when absent.
    pub fn text_expr(self, path: &FieldPath) -> String {
        self.text_expr_of("data", path)
    }

    /// [`Dialect::text_expr`] of the record text in `data` (a trigger's `NEW.data`).
    pub fn text_expr_of(self, data: &str, path: &FieldPath) -> String {
        match self {
            Dialect::Sqlite => format!("json_extract({data}, '$.{}')", path.0.join(".")),
            Dialect::Postgres => format!("({data} #>> '{{{}}}')", path.0.join(",")),
        }
    }

    /// The field as JSON text (`"active"`, `true`, `5`), NULL when absent.
    pub fn json_expr(self, path: &FieldPath) -> String {
        match self {
            Dialect::Sqlite => format!("(data -> '$.{}')", path.0.join(".")),
            Dialect::Postgres => format!("((data #> '{{{}}}')::text)", path.0.join(",")),
        }
    }

    fn cast_text(self) -> &'static str {
        match self {
            Dialect::Sqlite => "?",
            Dialect::Postgres => "CAST(? AS TEXT)",
        }
    }

    /// Appends the SQL of `cond` (on a record of organization `org`) to `sql` and its
    /// parameters to `params`.
    pub fn cond(self, org: Uuid, cond: &Cond, sql: &mut String, params: &mut Vec<SqlValue>) {
        match cond {
            Cond::Archived(archived) => {
                sql.push_str("is_archived = ?");
                params.push(SqlValue::Bool(*archived));
            }
            Cond::Ids(ids) => {
                let ids = ids.iter().map(Uuid::to_string).collect();
                self.text_in("id", ids, sql, params);
            }
            Cond::Search { columns, text } => {
                let pattern = format!("%{}%", escape_like(&text.to_lowercase()));
                sql.push('(');
                for (i, col) in columns.iter().enumerate() {
                    if i > 0 {
                        sql.push_str(" OR ");
                    }
                    sql.push_str(&format!(
                        "lower({}) LIKE {} ESCAPE '\\'",
                        self.text_expr(col),
                        self.cast_text()
                    ));
                    params.push(SqlValue::Text(pattern.clone()));
                }
                sql.push(')');
            }
            Cond::AsOf { field, values } => {
                let wanted = Wanted::of(values);
                let matching: Vec<String> = field
                    .rule
                    .values()
                    .into_iter()
                    .enumerate()
                    .filter(|(_, lit)| match lit {
                        Lit::Bool(true) => wanted.with_true,
                        Lit::Bool(false) => wanted.with_false,
                        Lit::Text(t) => wanted.texts.iter().any(|w| w == t),
                        Lit::Int(n) => wanted.numbers.contains(&(*n as f64)),
                    })
                    .map(|(k, _)| k.to_string())
                    .collect();
                if matching.is_empty() {
                    sql.push_str(self.never());
                } else {
                    let case = self.as_of_case(field, |k, _| k.to_string());
                    sql.push_str(&format!("{case} IN ({})", matching.join(", ")));
                }
            }
            Cond::Field { values, .. }
            | Cond::Text { values, .. }
            | Cond::Indexed { values, .. }
            | Cond::Property { values, .. }
                if values.is_empty() =>
            {
                sql.push_str(self.never());
            }
            Cond::Field { path, values } => {
                let wanted = Wanted::of(values);
                match path.column() {
                    Some(column) => {
                        self.text_in(column, column_texts(column, wanted.texts), sql, params)
                    }
                    None => self.field_in(path, wanted, sql, params),
                }
            }
            Cond::Property { key, values } => {
                let Some(lookup) = property_lookup(values) else {
                    let path = FieldPath(vec!["data".into(), "properties".into(), key.clone()]);
                    return self.field_in(&path, Wanted::of(values), sql, params);
                };
                sql.push_str("(id IN (");
                self.property_rows("deliverable_id", org, key, &lookup, None, sql, params);
                sql.push(')');
                if !lookup.exact {
                    // The index found a superset: each candidate is checked on its record.
                    let path = FieldPath(vec!["data".into(), "properties".into(), key.clone()]);
                    sql.push_str(" AND ");
                    self.field_in(&path, Wanted::of(values), sql, params);
                }
                sql.push(')');
            }
            Cond::Text { path, values } => match path.column() {
                Some(column) => {
                    let values = column_texts(column, values.clone());
                    self.text_cond(column, &values, sql, params);
                }
                None => self.text_cond(&self.text_expr(path), values, sql, params),
            },
            Cond::Indexed { field, values, .. } => {
                self.text_cond(&self.indexed_expr(field), values, sql, params);
            }
        }
    }

    /// `SELECT <columns> FROM <property index> WHERE ...`: the index rows (`deliverable_id`,
    /// `created_at`, ...) of organization `org` whose custom property `key` holds a value
    /// `lookup` finds, archived or not as `archived` says (either when `None`). A deliverable
    /// comes once per matching row (an array may hold several of the values).
    #[allow(clippy::too_many_arguments)]
    pub fn property_rows(
        self,
        columns: &str,
        org: Uuid,
        key: &str,
        lookup: &super::property_index::Lookup,
        archived: Option<bool>,
        sql: &mut String,
        params: &mut Vec<SqlValue>,
    ) {
        let one_kind = |expr: &str, sql: &mut String, params: &mut Vec<SqlValue>| {
            sql.push_str(&format!(
                "SELECT {columns} FROM {} WHERE organization_id = ? AND key = {} AND ",
                super::property_index::TABLE,
                self.cast_text()
            ));
            params.push(SqlValue::Text(org.to_string()));
            params.push(SqlValue::Text(key.to_string()));
            if expr == "value" {
                self.text_in(expr, lookup.texts.clone(), sql, params);
            } else {
                self.number_in(expr, lookup.numbers.clone(), sql, params);
            }
            if let Some(a) = archived {
                sql.push_str(" AND is_archived = ?");
                params.push(SqlValue::Bool(a));
            }
        };
        // Each kind of value asked for is one range of its own index; both kinds (`7` is the
        // text and the number) are two, one after the other (an `OR` of the two made SQLite
        // read one index for both and visit each row).
        match (lookup.texts.is_empty(), lookup.numbers.is_empty()) {
            (_, true) => one_kind("value", sql, params),
            (true, false) => one_kind("num", sql, params),
            (false, false) => {
                one_kind("value", sql, params);
                sql.push_str(" UNION ALL ");
                one_kind("num", sql, params);
            }
        }
    }

    /// `CASE WHEN <case 0 holds> THEN <of(0, value 0)> ... ELSE <of(n, otherwise)> END` of a
    /// field answered as of the moment of the read.
    fn as_of_case(self, field: &AsOfField, of: impl Fn(usize, Lit) -> String) -> String {
        let mut sql = String::from("(CASE");
        for (k, (pred, lit)) in field.rule.cases.iter().enumerate() {
            sql.push_str(&format!(
                " WHEN {} THEN {}",
                self.pred(pred, &field.now),
                of(k, *lit)
            ));
        }
        sql.push_str(&format!(
            " ELSE {} END)",
            of(field.rule.cases.len(), field.rule.otherwise)
        ));
        sql
    }

    /// The SQL of a condition on the stored record at `now` (true or false, never NULL).
    fn pred(self, pred: &Pred, now: &AsOf) -> String {
        let text = |path: &str| {
            self.text_expr(&FieldPath::parse(path).expect("a path core names is valid"))
        };
        let (collate, no) = match self {
            Dialect::Sqlite => ("", "0"),
            Dialect::Postgres => (" COLLATE \"C\"", "FALSE"),
        };
        let at = now.as_str();
        match pred {
            Pred::Reached(path) => {
                format!(
                    "COALESCE(substr({}, 1, 19) <= '{at}'{collate}, {no})",
                    text(path)
                )
            }
            Pred::Ahead(path) => {
                format!(
                    "COALESCE(substr({}, 1, 19) > '{at}'{collate}, {no})",
                    text(path)
                )
            }
            Pred::Is(path, values) => {
                let listed: Vec<String> = values
                    .iter()
                    .inspect(|v| {
                        debug_assert!(
                            v.bytes()
                                .all(|b| b.is_ascii_lowercase() || b == b'-' || b == b'_')
                        )
                    })
                    .map(|v| format!("'{v}'"))
                    .collect();
                format!("COALESCE({} IN ({}), {no})", text(path), listed.join(", "))
            }
            Pred::Not(p) => format!("(NOT {})", self.pred(p, now)),
            Pred::Both(a, b) => format!("({} AND {})", self.pred(a, now), self.pred(b, now)),
        }
    }

    /// A field answered as of the moment of the read, as JSON text (what `json_expr` gives
    /// for a stored field): for group-and-count.
    pub fn as_of_json(self, field: &AsOfField) -> String {
        self.as_of_case(field, |_, lit| match lit {
            Lit::Bool(b) => format!("'{b}'"),
            Lit::Text(t) => format!("'\"{t}\"'"),
            Lit::Int(n) => format!("'{n}'"),
        })
    }

    /// A field answered as of the moment of the read, as a sort key ordered as the stored
    /// values of its type sort: false before true, numbers by value, texts by bytes.
    fn as_of_sort_key(self, field: &AsOfField) -> String {
        let case = self.as_of_case(field, |_, lit| match lit {
            Lit::Bool(b) => (b as i64).to_string(),
            Lit::Text(t) => format!("'{t}'"),
            Lit::Int(n) => n.to_string(),
        });
        match (self, field.rule.otherwise) {
            (Dialect::Postgres, Lit::Text(_)) => format!("{case} COLLATE \"C\""),
            _ => case,
        }
    }

    /// What a filter-indexed field's filter and its index are both written on (see
    /// [`Cond::Indexed`]): its filter column, on both databases. One place, so that the index
    /// always serves the filter.
    pub fn indexed_expr(self, field: &str) -> String {
        filter_column(field)
    }

    /// `expr` is one of `values`, each compared as the text a filter compares (UUIDs
    /// canonical) and bound once however often it is given: for sums over kept counts, where a
    /// value given twice must not count twice.
    pub fn distinct_text_in(
        self,
        expr: &str,
        values: &[String],
        sql: &mut String,
        params: &mut Vec<SqlValue>,
    ) {
        self.text_in(expr, Wanted::of(values).texts, sql, params);
    }

    /// `expr IN (values)`, or `IS NULL` too when `null` is among them.
    fn text_cond(
        self,
        expr: &str,
        values: &[String],
        sql: &mut String,
        params: &mut Vec<SqlValue>,
    ) {
        let wanted = Wanted::of(values);
        if wanted.with_null {
            sql.push('(');
            self.text_in(expr, wanted.texts, sql, params);
            sql.push_str(&format!(" OR {expr} IS NULL)"));
        } else {
            self.text_in(expr, wanted.texts, sql, params);
        }
    }

    /// `expr` is one of `texts`, as [`Dialect::any_of`].
    fn text_in(self, expr: &str, texts: Vec<String>, sql: &mut String, params: &mut Vec<SqlValue>) {
        self.any_of(
            expr,
            texts,
            "TEXT",
            SqlValue::Text,
            SqlValue::TextArray,
            sql,
            params,
        );
    }

    /// `expr` (a number) is one of `numbers`, as [`Dialect::any_of`].
    fn number_in(
        self,
        expr: &str,
        numbers: Vec<f64>,
        sql: &mut String,
        params: &mut Vec<SqlValue>,
    ) {
        let (one, many) = (SqlValue::Real, SqlValue::RealArray);
        self.any_of(expr, numbers, "DOUBLE PRECISION", one, many, sql, params);
    }

    /// `expr` is one of `values` (of the PostgreSQL type `pg_type`): never for none, `= ?` for
    /// one, a match against one array parameter for more, however many.
    #[allow(clippy::too_many_arguments)]
    fn any_of<T>(
        self,
        expr: &str,
        mut values: Vec<T>,
        pg_type: &str,
        one: fn(T) -> SqlValue,
        many: fn(Vec<T>) -> SqlValue,
        sql: &mut String,
        params: &mut Vec<SqlValue>,
    ) {
        match (values.len(), self) {
            (0, _) => sql.push_str(self.never()),
            (1, Dialect::Sqlite) => {
                sql.push_str(&format!("{expr} = ?"));
                params.extend(values.pop().map(one));
            }
            (1, Dialect::Postgres) => {
                sql.push_str(&format!("{expr} = CAST(? AS {pg_type})"));
                params.extend(values.pop().map(one));
            }
            (n, Dialect::Sqlite) if n <= LISTED_VALUES => {
                // Listed, so that the planner reads them as an index's IN constraint.
                sql.push_str(&format!("{expr} IN ("));
                for i in 0..n {
                    sql.push_str(if i == 0 { "?" } else { ", ?" });
                }
                sql.push(')');
                params.extend(values.into_iter().map(one));
            }
            (_, Dialect::Sqlite) => {
                sql.push_str(&format!("{expr} IN (SELECT value FROM json_each(?))"));
                params.push(many(values));
            }
            (_, Dialect::Postgres) => {
                // `= ANY` of an array: an index probes each value, a filter hashes them
                // (PostgreSQL 14 and later), and the planner estimates each value.
                sql.push_str(&format!("{expr} = ANY(CAST(? AS {pg_type}[]))"));
                params.push(many(values));
            }
        }
    }

    /// A condition that holds for no row.
    fn never(self) -> &'static str {
        match self {
            Dialect::Sqlite => "0",
            Dialect::Postgres => "FALSE",
        }
    }

    /// The field matches one of the wanted values by its stored JSON type (see [`Cond::Field`]).
    fn field_in(
        self,
        path: &FieldPath,
        wanted: Wanted,
        sql: &mut String,
        params: &mut Vec<SqlValue>,
    ) {
        let Wanted {
            texts,
            numbers,
            with_true,
            with_false,
            with_null,
        } = wanted;
        match self {
            Dialect::Sqlite => {
                let p = format!("'$.{}'", path.0.join("."));
                let value = format!("json_extract(data, {p})");
                sql.push_str(&format!(
                    "(CASE COALESCE(json_type(data, {p}), 'null') WHEN 'text' THEN "
                ));
                self.text_in(&value, texts.clone(), sql, params);
                sql.push_str(" WHEN 'integer' THEN ");
                self.number_in(&value, numbers.clone(), sql, params);
                sql.push_str(" WHEN 'real' THEN ");
                self.number_in(&value, numbers, sql, params);
                sql.push_str(" WHEN 'true' THEN ? WHEN 'false' THEN ? WHEN 'null' THEN ?");
                params.extend([with_true, with_false, with_null].map(|b| SqlValue::Int(b as i64)));
                if !texts.is_empty() {
                    // An element's text: strings as they are, numbers as written, booleans as
                    // `true`/`false`; null has none.
                    sql.push_str(&format!(
                        " WHEN 'array' THEN EXISTS (SELECT 1 FROM json_each(data, {p}) e WHERE "
                    ));
                    self.text_in(
                        "(CASE e.type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' \
                         WHEN 'null' THEN NULL ELSE CAST(e.value AS TEXT) END)",
                        texts,
                        sql,
                        params,
                    );
                    sql.push(')');
                }
                sql.push_str(" ELSE 0 END)");
            }
            Dialect::Postgres => {
                let p = format!("'{{{}}}'", path.0.join(","));
                let text = format!("(data #>> {p})");
                sql.push_str(&format!(
                    "(CASE COALESCE(json_typeof(data #> {p}), 'null') WHEN 'string' THEN "
                ));
                self.text_in(&text, texts.clone(), sql, params);
                sql.push_str(" WHEN 'number' THEN ");
                self.number_in(&format!("{text}::float8"), numbers, sql, params);
                sql.push_str(&format!(
                    " WHEN 'boolean' THEN (CASE {text} WHEN 'true' THEN CAST(? AS BOOLEAN) \
                     ELSE CAST(? AS BOOLEAN) END) WHEN 'null' THEN CAST(? AS BOOLEAN)"
                ));
                params.extend([with_true, with_false, with_null].map(SqlValue::Bool));
                if !texts.is_empty() {
                    // `IS TRUE` keeps the membership a hashed subplan, built once per statement:
                    // as a bare `IN` the planner may turn it into a semi join per array, which
                    // it has planned as a nested loop over every value (seen with 10,000).
                    sql.push_str(&format!(
                        " WHEN 'array' THEN EXISTS (SELECT 1 FROM json_array_elements_text(data #> {p}) e WHERE ("
                    ));
                    self.text_in("e", texts, sql, params);
                    sql.push_str(") IS TRUE)");
                }
                sql.push_str(" ELSE FALSE END)");
            }
        }
    }

    /// `INSERT` of `rows` new records into a resource table, one parameter per column per row.
    pub fn insert_records_sql(self, table: &str, columns: &[&str], rows: usize) -> String {
        let mut sql = format!("INSERT INTO {table} ({}) VALUES ", columns.join(", "));
        let row = format!("({})", vec!["?"; columns.len()].join(", "));
        sql.reserve(rows * (row.len() + 2));
        for i in 0..rows {
            if i > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&row);
        }
        sql
    }

    /// `WHERE organization_id = ? AND ...` for the conditions.
    pub fn where_clause(self, org: Uuid, conds: &[Cond], params: &mut Vec<SqlValue>) -> String {
        let mut sql = String::from(" WHERE organization_id = ?");
        params.push(SqlValue::Text(org.to_string()));
        let narrow_index = conds.iter().any(|c| {
            matches!(
                c,
                Cond::Indexed { broad: false, .. } | Cond::Ids(_) | Cond::Property { .. }
            )
        });
        for cond in conds {
            sql.push_str(" AND ");
            match cond {
                Cond::Indexed {
                    field,
                    values,
                    broad: true,
                } if narrow_index && self == Dialect::Sqlite && !values.is_empty() => {
                    // A unary `+` keeps SQLite from using an index for the term (see
                    // `Cond::Indexed::broad`); the value compared is the same.
                    let expr = format!("+{}", self.indexed_expr(field));
                    self.text_cond(&expr, values, &mut sql, params);
                }
                _ => self.cond(org, cond, &mut sql, params),
            }
        }
        sql
    }

    /// `ORDER BY ...` for the sort keys, ending with the stable default `created_at, id`.
    pub fn order_by(self, sort: &[Sort]) -> String {
        let mut keys = Vec::new();
        for s in sort {
            let dir = if s.descending {
                "DESC NULLS LAST"
            } else {
                "ASC NULLS FIRST"
            };
            if let Some(column) = s.path.column() {
                keys.push(format!("{column} {dir}"));
                continue;
            }
            if let Some(field) = &s.as_of {
                keys.push(format!("{} {dir}", self.as_of_sort_key(field)));
                continue;
            }
            match self {
                Dialect::Sqlite => keys.push(format!("{} {dir}", self.text_expr(&s.path))),
                Dialect::Postgres => {
                    // Numbers by value, then everything by text in byte order, as SQLite sorts.
                    let p = format!("'{{{}}}'", s.path.0.join(","));
                    keys.push(format!(
                        "(CASE WHEN json_typeof(data #> {p}) = 'number' THEN (data #>> {p})::float8 END) {dir}"
                    ));
                    keys.push(format!("{} COLLATE \"C\" {dir}", self.text_expr(&s.path)));
                }
            }
        }
        keys.push("created_at ASC".into());
        keys.push("id ASC".into());
        format!(" ORDER BY {}", keys.join(", "))
    }
}

/// What a field filter's values can match, by the stored value's JSON type.
#[derive(Debug, Default, PartialEq)]
struct Wanted {
    /// Every value as text (UUIDs canonical), without repeats: a string, or an array element's
    /// text, equal to one of them matches.
    texts: Vec<String>,
    /// The values that are JSON numbers, without repeats: a number equal to one matches.
    numbers: Vec<f64>,
    /// `true` (in any letter case) is among the values.
    with_true: bool,
    with_false: bool,
    /// `null` is among the values: null and a missing field match.
    with_null: bool,
}

impl Wanted {
    fn of(values: &[String]) -> Wanted {
        let mut w = Wanted::default();
        for raw in values {
            w.texts.push(canonical_text(raw));
            if let Some(n) = parse_number(raw) {
                w.numbers.push(n);
            }
            if raw.eq_ignore_ascii_case("true") {
                w.with_true = true;
            } else if raw.eq_ignore_ascii_case("false") {
                w.with_false = true;
            }
            w.with_null |= raw == "null";
        }
        w.texts.sort_unstable();
        w.texts.dedup();
        w.numbers.sort_unstable_by(f64::total_cmp);
        // -0.0 and 0.0 are one number to the database.
        w.numbers.dedup_by(|a, b| a == b);
        w
    }
}

/// What the property value index looks up for a filter on a custom property with these
/// values ([`Cond::Property`]), `None` when it cannot serve it (see
/// [`property_index::lookup`](super::property_index::lookup)).
pub fn property_lookup(values: &[String]) -> Option<super::property_index::Lookup> {
    let w = Wanted::of(values);
    super::property_index::lookup(
        values,
        &w.texts,
        &w.numbers,
        w.with_true,
        w.with_false,
        w.with_null,
    )
}

/// UUIDs in their canonical lower-case form, everything else as given.
fn canonical_text(raw: &str) -> String {
    match Uuid::parse_str(raw) {
        Ok(u) if raw.len() == 36 => u.to_string(),
        _ => raw.to_string(),
    }
}

/// A finite decimal number written the way JSON writes numbers.
fn parse_number(raw: &str) -> Option<f64> {
    let looks_numeric = !raw.is_empty()
        && raw
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E'))
        && raw.bytes().any(|b| b.is_ascii_digit());
    if !looks_numeric {
        return None;
    }
    raw.parse::<f64>().ok().filter(|f| f.is_finite())
}

fn escape_like(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_paths_are_checked() {
        assert!(FieldPath::parse("status").is_some());
        assert!(FieldPath::parse("data.properties.width2").is_some());
        assert!(FieldPath::parse("a'b").is_none());
        assert!(FieldPath::parse("a..b").is_none());
        assert!(FieldPath::parse("").is_none());
    }

    #[test]
    fn numbers_are_json_numbers_only() {
        assert_eq!(parse_number("12"), Some(12.0));
        assert_eq!(parse_number("-1.5e3"), Some(-1500.0));
        assert_eq!(parse_number("inf"), None);
        assert_eq!(parse_number("NaN"), None);
        assert_eq!(parse_number("abc"), None);
    }

    #[test]
    fn a_filter_binds_one_parameter_per_kind_of_value_however_many() {
        let values: Vec<String> = (0..10_000)
            .map(|i| i.to_string())
            .chain(["true".into(), "null".into(), "x".into()])
            .collect();
        for dialect in [Dialect::Sqlite, Dialect::Postgres] {
            for cond in [
                Cond::Field {
                    path: FieldPath::parse("a.b").unwrap(),
                    values: values.clone(),
                },
                Cond::Text {
                    path: FieldPath::parse("name").unwrap(),
                    values: values.clone(),
                },
                Cond::Ids((0..10_000).map(|_| Uuid::new_v4()).collect()),
            ] {
                let (mut sql, mut params) = (String::new(), Vec::new());
                dialect.cond(Uuid::nil(), &cond, &mut sql, &mut params);
                assert!(sql.len() < 2_000, "{sql}");
                assert!(params.len() <= 8, "{params:?}");
            }
        }
    }

    #[test]
    fn filter_values_are_sorted_by_what_they_can_match() {
        let raw = [
            "5",
            "5.0",
            "abc",
            "TRUE",
            "null",
            "ABCDEF01-2345-6789-ABCD-EF0123456789",
            "abc",
        ];
        let w = Wanted::of(&raw.map(String::from));
        assert_eq!(
            w.texts,
            [
                "5",
                "5.0",
                "TRUE",
                "abc",
                "abcdef01-2345-6789-abcd-ef0123456789",
                "null"
            ]
        );
        assert_eq!(w.numbers, [5.0]);
        assert!(w.with_true && !w.with_false && w.with_null);
        assert_eq!(Wanted::of(&[]), Wanted::default());
    }

    #[test]
    fn like_metacharacters_are_escaped() {
        assert_eq!(escape_like("50%_a\\"), "50\\%\\_a\\\\");
    }
}
