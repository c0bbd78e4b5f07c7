//! What the store-level tests share.

/// The database the tests run on: `PRODOPS_TEST_DATABASE_URL` when set (PostgreSQL), else a
/// SQLite file in `dir`.
pub fn database_url(dir: &tempfile::TempDir) -> String {
    std::env::var("PRODOPS_TEST_DATABASE_URL")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("sqlite://{}/prodops.db", dir.path().display()))
}
