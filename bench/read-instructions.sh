#!/usr/bin/env bash
# Instructions per read: the server's instruction count (valgrind's callgrind) for one
# `GET /api/v2/worker/{id}` and one `GET /api/v2/worker?pageSize=100` on SQLite, with 20,000
# workers stored (or the same of deliverables, orders without a parent: BENCH_RESOURCE).
# Unlike requests per second, the count does not move with the VM's speed, so
# two builds can be compared on a busy machine: give each as BENCH_SERVER. The server runs
# twice per endpoint under callgrind, once for N and once for 3N requests (one keep-alive
# connection); the difference divided by 2N is the cost of one request, start-up excluded.
#
# Usage: bash bench/read-instructions.sh [SERVER_BINARY...]
#   With no argument, builds and measures this checkout's release binary.
#
# Environment (all optional):
#   BENCH_REQUESTS   N (default 1000)
#   BENCH_WORKERS    records to store (default 20000)
#   BENCH_RESOURCE   worker (default) or deliverable
#   CARGO_TARGET_DIR where cargo puts the binaries (default ./target)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
case "${1:-}" in -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac

N="${BENCH_REQUESTS:-1000}"
export BENCH_WORKERS="${BENCH_WORKERS:-20000}"
export BENCH_RESOURCE="${BENCH_RESOURCE:-worker}"
# shellcheck source=bench/callgrind-server.sh
source "$ROOT/bench/callgrind-server.sh"
servers_to_measure "$@"

for SERVER in "${SERVERS[@]}"; do
    db="sqlite://$WORK/reads-$RANDOM.db"
    key="$("$SERVER" org create --name bench --database "$db" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["apiKey"])')"
    start "$db" env
    python3 - "$BASE" "$key" "$WORK/ids" <<'PY'
import http.client, json, os, sys, urllib.parse
base, key, out = sys.argv[1:4]
u = urllib.parse.urlsplit(base)
conn = http.client.HTTPConnection(u.hostname, u.port)
n = int(os.environ["BENCH_WORKERS"])
res = os.environ["BENCH_RESOURCE"]
def row(i):
    if res == "deliverable":
        return {"name": f"Order {i}", "type": "order"}
    return {"name": f"W{i}", "customerIdentifier": f"E{i}"}
ids = []
for start in range(0, n, 5000):
    rows = [row(i) for i in range(start, min(n, start + 5000))]
    conn.request("PUT", f"/api/v2/{res}/bulk", json.dumps(rows), {"X-API-Key": key, "Content-Type": "application/json"})
    r = conn.getresponse()
    body = r.read()
    assert r.status < 300, body[:300]
for page in range(1, n // 1000 + 2):
    conn.request("GET", f"/api/v2/{res}?pageSize=1000&page={page}", headers={"X-API-Key": key})
    r = conn.getresponse()
    body = r.read()
    assert r.status == 200, body[:300]
    ids += [v["id"] for v in json.loads(body)["values"]]
assert len(ids) == n, len(ids)
open(out, "w").write("\n".join(ids))
PY
    stop
    declare -A count=()
    for endpoint in by-id list; do
        for n in "$N" "$((3 * N))"; do
            start "$db" valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.out" -q
            python3 - "$BASE" "$key" "$WORK/ids" "$endpoint" "$n" <<'PY'
import http.client, os, random, sys, urllib.parse
base, key, ids_file, endpoint, n = sys.argv[1:6]
res = os.environ["BENCH_RESOURCE"]
ids = open(ids_file).read().split()
random.seed(7)
u = urllib.parse.urlsplit(base)
conn = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
for i in range(int(n)):
    path = f"/api/v2/{res}/{random.choice(ids)}" if endpoint == "by-id" else f"/api/v2/{res}?pageSize=100"
    conn.request("GET", path, headers={"X-API-Key": key})
    r = conn.getresponse()
    r.read()
    assert r.status == 200, r.status
PY
            stop
            count[$endpoint-$n]="$(sed -n 's/^summary: //p' "$WORK/cg.out" | head -1)"
        done
    done
    printf '%s\n' "$SERVER"
    for endpoint in by-id list; do
        python3 -c 'import sys; a, b, n = map(int, sys.argv[2:5]); print(f"  {sys.argv[1]:<7} {(b - a) / (2 * n):>12,.0f} instructions per request")' \
            "$endpoint" "${count[$endpoint-$N]}" "${count[$endpoint-$((3 * N))]}" "$N"
    done
    unset count
done
