#!/usr/bin/env bash
# bench/lib/profile.sh — where streamvisor spends its time on W1 and W2,
# Kafka to Kafka (bench/BASELINE.md "Profile").
#
# Usage: bench/lib/profile.sh [RECORDS] [WORKLOADS]   (1000000, "W1 W2")
#   env DELIVERY (at_least_once | exactly_once, default at_least_once) and
#   PARALLELISM (default 1): the spec's delivery and parallelism; at
#   parallelism > 1 W2 and W3 read a copy of the bids keyed by their window
#   key (load --key-by) and declare source.partitioned_by, as run.sh does
#
# Starts the bench broker (build/bench/kafka, port 19492) if needed, loads
# RECORDS bids into a fresh topic, then for each workload runs the release
# streamvisor under `perf record -g` (software cpu-clock, 999 Hz, all its
# threads), submits the bounded at_least_once spec that bench/run.sh uses
# and waits until it completes. Writes build/bench/profile/<W>.perf.data and
# the top of `perf report` (self and children) as <W>.txt.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"
RECORDS=${1:-1000000}
WORKLOADS=${2:-W1 W2}
DELIVERY=${DELIVERY:-at_least_once}
PARALLELISM=${PARALLELISM:-1}
export KAFKA_PORT=${BENCH_KAFKA_PORT:-19492} KAFKA_STATE_DIR=$repo/build/bench/kafka
export KAFKA_NUM_PARTITIONS=8 KAFKA_JVM_PERF_OPTS=
BOOT=127.0.0.1:$KAFKA_PORT
OUT=$repo/build/bench/profile
RAWK=$repo/build/bench/sv/bench_raw_kafka
SV=$repo/build/bench/sv/streamvisor
PORT=${BENCH_SV_PORT:-19482}
mkdir -p "$OUT"
[ -x "$SV" ] && [ -x "$RAWK" ] || { echo "build first: bench/run.sh --quick (or cmake --build build/bench/sv)" >&2; exit 1; }
deploy/kafka/kafka.sh start >/dev/null
topic=prof-bids-$$
"$RAWK" topics --bootstrap "$BOOT" --topic "$topic" >/dev/null
"$RAWK" load --bootstrap "$BOOT" --topic "$topic" --count "$RECORDS" >"$OUT/load.json"
for w in $WORKLOADS; do
    in=$topic pk=""
    if [ "$PARALLELISM" -gt 1 ] && [ "$w" != W1 ]; then
        pk=$([ "$w" = W2 ] && echo key || echo auction)
        in=$topic-$pk
        "$RAWK" topics --bootstrap "$BOOT" --topic "$in" >/dev/null
        "$RAWK" load --bootstrap "$BOOT" --topic "$in" --count "$RECORDS" --key-by "$pk" >/dev/null
    fi
    case $w in
        W1) pl='[{"filter":"price % 3 != 0"},{"select":{"seq":"seq","auction":"auction","bidder":"bidder","price_eur":"price * 0.908","ts":"ts"}}]' ;;
        W2) pl='[{"window":{"type":"tumbling","size_ms":10000,"key":["key"],"aggregates":{"n":"count()","total":"sum(price)"}}}]' ;;
        W3) pl='[{"window":{"type":"sliding","size_ms":10000,"slide_ms":2000,"key":["auction"],"aggregates":{"bids":"count()"}}}]' ;;
    esac
    out=prof-out-$w-$$
    "$RAWK" topics --bootstrap "$BOOT" --topic "$out" >/dev/null
    jq -n --arg in "$in" --arg pk "$pk" --arg out "$out" --argjson pl "$pl" --arg d "$DELIVERY" \
        --argjson par "$PARALLELISM" '{name: "prof", mode: "bounded", parallelism: $par,
      source: ({kind: "kafka", topic: $in, format: "json"}
              + (if $pk != "" then {partitioned_by: [$pk]} else {} end)),
      schema: [{name:"seq",type:"int64"},{name:"key",type:"int64"},{name:"auction",type:"int64"},
               {name:"bidder",type:"int64"},{name:"price",type:"int64"},{name:"channel",type:"string"},
               {name:"url",type:"string"},{name:"ts",type:"timestamp_ms"},{name:"extra",type:"string"}],
      event_time: {field: "ts", max_out_of_orderness_ms: 0}, pipeline: $pl,
      sink: {kind: "kafka", topic: $out, format: "json"}, delivery: $d,
      checkpoint: {interval_ms: 1000}}' >"$OUT/$w.spec.json"
    rm -rf "$OUT/data-$w"
    perf record -F 999 -e cpu-clock -g -o "$OUT/$w.perf.data" -- \
        "$SV" serve --listen 127.0.0.1:$PORT --data-dir "$OUT/data-$w" --bootstrap-servers "$BOOT" \
        >"$OUT/$w.server.log" 2>&1 &
    ppid=$!
    for i in $(seq 200); do curl -sf 127.0.0.1:$PORT/v1/info >/dev/null 2>&1 && break; sleep 0.05; done
    id=$(curl -s -XPOST -H 'Content-Type: application/json' 127.0.0.1:$PORT/v1/jobs --data-binary @"$OUT/$w.spec.json" | jq -r .id)
    t0=$(date +%s%3N)
    while [ "$(curl -s 127.0.0.1:$PORT/v1/jobs/$id | jq -r .state)" != completed ]; do sleep 0.1; done
    echo "$w: $RECORDS records in $(( $(date +%s%3N) - t0 )) ms under perf" | tee "$OUT/$w.txt"
    pid=$(pgrep -P "$ppid" -f "streamvisor serve" || true)
    kill -TERM "${pid:-$ppid}" 2>/dev/null || true
    wait "$ppid" 2>/dev/null || true
    perf report -i "$OUT/$w.perf.data" --no-children --sort dso,symbol --stdio -g none 2>/dev/null |
        grep -v "^#" | grep "%" | head -40 >>"$OUT/$w.txt" || true
    echo "--- by thread (librdkafka names its own rdk:*)" >>"$OUT/$w.txt"
    perf report -i "$OUT/$w.perf.data" --no-children --sort comm --stdio -g none 2>/dev/null |
        grep -v "^#" | grep "%" | head -12 >>"$OUT/$w.txt" || true
    echo "--- by library" >>"$OUT/$w.txt"
    perf report -i "$OUT/$w.perf.data" --no-children --sort dso --stdio -g none 2>/dev/null |
        grep -v "^#" | grep "%" | head -12 >>"$OUT/$w.txt" || true
done
echo "profiles in $OUT" >&2
