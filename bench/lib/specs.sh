# bench/lib/specs.sh — streamvisor's job specs of the bench workloads
# (docs/jobspec.md), sourced by bench/run.sh and the scripts of bench/lib
# that run one workload (pair.sh, pair_w4.sh, peak_smaps.sh), so every one
# runs the same job.
#   spec NAME MODE WORKLOAD DELIVERY IN OUT [PARALLELISM [rp|"" [MEMORY_MB]]]
#     W1-W3 over the bids (rp: no partitioned_by at parallelism > 1, the
#     window is repartitioned)
#   spec_q3 NAME MODE DELIVERY IN TABLE OUT [PARALLELISM [MEMORY_MB]]
#     W4, the auctions joined with the persons table
SCHEMA='[{"name":"seq","type":"int64"},{"name":"key","type":"int64"},
 {"name":"auction","type":"int64"},{"name":"bidder","type":"int64"},
 {"name":"price","type":"int64"},{"name":"channel","type":"string"},
 {"name":"url","type":"string"},{"name":"ts","type":"timestamp_ms"},
 {"name":"extra","type":"string"}]'
pipeline() {
    case "$1" in
        W1) echo '[{"filter":"price % 3 != 0"},
                   {"select":{"seq":"seq","auction":"auction","bidder":"bidder",
                              "price_eur":"price * 0.908","ts":"ts"}}]' ;;
        W2) echo '[{"window":{"type":"tumbling","size_ms":10000,"key":["key"],
                              "aggregates":{"n":"count()","total":"sum(price)"}}}]' ;;
        W3) echo '[{"window":{"type":"sliding","size_ms":10000,"slide_ms":2000,
                              "key":["auction"],"aggregates":{"bids":"count()"}}}]' ;;
    esac
}
# the column a workload's window is keyed by (what its input at
# parallelism > 1 is partitioned by), or "" for none
window_key() { case "$1" in W2) echo key ;; W3) echo auction ;; *) echo "" ;; esac; }
# spec NAME MODE WORKLOAD DELIVERY IN OUT [PARALLELISM [rp|"" [MEMORY_MB]]]
# (rp: no partitioned_by, the window is repartitioned)
spec() {
    local pk
    pk=$(window_key "$3"); [ "${8:-}" = rp ] && pk=""
    jq -n --arg name "$1" --arg mode "$2" --arg d "$4" --arg in "$5" --arg out "$6" \
        --argjson par "${7:-1}" --argjson mem "${9:-0}" --arg pk "$pk" \
        --argjson schema "$SCHEMA" --argjson pl "$(pipeline "$3")" '{
        name: $name, mode: $mode, parallelism: $par}
        + (if $mem > 0 then {resources: {memory_mb: $mem}} else {} end) + {
        source: ({kind: "kafka", topic: $in, format: "json", start: "earliest"}
                 + (if $par > 1 and $pk != "" then {partitioned_by: [$pk]} else {} end)),
        schema: $schema,
        event_time: {field: "ts", max_out_of_orderness_ms: 0},
        pipeline: $pl,
        sink: {kind: "kafka", topic: $out, format: "json"},
        delivery: $d,
        checkpoint: {interval_ms: 1000, retain: 100000}}'
}
# W4 (Nexmark q3-like): auctions enriched with their seller's name, city
# and state from the persons table topic, an event-time lookup join
# (docs/joins.md): the sentinel persons (bench_raw_kafka load-q3) move the
# table's watermark past every auction once the whole table is read, so
# each auction is answered against the complete table, the same answer on
# every contender. At parallelism > 1 both topics declare their key
# (load-q3 keys them with Kafka's default partitioner: co-partitioned).
AUCTION_SCHEMA='[{"name":"id","type":"int64"},{"name":"seller","type":"int64"},
 {"name":"category","type":"int64"},{"name":"initial_bid","type":"int64"},
 {"name":"ts","type":"timestamp_ms"}]'
PERSON_SCHEMA='[{"name":"pid","type":"int64"},{"name":"name","type":"string"},
 {"name":"city","type":"string"},{"name":"state","type":"string"},
 {"name":"pts","type":"timestamp_ms"}]'
# spec_q3 NAME MODE DELIVERY IN TABLE OUT [PARALLELISM [MEMORY_MB]]
spec_q3() {
    jq -n --arg name "$1" --arg mode "$2" --arg d "$3" --arg in "$4" --arg table "$5" \
        --arg out "$6" --argjson par "${7:-1}" --argjson mem "${8:-0}" \
        --argjson schema "$AUCTION_SCHEMA" --argjson pschema "$PERSON_SCHEMA" '{
        name: $name, mode: $mode, parallelism: $par}
        + (if $mem > 0 then {resources: {memory_mb: $mem}} else {} end) + {
        source: ({kind: "kafka", topic: $in, format: "json", start: "earliest"}
                 + (if $par > 1 then {partitioned_by: ["seller"]} else {} end)),
        schema: $schema,
        event_time: {field: "ts", max_out_of_orderness_ms: 0},
        pipeline: [{join: {type: "lookup", time: "event",
            source: ({kind: "kafka", topic: $table, format: "json", start: "earliest"}
                     + (if $par > 1 then {partitioned_by: ["pid"]} else {} end)),
            schema: $pschema,
            event_time: {field: "pts", max_out_of_orderness_ms: 0},
            on: {left: ["seller"], right: ["pid"]},
            take: {name: "name", city: "city", state: "state"}}}],
        sink: {kind: "kafka", topic: $out, format: "json"},
        delivery: $d,
        checkpoint: {interval_ms: 1000, retain: 100000}}'
}

# The scripts of bench/lib that run one job on a server of their own:
#   job_up PORT          wait (up to 20 s) until the server answers
#   job_submit PORT SPECFILE -> the job id
#   job_state PORT ID    -> the job's state
#   job_wait PORT ID     -> the state it ended in (polls every 50 ms)
job_up() {
    local i
    for i in $(seq 400); do curl -sf "127.0.0.1:$1/v1/info" >/dev/null 2>&1 && return 0; sleep 0.05; done
    return 1
}
job_submit() {
    curl -s -XPOST -H 'Content-Type: application/json' "127.0.0.1:$1/v1/jobs" \
        --data-binary @"$2" | jq -r .id
}
job_state() { curl -s "127.0.0.1:$1/v1/jobs/$2" | jq -r .state; }
job_wait() {
    local st
    while :; do
        st=$(job_state "$1" "$2")
        case "$st" in completed|failed|cancelled) echo "$st"; return 0 ;; esac
        sleep 0.05
    done
}
