# Sourced by the callgrind benches (read-instructions.sh, hierarchy-instructions.sh): a work
# directory removed on exit, and a server started and stopped under an optional wrapper.
# The sourcing script sets ROOT, and SERVER (the binary) before calling `start`.

command -v valgrind >/dev/null || apt-get install -y -qq valgrind >/dev/null

# servers_to_measure [SERVER_BINARY...]: sets SERVERS to the binaries given, or builds this
# checkout's release server and measures that.
servers_to_measure() {
    SERVERS=("$@")
    if ((${#SERVERS[@]} == 0)); then
        cargo build --release --locked -q -p prodops-server
        SERVERS=("${CARGO_TARGET_DIR:-$ROOT/target}/release/prodops-server")
    fi
}

WORK="$(mktemp -d)"
PID=""
cleanup() {
    [[ -n "$PID" ]] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

# start DB [wrapper args...]: starts "$SERVER" on DB (under the given wrapper, such as
# `valgrind --tool=callgrind ...` or `env`), sets PID and BASE (its URL). Waits up to two
# minutes: under callgrind the start-up's migrations are slow.
start() {
    local db="$1"
    shift
    # Emptied here, not by the redirection below: that runs in the background child, and the
    # loop could read the previous server's address before the child truncates the file.
    : >"$WORK/out"
    "$@" "$SERVER" serve --bind 127.0.0.1:0 --database "$db" --rate-limit 1000000000 \
        >"$WORK/out" 2>"$WORK/err" &
    PID=$!
    BASE=""
    for _ in $(seq 1200); do
        BASE="$(sed -n 's/^listening on //p' "$WORK/out")"
        [[ -n "$BASE" ]] && return
        kill -0 "$PID" 2>/dev/null || { cat "$WORK/err" >&2; exit 1; }
        sleep 0.1
    done
    echo "the server did not start" >&2
    exit 1
}

stop() {
    kill -TERM "$PID"
    wait "$PID" || true
    PID=""
}
