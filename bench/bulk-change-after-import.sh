#!/usr/bin/env bash
# The first change of bulk-imported records: a bulk PATCH of every one of BENCH_ROWS workers
# (random UUIDv4 ids) just imported with `PUT /worker/bulk`, on SQLite, in seconds. A bulk
# creation's events are stored without a copy of the record's text, and the first change of
# such a record copies it in (docs/events.md, "Storage of bulk creations"); on SQLite that is
# also when the event enters `ix_events_record` (store/event_links.rs), so this is where the
# import's saving is paid back, for the records that change. Each server given runs in turn,
# BENCH_RUNS times, alternating, on a fresh database each time.
#
# Usage: bash bench/bulk-change-after-import.sh [SERVER_BINARY...]
#   With no argument, builds and measures this checkout's release binary.
#
# Environment (all optional):
#   BENCH_ROWS   workers imported and then changed (default 100000, the bulk PATCH's limit)
#   BENCH_RUNS   runs per server (default 2)
#   CARGO_TARGET_DIR where cargo puts the binaries (default ./target)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
case "${1:-}" in -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac

ROWS="${BENCH_ROWS:-100000}"
RUNS="${BENCH_RUNS:-2}"
SERVERS=("$@")
if ((${#SERVERS[@]} == 0)); then
    cargo build --release --locked -q -p prodops-server
    SERVERS=("${CARGO_TARGET_DIR:-$ROOT/target}/release/prodops-server")
fi
WORK="$(mktemp -d)"
PID=""
cleanup() {
    [[ -n "$PID" ]] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

for run in $(seq "$RUNS"); do
    for SERVER in "${SERVERS[@]}"; do
        db="sqlite://$WORK/db-$RANDOM.sqlite"
        key="$("$SERVER" org create --name bench --database "$db" |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["apiKey"])')"
        "$SERVER" serve --bind 127.0.0.1:0 --database "$db" --rate-limit 1000000000 >"$WORK/out" 2>"$WORK/err" &
        PID=$!
        BASE=""
        for _ in $(seq 300); do
            BASE="$(sed -n 's/^listening on //p' "$WORK/out")"
            [[ -n "$BASE" ]] && break
            sleep 0.1
        done
        [[ -n "$BASE" ]] || { cat "$WORK/err" >&2; exit 1; }
        python3 - "$BASE" "$key" "$ROWS" "$SERVER" "$run" <<'PY'
import http.client, json, sys, time, urllib.parse, uuid
base, key, rows, server, run = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
u = urllib.parse.urlsplit(base)
conn = http.client.HTTPConnection(u.hostname, u.port, timeout=3600)
headers = {"X-API-Key": key, "Content-Type": "application/json"}
def call(method, path, body):
    conn.request(method, "/api/v2" + path, json.dumps(body), headers)
    r = conn.getresponse()
    data = r.read()
    assert r.status < 300, data[:300]
    return json.loads(data)
t0 = time.monotonic()
for start in range(0, rows, 10000):
    call("PUT", "/worker/bulk", [
        {"id": str(uuid.uuid4()), "name": f"Worker {i:07d}", "unionCode": "U1"}
        for i in range(start, min(rows, start + 10000))])
t1 = time.monotonic()
changed = call("PATCH", "/worker/bulk?unionCode=U1", {"unionCode": "U2"})
t2 = time.monotonic()
assert changed["count"] == rows, changed
print(f"run {run} {server}: import {t1 - t0:6.2f} s, bulk PATCH of all {t2 - t1:6.2f} s, both {t2 - t0:6.2f} s")
PY
        kill -TERM "$PID"
        wait "$PID" || true
        PID=""
    done
done
