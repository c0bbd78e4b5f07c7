#!/usr/bin/env bash
# Inventory benchmark: postings per second through `POST /api/v2/inventory-transaction` at 32
# connections (random transfers and adjustments over 8 items and 4 locations, so concurrent
# requests contend for the same stock rows), and the latency of a produce call (and a consume
# call) on an order with 200 output declarations and 200 BOM lines, each posting 200 ledger
# rows. SQLite and PostgreSQL. See bench/README.md.
#
# Usage: bash bench/inventory.sh [--sqlite-only]
#
# Environment (all optional):
#   PRODOPS_BENCH_PG_URL   PostgreSQL URL (default postgres://postgres@127.0.0.1:5432/test)
#   BENCH_DURATION         seconds of the postings measurement (default 15)
#   BENCH_WARMUP           seconds of warm-up (default 3)
#   BENCH_CONNECTIONS      wrk connections (default 32)
#   BENCH_THREADS          wrk threads (default 2)
#   BENCH_PRODUCE_CALLS    produce (and consume) calls timed (default 30)
#   CARGO_TARGET_DIR       where cargo puts the binaries (default ./target)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

SQLITE_ONLY=0
for arg in "$@"; do
    case "$arg" in
        --sqlite-only) SQLITE_ONLY=1 ;;
        -h | --help)
            sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "unknown argument: $arg (try --help)" >&2
            exit 2
            ;;
    esac
done

PG_URL="${PRODOPS_BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432/test}"
DURATION="${BENCH_DURATION:-15}"
WARMUP="${BENCH_WARMUP:-3}"
CONNECTIONS="${BENCH_CONNECTIONS:-32}"
THREADS="${BENCH_THREADS:-2}"
PRODUCE_CALLS="${BENCH_PRODUCE_CALLS:-30}"
RATE_LIMIT=100000000

log() { echo "[bench] $*" >&2; }
die() {
    echo "[bench] error: $*" >&2
    exit 1
}

if ! command -v wrk >/dev/null 2>&1; then
    log "installing wrk"
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    if ! $SUDO apt-get install -y wrk >/dev/null 2>&1; then
        $SUDO apt-get update >/dev/null
        $SUDO apt-get install -y wrk >/dev/null
    fi
fi
command -v wrk >/dev/null 2>&1 || die "wrk is not installed and could not be installed"
command -v python3 >/dev/null 2>&1 || die "python3 is needed to seed the data"

log "building (release): prodops-server"
cargo build --release -p prodops-server >&2
TARGET_DIR="${CARGO_TARGET_DIR:-target}"
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$ROOT/$TARGET_DIR" ;; esac
SERVER="$TARGET_DIR/release/prodops-server"
[ -x "$SERVER" ] || die "no binary at $SERVER"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/prodops-bench-inv.XXXXXX")"
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

# The wrk script: a random transfer (2 in 3) or adjustment (+1 or -1) of one unit per request.
cat >"$WORK/postings.lua" <<'LUA'
local items, locations = {}, {}
for line in io.lines(os.getenv("BENCH_ITEMS_FILE")) do items[#items + 1] = line end
for line in io.lines(os.getenv("BENCH_LOCATIONS_FILE")) do locations[#locations + 1] = line end
wrk.method = "POST"
wrk.headers["X-API-Key"] = os.getenv("BENCH_API_KEY")
wrk.headers["Content-Type"] = "application/json"
local threads = 0
function setup(thread)
    threads = threads + 1
    thread:set("seed", threads)
end
function init(args)
    math.randomseed(os.time() * 1000 + (seed or 0))
end
function request()
    local item = items[math.random(#items)]
    local from = math.random(#locations)
    local to = from % #locations + 1
    local body
    if math.random(3) == 1 then
        local q = (math.random(2) == 1) and 1 or -1
        body = string.format('{"itemId":"%s","type":"adjust","quantity":%d,"toLocationId":"%s"}', item, q, locations[to])
    else
        body = string.format('{"itemId":"%s","type":"transfer","quantity":1,"fromLocationId":"%s","toLocationId":"%s"}', item, locations[from], locations[to])
    end
    return wrk.format(nil, "/api/v2/inventory-transaction", nil, body)
end
LUA

run_wrk() {
    local label="$1" seconds="$2"
    shift 2
    local out="$WORK/wrk-$label.txt"
    wrk --latency -t "$THREADS" -c "$CONNECTIONS" -d "${seconds}s" --timeout 10s "$@" >"$out" 2>&1 ||
        {
            cat "$out" >&2
            die "wrk failed ($label)"
        }
    awk '
        function ms(v) {
            if (v ~ /us$/) return substr(v, 1, length(v) - 2) / 1000
            if (v ~ /ms$/) return substr(v, 1, length(v) - 2) + 0
            if (v ~ /s$/)  return substr(v, 1, length(v) - 1) * 1000
            return v + 0
        }
        $1 == "Requests/sec:" { rps = $2 }
        $1 == "50%" { p50 = ms($2) }
        $1 == "99%" { p99 = ms($2) }
        /Non-2xx or 3xx responses:/ { errors += $NF }
        /Socket errors:/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+,?$/) { v = $i; sub(",", "", v); errors += v } }
        END { if (rps == "") exit 1; printf "%s %.3f %.3f %d\n", rps, p50, p99, errors }' "$out" ||
        die "could not read the figures from wrk ($label)"
}

# Python helper: seeds the data, checks stock == sum of ledger after the load, and times the
# produce and consume calls. Subcommands: seed, check, produce.
cat >"$WORK/helper.py" <<'PY'
import json, statistics, sys, time, urllib.request

def call(base, key, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + "/api/v2" + path, data=data, method=method,
                                 headers={"X-API-Key": key, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=600) as resp:
            text = resp.read()
            return json.loads(text) if text else None
    except urllib.error.HTTPError as e:
        sys.exit(f"{method} {path} failed: {e.code} {e.read().decode(errors='replace')[:500]}")

def everything(base, key, resource):
    rows, page = [], 1
    while True:
        got = call(base, key, "GET", f"/{resource}?pageSize=10000&page={page}")["values"]
        rows += got
        if len(got) < 10000:
            return rows
        page += 1

cmd, base, key, work = sys.argv[1:5]
if cmd == "seed":
    shop = call(base, key, "POST", "/shop", {"name": "Bench shop"})["id"]
    locs = call(base, key, "PUT", "/location/bulk", [{"name": f"L{i}", "shopId": shop} for i in range(4)])["ids"]
    items = call(base, key, "PUT", "/item/bulk", [{"name": f"Stock item {i}"} for i in range(8)])["ids"]
    for item in items:
        for loc in locs:
            call(base, key, "POST", "/inventory-transaction", {"itemId": item, "type": "adjust", "quantity": 1000000, "toLocationId": loc})
    open(f"{work}/items.txt", "w").write("\n".join(items) + "\n")
    open(f"{work}/locations.txt", "w").write("\n".join(locs) + "\n")
elif cmd == "check":
    ledger = everything(base, key, "inventory-transaction")
    sums = {}
    for r in ledger:
        q = round(r["quantity"] * 1e6)
        if r["type"] == "adjust":
            sums[(r["itemId"], r["toLocationId"] or r["fromLocationId"])] = sums.get((r["itemId"], r["toLocationId"] or r["fromLocationId"]), 0) + q
        elif r["type"] == "transfer":
            sums[(r["itemId"], r["fromLocationId"])] = sums.get((r["itemId"], r["fromLocationId"]), 0) - q
            sums[(r["itemId"], r["toLocationId"])] = sums.get((r["itemId"], r["toLocationId"]), 0) + q
    bad = 0
    for s in everything(base, key, "stock"):
        if round(s["onHand"] * 1e6) != sums.get((s["itemId"], s["locationId"]), 0):
            bad += 1
    print(f"{len(ledger)} {bad}")
elif cmd == "produce":
    calls = int(sys.argv[5])
    shop = call(base, key, "POST", "/shop", {"name": "Production shop"})["id"]
    out_loc = call(base, key, "POST", "/location", {"name": "Finished", "shopId": shop})["id"]
    raw_loc = call(base, key, "POST", "/location", {"name": "Raw", "shopId": shop})["id"]
    order = call(base, key, "POST", "/deliverable", {"name": "Bench order", "type": "order", "quantity": 1})["id"]
    outputs = call(base, key, "PUT", "/item/bulk", [{"name": f"Output {i}"} for i in range(200)])["ids"]
    materials = call(base, key, "PUT", "/item/bulk", [{"name": f"Material {i}", "defaultLocationId": raw_loc} for i in range(200)])["ids"]
    call(base, key, "PUT", "/production-output/bulk", [{"itemId": i, "orderDeliverableId": order, "producedPerUnit": 1, "locationId": out_loc} for i in outputs])
    call(base, key, "PUT", "/bom-line/bulk", [{"itemId": i, "orderDeliverableId": order, "quantity": 1000000} for i in materials])
    for m in materials:
        call(base, key, "POST", "/inventory-transaction", {"itemId": m, "type": "adjust", "quantity": 1000000, "toLocationId": raw_loc})
    lines = [{"itemId": m, "quantity": 1} for m in materials]
    def timed(path, body):
        times = []
        for _ in range(calls):
            t = time.perf_counter()
            v = call(base, key, "POST", path, body)["value"]
            times.append((time.perf_counter() - t) * 1000)
            assert len(v["transactions"]) == 200, len(v["transactions"])
        times.sort()
        return statistics.median(times), times[max(0, int(len(times) * 0.95) - 1)], times[-1]
    call(base, key, "POST", "/production/produce", {"deliverableId": order})  # warm-up
    p = timed("/production/produce", {"deliverableId": order})
    c = timed("/production/consume", {"deliverableId": order, "lines": lines})
    print("%.1f %.1f %.1f %.1f %.1f %.1f" % (p + c))
PY

ROWS=()

bench_backend() {
    local backend="$1" db="$2" created key url fig
    created="$("$SERVER" org create --name bench --database "$db" 2>>"$WORK/$backend-admin.err")" ||
        die "org create failed on $backend: $(cat "$WORK/$backend-admin.err")"
    key="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["apiKey"])' "$created")"
    start_server "$backend" "$SERVER" serve --bind 127.0.0.1:0 --database "$db" --rate-limit "$RATE_LIMIT"
    url="$STARTED_URL"
    local pid="$STARTED_PID"
    log "$backend: seeding 8 items x 4 locations"
    python3 "$WORK/helper.py" seed "$url" "$key" "$WORK/$backend"
    export BENCH_API_KEY="$key" BENCH_ITEMS_FILE="$WORK/$backend/items.txt" BENCH_LOCATIONS_FILE="$WORK/$backend/locations.txt"
    log "$backend: warm-up ${WARMUP}s"
    run_wrk "$backend-warm" "$WARMUP" -s "$WORK/postings.lua" "$url" >/dev/null
    log "$backend: POST /inventory-transaction: ${DURATION}s at $CONNECTIONS connections"
    fig="$(run_wrk "$backend-post" "$DURATION" -s "$WORK/postings.lua" "$url")"
    read -r rps p50 p99 errors <<<"$fig"
    sleep 1
    read -r rows bad <<<"$(python3 "$WORK/helper.py" check "$url" "$key" "$WORK/$backend")"
    log "$backend: timing $PRODUCE_CALLS produce and consume calls of 200 rows"
    read -r pm p95 pmax cm c95 cmax <<<"$(python3 "$WORK/helper.py" produce "$url" "$key" "$WORK/$backend" "$PRODUCE_CALLS")"
    ROWS+=("$backend|$rps|$p50|$p99|$errors|$rows|$bad|$pm|$p95|$pmax|$cm|$c95|$cmax")
    stop_pid "$pid"
}

START_DATE="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
mkdir -p "$WORK/sqlite" "$WORK/postgres"
bench_backend sqlite "sqlite://$WORK/sqlite/bench.db"
PG_NOTE=""
if [ "$SQLITE_ONLY" -eq 1 ]; then
    PG_NOTE="postgres: skipped (--sqlite-only)"
else
    psql -q "$PG_URL" -c 'SELECT 1' >/dev/null 2>&1 ||
        die "PostgreSQL does not answer at $PG_URL (set PRODOPS_BENCH_PG_URL, or pass --sqlite-only)"
    name="prodops_bench_inv_$$"
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
    echo "prodops inventory benchmark, $START_DATE"
    echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'); $(nproc) CPUs; wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s on loopback after ${WARMUP}s warm-up"
    [ -n "$PG_NOTE" ] && echo "$PG_NOTE"
    echo
    echo "POST /inventory-transaction (random transfers and adjustments, 8 items x 4 locations):"
    printf '%-9s %11s %9s %9s %7s %12s %14s\n' backend 'postings/s' 'p50 ms' 'p99 ms' errors 'ledger rows' 'stock!=ledger'
    local row
    for row in "${ROWS[@]}"; do
        IFS='|' read -r b rps p50 p99 errors rows bad _ <<<"$row"
        printf '%-9s %11.0f %9.2f %9.2f %7s %12s %14s\n' "$b" "$rps" "$p50" "$p99" "$errors" "$rows" "$bad"
    done
    echo
    echo "Order with 200 output declarations and 200 BOM lines; each call posts 200 ledger rows ($PRODUCE_CALLS calls, one at a time):"
    printf '%-9s %-8s %10s %10s %10s\n' backend call 'median ms' 'p95 ms' 'max ms'
    for row in "${ROWS[@]}"; do
        IFS='|' read -r b _ _ _ _ _ _ pm p95 pmax cm c95 cmax <<<"$row"
        printf '%-9s %-8s %10s %10s %10s\n' "$b" produce "$pm" "$p95" "$pmax"
        printf '%-9s %-8s %10s %10s %10s\n' "$b" consume "$cm" "$c95" "$cmax"
    done
}

mkdir -p "$ROOT/bench/results"
report | tee "$ROOT/bench/results/inventory-$(date -u +%Y%m%d-%H%M%S).txt"
