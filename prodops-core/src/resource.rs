//! The description of a standard resource and the `Record` trait every resource type implements.
//!
//! The server's generic engine serves list, read, create, update, delete, query, count,
//! group-and-count and the bulk forms of every resource from this description alone; the
//! resource's own rules plug in through the `Record` methods (pure) and server hooks (that need
//! the database).

use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::objects_only::ObjectsOnly;
use crate::violation::Violation;

/// How a resource is archived, which decides what DELETE does and what lists show by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Archive {
    /// Not archivable: DELETE removes the record; lists show every record.
    No,
    /// DELETE sets `isArchived: true`; PATCH `{ isArchived: false }` restores (spec 3.5).
    OnDelete,
    /// Archived and restored only by PATCH of `isArchived`; DELETE is refused (workers, spec 4.11).
    PatchOnly,
    /// Archived through the resource's own actions; generic PATCH refuses `isArchived`
    /// and DELETE removes the record for good (deliveries, spec 4.8).
    Actions,
}

impl Archive {
    pub fn is_archivable(self) -> bool {
        !matches!(self, Archive::No)
    }
}

/// Whether one standard write operation is offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allow {
    Yes,
    /// Refused with 403 `FORBIDDEN` (worker DELETE, custom-property bulk DELETE, ...).
    Forbidden,
    /// Refused with 405 `METHOD_NOT_ALLOWED` (document POST, timesheet writes, ...).
    NotAllowed,
    /// Served by the resource's own handler instead of the engine.
    Custom,
}

/// The standard write operations and whether each is offered. Reads (list, get, query, count,
/// group-and-count) are always offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ops {
    pub create: Allow,
    pub update: Allow,
    pub delete: Allow,
    pub bulk_put: Allow,
    pub bulk_patch: Allow,
    pub bulk_delete: Allow,
}

impl Ops {
    pub const ALL: Ops = Ops {
        create: Allow::Yes,
        update: Allow::Yes,
        delete: Allow::Yes,
        bulk_put: Allow::Yes,
        bulk_patch: Allow::Yes,
        bulk_delete: Allow::Yes,
    };
    pub const READ_ONLY: Ops = Ops {
        create: Allow::NotAllowed,
        update: Allow::NotAllowed,
        delete: Allow::NotAllowed,
        bulk_put: Allow::NotAllowed,
        bulk_patch: Allow::NotAllowed,
        bulk_delete: Allow::NotAllowed,
    };
}

/// A uniqueness rule over one or more fields, enforced by the storage layer with a unique index
/// (so it holds under concurrent writers) and answered with 409 `CONFLICT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UniqueKey {
    /// Short name, used for the index name.
    pub name: &'static str,
    /// Top-level fields (camelCase) that together must be unique per organization.
    pub fields: &'static [&'static str],
    /// Compare text case-insensitively.
    pub case_insensitive: bool,
    /// Only records with `isArchived: false` take part.
    pub active_only: bool,
    /// The message of the 409.
    pub message: &'static str,
}

/// Everything the generic engine needs to know about a standard resource.
#[derive(Debug, Clone, Copy)]
pub struct ResourceDesc {
    /// Path segment under `/api/v2` (`catalog-entry`).
    pub path: &'static str,
    /// Table name in the database (`catalog_entry`).
    pub table: &'static str,
    /// Permission resource name, PascalCase singular (`CatalogEntry`): decisions.md section 2.
    pub permission: &'static str,
    /// Fields matched by `search` (case-insensitive substring); dotted paths allowed (`appUser.email`).
    pub search_columns: &'static [&'static str],
    pub archive: Archive,
    /// Whether the record has an `archivedAt` timestamp the engine keeps in step with `isArchived`.
    pub archived_at: bool,
    pub ops: Ops,
    pub unique: &'static [UniqueKey],
    /// Server-managed fields beyond the common ones (`id`, `organizationId`, `createdAt`,
    /// `updatedAt`, `archivedAt`): ignored when they appear in a request body.
    pub read_only: &'static [&'static str],
    /// Fields that cannot change after creation: a PATCH that changes one is a 400.
    pub immutable: &'static [&'static str],
    /// When nonempty, a PATCH may carry only these fields; any other field is a 400 (documents
    /// accept only `isArchived`, spec 4.7).
    pub patch_only: &'static [&'static str],
    /// The default order of lists (fields, `-` for descending) before the final `createdAt, id`;
    /// empty for creation order.
    pub default_sort: &'static [&'static str],
    /// Filters a list, query, count, group-and-count, bulk call and read by id apply unless the
    /// call names the field itself (`deliverableDocument=true` on documents, spec 4.7):
    /// `(field, value)` with the value as a query string would carry it.
    pub default_filters: &'static [(&'static str, &'static str)],
    /// Fields computed on every answer and never stored (a delivery's `partial`, a document's
    /// signed `documentUrl`): answers and `select` show them, but filters, sorts and
    /// group-and-count cannot use them (400 naming the field), and the OpenAPI document does not
    /// offer them there. A field answered as of the moment of the read that the database can
    /// evaluate (`crate::alerts::derived`) is not one of these.
    pub answered: &'static [&'static str],
    /// One line for the OpenAPI document.
    pub summary: &'static str,
}

impl ResourceDesc {
    /// A description with the common defaults; override fields with struct update syntax.
    pub const fn new(path: &'static str, table: &'static str, permission: &'static str) -> Self {
        ResourceDesc {
            path,
            table,
            permission,
            search_columns: &[],
            archive: Archive::No,
            archived_at: false,
            ops: Ops::ALL,
            unique: &[],
            read_only: &[],
            immutable: &[],
            patch_only: &[],
            default_sort: &[],
            default_filters: &[],
            answered: &[],
            summary: "",
        }
    }
}

/// The fields the engine manages on every record; ignored in request bodies.
pub const COMMON_READ_ONLY: &[&str] = &["organizationId", "createdAt", "updatedAt", "archivedAt"];

/// A resource type: its wire form (serde, camelCase), its description and its pure rules.
///
/// The wire struct must use `#[serde(rename_all = "camelCase", deny_unknown_fields)]`, hold
/// `id`, `organizationId`, `createdAt`, `updatedAt` (and `isArchived`/`archivedAt` where the
/// description says so), and give every optional field its specification default with
/// `#[serde(default)]`, so that deserializing a create body fills in the defaults.
pub trait Record:
    Serialize + DeserializeOwned + crate::openapi::ToSchema + Send + Sync + 'static
{
    const DESC: ResourceDesc;

    /// Canonicalizes values in place (trimming codes, ...); runs on every write before `validate`.
    fn normalize(&mut self) {}

    /// Rules that depend on the record alone.
    fn validate(&self) -> Vec<Violation> {
        Vec::new()
    }

    /// Rules of a change from `old` to `self` (read-only-when-archived, ...). Immutable fields of
    /// the description are checked by the engine and need no code here.
    fn validate_change(&self, _old: &Self) -> Vec<Violation> {
        Vec::new()
    }

    /// Rules of a request form the OpenAPI document derives from the record's schema (the
    /// create form, the PATCH form) that the record's own schema does not state: a value only
    /// a create takes, a field only a request names, a `null` a PATCH takes to keep a value.
    #[cfg(feature = "openapi")]
    fn refine_form(_form: crate::openapi::Form, _schema: &mut Value) {}
}

/// A `Record` with its type erased, so the server can hold every resource in one table.
pub trait ResourceKind: Send + Sync + 'static {
    fn desc(&self) -> &'static ResourceDesc;

    /// Parses a complete candidate record (defaults still to fill), normalizes it and checks
    /// every rule, including the change rules against `old` when this is an update. Returns
    /// the canonical JSON of the record, or every violation found.
    fn check(&self, candidate: Value, old: Option<&Value>) -> Result<Value, Vec<Violation>>;

    /// [`check`](ResourceKind::check) of a new record (no `old`), answering the canonical JSON
    /// as text, the form it is stored in, without building a `Value` of it first (the bulk
    /// write path). The text is exactly `check(candidate, None)?.to_string()`.
    fn check_new_text(&self, candidate: Value) -> Result<String, Vec<Violation>>;

    /// [`check_new_text`](ResourceKind::check_new_text) of a candidate given as JSON text (an
    /// object whose keys are unique), read straight into the record type. `None` when the text
    /// does not read as the record: the caller then checks the candidate as a `Value` to name
    /// what is wrong.
    fn check_new_json(&self, candidate: &str) -> Option<Result<String, Vec<Violation>>>;

    /// [`check_new_json`](ResourceKind::check_new_json) without writing the canonical text:
    /// for a caller that only needs to know whether the record would be accepted (a client
    /// checking rows before it sends them).
    fn validate_new_json(&self, candidate: &str) -> Option<Result<(), Vec<Violation>>>;

    /// Checks a PATCH body before any record is read (a bulk PATCH checks its body before it
    /// looks for matches): every field it names must be a field of the record, holding a value
    /// of that field's type. With `rules`, the record's own rules are also checked on the fields
    /// the body sets, against a stand-in record (the body over placeholder values of the
    /// required fields it does not name); only violations naming a field of the body count, so
    /// a placeholder never causes one. Read-only fields are the caller's to drop first.
    fn check_patch(
        &self,
        patch: &serde_json::Map<String, Value>,
        rules: bool,
    ) -> Result<(), Vec<Violation>>;

    /// [`Record::refine_form`] of the record type.
    #[cfg(feature = "openapi")]
    fn refine_form(&self, form: crate::openapi::Form, schema: &mut Value);

    /// The schema name and JSON schema of the wire form, for the OpenAPI document.
    #[cfg(feature = "openapi")]
    fn schema(
        &self,
    ) -> (
        String,
        utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
    );

    /// The schema of the wire form and of every type it refers to, for the OpenAPI components.
    #[cfg(feature = "openapi")]
    fn schemas(
        &self,
        out: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    );
}

/// The `ResourceKind` of a `Record` type.
pub struct Kind<T>(std::marker::PhantomData<fn() -> T>);

impl<T> Kind<T> {
    pub const fn new() -> Self {
        Kind(std::marker::PhantomData)
    }
}

impl<T> Default for Kind<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Parses a JSON value into `T` (a struct only from an object), turning a serde error into a violation that names the field.
pub fn parse<T: DeserializeOwned>(value: Value) -> Result<T, Violation> {
    // Most records are valid: read them without tracking the path, and only on failure read
    // again with tracking to name the field (bulk writes check every record).
    // Structs are read only from objects (serde alone also fills them from arrays).
    if let Ok(parsed) = T::deserialize(ObjectsOnly(&value)) {
        return Ok(parsed);
    }
    serde_path_to_error::deserialize(ObjectsOnly(&value)).map_err(|err| {
        let path = err.path().to_string();
        let message = err.into_inner().to_string();
        let field = if path == "." || path.is_empty() {
            None
        } else {
            Some(path)
        };
        Violation {
            field,
            index: None,
            message,
        }
    })
}

impl<T: Record> ResourceKind for Kind<T> {
    fn desc(&self) -> &'static ResourceDesc {
        &T::DESC
    }

    fn check(&self, candidate: Value, old: Option<&Value>) -> Result<Value, Vec<Violation>> {
        if let Some(old) = old {
            let mut changed = Vec::new();
            for field in T::DESC.immutable {
                if let (Some(new_value), Some(old_value)) = (candidate.get(field), old.get(field))
                    && new_value != old_value
                {
                    changed.push(Violation::field(
                        *field,
                        format!("{field} cannot be changed after creation"),
                    ));
                }
            }
            if !changed.is_empty() {
                return Err(changed);
            }
        }
        let mut record: T = parse(candidate).map_err(|v| vec![v])?;
        record.normalize();
        let mut violations = record.validate();
        if let Some(old) = old {
            // The stored record was written by this code, so it parses; if it somehow does not,
            // the change rules cannot be judged and the write is refused rather than guessed.
            match parse::<T>(old.clone()) {
                Ok(old) => violations.extend(record.validate_change(&old)),
                Err(v) => violations.push(Violation::general(format!(
                    "stored record is unreadable: {}",
                    v.message
                ))),
            }
        }
        if !violations.is_empty() {
            return Err(violations);
        }
        serde_json::to_value(&record).map_err(|e| vec![Violation::general(e.to_string())])
    }

    fn check_new_text(&self, candidate: Value) -> Result<String, Vec<Violation>> {
        let mut record: T = parse(candidate).map_err(|v| vec![v])?;
        record.normalize();
        let violations = record.validate();
        if !violations.is_empty() {
            return Err(violations);
        }
        serde_json::to_string(&record).map_err(|e| vec![Violation::general(e.to_string())])
    }

    fn check_new_json(&self, candidate: &str) -> Option<Result<String, Vec<Violation>>> {
        let mut record: T = serde_json::from_str(candidate).ok()?;
        record.normalize();
        let violations = record.validate();
        if !violations.is_empty() {
            return Some(Err(violations));
        }
        Some(serde_json::to_string(&record).map_err(|e| vec![Violation::general(e.to_string())]))
    }

    fn validate_new_json(&self, candidate: &str) -> Option<Result<(), Vec<Violation>>> {
        let mut record: T = serde_json::from_str(candidate).ok()?;
        record.normalize();
        let violations = record.validate();
        Some(if violations.is_empty() {
            Ok(())
        } else {
            Err(violations)
        })
    }

    fn check_patch(
        &self,
        patch: &serde_json::Map<String, Value>,
        rules: bool,
    ) -> Result<(), Vec<Violation>> {
        check_patch::<T>(patch, rules)
    }

    #[cfg(feature = "openapi")]
    fn refine_form(&self, form: crate::openapi::Form, schema: &mut Value) {
        T::refine_form(form, schema)
    }

    #[cfg(feature = "openapi")]
    fn schema(
        &self,
    ) -> (
        String,
        utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
    ) {
        (T::name().into_owned(), T::schema())
    }

    #[cfg(feature = "openapi")]
    fn schemas(
        &self,
        out: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    ) {
        out.push(self.schema());
        T::schemas(out);
    }
}

/// Values tried, in order, for a required field a PATCH body does not name, when a stand-in
/// record is built around the body ([`ResourceKind::check_patch`]).
const PLACEHOLDERS: &[&str] = &[
    "\"\"",
    "0",
    "false",
    "\"00000000-0000-0000-0000-000000000000\"",
    "\"1970-01-01T00:00:00Z\"",
    "\"1970-01-01\"",
    "[]",
    "{}",
];

/// One attempt at reading `probe` as `T`: the record, or where and why it does not read.
fn read_probe<T: DeserializeOwned>(
    probe: &serde_json::Map<String, Value>,
) -> Result<T, (String, String)> {
    serde_path_to_error::deserialize(Value::Object(probe.clone())).map_err(|err| {
        let path = err.path().to_string();
        (path, err.into_inner().to_string())
    })
}

/// The field named by serde's `missing field `x`` message.
fn missing_field(message: &str) -> Option<&str> {
    message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.split('`').next())
}

/// The first segment of a violation's or an error's field path (`data.x` → `data`).
fn top_field(path: &str) -> &str {
    path.split(['.', '[']).next().unwrap_or(path)
}

/// The first value an enum's "expected one of `a`, `b`" message offers.
fn offered_variant(message: &str) -> Option<String> {
    let (_, rest) = message.split_once("expected")?;
    let start = rest.find('`')? + 1;
    let end = start + rest[start..].find('`')?;
    Some(rest[start..end].to_string())
}

fn check_patch<T: Record>(
    patch: &serde_json::Map<String, Value>,
    rules: bool,
) -> Result<(), Vec<Violation>> {
    let refused = |path: String, message: String| {
        let field = (!path.is_empty() && path != ".").then_some(path);
        Err(vec![Violation {
            field,
            index: None,
            message,
        }])
    };
    let mut probe = patch.clone();
    let mut read = read_probe::<T>(&probe);
    // Each round names one missing required field (serde reports the fields present first,
    // so any error of the body's own fields comes before).
    for _ in 0..128 {
        let (path, message) = match read {
            Ok(mut record) => {
                if !rules {
                    return Ok(());
                }
                record.normalize();
                let violations: Vec<Violation> = record
                    .validate()
                    .into_iter()
                    .filter(|v| {
                        v.field
                            .as_deref()
                            .is_some_and(|f| patch.contains_key(top_field(f)))
                    })
                    .collect();
                return if violations.is_empty() {
                    Ok(())
                } else {
                    Err(violations)
                };
            }
            Err(e) => e,
        };
        let missing = (path.is_empty() || path == ".")
            .then(|| missing_field(&message))
            .flatten()
            .filter(|f| !patch.contains_key(*f))
            .map(str::to_string);
        let Some(missing) = missing else {
            // An error inside the body's own fields (the placeholders read by construction).
            return if patch.contains_key(top_field(&path)) || path.is_empty() || path == "." {
                refused(path, message)
            } else {
                Ok(())
            };
        };
        if !rules {
            return Ok(());
        }
        // The body reads; fill the missing field with the first placeholder it takes (an
        // enum's first variant, from its error, when none of the usual ones does).
        let mut candidates: Vec<Value> = PLACEHOLDERS
            .iter()
            .filter_map(|t| serde_json::from_str(t).ok())
            .collect();
        let mut filled = None;
        let mut i = 0;
        while let Some(value) = candidates.get(i).cloned() {
            i += 1;
            let mut trial = probe.clone();
            trial.insert(missing.clone(), value);
            let result = read_probe::<T>(&trial);
            match &result {
                Err((p, m)) if top_field(p) == missing => {
                    if i == 1
                        && let Some(v) = offered_variant(m)
                    {
                        candidates.push(Value::String(v));
                    }
                }
                _ => {
                    filled = Some((trial, result));
                    break;
                }
            }
        }
        let Some((trial, result)) = filled else {
            // No placeholder fits: the body's fields read, which is all that can be said.
            return Ok(());
        };
        probe = trial;
        read = result;
    }
    Ok(())
}

#[cfg(test)]
mod patch_tests;
