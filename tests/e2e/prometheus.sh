#!/usr/bin/env bash
# The Prometheus side (issue 19): a real Prometheus server (Debian's
# package, started here on a free loopback port with a temporary config and
# storage) scrapes a live supervisor every second; the example alert rules
# pass `promtool check rules` and their unit tests, the server loads them;
# every panel query of deploy/grafana/streamvisor.json (and its template
# variable) evaluated through Prometheus's HTTP API returns data.
#
# The supervisor runs a Kafka job with a backlog in the real test broker
# (2 partitions, 30,000 records, read at 2,000/s) so lag per partition is
# there, a generator job, checkpoints every second (the duration
# histogram), and a few 404s (HTTP errors). While the Kafka job catches up
# its status has a catch-up ETA. Takes ~20 s.
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"
th_init prometheus
for tool in prometheus promtool kcat jq curl python3; do
    command -v "$tool" >/dev/null || fail "$tool not found (run deploy/install-deps.sh)"
done
prom_pid=
stop_prom() { [ -z "$prom_pid" ] || { kill "$prom_pid" 2>/dev/null || true; wait "$prom_pid" 2>/dev/null || true; }; }
trap 'stop_prom; th_cleanup' EXIT

# ---- rules, offline ----
promtool check rules "$repo/deploy/prometheus/alerts.yml" >"$work/check" 2>&1 ||
    { cat "$work/check" >&2; fail "promtool check rules"; }
grep -q "SUCCESS: 7 rules found" "$work/check" || fail "$(cat "$work/check")"
(cd "$repo/deploy/prometheus" && promtool test rules alerts.test.yml) >"$work/test" 2>&1 ||
    { cat "$work/test" >&2; fail "promtool test rules"; }
promtool check config "$repo/deploy/prometheus/prometheus.yml" >/dev/null 2>&1 ||
    fail "promtool check config deploy/prometheus/prometheus.yml"
ok "promtool: check rules (7), test rules, check config"

# ---- a supervisor with two jobs ----
topic=it-prom-$$-$RANDOM
"$repo/deploy/kafka/kafka.sh" topic-create "$topic" 2 >/dev/null 2>"$work/topic.err" ||
    { cat "$work/topic.err" >&2; fail "cannot create topic $topic"; }
now_ms=$(($(date +%s) * 1000))
python3 - "$now_ms" >"$work/backlog.jsonl" <<'PY'
import sys
now = int(sys.argv[1])
for i in range(15000):
    print('{"id":%d,"k":"k%d","ts":%d}' % (i, i % 10, now - 60000 + i))
PY
for p in 0 1; do
    kcat -P -b "$BOOTSTRAP" -t "$topic" -p $p -l "$work/backlog.jsonl" || fail "cannot produce"
done

port=$(th_free_port)
url=http://127.0.0.1:$port
"$BIN" serve --listen "127.0.0.1:$port" --data-dir "$work/data" \
    --bootstrap-servers "$BOOTSTRAP" >"$work/log" 2>&1 &
pid=$!
th_wait_up "$url" || fail "supervisor did not start"
kid=$(curl -s -XPOST -H 'Content-Type: application/json' "$url/v1/jobs" -d @- <<JSON | jq -r .id
{"name": "backlog", "source": {"kind": "kafka", "topic": "$topic", "rate_per_s": 2000},
 "schema": [{"name": "id", "type": "int64"}, {"name": "k", "type": "string"},
            {"name": "ts", "type": "timestamp_ms"}],
 "event_time": {"field": "ts", "max_out_of_orderness_ms": 100},
 "pipeline": [{"filter": "id >= 0"}], "sink": {"kind": "null"},
 "checkpoint": {"interval_ms": 1000}}
JSON
)
gid=$(curl -s -XPOST -H 'Content-Type: application/json' "$url/v1/jobs" -d @- <<JSON | jq -r .id
{"name": "generated", "source": {"kind": "generator", "generator": "sequence", "rate_per_s": 1000},
 "schema": [{"name": "id", "type": "int64"}, {"name": "region", "type": "string"},
            {"name": "amount", "type": "float64"}, {"name": "ts", "type": "timestamp_ms"}],
 "pipeline": [{"filter": "amount > 50"}], "sink": {"kind": "null"},
 "checkpoint": {"interval_ms": 1000}}
JSON
)
[ "$kid" != null ] && [ "$gid" != null ] || fail "submit failed"
for _ in 1 2 3; do curl -s -o /dev/null "$url/v1/jobs/no-such-job"; done
ok "supervisor with a Kafka backlog job ($kid) and a generator job ($gid)"

# the Kafka job is behind for ~15 s: once it has read for 2 s its lag
# shrinks at ~2,000/s and its status has a catch-up ETA
deadline=$((SECONDS + 20))
while :; do
    st=$(curl -s "$url/v1/jobs/$kid")
    jq -e '.catch_up.lag_records > 0 and .catch_up.eta_s > 0 and .catch_up.drain_per_s > 0' <<<"$st" >/dev/null && break
    [ $SECONDS -lt $deadline ] || fail "a catching-up stream has no catch-up ETA: $(jq -c .catch_up <<<"$st")"
    sleep 0.2
done
ok "catching-up Kafka job: $(jq -c .catch_up <<<"$st")"

# ---- Prometheus ----
pport=$(th_free_port)
prom=http://127.0.0.1:$pport
cp "$repo/deploy/prometheus/alerts.yml" "$work/alerts.yml"
cat >"$work/prometheus.yml" <<YML
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [alerts.yml]
scrape_configs:
  - job_name: streamvisor
    honor_labels: true
    static_configs: [{targets: ["127.0.0.1:$port"]}]
YML
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
    --web.listen-address="127.0.0.1:$pport" --log.level=warn >"$work/prom.log" 2>&1 &
prom_pid=$!
q() { curl -s --get "$prom/api/v1/query" --data-urlencode "query=$1"; }
deadline=$((SECONDS + 40))
scrapes() { local v; v=$(q 'count_over_time(streamvisor_up[1m])' 2>/dev/null | jq -r '.data.result[0].value[1] // 0' 2>/dev/null); echo "${v:-0}"; }
until [ "$(scrapes)" -ge 12 ]; do
    [ $SECONDS -lt $deadline ] || { tail "$work/prom.log" >&2; fail "Prometheus has not scraped 12 times"; }
    sleep 0.5
done
health=$(curl -s "$prom/api/v1/targets" | jq -r '.data.activeTargets[0].health')
[ "$health" = up ] || fail "target health $health"
ok "Prometheus $(prometheus --version 2>&1 | head -1 | awk '{print $3}') scraped the supervisor 12+ times"


rules=$(curl -s "$prom/api/v1/rules" | jq -c '[.data.groups[] | select(.name == "streamvisor") | .rules[] | select(.health == "ok") | .name] | length')
[ "$rules" = 7 ] || fail "Prometheus loaded $rules healthy streamvisor rules, want 7"
ok "Prometheus loaded the 7 alert rules"

# ---- every panel query of the Grafana dashboard ----
dash=$repo/deploy/grafana/streamvisor.json
jq -r '.panels[] | .title as $t | .targets[] | [$t, .expr] | @tsv' "$dash" >"$work/queries"
n=0
while IFS=$'\t' read -r title expr; do
    e=${expr//\$__rate_interval/15s}
    e=${e//\$name/.*}
    r=$(q "$e")
    [ "$(jq -r .status <<<"$r")" = success ] || fail "panel '$title': $expr: $(jq -c . <<<"$r")"
    cnt=$(jq '.data.result | length' <<<"$r")
    [ "$cnt" -gt 0 ] || fail "panel '$title': no data for $e"
    n=$((n + 1))
    echo "  $title: $cnt series  ($e)"
done <"$work/queries"
[ "$n" = "$(jq '[.panels[].targets[]] | length' "$dash")" ] || fail "read $n of the queries"
vals=$(curl -s --get "$prom/api/v1/label/name/values" --data-urlencode 'match[]=streamvisor_job_state' | jq -c .data)
[ "$vals" = '["backlog","generated"]' ] || fail "template variable \$name: $vals"
ok "all $n panel queries return data; template variable \$name = $vals"
summary=1
echo "$passed passed, $failed failed"
