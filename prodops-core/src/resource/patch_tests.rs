use super::*;
use crate::catalog::CatalogEntry;
use crate::deliverable::Deliverable;
use crate::worker::Worker;
use serde_json::json;

fn check<T: Record>(body: Value, rules: bool) -> Result<(), Vec<String>> {
    let body = body.as_object().cloned().expect("an object");
    Kind::<T>::new()
        .check_patch(&body, rules)
        .map_err(|v| v.into_iter().map(|v| v.field.unwrap_or_default()).collect())
}

#[test]
fn a_patch_body_is_judged_without_a_record() {
    // Fields a record can take, whatever the record.
    assert_eq!(check::<Worker>(json!({}), true), Ok(()));
    assert_eq!(
        check::<Worker>(json!({"status": "inactive", "name": " Bo "}), true),
        Ok(())
    );
    assert_eq!(
        check::<Deliverable>(json!({"quantity": 2, "data": {"x": 1}}), true),
        Ok(())
    );
    // Types and unknown fields, with or without the rules.
    assert_eq!(
        check::<Worker>(json!({"status": "bogus"}), false),
        Err(vec!["status".into()])
    );
    assert!(check::<Worker>(json!({"nickname": "x"}), false).is_err());
    assert_eq!(
        check::<Deliverable>(json!({"type": "bogus"}), true),
        Err(vec!["type".into()])
    );
    // The record's rules, on the body's fields only (placeholders never count).
    assert_eq!(
        check::<Worker>(json!({"name": "  "}), true),
        Err(vec!["name".into()])
    );
    assert_eq!(check::<Worker>(json!({"name": "  "}), false), Ok(()));
    assert_eq!(
        check::<Deliverable>(json!({"quantity": -1}), true),
        Err(vec!["quantity".into()])
    );
    assert_eq!(
        check::<CatalogEntry>(json!({"code": ""}), true),
        Err(vec!["code".into()])
    );
    assert_eq!(
        check::<CatalogEntry>(json!({"description": "x"}), true),
        Ok(())
    );
}
