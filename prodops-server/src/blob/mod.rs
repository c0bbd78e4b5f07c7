//! Document files: a blob store behind the `object_store` interface (a local directory by
//! default, an S3-compatible bucket for several replicas), and the signed, expiring download
//! links the server generates on every read of a document (`documentUrl`).
//!
//! Bytes live under `<organizationId>/<documentKey>`; a link names both and carries an
//! HMAC-SHA256 over (organization, key, expiry) made with a secret kept in the database, so
//! every replica signs and checks the same links. The organization in the path is part of
//! what is signed, so a link can never reach another organization's file.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hmac::Mac;
use object_store::ObjectStore;
use object_store::path::Path as BlobPath;
use uuid::Uuid;

use crate::http::app::AppState;
use prodops_core::api::Endpoint;
use prodops_core::api::document::Download;

use crate::http::clock::Clock;
use crate::http::error::{ApiError, ApiResult};
use crate::store::{Error, SqlValue, Store, StoreError};

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// Where the files are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilesConfig {
    /// A local directory (created if missing).
    Local(std::path::PathBuf),
    /// An S3-compatible bucket; credentials, region and endpoint come from the standard
    /// `AWS_*` environment variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
    /// `AWS_REGION`, `AWS_ENDPOINT`, `AWS_ALLOW_HTTP`).
    S3 { bucket: String },
}

impl FilesConfig {
    /// Parses `file:///dir`, a bare directory path, or `s3://bucket`.
    pub fn parse(text: &str) -> Result<FilesConfig, Error> {
        let text = text.trim();
        if let Some(bucket) = text.strip_prefix("s3://") {
            let bucket = bucket.trim_end_matches('/');
            if bucket.is_empty() || bucket.contains('/') {
                return Err(Error::Invalid(format!(
                    "'{text}': an S3 store is s3://BUCKET"
                )));
            }
            return Ok(FilesConfig::S3 {
                bucket: bucket.to_string(),
            });
        }
        let dir = text.strip_prefix("file://").unwrap_or(text);
        if dir.is_empty() {
            return Err(Error::Invalid(
                "the files location must not be empty".into(),
            ));
        }
        Ok(FilesConfig::Local(dir.into()))
    }

    /// The default: a directory next to a SQLite file (`prodops.db` → `prodops.db.files`), else
    /// `prodops-files` in the working directory.
    pub fn default_for(database_url: &str) -> FilesConfig {
        match database_url.strip_prefix("sqlite:") {
            Some(rest) if !rest.starts_with(":memory:") => {
                let path = rest.trim_start_matches("//");
                FilesConfig::Local(format!("{path}.files").into())
            }
            _ => FilesConfig::Local("prodops-files".into()),
        }
    }
}

/// The blob store, the link signer and the link settings.
#[derive(Clone)]
pub struct Files {
    store: Arc<dyn ObjectStore>,
    secret: Arc<[u8]>,
    /// How long a generated link works.
    pub ttl: Duration,
    /// `http://HOST:PORT` (no `/api/v2`) that links start with.
    pub public_url: String,
    /// What links expire against.
    clock: Clock,
}

/// Why a download link was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkError {
    Expired,
    BadSignature,
}

impl Files {
    /// The files of the running service (installed in [`AppState::services`] at start).
    pub fn of(state: &AppState) -> &Files {
        state
            .services
            .get::<Files>()
            .expect("the document files are installed at start")
    }

    /// Opens the store and loads (creating once) the signing secret from the database.
    pub async fn open(
        config: &FilesConfig,
        db: &Store,
        ttl: Duration,
        public_url: String,
    ) -> Result<Files, Error> {
        let store: Arc<dyn ObjectStore> = match config {
            FilesConfig::Local(dir) => {
                std::fs::create_dir_all(dir)?;
                Arc::new(
                    object_store::local::LocalFileSystem::new_with_prefix(dir)
                        .map_err(|e| Error::Invalid(format!("files directory: {e}")))?,
                )
            }
            FilesConfig::S3 { bucket } => Arc::new(
                object_store::aws::AmazonS3Builder::from_env()
                    .with_bucket_name(bucket)
                    .build()
                    .map_err(|e| Error::Invalid(format!("S3 files store: {e}")))?,
            ),
        };
        let secret = db.write(load_secret).await?;
        Ok(Files {
            store,
            secret: secret.into(),
            ttl,
            public_url: public_url.trim_end_matches('/').to_string(),
            clock: Clock::system(),
        })
    }

    /// The same store, with links made and checked against `clock`.
    pub fn with_clock(self, clock: Clock) -> Files {
        Files { clock, ..self }
    }

    /// Now, in Unix seconds, on the clock links expire against.
    pub fn now(&self) -> i64 {
        self.clock.now_secs()
    }

    fn location(org: Uuid, key: &str) -> BlobPath {
        BlobPath::from(format!("{org}/{key}"))
    }

    /// Stores bytes under a fresh key of the organization; returns the key.
    pub async fn put(&self, org: Uuid, bytes: Bytes) -> ApiResult<String> {
        let key = Self::new_key();
        self.store
            .put(&Self::location(org, &key), bytes.into())
            .await
            .map_err(ApiError::internal)?;
        Ok(key)
    }

    /// A fresh key for a file's bytes (a UUIDv7).
    pub fn new_key() -> String {
        Uuid::now_v7().to_string()
    }

    /// The bytes under an organization's key; `None` when there are none.
    pub async fn get(&self, org: Uuid, key: &str) -> ApiResult<Option<Bytes>> {
        match self.store.get(&Self::location(org, key)).await {
            Ok(found) => Ok(Some(found.bytes().await.map_err(ApiError::internal)?)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(ApiError::internal(e)),
        }
    }

    /// Removes the bytes under an organization's key (missing bytes are not an error).
    pub async fn delete(&self, org: Uuid, key: &str) -> ApiResult<()> {
        match self.store.delete(&Self::location(org, key)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(ApiError::internal(e)),
        }
    }

    fn mac(&self, org: Uuid, key: &str, expires: i64) -> HmacSha256 {
        let mut mac =
            HmacSha256::new_from_slice(&self.secret).expect("HMAC takes a key of any length");
        mac.update(format!("{org}\n{key}\n{expires}").as_bytes());
        mac
    }

    /// The signature of a link, hex.
    pub fn sign(&self, org: Uuid, key: &str, expires: i64) -> String {
        hex::encode(self.mac(org, key, expires).finalize().into_bytes())
    }

    /// A download link for an organization's key that works until `now + ttl`.
    pub fn link(&self, org: Uuid, key: &str, now: i64) -> String {
        let expires = now + self.ttl.as_secs() as i64;
        // The path of the declared download action (`prodops_core::api::document::Download`).
        let path = Download::DESC.fill(&[org.to_string(), key.to_string()]);
        format!(
            "{}/api/v2{path}?expires={expires}&signature={}",
            self.public_url,
            self.sign(org, key, expires)
        )
    }

    /// Checks a link's expiry and signature (in constant time).
    pub fn verify(
        &self,
        org: Uuid,
        key: &str,
        expires: i64,
        signature: &str,
        now: i64,
    ) -> Result<(), LinkError> {
        let Ok(given) = hex::decode(signature) else {
            return Err(LinkError::BadSignature);
        };
        self.mac(org, key, expires)
            .verify_slice(&given)
            .map_err(|_| LinkError::BadSignature)?;
        if now >= expires {
            return Err(LinkError::Expired);
        }
        Ok(())
    }
}

/// Whether a text can be a document key: the keys this server makes are UUIDs.
pub fn is_key(text: &str) -> bool {
    Uuid::parse_str(text).is_ok()
}

const SECRET_NAME: &str = "document_link_hmac";

/// The signing secret, created once per database (32 random bytes, hex in `server_secrets`).
fn load_secret(tx: &mut dyn crate::store::Tx) -> Result<Vec<u8>, StoreError> {
    use rand::RngCore;
    let mut fresh = [0u8; 32];
    rand::rng().fill_bytes(&mut fresh);
    tx.execute(
        "INSERT INTO server_secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
        &[SECRET_NAME.into(), hex::encode(fresh).into()],
    )?;
    let rows = tx.query(
        "SELECT value FROM server_secrets WHERE name = ?",
        &[SECRET_NAME.into()],
    )?;
    rows.first()
        .and_then(|r| r.first())
        .and_then(SqlValue::as_str)
        .and_then(|s| hex::decode(s).ok())
        .ok_or_else(|| StoreError::other("the document link secret is unreadable"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(secret: &[u8]) -> Files {
        Files {
            store: Arc::new(object_store::memory::InMemory::new()),
            secret: secret.into(),
            ttl: Duration::from_secs(60),
            public_url: "http://h".into(),
            clock: Clock::system(),
        }
    }

    #[test]
    fn links_verify_until_they_expire() {
        let f = files(b"secret");
        let org = Uuid::from_u128(7);
        let sig = f.sign(org, "k", 100);
        assert_eq!(f.verify(org, "k", 100, &sig, 99), Ok(()));
        assert_eq!(f.verify(org, "k", 100, &sig, 100), Err(LinkError::Expired));
        assert_eq!(
            f.verify(org, "k2", 100, &sig, 99),
            Err(LinkError::BadSignature)
        );
        assert_eq!(
            f.verify(Uuid::from_u128(8), "k", 100, &sig, 99),
            Err(LinkError::BadSignature)
        );
        assert_eq!(
            f.verify(org, "k", 1000, &sig, 99),
            Err(LinkError::BadSignature)
        );
        assert_eq!(
            f.verify(org, "k", 100, "zz", 99),
            Err(LinkError::BadSignature)
        );
        assert_eq!(
            files(b"other").verify(org, "k", 100, &sig, 99),
            Err(LinkError::BadSignature)
        );
        let link = f.link(org, "k", 40);
        assert!(link.starts_with(&format!(
            "http://h/api/v2/document/file/{org}/k?expires=100&signature="
        )));
    }

    #[test]
    fn config_parsing() {
        assert_eq!(
            FilesConfig::parse("s3://bucket").unwrap(),
            FilesConfig::S3 {
                bucket: "bucket".into()
            }
        );
        assert!(FilesConfig::parse("s3://").is_err());
        assert_eq!(
            FilesConfig::parse("file:///var/x").unwrap(),
            FilesConfig::Local("/var/x".into())
        );
        assert_eq!(
            FilesConfig::default_for("sqlite:///tmp/a.db"),
            FilesConfig::Local("/tmp/a.db.files".into())
        );
        assert_eq!(
            FilesConfig::default_for("postgres://x/y"),
            FilesConfig::Local("prodops-files".into())
        );
    }
}
