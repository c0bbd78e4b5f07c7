#!/usr/bin/env bash
# A tree import whose batches spread over every parent: the server's rate and peak anonymous
# memory (`RssAnon`, sampled every 50 ms) while bulk PUTs of shuffled stage rows, not grouped by
# parent as the CLI groups them, land under every phase of a tree (by default 2 orders x 5
# phases x 10,000 stages: each batch of 5,000 writes under all 10 phases). What a parent's
# refresh costs when it reads all its children shows here (issue 39 item 2).
#
# Usage: bash bench/tree-spread.sh [--postgres]
#
# Environment (all optional):
#   BENCH_ORDERS, BENCH_PHASES, BENCH_STAGES   the tree's shape (defaults 2, 5, 10000)
#   BENCH_BATCH        rows per bulk PUT (default 5000, the CLI's)
#   BENCH_BIN_DIR      take prodops-server from here instead of building it
#   PRODOPS_BENCH_PG_URL  PostgreSQL for --postgres (default postgres://postgres@127.0.0.1:5432/test)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HELP_LINES=2,15
BENCH_PACKAGES="-p prodops-server"
# shellcheck source=bench/import-common.sh
source "$ROOT/bench/import-common.sh"
start_server
read -r KEY _ < <(new_key "tree spread")
anon_kib() { sed -n 's/^RssAnon:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$SERVER_PID/status"; }
: > "$WORK/samples"
( while kill -0 "$SERVER_PID" 2>/dev/null; do anon_kib >> "$WORK/samples"; sleep 0.05; done ) &
sampler=$!
before=$(anon_kib)
python3 - "$BASE" "$KEY" "${BENCH_ORDERS:-2}" "${BENCH_PHASES:-5}" "${BENCH_STAGES:-10000}" "${BENCH_BATCH:-5000}" <<'PY'
import json, random, sys, time, urllib.request, uuid
base, key = sys.argv[1], sys.argv[2]
orders, phases, stages_per, batch = map(int, sys.argv[3:7])
if not base.startswith("http"):
    base = "http://" + base
random.seed(39)
def put(rows):
    req = urllib.request.Request(base + "/api/v2/deliverable/bulk", data=json.dumps(rows).encode(),
        method="PUT", headers={"X-API-Key": key, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=3600) as r:
        assert r.status == 200, r.status
        r.read()
tops, stages = [], []
for o in range(orders):
    oid = str(uuid.uuid4())
    tops.append({"id": oid, "name": f"O{o}", "type": "order"})
    for p in range(phases):
        pid = str(uuid.uuid4())
        tops.append({"id": pid, "name": f"O{o}.P{p}", "type": "phase", "parentId": oid})
        for s in range(stages_per):
            stages.append({"id": str(uuid.uuid4()), "name": f"O{o}.P{p}.S{s:05d}", "type": "stage", "parentId": pid})
put(tops)
random.shuffle(stages)
t = time.time()
for i in range(0, len(stages), batch):
    put(stages[i:i + batch])
dt = time.time() - t
print(f"{len(stages)} stages under {orders * phases} phases, batches of {batch}: {dt:.1f} s, {len(stages) / dt:.0f} nodes/s")
PY
kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null || true
printf 'anonymous memory: before %.1f MiB, peak %.1f MiB, after %.1f MiB\n' \
    "$(echo "$before/1024" | bc -l)" "$(echo "$(sort -n "$WORK/samples" | tail -1)/1024" | bc -l)" \
    "$(echo "$(anon_kib)/1024" | bc -l)"
