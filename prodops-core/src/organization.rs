//! Organization members and roles (spec 2.13, 4.12).
//!
//! A member links an account (`appUser`) to the organization. Members are invited by their own
//! create handler; the standard update writes `name`, `roleId`, `roleType` and `workerId`.

use crate::openapi::ToSchema;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::common::{require_nonempty, trim, trim_opt};
use crate::resource::{Allow, Ops, Record, ResourceDesc, UniqueKey};
use crate::violation::Violation;

/// Account status: `pending` until the invitation is accepted and the email verified.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum AppUserStatus {
    /// Invited, not yet verified.
    #[default]
    Pending,
    /// Verified.
    Active,
}

/// The account embedded in a member record; server-managed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AppUser {
    /// Account id (`appUserId`).
    pub id: Uuid,
    /// Display name; written through the member's `name`.
    pub name: String,
    /// Email address; set once on invite, never changed.
    pub email: String,
    /// Account status.
    pub status: AppUserStatus,
}

/// Membership status: whether the person can use the organization.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum MemberStatus {
    /// Can use the organization.
    Active,
    /// Deactivated.
    Inactive,
    /// Invited; the default of a new member.
    #[default]
    Pending,
}

/// A person's membership of the organization (called Users in the app).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OrganizationMember {
    /// Record id.
    pub id: Uuid,
    /// Owning organization, from the API key.
    pub organization_id: Uuid,
    /// The linked account; server-managed.
    #[serde(default)]
    pub app_user_id: Uuid,
    /// The linked account, embedded; server-managed.
    #[serde(default)]
    pub app_user: AppUser,
    /// Membership status; changed by the deactivate and reactivate actions.
    #[serde(default)]
    pub status: MemberStatus,
    /// Role of the member.
    #[serde(default)]
    pub role_id: Option<Uuid>,
    /// Role type of the member.
    #[serde(default)]
    pub role_type: Option<String>,
    /// The linked worker record; null unlinks it.
    #[serde(default)]
    pub worker_id: Option<Uuid>,
    /// Write-only alias of `appUser.name`: when a write carries it, `normalize` moves it into
    /// `appUser.name` (which the server writes to the account) and clears it, so records
    /// always read back `null` here.
    #[serde(default)]
    #[schema(pattern = r"\S")]
    pub name: Option<String>,
    /// Creation time.
    #[serde(with = "crate::time::iso")]
    pub created_at: DateTime<Utc>,
    /// Last update time.
    #[serde(with = "crate::time::iso")]
    pub updated_at: DateTime<Utc>,
}

impl Record for OrganizationMember {
    const DESC: ResourceDesc = ResourceDesc {
        search_columns: &["appUser.name", "appUser.email"],
        ops: Ops {
            create: Allow::Custom,
            bulk_put: Allow::NotAllowed,
            ..Ops::ALL
        },
        read_only: &["appUser", "status", "appUserId"],
        patch_only: &["name", "roleId", "roleType", "workerId"],
        unique: &[UniqueKey {
            name: "email",
            fields: &["appUser.email"],
            case_insensitive: true,
            active_only: false,
            message: "this email address is already a member of the organization; use resend-invitation",
        }],
        summary: "Organization members: people with access to the organization (Users)",
        ..ResourceDesc::new("organization-member", "organization_member", "User")
    };

    fn normalize(&mut self) {
        trim_opt(&mut self.role_type);
        if let Some(name) = self.name.as_mut() {
            trim(name);
            if !name.is_empty() {
                self.app_user.name = std::mem::take(name);
                self.name = None;
            }
        }
    }

    fn validate(&self) -> Vec<Violation> {
        // After `normalize`, a `name` still present is one that was empty.
        match &self.name {
            Some(_) => vec![Violation::field("name", "name must not be empty")],
            None => Vec::new(),
        }
    }
}

/// `POST /organization-member`: invites a person by email.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InviteRequest {
    /// Email address; identifies the account (case-insensitive) and cannot change later.
    #[schema(schema_with = email_schema)]
    pub email: String,
    /// Name of a brand-new account; ignored when the account exists.
    #[serde(default)]
    #[schema(pattern = r"\S")]
    pub name: Option<String>,
    /// Role of the member.
    #[serde(default)]
    pub role_id: Option<Uuid>,
    /// Role type of the member.
    #[serde(default)]
    pub role_type: Option<String>,
    /// Worker record to link.
    #[serde(default)]
    pub worker_id: Option<Uuid>,
}

impl InviteRequest {
    /// The email in its stored form (trimmed, lowercase), or the violation.
    pub fn normalized_email(&self) -> Result<String, Violation> {
        normalize_email(&self.email)
    }

    /// What is wrong with the request: the email's form, and a `name` that is given but blank
    /// (as the document's pattern says; omitted or null, the account's name comes from the
    /// email).
    pub fn violations(&self) -> Vec<Violation> {
        let mut violations = Vec::new();
        if let Err(v) = self.normalized_email() {
            violations.push(v);
        }
        if let Some(name) = &self.name {
            require_nonempty(&mut violations, "name", name);
        }
        violations
    }
}

/// `POST /organization-member/accept-invitation`: the token of an invitation (no API key).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AcceptInvitation {
    /// The token the invitation message carries.
    pub token: String,
}

/// The longest email address (RFC 5321's path limit).
pub const EMAIL_MAX_LEN: usize = 254;

/// An invitation's `email` as [`normalize_email`] reads it (trimmed, lowercased): one `@`
/// between a nonempty local part and a domain with an inner dot; no whitespace or control
/// characters.
#[cfg(feature = "openapi")]
fn email_schema() -> utoipa::openapi::schema::Object {
    use crate::openapi::WS_CHARS;
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    let bad = format!("{WS_CHARS}\\x00-\\x1F\\x7F-\\x9F");
    let ws = format!("[{WS_CHARS}]*");
    ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(
            "Email address; identifies the account (case-insensitive) and cannot change later.",
        ))
        .pattern(Some(format!(
            "^{ws}[^@{bad}]+@[^@.{bad}](?:[^@{bad}]*\\.)+[^@{bad}]*[^@.{bad}]{ws}$"
        )))
        .max_length(Some(EMAIL_MAX_LEN))
        .build()
}

/// A role's `permissions`: `admin` or `<Resource>.<Action>` of a registered resource.
#[cfg(feature = "openapi")]
fn permissions_schema() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
    let mut resources: Vec<&str> = crate::registry::resources()
        .iter()
        .map(|k| k.desc().permission)
        .collect();
    resources.sort();
    resources.dedup();
    let pattern = format!(
        "^(?:{ADMIN_PERMISSION}|(?:{})\\.(?:{}))$",
        resources.join("|"),
        PERMISSION_ACTIONS.join("|")
    );
    ArrayBuilder::new()
        .description(Some(
            "Permissions granted: `admin` or `<Resource>.<Action>` names.",
        ))
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .pattern(Some(pattern)),
        )
        .build()
}

/// An email address in its stored form: trimmed and lowercase; one `@` between a nonempty
/// local part and a domain with a dot, no spaces, at most [`EMAIL_MAX_LEN`] characters.
pub fn normalize_email(raw: &str) -> Result<String, Violation> {
    let email = raw.trim().to_lowercase();
    let valid = email.len() <= EMAIL_MAX_LEN
        && !email.chars().any(|c| c.is_whitespace() || c.is_control())
        && match email.split_once('@') {
            Some((local, domain)) => {
                !local.is_empty()
                    && !domain.contains('@')
                    && domain.contains('.')
                    && !domain.starts_with('.')
                    && !domain.ends_with('.')
            }
            None => false,
        };
    if valid {
        Ok(email)
    } else {
        Err(Violation::field(
            "email",
            format!("{raw:?} is not an email address"),
        ))
    }
}

/// The name of a new account: the given one, else the part of the email before `@`.
pub fn new_account_name(name: Option<&str>, email: &str) -> String {
    match name.map(str::trim).filter(|n| !n.is_empty()) {
        Some(n) => n.to_string(),
        None => email.split('@').next().unwrap_or(email).to_string(),
    }
}

/// Membership status after the person accepts an invitation: a deactivated member stays
/// inactive; otherwise the member becomes active.
pub fn status_after_accept(current: MemberStatus) -> MemberStatus {
    match current {
        MemberStatus::Inactive => MemberStatus::Inactive,
        _ => MemberStatus::Active,
    }
}

/// Membership status after reactivation: active once the account is verified, else pending.
pub fn status_after_reactivate(account: AppUserStatus) -> MemberStatus {
    match account {
        AppUserStatus::Active => MemberStatus::Active,
        AppUserStatus::Pending => MemberStatus::Pending,
    }
}

/// Whether an invitation may be (re)sent: not to a deactivated member, and not once the
/// member's account accepted.
pub fn can_resend(member: &OrganizationMember) -> Result<(), Violation> {
    if member.status == MemberStatus::Inactive {
        return Err(Violation::field(
            "status",
            "the member is deactivated; reactivate before resending the invitation",
        ));
    }
    if member.status == MemberStatus::Active && member.app_user.status == AppUserStatus::Active {
        return Err(Violation::field(
            "status",
            "the member has already accepted the invitation",
        ));
    }
    Ok(())
}

/// The actions of a permission `<Resource>.<Action>` (decisions.md section 2).
pub const PERMISSION_ACTIONS: [&str; 4] = ["Read", "Create", "Update", "Delete"];

/// The permission that grants everything.
pub const ADMIN_PERMISSION: &str = "admin";

/// Checks one permission name: `admin`, or `<Resource>.<Action>` where `Resource` is the
/// permission name of a registered resource (`Worker`, `User`, `CatalogEntry`, ...) and
/// `Action` one of Read, Create, Update, Delete.
pub fn validate_permission(permission: &str) -> Result<(), String> {
    if permission == ADMIN_PERMISSION {
        return Ok(());
    }
    let Some((resource, action)) = permission.split_once('.') else {
        return Err(format!(
            "permission {permission:?} must be \"admin\" or <Resource>.<Action>"
        ));
    };
    if !PERMISSION_ACTIONS.contains(&action) {
        return Err(format!(
            "permission {permission:?}: the action must be one of Read, Create, Update, Delete"
        ));
    }
    if !crate::registry::resources()
        .iter()
        .any(|r| r.desc().permission == resource)
    {
        return Err(format!(
            "permission {permission:?}: unknown resource {resource:?}"
        ));
    }
    Ok(())
}

/// A named set of permissions members are given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Role {
    /// Record id.
    pub id: Uuid,
    /// Owning organization, from the API key.
    pub organization_id: Uuid,
    /// Display name; required.
    #[schema(pattern = r"\S")]
    pub name: String,
    /// Permissions granted: `admin` or `<Resource>.<Action>` names.
    #[serde(default)]
    #[schema(schema_with = permissions_schema)]
    pub permissions: Vec<String>,
    /// Role type.
    #[serde(default)]
    pub role_type: Option<String>,
    /// Creation time.
    #[serde(with = "crate::time::iso")]
    pub created_at: DateTime<Utc>,
    /// Last update time.
    #[serde(with = "crate::time::iso")]
    pub updated_at: DateTime<Utc>,
}

impl Record for Role {
    const DESC: ResourceDesc = ResourceDesc {
        search_columns: &["name"],
        summary: "Roles: named sets of permissions",
        ..ResourceDesc::new("role", "role", "Role")
    };

    fn normalize(&mut self) {
        trim(&mut self.name);
        self.permissions.iter_mut().for_each(trim);
        trim_opt(&mut self.role_type);
    }

    fn validate(&self) -> Vec<Violation> {
        let mut v = Vec::new();
        require_nonempty(&mut v, "name", &self.name);
        for (i, permission) in self.permissions.iter().enumerate() {
            if let Err(message) = validate_permission(permission) {
                v.push(Violation::field(format!("permissions[{i}]"), message));
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::testing::check;
    use crate::resource::{Kind, ResourceKind};
    use serde_json::{Value, json};

    #[test]
    fn name_is_an_alias_of_app_user_name() {
        let kind = Kind::<OrganizationMember>::new();
        let old = crate::common::testing::with_common(json!({
            "appUserId": "00000000-0000-4000-8000-000000000021",
            "appUser": {"id": "00000000-0000-4000-8000-000000000021", "name": "Old", "email": "a@b.c", "status": "active"},
            "status": "active",
        }));
        let mut patched = old.clone();
        patched["name"] = json!("  New Name ");
        let out = kind.check(patched, Some(&old)).unwrap();
        assert_eq!(out["appUser"]["name"], "New Name");
        assert_eq!(out["appUser"]["email"], "a@b.c");
        assert_eq!(out["name"], Value::Null);
        let mut blank = old.clone();
        blank["name"] = json!(" ");
        assert!(kind.check(blank, Some(&old)).is_err());
    }

    #[test]
    fn an_invitation_refuses_a_blank_name_and_takes_none() {
        let invite = |name: Option<&str>| InviteRequest {
            email: "ann@example.com".into(),
            name: name.map(str::to_string),
            role_id: None,
            role_type: None,
            worker_id: None,
        };
        assert!(invite(None).violations().is_empty());
        assert!(invite(Some("Ann")).violations().is_empty());
        for blank in ["", " ", "\u{2000}\u{3000}\n\u{2029}"] {
            let v = invite(Some(blank)).violations();
            assert_eq!(v.len(), 1, "{blank:?}");
            assert_eq!(v[0].field.as_deref(), Some("name"));
        }
        let mut bad_email = invite(Some(" "));
        bad_email.email = "nope".into();
        assert_eq!(bad_email.violations().len(), 2);
    }

    #[test]
    fn emails() {
        assert_eq!(
            normalize_email("  Ann@Example.COM ").unwrap(),
            "ann@example.com"
        );
        for bad in [
            "",
            "ann",
            "ann@",
            "@x.com",
            "a b@x.com",
            "a@b@c.com",
            "a@com",
            "a@.com",
            "a@x.com.",
        ] {
            assert!(normalize_email(bad).is_err(), "{bad}");
        }
        assert_eq!(new_account_name(None, "ann@x.com"), "ann");
        assert_eq!(new_account_name(Some(" Ann Lee "), "ann@x.com"), "Ann Lee");
        assert_eq!(new_account_name(Some("  "), "ann@x.com"), "ann");
    }

    #[test]
    fn member_transitions() {
        use MemberStatus::*;
        assert_eq!(status_after_accept(Pending), Active);
        assert_eq!(status_after_accept(Active), Active);
        assert_eq!(status_after_accept(Inactive), Inactive);
        assert_eq!(status_after_reactivate(AppUserStatus::Active), Active);
        assert_eq!(status_after_reactivate(AppUserStatus::Pending), Pending);
        let mut m: OrganizationMember = crate::common::testing::parse(json!({}));
        assert!(can_resend(&m).is_ok());
        m.status = Inactive;
        assert!(can_resend(&m).is_err());
        m.status = Active;
        m.app_user.status = AppUserStatus::Active;
        assert!(can_resend(&m).is_err());
    }

    proptest::proptest! {
        #[test]
        fn normalized_emails_are_fixed_points(local in "[a-zA-Z0-9._+-]{1,20}", domain in "[a-zA-Z0-9-]{1,20}", tld in "[a-zA-Z]{2,6}") {
            let raw = format!(" {local}@{domain}.{tld} ");
            let once = normalize_email(&raw).unwrap();
            proptest::prop_assert_eq!(normalize_email(&once).unwrap(), once.clone());
            proptest::prop_assert_eq!(once.clone(), once.to_lowercase());
        }
    }

    #[test]
    fn member_defaults() {
        let out = check::<OrganizationMember>(json!({})).unwrap();
        assert_eq!(out["status"], "pending");
        assert_eq!(out["appUser"]["status"], "pending");
    }

    #[test]
    fn permissions() {
        for ok in [
            "admin",
            "Worker.Read",
            "User.Update",
            "CatalogEntry.Delete",
            "InventoryTransaction.Create",
        ] {
            assert!(validate_permission(ok).is_ok(), "{ok}");
        }
        for bad in [
            "Admin",
            "Worker",
            "Worker.read",
            "Worker.Archive",
            "worker.Read",
            "Gadget.Read",
            ".Read",
            "Worker.Read.X",
        ] {
            assert!(validate_permission(bad).is_err(), "{bad}");
        }
        assert!(
            check::<Role>(
                json!({"name": "Lead", "permissions": ["Worker.Read", " Deliverable.Update "]})
            )
            .is_ok()
        );
        assert!(check::<Role>(json!({"name": "Lead", "permissions": ["Worker.Fly"]})).is_err());
    }
}
