#!/usr/bin/env bash
# End-to-end test of the streamvisor CLI (docs/cli.md) — no Kafka broker.
#
# Part 1, against a real server: starts `streamvisor serve` on 127.0.0.1
# port 0 (the kernel picks a free port; the URL is read from the server's
# "listening on" line) with a fresh --data-dir and no --bootstrap-servers
# (embedded development cluster), submits generator → memory-sink jobs and
# runs every CLI subcommand against it, checking output and exit codes.
# Endpoints the server does not implement yet (checkpoint, checkpoints,
# drain, resume, restart may answer 422 coverage) must come back as the
# server's error with exit code 3, or succeed with the documented output.
#
# Part 2, against a stub server (python3, in this file) whose answers are
# fixed: the exact request each command sends (method, path, body), exact
# lag/checkpoints tables from a known status document, chunked and
# close-delimited bodies, HTTP 5xx (exit 4), a non-JSON error body, and a
# server that never answers (exit 2 within STREAMVISOR_TIMEOUT_MS).
#
# Bounded: every wait polls with a deadline; the whole test takes a few
# seconds. The servers are stopped and the temp dir removed on any exit.
set -euo pipefail

BIN=${STREAMVISOR_BIN:-${SV_BUILD_DIR:-build/dev}/streamvisor}
PY=${CLI_TEST_PYTHON:-/usr/bin/python3}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sv-e2e-cli.XXXXXX")
server_pid=
stub_pid=
passed=0

cleanup() {
    for pid in $server_pid $stub_pid; do
        kill -TERM "$pid" 2>/dev/null || continue
        for _ in $(seq 1 100); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
    echo "cli: FAIL: $*" >&2
    for f in out err; do
        [ -s "$tmp/$f" ] && { echo "--- last $f:" >&2; head -c 3000 "$tmp/$f" >&2; }
    done
    [ -s "$tmp/serve.err" ] && { echo "--- server log (tail):" >&2; tail -20 "$tmp/serve.err" >&2; }
    echo "$passed passed, 1 failed"
    exit 1
}
ok() { passed=$((passed + 1)); echo "cli: ok: $*"; }

for tool in jq "$PY"; do
    command -v "$tool" >/dev/null 2>&1 || fail "$tool not found (run deploy/install-deps.sh)"
done
[ -x "$BIN" ] || fail "streamvisor binary '$BIN' not found (set STREAMVISOR_BIN)"

# run ARGS...: the CLI with stdout in $tmp/out, stderr in $tmp/err, exit
# code in $rc; bounded by timeout(1) so a hang fails instead of blocking.
run() {
    set +e
    timeout 60 "$BIN" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
    rc=$?
    set -e
    [ "$rc" -ne 124 ] || fail "'streamvisor $*' hung"
}
# run_in FILE ARGS...: same with stdin from FILE.
run_in() {
    local in=$1
    shift
    set +e
    timeout 60 "$BIN" "$@" >"$tmp/out" 2>"$tmp/err" <"$in"
    rc=$?
    set -e
}
expect_rc() { [ "$rc" -eq "$1" ] || fail "$2: exit code $rc, expected $1"; }
out() { cat "$tmp/out"; }
err() { cat "$tmp/err"; }
# expect_out TEXT WHAT: stdout is exactly TEXT (plus final newline).
expect_out() {
    [ "$(out)" = "$1" ] || {
        echo "--- expected:" >&2
        printf '%s\n' "$1" >&2
        fail "$2: unexpected output"
    }
}
expect_err_line() { [ "$(head -1 "$tmp/err")" = "$1" ] || fail "$2: stderr first line is '$(head -1 "$tmp/err")', expected '$1'"; }

# wait_until DESC SECONDS CMD...: poll CMD until it succeeds.
wait_until() {
    local desc=$1 secs=$2
    shift 2
    local deadline=$((SECONDS + secs))
    until "$@"; do
        [ $SECONDS -lt $deadline ] || fail "timed out after ${secs}s waiting for $desc"
        sleep 0.1
    done
}

json_of() { "$BIN" "$1" --json "${@:2}" 2>/dev/null; }
state_of() { json_of status "$1" | jq -r .state; }
state_is() { [ "$(state_of "$1")" = "$2" ]; }
# num_ge ID EXPR N: jq EXPR on the status document >= N
num_ge() { [ "$(json_of status "$1" | jq -r "$2")" -ge "$3" ]; }

# ---- part 0: no server needed ----

run help
expect_rc 0 "help"
for c in serve submit jobs status wait lag cancel drain resume restart checkpoint \
         checkpoints observations preview result delete info metrics help version; do
    grep -Eq "^  $c +[a-z]" "$tmp/out" || fail "help does not list '$c'"
done
grep -q 'STREAMVISOR_URL' "$tmp/out" || fail "help does not name STREAMVISOR_URL"
ok "help lists every subcommand"

run --version
expect_rc 0 "--version"
grep -Eq '^streamvisor [0-9]+\.[0-9]+\.[0-9]+' "$tmp/out" || fail "--version: '$(out)'"
run version
expect_rc 0 "version"
ok "version"

run; expect_rc 1 "no command"
run bogus; expect_rc 1 "unknown command"
expect_err_line "streamvisor: unknown command 'bogus'" "unknown command"
run status; expect_rc 1 "status without ID"
expect_err_line "streamvisor status: missing ID" "status without ID"
run jobs extra; expect_rc 1 "jobs with an argument"
run jobs --final-watermark; expect_rc 1 "option of another command"
expect_err_line "streamvisor jobs: option '--final-watermark' does not apply here" "option of another command"
run drain x --timeout-ms soon; expect_rc 1 "non-numeric --timeout-ms"
run restart x --from-checkpoint yesterday; expect_rc 1 "bad --from-checkpoint"
run preview x -n; expect_rc 1 "-n without a value"
run jobs --server ftp://127.0.0.1:1; expect_rc 1 "ftp URL"
run jobs --server http://127.0.0.1:1 --cacert /etc/hostname; expect_rc 1 "TLS file for an http URL"
run jobs --server https://127.0.0.1:1; expect_rc 2 "https URL, nothing listening"
STREAMVISOR_TIMEOUT_MS=soon run jobs; expect_rc 1 "bad STREAMVISOR_TIMEOUT_MS"
run_in /dev/null submit -; expect_rc 1 "empty spec on stdin"
run submit "$tmp/no-such-file.json"; expect_rc 1 "missing spec file"
ok "usage errors exit 1 before any request"

# ---- part 1: a real server ----

mkdir -p "$tmp/data"
"$BIN" serve --listen 127.0.0.1:0 --data-dir "$tmp/data" \
    >"$tmp/serve.out" 2>"$tmp/serve.err" </dev/null &
server_pid=$!
listening() {
    kill -0 "$server_pid" 2>/dev/null || fail "server exited: $(tail -5 "$tmp/serve.err")"
    grep -q '^streamvisor listening on http://' "$tmp/serve.out"
}
wait_until "the server to listen" 60 listening
URL=$(sed -n 's/^streamvisor listening on \(http:[^ ]*\)$/\1/p' "$tmp/serve.out" | head -1)
[ -n "$URL" ] || fail "no URL in the server's output"
export STREAMVISOR_URL=$URL
ok "server listening at $URL"

# --server before the command, after it, and from the environment agree.
run jobs --json
expect_rc 0 "jobs --json"
[ "$(jq '.jobs | length' "$tmp/out")" = 0 ] || fail "fresh server has jobs: $(out)"
run jobs
expect_rc 0 "jobs"
expect_out "ID  NAME  MODE  STATE  ATTEMPT" "jobs on an empty server"
STREAMVISOR_URL=http://127.0.0.1:1 run --server "$URL" jobs
expect_rc 0 "--server before the command"
STREAMVISOR_URL=http://127.0.0.1:1 run jobs --server "$URL"
expect_rc 0 "--server after the command"
ok "jobs on an empty server; --server and STREAMVISOR_URL"

run info
expect_rc 0 "info"
grep -Eq '^backend +streamvisor [0-9]' "$tmp/out" || fail "info: no backend line"
grep -Eq '^CAPABILITY +STATUS +REASON$' "$tmp/out" || fail "info: no capability table"
grep -Eq '^stateful_join_support +(covered|partially_covered|uncovered|unknown) ' "$tmp/out" ||
    fail "info: no stateful_join_support row"
grep -q 'embedded development cluster' "$tmp/out" || fail "info: development cluster not shown"
run info --json
expect_rc 0 "info --json"
[ "$(jq -r .backend_kind "$tmp/out")" = streamvisor ] || fail "info --json: $(out)"
ok "info (table and --json)"

cat >"$tmp/stream.json" <<'EOF'
{"name": "cli-stream", "mode": "stream",
 "source": {"kind": "generator", "generator": "sequence", "rate_per_s": 400, "seed": 7},
 "schema": [{"name": "id", "type": "int64"}, {"name": "region", "type": "string"},
            {"name": "ts", "type": "timestamp_ms"}],
 "pipeline": [{"filter": "id >= 0"}],
 "sink": {"kind": "memory"}, "delivery": "at_least_once"}
EOF
# bounded, 4000 rows at 100 rows/s: stays running (with a known backlog)
# for 40 s, long after this test looked at it (it is cancelled below)
cat >"$tmp/slow.json" <<'EOF'
{"name": "cli-slow", "mode": "bounded",
 "source": {"kind": "generator", "generator": "sequence", "count": 4000,
            "rate_per_s": 100, "seed": 1},
 "schema": [{"name": "id", "type": "int64"}],
 "pipeline": [{"filter": "id >= 0"}],
 "sink": {"kind": "null"}}
EOF
cat >"$tmp/bounded.json" <<'EOF'
{"name": "cli-bounded", "mode": "bounded",
 "source": {"kind": "generator", "generator": "sequence", "count": 20, "seed": 1},
 "schema": [{"name": "id", "type": "int64"}, {"name": "region", "type": "string"}],
 "pipeline": [{"filter": "id < 5"}],
 "sink": {"kind": "memory"}}
EOF

run submit "$tmp/stream.json"
expect_rc 0 "submit FILE"
SID=$(out)
[[ "$SID" =~ ^[A-Za-z0-9._~-]+$ ]] || fail "submit printed '$SID', not one job id"
run_in "$tmp/slow.json" submit -
expect_rc 0 "submit -"
LID=$(out)
run_in "$tmp/bounded.json" submit - --json
expect_rc 0 "submit --json"
BID=$(jq -r .id "$tmp/out")
[ "$(jq -r .plan_id "$tmp/out" | wc -c)" -gt 10 ] || fail "submit --json: no plan_id: $(out)"
ok "submit FILE, submit -, submit --json"

run submit "$tmp/stream.json"
expect_rc 3 "submit with a name in use"
expect_err_line "streamvisor: conflict: job name 'cli-stream' is in use by job '$SID' ($(state_of "$SID"))" \
    "submit with a name in use"
echo '{"name": "no-source", "mode": "stream"}' >"$tmp/bad.json"
run submit "$tmp/bad.json"
expect_rc 3 "submit an invalid spec"
grep -Eq '^streamvisor: submission: .+' "$tmp/err" || fail "invalid spec: '$(err)'"
grep -Eq '^  field: [a-z_.]+' "$tmp/err" || fail "invalid spec: no field line: '$(err)'"
ok "refused submits exit 3 with the server's category and message"

wait_until "stream job running" 30 state_is "$SID" running
wait_until "stream job output" 30 num_ge "$SID" .records_out 3
wait_until "bounded job completed" 30 state_is "$BID" completed

run jobs
expect_rc 0 "jobs"
expect_head="ID NAME MODE STATE ATTEMPT"
[ "$(head -1 "$tmp/out" | tr -s ' ')" = "$expect_head" ] || fail "jobs header: $(head -1 "$tmp/out")"
[ "$(wc -l <"$tmp/out")" -eq 4 ] || fail "jobs: expected 3 rows"
grep -Eq "^$SID +cli-stream +stream +running +1$" "$tmp/out" || fail "jobs: no row for the stream job"
grep -Eq "^$BID +cli-bounded +bounded +completed +1$" "$tmp/out" || fail "jobs: no row for the bounded job"
ok "jobs table"

run status "$SID"
expect_rc 0 "status"
grep -Eq "^id +$SID$" "$tmp/out" || fail "status: id line"
grep -Eq '^mode +stream, delivery at_least_once$' "$tmp/out" || fail "status: mode line"
grep -Eq '^state +running since [0-9-]+T' "$tmp/out" || fail "status: state line"
grep -Eq '^attempt +1 \(restarts 0\)$' "$tmp/out" || fail "status: attempt line"
grep -Eq '^records +in [0-9]+, out [0-9]+, late 0, invalid 0$' "$tmp/out" || fail "status: records line"
run status "$SID" --json
expect_rc 0 "status --json"
[ "$(jq -r '.id + " " + .state + " " + (.partitions | length | tostring)' "$tmp/out")" = "$SID running 4" ] ||
    fail "status --json: $(out)"
ok "status (summary and --json)"

# lag: a bounded generator of 4000 rows over 4 partitions has end offsets
# 1000 each (docs/generators.md); every row's LAG is END - NEXT and the
# total is their sum.
wait_until "slow job reading" 30 num_ge "$LID" .records_in 1
run lag "$LID"
expect_rc 0 "lag"
[ "$(head -1 "$tmp/out" | tr -s ' ')" = "TOPIC PARTITION NEXT_OFFSET END_OFFSET LAG" ] ||
    fail "lag header: $(head -1 "$tmp/out")"
awk 'NR > 1 && $1 == "-" {
         if ($4 != 1000 || $5 != $4 - $3) bad = 1; sum += $5; parts = parts $2 " " }
     $1 == "total" { total = $2 }
     END { if (bad || parts != "0 1 2 3 " || total != sum || sum <= 0) exit 1 }' "$tmp/out" ||
    fail "lag table rows do not add up"
grep -Eq '^watermark lag: (-|[0-9]+\.[0-9]{3} s)' "$tmp/out" || fail "lag: no watermark lag line"
run lag "$LID" --json
expect_rc 0 "lag --json"
[ "$(jq '[.partitions[].end_offset] | add' "$tmp/out")" = 4000 ] || fail "lag --json: $(out)"
ok "lag table: per partition END - NEXT, total, watermark lag"

run preview "$SID" -n 3
expect_rc 0 "preview -n 3"
[ "$(wc -l <"$tmp/out")" -eq 3 ] || fail "preview -n 3 printed $(wc -l <"$tmp/out") rows"
jq -e 'has("id") and has("region")' "$tmp/out" >/dev/null || fail "preview rows: $(out)"
run preview "$SID" --json
expect_rc 0 "preview --json"
[ "$(jq -r .id "$tmp/out")" = "$SID" ] || fail "preview --json: $(out)"
ok "preview"

run result "$BID"
expect_rc 0 "result"
expect_out '{"id":0,"region":"k0"}
{"id":1,"region":"k1"}
{"id":2,"region":"k2"}
{"id":3,"region":"k3"}
{"id":4,"region":"k4"}' "result of the bounded job"
run result "$BID" -n 2
expect_rc 0 "result -n 2"
[ "$(wc -l <"$tmp/out")" -eq 2 ] || fail "result -n 2 printed $(wc -l <"$tmp/out") rows"
grep -q 'truncated' "$tmp/err" || fail "result -n 2: no truncation note"
run result "$BID" --json
[ "$(jq .row_count "$tmp/out")" = 5 ] || fail "result --json: $(out)"
run result "$SID"
expect_rc 3 "result of a stream"
grep -Eq "^streamvisor: conflict: job '$SID' is a stream: collect on an unbounded stream is refused" "$tmp/err" ||
    fail "result of a stream: '$(err)'"
ok "result (rows, -n, --json, refused on a stream)"

run observations "$SID" -n 2
expect_rc 0 "observations -n 2"
[ "$(wc -l <"$tmp/out")" -eq 2 ] || fail "observations -n 2: $(out)"
grep -Eq '^1 [0-9-]+T[^ ]+ attempt 0 job_submitted \{.*"plan_id"' "$tmp/out" || fail "observations: first record: $(out)"
run observations "$SID" --after 1 -n 1
expect_rc 0 "observations --after 1"
grep -Eq '^2 ' "$tmp/out" || fail "observations --after 1: $(out)"
ok "observations"

run metrics
expect_rc 0 "metrics"
grep -qx 'streamvisor_up 1' "$tmp/out" || fail "metrics: no streamvisor_up 1"
grep -q '^# TYPE ' "$tmp/out" || fail "metrics: no TYPE lines"
ok "metrics"

# Lifecycle commands: implemented by the server, or refused with its error.
# Either way the CLI's answer must be exactly one of the two documented shapes.
# accepted_or_refused WHAT OK_REGEX
accepted_or_refused() {
    if [ "$rc" -eq 0 ]; then
        grep -Eq "$2" "$tmp/out" || fail "$1: output '$(out)'"
        echo "cli: note: $1 is implemented by the server"
    elif [ "$rc" -eq 3 ]; then
        grep -Eq '^streamvisor: [a-z_]+: .+' "$tmp/err" || fail "$1: stderr '$(err)'"
        echo "cli: note: $1 refused: $(head -1 "$tmp/err")"
    else
        fail "$1: exit code $rc"
    fi
}
run checkpoint "$SID"
accepted_or_refused "checkpoint" '^[0-9A-Za-z._-]+$'
run checkpoints "$SID"
accepted_or_refused "checkpoints" '^ID +STATUS +COMPLETED_AT +DURATION_MS +BYTES +ATTEMPT$'
run drain "$SID" --final-watermark --timeout-ms 10000
accepted_or_refused "drain" "^$SID: (draining|checkpointed|running|failed)$"
if [ "$rc" -eq 0 ]; then
    wait_until "drained job checkpointed" 30 state_is "$SID" checkpointed
    run resume "$SID"
    expect_rc 0 "resume of a checkpointed job"
    grep -Eq "^$SID: (pending|running|restarting)$" "$tmp/out" || fail "resume: $(out)"
    wait_until "resumed job running" 30 state_is "$SID" running
else
    run resume "$SID"
    accepted_or_refused "resume" "^$SID: [a-z]+$"
fi
run restart "$SID" --from-checkpoint latest --ignore-state
accepted_or_refused "restart" "^$SID: [a-z]+$"
wait_until "stream job running or restarting" 30 bash -c \
    '[[ "$("$0" status --json "$1" | jq -r .state)" =~ ^(running|restarting|pending)$ ]]' "$BIN" "$SID"
ok "checkpoint, checkpoints, drain, resume, restart answer as documented"

run delete "$SID"
expect_rc 3 "delete a running job"
grep -Eq "^streamvisor: conflict: cannot delete job '$SID': it is " "$tmp/err" || fail "delete running: '$(err)'"
run cancel "$SID"
expect_rc 0 "cancel"
expect_out "$SID: cancelled" "cancel"
[ "$(state_of "$SID")" = cancelled ] || fail "cancelled job is $(state_of "$SID")"
run cancel "$SID"
expect_rc 3 "cancel a cancelled job"
expect_err_line "streamvisor: conflict: cannot cancel job '$SID': it is cancelled" "cancel twice"
run cancel "$LID" --json
expect_rc 0 "cancel --json"
[ "$(jq -r .state "$tmp/out")" = cancelled ] || fail "cancel --json: $(out)"
ok "cancel (and refused twice, and delete of a running job)"

run delete "$SID"
expect_rc 0 "delete"
expect_out "$SID: deleted" "delete"
run status "$SID"
expect_rc 3 "status of a deleted job"
expect_err_line "streamvisor: not_found: job '$SID' does not exist" "status of a deleted job"
run jobs --json
[ "$(jq -r '[.jobs[].id] | sort | join(" ")' "$tmp/out")" = "$(printf '%s\n' "$LID" "$BID" | sort | paste -sd' ')" ] ||
    fail "jobs after delete: $(out)"
run delete "$LID" --purge
expect_rc 0 "delete --purge"
expect_out "$LID: deleted with its checkpoints" "delete --purge"
ok "delete; status of a deleted job exits 3"

# Stop the server; the same command now finds nobody (negative control for
# exit code 2, and proof that the passes above talked to this server).
kill -TERM "$server_pid"
wait_until "server exit" 60 bash -c '! kill -0 "$0" 2>/dev/null' "$server_pid"
wait "$server_pid" || fail "server exited with $? after SIGTERM"
server_pid=
run jobs
expect_rc 2 "jobs with the server gone"
grep -q "^streamvisor: cannot connect to '127.0.0.1:" "$tmp/err" || fail "server gone: '$(err)'"
ok "server stopped cleanly; CLI exits 2 without a server"

# ---- part 2: a stub server with fixed answers ----

cat >"$tmp/stub.py" <<'EOF'
# Fixed answers for the CLI; every request is logged as one JSON line.
import json, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

log = open(sys.argv[1], "a", buffering=1)
STATUS = {"id": "j1", "name": "n", "mode": "stream", "state": "running",
          "attempt": 2, "watermark_ms": 1704067200000,
          "lag": {"records": 35, "seconds": 1.5},
          "partitions": [
              {"topic": "orders", "partition": 0, "next_offset": 100,
               "end_offset": 130, "lag_records": 30},
              {"topic": "orders", "partition": 1, "next_offset": 7,
               "end_offset": 12, "lag_records": 5}]}
CKS = {"checkpoints": [{"id": 7, "status": "committed",
                        "completed_at": "2024-01-01T00:00:01.000Z",
                        "duration_ms": 12, "bytes": 345, "attempt": 2}]}

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n).decode() if n else None
    def send(self, status, obj, chunked=False, close_delimited=False):
        data = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(0, len(data), 5):
                part = data[i:i + 5]
                self.wfile.write(b"%x;ext=1\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\nX-Trailer: t\r\n\r\n")
        elif close_delimited:
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
    def handle_any(self, method):
        body = self.body()
        log.write(json.dumps({"method": method, "path": self.path,
                              "body": json.loads(body) if body else None}) + "\n")
        p = self.path
        if p == "/v1/jobs/j1":
            return self.send(200, STATUS)
        if p == "/v1/jobs/j1/checkpoints" and method == "GET":
            return self.send(200, CKS, chunked=True)
        if p == "/v1/jobs/j1/checkpoints":
            return self.send(201, {"id": "j1", "checkpoint_id": 8}, chunked=True)
        if p.startswith("/v1/jobs/j1/"):
            return self.send(200, {"id": "j1", "state": p.rsplit("/", 1)[1] + "-ok"})
        if p == "/metrics":
            return self.send(200, b"streamvisor_up 1\n", close_delimited=True)
        if p == "/v1/jobs/boom":
            return self.send(500, {"error": {"category": "runtime", "message": "boom"}})
        if p == "/v1/jobs/proxy":
            return self.send(502, b"bad gateway\nfrom a proxy")
        if p == "/v1/jobs/slow":
            time.sleep(5)
            return self.send(200, STATUS)
        self.send(404, {"error": {"category": "not_found", "message": "no " + p}})
    def do_GET(self): self.handle_any("GET")
    def do_POST(self): self.handle_any("POST")
    def do_DELETE(self): self.handle_any("DELETE")

srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
srv.daemon_threads = True
print(srv.server_address[1], flush=True)
srv.serve_forever()
EOF
: >"$tmp/requests.log"
"$PY" "$tmp/stub.py" "$tmp/requests.log" >"$tmp/stub.port" 2>"$tmp/stub.err" &
stub_pid=$!
wait_until "the stub server" 30 test -s "$tmp/stub.port"
export STREAMVISOR_URL=http://127.0.0.1:$(head -1 "$tmp/stub.port")

# last_request: the stub's record of the CLI's last request, compact.
last_request() { tail -1 "$tmp/requests.log" | jq -c .; }
expect_request() { [ "$(last_request)" = "$1" ] || fail "$2 sent $(last_request), expected $1"; }

run drain j1 --final-watermark --timeout-ms 5000
expect_rc 0 "stub drain"
expect_request '{"method":"POST","path":"/v1/jobs/j1/drain","body":{"final_watermark":true,"timeout_ms":5000}}' "drain"
expect_out "j1: drain-ok" "stub drain"
run drain j1
expect_request '{"method":"POST","path":"/v1/jobs/j1/drain","body":{"final_watermark":false}}' "drain without flags"
run restart j1 --from-checkpoint 7
expect_request '{"method":"POST","path":"/v1/jobs/j1/restart","body":{"ignore_state":false,"from_checkpoint":7}}' "restart --from-checkpoint 7"
run restart j1 --from-checkpoint latest --ignore-state
expect_request '{"method":"POST","path":"/v1/jobs/j1/restart","body":{"ignore_state":true,"from_checkpoint":"latest"}}' "restart latest"
expect_out "j1: restart-ok" "stub restart"
run resume j1
expect_request '{"method":"POST","path":"/v1/jobs/j1/resume","body":null}' "resume"
run cancel j1
expect_request '{"method":"POST","path":"/v1/jobs/j1/cancel","body":null}' "cancel"
run preview j1 -n 4
expect_request '{"method":"GET","path":"/v1/jobs/j1/preview?limit=4","body":null}' "preview -n 4"
run observations j1 --after 9 -n 2
expect_request '{"method":"GET","path":"/v1/jobs/j1/observations?after=9&limit=2","body":null}' "observations"
run result j1 -n 1
expect_request '{"method":"GET","path":"/v1/jobs/j1/result?limit=1","body":null}' "result -n 1"
run delete j1
expect_request '{"method":"DELETE","path":"/v1/jobs/j1","body":null}' "delete"
ok "each command sends the documented method, path and body"

run checkpoint j1
expect_rc 0 "stub checkpoint (chunked)"
expect_request '{"method":"POST","path":"/v1/jobs/j1/checkpoints","body":null}' "checkpoint"
expect_out "8" "checkpoint prints the id"
run checkpoints j1
expect_rc 0 "stub checkpoints (chunked)"
expect_out "ID  STATUS     COMPLETED_AT              DURATION_MS  BYTES  ATTEMPT
 7  committed  2024-01-01T00:00:01.000Z           12    345  2" "checkpoints table"
ok "checkpoint, checkpoints over chunked bodies"

run lag j1
expect_rc 0 "stub lag"
expect_out "TOPIC   PARTITION  NEXT_OFFSET  END_OFFSET  LAG
orders          0          100         130   30
orders          1            7          12    5
total                                        35
watermark lag: 1.500 s (watermark 2024-01-01T00:00:00.000Z)" "lag table"
ok "lag table from a known status document"

run metrics
expect_rc 0 "stub metrics (close-delimited)"
expect_out "streamvisor_up 1" "metrics"
ok "close-delimited body"

run status boom
expect_rc 4 "HTTP 500"
expect_err_line "streamvisor: runtime: boom" "HTTP 500"
run status proxy
expect_rc 4 "HTTP 502 without a JSON body"
expect_err_line "streamvisor: HTTP 502: bad gateway" "HTTP 502"
run status nothere
expect_rc 3 "HTTP 404"
expect_err_line "streamvisor: not_found: no /v1/jobs/nothere" "HTTP 404"
ok "HTTP 4xx exits 3, 5xx exits 4"

start=$SECONDS
STREAMVISOR_TIMEOUT_MS=500 run status slow
expect_rc 2 "no answer within the deadline"
grep -q "no answer from '127.0.0.1:[0-9]*' within 500 ms" "$tmp/err" || fail "timeout: '$(err)'"
[ $((SECONDS - start)) -le 5 ] || fail "timeout took $((SECONDS - start)) s"
ok "a server that does not answer: exit 2 after STREAMVISOR_TIMEOUT_MS"

echo "$passed passed, 0 failed"
