//! Parsing what a standard call asks for: ids, filters, search, sort, paging, query bodies.

use serde::Deserialize;
use serde_json::{Map, Value};
use uuid::Uuid;

use super::{DEFAULT_PAGE_SIZE, MAX_PAGE, MAX_PAGE_SIZE, ServedResource};
use crate::http::error::{ApiError, ApiResult};
use crate::store::records::Select;
use crate::store::sql::{AsOfField, Cond, FieldPath, Sort};
use prodops_core::alerts::AsOf;

pub use crate::http::typed::parse_id;

/// Filters, search, sort and paging of a list or bulk call.
#[derive(Debug, Default)]
pub struct ListParams {
    pub conds: Vec<Cond>,
    pub sort: Vec<Sort>,
    pub page: u64,
    pub page_size: u64,
    /// Whether any filter or search was given (bulk PATCH and DELETE require one).
    pub filtered: bool,
    /// `cursor`: the page starts after this row `(created_at, id)` of the default order.
    pub cursor: Option<(String, String)>,
}

/// The opaque `nextCursor` of a list page: the last row's `(created_at, id)`, hex-encoded.
pub fn encode_cursor(created_at: &str, id: &str) -> String {
    let plain = [created_at.as_bytes(), b"|", id.as_bytes()].concat();
    // Into a buffer: `hex::encode` collects chars one by one (about 5,000 instructions a page).
    let mut hex = vec![0u8; plain.len() * 2];
    hex::encode_to_slice(&plain, &mut hex).expect("the buffer holds two digits a byte");
    String::from_utf8(hex).expect("hex digits are ASCII")
}

/// Reads a cursor [`encode_cursor`] made; anything else is a 400 on `cursor`.
pub fn decode_cursor(raw: &str) -> ApiResult<(String, String)> {
    let bad = || {
        ApiError::field(
            "cursor",
            "is not a cursor this server issued (use nextCursor of the previous page)",
        )
    };
    if raw.len() > 256 {
        return Err(bad());
    }
    let bytes = hex::decode(raw).map_err(|_| bad())?;
    let text = String::from_utf8(bytes).map_err(|_| bad())?;
    let (created, id) = text.split_once('|').ok_or_else(bad)?;
    let id = Uuid::parse_str(id).map_err(|_| bad())?;
    if created.len() != 27 || chrono::DateTime::parse_from_rfc3339(created).is_err() {
        return Err(bad());
    }
    Ok((created.to_string(), id.to_string()))
}

impl ListParams {
    pub(crate) fn select(&self) -> Select {
        Select {
            conds: self.conds.clone(),
            sort: self.sort.clone(),
            limit: self.page_size,
            offset: (self.page - 1).saturating_mul(self.page_size),
        }
    }
}

fn parse_u64(name: &str, raw: &str, min: u64, max: u64) -> ApiResult<u64> {
    match raw.parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(ApiError::field(
            name,
            format!("must be a whole number from {min} to {max}"),
        )),
    }
}

fn parse_sort(res: &ServedResource, raw: &str, now: &AsOf) -> ApiResult<Vec<Sort>> {
    raw.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            let (descending, name) = match s.strip_prefix('-') {
                Some(rest) => (true, rest),
                None => (false, s.strip_prefix('+').unwrap_or(s)),
            };
            let path = res.stored_path(name)?;
            Ok(Sort {
                as_of: as_of_field(res, &path, now),
                path,
                descending,
            })
        })
        .collect()
}

/// The sort keys of a call: the given ones, else the resource's default order.
pub(crate) fn sort_or_default(
    res: &ServedResource,
    given: Option<&str>,
    now: &AsOf,
) -> ApiResult<Vec<Sort>> {
    match given {
        Some(raw) => parse_sort(res, raw, now),
        None => parse_sort(res, &res.desc().default_sort.join(","), now),
    }
}

/// The field at `path` if its answer depends on the moment of the read (alerts), with `now`.
pub(crate) fn as_of_field(res: &ServedResource, path: &FieldPath, now: &AsOf) -> Option<AsOfField> {
    prodops_core::alerts::derived(res.table(), path.segments()).map(|rule| AsOfField {
        rule,
        now: now.clone(),
    })
}

fn archived_cond(raw: &str) -> ApiResult<Cond> {
    match raw {
        "true" => Ok(Cond::Archived(true)),
        "false" => Ok(Cond::Archived(false)),
        _ => Err(ApiError::field("isArchived", "must be true or false")),
    }
}

pub(crate) fn search_cond(res: &ServedResource, text: &str) -> ApiResult<Cond> {
    let columns = res.desc().search_columns;
    if columns.is_empty() {
        return Err(ApiError::field(
            "search",
            format!("/{} has no search columns", res.desc().path),
        ));
    }
    crate::http::text::check_search(text)?;
    let columns = columns.iter().filter_map(|c| FieldPath::parse(c)).collect();
    Ok(Cond::Search {
        columns,
        text: text.to_string(),
    })
}

/// Parses `?field=value&search=..&sort=..&page=..&pageSize=..`. A repeated field matches any
/// of its values. `paging` says whether page and sort parameters belong to this call; `now` is
/// the moment fields such as alerts are answered as of.
pub fn parse_list_params(
    res: &ServedResource,
    query: Option<&str>,
    paging: bool,
    now: &AsOf,
) -> ApiResult<ListParams> {
    let mut params = ListParams {
        page: 1,
        page_size: DEFAULT_PAGE_SIZE,
        ..Default::default()
    };
    let mut archived_given = false;
    let mut sort = None;
    let mut fields: Vec<(String, Vec<String>)> = Vec::new();
    for (key, value) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        match key.as_ref() {
            // An empty search or filter value is no filter (docs/decisions.md, "Empty filter
            // values"): `?search=` from a script whose variable was empty must not turn a bulk
            // change into one of every record.
            // Still held to the search's own limits (length, characters), as the document says.
            "search" if value.trim().is_empty() => crate::http::text::check_search(&value)?,
            "search" => {
                params.conds.push(search_cond(res, &value)?);
                params.filtered = true;
            }
            "sort" if paging => sort = Some(value.into_owned()),
            "page" if paging => params.page = parse_u64("page", &value, 1, MAX_PAGE)?,
            "cursor" if paging => params.cursor = Some(decode_cursor(&value)?),
            "pageSize" if paging => {
                params.page_size = parse_u64("pageSize", &value, 1, MAX_PAGE_SIZE)?
            }
            "isArchived" if res.desc().archive.is_archivable() => {
                params.conds.push(archived_cond(&value)?);
                archived_given = true;
                params.filtered = true;
            }
            name => {
                res.stored_path(name)?;
                if value.is_empty() {
                    continue;
                }
                match fields.iter_mut().find(|(n, _)| n == name) {
                    Some((_, values)) => values.push(value.into_owned()),
                    None => fields.push((name.to_string(), vec![value.into_owned()])),
                }
            }
        }
    }
    for (field, value) in res.desc().default_filters {
        if !fields.iter().any(|(n, _)| n == field) {
            params.conds.push(default_cond(res, field, value, now)?);
        }
    }
    for (name, values) in fields {
        params
            .conds
            .push(field_cond(res, res.stored_path(&name)?, values, now));
        params.filtered = true;
    }
    if res.desc().archive.is_archivable() && !archived_given {
        params.conds.push(Cond::Archived(false));
    }
    params.conds.extend(res.implied_conds());
    params.sort = sort_or_default(res, sort.as_deref(), now)?;
    if params.cursor.is_some() {
        if !params.sort.is_empty() {
            return Err(ApiError::field(
                "cursor",
                format!(
                    "pages only the default order of /{} (creation order, no sort)",
                    res.desc().path
                ),
            ));
        }
        if params.page != 1 {
            return Err(ApiError::field("cursor", "cannot be combined with page"));
        }
    }
    Ok(params)
}

/// A filter value as the text a query string would carry.
fn filter_text(field: &str, value: &Value) -> ApiResult<Vec<String>> {
    match value {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Number(n) => Ok(vec![n.to_string()]),
        Value::Bool(b) => Ok(vec![b.to_string()]),
        Value::Null => Ok(vec!["null".into()]),
        Value::Array(items) => {
            let mut out = Vec::new();
            for item in items {
                if item.is_array() || item.is_object() {
                    return Err(ApiError::field(
                        field,
                        "filter values must be strings, numbers, booleans or null",
                    ));
                }
                out.extend(filter_text(field, item)?);
            }
            Ok(out)
        }
        Value::Object(_) => Err(ApiError::field(
            field,
            "filter values must be strings, numbers, booleans or null",
        )),
    }
}

/// An empty string filters nothing, in a JSON `filter` as in a query string.
fn is_empty_filter_value(value: &Value) -> bool {
    matches!(value, Value::String(s) if s.is_empty())
}

/// Conditions of a JSON `filter` object; archived records are left out unless it names `isArchived`.
pub fn filter_conds(
    res: &ServedResource,
    filter: Option<&Map<String, Value>>,
    exclude_archived: bool,
    now: &AsOf,
) -> ApiResult<Vec<Cond>> {
    let mut conds = Vec::new();
    let mut archived_given = false;
    for (name, value) in filter.into_iter().flatten() {
        if is_empty_filter_value(value) {
            res.stored_path(name)?;
            continue;
        }
        if name == "isArchived" && res.desc().archive.is_archivable() {
            match value {
                Value::Bool(b) => conds.push(Cond::Archived(*b)),
                _ => return Err(ApiError::field("isArchived", "must be true or false")),
            }
            archived_given = true;
            continue;
        }
        conds.push(field_cond(
            res,
            res.stored_path(name)?,
            filter_text(name, value)?,
            now,
        ));
    }
    if res.desc().archive.is_archivable() && !archived_given && exclude_archived {
        conds.push(Cond::Archived(false));
    }
    conds.extend(res.implied_conds());
    if exclude_archived {
        for (field, value) in res.desc().default_filters {
            if filter.is_none_or(|f| f.get(*field).is_none_or(is_empty_filter_value)) {
                conds.push(default_cond(res, field, value, now)?);
            }
        }
    }
    Ok(conds)
}

fn default_cond(res: &ServedResource, field: &str, value: &str, now: &AsOf) -> ApiResult<Cond> {
    Ok(field_cond(
        res,
        res.stored_path(field)?,
        vec![value.to_string()],
        now,
    ))
}

/// The condition of an equality filter: [`Cond::Indexed`] on a top-level field with a filter
/// index (`prodops_core::filter_fields`), [`Cond::Text`] on another top-level field the
/// resource's schema types as a string (or null); [`Cond::Property`] on a custom property of deliverables
/// (`data.properties.<key>`), which the property value index serves; else [`Cond::Field`].
/// All four give the same answer on such a field. A field answered as of the moment of the
/// read (`prodops_core::alerts::derived`) is [`Cond::AsOf`]: its rule at `now`, not the stored
/// value.
fn field_cond(res: &ServedResource, path: FieldPath, values: Vec<String>, now: &AsOf) -> Cond {
    if let Some(field) = as_of_field(res, &path, now) {
        return Cond::AsOf { field, values };
    }
    let kinds = prodops_core::filter_fields::of_table(res.table());
    match path.segments() {
        [field] if kinds.filter_indexed.contains(field) => Cond::Indexed {
            field: field.clone(),
            values,
            broad: kinds.counted.contains(field),
        },
        [field] if kinds.strings.contains(field) => Cond::Text { path, values },
        [data, properties, key]
            if data == "data"
                && properties == "properties"
                && res.table() == crate::store::property_index::SOURCE_TABLE =>
        {
            Cond::Property {
                key: key.clone(),
                values,
            }
        }
        _ => Cond::Field { path, values },
    }
}

/// The conditions of a read by id: the resource's default filters, each replaced by the
/// query's own value of that field when it names it; other parameters are ignored.
pub(crate) fn default_filter_conds(
    res: &ServedResource,
    query: Option<&str>,
    now: &AsOf,
) -> ApiResult<Vec<Cond>> {
    let mut conds = Vec::new();
    for (field, value) in res.desc().default_filters {
        let given: Vec<String> = form_urlencoded::parse(query.unwrap_or("").as_bytes())
            .filter(|(k, _)| k == field)
            .map(|(_, v)| v.into_owned())
            .collect();
        if given.is_empty() {
            conds.push(default_cond(res, field, value, now)?);
        } else {
            conds.push(field_cond(res, res.stored_path(field)?, given, now));
        }
    }
    Ok(conds)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct QueryBody {
    pub(crate) id: Option<Vec<Uuid>>,
    pub(crate) select: Option<Vec<String>>,
    pub(crate) filter: Option<Map<String, Value>>,
    pub(crate) search: Option<String>,
    pub(crate) sort: Option<String>,
    // `5.0` is the number 5 in JSON (and in the OpenAPI document's `integer`).
    #[serde(default, deserialize_with = "prodops_core::number::whole_opt")]
    pub(crate) page: Option<u64>,
    #[serde(default, deserialize_with = "prodops_core::number::whole_opt")]
    pub(crate) page_size: Option<u64>,
}

/// The key a selected field comes back under: `data.properties.squareFeet` → `dataPropertiesSquareFeet`.
pub fn flattened_name(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for (i, segment) in path.split('.').enumerate() {
        let mut chars = segment.chars();
        match (i, chars.next()) {
            (0, Some(c)) => {
                out.push(c);
                out.extend(chars);
            }
            (_, Some(c)) => {
                out.extend(c.to_uppercase());
                out.extend(chars);
            }
            _ => {}
        }
    }
    out
}

pub(crate) fn lookup_path<'v>(value: &'v Value, path: &FieldPath) -> Option<&'v Value> {
    path.segments()
        .iter()
        .try_fold(value, |v, seg| v.get(seg.as_str()))
}

/// Parses a request body into a typed request, naming the offending field in the error.
pub fn parse_body<T: serde::de::DeserializeOwned>(body: Value) -> ApiResult<T> {
    prodops_core::resource::parse(body).map_err(|v| ApiError::violations(vec![v]))
}

pub(crate) fn body_object(body: Value) -> ApiResult<Map<String, Value>> {
    match body {
        Value::Object(map) => Ok(map),
        _ => Err(ApiError::validation(
            "the request body must be a JSON object",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::flattened_name;

    #[test]
    fn selected_paths_flatten_to_camel_case() {
        assert_eq!(
            flattened_name("data.properties.squareFeet"),
            "dataPropertiesSquareFeet"
        );
        assert_eq!(flattened_name("name"), "name");
        assert_eq!(flattened_name("appUser.email"), "appUserEmail");
    }

    #[test]
    fn a_cursor_is_the_hex_of_its_text_and_reads_back() {
        let created = "2026-11-25T10:00:00.123456Z";
        let id = "01a21251-2e62-741b-851a-88a49b760007";
        let cursor = super::encode_cursor(created, id);
        assert_eq!(cursor, hex::encode(format!("{created}|{id}")));
        assert_eq!(
            super::decode_cursor(&cursor).unwrap(),
            (created.to_string(), id.to_string())
        );
    }
}
