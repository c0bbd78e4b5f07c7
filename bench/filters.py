"""Seeding and measuring for bench/filters.sh.

    python3 bench/filters.py seed BASE_URL API_KEY BACKEND
    python3 bench/filters.py measure BASE_URL API_KEY BACKEND

`seed` stores BENCH_WORKERS workers (every 50th inactive, every 100th in one team) and
BENCH_ORDERS orders (every 50th with `priority` = `hold`) through the bulk endpoints.
`measure` times each pair (filtered, unfiltered) on one keep-alive connection, the pairs
interleaved, BENCH_ROUNDS rounds, and prints the medians and their ratio.
"""

import http.client
import json
import os
import statistics
import sys
import time
import urllib.parse

TEAM = "00000000-0000-7000-8000-00000000beef"


def connect(base):
    u = urllib.parse.urlsplit(base)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=600)


def call(conn, key, method, path, body=None):
    headers = {"X-API-Key": key}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    conn.request(method, "/api/v2" + path, body=data, headers=headers)
    resp = conn.getresponse()
    payload = resp.read()
    if resp.status >= 300:
        sys.exit(f"{method} {path}: {resp.status} {payload[:300]!r}")
    return json.loads(payload) if payload else None


def bulk(conn, key, resource, records, batch):
    for start in range(0, len(records), batch):
        chunk = records[start : start + batch]
        reply = call(conn, key, "PUT", f"/{resource}/bulk", chunk)
        if reply["count"] != len(chunk):
            sys.exit(f"bulk PUT /{resource} stored {reply['count']} of {len(chunk)}")


def seed(base, key, backend):
    conn = connect(base)
    workers = int(os.environ.get("BENCH_WORKERS", "200000"))
    orders = int(os.environ.get("BENCH_ORDERS", "100000"))
    started = time.monotonic()
    team = call(conn, key, "POST", "/team", {"name": "Bench team"})["id"]
    bulk(
        conn,
        key,
        "worker",
        [
            {
                "name": f"Bench Worker {i:06d}",
                "customerIdentifier": f"bench-{i:06d}",
                "status": "inactive" if i % 50 == 0 else "active",
                "teamId": team if i % 100 == 0 else None,
            }
            for i in range(workers)
        ],
        10_000,
    )
    print(f"[bench] {backend}: {workers} workers in {time.monotonic() - started:.1f} s", file=sys.stderr)
    started = time.monotonic()
    call(
        conn,
        key,
        "POST",
        "/custom-property",
        {"key": "priority", "name": "Priority", "dataType": "select", "options": ["hold", "normal"]},
    )
    bulk(
        conn,
        key,
        "deliverable",
        [
            {
                "name": f"Bench Order {i:06d}",
                "type": "order",
                "data": {"properties": {"priority": "hold" if i % 50 == 0 else "normal"}},
            }
            for i in range(orders)
        ],
        5_000,
    )
    print(f"[bench] {backend}: {orders} orders in {time.monotonic() - started:.1f} s", file=sys.stderr)


def measure(base, key, backend):
    conn = connect(base)
    rounds = int(os.environ.get("BENCH_ROUNDS", "40"))
    team = call(conn, key, "GET", "/team?pageSize=1")["values"][0]["id"]
    some = call(conn, key, "GET", "/worker?pageSize=1&status=inactive")["values"][0]["customerIdentifier"]
    hold = call(conn, key, "GET", "/deliverable/count?data.properties.priority=hold")["count"]
    pairs = [
        ("worker list status=inactive", "/worker?status=inactive&pageSize=100", "/worker?pageSize=100"),
        ("worker count status=inactive", "/worker/count?status=inactive", "/worker/count"),
        ("worker list teamId=T", f"/worker?teamId={team}&pageSize=100", "/worker?pageSize=100"),
        ("worker list customerIdentifier=X", f"/worker?customerIdentifier={some}&pageSize=100", "/worker?pageSize=100"),
        ("worker list status=active (98%)", "/worker?status=active&pageSize=100", "/worker?pageSize=100"),
        ("worker count status=active", "/worker/count?status=active", "/worker/count"),
        (
            "worker list status=active&teamId=T",
            f"/worker?status=active&teamId={team}&pageSize=100",
            "/worker?pageSize=100",
        ),
        (
            "order list priority=hold",
            "/deliverable?data.properties.priority=hold&pageSize=100",
            "/deliverable?pageSize=100",
        ),
        ("order count priority=hold", "/deliverable/count?data.properties.priority=hold", "/deliverable/count"),
        ("order list type=order (all)", "/deliverable?type=order&pageSize=100", "/deliverable?pageSize=100"),
        ("order count type=order", "/deliverable/count?type=order", "/deliverable/count"),
    ]
    times = {p[0]: ([], []) for p in pairs}
    for _ in range(3):  # warm-up
        for _, filtered, plain in pairs:
            call(conn, key, "GET", filtered)
            call(conn, key, "GET", plain)
    for _ in range(rounds):
        for name, filtered, plain in pairs:
            for path, out in ((filtered, times[name][0]), (plain, times[name][1])):
                t = time.perf_counter()
                call(conn, key, "GET", path)
                out.append((time.perf_counter() - t) * 1000)
    print(f"\n{backend}: medians of {rounds} interleaved requests, one keep-alive connection ({hold} orders on hold)")
    print(f"{'filter':38} {'filtered ms':>12} {'unfiltered ms':>14} {'ratio':>7}  target <= 2")
    for name, _, _ in pairs:
        f, u = statistics.median(times[name][0]), statistics.median(times[name][1])
        verdict = "ok" if f / u <= 2 else "OVER"
        print(f"{name:38} {f:12.2f} {u:14.2f} {f / u:7.2f}  {verdict}")


if __name__ == "__main__":
    cmd, base, key, backend = sys.argv[1:5]
    {"seed": seed, "measure": measure}[cmd](base, key, backend)
