//! Operator actions behind the `org` and `key` subcommands (decisions.md section 1): they work
//! on the database directly, also while a `serve` process uses it. This module owns the
//! `organizations` and `api_keys` tables: it writes them, and the gateway's key lookup
//! (`store::records`) only reads them.

use prodops_core::organization::PERMISSION_ACTIONS;
use rand::RngCore;
use serde::Serialize;
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::http::app::hash_key;
use crate::http::context::format_time;
use crate::store::{Error, SqlValue, Store, StoreError};

/// The organization feature flags an operator can set.
pub const FLAGS: &[&str] = &["documentsHubEnabled", "deliveryComponentCargoEnabled"];

/// The organization settings an operator can set that are values, not on/off flags: each name
/// with what it takes. They are kept beside the flags (`organizations.flags`), so every request
/// reads them with its key, and the next request of every server sees a change.
pub const SETTINGS: &[(&str, &str)] = &[
    (
        "stockFrozenUntil",
        "a day YYYY-MM-DD (no stock posting on or before it), or null",
    ),
    (
        "lotPicking",
        "fifo (a consume that names no lots takes the lot made first; the default) or fefo (the lot that expires first)",
    ),
];

/// Parses `NAME=VALUE` of a [`SETTINGS`] entry into its stored value (`null` or an empty value
/// clears it).
pub fn parse_setting(text: &str) -> Result<(String, Value), Error> {
    let Some((name, value)) = text.split_once('=') else {
        return Err(Error::Invalid(format!(
            "'{text}': a setting is set with NAME=VALUE (NAME=null clears it)"
        )));
    };
    let Some((_, takes)) = SETTINGS.iter().find(|(n, _)| *n == name) else {
        return Err(Error::Invalid(format!(
            "unknown setting '{name}'; known settings: {}",
            SETTINGS
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    };
    let value = value.trim();
    if value.is_empty() || value == "null" {
        return Ok((name.to_string(), Value::Null));
    }
    let parsed = match name {
        "stockFrozenUntil" => chrono::NaiveDate::parse_from_str(value, "%Y-%m-%d")
            .ok()
            .map(|d| Value::String(d.format("%Y-%m-%d").to_string())),
        "lotPicking" => serde_json::from_value::<prodops_core::lot_rules::LotPicking>(
            Value::String(value.to_ascii_lowercase()),
        )
        .ok()
        .and_then(|p| serde_json::to_value(p).ok()),
        _ => None,
    };
    parsed
        .map(|v| (name.to_string(), v))
        .ok_or_else(|| Error::Invalid(format!("'{value}': {name} takes {takes}")))
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreatedOrg {
    pub organization_id: Uuid,
    pub api_key: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreatedKey {
    pub api_key_id: Uuid,
    pub api_key: String,
}

/// A fresh API key: 256 random bits behind a recognisable prefix. Only its SHA-256 is stored;
/// a fast hash is enough because the key itself is random, not a password.
pub fn new_api_key() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    format!("pdk_{}", hex::encode(bytes))
}

/// Checks a permission name: `<Resource>.<Action>`, Resource in PascalCase.
pub fn check_permission(name: &str) -> Result<(), Error> {
    let valid = match name.split_once('.') {
        Some((resource, action)) => {
            resource
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_uppercase())
                && resource.chars().all(|c| c.is_ascii_alphanumeric())
                && PERMISSION_ACTIONS.contains(&action)
        }
        None => false,
    };
    if valid {
        Ok(())
    } else {
        Err(Error::Invalid(format!(
            "'{name}' is not a permission: use <Resource>.<Action> with Action one of {} (for example Worker.Read)",
            PERMISSION_ACTIONS.join(", ")
        )))
    }
}

/// Parses `FLAG`, `FLAG=true` or `FLAG=false`.
pub fn parse_flag(text: &str) -> Result<(String, bool), Error> {
    let (name, value) = match text.split_once('=') {
        Some((n, "true")) => (n, true),
        Some((n, "false")) => (n, false),
        Some(_) => {
            return Err(Error::Invalid(format!(
                "'{text}': a flag is set with FLAG=true or FLAG=false"
            )));
        }
        None => (text, true),
    };
    if !FLAGS.contains(&name) {
        return Err(Error::Invalid(format!(
            "unknown flag '{name}'; known flags: {}",
            FLAGS.join(", ")
        )));
    }
    Ok((name.to_string(), value))
}

fn insert_key(
    tx: &mut dyn crate::store::Tx,
    org: Uuid,
    admin: bool,
    permissions: &[String],
) -> Result<CreatedKey, StoreError> {
    let key = new_api_key();
    let id = Uuid::now_v7();
    tx.execute(
        "INSERT INTO api_keys (id, organization_id, key_hash, is_admin, permissions, created_at, revoked_at) \
         VALUES (?, ?, ?, ?, ?, ?, NULL)",
        &[
            id.into(),
            org.into(),
            hash_key(&key).into(),
            admin.into(),
            serde_json::to_string(permissions).unwrap_or_else(|_| "[]".into()).into(),
            format_time(chrono::Utc::now()).into(),
        ],
    )?;
    Ok(CreatedKey {
        api_key_id: id,
        api_key: key,
    })
}

/// Creates an organization with an admin key.
pub async fn create_org(store: &Store, name: &str, flags: &[&str]) -> Result<CreatedOrg, Error> {
    let name = name.trim().to_string();
    if name.is_empty() {
        return Err(Error::Invalid(
            "the organization name must not be empty".into(),
        ));
    }
    let mut flag_map = Map::new();
    for f in flags {
        let (flag, value) = parse_flag(f)?;
        flag_map.insert(flag, Value::Bool(value));
    }
    let created = store
        .write(move |tx| {
            let org = Uuid::now_v7();
            tx.execute(
                "INSERT INTO organizations (id, name, flags, created_at) VALUES (?, ?, ?, ?)",
                &[
                    org.into(),
                    name.clone().into(),
                    Value::Object(flag_map.clone()).to_string().into(),
                    format_time(chrono::Utc::now()).into(),
                ],
            )?;
            let key = insert_key(tx, org, true, &[])?;
            Ok::<_, StoreError>(CreatedOrg {
                organization_id: org,
                api_key: key.api_key,
            })
        })
        .await?;
    Ok(created)
}

/// The name of an organization, if it exists.
pub fn org_name(tx: &mut dyn crate::store::Tx, org: Uuid) -> Result<Option<String>, StoreError> {
    let rows = tx.query("SELECT name FROM organizations WHERE id = ?", &[org.into()])?;
    Ok(rows
        .into_iter()
        .next()
        .and_then(|mut r| r.pop())
        .and_then(SqlValue::into_string))
}

fn org_exists(tx: &mut dyn crate::store::Tx, org: Uuid) -> Result<bool, StoreError> {
    Ok(!tx
        .query("SELECT id FROM organizations WHERE id = ?", &[org.into()])?
        .is_empty())
}

/// Creates another key for an organization: an admin key, or one with the listed permissions.
pub async fn create_key(
    store: &Store,
    org: Uuid,
    admin: bool,
    permissions: &[&str],
) -> Result<CreatedKey, Error> {
    if !admin && permissions.is_empty() {
        return Err(Error::Invalid(
            "a key needs --admin or at least one --permission".into(),
        ));
    }
    for p in permissions {
        check_permission(p)?;
    }
    let permissions: Vec<String> = permissions.iter().map(|p| p.to_string()).collect();
    store
        .write(move |tx| {
            if !org_exists(tx, org)? {
                return Err(Error::Invalid(format!("no organization {org}")));
            }
            Ok(insert_key(tx, org, admin, &permissions)?)
        })
        .await
}

/// Revokes a key; it stops working with the next request of every server process sharing the
/// database (servers look keys up on every request and cache none).
pub async fn revoke_key(store: &Store, key_id: Uuid) -> Result<(), Error> {
    let now = format_time(chrono::Utc::now());
    let changed = store
        .write(move |tx| {
            tx.execute(
                "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                &[now.clone().into(), key_id.into()],
            )
        })
        .await?;
    if changed == 0 {
        return Err(Error::Invalid(format!("no active key {key_id}")));
    }
    Ok(())
}

/// Sets an organization feature flag; the next request of every server sees it.
pub async fn set_flag(store: &Store, org: Uuid, flag: &str, value: bool) -> Result<(), Error> {
    let (flag, _) = parse_flag(flag)?;
    set_org_value(store, org, flag, Value::Bool(value)).await
}

/// Sets an organization setting from `NAME=VALUE` ([`parse_setting`]); `null` removes it.
pub async fn set_setting(store: &Store, org: Uuid, text: &str) -> Result<(), Error> {
    let (name, value) = parse_setting(text)?;
    set_org_value(store, org, name, value).await
}

/// Writes one key of the organization's flags and settings (`null` removes it).
async fn set_org_value(store: &Store, org: Uuid, name: String, value: Value) -> Result<(), Error> {
    store
        .write(move |tx| {
            let rows = tx.query(
                "SELECT flags FROM organizations WHERE id = ?",
                &[org.into()],
            )?;
            let Some(row) = rows.into_iter().next() else {
                return Err(Error::Invalid(format!("no organization {org}")));
            };
            let mut flags: Map<String, Value> = row
                .first()
                .and_then(SqlValue::as_str)
                .and_then(|s| serde_json::from_str(s).ok())
                .unwrap_or_default();
            if value.is_null() {
                flags.remove(&name);
            } else {
                flags.insert(name.clone(), value.clone());
            }
            tx.execute(
                "UPDATE organizations SET flags = ? WHERE id = ?",
                &[Value::Object(flags).to_string().into(), org.into()],
            )?;
            Ok(())
        })
        .await
}
