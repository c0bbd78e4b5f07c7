//! What the top-level fields of a resource hold, read from its schema: which hold only a
//! string (or null), and which of those users filter by (every enum and id field, and the
//! external identifiers). The server derives its filter SQL and its filter indexes from this,
//! so a field added to a record type is filtered and indexed without a second list to keep.

use std::collections::{BTreeSet, HashMap};

use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{KnownFormat, Schema, SchemaFormat, SchemaType, Type};

use crate::resource::ResourceKind;

/// Fields the engine keeps as columns or in every index already; never given an index of their own.
const COLUMN_FIELDS: &[&str] = &[
    "id",
    "organizationId",
    "createdAt",
    "updatedAt",
    "isArchived",
];

/// Free-text fields users look records up by (the CLI's `--key`, integrations' own ids).
const LOOKUP_FIELDS: &[&str] = &["customerIdentifier", "identifier"];

/// The fields of one resource, by what their stored value can be.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldKinds {
    /// Top-level fields whose stored value is always a string or null.
    pub strings: BTreeSet<String>,
    /// The subset users filter by, in schema order: string enums, UUIDs, and
    /// `customerIdentifier`/`identifier`. Each gets an index, and a filter on it is an index range.
    pub filter_indexed: Vec<String>,
    /// The subset of `filter_indexed` whose values form a closed set (string enums): the
    /// database keeps a count per value, so a filtered count is a lookup however many records
    /// match. Ids and identifiers are left out: a count per value would be a row per record.
    pub counted: Vec<String>,
}

/// The shape of one field's schema that matters for filtering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// A string or null; `enumerated` for a closed set of values, `uuid` for an id.
    Text {
        enumerated: bool,
        uuid: bool,
    },
    /// Null alone (one arm of a nullable field).
    Null,
    Other,
}

/// The field kinds of the resource stored in `table`, worked out once per process; empty for a
/// table no resource is stored in.
pub fn of_table(table: &str) -> &'static FieldKinds {
    use std::sync::OnceLock;
    static BY_TABLE: OnceLock<HashMap<&'static str, FieldKinds>> = OnceLock::new();
    static NONE: FieldKinds = FieldKinds {
        strings: BTreeSet::new(),
        filter_indexed: Vec::new(),
        counted: Vec::new(),
    };
    BY_TABLE
        .get_or_init(|| {
            crate::registry::resources()
                .iter()
                .map(|kind| (kind.desc().table, field_kinds(*kind)))
                .collect()
        })
        .get(table)
        .unwrap_or(&NONE)
}

/// The field kinds of `kind`, from its schema (and the components its fields refer to).
pub fn field_kinds(kind: &dyn ResourceKind) -> FieldKinds {
    let mut components = Vec::new();
    kind.schemas(&mut components);
    let components: HashMap<String, RefOr<Schema>> = components.into_iter().collect();
    let (_, schema) = kind.schema();
    let mut kinds = FieldKinds::default();
    let RefOr::T(Schema::Object(object)) = schema else {
        return kinds;
    };
    for (name, field) in &object.properties {
        let Shape::Text { enumerated, uuid } = shape(field, &components, 0) else {
            continue;
        };
        kinds.strings.insert(name.clone());
        let looked_up = LOOKUP_FIELDS.contains(&name.as_str());
        if (enumerated || uuid || looked_up) && !COLUMN_FIELDS.contains(&name.as_str()) {
            kinds.filter_indexed.push(name.clone());
            if enumerated && !uuid && !looked_up {
                kinds.counted.push(name.clone());
            }
        }
    }
    kinds
}

fn shape(schema: &RefOr<Schema>, components: &HashMap<String, RefOr<Schema>>, depth: u8) -> Shape {
    if depth > 8 {
        return Shape::Other;
    }
    match schema {
        RefOr::Ref(r) => {
            let name = r.ref_location.rsplit('/').next().unwrap_or_default();
            components
                .get(name)
                .map_or(Shape::Other, |s| shape(s, components, depth + 1))
        }
        RefOr::T(Schema::Object(o)) => {
            let types: Vec<Type> = match &o.schema_type {
                SchemaType::Type(t) => vec![t.clone()],
                SchemaType::Array(types) => types.clone(),
                SchemaType::AnyValue => return Shape::Other,
            };
            let texts = types.iter().filter(|t| matches!(t, Type::String)).count();
            let nulls = types.iter().filter(|t| matches!(t, Type::Null)).count();
            if texts + nulls != types.len() {
                return Shape::Other;
            }
            if texts == 0 {
                return Shape::Null;
            }
            Shape::Text {
                enumerated: o.enum_values.as_ref().is_some_and(|v| !v.is_empty()),
                uuid: matches!(o.format, Some(SchemaFormat::KnownFormat(KnownFormat::Uuid))),
            }
        }
        // `Option<Enum>` is `oneOf: [null, $ref]`: a string field when every arm is a string or null.
        RefOr::T(Schema::OneOf(one)) => {
            let mut text = None;
            for item in &one.items {
                match (shape(item, components, depth + 1), text) {
                    (Shape::Null, _) => {}
                    (s @ Shape::Text { .. }, None) => text = Some(s),
                    (
                        Shape::Text { enumerated, uuid },
                        Some(Shape::Text {
                            enumerated: e,
                            uuid: u,
                        }),
                    ) => {
                        text = Some(Shape::Text {
                            enumerated: enumerated && e,
                            uuid: uuid && u,
                        })
                    }
                    _ => return Shape::Other,
                }
            }
            text.unwrap_or(Shape::Other)
        }
        RefOr::T(_) => Shape::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry;

    fn kinds(path: &str) -> FieldKinds {
        field_kinds(registry::by_path(path).expect("a resource"))
    }

    #[test]
    fn workers_are_filtered_by_status_team_and_customer_identifier() {
        let k = kinds("worker");
        assert_eq!(k.filter_indexed, ["customerIdentifier", "status", "teamId"]);
        assert_eq!(k.counted, ["status"]);
        for f in [
            "name",
            "customerIdentifier",
            "status",
            "teamId",
            "unionCode",
        ] {
            assert!(k.strings.contains(f), "{f} is a string field");
        }
        for f in ["isArchived", "exemptFromAssignments"] {
            assert!(!k.strings.contains(f), "{f} is not a string field");
        }
        assert_eq!(&k, of_table("worker"));
        assert!(!of_table("catalog_entry").strings.contains("sortOrder"));
        assert!(of_table("no_such_table").strings.is_empty());
    }

    #[test]
    fn deliverables_are_filtered_by_type_identifier_and_their_links() {
        let k = kinds("deliverable");
        for f in [
            "identifier",
            "type",
            "parentId",
            "rootParentId",
            "originTemplateId",
        ] {
            assert!(
                k.filter_indexed.iter().any(|x| x == f),
                "{f} is indexed: {k:?}"
            );
        }
        for f in ["name", "data", "computed", "schedule", "quantity", "id"] {
            assert!(
                !k.filter_indexed.iter().any(|x| x == f),
                "{f} is not indexed"
            );
        }
    }

    #[test]
    fn every_indexed_field_is_a_string_field_and_no_column_is_indexed() {
        for kind in registry::resources() {
            let k = field_kinds(*kind);
            for f in &k.filter_indexed {
                assert!(k.strings.contains(f), "{}.{f}", kind.desc().path);
                assert!(!COLUMN_FIELDS.contains(&f.as_str()));
            }
            for f in &k.counted {
                assert!(k.filter_indexed.contains(f), "{}.{f}", kind.desc().path);
            }
        }
    }

    #[test]
    fn enums_are_counted_per_value_and_ids_are_not() {
        let k = kinds("deliverable");
        assert!(k.counted.iter().any(|f| f == "type"), "{k:?}");
        for f in ["identifier", "parentId", "rootParentId", "originTemplateId"] {
            assert!(!k.counted.iter().any(|x| x == f), "{f} is not counted");
        }
        assert_eq!(kinds("deliverable/work-sessions").counted, ["kind"]);
        assert_eq!(kinds("delivery").counted, ["direction", "status"]);
    }

    #[test]
    fn optional_enums_and_ids_are_indexed_through_their_references() {
        // `kind` and `source` are enums behind a `$ref` (and `Option<..>` a `oneOf` with null).
        assert_eq!(
            kinds("deliverable/work-sessions").filter_indexed,
            ["deliverableId", "kind", "shopId", "workerId"]
        );
        assert_eq!(
            kinds("delivery").filter_indexed,
            [
                "deliverableGroupId",
                "destinationLocationId",
                "direction",
                "driverContactId",
                "identifier",
                "receiverContactId",
                "sourceLocationId",
                "status"
            ]
        );
        assert!(kinds("catalog-entry").filter_indexed.is_empty());
    }
}
