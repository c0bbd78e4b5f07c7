#!/usr/bin/env bash
# Worker CSV import and export benchmark: `prodops worker import` of a 1,000,000-row CSV into a
# server on the embedded default (SQLite), end to end in rows per second, next to `sqlite3 .import`
# of the same file into an empty table with a primary key, in the same run; twice: a file without
# ids (the server assigns them) and a file with random UUIDv4 ids. Then `prodops worker export` of
# those workers next to `sqlite3 -csv` writing the same rows from a table to a file. The CLI's peak
# memory comes from `/usr/bin/time -v`. With --postgres, the server runs on a throwaway
# PostgreSQL database and the reference is `psql \copy` into (and out of) a keyed table in
# another one. Last, the rows the server stored are loaded again by the database alone
# (`sqlite3` or `psql \copy`), into tables of the same shape and into a table with its key
# only, to show what the database's own work bounds. See bench/README.md.
#
# Usage: bash bench/worker-import-export.sh [--postgres]
#
# Environment (all optional):
#   BENCH_ROWS         rows per file (default 1000000)
#   BENCH_BATCH        rows per PUT /worker/bulk (default 10000, the CLI's default for workers)
#   BENCH_CONCURRENCY  batches in flight (default 4, the CLI's default for workers)
#   CARGO_TARGET_DIR   where cargo puts the binaries (default ./target)
#   BENCH_BIN_DIR      take prodops-server and prodops from here instead of building them
#   PRODOPS_BENCH_PG_URL  PostgreSQL for --postgres (default postgres://postgres@127.0.0.1:5432/test)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HELP_LINES=2,21
source "$ROOT/bench/import-common.sh"

ROWS="${BENCH_ROWS:-1000000}"
BATCH="${BENCH_BATCH:-10000}"
CONCURRENCY="${BENCH_CONCURRENCY:-4}"
command -v sqlite3 >/dev/null || { echo "installing sqlite3" >&2; apt-get install -y -qq sqlite3 >/dev/null; }

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
pg_import() { # database URL, file, table DDL
    local db="$1" t0 t1
    shift
    psql -q "$db" -c "$2" >/dev/null
    t0=$(now)
    psql -q "$db" -c "\\copy worker FROM '$1' WITH (FORMAT csv, HEADER true)" >/dev/null
    t1=$(now)
    echo "$db $(elapsed "$t0" "$t1")"
}
NOIDS_DDL="CREATE TABLE worker(name TEXT, customerIdentifier TEXT PRIMARY KEY, status TEXT, isArchived TEXT, exemptFromAssignments TEXT, unionCode TEXT, qbBadgeLink TEXT);"
V4_DDL="CREATE TABLE worker(id TEXT PRIMARY KEY, name TEXT, customerIdentifier TEXT, status TEXT, isArchived TEXT, exemptFromAssignments TEXT, unionCode TEXT, qbBadgeLink TEXT);"
if [[ "$BACKEND" == postgres ]]; then
    REF_NAME="psql \\copy"
    new_pg_db REF_NOIDS_DB
    new_pg_db REF_V4_DB
    read -r REF_DB REF_NOIDS_S < <(pg_import "$REF_NOIDS_DB" "$WORK/no-ids.csv" "$NOIDS_DDL")
    read -r _ REF_V4_S < <(pg_import "$REF_V4_DB" "$WORK/v4-ids.csv" "$V4_DDL")
    t0=$(now)
    psql -q "$REF_DB" -c "\\copy (SELECT * FROM worker) TO '$WORK/ref-export.csv' WITH (FORMAT csv, HEADER true)" >/dev/null
    t1=$(now)
else
    REF_NAME="sqlite3"
    read -r REF_DB REF_NOIDS_S < <(sqlite_import "$WORK/no-ids.csv" "$NOIDS_DDL")
    read -r _ REF_V4_S < <(sqlite_import "$WORK/v4-ids.csv" "$V4_DDL")
    t0=$(now)
    sqlite3 -csv -header "$REF_DB" "SELECT * FROM worker" > "$WORK/ref-export.csv"
    t1=$(now)
fi
REF_EXPORT_S=$(elapsed "$t0" "$t1")

# ---- the server ----
start_server

read -r KEY_NOIDS ORG_NOIDS < <(new_key "bench no ids")
read -r KEY_V4 _ < <(new_key "bench v4 ids")
echo "== prodops worker import (no ids)" >&2
read -r IMP_NOIDS_S IMP_NOIDS_KIB < <(timed "$KEY_NOIDS" worker import "$WORK/no-ids.csv" --batch-size "$BATCH" --concurrency "$CONCURRENCY" --output json)
cat "$WORK/stdout.txt" >&2
echo "== prodops worker import (v4 ids)" >&2
read -r IMP_V4_S IMP_V4_KIB < <(timed "$KEY_V4" worker import "$WORK/v4-ids.csv" --batch-size "$BATCH" --concurrency "$CONCURRENCY" --output json)
cat "$WORK/stdout.txt" >&2
echo "== prodops worker export" >&2
read -r EXP_S EXP_KIB < <(timed "$KEY_NOIDS" worker export --out "$WORK/export.csv")
EXPORTED=$(($(wc -l < "$WORK/export.csv") - 1))
[[ "$EXPORTED" == "$ROWS" ]] || { echo "export wrote $EXPORTED rows, expected $ROWS" >&2; exit 1; }

# ---- the database alone ----
# The rows the server stored for the import without ids (the workers with their indexes, and
# their events), loaded again into empty tables of the same shape (indexes, no triggers) by the
# database's own loader: what the database costs for what the server writes, with no HTTP, JSON
# or checks. Then the same rows into a table with its key alone, as the reference has.
echo "== the database alone: the stored rows loaded again" >&2
if [[ "$BACKEND" == postgres ]]; then
    psql -q "$DB" -c "\\copy (SELECT * FROM worker WHERE organization_id = '$ORG_NOIDS' ORDER BY created_at, id) TO '$WORK/stored-workers.csv' WITH (FORMAT csv)" \
        -c "\\copy (SELECT * FROM events WHERE organization_id = '$ORG_NOIDS' ORDER BY seq) TO '$WORK/stored-events.csv' WITH (FORMAT csv)" >/dev/null
    psql -q "$DB" -c "CREATE TABLE ceiling_worker (LIKE worker INCLUDING ALL)" -c "CREATE TABLE ceiling_events (LIKE events INCLUDING ALL)" \
        -c "CREATE TABLE ceiling_bare (LIKE worker INCLUDING DEFAULTS)" -c "ALTER TABLE ceiling_bare ADD PRIMARY KEY (organization_id, id)" >/dev/null
    t0=$(now)
    psql -q "$DB" -c "\\copy ceiling_worker FROM '$WORK/stored-workers.csv' WITH (FORMAT csv)" \
        -c "\\copy ceiling_events FROM '$WORK/stored-events.csv' WITH (FORMAT csv)" >/dev/null
    t1=$(now)
    CEIL_S=$(elapsed "$t0" "$t1")
    t0=$(now)
    psql -q "$DB" -c "\\copy ceiling_bare FROM '$WORK/stored-workers.csv' WITH (FORMAT csv)" >/dev/null
    t1=$(now)
    BARE_S=$(elapsed "$t0" "$t1")
else
    # SQLite: batches of BATCH rows, each its own transaction (as the server commits them),
    # with the settings of the server's writer (store/sqlite.rs). The server checkpoints on
    # another thread beside its writer; here the WAL is copied back after the clock stops.
    SRC="$WORK/prodops.db"
    schema_of() { # tables...: their CREATE TABLE and CREATE INDEX statements, no triggers
        local names
        names=$(printf "'%s'," "$@")
        sqlite3 "$SRC" "SELECT sql || ';' FROM sqlite_master WHERE tbl_name IN (${names%,}) AND type IN ('table', 'index') AND sql IS NOT NULL"
    }
    load_sqlite() { # db, ddl, with events (1/0); prints the seconds
        local lo hi elo t0 t1
        sqlite3 "$1" "PRAGMA page_size = 16384; PRAGMA journal_mode = WAL;" "$2" >/dev/null
        read -r lo hi < <(sqlite3 -separator ' ' "$SRC" "SELECT min(rowid), max(rowid) FROM worker WHERE organization_id = '$ORG_NOIDS'")
        read -r elo < <(sqlite3 "$SRC" "SELECT min(seq) FROM events WHERE organization_id = '$ORG_NOIDS'")
        {
            echo "ATTACH '$SRC' AS s; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -131072; PRAGMA mmap_size = 1073741824; PRAGMA wal_autocheckpoint = 0;"
            for ((a = lo; a <= hi; a += BATCH)); do
                echo "BEGIN; INSERT INTO main.worker SELECT * FROM s.worker WHERE rowid BETWEEN $a AND $((a + BATCH - 1)) AND +organization_id = '$ORG_NOIDS';"
                (($3)) && echo "INSERT INTO main.events SELECT * FROM s.events WHERE organization_id = '$ORG_NOIDS' AND seq BETWEEN $((elo + a - lo)) AND $((elo + a - lo + BATCH - 1));"
                echo "COMMIT;"
            done
        } > "$WORK/load.sql"
        t0=$(now)
        sqlite3 "$1" < "$WORK/load.sql" >/dev/null
        t1=$(now)
        elapsed "$t0" "$t1"
    }
    CEIL_S=$(load_sqlite "$WORK/ceiling.db" "$(schema_of worker events)" 1)
    BARE_S=$(load_sqlite "$WORK/bare.db" "$(schema_of worker | grep -v '^CREATE INDEX')" 0)
fi

python3 - "$BACKEND" "$REF_NAME" "$ROWS" "$REF_NOIDS_S" "$IMP_NOIDS_S" "$IMP_NOIDS_KIB" "$REF_V4_S" "$IMP_V4_S" "$IMP_V4_KIB" "$REF_EXPORT_S" "$EXP_S" "$EXP_KIB" "$CEIL_S" "$BARE_S" <<'PY' | tee "$ROOT/bench/results/worker-import-export-$BACKEND-$(date +%Y%m%d-%H%M%S).txt"
import sys
backend, ref_name = sys.argv[1], sys.argv[2]
rows = int(sys.argv[3])
ref_n, imp_n, kib_n, ref_v, imp_v, kib_v, ref_e, exp_e, kib_e, ceil, bare = map(float, sys.argv[4:])
def line(what, ref, ours, kib, target):
    r_ref, r_ours = rows / ref, rows / ours
    ratio = r_ours / r_ref
    mem = kib / 1024
    ok = ratio >= target and mem < 32
    print(f"{what:<22} {r_ours:>12,.0f} {r_ref:>14,.0f} {ratio:>8.1%} {target:>7.0%} {mem:>9.1f}  {'PASS' if ok else 'FAIL'}")
print(f"{rows:,} workers on {backend}; rows/s end to end (prodops) vs {ref_name} in the same run")
print(f"{'':<22} {'prodops r/s':>12} {ref_name + ' r/s':>14} {'ratio':>8} {'target':>7} {'peak MiB':>9}")
line("import, no ids", ref_n, imp_n, kib_n, 0.50)
line("import, UUIDv4 ids", ref_v, imp_v, kib_v, 0.20)
line("export", ref_e, exp_e, kib_e, 0.33)
print()
loader = "psql \\copy" if backend == "postgres" else "sqlite3, in batches"
print(f"the database alone, import without ids: the rows the server stored, loaded again by {loader}")
print(f"{'':<40} {'r/s':>12} {'of ' + ref_name:>16} {'prodops / it':>14}")
def ceiling(what, secs):
    r = rows / secs
    print(f"{what:<40} {r:>12,.0f} {r / (rows / ref_n):>16.1%} {(rows / imp_n) / r:>14.1%}")
ceiling("workers with their indexes, and events", ceil)
ceiling("workers with their key only", bare)
PY
