//! Workers (spec 2.4, 3.3, 4.11): the roster, with archive naming and restore.

use crate::openapi::ToSchema;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::resource::{Allow, Archive, Ops, Record, ResourceDesc};
use crate::violation::Violation;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum WorkerStatus {
    #[default]
    Active,
    Inactive,
    Terminated,
}

/// A person on the roster (called People in the app).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Worker {
    /// The value used as `workerId` elsewhere.
    pub id: Uuid,
    pub organization_id: Uuid,
    #[schema(pattern = r"\S")]
    pub name: String,
    /// External identifier.
    #[serde(default)]
    pub customer_identifier: String,
    #[serde(default)]
    pub team_id: Option<Uuid>,
    #[serde(default)]
    pub status: WorkerStatus,
    #[serde(default)]
    pub is_archived: bool,
    /// Excluded from assignment planning.
    #[serde(default)]
    pub exempt_from_assignments: bool,
    #[serde(default)]
    pub union_code: Option<String>,
    /// Badge link of an external integration.
    #[serde(default)]
    pub qb_badge_link: Option<String>,
    #[serde(with = "crate::time::iso")]
    pub created_at: DateTime<Utc>,
    #[serde(with = "crate::time::iso")]
    pub updated_at: DateTime<Utc>,
}

/// Wire names of the fields the server's archive and restore hooks write. Those hooks run per
/// record on bulk writes (imports of many workers) and work on the candidate map, so they name
/// the fields here rather than parse a `Worker`; a test holds each to the serialized record.
impl Worker {
    pub const FIELD_NAME: &'static str = "name";
    pub const FIELD_CUSTOMER_IDENTIFIER: &'static str = "customerIdentifier";
    pub const FIELD_TEAM_ID: &'static str = "teamId";
}

impl Record for Worker {
    const DESC: ResourceDesc = ResourceDesc {
        search_columns: &["name", "customerIdentifier"],
        archive: Archive::PatchOnly,
        ops: Ops {
            delete: Allow::Forbidden,
            bulk_delete: Allow::Forbidden,
            ..Ops::ALL
        },
        summary: "Workers: the roster (called People in the app)",
        ..ResourceDesc::new("worker", "worker", "Worker")
    };

    fn normalize(&mut self) {
        self.name = self.name.trim().to_string();
        self.customer_identifier = self.customer_identifier.trim().to_string();
    }

    fn validate(&self) -> Vec<Violation> {
        let mut v = Vec::new();
        if self.name.is_empty() {
            v.push(Violation::field("name", "name must not be empty"));
        }
        v
    }

    fn validate_change(&self, old: &Self) -> Vec<Violation> {
        archived_change(old, self).into_iter().collect()
    }
}

/// An archived worker is read-only: the refusal of a change from `old` to `new` that does not
/// restore it. The server answers it 409 `CONFLICT`: the record's state refuses the change,
/// whatever the body (docs/api.md).
pub fn archived_change(old: &Worker, new: &Worker) -> Option<Violation> {
    (old.is_archived && new.is_archived && new != old).then(|| {
        Violation::field(
            "isArchived",
            "an archived worker is read-only; restore it with PATCH { \"isArchived\": false } first",
        )
    })
}

/// The suffix an archived worker's `name` and `customerIdentifier` carry: ` - (archived <n>)`.
pub fn archive_suffix(n: u32) -> String {
    format!(" - (archived {n})")
}

/// `base` with the archive suffix of the smallest `n >= 1` whose suffixed name is not taken.
/// `is_taken` answers whether another worker already carries a name; its error ends the search.
pub fn archived_name<E>(
    base: &str,
    mut is_taken: impl FnMut(&str) -> Result<bool, E>,
) -> Result<(String, u32), E> {
    let mut n = 1;
    loop {
        let candidate = format!("{base}{}", archive_suffix(n));
        if !is_taken(&candidate)? {
            return Ok((candidate, n));
        }
        n += 1;
    }
}

/// Removes an archive suffix (` - (archived <n>)`) from the end of `name`, if it has one.
pub fn strip_archive_suffix(name: &str) -> &str {
    if let Some(start) = name.rfind(" - (archived ") {
        let rest = &name[start + " - (archived ".len()..];
        if let Some(digits) = rest.strip_suffix(')')
            && !digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_digit())
        {
            return &name[..start];
        }
    }
    name
}

/// The name a restored worker gets: `base` if no active worker carries it, else the first free
/// `<base> (<n>)` for `n = 1, 2, ...`. `is_taken` answers whether an active worker carries a name.
pub fn restored_name<E>(
    base: &str,
    mut is_taken: impl FnMut(&str) -> Result<bool, E>,
) -> Result<String, E> {
    if !is_taken(base)? {
        return Ok(base.to_string());
    }
    let mut n = 1;
    loop {
        let candidate = format!("{base} ({n})");
        if !is_taken(&candidate)? {
            return Ok(candidate);
        }
        n += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;
    use std::collections::HashSet;
    use std::convert::Infallible;

    #[test]
    fn field_names_are_the_records_keys() {
        let w: Worker = crate::common::testing::parse(json!({"name": "Ann"}));
        let record = serde_json::to_value(&w).unwrap();
        for field in [
            Worker::FIELD_NAME,
            Worker::FIELD_CUSTOMER_IDENTIFIER,
            Worker::FIELD_TEAM_ID,
        ] {
            assert!(record.get(field).is_some(), "{field} is not a Worker field");
        }
    }

    #[test]
    fn archive_then_strip_gives_back_the_name() {
        let (name, n) = archived_name("Alice", |_| Ok::<_, Infallible>(false)).unwrap();
        assert_eq!(name, "Alice - (archived 1)");
        assert_eq!(n, 1);
        assert_eq!(strip_archive_suffix(&name), "Alice");
    }

    #[test]
    fn archive_skips_taken_suffixes() {
        let taken: HashSet<&str> = ["Bob - (archived 1)", "Bob - (archived 2)"].into();
        assert_eq!(
            archived_name("Bob", |n| Ok::<_, Infallible>(taken.contains(n)))
                .unwrap()
                .0,
            "Bob - (archived 3)"
        );
    }

    #[test]
    fn strip_leaves_other_names_alone() {
        assert_eq!(
            strip_archive_suffix("Carol - (archived x)"),
            "Carol - (archived x)"
        );
        assert_eq!(
            strip_archive_suffix("Carol (archived 1)"),
            "Carol (archived 1)"
        );
        assert_eq!(
            strip_archive_suffix("Carol - (archived )"),
            "Carol - (archived )"
        );
    }

    #[test]
    fn restore_picks_next_free_name() {
        let taken: HashSet<&str> = ["Dan", "Dan (1)"].into();
        let free = |n: &str| Ok::<_, Infallible>(taken.contains(n));
        assert_eq!(restored_name("Dan", free).unwrap(), "Dan (2)");
        assert_eq!(restored_name("Eve", free).unwrap(), "Eve");
    }

    #[test]
    fn archived_worker_is_read_only_but_restorable() {
        let t = chrono::DateTime::<Utc>::UNIX_EPOCH;
        let old = Worker {
            id: Uuid::nil(),
            organization_id: Uuid::nil(),
            name: "A - (archived 1)".into(),
            customer_identifier: String::new(),
            team_id: None,
            status: WorkerStatus::Active,
            is_archived: true,
            exempt_from_assignments: false,
            union_code: None,
            qb_badge_link: None,
            created_at: t,
            updated_at: t,
        };
        let renamed = Worker {
            name: "B".into(),
            ..old.clone()
        };
        assert_eq!(renamed.validate_change(&old).len(), 1);
        let restored = Worker {
            is_archived: false,
            ..old.clone()
        };
        assert!(restored.validate_change(&old).is_empty());
    }

    proptest! {
        /// The bulk path's check (text straight into the type) agrees with the reference check
        /// (a `Value`), accepting and refusing alike and storing the same text.
        #[test]
        fn checking_json_text_agrees_with_checking_a_value(
            name in prop_oneof![Just(json!(" Ann ")), Just(json!("")), Just(json!(5)), Just(json!("Bo\"b"))],
            status in prop_oneof![Just(None), Just(Some(json!("inactive"))), Just(Some(json!("retired")))],
            archived in prop_oneof![Just(None), Just(Some(json!(true))), Just(Some(json!("yes")))],
            team in prop_oneof![Just(None), Just(Some(json!(null))), Just(Some(json!("0191c3a8-0000-7000-8000-000000000001"))), Just(Some(json!("x")))],
            created in prop_oneof![Just("2024-01-02T08:00:00.123Z"), Just("2024-01-02T08:00:00.000Z")],
        ) {
            use crate::resource::{Kind, ResourceKind};
            let mut c = serde_json::Map::new();
            c.insert("id".into(), json!(Uuid::nil()));
            c.insert("organizationId".into(), json!(Uuid::nil()));
            c.insert("name".into(), name);
            for (k, v) in [("status", status), ("isArchived", archived), ("teamId", team)] {
                if let Some(v) = v {
                    c.insert(k.into(), v);
                }
            }
            c.insert("createdAt".into(), json!(created));
            c.insert("updatedAt".into(), json!(created));
            let kind = Kind::<Worker>::new();
            let text = serde_json::Value::Object(c.clone()).to_string();
            let reference = kind.check(serde_json::Value::Object(c.clone()), None).map(|v| v.to_string());
            prop_assert_eq!(kind.check_new_text(serde_json::Value::Object(c)), reference.clone());
            prop_assert_eq!(
                kind.validate_new_json(&text),
                kind.check_new_json(&text).map(|r| r.map(|_| ())),
                "validating agrees with checking"
            );
            match kind.check_new_json(&text) {
                Some(got) => prop_assert_eq!(got, reference),
                None => prop_assert!(reference.is_err(), "only a refused record fails to read"),
            }
        }

        #[test]
        fn strip_inverts_archive_for_any_name(base in ".{0,40}", n in 1u32..10_000) {
            let name = format!("{base}{}", archive_suffix(n));
            prop_assert_eq!(strip_archive_suffix(&name), base.as_str());
        }

        #[test]
        fn restored_name_is_never_taken(base in "[a-zA-Z ]{1,12}", k in 0usize..5) {
            let mut taken: HashSet<String> = HashSet::new();
            taken.insert(base.clone());
            for i in 1..=k { taken.insert(format!("{base} ({i})")); }
            let name = restored_name(&base, |n| Ok::<_, Infallible>(taken.contains(n))).unwrap();
            prop_assert!(!taken.contains(&name));
        }
    }
}
