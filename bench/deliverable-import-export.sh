#!/usr/bin/env bash
# Deliverable CSV import and export benchmark: `prodops deliverable import` and `export` of one
# order of 100,000 nodes, depth 6 (order > phase > component > component > stage > step), on the
# embedded default (SQLite, release builds), next to `prodops worker export` of 100,000 workers
# measured in the same run; prints rows/s and the ratio deliverable export / worker export
# (target >= 50%). The CLI's peak memory comes from `/usr/bin/time -v`. With --postgres, the
# server runs on a throwaway PostgreSQL database instead. See bench/README.md.
#
# Usage: bash bench/deliverable-import-export.sh [--postgres]
#
# Environment (all optional):
#   BENCH_NODES        nodes of the order (default 100000)
#   BENCH_BATCH        rows per PUT /r/bulk (default 5000)
#   BENCH_CONCURRENCY  batches in flight (default 4)
#   CARGO_TARGET_DIR   where cargo puts the binaries (default ./target)
#   BENCH_BIN_DIR      take prodops-server and prodops from here instead of building them
#   PRODOPS_BENCH_PG_URL  PostgreSQL for --postgres (default postgres://postgres@127.0.0.1:5432/test)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HELP_LINES=2,17
source "$ROOT/bench/import-common.sh"

NODES="${BENCH_NODES:-100000}"
BATCH="${BENCH_BATCH:-5000}"
CONCURRENCY="${BENCH_CONCURRENCY:-4}"

echo "== generating an order of $NODES nodes (depth 6) and $NODES workers in $WORK" >&2
python3 - "$NODES" "$WORK/tree.csv" "$WORK/workers.csv" <<'PY'
import sys, uuid, random
n, tree_path, workers_path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
random.seed(42)
def uid():
    return str(uuid.UUID(int=random.getrandbits(128), version=4))
# Fan-out per level below the order: 10 phases, 10 components each, 10 sub-components each,
# 9 stages each, 10 steps each (100,111 nodes: the last steps are cut at n).
levels = [("phase", 10), ("component", 10), ("component", 10), ("stage", 9), ("step", 10)]
count = 0
with open(tree_path, "w") as out:
    out.write("id,identifier,name,type,parentId,quantity,durationSec,data.stageId,data.properties.area\n")
    def node(parent, depth, kind, i, label):
        global count
        if count >= n:
            return
        nid = uid()
        count += 1
        stage = uid() if kind == "stage" else ""
        area = "12.5" if kind == "order" else ""
        out.write(f"{nid},D{count:07d},{kind.capitalize()} {label},{kind},{parent},{1 + i % 3},{60 * (i % 5)},{stage},{area}\n")
        if depth < len(levels):
            child_kind, fan = levels[depth]
            for j in range(fan):
                node(nid, depth + 1, child_kind, j, f"{label}.{j}")
    node("", 0, "order", 0, "1")
with open(workers_path, "w") as out:
    out.write("id,name,customerIdentifier,status\n")
    for i in range(n):
        out.write(f"{uid()},Worker {i:07d},E{i:07d},active\n")
PY

now() { date +%s.%N; }

start_server

read -r KEY _ < <(new_key "bench deliverables")
read -r KEY_EMPTY _ < <(new_key "bench round trip")
for k in "$KEY" "$KEY_EMPTY"; do
    timed "$k" custom-property create --data '{"key": "area", "name": "Area", "dataType": "number"}' >/dev/null
done

echo "== prodops worker import, export ($NODES workers)" >&2
read -r WIMP_S WIMP_KIB < <(timed "$KEY" worker import "$WORK/workers.csv" --batch-size "$BATCH" --concurrency "$CONCURRENCY" --output json)
read -r WEXP_S WEXP_KIB < <(timed "$KEY" worker export --out "$WORK/workers-out.csv")
[[ $(($(wc -l < "$WORK/workers-out.csv") - 1)) == "$NODES" ]] || { echo "worker export row count" >&2; exit 1; }

echo "== prodops deliverable import ($NODES nodes)" >&2
read -r DIMP_S DIMP_KIB < <(timed "$KEY" deliverable import "$WORK/tree.csv" --batch-size "$BATCH" --concurrency "$CONCURRENCY" --output json)
cat "$WORK/stdout.txt" >&2
echo "== prodops deliverable export" >&2
read -r DEXP_S DEXP_KIB < <(timed "$KEY" deliverable export --out "$WORK/tree-out.csv")
[[ $(($(wc -l < "$WORK/tree-out.csv") - 1)) == "$NODES" ]] || { echo "deliverable export row count" >&2; exit 1; }
echo "== prodops deliverable import of the export into an empty organization" >&2
read -r DRT_S DRT_KIB < <(timed "$KEY_EMPTY" deliverable import "$WORK/tree-out.csv" --batch-size "$BATCH" --concurrency "$CONCURRENCY" --output json)
cat "$WORK/stdout.txt" >&2
echo "== re-import of the same file (changes nothing)" >&2
read -r DRE_S DRE_KIB < <(timed "$KEY_EMPTY" deliverable import "$WORK/tree-out.csv" --batch-size "$BATCH" --concurrency "$CONCURRENCY" --output json)

python3 - "$BACKEND" "$NODES" "$WIMP_S" "$WIMP_KIB" "$WEXP_S" "$WEXP_KIB" "$DIMP_S" "$DIMP_KIB" "$DEXP_S" "$DEXP_KIB" "$DRT_S" "$DRT_KIB" "$DRE_S" "$DRE_KIB" <<'PY' | tee "$ROOT/bench/results/deliverable-import-export-$BACKEND-$(date +%Y%m%d-%H%M%S).txt"
import sys
backend = sys.argv[1]
n = int(sys.argv[2])
v = list(map(float, sys.argv[3:]))
rows = [("worker import", v[0], v[1]), ("worker export", v[2], v[3]),
        ("deliverable import", v[4], v[5]), ("deliverable export", v[6], v[7]),
        ("round trip import", v[8], v[9]), ("re-import (no-op)", v[10], v[11])]
where = "SQLite embedded default" if backend == "sqlite" else "PostgreSQL"
print(f"{n:,} rows each; end to end through the CLI, {where}, release")
print(f"{'':<22} {'seconds':>9} {'rows/s':>10} {'peak MiB':>9}")
for what, s, kib in rows:
    print(f"{what:<22} {s:>9.2f} {n / s:>10,.0f} {kib / 1024:>9.1f}")
ratio = (n / v[6]) / (n / v[2])
if backend == "sqlite":
    print(f"deliverable export / worker export: {ratio:.1%} (target >= 50%: {'PASS' if ratio >= 0.5 else 'FAIL'})")
else:
    print(f"deliverable export / worker export: {ratio:.1%} (the target is the embedded default's)")
PY
