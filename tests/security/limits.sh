#!/usr/bin/env bash
# limits.sh — request limits (limits.py says what is checked): 1,000 idle
# connections vs /healthz, slowloris, header and body caps, request
# smuggling (duplicate Content-Length, CL+TE), the per-client cap.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
sec_init limits
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
[ "$(ulimit -n)" -ge 2200 ] || { echo "limits: SKIP: ulimit -n $(ulimit -n) < 2200"; echo "0 passed, 0 failed"; summary=1; exit 0; }

port=$(th_free_port)
cat > "$work/sv.yaml" <<EOF
listen: 127.0.0.1:$port
data_dir: $work/data
auth: {tokens_file: tokens.yaml}
limits: {max_connections: 2048, max_connections_per_client: 1100,
         request_timeout_s: 3, max_header_bytes: 8192, max_body_bytes: 65536}
EOF
sec_start "$work/sv.yaml" "http://127.0.0.1:$port"
bigpid=$pid

small=$(th_free_port)
cat > "$work/small.yaml" <<EOF
listen: 127.0.0.1:$small
data_dir: $work/data2
auth: {tokens_file: tokens.yaml}
limits: {max_connections_per_client: 8}
EOF
"$BIN" serve --config "$work/small.yaml" > "$work/small.log" 2>&1 &
smallpid=$!
trap 'kill $smallpid 2>/dev/null || true; th_cleanup' EXIT
for _ in $(seq 100); do
    curl -s -o /dev/null "http://127.0.0.1:$small/healthz" && break
    sleep 0.1
done

"$PY" "$here/limits.py" 127.0.0.1 "$port" "$bigpid" "$small" > "$work/limits.out" 2>&1 || {
    cat "$work/limits.out" >&2
    fail "limits.py"
}
while read -r line; do
    case $line in ok\ *) ok "${line#ok }" ;; esac
done < "$work/limits.out"
kill -0 "$bigpid" || fail "the supervisor died"
grep -q "limits.request_timeout_s" "$work/log" || fail "no log line for the reaped request"

summary=1
echo "$passed passed, $failed failed"
