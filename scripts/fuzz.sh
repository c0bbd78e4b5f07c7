#!/usr/bin/env bash
# The outside fuzzer (docs/contract.md): schemathesis, pinned and installed from PyPI into a
# virtualenv outside the clone, runs every check against a release prodops-server over the
# OpenAPI document it serves, on SQLite and on PostgreSQL at once, with a fixed seed and a
# bounded number of examples per operation; any finding fails the run (non-zero exit).
# The exceptions (rules OpenAPI cannot express) are in scripts/fuzz-exceptions.toml.
#
# Environment:
#   PRODOPS_FUZZ_VENV      the virtualenv (default ~/.cache/prodops-fuzz-venv)
#   PRODOPS_TEST_PG_URL    PostgreSQL (default postgres://postgres@127.0.0.1:5432/test); if it
#                          does not answer, this fails loudly
#   PRODOPS_FUZZ_EXAMPLES  examples per operation and phase (default 5)
#   PRODOPS_FUZZ_SEED      the seed (default 20261123: the run issue 36 named, which once found
#                          the two mismatches docs/contract.md describes)
#   PRODOPS_FUZZ_ONLY      `sqlite` or `postgres` to run one database only (never in CI)
#   PRODOPS_FUZZ_SERVER    a prodops-server binary already built (scripts/test-all.sh passes
#                          the one its test build made); without it, a release build is made
#
# `bash scripts/fuzz.sh --install-only` installs schemathesis and stops (scripts/test-all.sh
# runs it in the background while it builds, so the download does not wait for the build).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

SCHEMATHESIS_VERSION=4.32.5
VENV="${PRODOPS_FUZZ_VENV:-$HOME/.cache/prodops-fuzz-venv}"
PG_URL="${PRODOPS_TEST_PG_URL:-postgres://postgres@127.0.0.1:5432/test}"
EXAMPLES="${PRODOPS_FUZZ_EXAMPLES:-5}"
SEED="${PRODOPS_FUZZ_SEED:-20261123}"
ONLY="${PRODOPS_FUZZ_ONLY:-}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/prodops-target}"
if [[ -n "$ONLY" && "${CI:-}" == "true" ]]; then
  echo "error: PRODOPS_FUZZ_ONLY is not for CI: both databases are fuzzed" >&2
  exit 1
fi

# ---- schemathesis, pinned -------------------------------------------------------------------
st="$VENV/bin/schemathesis"
if ! "$st" --version 2>/dev/null | grep -qx "schemathesis, version $SCHEMATHESIS_VERSION"; then
  python=$(command -v python3.11 || command -v python3 || true)
  if [[ -z "$python" ]]; then
    echo "error: python3 is needed to install schemathesis" >&2
    exit 1
  fi
  echo "== installing schemathesis $SCHEMATHESIS_VERSION into $VENV"
  rm -rf "$VENV"
  "$python" -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi
"$st" --version
[[ "${1:-}" == "--install-only" ]] && exit 0

# ---- the server -----------------------------------------------------------------------------
if [[ -n "${PRODOPS_FUZZ_SERVER:-}" ]]; then
  server="$PRODOPS_FUZZ_SERVER"
  [[ -x "$server" ]] || { echo "error: PRODOPS_FUZZ_SERVER=$server is not an executable" >&2; exit 1; }
else
  echo "== building prodops-server (release)"
  cargo build --release --locked -p prodops-server
  server="$CARGO_TARGET_DIR/release/prodops-server"
fi
echo "== the server under test: $server"

work=$(mktemp -d "${TMPDIR:-/tmp}/prodops-fuzz.XXXXXX")
pid=""
# The two databases are fuzzed at once, each in a subshell of its own (fuzz_in_background): on
# exit, stop what still runs before the work directory goes.
cleanup() {
  local running
  running=$(jobs -p)
  if [[ -n "$running" ]]; then
    kill $running 2>/dev/null || true
    wait 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# fuzz NAME DATABASE_URL: a fresh organization with both feature flags (so the Hub and cargo
# paths are reachable), a server without a practical rate limit, schemathesis over its document.
fuzz() {
  local name=$1 database=$2 dir="$work/$1"
  mkdir -p "$dir"
  echo "== fuzzing on $name"
  "$server" org create --name "fuzz $name $(date +%s)-$$" \
    --flag documentsHubEnabled --flag deliveryComponentCargoEnabled \
    --database "$database" > "$dir/org.json"
  local key
  key=$(sed -n 's/.*"apiKey":"\([^"]*\)".*/\1/p' "$dir/org.json")
  [[ -n "$key" ]] || { echo "error: org create printed no apiKey" >&2; exit 1; }
  # Created here, not by the redirection below: that runs in the background child, which may
  # not have opened the file yet when the loop first reads it.
  : > "$dir/serve.out"
  # Webhooks the fuzzer creates are not delivered in the background (their random hosts), and
  # a test ping to one of them gives up after 2 s rather than the default 10.
  PRODOPS_WEBHOOK_DELIVER=false PRODOPS_WEBHOOK_TIMEOUT_MS=2000 "$server" serve --bind 127.0.0.1:0 --rate-limit 1000000000 --database "$database" \
    --files "$dir/files" > "$dir/serve.out" 2> "$dir/serve.err" &
  pid=$!
  local url=""
  # Start-up runs the migrations and repairs over the whole database (on the shared PostgreSQL
  # test database, tens of seconds): wait up to three minutes.
  for _ in $(seq 1 1800); do
    url=$(sed -n 's/^listening on //p' "$dir/serve.out")
    [[ -n "$url" ]] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if [[ -z "$url" ]]; then
    echo "error: the server did not start on $name" >&2
    cat "$dir/serve.err" >&2
    exit 1
  fi
  local status=0
  # --generation-allow-x00 false: the server refuses U+0000 in every text (docs/limits.md), as
  # the document's description says; no JSON Schema keyword can say it of every string.
  "$st" --config-file "$root/scripts/fuzz-exceptions.toml" run "$url/api/v2/openapi.json" \
    --header "X-API-Key: $key" \
    --checks all \
    --seed "$SEED" \
    --max-examples "$EXAMPLES" \
    --generation-allow-x00 false \
    --request-timeout 60 \
    --no-color \
    --output-truncate false || status=$?
  # The fuzzer's webhooks go with its run: on a shared database, any delivering process (a test
  # server of a later run) would fan events out to their random hosts and hold a thread on each
  # host's failing DNS lookup. Deleting a webhook deletes its deliveries.
  python3 - "$url/api/v2" "$key" <<'PY' || echo "warning: the fuzzer's webhooks on $name were not all deleted" >&2
import json, sys, urllib.request
base, key = sys.argv[1], sys.argv[2]
def call(method, path):
    req = urllib.request.Request(base + path, method=method, headers={"X-API-Key": key})
    with urllib.request.urlopen(req, timeout=60) as answer:
        body = answer.read()
    return json.loads(body) if body else None
while True:
    ids = [w["id"] for w in call("GET", "/webhook?pageSize=1000")["values"]]
    if not ids:
        break
    for webhook in ids:
        call("DELETE", f"/webhook/{webhook}")
PY
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=""
  if [[ $status -ne 0 ]]; then
    echo "error: schemathesis found problems on $name (exit $status); server log:" >&2
    grep -E '"level":"(ERROR|WARN)"|ERROR|panicked' "$dir/serve.err" | tail -20 >&2 || true
    exit 1
  fi
}

# fuzz_in_background NAME DATABASE_URL: `fuzz` in a subshell whose output goes to
# $work/NAME.log and which stops its own server however it ends. Schemathesis is one Python
# process and the server under it mostly waits, so the two databases' runs share the machine's
# two cores instead of running one after the other (scripts/test-all.sh, the suite's time).
fuzz_in_background() {
  local name=$1
  (
    trap 'if [[ -n "$pid" ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi' EXIT
    fuzz "$@"
  ) > "$work/$name.log" 2>&1 &
}

names=()
if [[ "$ONLY" != "sqlite" ]]; then
  hostport="${PG_URL#*://}"; hostport="${hostport#*@}"; hostport="${hostport%%/*}"
  host="${hostport%%:*}"; port="${hostport##*:}"; [[ "$port" == "$hostport" ]] && port=5432
  if ! timeout 5 bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null; then
    echo "error: PostgreSQL does not answer at $host:$port ($PG_URL); the fuzzer runs on both databases." >&2
    exit 1
  fi
fi
declare -A started
if [[ "$ONLY" != "postgres" ]]; then
  fuzz_in_background sqlite "sqlite://$work/fuzz.db"
  started[sqlite]=$!
  names+=(sqlite)
fi
if [[ "$ONLY" != "sqlite" ]]; then
  fuzz_in_background postgres "$PG_URL"
  started[postgres]=$!
  names+=(postgres)
fi
failed=()
for name in "${names[@]}"; do
  status=0
  wait "${started[$name]}" || status=$?
  echo "== the fuzzer's run on $name (exit $status)"
  cat "$work/$name.log"
  [[ $status -eq 0 ]] || failed+=("$name")
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "error: the fuzzer found problems on: ${failed[*]}" >&2
  exit 1
fi
echo "== fuzzing found nothing"
