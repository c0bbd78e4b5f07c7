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
# level, every lot before it and every receipt. Beside the wall times, the CPU time the traces
# cost the server and its PostgreSQL backends (from /proc), steadier on a shared machine.
#
# Usage: bash bench/lot-trace.sh [--sqlite-only | --postgres-only] [--server PATH]
#
# Environment (all optional):
#   PRODOPS_BENCH_PG_URL   PostgreSQL URL (default postgres://postgres@127.0.0.1:5432/test); the
#                          bench creates a throwaway database beside it, dropped at the end
#   BENCH_CHAINS           chains (default 4)
#   BENCH_LOTS             lots per level of a chain (default 2300)
#   BENCH_BATCH            lots per receive, consume or produce call (default 500)
#   BENCH_TRACES           traces timed each way (default 5; the median is reported)
#   BENCH_SERVER           a prodops-server binary to measure instead of building this checkout
#                          (as --server PATH; to measure another commit)
#   CARGO_TARGET_DIR       where cargo puts the binaries (default ./target)
#
# The build, the server, its throwaway databases and the organizations come from
# bench/import-common.sh.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

SQLITE_ONLY=0
POSTGRES_ONLY=0
while [ $# -gt 0 ]; do
    case "$1" in
        --sqlite-only) SQLITE_ONLY=1 ;;
        --postgres-only) POSTGRES_ONLY=1 ;;
        --server)
            BENCH_SERVER="$2"
            shift
            ;;
        -h | --help)
            sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "unknown argument: $1 (try --help)" >&2
            exit 2
            ;;
    esac
    shift
done

log() { echo "[bench] $*" >&2; }
die() {
    echo "[bench] error: $*" >&2
    exit 1
}

command -v python3 >/dev/null 2>&1 || die "python3 is needed to seed the data"
if [[ -n "${BENCH_SERVER:-}" ]]; then
    BENCH_BIN_DIR="$(dirname "$BENCH_SERVER")"
else
    log "building (release): prodops-server"
fi
BENCH_OWN_ARGS=1
BENCH_PACKAGES="-p prodops-server"
HELP_LINES=2,30
source "$ROOT/bench/import-common.sh"
SERVER="${BENCH_SERVER:-$SERVER}"
[[ -x "$SERVER" ]] || die "no binary at $SERVER"

CHAINS="${BENCH_CHAINS:-4}"
LOTS="${BENCH_LOTS:-2300}"
BATCH="${BENCH_BATCH:-500}"
TRACES="${BENCH_TRACES:-5}"

# Seeds the chains through the API, then times the traces. Prints: rows seconds-to-seed, then
# each way median-ms max-ms cpu-ms lots (cpu: the server's and, on PostgreSQL, its backends'
# user + system time over the timed traces, per trace).
cat >"$WORK/helper.py" <<'PY'
import json, os, statistics, subprocess, sys, time, urllib.request

base, key = sys.argv[1], sys.argv[2]
chains, lots, batch, traces = (int(a) for a in sys.argv[3:7])
server_pid, pg_db = int(sys.argv[7]), sys.argv[8]

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

def cpu_ms():
    """User + system time of the server and of its PostgreSQL backends, in ms."""
    pids = [server_pid]
    if pg_db:
        out = subprocess.run(["psql", "-Atq", pg_db, "-c",
                              "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                              "AND pid <> pg_backend_pid()"], capture_output=True, text=True, check=True)
        pids += [int(p) for p in out.stdout.split()]
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total * 1000 / os.sysconf("SC_CLK_TCK")

def timed(lot, direction):
    call("GET", f"/lot/{lot}/trace?direction={direction}")  # warm-up
    times, size = [], 0
    before = cpu_ms()
    for _ in range(traces):
        t = time.perf_counter()
        v = call("GET", f"/lot/{lot}/trace?direction={direction}")
        times.append((time.perf_counter() - t) * 1000)
        size = sum(1 for n in v["nodes"] if n["kind"] == "lot")
    cpu = (cpu_ms() - before) / traces
    return statistics.median(times), max(times), cpu, size

d = timed(starts[0], "down")
u = timed(ends[0], "up")
print(rows, "%.0f" % seeded, "%.1f %.1f %.0f %d" % d, "%.1f %.1f %.0f %d" % u)
PY

ROWS=()

# bench_backend BACKEND: a fresh database of BACKEND, seeded and traced.
bench_backend() {
    BACKEND="$1"
    start_server
    local key pg_db=""
    read -r key _ < <(new_key bench)
    [[ "$BACKEND" == postgres ]] && pg_db="$DB"
    log "$BACKEND: seeding $CHAINS chains of 6 levels x $LOTS lots through the API, then $TRACES traces each way"
    ROWS+=("$BACKEND $(python3 "$WORK/helper.py" "$BASE" "$key" "$CHAINS" "$LOTS" "$BATCH" "$TRACES" "$SERVER_PID" "$pg_db")")
    stop_server
}

START_DATE="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
LOAD="$(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$POSTGRES_ONLY" -eq 0 ]; then
    bench_backend sqlite
fi
if [ "$SQLITE_ONLY" -eq 1 ]; then
    PG_NOTE="postgres: skipped (--sqlite-only)"
else
    psql -q "$PG_URL" -c 'SELECT 1' >/dev/null 2>&1 ||
        die "PostgreSQL does not answer at $PG_URL (set PRODOPS_BENCH_PG_URL, or pass --sqlite-only)"
    PG_NOTE="postgres: a throwaway database beside $PG_URL (dropped at the end)"
    bench_backend postgres
fi

report() {
    echo "prodops lot trace benchmark, $START_DATE"
    echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'); server $SERVER; $(nproc) CPUs, load average at the start $LOAD, at the end $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "$CHAINS chains x 6 levels x $LOTS lots; median of $TRACES traces each way (target < 1000 ms); cpu ms: server + PostgreSQL backends, per trace"
    echo "$PG_NOTE"
    printf '%-9s %12s %7s %12s %9s %8s %9s %10s %7s %8s %9s\n' backend 'ledger rows' 'seed s' 'down med ms' 'max ms' 'cpu ms' 'lots' 'up med ms' 'max ms' 'cpu ms' 'lots'
    local row
    for row in "${ROWS[@]}"; do
        # shellcheck disable=SC2086
        printf '%-9s %12s %7s %12s %9s %8s %9s %10s %7s %8s %9s\n' $row
    done
}

report | tee "$ROOT/bench/results/lot-trace-$(date -u +%Y%m%d-%H%M%S).txt"
