#!/usr/bin/env bash
# The Prometheus exposition of a live supervisor passes `promtool check
# metrics` while a job runs against the real broker, and holds the families
# on-call people rely on (state, records, lag per partition, watermark,
# checkpoint histogram, HTTP requests), with labels job/topic/partition.
# Needs $KAFKA_BOOTSTRAP (the ctest fixture's broker) and $STREAMVISOR_BIN.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/../lib/harness.sh"
th_init metrics_promtool

for tool in promtool kcat jq curl; do
    command -v "$tool" >/dev/null || fail "$tool not found (run deploy/install-deps.sh)"
done

topic=it-metrics-$$-$RANDOM
out=$topic-out
"$repo/deploy/kafka/kafka.sh" topic-create "$topic" 4 >/dev/null
"$repo/deploy/kafka/kafka.sh" topic-create "$out" 1 >/dev/null
for p in 0 1 2 3; do # 500 records into each partition
    for i in $(seq $((p * 500 + 1)) $((p * 500 + 500))); do
        echo "{\"id\":$i,\"k\":\"k$((i % 10))\",\"ts\":$((1700000000000 + i * 10))}"
    done | kcat -P -b "$BOOTSTRAP" -t "$topic" -p $p || fail "cannot produce"
done

port=$(th_free_port)
"$BIN" serve --listen "127.0.0.1:$port" --data-dir "$work/data" \
    --bootstrap-servers "$BOOTSTRAP" >"$work/log" 2>&1 &
pid=$!
url=http://127.0.0.1:$port
th_wait_up "$url" || fail "supervisor did not start"

spec=$(cat <<EOF
{"name": "metrics-job", "source": {"kind": "kafka", "topic": "$topic"},
 "schema": [{"name": "id", "type": "int64"}, {"name": "k", "type": "string"},
            {"name": "ts", "type": "timestamp_ms"}],
 "event_time": {"field": "ts", "max_out_of_orderness_ms": 100},
 "pipeline": [{"filter": "id % 2 == 0"},
              {"window": {"type": "tumbling", "size_ms": 1000, "key": ["k"],
                          "aggregates": {"n": "count()"}}}],
 "sink": {"kind": "kafka", "topic": "$out"},
 "checkpoint": {"interval_ms": 500}}
EOF
)
id=$(curl -sf -X POST -H 'Content-Type: application/json' --data "$spec" "$url/v1/jobs" | jq -r .id)
[ -n "$id" ] && [ "$id" != null ] || fail "submit failed"
for _ in $(seq 300); do
    n=$(curl -sf "$url/v1/jobs/$id" | jq -r .records_in)
    [ "$n" = 2000 ] && break
    sleep 0.1
done
[ "$n" = 2000 ] || fail "job read $n of 2000 records"
# at least one checkpoint completed after the whole input was read: wait
# for a checkpoint id above the one current when records_in reached 2000
ck0=$(curl -sf "$url/v1/jobs/$id" | jq -r '.last_checkpoint.id // -1')
for _ in $(seq 300); do
    ck=$(curl -sf "$url/v1/jobs/$id" | jq -r '.last_checkpoint.id // -1')
    [ "$ck" -gt "$ck0" ] && break
    sleep 0.1
done
[ "$ck" -gt "$ck0" ] || fail "no checkpoint after the input within 30 s (last $ck)"

curl -sf "$url/metrics" >"$work/metrics" || fail "scrape failed"
state=$(curl -sf "$url/v1/jobs/$id" | jq -r .state)
[ "$state" = running ] || fail "job is $state, want running while scraped"
if ! promtool check metrics <"$work/metrics" >"$work/promtool" 2>&1; then
    cat "$work/promtool"
    fail "promtool check metrics found problems"
fi
for fam in streamvisor_job_state streamvisor_records_in_total \
    streamvisor_records_out_total streamvisor_source_lag_records \
    streamvisor_source_lag_seconds streamvisor_watermark_seconds \
    streamvisor_checkpoint_duration_seconds_bucket \
    streamvisor_checkpoints_total streamvisor_last_checkpoint_age_seconds \
    streamvisor_state_bytes streamvisor_http_requests_total; do
    grep -q "^$fam{" "$work/metrics" || fail "family $fam missing"
done
grep -q "^streamvisor_records_in_total{job=\"$id\",name=\"metrics-job\"} 2000$" \
    "$work/metrics" || fail "records_in_total is not 2000 for the job"
lags=$(grep -c "^streamvisor_source_lag_records{job=\"$id\",name=\"metrics-job\",topic=\"$topic\",partition=\"[0-3]\"} 0$" "$work/metrics" || true)
[ "$lags" = 4 ] || fail "want 4 partitions at lag 0, got $lags"
ok "promtool clean, $(grep -c '^# TYPE' "$work/metrics") families"
summary=1
echo "$passed passed, $failed failed"
