#!/usr/bin/env bash
# Instructions per hierarchy read: the server's instruction count (valgrind's callgrind) for one
# `GET /api/v2/deliverable/{id}/hierarchy` of a 10,111-node phase (the phase of
# bench/deliverables.sh: component/phase/stage/step below it, 10 x 10 x 10 x 9) on SQLite. Like
# bench/read-instructions.sh, the count does not move with the VM's speed, so two builds can be
# compared on a busy machine: give each as an argument. The server runs twice under callgrind,
# once for N and once for 3N reads (one keep-alive connection); the difference divided by 2N is
# the cost of one read, start-up excluded.
#
# Usage: bash bench/hierarchy-instructions.sh [SERVER_BINARY...]
#   With no argument, builds and measures this checkout's release binary.
#
# Environment (all optional):
#   BENCH_REQUESTS   N (default 3)
#   CARGO_TARGET_DIR where cargo puts the binaries (default ./target)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
case "${1:-}" in -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac

N="${BENCH_REQUESTS:-3}"
# shellcheck source=bench/callgrind-server.sh
source "$ROOT/bench/callgrind-server.sh"
servers_to_measure "$@"

for SERVER in "${SERVERS[@]}"; do
    db="sqlite://$WORK/hierarchy-$RANDOM.db"
    key="$("$SERVER" org create --name bench --database "$db" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["apiKey"])')"
    start "$db" env
    python3 - "$BASE" "$key" "$WORK/phase" <<'PY'
import http.client, json, sys, urllib.parse, uuid
base, key, out = sys.argv[1:4]
u = urllib.parse.urlsplit(base)
conn = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
H = {"X-API-Key": key, "Content-Type": "application/json"}
def call(method, path, body=None):
    conn.request(method, "/api/v2" + path, None if body is None else json.dumps(body), H)
    r = conn.getresponse()
    text = r.read()
    assert r.status < 300, (path, r.status, text[:300])
    return text
shop = json.loads(call("POST", "/shop", {"name": "Main"}))["id"]
stages = [json.loads(call("POST", "/stage", {"name": f"Stage {n}", "shopId": shop}))["id"] for n in range(5)]
root, phase = str(uuid.uuid4()), str(uuid.uuid4())
records = [{"id": root, "name": "Order", "type": "order"},
           {"id": phase, "name": "Phase", "type": "phase", "parentId": root, "quantity": 10}]
level = [phase]
for kind, fan in [("component", 10), ("phase", 10), ("stage", 10), ("step", 9)]:
    nxt = []
    for parent in level:
        for k in range(fan):
            nid = str(uuid.uuid4())
            rec = {"id": nid, "name": f"{kind} {k}", "type": kind, "parentId": parent, "quantity": 10}
            if kind == "stage":
                rec["data"] = {"stageId": stages[k % len(stages)]}
            records.append(rec)
            nxt.append(nid)
    level = nxt
for i in range(0, len(records), 5000):
    call("PUT", "/deliverable/bulk", records[i:i + 5000])
nodes = len(json.loads(call("GET", f"/deliverable/{phase}/hierarchy"))["values"])
assert nodes == 10111, nodes
open(out, "w").write(phase)
PY
    stop
    declare -A count=()
    for n in "$N" "$((3 * N))"; do
        start "$db" valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.out" -q
        python3 - "$BASE" "$key" "$WORK/phase" "$n" <<'PY'
import http.client, sys, urllib.parse
base, key, phase_file, n = sys.argv[1:5]
phase = open(phase_file).read().strip()
u = urllib.parse.urlsplit(base)
conn = http.client.HTTPConnection(u.hostname, u.port, timeout=3600)
for _ in range(int(n)):
    conn.request("GET", f"/api/v2/deliverable/{phase}/hierarchy", headers={"X-API-Key": key})
    r = conn.getresponse()
    r.read()
    assert r.status == 200, r.status
PY
        stop
        count[$n]="$(sed -n 's/^summary: //p' "$WORK/cg.out" | head -1)"
    done
    printf '%s\n' "$SERVER"
    python3 -c 'import sys; a, b, n = map(int, sys.argv[1:4]); print(f"  hierarchy of 10,111 nodes {(b - a) / (2 * n):>14,.0f} instructions per read ({(b - a) / (2 * n) / 10111:,.0f} per node)")' \
        "${count[$N]}" "${count[$((3 * N))]}" "$N"
    unset count
done
