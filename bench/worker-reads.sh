#!/usr/bin/env bash
# Worker reads benchmark: with 100,000 workers stored, the throughput and p99 latency of
# `GET /api/v2/worker/{id}` and `GET /api/v2/worker?pageSize=100` on SQLite and PostgreSQL,
# each next to the throughput of a trivial axum handler (bench/trivial-server) measured in the
# same run; on PostgreSQL also with two server processes sharing the database (row `pg-2proc`,
# the same connections split between them), and the ratio of two processes to one. On
# PostgreSQL, also `pgbench -M prepared` running exactly the statements each of the two requests
# sends (written by the example `pgbench-reads` from the server's own statement functions), on
# the same machine in the same run, and the server's rate as a share of it (issue 39 item 3:
# targets >= 80%).
# Everything runs on loopback with wrk. See bench/README.md.
#
# Usage: bash bench/worker-reads.sh [--sqlite-only | --postgres-only]
#
# Environment (all optional):
#   PRODOPS_BENCH_PG_URL   PostgreSQL URL (default postgres://postgres@127.0.0.1:5432/test)
#   BENCH_DURATION         seconds per measurement (default 15)
#   BENCH_WARMUP           seconds of warm-up per endpoint (default 3)
#   BENCH_CONNECTIONS      wrk connections (default 32)
#   BENCH_THREADS          wrk threads (default 2)
#   BENCH_WORKERS          workers to store (default 100000)
#   BENCH_PGBENCH_CLIENTS  pgbench clients (default 8; -j is BENCH_THREADS)
#   BENCH_TWO_PROCESSES    0 to leave out the two-process rows (default 1)
#   BENCH_BUILD            0 to use the binaries already built instead of building them
#   CARGO_TARGET_DIR       where cargo puts the binaries (default ./target)
#   BENCH_SERVER           a prodops-server binary to measure instead of this checkout's
#                          (for before/after runs of an older commit; trivial-server is built)
#   BENCH_PGBENCH_READS    the pgbench-reads example of that older commit, so that pgbench runs
#                          the statements that binary sends
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

SQLITE_ONLY=0
POSTGRES_ONLY=0
for arg in "$@"; do
    case "$arg" in
        --sqlite-only) SQLITE_ONLY=1 ;;
        --postgres-only) POSTGRES_ONLY=1 ;;
        -h | --help)
            sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'
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
WORKERS="${BENCH_WORKERS:-100000}"
PGBENCH_CLIENTS="${BENCH_PGBENCH_CLIENTS:-8}"
BATCH=5000
RATE_LIMIT=100000000

# Targets (from the issue): GET /worker/{id} throughput as a share of the trivial handler's,
# and p99 latency at 32 connections.
TARGET_PCT_SQLITE=35
TARGET_PCT_POSTGRES=25
TARGET_LIST_PCT_SQLITE=15
TARGET_LIST_PCT_POSTGRES=8
TARGET_P99_MS=10
# The server's rate as a share of pgbench's for the same statements (issue 39 item 3).
TARGET_PCT_OF_PGBENCH=80

log() { echo "[bench] $*" >&2; }
die() {
    echo "[bench] error: $*" >&2
    exit 1
}

# ----- tools -----------------------------------------------------------------------------------

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
command -v python3 >/dev/null 2>&1 || die "python3 is needed to seed the workers"

if [ "${BENCH_BUILD:-1}" != 0 ]; then
    log "building (release): prodops-server, trivial-server, the pgbench-reads example"
    cargo build --release -p prodops-server -p trivial-server --bins --example pgbench-reads >&2
fi
TARGET_DIR="${CARGO_TARGET_DIR:-target}"
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$ROOT/$TARGET_DIR" ;; esac
SERVER="${BENCH_SERVER:-$TARGET_DIR/release/prodops-server}"
TRIVIAL="$TARGET_DIR/release/trivial-server"
PGBENCH_SCRIPTS="${BENCH_PGBENCH_READS:-$TARGET_DIR/release/examples/pgbench-reads}"
[ -x "$SERVER" ] || die "no binary at $SERVER"
[ -x "$TRIVIAL" ] || die "no binary at $TRIVIAL"

# ----- processes and cleanup -------------------------------------------------------------------

WORK="$(mktemp -d "${TMPDIR:-/tmp}/prodops-bench.XXXXXX")"
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
        log "failed; server logs kept in $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Starts a server (stdout and stderr to $WORK/NAME.{out,err}) and waits for its
# `listening on http://HOST:PORT` line. Sets STARTED_PID and STARTED_URL.
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
        if ! kill -0 "$STARTED_PID" 2>/dev/null; then
            cat "$WORK/$name.err" >&2
            die "$name exited before listening"
        fi
        sleep 0.1
    done
    die "$name did not print its 'listening on' line within 30 s"
}

# ----- wrk -------------------------------------------------------------------------------------

cat >"$WORK/by-id.lua" <<'LUA'
-- GET /api/v2/worker/{id}, a random stored id per request.
local ids = {}
for line in io.lines(os.getenv("BENCH_IDS_FILE")) do
    ids[#ids + 1] = line
end
wrk.headers["X-API-Key"] = os.getenv("BENCH_API_KEY")

local threads = 0
function setup(thread)
    threads = threads + 1
    thread:set("seed", threads)
end

function init(args)
    math.randomseed(os.time() * 1000 + (seed or 0))
end

function request()
    return wrk.format("GET", "/api/v2/worker/" .. ids[math.random(#ids)])
end
LUA

# Runs wrk; prints "REQ_PER_SEC P99_MS ERRORS" (errors: non-2xx/3xx responses + socket errors).
# The full output is kept in $WORK/wrk-LABEL.txt.
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
            if (v ~ /m$/)  return substr(v, 1, length(v) - 1) * 60000
            if (v ~ /s$/)  return substr(v, 1, length(v) - 1) * 1000
            return v + 0
        }
        $1 == "Requests/sec:" { rps = $2 }
        $1 == "99%" { p99 = ms($2) }
        /Non-2xx or 3xx responses:/ { errors += $NF }
        /Socket errors:/ {
            for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+,?$/) { v = $i; sub(",", "", v); errors += v }
        }
        END {
            if (rps == "" || p99 == "") exit 1
            printf "%s %.3f %d\n", rps, p99, errors
        }' "$out" || {
        cat "$out" >&2
        die "could not read the figures from wrk ($label)"
    }
}

# ----- seeding ---------------------------------------------------------------------------------

# seed BASE_URL API_KEY IDS_FILE: stores $WORKERS workers through PUT /api/v2/worker/bulk.
seed() {
    python3 - "$1" "$2" "$3" "$WORKERS" "$BATCH" <<'PY'
import json, sys, time, urllib.request

base, key, ids_file, total, batch = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
ids = []
started = time.monotonic()
for start in range(0, total, batch):
    records = [
        {"name": f"Bench Worker {i:06d}", "customerIdentifier": f"bench-{i:06d}", "status": "active"}
        for i in range(start, min(start + batch, total))
    ]
    req = urllib.request.Request(
        base + "/api/v2/worker/bulk",
        data=json.dumps(records).encode(),
        method="PUT",
        headers={"X-API-Key": key, "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=600) as resp:
            reply = json.load(resp)
    except urllib.error.HTTPError as e:
        sys.exit(f"bulk PUT failed: {e.code} {e.read().decode(errors='replace')[:500]}")
    if reply.get("count") != len(records):
        sys.exit(f"bulk PUT stored {reply.get('count')} of {len(records)} workers")
    ids.extend(reply["ids"])
with open(ids_file, "w") as f:
    f.write("\n".join(ids) + "\n")
print(f"{len(ids)} workers stored in {time.monotonic() - started:.1f} s", file=sys.stderr)
PY
}

# ----- results ---------------------------------------------------------------------------------

ROWS=()       # "backend|endpoint|rps|p99|errors"
TRIVIAL_RPS=() # each trivial measurement

measure_trivial() {
    local when="$1" fig
    log "trivial handler ($when): ${DURATION}s"
    fig="$(run_wrk "trivial-$when" "$DURATION" "$TRIVIAL_URL/")"
    read -r rps p99 errors <<<"$fig"
    TRIVIAL_RPS+=("$rps")
    ROWS+=("trivial|axum fixed JSON ($when)|$rps|$p99|$errors")
}

# bench_backend NAME DATABASE_URL
bench_backend() {
    local backend="$1" db="$2" created key url fig ids_file="$WORK/$1-ids.txt"
    log "$backend: creating an organization"
    created="$("$SERVER" org create --name bench --database "$db" 2>>"$WORK/$backend-admin.err")" ||
        die "org create failed on $backend: $(cat "$WORK/$backend-admin.err")"
    key="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["apiKey"])' "$created")"

    start_server "$backend" "$SERVER" serve --bind 127.0.0.1:0 --database "$db" --rate-limit "$RATE_LIMIT"
    url="$STARTED_URL"
    local pid="$STARTED_PID"
    log "$backend: server at $url; storing $WORKERS workers"
    seed "$url" "$key" "$ids_file"
    if [ "$backend" = postgres ] && command -v psql >/dev/null 2>&1; then
        # What autovacuum does shortly after a bulk load (where it is on): without statistics
        # and a visibility map the planner counts the list's totalCount through the heap.
        log "$backend: VACUUM ANALYZE"
        psql -q "$db" -c 'VACUUM ANALYZE worker, api_keys, organizations' >/dev/null
    fi

    export BENCH_IDS_FILE="$ids_file" BENCH_API_KEY="$key"
    # A sanity check: one read of each kind answers 200.
    local one
    one="$(head -n 1 "$ids_file")"
    for path in "/api/v2/worker/$one" "/api/v2/worker?pageSize=100"; do
        local code
        code="$(curl -s -o /dev/null -w '%{http_code}' -H "X-API-Key: $key" "$url$path")"
        [ "$code" = 200 ] || die "$backend: GET $path answered $code"
    done

    log "$backend: warm-up ${WARMUP}s per endpoint"
    run_wrk "$backend-warm-id" "$WARMUP" -s "$WORK/by-id.lua" "$url" >/dev/null
    run_wrk "$backend-warm-list" "$WARMUP" -H "X-API-Key: $key" "$url/api/v2/worker?pageSize=100" >/dev/null

    log "$backend: GET /worker/{id}: ${DURATION}s"
    fig="$(run_wrk "$backend-id" "$DURATION" -s "$WORK/by-id.lua" "$url")"
    read -r rps p99 errors <<<"$fig"
    ROWS+=("$backend|GET /worker/{id}|$rps|$p99|$errors")

    log "$backend: GET /worker?pageSize=100: ${DURATION}s"
    fig="$(run_wrk "$backend-list" "$DURATION" -H "X-API-Key: $key" "$url/api/v2/worker?pageSize=100")"
    read -r rps p99 errors <<<"$fig"
    ROWS+=("$backend|GET /worker?pageSize=100|$rps|$p99|$errors")

    if [ "$backend" = postgres ]; then
        bench_pgbench "$db" "$created" "$key" "$one"
        if [ "${BENCH_TWO_PROCESSES:-1}" != 0 ]; then
            bench_two_processes "$db" "$key" "$url"
        fi
    fi

    # Let requests that wrk abandoned when it stopped finish before the server is stopped.
    sleep 1
    stop_pid "$pid"
    if grep -qiE ' (ERROR|WARN) ' "$WORK/$backend.err"; then
        log "$backend: the server logged errors or warnings:"
        grep -iE ' (ERROR|WARN) ' "$WORK/$backend.err" | head -n 5 >&2
    fi
}

# bench_pgbench DATABASE_URL ORG_CREATE_JSON API_KEY WORKER_ID: pgbench -M prepared over the
# statements of each read (the `pgbench-reads` example writes them from the server's own
# functions): `GET /worker/{id}` is one statement, the key lookup with the record; the list is one
# statement too, the key lookup joined with the page, as the server sends it. The rows
# `pgbench` give transactions per second, each transaction being one request's statements.
bench_pgbench() {
    local db="$1" created="$2" key="$3" one="$4" dir="$WORK/pgbench" org
    if ! command -v pgbench >/dev/null 2>&1; then
        PGBENCH_NOTE="pgbench: not installed, its rows are missing"
        log "$PGBENCH_NOTE"
        return 0
    fi
    mkdir -p "$dir"
    org="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["organizationId"])' "$created")"
    "$PGBENCH_SCRIPTS" worker "$org" "$key" "$one" 100 "$dir" || die "pgbench-reads failed"
    local defines=()
    mapfile -t defines <"$dir/defines"
    local script label out tps lat
    for script in by-id list; do
        label="GET /worker/{id}"
        [ "$script" = list ] && label="GET /worker?pageSize=100"
        log "pgbench -M prepared -c $PGBENCH_CLIENTS: the statements of $label: ${WARMUP}s + ${DURATION}s"
        pgbench -n -M prepared -c "$PGBENCH_CLIENTS" -j "$THREADS" -T "$WARMUP" \
            -f "$dir/$script.sql" "${defines[@]}" "$db" >/dev/null 2>&1 ||
            die "pgbench failed on $dir/$script.sql"
        out="$(pgbench -n -M prepared -c "$PGBENCH_CLIENTS" -j "$THREADS" -T "$DURATION" \
            -f "$dir/$script.sql" "${defines[@]}" "$db" 2>&1)" || {
            echo "$out" >&2
            die "pgbench failed on $dir/$script.sql"
        }
        echo "$out" >"$WORK/wrk-pgbench-$script.txt"
        tps="$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out" | head -n 1)"
        lat="$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' <<<"$out" | head -n 1)"
        [ -n "$tps" ] || die "could not read pgbench's tps: $out"
        ROWS+=("pgbench|$label|$tps|${lat:-0}|0")
    done
}

# bench_two_processes DATABASE_URL API_KEY FIRST_URL: a second server process on the same
# database, and each endpoint measured with the connections split between the two processes
# (two wrk runs at once, one thread and half the connections each; req/s summed, p99 the worse).
bench_two_processes() {
    local db="$1" key="$2" first="$3" second half=$((CONNECTIONS / 2))
    start_server postgres-2 "$SERVER" serve --bind 127.0.0.1:0 --database "$db" --rate-limit "$RATE_LIMIT"
    second="$STARTED_URL"
    local pid2="$STARTED_PID"
    log "postgres: a second process at $second"
    # both LABEL SECONDS ARGS...: the same wrk arguments against both processes at once (the URL
    # last, as FIRST_URL or FIRST_URL + path), prints "REQ_PER_SEC P99_MS ERRORS".
    both() {
        local label="$1" seconds="$2" target="${*: -1}"
        shift 2
        local args=("${@:1:$#-1}") a b
        (CONNECTIONS=$half THREADS=1 run_wrk "$label-a" "$seconds" "${args[@]}" "$target") >"$WORK/$label-a.fig" &
        a=$!
        (CONNECTIONS=$half THREADS=1 run_wrk "$label-b" "$seconds" "${args[@]}" "${target/$first/$second}") >"$WORK/$label-b.fig" &
        b=$!
        wait "$a" || die "wrk failed ($label, first process)"
        wait "$b" || die "wrk failed ($label, second process)"
        cat "$WORK/$label-a.fig" "$WORK/$label-b.fig" |
            awk '{ rps += $1; if ($2 > p99) p99 = $2; errors += $3 } END { printf "%s %.3f %d\n", rps, p99, errors }'
    }
    log "postgres, two processes: warm-up ${WARMUP}s per endpoint"
    both pg2-warm-id "$WARMUP" -s "$WORK/by-id.lua" "$first" >/dev/null
    both pg2-warm-list "$WARMUP" -H "X-API-Key: $key" "$first/api/v2/worker?pageSize=100" >/dev/null
    local fig
    log "postgres, two processes: GET /worker/{id}: ${DURATION}s"
    fig="$(both pg2-id "$DURATION" -s "$WORK/by-id.lua" "$first")"
    read -r rps p99 errors <<<"$fig"
    ROWS+=("pg-2proc|GET /worker/{id}|$rps|$p99|$errors")
    log "postgres, two processes: GET /worker?pageSize=100: ${DURATION}s"
    fig="$(both pg2-list "$DURATION" -H "X-API-Key: $key" "$first/api/v2/worker?pageSize=100")"
    read -r rps p99 errors <<<"$fig"
    ROWS+=("pg-2proc|GET /worker?pageSize=100|$rps|$p99|$errors")
    sleep 1
    stop_pid "$pid2"
}

# ----- run -------------------------------------------------------------------------------------

START_DATE="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
start_server trivial "$TRIVIAL" --bind 127.0.0.1:0
TRIVIAL_URL="$STARTED_URL"
TRIVIAL_PID="$STARTED_PID"
log "trivial server at $TRIVIAL_URL; warm-up ${WARMUP}s"
run_wrk trivial-warm "$WARMUP" "$TRIVIAL_URL/" >/dev/null
measure_trivial start

BACKENDS=()
[ "$SQLITE_ONLY" -eq 1 ] && [ "$POSTGRES_ONLY" -eq 1 ] && die "--sqlite-only and --postgres-only exclude each other"
if [ "$POSTGRES_ONLY" -eq 0 ]; then
    BACKENDS+=("sqlite")
    mkdir -p "$WORK/sqlite"
    bench_backend sqlite "sqlite://$WORK/sqlite/bench.db"
fi

PG_NOTE=""
PGBENCH_NOTE=""
if [ "$SQLITE_ONLY" -eq 1 ]; then
    PG_NOTE="postgres: skipped (--sqlite-only)"
    log "$PG_NOTE"
else
    # A throwaway database when the URL's user may create one, so that the bench neither leaves
    # 100,000 workers behind nor shares tables with anything else; otherwise a fresh organization
    # in the given database (its data is isolated by organization).
    pg_db="$PG_URL"
    if command -v psql >/dev/null 2>&1; then
        psql -q "$PG_URL" -c 'SELECT 1' >/dev/null 2>&1 ||
            die "PostgreSQL does not answer at $PG_URL (set PRODOPS_BENCH_PG_URL, or pass --sqlite-only)"
        name="prodops_bench_$$"
        if psql -q "$PG_URL" -c "CREATE DATABASE \"$name\"" >/dev/null 2>&1; then
            PG_BENCH_DB="$name"
            pg_db="$(python3 -c '
import sys, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
print(urllib.parse.urlunsplit(u._replace(path="/" + sys.argv[2])))' "$PG_URL" "$name")"
            PG_NOTE="postgres: throwaway database $name (dropped at the end); VACUUM ANALYZE after seeding"
        else
            PG_NOTE="postgres: a fresh organization in the given database (no CREATE DATABASE right); VACUUM ANALYZE after seeding"
        fi
    else
        PG_NOTE="postgres: a fresh organization in the given database (psql not installed)"
    fi
    log "$PG_NOTE"
    BACKENDS+=("postgres")
    bench_backend postgres "$pg_db"
fi

measure_trivial end
stop_pid "$TRIVIAL_PID"

# ----- report ----------------------------------------------------------------------------------

TRIVIAL_MEAN="$(printf '%s\n' "${TRIVIAL_RPS[@]}" | awk '{ s += $1 } END { printf "%.2f", s / NR }')"
FAILED=0

report() {
    echo "prodops worker-reads benchmark, $START_DATE"
    echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)'); $(nproc) CPUs; $(wrk --version 2>&1 | head -n 1 | cut -d' ' -f1-2)"
    echo "$WORKERS workers stored; wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s --latency on loopback, after ${WARMUP}s of warm-up per endpoint"
    echo "trivial handler: mean of the measurements at the start and at the end = $TRIVIAL_MEAN req/s"
    [ -n "$PG_NOTE" ] && echo "$PG_NOTE"
    [ -n "$PGBENCH_NOTE" ] && echo "$PGBENCH_NOTE"
    echo "rows pgbench: -M prepared -c$PGBENCH_CLIENTS -j$THREADS, transactions/s of each request's own statements (p99 column: pgbench's mean latency)"
    echo
    printf '%-9s %-30s %11s %9s %11s %7s  %s\n' backend endpoint 'req/s' 'p99 ms' '% trivial' errors targets
    printf '%-9s %-30s %11s %9s %11s %7s  %s\n' --------- ------------------------------ ----------- --------- ----------- ------- -------
    local row backend endpoint rps p99 errors pct targets min verdict
    for row in "${ROWS[@]}"; do
        IFS='|' read -r backend endpoint rps p99 errors <<<"$row"
        pct="$(awk -v a="$rps" -v b="$TRIVIAL_MEAN" 'BEGIN { printf "%.1f", 100 * a / b }')"
        targets="-"
        if [ "$backend" != trivial ] && [ "$backend" != pgbench ]; then
            targets=""
            if [ "$backend" != pg-2proc ]; then
                if [ "$endpoint" = "GET /worker/{id}" ]; then
                    min=$TARGET_PCT_SQLITE
                    [ "$backend" = postgres ] && min=$TARGET_PCT_POSTGRES
                else
                    min=$TARGET_LIST_PCT_SQLITE
                    [ "$backend" = postgres ] && min=$TARGET_LIST_PCT_POSTGRES
                fi
                verdict="$(awk -v p="$pct" -v m="$min" 'BEGIN { print (p >= m ? "PASS" : "FAIL") }')"
                [ "$verdict" = FAIL ] && FAILED=$((FAILED + 1))
                targets="throughput >= ${min}%: $verdict; "
            fi
            verdict="$(awk -v p="$p99" -v m="$TARGET_P99_MS" 'BEGIN { print (p < m ? "PASS" : "FAIL") }')"
            [ "$verdict" = FAIL ] && FAILED=$((FAILED + 1))
            targets="${targets}p99 < ${TARGET_P99_MS} ms: $verdict"
            if [ "$errors" -gt 0 ]; then
                FAILED=$((FAILED + 1))
                targets="$targets; $errors failed requests: FAIL"
            fi
        fi
        printf '%-9s %-30s %11.0f %9.2f %10s%% %7s  %s\n' "$backend" "$endpoint" "$rps" "$p99" "$pct" "$errors" "$targets"
    done
    local one two pg
    for endpoint in "GET /worker/{id}" "GET /worker?pageSize=100"; do
        one="" two="" pg=""
        for row in "${ROWS[@]}"; do
            IFS='|' read -r backend e rps _ <<<"$row"
            [ "$e" = "$endpoint" ] || continue
            [ "$backend" = postgres ] && one="$rps"
            [ "$backend" = pg-2proc ] && two="$rps"
            [ "$backend" = pgbench ] && pg="$rps"
        done
        if [ -n "$one" ] && [ -n "$two" ]; then
            awk -v e="$endpoint" -v a="$two" -v b="$one" \
                'BEGIN { printf "postgres, two processes against one, %s: %.2f\n", e, a / b }'
        fi
        if [ -n "$one" ] && [ -n "$pg" ]; then
            verdict="$(awk -v a="$one" -v b="$pg" -v m="$TARGET_PCT_OF_PGBENCH" 'BEGIN { print (100 * a / b >= m ? "PASS" : "FAIL") }')"
            [ "$verdict" = FAIL ] && FAILED=$((FAILED + 1))
            awk -v e="$endpoint" -v a="$one" -v b="$pg" -v m="$TARGET_PCT_OF_PGBENCH" -v v="$verdict" \
                'BEGIN { printf "postgres server against pgbench of its statements, %s: %.1f%% (>= %d%%: %s)\n", e, 100 * a / b, m, v }'
        fi
    done
    echo
    if [ "$FAILED" -eq 0 ]; then
        echo "all targets met"
    else
        echo "$FAILED target(s) missed"
    fi
}

mkdir -p "$ROOT/bench/results"
RESULT_FILE="$ROOT/bench/results/worker-reads-$(date -u +%Y%m%d-%H%M%S).txt"
report | tee "$RESULT_FILE"
# wrk's full output of every run and the servers' warnings and errors, for a closer look.
{
    # shellcheck disable=SC2012 # names without spaces, in the order they were written
    for f in $(ls -tr "$WORK"/wrk-*.txt); do
        echo "===== wrk: $(basename "$f" .txt | sed "s/^wrk-//")"
        cat "$f"
    done
    for backend in "${BACKENDS[@]}"; do
        echo "===== prodops-server ($backend): warnings and errors"
        grep -E ' (ERROR|WARN) ' "$WORK/$backend.err" || echo "(none)"
    done
} >"${RESULT_FILE%.txt}.log"
REL="${RESULT_FILE#"$ROOT"/}"
echo "(written to $REL; wrk's full output in ${REL%.txt}.log)"
