//! Stored credentials: `prodops auth login|status|logout` (decisions.md section 8).
//!
//! The key goes to the system keyring (Secret Service over D-Bus, pure Rust) when one answers,
//! else to `<config dir>/credentials.json`, created with mode 0600. The base URL (not secret)
//! is kept in `<config dir>/config.json`.
//!
//! The config directory is `$PRODOPS_CONFIG_DIR`, else `$XDG_CONFIG_HOME/prodops`, else
//! `~/.config/prodops`. `PRODOPS_CREDENTIAL_STORE=file` skips the keyring (tests and hosts
//! without a desktop session), `=keyring` refuses the file fallback; the default is `auto`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::fail::{CmdResult, Fail};

const SERVICE: &str = "prodops";

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredConfig {
    #[serde(default)]
    base_url: Option<String>,
    /// Where the key is: `keyring` or `file`.
    #[serde(default)]
    key_store: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileCredentials {
    api_key: String,
}

/// Where a setting came from (shown by `auth status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Flag,
    Env,
    Keyring,
    File,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Flag => "flag",
            Source::Env => "environment",
            Source::Keyring => "keyring",
            Source::File => "file",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Auto,
    File,
    Keyring,
}

fn mode() -> CmdResult<Mode> {
    match std::env::var("PRODOPS_CREDENTIAL_STORE").ok().as_deref() {
        None | Some("") | Some("auto") => Ok(Mode::Auto),
        Some("file") => Ok(Mode::File),
        Some("keyring") => Ok(Mode::Keyring),
        Some(other) => Err(Fail::usage(format!(
            "PRODOPS_CREDENTIAL_STORE={other}: use auto, file or keyring"
        ))),
    }
}

pub fn config_dir() -> CmdResult<PathBuf> {
    if let Some(dir) = std::env::var_os("PRODOPS_CONFIG_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir).join("prodops"));
    }
    if let Some(home) = std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(home).join(".config").join("prodops"));
    }
    Err(Fail::usage(
        "no configuration directory: set PRODOPS_CONFIG_DIR or HOME",
    ))
}

fn read_json<T: for<'de> Deserialize<'de> + Default>(path: &PathBuf) -> CmdResult<T> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map_err(|e| Fail::usage(format!("{}: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(T::default()),
        Err(e) => Err(Fail::usage(format!("{}: {e}", path.display()))),
    }
}

/// Writes a file readable only by the user (0600), replacing it atomically.
fn write_private(path: &PathBuf, bytes: &[u8]) -> CmdResult {
    use std::io::Write;
    let dir = path.parent().expect("a file in a directory");
    std::fs::create_dir_all(dir).map_err(|e| Fail::usage(format!("{}: {e}", dir.display())))?;
    let tmp = path.with_extension("tmp");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options
        .open(&tmp)
        .map_err(|e| Fail::usage(format!("{}: {e}", tmp.display())))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(|e| Fail::usage(format!("{}: {e}", tmp.display())))?;
    }
    file.write_all(bytes)
        .and_then(|_| file.sync_all())
        .map_err(|e| Fail::usage(format!("{}: {e}", tmp.display())))?;
    std::fs::rename(&tmp, path).map_err(|e| Fail::usage(format!("{}: {e}", path.display())))
}

fn keyring_entry(base_url: &str) -> Result<keyring::Entry, keyring::Error> {
    keyring::Entry::new(SERVICE, base_url)
}

/// What is stored: the base URL and the key with where it was found.
pub struct Stored {
    pub base_url: Option<String>,
    pub key: Option<(String, Source)>,
}

/// Reads the stored base URL and key (the key of `base_url` when given, else of the stored URL).
pub fn load(base_url: Option<&str>) -> CmdResult<Stored> {
    let dir = config_dir()?;
    let config: StoredConfig = read_json(&dir.join("config.json"))?;
    let url = base_url.map(str::to_string).or(config.base_url.clone());
    let mode = mode()?;
    let mut key = None;
    let file: FileCredentials = read_json(&dir.join("credentials.json"))?;
    let use_keyring = mode != Mode::File && config.key_store.as_deref() == Some("keyring");
    if use_keyring
        && let Some(url) = &url
        && let Ok(k) = keyring_entry(url).and_then(|e| e.get_password())
    {
        key = Some((k, Source::Keyring));
    }
    if key.is_none() && mode != Mode::Keyring && !file.api_key.is_empty() {
        key = Some((file.api_key, Source::File));
    }
    Ok(Stored {
        base_url: config.base_url,
        key,
    })
}

/// Stores the base URL and the key; returns where the key went.
pub fn save(base_url: &str, api_key: &str) -> CmdResult<Source> {
    let dir = config_dir()?;
    let mode = mode()?;
    let mut source = Source::File;
    let mut keyring_error = None;
    if mode != Mode::File {
        match keyring_entry(base_url).and_then(|e| e.set_password(api_key)) {
            Ok(()) => source = Source::Keyring,
            Err(e) => keyring_error = Some(e.to_string()),
        }
    }
    if source == Source::File {
        if mode == Mode::Keyring {
            return Err(Fail::usage(format!(
                "the system keyring is not available: {}",
                keyring_error.unwrap_or_default()
            )));
        }
        let creds = FileCredentials {
            api_key: api_key.to_string(),
        };
        write_private(
            &dir.join("credentials.json"),
            &serde_json::to_vec_pretty(&creds).expect("json"),
        )?;
    } else {
        // A key from an earlier file login must not linger next to the keyring's.
        let _ = std::fs::remove_file(dir.join("credentials.json"));
    }
    let config = StoredConfig {
        base_url: Some(base_url.to_string()),
        key_store: Some(
            match source {
                Source::Keyring => "keyring",
                _ => "file",
            }
            .into(),
        ),
    };
    write_private(
        &dir.join("config.json"),
        &serde_json::to_vec_pretty(&config).expect("json"),
    )?;
    Ok(source)
}

/// Forgets the stored key (keyring and file) and base URL. Returns whether anything was stored.
pub fn clear() -> CmdResult<bool> {
    let dir = config_dir()?;
    let config: StoredConfig = read_json(&dir.join("config.json"))?;
    let mut removed = false;
    if mode()? != Mode::File
        && config.key_store.as_deref() == Some("keyring")
        && let Some(url) = &config.base_url
        && keyring_entry(url)
            .and_then(|e| e.delete_credential())
            .is_ok()
    {
        removed = true;
    }
    for name in ["credentials.json", "config.json"] {
        match std::fs::remove_file(dir.join(name)) {
            Ok(()) => removed = true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Fail::usage(format!("{}: {e}", dir.join(name).display()))),
        }
    }
    Ok(removed)
}
