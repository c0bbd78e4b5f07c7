//! Where the instance is, which key to send, and how patient to be.

use std::time::Duration;

use crate::error::{Error, Result};

/// The client's configuration.
///
/// ```
/// use prodops_client::Config;
/// let config = Config::new("https://prodops.example.com", "pk_live_123")
///     .max_attempts(3)
///     .timeout(std::time::Duration::from_secs(30));
/// assert_eq!(config.api_url(), "https://prodops.example.com/api/v2");
/// ```
#[derive(Clone)]
pub struct Config {
    /// The instance address, without `/api/v2` (a trailing `/api/v2` is accepted and ignored).
    pub base_url: String,
    /// The `X-API-Key` to send; `None` for the always-open paths only.
    pub api_key: Option<String>,
    /// The whole-request timeout of one attempt.
    pub timeout: Duration,
    /// The connection timeout of one attempt.
    pub connect_timeout: Duration,
    /// Attempts per call for a 429, or a 503 with `Retry-After` (1 = no retries).
    pub max_attempts: u32,
    /// Attempts per call while no connection can be made at all (a server restarting, or
    /// down): a few quick ones, so that a script against a stopped server fails within about
    /// a second instead of backing off for a quarter of a minute. At most `max_attempts`.
    pub connect_attempts: u32,
    /// The longest the client waits before one retry, whatever the server asks.
    pub max_retry_wait: Duration,
    /// The page size lists ask for.
    pub page_size: u64,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("max_attempts", &self.max_attempts)
            .field("connect_attempts", &self.connect_attempts)
            .field("max_retry_wait", &self.max_retry_wait)
            .field("page_size", &self.page_size)
            .finish()
    }
}

/// The environment variable holding the instance address.
pub const ENV_BASE_URL: &str = "PRODOPS_BASE_URL";
/// The environment variable holding the API key.
pub const ENV_API_KEY: &str = "PRODOPS_API_KEY";

impl Config {
    /// A configuration with the defaults: 120 s per attempt, 10 s to connect, 6 attempts (3
    /// while no connection can be made), at most 120 s between two, pages of 5,000.
    ///
    /// ```
    /// let c = prodops_client::Config::new("http://127.0.0.1:8080", "key");
    /// assert_eq!(c.max_attempts, 6);
    /// ```
    pub fn new(base_url: impl Into<String>, api_key: impl Into<String>) -> Config {
        Config {
            base_url: base_url.into(),
            api_key: Some(api_key.into()),
            timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(10),
            max_attempts: 6,
            connect_attempts: 3,
            max_retry_wait: Duration::from_secs(120),
            page_size: 5_000,
        }
    }

    /// Reads `PRODOPS_BASE_URL` (required) and `PRODOPS_API_KEY` (optional) from the environment.
    ///
    /// ```no_run
    /// let config = prodops_client::Config::from_env().expect("PRODOPS_BASE_URL is set");
    /// ```
    pub fn from_env() -> Result<Config> {
        let base = std::env::var(ENV_BASE_URL)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .ok_or_else(|| Error::Config(format!("{ENV_BASE_URL} is not set")))?;
        let mut config = Config::new(base.trim(), "");
        config.api_key = std::env::var(ENV_API_KEY)
            .ok()
            .map(|k| k.trim().to_string())
            .filter(|k| !k.is_empty());
        Ok(config)
    }

    /// Sets the API key.
    ///
    /// ```
    /// let c = prodops_client::Config::new("http://h", "a").api_key("b");
    /// assert_eq!(c.api_key.as_deref(), Some("b"));
    /// ```
    pub fn api_key(mut self, key: impl Into<String>) -> Config {
        self.api_key = Some(key.into());
        self
    }

    /// Sets the timeout of one attempt.
    ///
    /// ```
    /// let c = prodops_client::Config::new("http://h", "k").timeout(std::time::Duration::from_secs(5));
    /// assert_eq!(c.timeout.as_secs(), 5);
    /// ```
    pub fn timeout(mut self, timeout: Duration) -> Config {
        self.timeout = timeout;
        self
    }

    /// Sets the number of attempts for a 429, or a 503 with `Retry-After` (at least 1).
    ///
    /// ```
    /// let c = prodops_client::Config::new("http://h", "k").max_attempts(0);
    /// assert_eq!(c.max_attempts, 1);
    /// ```
    pub fn max_attempts(mut self, attempts: u32) -> Config {
        self.max_attempts = attempts.max(1);
        self
    }

    /// Sets the number of attempts while no connection can be made (at least 1).
    ///
    /// ```
    /// let c = prodops_client::Config::new("http://h", "k").connect_attempts(1);
    /// assert_eq!(c.connect_attempts, 1);
    /// ```
    pub fn connect_attempts(mut self, attempts: u32) -> Config {
        self.connect_attempts = attempts.max(1);
        self
    }

    /// Sets the longest wait before one retry.
    ///
    /// ```
    /// let c = prodops_client::Config::new("http://h", "k").max_retry_wait(std::time::Duration::from_secs(5));
    /// assert_eq!(c.max_retry_wait.as_secs(), 5);
    /// ```
    pub fn max_retry_wait(mut self, wait: Duration) -> Config {
        self.max_retry_wait = wait;
        self
    }

    /// Sets the page size of lists (1 to 10,000).
    ///
    /// ```
    /// let c = prodops_client::Config::new("http://h", "k").page_size(50_000);
    /// assert_eq!(c.page_size, 10_000);
    /// ```
    pub fn page_size(mut self, size: u64) -> Config {
        self.page_size = size.clamp(1, 10_000);
        self
    }

    /// `<base_url>/api/v2`.
    ///
    /// ```
    /// let c = prodops_client::Config::new("http://h:1/api/v2/", "k");
    /// assert_eq!(c.api_url(), "http://h:1/api/v2");
    /// ```
    pub fn api_url(&self) -> String {
        let base = self.base_url.trim().trim_end_matches('/');
        let base = base.strip_suffix("/api/v2").unwrap_or(base);
        format!("{base}/api/v2")
    }
}
