#!/usr/bin/env bash
# The CLI's peak memory where it could grow with the organization (issue 34, item 11 and "How
# it is checked"): `prodops worker list` of 200,000 workers to a pipe (every page streamed) and
# on a pseudo-terminal (the first page, then the footer), with `--all` on the pseudo-terminal
# too (a table of every record), and `prodops events tail --since beginning` catching up the
# 200,000 events of the import. Each figure is the process's peak resident set
# (`/usr/bin/time -v`); the target is under 64 MiB for each. Memory does not depend on the
# machine's speed, so one run is enough. The server runs on the embedded default (SQLite), or
# on a throwaway PostgreSQL database with --postgres.
#
# Usage: bash bench/cli-memory.sh [--postgres]
#
# Environment (all optional):
#   BENCH_ROWS         workers to import (default 200000)
#   CARGO_TARGET_DIR   where cargo puts the binaries (default ./target)
#   BENCH_BIN_DIR      take prodops-server and prodops from here instead of building them
#   PRODOPS_BENCH_PG_URL  PostgreSQL for --postgres (default postgres://postgres@127.0.0.1:5432/test)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HELP_LINES=2,17
# shellcheck source=bench/import-common.sh
source "$ROOT/bench/import-common.sh"
command -v script >/dev/null || { echo "installing bsdutils (script)" >&2; apt-get install -y -qq bsdutils >/dev/null; }
ROWS="${BENCH_ROWS:-200000}"

start_server
read -r KEY _ < <(new_key "CLI memory")
python3 - "$ROWS" > "$WORK/workers.csv" <<'PY'
import sys
n = int(sys.argv[1])
print("name,customerIdentifier,status")
for i in range(n):
    print(f"Person {i},E-{i:07d},{('active','inactive','terminated')[i % 3]}")
PY
read -r secs kib < <(timed "$KEY" worker import "$WORK/workers.csv" --key customerIdentifier)
echo "import of $ROWS workers: ${secs}s, peak $((kib / 1024)) MiB"

# on_terminal ARGS: prodops on a pseudo-terminal of 120x40 (`script`), under /usr/bin/time -v;
# prints "seconds peak_kib".
on_terminal() {
    local cmd
    printf -v cmd '%q ' "$PRODOPS" "$@"
    PRODOPS_BASE_URL="$BASE" PRODOPS_API_KEY="$KEY" PRODOPS_CONFIG_DIR="$WORK/cfg" PRODOPS_CREDENTIAL_STORE=file \
        COLUMNS=120 LINES=40 /usr/bin/time -v -o "$WORK/time.txt" \
        script -qefc "stty cols 120 rows 40; $cmd" /dev/null > "$WORK/tty.txt" 2>&1 < /dev/null || {
        echo "prodops $* on a terminal failed:" >&2; tail -20 "$WORK/tty.txt" >&2; exit 1; }
    # `script` forks the command: its peak is the largest of the children's (time reports the
    # largest resident set of the waited-for processes).
    local wall kib
    wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$WORK/time.txt" |
        python3 -c 'import sys; p=sys.stdin.read().strip().split(":"); print(sum(float(x)*60**i for i,x in enumerate(reversed(p))))')
    kib=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$WORK/time.txt")
    echo "$wall $kib"
}

report() { # what, seconds, kib
    local verdict="under 64 MiB"
    (( $3 >= 65536 )) && verdict="OVER 64 MiB"
    printf '%-52s %7.2f s  peak %6.1f MiB  %s\n' "$1" "$2" "$(echo "$3/1024" | bc -l)" "$verdict"
}
command -v bc >/dev/null || { echo "installing bc" >&2; apt-get install -y -qq bc >/dev/null; }

read -r secs kib < <(timed "$KEY" worker list -o json)
lines=$(wc -l < "$WORK/stdout.txt")
report "worker list -o json | (pipe, $lines lines)" "$secs" "$kib"
read -r secs kib < <(timed "$KEY" worker list -o csv)
report "worker list -o csv | (pipe)" "$secs" "$kib"
read -r secs kib < <(on_terminal worker list)
report "worker list (terminal: the first page)" "$secs" "$kib"
grep -a "of $(printf "%'d" "$ROWS" 2>/dev/null || echo "$ROWS")" "$WORK/tty.txt" | tail -1 || true
read -r secs kib < <(on_terminal worker list --all)
report "worker list --all (terminal: a table of every record)" "$secs" "$kib"
read -r secs kib < <(timed "$KEY" events tail --since beginning -o ndjson)
lines=$(wc -l < "$WORK/stdout.txt")
report "events tail --since beginning ($lines events)" "$secs" "$kib"
