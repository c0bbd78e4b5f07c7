#!/usr/bin/env bash
# The whole test suite, with the lints: one build of every target, then every test on SQLite (the
# embedded default), then every database-backed test again on PostgreSQL, then the outside fuzzer
# (scripts/fuzz.sh, docs/contract.md) holding the server to its OpenAPI document on both
# databases. PostgreSQL is expected at PRODOPS_TEST_PG_URL (default
# postgres://postgres@127.0.0.1:5432/test); if it does not answer, this fails loudly before
# anything is built. Only an explicit PRODOPS_SKIP_POSTGRES=1 (never set in CI) skips that half.
#
# One build serves the lints, the tests and the fuzzer (docs/operations.md, "The test suite's
# time"): the workspace's own crates are compiled by clippy-driver with `-D warnings`, exactly
# the checks of `cargo clippy --workspace --all-targets -- -D warnings`, but to real code instead
# of metadata, so the same artifacts are the test binaries; the fuzzer runs the server binary
# this build made instead of a release build of its own. Tests run under cargo-nextest (every
# test binary at once, so one slow binary no longer holds the others back); the doctests,
# which nextest does not run and which touch no database, run once with `cargo test --doc`.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/prodops-target}"
PG_URL="${PRODOPS_TEST_PG_URL:-postgres://postgres@127.0.0.1:5432/test}"
SKIP_PG=0
if [[ "${PRODOPS_SKIP_POSTGRES:-0}" == "1" && "${CI:-}" != "true" ]]; then
  SKIP_PG=1
fi

step() { echo "== $1 ($(date -u +%H:%M:%S))"; }

if [[ $SKIP_PG == 0 ]]; then
  hostport="${PG_URL#*://}"; hostport="${hostport#*@}"; hostport="${hostport%%/*}"
  host="${hostport%%:*}"; port="${hostport##*:}"; [[ "$port" == "$hostport" ]] && port=5432
  if ! timeout 5 bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null; then
    echo "error: PostgreSQL does not answer at $host:$port ($PG_URL)." >&2
    echo "Start it, point PRODOPS_TEST_PG_URL at one, or set PRODOPS_SKIP_POSTGRES=1 to run SQLite only." >&2
    exit 1
  fi
fi

clippy_driver=$(command -v clippy-driver || true)
if [[ -z "$clippy_driver" ]]; then
  echo "error: clippy-driver is not on PATH (rustup component add clippy)" >&2
  exit 1
fi
# How `cargo clippy` itself hands its lint flags to the driver (each argument followed by the
# separator). Set for every cargo call below, so they all share one set of artifacts.
export RUSTC_WORKSPACE_WRAPPER="$clippy_driver"
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"

if ! cargo nextest --version >/dev/null 2>&1; then
  step "installing cargo-nextest"
  cargo install --locked cargo-nextest
fi

# The fuzzer's Python environment is a download and an install that needs none of the build:
# made in the background meanwhile, and waited for before the fuzzer runs.
fuzz_install_log=$(mktemp)
bash scripts/fuzz.sh --install-only > "$fuzz_install_log" 2>&1 &
fuzz_install=$!

step "building every target, with the lints (clippy -D warnings)"
cargo test --workspace --all-targets --locked --no-run

step "tests on SQLite"
cargo nextest run --workspace --all-targets --locked --no-fail-fast
step "doctests"
cargo test --workspace --doc --locked

step "a program using the SDK alone (examples/sdk-only: only prodops_client::*, built as a client builds it)"
cargo build --locked --manifest-path examples/sdk-only/Cargo.toml

server="$CARGO_TARGET_DIR/debug/prodops-server"
# fuzzer_installed: waits for the background install of schemathesis; shows its output if it
# failed (the fuzzer's own run would then try the install again, in the foreground).
fuzzer_installed() {
  if ! wait "$fuzz_install"; then
    echo "the background install of schemathesis failed:" >&2
    cat "$fuzz_install_log" >&2
  fi
  rm -f "$fuzz_install_log"
}
if [[ $SKIP_PG == 1 ]]; then
  step "PostgreSQL skipped (PRODOPS_SKIP_POSTGRES=1); the outside fuzzer on SQLite only"
  fuzzer_installed
  PRODOPS_FUZZ_SERVER="$server" PRODOPS_FUZZ_ONLY=sqlite bash scripts/fuzz.sh
  exit 0
fi

step "every test again, on PostgreSQL ($host:$port)"
PRODOPS_TEST_DATABASE_URL="$PG_URL" cargo nextest run --workspace --all-targets --locked --no-fail-fast

step "the outside fuzzer (scripts/fuzz.sh)"
fuzzer_installed
PRODOPS_FUZZ_SERVER="$server" bash scripts/fuzz.sh
step "done"
