#!/usr/bin/env bash
# Lot trace benchmark (issue 37, item 3): the time of `GET /api/v2/lot/{id}/trace` down from a
# received lot and up from a lot made five generations later, over a ledger of about 100,000
# rows written through the API, on SQLite and PostgreSQL. Target: under 1 s each.
#
# The ledger: CHAINS independent chains of six lot-tracked items. In each chain, LOTS lots of the
# first item are received (POST /delivery/{id}/receive, one receipt row per lot); then five
# orders in turn each consume every lot of the level before (POST /production/consume, FIFO
# picking, one consume row per lot) and produce LOTS lots of the next item (POST
# /production/produce, one produce row per lot). A chain is 11 x LOTS rows; the defaults (4
# chains of 2,300 lots) make 101,200. The trace down from one received lot reaches every lot of
# its chain's five later levels (about 11,500 lots and edges); up from one lot of the last
# level, every lot before it and every receipt.
#
# Usage: bash bench/lot-trace.sh [--sqlite-only] [--server PATH]
#
# Environment (all optional):
#   PRODOPS_BENCH_PG_URL   PostgreSQL URL (default postgres://postgres@127.0.0.1:5432/test)
#   BENCH_CHAINS           chains (default 4)
#   BENCH_LOTS             lots per level of a chain (default 2300)
#   BENCH_BATCH            lots per receive, consume or produce call (default 500)
#   BENCH_TRACES           traces timed each way (default 5; the median is reported)
#   CARGO_TARGET_DIR       where cargo puts the binaries (default ./target)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

SQLITE_ONLY=0
SERVER=""
while [ $# -gt 0 ]; do
    case "$1" in
        --sqlite-only) SQLITE_ONLY=1 ;;
        --server)
            SERVER="$2"
            shift
            ;;
        -h | --help)
            sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "unknown argument: $1 (try --help)" >&2
            exit 2
            ;;
    esac
    shift
done

PG_URL="${PRODOPS_BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432/test}"
CHAINS="${BENCH_CHAINS:-4}"
LOTS="${BENCH_LOTS:-2300}"
BATCH="${BENCH_BATCH:-500}"
TRACES="${BENCH_TRACES:-5}"
RATE_LIMIT=100000000

log() { echo "[bench] $*" >&2; }
die() {
    echo "[bench] error: $*" >&2
    exit 1
}

command -v python3 >/dev/null 2>&1 || die "python3 is needed to seed the data"
if [ -z "$SERVER" ]; then
    log "building (release): prodops-server"
    cargo build --release -p prodops-server >&2
    TARGET_DIR="${CARGO_TARGET_DIR:-target}"
    case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$ROOT/$TARGET_DIR" ;; esac
    SERVER="$TARGET_DIR/release/prodops-server"
fi
[ -x "$SERVER" ] || die "no binary at $SERVER"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/prodops-bench-trace.XXXXXX")"
PIDS=()
PG_BENCH_DB=""

stop_pid() {
    local pid="$1"
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}

cleanup() {
    local status=$?
    for pid in "${PIDS[@]}"; do stop_pid "$pid"; done
    if [ -n "$PG_BENCH_DB" ]; then
        psql -q "$PG_URL" -c "DROP DATABASE IF EXISTS \"$PG_BENCH_DB\"" >/dev/null 2>&1 ||
            log "could not drop the database $PG_BENCH_DB; drop it by hand"
    fi
    if [ "$status" -ne 0 ]; then
        log "failed; logs kept in $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_server() {
    local name="$1"
    shift
    "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
    STARTED_PID=$!
    PIDS+=("$STARTED_PID")
    STARTED_URL=""
    for _ in $(seq 1 300); do
        STARTED_URL="$(sed -n 's|^listening on \(http://[^ ]*\)$|\1|p' "$WORK/$name.out" | head -n 1)"
        [ -n "$STARTED_URL" ] && return 0
        kill -0 "$STARTED_PID" 2>/dev/null || {
            cat "$WORK/$name.err" >&2
            die "$name exited before listening"
        }
        sleep 0.1
    done
    die "$name did not print its 'listening on' line within 30 s"
}

# Seeds the chains through the API, then times the traces. Prints:
# rows seconds-to-seed down-median-ms down-max-ms down-lots up-median-ms up-max-ms up-lots
cat >"$WORK/helper.py" <<'PY'
import json, statistics, sys, time, urllib.request

base, key = sys.argv[1], sys.argv[2]
chains, lots, batch, traces = (int(a) for a in sys.argv[3:7])

def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + "/api/v2" + path, data=data, method=method,
                                 headers={"X-API-Key": key, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=600) as resp:
            text = resp.read()
            return json.loads(text) if text else None
    except urllib.error.HTTPError as e:
        sys.exit(f"{method} {path} failed: {e.code} {e.read().decode(errors='replace')[:500]}")

def parts(n):
    while n > 0:
        yield min(batch, n)
        n -= min(batch, n)

t0 = time.perf_counter()
shop = call("POST", "/shop", {"name": "Trace shop"})["id"]
loc = call("POST", "/location", {"name": "Store", "shopId": shop})["id"]
starts, ends = [], []
for c in range(chains):
    items = call("PUT", "/item/bulk", [{"name": f"C{c} level {k}", "tracking": "lot"} for k in range(6)])["ids"]
    delivery = call("POST", "/delivery", {"name": f"PO chain {c}"})["id"]
    line = call("POST", "/delivery-manifest-line",
                {"deliveryId": delivery, "itemId": items[0], "quantityExpected": lots, "locationId": loc})["id"]
    n = 0
    for size in parts(lots):
        call("POST", f"/delivery/{delivery}/receive", {"lines": [{"manifestLineId": line, "quantity": size,
             "lots": [{"code": f"C{c}-0-{n + i}", "quantity": 1} for i in range(size)]}]})
        n += size
    for k in range(5):
        order = call("POST", "/deliverable", {"name": f"C{c} order {k}", "type": "order", "quantity": 1})["id"]
        call("POST", "/bom-line", {"itemId": items[k], "orderDeliverableId": order, "quantity": lots})
        call("POST", "/production-output", {"itemId": items[k + 1], "orderDeliverableId": order, "quantity": lots})
        for size in parts(lots):
            v = call("POST", "/production/consume", {"deliverableId": order, "fromLocationId": loc,
                     "lines": [{"itemId": items[k], "quantity": size}]})["value"]
            assert len(v["transactions"]) == size, len(v["transactions"])
        n = 0
        made = []
        for size in parts(lots):
            v = call("POST", "/production/produce", {"deliverableId": order, "outputLocationId": loc,
                     "outputs": [{"itemId": items[k + 1], "quantity": size,
                                  "lots": [{"code": f"C{c}-{k + 1}-{n + i}", "quantity": 1} for i in range(size)]}]})["value"]
            made += [l["lotId"] for l in v["lots"]]
            n += size
    starts.append(call("GET", f"/lot?code=C{c}-0-0")["values"][0]["id"])
    ends.append(made[-1])
seeded = time.perf_counter() - t0
rows = call("GET", "/inventory-transaction?pageSize=1")["totalCount"]

def timed(lot, direction):
    times, size = [], 0
    for _ in range(traces):
        t = time.perf_counter()
        v = call("GET", f"/lot/{lot}/trace?direction={direction}")
        times.append((time.perf_counter() - t) * 1000)
        size = sum(1 for n in v["nodes"] if n["kind"] == "lot")
    return statistics.median(times), max(times), size

d = timed(starts[0], "down")
u = timed(ends[0], "up")
print(rows, "%.0f" % seeded, "%.1f %.1f %d" % d, "%.1f %.1f %d" % u)
PY

ROWS=()

bench_backend() {
    local backend="$1" db="$2" created key url
    created="$("$SERVER" org create --name bench --database "$db" 2>>"$WORK/$backend-admin.err")" ||
        die "org create failed on $backend: $(cat "$WORK/$backend-admin.err")"
    key="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["apiKey"])' "$created")"
    start_server "$backend" "$SERVER" serve --bind 127.0.0.1:0 --database "$db" --rate-limit "$RATE_LIMIT"
    url="$STARTED_URL"
    local pid="$STARTED_PID"
    log "$backend: seeding $CHAINS chains of 6 levels x $LOTS lots through the API, then $TRACES traces each way"
    ROWS+=("$backend $(python3 "$WORK/helper.py" "$url" "$key" "$CHAINS" "$LOTS" "$BATCH" "$TRACES")")
    stop_pid "$pid"
}

START_DATE="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
mkdir -p "$WORK/sqlite"
bench_backend sqlite "sqlite://$WORK/sqlite/bench.db"
PG_NOTE=""
if [ "$SQLITE_ONLY" -eq 1 ]; then
    PG_NOTE="postgres: skipped (--sqlite-only)"
else
    psql -q "$PG_URL" -c 'SELECT 1' >/dev/null 2>&1 ||
        die "PostgreSQL does not answer at $PG_URL (set PRODOPS_BENCH_PG_URL, or pass --sqlite-only)"
    name="prodops_bench_trace_$$"
    pg_db="$PG_URL"
    if psql -q "$PG_URL" -c "CREATE DATABASE \"$name\"" >/dev/null 2>&1; then
        PG_BENCH_DB="$name"
        pg_db="$(python3 -c '
import sys, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
print(urllib.parse.urlunsplit(u._replace(path="/" + sys.argv[2])))' "$PG_URL" "$name")"
        PG_NOTE="postgres: throwaway database $name (dropped at the end)"
    else
        PG_NOTE="postgres: a fresh organization in the given database"
    fi
    bench_backend postgres "$pg_db"
fi

report() {
    echo "prodops lot trace benchmark, $START_DATE"
    echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'); $(nproc) CPUs; $CHAINS chains x 6 levels x $LOTS lots; median of $TRACES traces each way (target < 1000 ms)"
    [ -n "$PG_NOTE" ] && echo "$PG_NOTE"
    printf '%-9s %12s %9s %14s %12s %9s %12s %12s %9s\n' backend 'ledger rows' 'seed s' 'down median ms' 'down max ms' 'down lots' 'up median ms' 'up max ms' 'up lots'
    local row
    for row in "${ROWS[@]}"; do
        # shellcheck disable=SC2086
        printf '%-9s %12s %9s %14s %12s %9s %12s %12s %9s\n' $row
    done
}

mkdir -p "$ROOT/bench/results"
report | tee "$ROOT/bench/results/lot-trace-$(date -u +%Y%m%d-%H%M%S).txt"
