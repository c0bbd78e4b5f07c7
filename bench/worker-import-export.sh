#!/usr/bin/env bash
# Worker CSV import and export benchmark: `prodops worker import` of a 1,000,000-row CSV into a
# server on the embedded default (SQLite), end to end in rows per second, next to `sqlite3 .import`
# of the same file into an empty table with a primary key, in the same run; twice: a file without
# ids (the server assigns them) and a file with random UUIDv4 ids. Then `prodops worker export` of
# those workers next to `sqlite3 -csv` writing the same rows from a table to a file. The CLI's peak
# memory comes from `/usr/bin/time -v`. See bench/README.md.
#
# Usage: bash bench/worker-import-export.sh
#
# Environment (all optional):
#   BENCH_ROWS         rows per file (default 1000000)
#   BENCH_BATCH        rows per PUT /worker/bulk (default 10000, the CLI's default for workers)
#   BENCH_CONCURRENCY  batches in flight (default 4, the CLI's default for workers)
#   CARGO_TARGET_DIR   where cargo puts the binaries (default ./target)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
case "${1:-}" in -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac

ROWS="${BENCH_ROWS:-1000000}"
BATCH="${BENCH_BATCH:-10000}"
CONCURRENCY="${BENCH_CONCURRENCY:-4}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
mkdir -p "$ROOT/bench/results"

need=()
command -v sqlite3 >/dev/null || need+=(sqlite3)
[[ -x /usr/bin/time ]] || need+=(time)
if ((${#need[@]})); then
    echo "installing ${need[*]}" >&2
    apt-get install -y -qq "${need[@]}" >/dev/null
fi

cargo build --release --locked -q -p prodops-server -p prodops-cli
SERVER="$TARGET/release/prodops-server"
PRODOPS="$TARGET/release/prodops"

WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
    [[ -n "$SERVER_PID" ]] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

echo "== generating two files of $ROWS workers in $WORK" >&2
# Columns as `prodops worker export` writes them, without the server-managed ones.
awk -v n="$ROWS" 'BEGIN {
    srand(42);
    split("active inactive terminated", st, " ");
    print "name,customerIdentifier,status,isArchived,exemptFromAssignments,unionCode,qbBadgeLink";
    for (i = 1; i <= n; i++)
        printf "Worker %07d,E%07d,%s,false,%s,%s,\n", i, i, st[1 + i % 3], (i % 4 == 0 ? "true" : "false"), (i % 5 == 0 ? "U1" : "");
}' > "$WORK/no-ids.csv"
python3 - "$WORK/no-ids.csv" "$WORK/v4-ids.csv" <<'PY'
import sys, uuid
src, dst = sys.argv[1], sys.argv[2]
with open(src) as f, open(dst, "w") as out:
    out.write("id," + f.readline())
    for line in f:
        out.write(str(uuid.uuid4()) + "," + line)
PY

# ---- sqlite3 reference: .import into an empty table with a primary key ----
seconds() { python3 -c 'import sys; print(f"{float(sys.argv[1]):.3f}")' "$1"; }
now() { date +%s.%N; }
elapsed() { python3 -c 'import sys; print(f"{float(sys.argv[2]) - float(sys.argv[1]):.3f}")' "$1" "$2"; }

sqlite_import() { # file, table DDL
    local db="$WORK/ref-$RANDOM.db" t0 t1
    sqlite3 "$db" "PRAGMA journal_mode=WAL;" "$2" >/dev/null
    t0=$(now)
    sqlite3 "$db" ".mode csv" ".import --skip 1 $1 worker"
    t1=$(now)
    echo "$db $(elapsed "$t0" "$t1")"
}
read -r REF_DB REF_NOIDS_S < <(sqlite_import "$WORK/no-ids.csv" \
    "CREATE TABLE worker(name TEXT, customerIdentifier TEXT PRIMARY KEY, status TEXT, isArchived TEXT, exemptFromAssignments TEXT, unionCode TEXT, qbBadgeLink TEXT);")
read -r _ REF_V4_S < <(sqlite_import "$WORK/v4-ids.csv" \
    "CREATE TABLE worker(id TEXT PRIMARY KEY, name TEXT, customerIdentifier TEXT, status TEXT, isArchived TEXT, exemptFromAssignments TEXT, unionCode TEXT, qbBadgeLink TEXT);")
t0=$(now)
sqlite3 -csv -header "$REF_DB" "SELECT * FROM worker" > "$WORK/ref-export.csv"
t1=$(now)
REF_EXPORT_S=$(elapsed "$t0" "$t1")

# ---- the server ----
DB="sqlite://$WORK/prodops.db"
"$SERVER" serve --bind 127.0.0.1:0 --database "$DB" --rate-limit 1000000000 > "$WORK/server.out" 2> "$WORK/server.log" &
SERVER_PID=$!
for _ in $(seq 100); do grep -q listening "$WORK/server.out" 2>/dev/null && break; sleep 0.1; done
BASE="$(sed -n 's/^listening on //p' "$WORK/server.out")"
[[ -n "$BASE" ]] || { echo "the server did not start:" >&2; cat "$WORK/server.log" >&2; exit 1; }
new_key() { "$SERVER" org create --name "$1" --database "$DB" | python3 -c 'import json,sys; print(json.load(sys.stdin)["apiKey"])'; }

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

KEY_NOIDS=$(new_key "bench no ids")
KEY_V4=$(new_key "bench v4 ids")
echo "== prodops worker import (no ids)" >&2
read -r IMP_NOIDS_S IMP_NOIDS_KIB < <(timed "$KEY_NOIDS" worker import "$WORK/no-ids.csv" --batch-size "$BATCH" --concurrency "$CONCURRENCY" --output json)
cat "$WORK/stdout.txt" >&2
echo "== prodops worker import (v4 ids)" >&2
read -r IMP_V4_S IMP_V4_KIB < <(timed "$KEY_V4" worker import "$WORK/v4-ids.csv" --batch-size "$BATCH" --concurrency "$CONCURRENCY" --output json)
cat "$WORK/stdout.txt" >&2
echo "== prodops worker export" >&2
read -r EXP_S EXP_KIB < <(timed "$KEY_NOIDS" worker export -o "$WORK/export.csv")
EXPORTED=$(($(wc -l < "$WORK/export.csv") - 1))
[[ "$EXPORTED" == "$ROWS" ]] || { echo "export wrote $EXPORTED rows, expected $ROWS" >&2; exit 1; }

python3 - "$ROWS" "$REF_NOIDS_S" "$IMP_NOIDS_S" "$IMP_NOIDS_KIB" "$REF_V4_S" "$IMP_V4_S" "$IMP_V4_KIB" "$REF_EXPORT_S" "$EXP_S" "$EXP_KIB" <<'PY' | tee "$ROOT/bench/results/worker-import-export-$(date +%Y%m%d-%H%M%S).txt"
import sys
rows = int(sys.argv[1])
ref_n, imp_n, kib_n, ref_v, imp_v, kib_v, ref_e, exp_e, kib_e = map(float, sys.argv[2:])
def line(what, ref, ours, kib, target):
    r_ref, r_ours = rows / ref, rows / ours
    ratio = r_ours / r_ref
    mem = kib / 1024
    ok = ratio >= target and mem < 64
    print(f"{what:<22} {r_ours:>12,.0f} {r_ref:>14,.0f} {ratio:>8.1%} {target:>7.0%} {mem:>9.1f}  {'PASS' if ok else 'FAIL'}")
print(f"{rows:,} workers; rows/s end to end (prodops) vs the sqlite3 reference in the same run")
print(f"{'':<22} {'prodops r/s':>12} {'sqlite3 r/s':>14} {'ratio':>8} {'target':>7} {'peak MiB':>9}")
line("import, no ids", ref_n, imp_n, kib_n, 0.50)
line("import, UUIDv4 ids", ref_v, imp_v, kib_v, 0.20)
line("export", ref_e, exp_e, kib_e, 0.33)
PY
