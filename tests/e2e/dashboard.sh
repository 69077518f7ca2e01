#!/usr/bin/env bash
# The web dashboard in a real browser (issue 19): a live supervisor with two
# generator jobs, Debian's headless Chromium driven by playwright-core
# (tests/browser/dashboard.mjs, installed by deploy/install-deps.sh into
# build/browser): both jobs and their states on the jobs page, a job page
# whose lag and throughput plots have data points, and drain pressed on one
# job moves it to `checkpointed` as the API reports it while the other keeps
# running. Also: the embedded files are served with their types, an unknown
# asset is 404, and GET /v1/jobs/{id}/history has the documented columns.
# SV_DASHBOARD_SHOTS=DIR keeps the two screenshots (docs/dashboard.md).
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"
th_init dashboard

node_dir=${SV_BROWSER_DIR:-$repo/build/browser}
[ -d "$node_dir/node_modules/playwright-core" ] ||
    fail "playwright-core not installed in $node_dir (run deploy/install-deps.sh)"
[ -x /usr/bin/chromium ] || fail "/usr/bin/chromium missing (run deploy/install-deps.sh)"

port=$(th_free_port)
url=http://127.0.0.1:$port
"$BIN" serve --listen "127.0.0.1:$port" --data-dir "$work/data" >"$work/log" 2>&1 &
pid=$!
th_wait_up "$url" || fail "supervisor did not start"

# the embedded files
ct=$(curl -s -o "$work/index" -w '%{http_code} %{content_type}' "$url/")
[ "$ct" = "200 text/html; charset=utf-8" ] || fail "GET / answered '$ct'"
grep -q '/ui/app.js' "$work/index" || fail "index.html does not load app.js"
for f in app.js app.css uPlot.iife.min.js uPlot.min.css favicon.svg; do
    code=$(curl -s -o /dev/null -w '%{http_code}' "$url/ui/$f")
    [ "$code" = 200 ] || fail "GET /ui/$f answered $code"
done
code=$(curl -s -o /dev/null -w '%{http_code}' "$url/ui/../v1/info.js")
[ "$code" = 404 ] || fail "GET /ui/../v1/info.js answered $code, expected 404"
code=$(curl -s -o /dev/null -w '%{http_code}' "$url/ui/nothing.js")
[ "$code" = 404 ] || fail "an unknown asset answered $code, expected 404"
ok "dashboard files served from the binary (and nothing else under /ui/)"

submit() {
    curl -s -XPOST -H 'Content-Type: application/json' "$url/v1/jobs" -d @- <<JSON | jq -r .id
{"name": "$1", "mode": "stream",
 "source": {"kind": "generator", "generator": "sequence", "rate_per_s": $2, "seed": 1},
 "schema": [{"name": "id", "type": "int64"}, {"name": "region", "type": "string"},
            {"name": "amount", "type": "float64"}, {"name": "ts", "type": "timestamp_ms"}],
 "pipeline": [{"filter": "amount > 50"}],
 "sink": {"kind": "null"}}
JSON
}
a=$(submit orders-large 2000)
b=$(submit orders-audit 500)
[ -n "$a" ] && [ "$a" != null ] && [ -n "$b" ] && [ "$b" != null ] || fail "submit failed"
ok "two jobs submitted ($a, $b)"

# the history endpoint: a first sample at once, columns as documented
for _ in $(seq 50); do
    n=$(curl -s "$url/v1/jobs/$a/history" | jq '.count')
    [ "$n" -ge 1 ] && break
    sleep 0.1
done
keys=$(curl -s "$url/v1/jobs/$a/history" | jq -c '[.interval_ms, .capacity, (.series | keys)]')
[ "$keys" = '[5000,720,["attempt","event_lag_seconds","lag_records","lag_seconds","records_in","records_in_per_s","records_out","records_out_per_s","state","state_bytes","t"]]' ] ||
    fail "history document: $keys"
ok "GET /v1/jobs/{id}/history has its columns"

cp "$repo/tests/browser/dashboard.mjs" "$node_dir/dashboard.mjs"
shots=${SV_DASHBOARD_SHOTS:-}
if timeout 150 node "$node_dir/dashboard.mjs" "$url" "$a" "$b" $shots >"$work/browser.out" 2>&1; then
    sed 's/^/  /' "$work/browser.out"
    ok "browser: jobs page, plots with data, drain through the button"
else
    cat "$work/browser.out" >&2
    fail "browser test"
fi
summary=1
echo "$passed passed, $failed failed"
