#!/usr/bin/env bash
# Instructions per unit of work of the writes and reads issue 37's "done" names for untracked
# items: a deliverable tree import (`PUT /deliverable/bulk`, per node), produce and consume of
# 200 untracked rows each (`POST /production/produce` and `/production/consume`, per call), and
# a worker export read as list pages (`GET /worker?pageSize=1000`, per worker). The server's
# instruction count comes from valgrind's callgrind, which does not move with the machine's load,
# so builds can be compared on a busy machine (bench/README.md, "write-instructions").
#
# Each workload runs twice per server under callgrind, in a fresh SQLite database: set-up and 1
# round, then set-up and 3 rounds. The difference divided by 2 rounds and by the units of a
# round is the cost of one unit; start-up, migrations, set-up and first-round warm-up drop out.
#
# Usage: bash bench/write-instructions.sh [SERVER_BINARY...]
#   With no argument, builds and measures this checkout's release binary; give two binaries
#   (an older build first) to compare them.
#
# Environment (all optional):
#   CARGO_TARGET_DIR where cargo puts the binaries (default ./target)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
case "${1:-}" in -h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac

source "$ROOT/bench/callgrind-server.sh"
servers_to_measure "$@"

# Units of work per round, per workload.
declare -A UNITS=([tree]=1000 [produce]=10 [consume]=10 [export]=10000)

# work WORKLOAD ROUNDS: the set-up of WORKLOAD, then ROUNDS rounds of it, through $BASE.
work() {
    python3 - "$BASE" "$key" "$1" "$2" <<'PY'
import http.client, json, sys, urllib.parse
base, key, workload, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
u = urllib.parse.urlsplit(base)
conn = http.client.HTTPConnection(u.hostname, u.port, timeout=3600)

def call(method, path, body=None):
    data = None if body is None else json.dumps(body)
    conn.request(method, "/api/v2" + path, data,
                 {"X-API-Key": key, "Content-Type": "application/json"})
    r = conn.getresponse()
    text = r.read()
    assert r.status < 300, (method, path, r.status, text[:300])
    return json.loads(text) if text else None

if workload == "tree":
    # Each round: an order of 10 phases of 99 stages (1,000 nodes), parents before children.
    for n in range(rounds):
        order = call("PUT", "/deliverable/bulk", [{"name": f"Order {n}", "type": "order"}])["ids"][0]
        phases = call("PUT", "/deliverable/bulk",
                      [{"name": f"Phase {n}.{p}", "type": "phase", "parentId": order} for p in range(10)])["ids"]
        stages = [{"name": f"Stage {n}.{p}.{s}", "type": "stage", "parentId": phase}
                  for p, phase in enumerate(phases) for s in range(99)]
        call("PUT", "/deliverable/bulk", stages)
elif workload in ("produce", "consume"):
    shop = call("POST", "/shop", {"name": "Production shop"})["id"]
    out_loc = call("POST", "/location", {"name": "Finished", "shopId": shop})["id"]
    raw_loc = call("POST", "/location", {"name": "Raw", "shopId": shop})["id"]
    order = call("POST", "/deliverable", {"name": "Bench order", "type": "order", "quantity": 1})["id"]
    outputs = call("PUT", "/item/bulk", [{"name": f"Output {i}"} for i in range(200)])["ids"]
    materials = call("PUT", "/item/bulk", [{"name": f"Material {i}", "defaultLocationId": raw_loc} for i in range(200)])["ids"]
    call("PUT", "/production-output/bulk", [{"itemId": i, "orderDeliverableId": order, "producedPerUnit": 1, "locationId": out_loc} for i in outputs])
    call("PUT", "/bom-line/bulk", [{"itemId": i, "orderDeliverableId": order, "quantity": 1000000} for i in materials])
    for m in materials:
        call("POST", "/inventory-transaction", {"itemId": m, "type": "adjust", "quantity": 1000000, "toLocationId": raw_loc})
    lines = [{"itemId": m, "quantity": 1} for m in materials]
    for _ in range(rounds * 10):
        if workload == "produce":
            v = call("POST", "/production/produce", {"deliverableId": order})["value"]
        else:
            v = call("POST", "/production/consume", {"deliverableId": order, "lines": lines})["value"]
        assert len(v["transactions"]) == 200, len(v["transactions"])
elif workload == "export":
    for start in range(0, 10000, 5000):
        call("PUT", "/worker/bulk", [{"name": f"Worker {i:06d}", "customerIdentifier": f"E{i:06d}",
                                      "status": "active"} for i in range(start, start + 5000)])
    for _ in range(rounds):
        page, seen = 1, 0
        while True:
            got = call("GET", f"/worker?pageSize=1000&page={page}")["values"]
            seen += len(got)
            if len(got) < 1000:
                break
            page += 1
        assert seen == 10000, seen
PY
}

for SERVER in "${SERVERS[@]}"; do
    declare -A ir=()
    for workload in tree produce consume export; do
        for rounds in 1 3; do
            db="sqlite://$WORK/write-$RANDOM.db"
            key="$("$SERVER" org create --name bench --database "$db" |
                python3 -c 'import json,sys; print(json.load(sys.stdin)["apiKey"])')"
            start "$db" valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.out" -q
            work "$workload" "$rounds"
            stop
            ir[$workload-$rounds]="$(sed -n 's/^summary: //p' "$WORK/cg.out" | head -1)"
        done
    done
    printf '%s\n' "$SERVER"
    for workload in tree produce consume export; do
        python3 -c 'import sys; w, a, b, n = sys.argv[1], *map(int, sys.argv[2:5]); unit = {"tree": "node", "produce": "call", "consume": "call", "export": "worker"}[w]; print(f"  {w:<8} {(b - a) / (2 * n):>14,.0f} instructions per {unit}")' \
            "$workload" "${ir[$workload-1]}" "${ir[$workload-3]}" "${UNITS[$workload]}"
    done
    unset ir
done
