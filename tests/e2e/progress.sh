#!/usr/bin/env bash
# Progress for bounded work (issue 19): a bounded generator job over
# 1,000,000 records (throttled to 250,000/s so it runs ~4 s) followed by
# `streamvisor wait` while its status is polled: progress.percent never
# falls and ends at 100, eta_s is present while it runs, `status` draws the
# bar, `wait` prints rising lines and exits 0 on completed. Then wait's
# other outcomes: a cancelled job (6), a drained one (7), --timeout-ms (8).
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"
th_init progress

port=$(th_free_port)
url=http://127.0.0.1:$port
"$BIN" serve --listen "127.0.0.1:$port" --data-dir "$work/data" >"$work/log" 2>&1 &
pid=$!
th_wait_up "$url" || fail "supervisor did not start"
cli() { "$BIN" --server "$url" "$@"; }

spec() { # NAME MODE COUNT RATE
    cat <<JSON
{"name": "$1", "mode": "$2",
 "source": {"kind": "generator", "generator": "sequence", "count": $3, "rate_per_s": $4, "seed": 7},
 "schema": [{"name": "id", "type": "int64"}, {"name": "region", "type": "string"},
            {"name": "amount", "type": "float64"}, {"name": "ts", "type": "timestamp_ms"}],
 "pipeline": [{"filter": "amount > 50"}],
 "sink": {"kind": "null"}}
JSON
}

spec count-1m bounded 1000000 250000 >"$work/b.json"
id=$(cli submit "$work/b.json")
cli wait "$id" >"$work/wait.out" 2>"$work/wait.err" &
wpid=$!
: >"$work/samples"
status_seen=
for _ in $(seq 400); do
    curl -s "$url/v1/jobs/$id" | jq -c '[.state, .progress.percent, .progress.eta_s, .progress.total, .progress.records]' >>"$work/samples"
    if [ -z "$status_seen" ] && tail -1 "$work/samples" | grep -q '^\["running",[0-9.]*,[0-9]'; then
        cli status "$id" >"$work/status.out"
        grep -Eq '^progress +\[#*-+\] +[0-9.]+%  [0-9]+/1000000 records, [0-9]+/s, ETA [0-9]+ s$' "$work/status.out" ||
            fail "status has no progress bar: $(cat "$work/status.out")"
        status_seen=1
    fi
    tail -1 "$work/samples" | grep -q '^\["completed"' && break
    sleep 0.05
done
set +e; wait "$wpid"; wrc=$?; set -e
[ -n "$status_seen" ] || fail "no running sample with a percent: $(head -5 "$work/samples")"
ok "status shows a progress bar while the job runs"

python3 - "$work/samples" <<'PY' || fail "progress samples: see above"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
pct = [r[1] for r in rows if r[1] is not None]
assert rows[-1][0] == "completed", rows[-1]
assert rows[-1][1] == 100 and rows[-1][3] == 1000000 and rows[-1][4] == 1000000, rows[-1]
bad = [(a, b) for a, b in zip(pct, pct[1:]) if b < a]
assert not bad, ("percent fell", bad[:3])
running = [r for r in rows if r[0] == "running" and r[1] is not None and r[1] < 100]
assert len(running) >= 5, ("too few running samples", len(running))
no_eta = [r for r in running if r[2] is None]
# the rate needs two one-second points: only the first second may lack it
assert len(no_eta) <= len(running) // 3, ("ETA missing while running", no_eta[:3])
assert all(r[2] is None or r[2] >= 0 for r in running)
print(f"  {len(rows)} samples, {len(running)} while running, percent {pct[0]:.1f} -> {pct[-1]:.1f}, "
      f"ETA present in {len(running) - len(no_eta)}")
PY
ok "progress.percent rises monotonically to 100, eta_s present while running"

[ "$wrc" = 0 ] || fail "wait exited $wrc: $(cat "$work/wait.err")"
tail -1 "$work/wait.out" | grep -Eq '^completed +\[#{30}\] 100\.0%  1000000/1000000 records' ||
    fail "wait's last line: $(tail -1 "$work/wait.out")"
[ "$(grep -c '^running ' "$work/wait.out")" -ge 3 ] || fail "wait printed: $(cat "$work/wait.out")"
ok "wait followed the job to completed and exited 0"

spec endless stream -1 100 >"$work/s.json"
sid=$(cli submit "$work/s.json")
set +e; cli wait "$sid" --timeout-ms 300 >/dev/null 2>"$work/err"; rc=$?; set -e
[ "$rc" = 8 ] || fail "wait --timeout-ms on a running stream exited $rc"
grep -q "is still running after 300 ms" "$work/err" || fail "timeout message: $(cat "$work/err")"
cli drain "$sid" >/dev/null
set +e; cli wait "$sid" --timeout-ms 30000 >"$work/out"; rc=$?; set -e
[ "$rc" = 7 ] || fail "wait on a drained job exited $rc"
tail -1 "$work/out" | grep -q '^checkpointed ' || fail "wait's last line: $(tail -1 "$work/out")"
cli resume "$sid" >/dev/null
cli cancel "$sid" >/dev/null
set +e; cli wait "$sid" --json >"$work/out"; rc=$?; set -e
[ "$rc" = 6 ] || fail "wait on a cancelled job exited $rc"
[ "$(jq -r .state "$work/out")" = cancelled ] || fail "wait --json: $(cat "$work/out")"
ok "wait exits 8 on --timeout-ms, 7 checkpointed, 6 cancelled (--json: the status)"
summary=1
echo "$passed passed, $failed failed"
