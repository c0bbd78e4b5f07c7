#!/usr/bin/env bash
# Instructions and bytes written per imported worker: the server's instruction count (valgrind's
# callgrind) and the bytes its process wrote (`wchar` of /proc/PID/io: the SQLite WAL and
# database file, the log) for `PUT /api/v2/worker/bulk` of 10,000 workers, on SQLite, without
# ids and with random UUIDv4 ids. Unlike rows per second, neither moves with the VM's load, so
# builds can be compared on a busy machine (bench/README.md, issue 17: the change feed's cost
# on the import). Each server runs twice per id kind under callgrind, importing 1 and then 3
# batches into a fresh database; the difference divided by 2 x 10,000 is the cost of one row,
# start-up, migrations and first-batch warm-up excluded.
#
# Usage: bash bench/import-instructions.sh [SERVER_BINARY...]
#   With no argument, builds and measures this checkout's release binary. The server inherits
#   the environment (a measuring patch may read a variable of its own).
#
# Environment (all optional):
#   BENCH_BATCH      rows per bulk call (default 10000, the CLI's default for workers)
#   CARGO_TARGET_DIR where cargo puts the binaries (default ./target)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
case "${1:-}" in -h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac

export BENCH_BATCH="${BENCH_BATCH:-10000}"
source "$ROOT/bench/callgrind-server.sh"
servers_to_measure "$@"

# import KIND BATCHES: bulk-creates BATCHES batches of workers through the server at $BASE.
import() {
    python3 - "$BASE" "$key" "$1" "$2" <<'PY'
import http.client, json, os, sys, urllib.parse, uuid
base, key, kind, batches = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
n = int(os.environ["BENCH_BATCH"])
u = urllib.parse.urlsplit(base)
conn = http.client.HTTPConnection(u.hostname, u.port, timeout=3600)
for b in range(batches):
    rows = []
    for i in range(b * n, (b + 1) * n):
        row = {"name": f"Worker {i:07d}", "customerIdentifier": f"E{i:07d}",
               "status": ("active", "inactive", "terminated")[i % 3], "isArchived": False}
        if kind == "v4":
            row["id"] = str(uuid.uuid4())
        rows.append(row)
    conn.request("PUT", "/api/v2/worker/bulk", json.dumps(rows),
                 {"X-API-Key": key, "Content-Type": "application/json"})
    r = conn.getresponse()
    body = r.read()
    assert r.status < 300, body[:300]
PY
}

for SERVER in "${SERVERS[@]}"; do
    declare -A ir=() wchar=()
    for kind in no-ids v4; do
        for batches in 1 3; do
            db="sqlite://$WORK/import-$RANDOM.db"
            key="$("$SERVER" org create --name bench --database "$db" |
                python3 -c 'import json,sys; print(json.load(sys.stdin)["apiKey"])')"
            start "$db" valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.out" -q
            import "$kind" "$batches"
            wchar[$kind-$batches]="$(sed -n 's/^wchar: //p' "/proc/$PID/io")"
            stop
            ir[$kind-$batches]="$(sed -n 's/^summary: //p' "$WORK/cg.out" | head -1)"
        done
    done
    printf '%s\n' "$SERVER"
    for kind in no-ids v4; do
        python3 -c 'import sys; k, a, b, wa, wb, n = sys.argv[1], *map(int, sys.argv[2:7]); print(f"  {k:<7} {(b - a) / (2 * n):>10,.0f} instructions, {(wb - wa) / (2 * n):>7,.0f} bytes written per row")' \
            "$kind" "${ir[$kind-1]}" "${ir[$kind-3]}" "${wchar[$kind-1]}" "${wchar[$kind-3]}" "$BENCH_BATCH"
    done
    unset ir wchar
done
