# tests/lib/harness.sh — what the shell integration tests share (sourced,
# not run: ctest runs tests/integration/*.sh only).
#
#   . "$repo/tests/lib/harness.sh"; th_init NAME
#
# sets repo, BOOTSTRAP, BIN, KAFKA_STATE_DIR (from SV_BUILD_DIR), a work
# directory $work removed at exit, $pid (a supervisor to stop at exit),
# ok/fail with the "N passed, M failed" summary line ctest output ends
# with (also on an unexpected exit under set -e), th_free_port and
# th_wait_up URL. fail prints the last lines of $work/log when there is one.

th_init() {
    TH_NAME=$1
    repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    BOOTSTRAP=${KAFKA_BOOTSTRAP:-127.0.0.1:19092}
    BIN=${STREAMVISOR_BIN:-$repo/build/dev/streamvisor}
    if [ -z "${KAFKA_STATE_DIR:-}" ] && [ -n "${SV_BUILD_DIR:-}" ]; then
        export KAFKA_STATE_DIR=$SV_BUILD_DIR/kafka
    fi
    work=$(mktemp -d "/tmp/sv-$TH_NAME.XXXXXX")
    pid=
    passed=0
    failed=0
    summary=
    trap th_cleanup EXIT
}

th_cleanup() {
    local rc=$?
    if [ -z "$summary" ] && [ $rc -ne 0 ]; then
        echo "$TH_NAME: FAIL: unexpected exit $rc" >&2
        echo "$passed passed, $((failed + 1)) failed"
    fi
    if [ -n "$pid" ]; then
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}

ok() { passed=$((passed + 1)); echo "ok: $*"; }

fail() {
    failed=$((failed + 1))
    echo "$TH_NAME: FAIL: $*" >&2
    if [ -s "$work/log" ]; then
        echo "----- last lines of the supervisor log -----" >&2
        tail -n 20 "$work/log" >&2
    fi
    summary=1
    echo "$passed passed, $failed failed"
    exit 1
}

# A free TCP port on loopback.
th_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Wait up to 10 s for the supervisor at URL to answer.
th_wait_up() {
    for _ in $(seq 100); do curl -sf "$1/v1/info" >/dev/null && return 0; sleep 0.1; done
    curl -sf "$1/v1/info" >/dev/null
}
