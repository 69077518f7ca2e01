#!/usr/bin/env bash
# End-to-end test of the join step at submit (docs/joins.md) — no Kafka
# broker: starts `streamvisor serve` on 127.0.0.1 port 0 with the embedded
# development cluster and checks, over HTTP:
#   - GET /v1/info reports stateful_join_support partially_covered (the
#     co-partitioning rule at parallelism > 1, no Substrait JoinRel) and
#     the join operator covered;
#   - valid interval and lookup joins are accepted (201) and their status
#     document has the "join" object of the second input;
#   - at parallelism 2 a join whose inputs are not declared partitioned by
#     the join key is refused with 422 coverage naming the field;
#   - a take column clashing with a left column is a 400 naming both, and
#     a missing bound a 400 naming the field;
#   - a spec without a join is accepted (control).
# The joins' output on a real broker: tests/integration/it_joins.c.
# Every wait polls with a deadline; the server is stopped on any exit.
set -euo pipefail

BIN=${STREAMVISOR_BIN:-${SV_BUILD_DIR:-build/dev}/streamvisor}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sv-e2e-joins.XXXXXX")
server_pid=
passed=0

cleanup() {
    if [ -n "$server_pid" ]; then
        kill -TERM "$server_pid" 2>/dev/null || true
        for _ in $(seq 1 100); do
            kill -0 "$server_pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
    echo "joins: FAIL: $*" >&2
    [ -s "$tmp/body" ] && { echo "--- last body:" >&2; head -c 2000 "$tmp/body" >&2; echo >&2; }
    [ -s "$tmp/serve.err" ] && { echo "--- server log (tail):" >&2; tail -20 "$tmp/serve.err" >&2; }
    echo "$passed passed, 1 failed"
    exit 1
}
ok() { passed=$((passed + 1)); echo "joins: ok: $*"; }

command -v jq >/dev/null 2>&1 || fail "jq not found (run deploy/install-deps.sh)"
[ -x "$BIN" ] || fail "streamvisor binary '$BIN' not found (set STREAMVISOR_BIN)"

mkdir -p "$tmp/data"
"$BIN" serve --listen 127.0.0.1:0 --data-dir "$tmp/data" \
    >"$tmp/serve.out" 2>"$tmp/serve.err" </dev/null &
server_pid=$!
URL=
for _ in $(seq 1 600); do
    kill -0 "$server_pid" 2>/dev/null || fail "server exited"
    URL=$(sed -n 's/^streamvisor listening on \(http:[^ ]*\)$/\1/p' "$tmp/serve.out" | head -1)
    [ -n "$URL" ] && break
    sleep 0.1
done
[ -n "$URL" ] || fail "the server did not listen within 60 s"
ok "server listening at $URL"

# post SPEC: HTTP status in $code, body in $tmp/body
post() {
    code=$(curl -s -o "$tmp/body" -w '%{http_code}' -X POST \
        -H 'Content-Type: application/json' --data-binary "$1" "$URL/v1/jobs")
}

curl -sf -o "$tmp/body" "$URL/v1/info" || fail "GET /v1/info"
st=$(jq -r '.capabilities[] | select(.requirement.capability == "stateful_join_support"
        and .requirement.target.kind == "plan") | .state' "$tmp/body")
[ "$st" = partially_covered ] || fail "/v1/info: stateful_join_support is '$st', expected partially_covered"
st=$(jq -r '.capabilities[] | select(.requirement.target.path == "capabilities/operator/join") | .state' "$tmp/body")
[ "$st" = covered ] || fail "/v1/info: the join operator is '$st', expected covered"
jq -r '.capability_notes.stateful_join_support' "$tmp/body" |
    grep -q 'co-partitioned' || fail "/v1/info: the note does not state the co-partitioning rule"
ok "/v1/info: stateful_join_support partially covered (with the reason), the join operator covered"

# orders (generator) with a second generator input as the right side
spec() { # $1: join body, $2: job name (default j)
    cat <<EOF
{"name": "${2:-j}", "source": {"kind": "generator", "count": 100000, "rate_per_s": 100},
 "schema": [{"name": "seq", "type": "int64"}, {"name": "ts", "type": "timestamp_ms"}],
 "event_time": {"field": "ts"},
 "pipeline": [{"join": {$1}}, {"filter": "true"}],
 "sink": {"kind": "memory"}}
EOF
}
RIGHT='"source": {"kind": "generator", "count": 100000, "rate_per_s": 100},
  "schema": [{"name": "seq", "type": "int64"}, {"name": "ts", "type": "timestamp_ms"},
             {"name": "v", "type": "string"}],
  "event_time": {"field": "ts"}, "on": {"left": ["seq"], "right": ["seq"]}'

post "$(spec "\"type\": \"interval\", $RIGHT, \"lower_ms\": 0, \"upper_ms\": 10, \"take\": {\"v\": \"v\"}")"
[ "$code" = 201 ] || fail "valid interval join: HTTP $code, expected 201"
JOB=$(jq -r .id "$tmp/body")
jq -e '.coverage[]? | select(.requirement.capability == "stateful_join_support") | select(.state == "covered")' \
    "$tmp/body" >/dev/null || fail "the answer has no covered stateful_join_support record"
ok "a valid interval join is accepted, stateful_join_support covered"

code=
for _ in $(seq 1 100); do
    curl -sf -o "$tmp/body" "$URL/v1/jobs/$JOB" || fail "GET /v1/jobs/$JOB"
    [ "$(jq -r '.join.records_in // 0' "$tmp/body")" -ge 1 ] && { code=ok; break; }
    sleep 0.1
done
[ "$code" = ok ] || fail "the status document has no join input reading"
[ "$(jq -r .join.type "$tmp/body")" = interval ] || fail "status join.type"
jq -e '.join.state.left.bytes >= 0 and .join.state.right.rows >= 0' "$tmp/body" >/dev/null ||
    fail "status join.state per input"
ok "the status document shows the join's second input and its state per input"

post "$(spec "\"type\": \"lookup\", $RIGHT, \"kind\": \"left\", \"take\": {\"v\": \"v\"}" jl)"
[ "$code" = 201 ] || fail "valid lookup join: HTTP $code, expected 201"
ok "a valid lookup join is accepted"

post '{"name": "jp", "parallelism": 2, "source": {"topic": "orders"},
 "schema": [{"name": "seq", "type": "int64"}, {"name": "ts", "type": "timestamp_ms"}],
 "event_time": {"field": "ts"},
 "pipeline": [{"join": {"type": "interval", "source": {"topic": "payments"},
   "schema": [{"name": "seq", "type": "int64"}, {"name": "ts", "type": "timestamp_ms"},
              {"name": "v", "type": "string"}],
   "event_time": {"field": "ts"}, "on": {"left": ["seq"], "right": ["seq"]},
   "lower_ms": 0, "upper_ms": 10, "take": {"v": "v"}}}],
 "sink": {"topic": "out"}}'
[ "$code" = 422 ] || fail "parallel join without co-partitioning: HTTP $code, expected 422"
[ "$(jq -r .error.category "$tmp/body")" = coverage ] || fail "422 category"
[ "$(jq -r .error.field "$tmp/body")" = "source.partitioned_by" ] || fail "422 field"
jq -e '.error.details[] | select(.requirement.capability == "stateful_join_support"
        and .state == "uncovered")' "$tmp/body" >/dev/null ||
    fail "422 without the uncovered stateful_join_support record"
jq -r .error.message "$tmp/body" | grep -q 'co-partitioned\|keyed by the join key' ||
    fail "422 message does not say why"
ok "a parallel join of inputs not partitioned by its key is refused with 422 naming the field"

post "$(spec "\"type\": \"interval\", $RIGHT, \"lower_ms\": 0, \"upper_ms\": 10, \"take\": {\"ts\": \"v\"}")"
[ "$code" = 400 ] || fail "clash: HTTP $code, expected 400"
[ "$(jq -r .error.field "$tmp/body")" = "pipeline[0].join.take.ts" ] || fail "clash field"
jq -r .error.message "$tmp/body" |
    grep -q "join output column 'ts' (right column 'v') clashes with left column 'ts'" ||
    fail "the clash message does not name both columns"
ok "a take clash is a 400 naming both columns"

post "$(spec "\"type\": \"interval\", $RIGHT, \"upper_ms\": 10")"
[ "$code" = 400 ] || fail "missing lower_ms: HTTP $code"
[ "$(jq -r .error.field "$tmp/body")" = "pipeline[0].join.lower_ms" ] || fail "missing lower_ms field"
ok "a missing bound is a 400 naming the field"

curl -sf -o "$tmp/body" "$URL/v1/jobs" || fail "GET /v1/jobs"
[ "$(jq '.jobs | length' "$tmp/body")" = 2 ] || fail "the refused joins left a job behind"
ok "the refused joins created no job"

post '{"name": "nojoin", "source": {"kind": "generator", "count": 10},
 "schema": [{"name": "seq", "type": "int64"}], "sink": {"kind": "memory"}}'
[ "$code" = 201 ] || fail "a spec without a join: HTTP $code, expected 201"
ok "a spec without a join is accepted (control)"

echo "$passed passed, 0 failed"
