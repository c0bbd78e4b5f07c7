//! SQL text for the resource tables, in the two dialects.
//!
//! A resource table holds `organization_id`, `id`, `is_archived`, `created_at`, `updated_at`
//! as columns and the whole record as JSON in `data`. Filters, search, sorting and grouping
//! address record fields by path inside `data`, so one builder serves every resource.

use uuid::Uuid;

use super::SqlValue;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// One condition of a WHERE clause.
#[derive(Debug, Clone)]
pub enum Cond {
    /// The field equals one of the values (given as text, compared by the stored value's JSON
    /// type: `5` matches the number 5 and the string "5"); an array field matches when it
    /// contains one of them.
    Field {
        path: FieldPath,
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

#[derive(Debug, Clone)]
pub struct Sort {
    pub path: FieldPath,
    pub descending: bool,
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

    /// The field as SQL text (strings unquoted), NULL when absent.
    pub fn text_expr(self, path: &FieldPath) -> String {
        match self {
            Dialect::Sqlite => format!("json_extract(data, '$.{}')", path.0.join(".")),
            Dialect::Postgres => format!("(data #>> '{{{}}}')", path.0.join(",")),
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

    /// Appends the SQL of `cond` to `sql` and its parameters to `params`.
    pub fn cond(self, cond: &Cond, sql: &mut String, params: &mut Vec<SqlValue>) {
        match cond {
            Cond::Archived(archived) => {
                sql.push_str("is_archived = ?");
                params.push(SqlValue::Bool(*archived));
            }
            Cond::Ids(ids) => {
                if ids.is_empty() {
                    sql.push_str("1 = 0");
                    return;
                }
                sql.push_str("id IN (");
                for (i, id) in ids.iter().enumerate() {
                    if i > 0 {
                        sql.push_str(", ");
                    }
                    sql.push('?');
                    params.push(SqlValue::Text(id.to_string()));
                }
                sql.push(')');
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
            Cond::Field { path, values } => {
                sql.push('(');
                for (i, raw) in values.iter().enumerate() {
                    if i > 0 {
                        sql.push_str(" OR ");
                    }
                    self.field_eq(path, raw, sql, params);
                }
                if values.is_empty() {
                    sql.push_str("1 = 0");
                }
                sql.push(')');
            }
        }
    }

    fn field_eq(self, path: &FieldPath, raw: &str, sql: &mut String, params: &mut Vec<SqlValue>) {
        let text = canonical_text(raw);
        if let Some(column) = path.column() {
            sql.push_str(&format!("{column} = ?"));
            params.push(SqlValue::Text(text));
            return;
        }
        let number = parse_number(raw).map_or(SqlValue::Null, SqlValue::Real);
        let boolean = match raw.to_ascii_lowercase().as_str() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        };
        let is_null = raw == "null";
        match self {
            Dialect::Sqlite => {
                let p = format!("'$.{}'", path.0.join("."));
                sql.push_str(&format!(
                    "(CASE COALESCE(json_type(data, {p}), 'null') \
                     WHEN 'text' THEN json_extract(data, {p}) = ? \
                     WHEN 'integer' THEN json_extract(data, {p}) = ? \
                     WHEN 'real' THEN json_extract(data, {p}) = ? \
                     WHEN 'true' THEN ? = 1 \
                     WHEN 'false' THEN ? = 0 \
                     WHEN 'null' THEN ? = 1 \
                     WHEN 'array' THEN EXISTS (SELECT 1 FROM json_each(data, {p}) e WHERE \
                       (CASE e.type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' \
                        WHEN 'null' THEN NULL ELSE CAST(e.value AS TEXT) END) = ?) \
                     ELSE 0 END)"
                ));
                let b = boolean.map_or(SqlValue::Null, |b| SqlValue::Int(b as i64));
                params.extend([
                    SqlValue::Text(text.clone()),
                    number.clone(),
                    number,
                    b.clone(),
                    b,
                    SqlValue::Int(is_null as i64),
                    SqlValue::Text(text),
                ]);
            }
            Dialect::Postgres => {
                let p = format!("'{{{}}}'", path.0.join(","));
                sql.push_str(&format!(
                    "(CASE COALESCE(json_typeof(data #> {p}), 'null') \
                     WHEN 'string' THEN (data #>> {p}) = CAST(? AS TEXT) \
                     WHEN 'number' THEN (data #>> {p})::float8 = CAST(? AS DOUBLE PRECISION) \
                     WHEN 'boolean' THEN (data #>> {p}) = CAST(? AS TEXT) \
                     WHEN 'null' THEN CAST(? AS BOOLEAN) \
                     WHEN 'array' THEN EXISTS (SELECT 1 FROM json_array_elements_text(data #> {p}) e WHERE e = CAST(? AS TEXT)) \
                     ELSE FALSE END)"
                ));
                params.extend([
                    SqlValue::Text(text.clone()),
                    number,
                    boolean.map_or(SqlValue::Null, |b| SqlValue::Text(b.to_string())),
                    SqlValue::Bool(is_null),
                    SqlValue::Text(text),
                ]);
            }
        }
    }

    /// `INSERT` of `rows` new records into a resource table, six parameters per row
    /// (`organization_id, id, is_archived, created_at, updated_at, data`).
    pub fn insert_records_sql(self, table: &str, rows: usize) -> String {
        let mut sql = format!(
            "INSERT INTO {table} (organization_id, id, is_archived, created_at, updated_at, data) VALUES "
        );
        sql.reserve(rows * 20);
        for i in 0..rows {
            if i > 0 {
                sql.push_str(", ");
            }
            sql.push_str("(?, ?, ?, ?, ?, ?)");
        }
        sql
    }

    /// `WHERE organization_id = ? AND ...` for the conditions.
    pub fn where_clause(self, org: Uuid, conds: &[Cond], params: &mut Vec<SqlValue>) -> String {
        let mut sql = String::from(" WHERE organization_id = ?");
        params.push(SqlValue::Text(org.to_string()));
        for cond in conds {
            sql.push_str(" AND ");
            self.cond(cond, &mut sql, params);
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
    fn like_metacharacters_are_escaped() {
        assert_eq!(escape_like("50%_a\\"), "50\\%\\_a\\\\");
    }
}
