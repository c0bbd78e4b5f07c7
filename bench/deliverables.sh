#!/usr/bin/env bash
# Deliverables benchmark (issue 4), on the embedded default (SQLite) with a release build:
#
#   1. a progress action (set-percentage) on a leaf of a 100,000-node order (depth 6) against the
#      same action on a leaf of a 1,000-node order (depth 6): cost must grow with depth, not
#      size (target: ratio <= 1.5);
#   2. a move of a 1,000-node subtree to another parent in the big order (absolute figure);
#   3. GET /deliverable/{id}/hierarchy of a ~10,000-node phase against
#      GET /worker?pageSize=10000 over 10,000 workers (target: ratio <= 2).
#
# Every pair is measured side by side in one run, interleaved, sequentially over one keep-alive
# connection; the medians are compared. The export-rate comparison of the issue needs the CLI
# (`prodops deliverable export`), which is not part of this branch: it is not measured here.
#
# Usage: bash bench/deliverables.sh
#
# Environment (all optional):
#   BENCH_ACTIONS   progress actions per order (default 300)
#   BENCH_READS     hierarchy and worker-list reads each (default 20)
#   BENCH_MOVES     subtree moves (default 6)
#   BENCH_BIG_FANOUTS  children per node at each level of the big order (default 10,10,10,10,9:
#                   101,111 nodes, depth 6, phases of 10,111 nodes); smaller for a quick look
#   CARGO_TARGET_DIR  where cargo puts the binaries (default ./target)
#   BENCH_SERVER    a prodops-server binary to measure instead of building this checkout (to
#                   compare two builds in alternating runs)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

case "${1:-}" in
    -h | --help)
        sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    "") ;;
    *)
        echo "unknown argument: $1 (try --help)" >&2
        exit 2
        ;;
esac

ACTIONS="${BENCH_ACTIONS:-300}"
READS="${BENCH_READS:-20}"
MOVES="${BENCH_MOVES:-6}"
BIG_FANOUTS="${BENCH_BIG_FANOUTS:-10,10,10,10,9}"

log() { echo "[bench] $*" >&2; }
die() {
    echo "[bench] error: $*" >&2
    exit 1
}

command -v python3 >/dev/null 2>&1 || die "python3 is needed to drive the benchmark"

if [ -n "${BENCH_SERVER:-}" ]; then
    SERVER="$BENCH_SERVER"
else
    log "building (release): prodops-server"
    cargo build --release -p prodops-server >&2
    TARGET_DIR="${CARGO_TARGET_DIR:-target}"
    case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$ROOT/$TARGET_DIR" ;; esac
    SERVER="$TARGET_DIR/release/prodops-server"
fi
[ -x "$SERVER" ] || die "no binary at $SERVER"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/prodops-bench-deliverables.XXXXXX")"
SERVER_PID=""
cleanup() {
    local status=$?
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 1 100); do
            kill -0 "$SERVER_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    if [ "$status" -ne 0 ]; then
        log "failed; server logs kept in $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

DB="sqlite://$WORK/bench.db"
created="$("$SERVER" org create --name bench --database "$DB" 2>>"$WORK/admin.err")" ||
    die "org create failed: $(cat "$WORK/admin.err")"
API_KEY="$(printf '%s' "$created" | python3 -c 'import json,sys; print(json.load(sys.stdin)["apiKey"])')"

: >"$WORK/server.out"
"$SERVER" serve --bind 127.0.0.1:0 --database "$DB" --rate-limit 100000000 \
    >"$WORK/server.out" 2>"$WORK/server.err" &
SERVER_PID=$!
URL=""
for _ in $(seq 1 300); do
    URL="$(sed -n 's|^listening on \(http://[^ ]*\)$|\1|p' "$WORK/server.out" 2>/dev/null | head -n 1 || true)"
    [ -n "$URL" ] && break
    kill -0 "$SERVER_PID" 2>/dev/null || {
        cat "$WORK/server.err" >&2
        die "the server exited before listening"
    }
    sleep 0.1
done
[ -n "$URL" ] || die "the server did not print its 'listening on' line"

mkdir -p bench/results
OUT="bench/results/deliverables-$(date -u +%Y%m%dT%H%M%SZ).txt"

python3 - "$URL" "$API_KEY" "$ACTIONS" "$READS" "$MOVES" "$BIG_FANOUTS" <<'PY' | tee "$OUT"
import http.client, json, random, statistics, sys, time, urllib.parse, uuid

url, key, actions, reads, moves = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
big_fanouts = [int(x) for x in sys.argv[6].split(",")]
host = urllib.parse.urlparse(url)
conn = http.client.HTTPConnection(host.hostname, host.port, timeout=600)
H = {"X-API-Key": key, "Content-Type": "application/json"}

def call(method, path, body=None, expect=(200, 201, 204)):
    data = None if body is None else json.dumps(body)
    conn.request(method, "/api/v2" + path, body=data, headers=H)
    r = conn.getresponse()
    text = r.read()
    if r.status not in expect:
        raise SystemExit(f"{method} {path} -> {r.status} {text[:500]!r}")
    return text

def log(msg):
    print(f"[bench] {msg}", file=sys.stderr, flush=True)

def bulk(records, batch=5000):
    for i in range(0, len(records), batch):
        call("PUT", "/deliverable/bulk", records[i:i + batch])

stages = []
shop = json.loads(call("POST", "/shop", {"name": "Main"}))["id"]
for n in range(5):
    stages.append(json.loads(call("POST", "/stage", {"name": f"Stage {n}", "shopId": shop}))["id"])

LEVEL_TYPES = ["phase", "component", "phase", "stage", "step"]

def build(name, fanouts):
    """An order with the given fanout per level (depth = len(fanouts) + 1), parents first."""
    root = str(uuid.uuid4())
    records = [{"id": root, "name": name, "type": "order"}]
    levels = [[root]]
    for depth, fan in enumerate(fanouts):
        nxt = []
        for parent in levels[-1]:
            for k in range(fan):
                nid = str(uuid.uuid4())
                rec = {"id": nid, "name": f"{LEVEL_TYPES[depth]} {k}", "type": LEVEL_TYPES[depth],
                       "parentId": parent, "quantity": 10}
                if LEVEL_TYPES[depth] == "stage":
                    rec["data"] = {"stageId": stages[k % len(stages)]}
                records.append(rec)
                nxt.append(nid)
        levels.append(nxt)
    return root, records, levels

big_root, big_records, big_levels = build("Big order", big_fanouts)
small_root, small_records, small_levels = build("Small order", [3, 4, 4, 4, 4])
log(f"storing the big order: {len(big_records)} nodes, depth {len(big_levels)}")
t0 = time.perf_counter()
bulk(big_records)
seed_secs = time.perf_counter() - t0
log(f"stored in {seed_secs:.1f} s ({len(big_records) / seed_secs:.0f} nodes/s)")
log(f"storing the small order: {len(small_records)} nodes, depth {len(small_levels)}")
bulk(small_records)
log("storing 10,000 workers")
for i in range(0, 10000, 5000):
    call("PUT", "/worker/bulk", [{"name": f"Worker {j}"} for j in range(i, i + 5000)])

def timed(fn):
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000.0

# 1. Leaf progress actions, interleaved.
big_leaves, small_leaves = big_levels[-1], small_levels[-1]
rnd = random.Random(7)
big_t, small_t = [], []
for i in range(actions):
    pct = rnd.choice([10, 20, 30, 40, 50, 60, 70, 80, 90])
    for root, leaves, out in ((big_root, big_leaves, big_t), (small_root, small_leaves, small_t)):
        leaf = rnd.choice(leaves)
        out.append(timed(lambda: call("POST", f"/deliverable/root/{root}/progress/{leaf}",
                                      {"type": "set-percentage", "percentage": pct})))

# 2. Moves of a ~1,000-node subtree between two phases of the big order.
l1 = big_levels[1]
l2 = big_levels[2]
subtree = l2[0]
move_t = []
for m in range(moves):
    target = l1[(1 + (m % 2)) % len(l1)]
    move_t.append(timed(lambda: call("PATCH", f"/deliverable/{subtree}", {"parentId": target})))
hier = json.loads(call("GET", f"/deliverable/{subtree}/hierarchy"))
moved_nodes = hier["totalCount"]

# 3. Hierarchy of a ~10,000-node phase against the 10,000-worker page, interleaved.
phase = l1[min(3, len(l1) - 1)]
hier_body = call("GET", f"/deliverable/{phase}/hierarchy")
hier_count = json.loads(hier_body)["totalCount"]
worker_body = call("GET", "/worker?pageSize=10000")
hier_t, worker_t = [], []
for _ in range(2):  # warm-up
    call("GET", f"/deliverable/{phase}/hierarchy")
    call("GET", "/worker?pageSize=10000")
for _ in range(reads):
    hier_t.append(timed(lambda: call("GET", f"/deliverable/{phase}/hierarchy")))
    worker_t.append(timed(lambda: call("GET", "/worker?pageSize=10000")))

med = statistics.median
def row(label, values):
    return f"{label:<58} {med(values):>9.2f} ms  (mean {statistics.fmean(values):.2f}, n={len(values)})"

progress_ratio = med(big_t) / med(small_t)
hier_ratio = med(hier_t) / med(worker_t)
print("Deliverables benchmark (SQLite, release build, one keep-alive connection, medians)")
print(f"seeding the big order through PUT /deliverable/bulk: {len(big_records)} nodes in {seed_secs:.1f} s")
print(row(f"progress action on a leaf, {len(big_records)}-node order", big_t))
print(row(f"progress action on a leaf, {len(small_records)}-node order", small_t))
print(f"  ratio {progress_ratio:.2f} (target <= 1.5): {'PASS' if progress_ratio <= 1.5 else 'FAIL'}")
print(row(f"move of a {moved_nodes}-node subtree", move_t))
print(row(f"GET /deliverable/{{id}}/hierarchy, {hier_count} nodes", hier_t))
print(row("GET /worker?pageSize=10000, 10,000 workers", worker_t))
print(f"  response sizes: hierarchy {len(hier_body) / 1e6:.1f} MB ({len(hier_body) // hier_count} bytes per node), "
      f"workers {len(worker_body) / 1e6:.1f} MB ({len(worker_body) // 10000} bytes per worker)")
print(f"  ratio {hier_ratio:.2f} (target <= 2): {'PASS' if hier_ratio <= 2 else 'FAIL'}")
print("deliverable export vs worker export rate: see bench/deliverable-import-export.sh")
PY
log "results written to $OUT"
