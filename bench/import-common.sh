# What the benches that start their own server share: the binaries (a release build), a work
# directory and throwaway PostgreSQL databases removed on exit, the server on the embedded
# default or on PostgreSQL, new organizations, and `prodops` timed with its peak memory. Sourced
# by the two CLI import benches (worker-import-export.sh, deliverable-import-export.sh) and by
# dependencies.sh, after `set -euo pipefail`, with `ROOT` set and `HELP_LINES` the line range
# of the caller's usage text (`2,21`).
#
# A caller that reads its own arguments sets `BENCH_OWN_ARGS=1` (then `BACKEND` is its to set
# before each `start_server`), and one that needs only the server sets
# `BENCH_PACKAGES="-p prodops-server"` (default: the server and the CLI).

cd "$ROOT"
BACKEND=sqlite
if [[ -z "${BENCH_OWN_ARGS:-}" ]]; then
    case "${1:-}" in
        -h | --help) sed -n "${HELP_LINES}p" "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        --postgres) BACKEND=postgres ;;
        "") ;;
        *) echo "unknown argument: $1 (try --help)" >&2; exit 2 ;;
    esac
fi
PROCESSES="${BENCH_PROCESSES:-1}"
if [[ "$PROCESSES" != 1 && -z "${BENCH_OWN_ARGS:-}" && "$BACKEND" != postgres ]]; then
    echo "BENCH_PROCESSES=$PROCESSES needs --postgres (server processes share a PostgreSQL database)" >&2; exit 2
fi
PG_URL="${PRODOPS_BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432/test}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
mkdir -p "$ROOT/bench/results"
[[ -x /usr/bin/time ]] || { echo "installing time" >&2; apt-get install -y -qq time >/dev/null; }

if [[ -n "${BENCH_BIN_DIR:-}" ]]; then
    BIN="$BENCH_BIN_DIR"
else
    # shellcheck disable=SC2086 # the package flags are words
    cargo build --release --locked -q ${BENCH_PACKAGES:--p prodops-server -p prodops-cli}
    BIN="$TARGET/release"
fi
SERVER="$BIN/prodops-server"
PRODOPS="$BIN/prodops"

WORK="$(mktemp -d)"
SERVER_PID=""
# Every server process of the run (more than one with BENCH_PROCESSES on PostgreSQL), and the
# balancer in front of them.
SERVER_PIDS=()
BALANCER_PID=""
PG_DBS=()
# pg_url NAME: the bench's URL with its database replaced by NAME.
pg_url() {
    python3 -c 'import sys, urllib.parse as p; u = p.urlsplit(sys.argv[1]); print(p.urlunsplit(u._replace(path="/" + sys.argv[2])))' "$PG_URL" "$1"
}
# new_pg_db VAR: creates a throwaway database (dropped on exit) and sets VAR to its URL; not in
# a subshell, so that the exit trap knows it.
new_pg_db() {
    local name="prodops_bench_import_$$_${#PG_DBS[@]}"
    psql -q "$PG_URL" -c "CREATE DATABASE \"$name\"" >/dev/null || { echo "cannot create a database at $PG_URL" >&2; exit 1; }
    PG_DBS+=("$name")
    printf -v "$1" '%s' "$(pg_url "$name")"
}
# stop_processes PID...: stops each and waits for it (a process killed by the signal answers 143,
# which is no failure here).
stop_processes() {
    local pid
    for pid in "$@"; do
        kill "$pid" 2>/dev/null || continue
        wait "$pid" 2>/dev/null || true
    done
}
cleanup() {
    # The trap runs under `set -e` too: nothing here may end it before the databases are dropped.
    set +e
    stop_processes "${SERVER_PIDS[@]}" $BALANCER_PID
    for db in "${PG_DBS[@]}"; do psql -q "$PG_URL" -c "DROP DATABASE IF EXISTS \"$db\"" >/dev/null 2>&1; done
    rm -rf "$WORK"
}
trap cleanup EXIT

# start_server: the server on a fresh database of the chosen backend (`DB`), its address in
# `BASE`. With BENCH_PROCESSES=N (PostgreSQL only), N server processes on that one database
# behind bench/round-robin.py, each connection of the CLI to the next process in turn: `BASE`
# is the balancer's address, `SERVER_PIDS` every process (`SERVER_PID` the first).
start_server() {
    if [[ "$BACKEND" == postgres ]]; then new_pg_db DB; else DB="sqlite://$WORK/prodops.db"; fi
    if [[ "$PROCESSES" != 1 && "$BACKEND" != postgres ]]; then
        echo "BENCH_PROCESSES=$PROCESSES needs PostgreSQL (server processes share its database)" >&2; exit 2
    fi
    SERVER_PIDS=()
    local addresses=() i
    for ((i = 0; i < PROCESSES; i++)); do
        "$SERVER" serve --bind 127.0.0.1:0 --database "$DB" --rate-limit 1000000000 > "$WORK/server$i.out" 2> "$WORK/server$i.log" &
        SERVER_PIDS+=($!)
        for _ in $(seq 100); do grep -q listening "$WORK/server$i.out" 2>/dev/null && break; sleep 0.1; done
        addresses+=("$(sed -n 's/^listening on //p' "$WORK/server$i.out")")
        [[ -n "${addresses[$i]}" ]] || { echo "the server did not start:" >&2; cat "$WORK/server$i.log" >&2; exit 1; }
    done
    SERVER_PID="${SERVER_PIDS[0]}"
    BASE="${addresses[0]}"
    if [[ "$PROCESSES" != 1 ]]; then
        python3 "$ROOT/bench/round-robin.py" "${addresses[@]}" > "$WORK/balancer.out" 2> "$WORK/balancer.log" &
        BALANCER_PID=$!
        for _ in $(seq 100); do grep -q listening "$WORK/balancer.out" 2>/dev/null && break; sleep 0.1; done
        BASE="$(sed -n 's/^listening on //p' "$WORK/balancer.out")"
        [[ -n "$BASE" ]] || { echo "the balancer did not start:" >&2; cat "$WORK/balancer.log" >&2; exit 1; }
    fi
}

# stop_server: stops what `start_server` started (the exit trap does it otherwise).
stop_server() {
    stop_processes "${SERVER_PIDS[@]}" $BALANCER_PID
    SERVER_PIDS=()
    SERVER_PID=""
    BALANCER_PID=""
    return 0
}

# new_key NAME: creates an organization; prints "apiKey organizationId".
new_key() { "$SERVER" org create --name "$1" --database "$DB" | python3 -c 'import json,sys; o = json.load(sys.stdin); print(o["apiKey"], o["organizationId"])'; }

# Runs prodops under /usr/bin/time -v; prints "seconds peak_kib".
timed() { # key, args...
    local key="$1"; shift
    PRODOPS_BASE_URL="$BASE" PRODOPS_API_KEY="$key" PRODOPS_CONFIG_DIR="$WORK/cfg" PRODOPS_CREDENTIAL_STORE=file \
        /usr/bin/time -v -o "$WORK/time.txt" "$PRODOPS" "$@" > "$WORK/stdout.txt" 2> "$WORK/stderr.txt" || {
        echo "prodops $* failed:" >&2; tail -20 "$WORK/stderr.txt" >&2; exit 1; }
    local wall kib
    wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$WORK/time.txt" |
        python3 -c 'import sys; p=sys.stdin.read().strip().split(":"); print(sum(float(x)*60**i for i,x in enumerate(reversed(p))))')
    kib=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$WORK/time.txt")
    echo "$wall $kib"
}
