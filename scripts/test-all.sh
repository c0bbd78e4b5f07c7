#!/usr/bin/env bash
# The whole test suite: every test on SQLite (the embedded default), then every database-backed
# test again on PostgreSQL. PostgreSQL is expected at PRODOPS_TEST_PG_URL (default
# postgres://postgres@127.0.0.1:5432/test); if it does not answer, this fails loudly. Only an
# explicit PRODOPS_SKIP_POSTGRES=1 (never set in CI) skips that half. Last, the outside fuzzer
# (scripts/fuzz.sh, docs/contract.md) holds a release server to its OpenAPI document on both
# databases.
set -euo pipefail
cd "$(dirname "$0")/.."

PG_URL="${PRODOPS_TEST_PG_URL:-postgres://postgres@127.0.0.1:5432/test}"

echo "== tests on SQLite"
cargo test --workspace --locked

echo "== a program using the SDK alone (examples/sdk-only: only prodops_client::*, built as a client builds it)"
cargo build --locked --manifest-path examples/sdk-only/Cargo.toml

if [[ "${PRODOPS_SKIP_POSTGRES:-0}" == "1" && "${CI:-}" != "true" ]]; then
  echo "== PostgreSQL skipped (PRODOPS_SKIP_POSTGRES=1)"
  echo "== the outside fuzzer on SQLite only (scripts/fuzz.sh)"
  PRODOPS_FUZZ_ONLY=sqlite bash scripts/fuzz.sh
  exit 0
fi

hostport="${PG_URL#*://}"; hostport="${hostport#*@}"; hostport="${hostport%%/*}"
host="${hostport%%:*}"; port="${hostport##*:}"; [[ "$port" == "$hostport" ]] && port=5432
if ! timeout 5 bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null; then
  echo "error: PostgreSQL does not answer at $host:$port ($PG_URL)." >&2
  echo "Start it, point PRODOPS_TEST_PG_URL at one, or set PRODOPS_SKIP_POSTGRES=1 to run SQLite only." >&2
  exit 1
fi

echo "== every test again, on PostgreSQL ($host:$port)"
# The same selection as the SQLite half (`--workspace`): a subset of packages unifies features
# differently and rebuilt the server, client, CLI and test crates; the core's tests, which need
# no database, cost seconds to run again.
PRODOPS_TEST_DATABASE_URL="$PG_URL" cargo test --workspace --locked

echo "== the outside fuzzer (scripts/fuzz.sh)"
bash scripts/fuzz.sh
