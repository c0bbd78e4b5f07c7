//! What the CLI test files share: running the real `prodops` binary and reading its outcome.

use assert_cmd::Command;
use serde_json::Value;

/// A finished `prodops` run: exit code and both streams (shown whole when an assertion fails).
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl std::fmt::Display for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

impl Out {
    #[allow(dead_code)] // each test file is its own crate; not every one reads stdout as JSON
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is JSON ({e}): {self}"))
    }
}

/// Runs a command off the async runtime (the test's server lives on it).
pub async fn run(mut cmd: Command, args: &[&str]) -> Out {
    cmd.args(args);
    let out = tokio::task::spawn_blocking(move || cmd.output().expect("prodops runs"))
        .await
        .unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The binary pointed at `server` with `api`'s key, its configuration and home kept in `dir`
/// (so nothing of the user's is read or written), and a bound that only turns a hung run into
/// a failure (no speed assertion).
#[allow(dead_code)] // each test file is its own crate; not every one starts its own binary this way
pub fn prodops_in(
    server: &prodops_tests::TestServer,
    api: &prodops_tests::Api,
    dir: &std::path::Path,
    bound: std::time::Duration,
) -> Command {
    let mut cmd = Command::cargo_bin("prodops").unwrap();
    cmd.env("PRODOPS_BASE_URL", server.base_url())
        .env("PRODOPS_API_KEY", api.key().unwrap())
        .env("PRODOPS_CONFIG_DIR", dir.join("config"))
        .env("PRODOPS_CREDENTIAL_STORE", "file")
        .env("HOME", dir.join("home"))
        .timeout(bound);
    cmd
}

#[allow(dead_code)] // only the files that drive a terminal use it
pub mod pty;
