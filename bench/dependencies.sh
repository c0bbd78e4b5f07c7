#!/usr/bin/env bash
# Dependency writes (issue 35, item 6), on SQLite and PostgreSQL with a release build:
#
#   1. a bulk PUT of N dependencies (chains of 100 in N/100 orders of 101 steps) against a bulk
#      PUT of N workers, in the same organization (target: the dependencies' rate >= 20% of
#      the workers');
#   2. the same bulk PUT of N dependencies into one order of N+1 steps (one chain: every
#      dependency in the same tree; figure only);
#   3. one dependency POST (a chain in an order of 201 steps, one call at a time, median)
#      in an empty organization and in the organization of 1., which then holds 2N
#      dependencies in other orders (target: ratio <= 1.5);
#   4. applying a route of 1,000 nodes (10 phases of 99 steps) with 1,000 dependencies onto an
#      order of that organization (target: < 2 s; the median of BENCH_APPLIES calls).
#
# Usage: bash bench/dependencies.sh [--sqlite-only]
#
# Environment (all optional):
#   PRODOPS_BENCH_PG_URL  PostgreSQL URL (default postgres://postgres@127.0.0.1:5432/test); the
#                   bench creates a throwaway database beside it, dropped at the end
#   BENCH_DEPS      N, the size of the bulk calls (default 10000)
#   BENCH_POSTS     dependency POSTs timed per organization (default 200)
#   BENCH_APPLIES   route applications timed (default 3)
#   BENCH_SERVER    a prodops-server binary to measure instead of building this checkout (to
#                   measure another commit)
#   CARGO_TARGET_DIR  where cargo puts the binaries (default ./target)
#
# The build, the server, its throwaway databases and the organizations come from
# bench/import-common.sh.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

SQLITE_ONLY=0
for arg in "$@"; do
    case "$arg" in
        --sqlite-only) SQLITE_ONLY=1 ;;
        -h | --help)
            sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "unknown argument: $arg (try --help)" >&2
            exit 2
            ;;
    esac
done

command -v python3 >/dev/null 2>&1 || { echo "[bench] error: python3 is needed to drive the benchmark" >&2; exit 1; }
if [[ -n "${BENCH_SERVER:-}" ]]; then
    BENCH_BIN_DIR="$(dirname "$BENCH_SERVER")"
else
    echo "[bench] building (release): prodops-server" >&2
fi
BENCH_OWN_ARGS=1
BENCH_PACKAGES="-p prodops-server"
HELP_LINES=2,28
source "$ROOT/bench/import-common.sh"
SERVER="${BENCH_SERVER:-$SERVER}"
[[ -x "$SERVER" ]] || { echo "[bench] error: no binary at $SERVER" >&2; exit 1; }

DEPS="${BENCH_DEPS:-10000}"
POSTS="${BENCH_POSTS:-200}"
APPLIES="${BENCH_APPLIES:-3}"

log() { echo "[bench] $*" >&2; }

# The driver: one keep-alive connection, one call at a time. Prints
# `workers_s deps_s onetree_s post_empty_ms post_full_ms apply_ms`.
cat >"$WORK/driver.py" <<'PY'
import http.client, json, statistics, sys, time, urllib.parse, uuid

base, key_full, key_empty = sys.argv[1:4]
n, posts, applies = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
u = urllib.parse.urlsplit(base)
conn = http.client.HTTPConnection(u.hostname, u.port, timeout=3600)

def call(key, method, path, body=None):
    data = None if body is None else json.dumps(body)
    conn.request(method, "/api/v2" + path, body=data,
                 headers={"X-API-Key": key, "Content-Type": "application/json"})
    resp = conn.getresponse()
    text = resp.read()
    if resp.status >= 300:
        sys.exit(f"{method} {path} failed: {resp.status} {text[:500].decode(errors='replace')}")
    return json.loads(text) if text else None

def timed(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t

def ids(k):
    return [str(uuid.uuid4()) for _ in range(k)]

def order_with_steps(key, steps, name):
    """An order with `steps` steps under it; answers the steps' ids in order."""
    order = str(uuid.uuid4())
    kids = ids(steps)
    rows = [{"id": order, "name": name, "type": "order", "quantity": 1}]
    rows += [{"id": s, "name": f"{name} step {i}", "type": "step", "parentId": order, "quantity": 1}
             for i, s in enumerate(kids)]
    call(key, "PUT", "/deliverable/bulk", rows)
    return kids

def chain(steps):
    return [{"predecessorId": a, "successorId": b} for a, b in zip(steps, steps[1:])]

full = key_full
# 1. N workers against N dependencies, chains of 100 in orders of 101 steps.
workers_s = timed(lambda: call(full, "PUT", "/worker/bulk", [{"name": f"Worker {i}"} for i in range(n)]))
deps = []
for o in range(max(1, n // 100)):
    deps += chain(order_with_steps(full, 101, f"Order {o}"))
deps = deps[:n]
deps_s = timed(lambda: call(full, "PUT", "/dependency/bulk", deps))
# 2. N dependencies in one tree: one chain in an order of N+1 steps.
one = chain(order_with_steps(full, n + 1, "Big order"))
onetree_s = timed(lambda: call(full, "PUT", "/dependency/bulk", one))

# 3. One POST at a time, in an empty organization and in this one.
def posts_median(key):
    steps = order_with_steps(key, posts + 1, "Small order")
    times = [timed(lambda: call(key, "POST", "/dependency", d)) * 1000 for d in chain(steps)]
    return statistics.median(times)
posts_median(key_empty)  # warm-up
post_empty = posts_median(key_empty)
post_full = posts_median(full)

# 4. A route of 1,000 nodes (10 phases of 99 steps) with 1,000 dependencies, applied.
route = str(uuid.uuid4())
phases = ids(10)
steps = [ids(99) for _ in phases]
rows = [{"id": route, "name": "Route", "type": "route", "quantity": 1}]
for p, (ph, ss) in enumerate(zip(phases, steps)):
    rows.append({"id": ph, "name": f"Phase {p}", "type": "phase", "parentId": route, "quantity": 1})
    rows += [{"id": s, "name": f"Step {p}.{i}", "type": "step", "parentId": ph, "quantity": 1}
             for i, s in enumerate(ss)]
call(full, "PUT", "/deliverable/bulk", rows)
route_deps = chain(phases)
for ss in steps:
    route_deps += chain(ss)
for p in range(9):
    route_deps.append({"predecessorId": steps[p][98], "successorId": steps[p + 1][0]})
route_deps.append({"predecessorId": steps[0][0], "successorId": steps[9][0]})
route_deps.append({"predecessorId": steps[0][1], "successorId": steps[9][1]})
assert len(route_deps) == 1000, len(route_deps)
call(full, "PUT", "/dependency/bulk", route_deps)
times = []
for a in range(applies):
    target = call(full, "POST", "/deliverable", {"name": f"Applied {a}", "type": "order", "quantity": 1})["id"]
    got = {}
    times.append(timed(lambda: got.update(call(full, "POST", f"/deliverable/{target}/apply-template",
                                                {"templateId": route})["value"])) * 1000)
    assert len(got["nodes"]) == 1000 and len(got["dependencies"]) == 1000, (len(got["nodes"]), len(got["dependencies"]))
print(f"{workers_s:.3f} {deps_s:.3f} {onetree_s:.3f} {post_empty:.2f} {post_full:.2f} {statistics.median(times):.0f}")
PY

ROWS=()

# bench_backend sqlite|postgres: a fresh database of that backend, two organizations (one to
# fill, one kept empty), the driver against them.
bench_backend() {
    BACKEND="$1"
    start_server
    local key_full key_empty
    read -r key_full _ < <(new_key "bench full")
    read -r key_empty _ < <(new_key "bench empty")
    log "$BACKEND: bulk PUTs of $DEPS workers and dependencies, $POSTS POSTs, $APPLIES route applications"
    ROWS+=("$BACKEND $(python3 "$WORK/driver.py" "$BASE" "$key_full" "$key_empty" "$DEPS" "$POSTS" "$APPLIES")")
    stop_server
}

START_DATE="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
bench_backend sqlite
PG_NOTE=""
if [ "$SQLITE_ONLY" -eq 1 ]; then
    PG_NOTE="postgres: skipped (--sqlite-only)"
else
    psql -q "$PG_URL" -c 'SELECT 1' >/dev/null 2>&1 || {
        echo "[bench] error: PostgreSQL does not answer at $PG_URL (set PRODOPS_BENCH_PG_URL, or pass --sqlite-only)" >&2
        exit 1
    }
    bench_backend postgres
    PG_NOTE="postgres: a throwaway database beside $PG_URL (dropped at the end)"
fi

report() {
    echo "prodops dependency benchmark, $START_DATE"
    echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'); $(nproc) CPUs; N = $DEPS; one call at a time over one connection"
    [ -n "$PG_NOTE" ] && echo "$PG_NOTE"
    echo
    printf '%-9s %11s %11s %9s %12s %9s %11s %10s %10s %6s %9s %6s\n' backend 'workers/s' 'deps/s' 'share' 'one tree/s' \
        'POST ms' 'POST full' ratio 'apply ms' bulk post apply
    local row b ws ds ts pe pf ap
    for row in "${ROWS[@]}"; do
        read -r b ws ds ts pe pf ap <<<"$row"
        python3 - "$b" "$ws" "$ds" "$ts" "$pe" "$pf" "$ap" "$DEPS" <<'PY'
import sys
b, ws, ds, ts, pe, pf, ap, n = sys.argv[1:]
ws, ds, ts, pe, pf, ap, n = map(float, (ws, ds, ts, pe, pf, ap, n))
share, ratio = ws / ds, pf / pe
ok = lambda c: "PASS" if c else "FAIL"
print(f"{b:<9} {n / ws:>11.0f} {n / ds:>11.0f} {share * 100:>8.1f}% {n / ts:>12.0f} {pe:>9.2f} {pf:>11.2f} "
      f"{ratio:>10.2f} {ap:>10.0f} {ok(share >= 0.2):>6} {ok(ratio <= 1.5):>9} {ok(ap < 2000):>6}")
PY
    done
    echo
    echo "share: dependencies/s as a share of workers/s (target >= 20%); ratio: POST in the organization"
    echo "holding 2N dependencies / POST in an empty one (target <= 1.5); apply: a route of 1,000 nodes"
    echo "with 1,000 dependencies (target < 2,000 ms)"
}

mkdir -p "$ROOT/bench/results"
report | tee "$ROOT/bench/results/dependencies-$(date -u +%Y%m%d-%H%M%S).txt"
