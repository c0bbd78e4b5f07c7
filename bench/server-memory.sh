#!/usr/bin/env bash
# The server's memory through the work of issue 39's table, and that tree import's rate: the
# peak anonymous memory (`RssAnon` of /proc/PID/status, sampled every 50 ms) of each release
# server process during each step, next to its anonymous memory before the step:
#   1. `prodops worker import` of 300,000 rows with `--key customerIdentifier`;
#   2. `prodops deliverable import` of a 200,284-node tree: 20 orders x 10 phases x 1,000
#      stages, and a 64-level chain of phases; rows in random order (a sorted spreadsheet);
#   3. `prodops deliverable export` of that tree.
# The CLI's default batch and pool sizes. The target is a peak under 256 MiB at every step.
# Memory does not depend on the machine's speed, so one run is enough; the import's rate does.
#
# Usage: bash bench/server-memory.sh [--postgres]
#        BENCH_PROCESSES=2 bash bench/server-memory.sh --postgres   # two processes, one database
#
# Environment (all optional):
#   BENCH_WORKERS      workers to import (default 300000)
#   BENCH_ORDERS       orders of the tree (default 20; 10 phases x 1,000 stages each)
#   BENCH_PROCESSES    server processes on the one PostgreSQL database (default 1), behind
#                      bench/round-robin.py: each of the CLI's connections goes to the next one
#   CARGO_TARGET_DIR   where cargo puts the binaries (default ./target)
#   BENCH_BIN_DIR      take prodops-server and prodops from here instead of building them
#   PRODOPS_BENCH_PG_URL  PostgreSQL for --postgres (default postgres://postgres@127.0.0.1:5432/test)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HELP_LINES=2,22
# shellcheck source=bench/import-common.sh
source "$ROOT/bench/import-common.sh"
WORKERS="${BENCH_WORKERS:-300000}"
ORDERS="${BENCH_ORDERS:-20}"

python3 - "$ROOT/bench" "$WORKERS" "$ORDERS" "$WORK/workers.csv" "$WORK/tree.csv" <<'PY'
import random, sys
sys.path.insert(0, sys.argv[1])
from issue39_tree import write_tree
workers, orders, workers_path, tree_path = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
with open(workers_path, "w") as out:
    out.write("name,customerIdentifier,status\n")
    for i in range(workers):
        out.write(f"Person {i},E-{i:07d},{('active', 'inactive', 'terminated')[i % 3]}\n")
n = write_tree(tree_path, random.Random(39), orders)
print(f"{n} nodes", file=sys.stderr)
PY
NODES=$(($(wc -l < "$WORK/tree.csv") - 1))

start_server
read -r KEY _ < <(new_key "server memory")

anon_kib() { sed -n 's/^RssAnon:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$1/status"; }
mib() { echo "$1/1024" | bc -l; }
# sampled STEP ARGS...: runs prodops ARGS while sampling every server process; prints one line
# per process.
sampled() {
    local step="$1"; shift
    local i pids=("${SERVER_PIDS[@]}") samplers=() before=()
    for i in "${!pids[@]}"; do
        before+=("$(anon_kib "${pids[$i]}")")
        : > "$WORK/samples$i"
        ( while kill -0 "${pids[$i]}" 2>/dev/null; do anon_kib "${pids[$i]}" >> "$WORK/samples$i"; sleep 0.05; done ) &
        samplers+=($!)
    done
    local secs kib
    read -r secs kib < <(timed "$KEY" "$@")
    kill "${samplers[@]}" 2>/dev/null; wait "${samplers[@]}" 2>/dev/null || true
    for i in "${!pids[@]}"; do
        local peak after verdict="under 256 MiB" label="$step"
        peak=$(sort -n "$WORK/samples$i" | tail -1)
        after=$(anon_kib "${pids[$i]}")
        (( peak >= 262144 )) && verdict="OVER 256 MiB"
        (( ${#pids[@]} > 1 )) && label="  process $((i + 1)) of ${#pids[@]}"
        (( ${#pids[@]} > 1 && i == 0 )) && printf '%-44s %8.1f s\n' "$step" "$secs"
        printf '%-44s %8.1f s  before %6.1f MiB  peak %6.1f MiB  after %6.1f MiB  %s\n' \
            "$label" "$secs" "$(mib "${before[$i]}")" "$(mib "$peak")" "$(mib "$after")" "$verdict"
    done
    LAST_SECS="$secs"
}
command -v bc >/dev/null || { echo "installing bc" >&2; apt-get install -y -qq bc >/dev/null; }

echo "server: $BACKEND, release, $PROCESSES process(es); anonymous memory of each server process (RssAnon)"
sampled "worker import of $WORKERS rows --key" worker import "$WORK/workers.csv" --key customerIdentifier
sampled "deliverable import of $NODES nodes (shuffled)" deliverable import "$WORK/tree.csv"
printf '%-44s %8.0f nodes/s\n' "  its rate" "$(echo "$NODES/$LAST_SECS" | bc -l)"
sampled "deliverable export of $NODES nodes" deliverable export --out "$WORK/tree-out.csv"
[[ $(($(wc -l < "$WORK/tree-out.csv") - 1)) == "$NODES" ]] || { echo "the export's row count differs" >&2; exit 1; }
