#!/usr/bin/env bash
# The tree import's rate against the tree's shape, the file's order and what the organization
# already holds (issue 39 item 2): `prodops deliverable import`, CLI defaults (5,000 rows a call,
# 4 in flight), one release server, each import into its own organization:
#   1. the reference: 20 orders x 10 phases x 1,000 stages and a 64-level chain of phases
#      (200,284 nodes), rows shuffled (a spreadsheet sorted by anything but the tree);
#   2. the same number of nodes under phases of 10,000 stages (2 orders x 10 x 10,000 + chain);
#   3. the reference's shape in tree order (each order depth first: parents first, siblings
#      together);
#   4. the reference's shape with new ids, into an organization that already holds 500,000
#      workers and another 200,284-node tree.
# Prints each import's seconds and nodes/s, and its rate as a share of the reference's.
# Targets: >= 10,000 nodes/s on SQLite and >= 5,000 on PostgreSQL, for every line.
#
# Usage: bash bench/tree-import-shapes.sh [--postgres]
#        BENCH_PROCESSES=2 bash bench/tree-import-shapes.sh --postgres   # two processes, one database
#
# Environment (all optional):
#   BENCH_SCALE        divides every size (default 1; 10 gives a quick run of a tenth)
#   BENCH_PROCESSES    server processes on the one PostgreSQL database (default 1), behind
#                      bench/round-robin.py: each of the CLI's connections goes to the next one
#   CARGO_TARGET_DIR   where cargo puts the binaries (default ./target)
#   BENCH_BIN_DIR      take prodops-server and prodops from here instead of building them
#   PRODOPS_BENCH_PG_URL  PostgreSQL for --postgres (default postgres://postgres@127.0.0.1:5432/test)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HELP_LINES=2,24
# shellcheck source=bench/import-common.sh
source "$ROOT/bench/import-common.sh"
SCALE="${BENCH_SCALE:-1}"

# The files: a tree per line below, and the workers of step 4.
python3 - "$ROOT/bench" "$WORK" "$SCALE" <<'PY'
import random, sys
sys.path.insert(0, sys.argv[1])
from issue39_tree import write_tree
work, scale = sys.argv[2], int(sys.argv[3])
rng = random.Random(39)
write_tree(f"{work}/reference.csv", rng, 20, stages=1000 // scale, width=5)
write_tree(f"{work}/wide.csv", rng, 2, stages=10000 // scale, width=5)
# Tree order: each order's phases and stages depth first, as a spreadsheet of the tree has them.
write_tree(f"{work}/sorted.csv", rng, 20, stages=1000 // scale, shuffle=False, tag="S", width=5)
write_tree(f"{work}/other.csv", rng, 20, stages=1000 // scale, tag="X", width=5)
write_tree(f"{work}/beside.csv", rng, 20, stages=1000 // scale, tag="B", width=5)
with open(f"{work}/workers.csv", "w") as out:
    out.write("name,customerIdentifier\n")
    for i in range(500000 // scale):
        out.write(f"Person {i},E-{i:07d}\n")
PY
nodes_of() { echo $(($(wc -l < "$1") - 1)); }
REF=$(nodes_of "$WORK/reference.csv")

start_server
echo "server: $BACKEND, release, $PROCESSES process(es); prodops deliverable import with the CLI's defaults"
REF_RATE=""
# import LABEL CSV KEY: times the import, prints its line.
import() {
    local label="$1" csv="$2" key="$3" secs kib n rate share
    read -r secs kib < <(timed "$key" deliverable import "$csv")
    n=$(nodes_of "$csv")
    rate=$(echo "$n/$secs" | bc -l)
    [[ -z "$REF_RATE" ]] && REF_RATE="$rate"
    share=$(echo "100*$rate/$REF_RATE" | bc -l)
    printf '%-58s %7d nodes %7.1f s %8.0f nodes/s %6.1f%%\n' "$label" "$n" "$secs" "$rate" "$share"
}
read -r KEY _ < <(new_key "reference")
import "1. reference: 1,000 stages a phase, shuffled" "$WORK/reference.csv" "$KEY"
read -r KEY _ < <(new_key "wide")
import "2. 10,000 stages a phase, shuffled" "$WORK/wide.csv" "$KEY"
read -r KEY _ < <(new_key "sorted")
import "3. reference rows in tree order" "$WORK/sorted.csv" "$KEY"
read -r KEY _ < <(new_key "full")
timed "$KEY" worker import "$WORK/workers.csv" > /dev/null
timed "$KEY" deliverable import "$WORK/other.csv" > /dev/null
echo "   (organization 4 now holds $(($(wc -l < "$WORK/workers.csv") - 1)) workers and $(nodes_of "$WORK/other.csv") nodes)"
import "4. reference shape, new ids, into that organization" "$WORK/beside.csv" "$KEY"
[[ "$REF" -gt 0 ]]
