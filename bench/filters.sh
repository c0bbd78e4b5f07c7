#!/usr/bin/env bash
# Filtered reads benchmark (issue 14, item 2): with 200,000 workers (2% inactive) and 100,000
# orders (2% with the custom property `priority` = `hold`) stored, the median time of filtered
# lists and counts next to the same unfiltered page, measured side by side on one keep-alive
# connection (40 interleaved rounds), on SQLite and on PostgreSQL. Prints each median and the
# ratio filtered / unfiltered (target: at most 2). See bench/README.md.
#
# Usage: bash bench/filters.sh [--sqlite-only]
#
# Environment (all optional):
#   PRODOPS_BENCH_PG_URL   PostgreSQL URL (default postgres://postgres@127.0.0.1:5432/test)
#   BENCH_WORKERS          workers to store (default 200000)
#   BENCH_ORDERS           orders to store (default 100000)
#   BENCH_ROUNDS           interleaved rounds (default 40)
#   CARGO_TARGET_DIR       where cargo puts the binaries (default ./target)
#   BENCH_SERVER           a prodops-server binary to measure instead of building this checkout
#                          (for before/after runs of an older commit)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

SQLITE_ONLY=0
for arg in "$@"; do
    case "$arg" in
        --sqlite-only) SQLITE_ONLY=1 ;;
        -h | --help)
            sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "unknown argument: $arg (try --help)" >&2
            exit 2
            ;;
    esac
done

PG_URL="${PRODOPS_BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432/test}"
export BENCH_WORKERS="${BENCH_WORKERS:-200000}"
export BENCH_ORDERS="${BENCH_ORDERS:-100000}"
export BENCH_ROUNDS="${BENCH_ROUNDS:-40}"

log() { echo "[bench] $*" >&2; }
die() {
    echo "[bench] error: $*" >&2
    exit 1
}

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

WORK="$(mktemp -d "${TMPDIR:-/tmp}/prodops-bench.XXXXXX")"
SERVER_PID=""
PG_BENCH_DB=""
cleanup() {
    local status=$?
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    if [ -n "$PG_BENCH_DB" ]; then
        psql -q "$PG_URL" -c "DROP DATABASE IF EXISTS \"$PG_BENCH_DB\"" >/dev/null 2>&1 ||
            log "could not drop the database $PG_BENCH_DB; drop it by hand"
    fi
    [ "$status" -eq 0 ] && rm -rf "$WORK" || log "failed; server logs kept in $WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# bench_backend NAME DATABASE_URL
bench_backend() {
    local backend="$1" db="$2" created key url
    created="$("$SERVER" org create --name bench --database "$db" 2>>"$WORK/$backend-admin.err")" ||
        die "org create failed on $backend: $(cat "$WORK/$backend-admin.err")"
    key="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["apiKey"])' "$created")"
    "$SERVER" serve --bind 127.0.0.1:0 --database "$db" --rate-limit 100000000 \
        >"$WORK/$backend.out" 2>"$WORK/$backend.err" &
    SERVER_PID=$!
    url=""
    for _ in $(seq 1 300); do
        url="$(sed -n 's|^listening on \(http://[^ ]*\)$|\1|p' "$WORK/$backend.out" | head -n 1)"
        [ -n "$url" ] && break
        kill -0 "$SERVER_PID" 2>/dev/null || die "$backend: the server exited: $(cat "$WORK/$backend.err")"
        sleep 0.1
    done
    [ -n "$url" ] || die "$backend: the server did not start"
    log "$backend: server at $url"
    python3 "$ROOT/bench/filters.py" seed "$url" "$key" "$backend"
    if [ "$backend" = postgres ]; then
        # What autovacuum does shortly after a bulk load: statistics and a visibility map.
        log "$backend: VACUUM ANALYZE"
        psql -q "$db" -c 'VACUUM ANALYZE' >/dev/null
    fi
    python3 "$ROOT/bench/filters.py" measure "$url" "$key" "$backend"
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
}

bench_backend sqlite "sqlite://$WORK/bench.db"

if [ "$SQLITE_ONLY" = 0 ]; then
    name="prodops_bench_filters_$$"
    psql -q "$PG_URL" -c "CREATE DATABASE \"$name\"" >/dev/null || die "cannot create a database at $PG_URL"
    PG_BENCH_DB="$name"
    pg_db="$(python3 -c '
import sys, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
print(urllib.parse.urlunsplit(u._replace(path="/" + sys.argv[2])))' "$PG_URL" "$name")"
    bench_backend postgres "$pg_db"
fi
