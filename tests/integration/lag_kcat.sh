#!/usr/bin/env bash
# Lag as the supervisor reports it agrees with Kafka read independently.
#
# A known backlog (20,000 records, 5,000 into each of 4 partitions, with
# explicit partitions) is produced before a job that reads it throttled to
# 2,000 records/s (source.rate_per_s) is submitted, so the job is behind for
# ~10 s. While it is behind:
#   - each partition's end_offset in GET /v1/jobs/ID equals the high
#     watermark kcat reads (kcat -Q, timestamp -1 = end of the log);
#   - lag_records = end_offset - next_offset per partition, lag.records is
#     their sum, and the job really is behind (lag.records > 0);
#   - lag.seconds is wall clock minus the watermark;
#   - `streamvisor lag ID` prints the same end offsets and a table that is
#     consistent row by row, with next offsets between those of the status
#     documents read just before and just after it.
# Once caught up: every partition's lag_records is 0, next_offset = end
# offset = kcat's, the CLI prints the same exact numbers, the Prometheus
# lag gauges are 0, and the job's consumer group streamvisor-<id>, as
# Kafka's own ConsumerGroupCommand shows it, has committed offsets equal to
# the end offsets (lag 0) — offsets are committed at checkpoints.
# Negative control: the kcat end offsets are the produced counts, so a
# comparison against an empty or wrong kcat answer cannot pass.
#
# Needs $KAFKA_BOOTSTRAP (the ctest fixture's broker) and $STREAMVISOR_BIN.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/../lib/harness.sh"
th_init lag_kcat
KAFKA_SH=$repo/deploy/kafka/kafka.sh
PARTS=4
PER_PART=5000
TOTAL=$((PARTS * PER_PART))
RATE=2000

for tool in kcat jq curl python3; do
    command -v "$tool" >/dev/null || fail "$tool not found (run deploy/install-deps.sh)"
done
[ -x "$BIN" ] || fail "streamvisor binary '$BIN' not found (STREAMVISOR_BIN)"

# ---- the backlog ----
topic=it-lag-$$-$RANDOM
"$KAFKA_SH" topic-create "$topic" $PARTS >/dev/null 2>"$work/topic.err" ||
    { cat "$work/topic.err" >&2; fail "cannot create topic $topic"; }
now_ms=$(($(date +%s) * 1000))
for p in $(seq 0 $((PARTS - 1))); do
    # Event times a minute in the past, increasing with the offset.
    python3 - "$p" "$PER_PART" "$now_ms" >"$work/p$p.jsonl" <<'EOF'
import sys
p, n, now = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
for i in range(n):
    rid = p * n + i
    print('{"id":%d,"k":"k%d","ts":%d}' % (rid, rid % 10, now - 60000 + i * 10))
EOF
    kcat -P -b "$BOOTSTRAP" -t "$topic" -p "$p" -l "$work/p$p.jsonl" ||
        fail "cannot produce to $topic partition $p"
done

# End offsets read independently: kcat -Q with timestamp -1 asks the
# broker for each partition's latest offset (the high watermark).
kcat_ends() {
    local args=() p
    for p in $(seq 0 $((PARTS - 1))); do args+=(-t "$topic:$p:-1"); done
    kcat -Q -b "$BOOTSTRAP" "${args[@]}" -J 2>/dev/null |
        jq -c --arg t "$topic" '.[$t] | [to_entries[] | select(.key != "topic")
            | .value | {(.partition | tostring): .offset}] | add'
}
ends=$(kcat_ends) || fail "kcat -Q failed"
want=$(jq -nc --argjson n $PER_PART '[range(0; 4) | {(tostring): $n}] | add')
[ "$ends" = "$want" ] ||
    fail "kcat end offsets $ends, want $want (the backlog is not what was produced)"
ok "backlog produced: kcat reads end offsets $ends"

# ---- the supervisor and the job ----
port=$(th_free_port)
"$BIN" serve --listen "127.0.0.1:$port" --data-dir "$work/data" \
    --bootstrap-servers "$BOOTSTRAP" >"$work/log" 2>&1 &
pid=$!
url=http://127.0.0.1:$port
th_wait_up "$url" || fail "supervisor did not start"

cat >"$work/spec.json" <<EOF
{"name": "lag-job",
 "source": {"kind": "kafka", "topic": "$topic", "rate_per_s": $RATE},
 "schema": [{"name": "id", "type": "int64"}, {"name": "k", "type": "string"},
            {"name": "ts", "type": "timestamp_ms"}],
 "event_time": {"field": "ts", "max_out_of_orderness_ms": 100},
 "pipeline": [{"filter": "id >= 0"}],
 "sink": {"kind": "null"},
 "checkpoint": {"interval_ms": 500}}
EOF
id=$("$BIN" submit --server "$url" "$work/spec.json") || fail "submit failed"
[ -n "$id" ] || fail "submit printed no id"
ok "submitted job $id with source.rate_per_s $RATE"

status() { curl -sf "$url/v1/jobs/$id"; }

# Wait (bounded) until the source has opened: 4 partitions with end offsets.
deadline=$((SECONDS + 30))
while :; do
    st=$(status) || fail "GET /v1/jobs/$id failed"
    state=$(jq -r .state <<<"$st")
    case "$state" in failed|cancelled|completed)
        fail "job is $state: $(jq -c .error <<<"$st")" ;;
    esac
    [ "$state" = running ] &&
        [ "$(jq '[.partitions[] | select(.end_offset >= 0)] | length' <<<"$st")" = $PARTS ] &&
        break
    [ $SECONDS -lt $deadline ] || fail "source not open after 30 s: $st"
    sleep 0.1
done

# The per-document identities, true of any status document.
check_doc() { # $1 = status document; prints a reason when wrong
    jq -r --arg t "$topic" --argjson ends "$ends" --argjson n $PARTS '
        .partitions as $ps
        | if ($ps | length) != $n then "\($ps | length) partitions, want \($n)"
          elif ([$ps[].partition] | sort) != [range(0; $n)] then "partitions \([$ps[].partition])"
          elif any($ps[]; .topic != $t) then "a partition of another topic: \($ps)"
          elif any($ps[]; .end_offset != $ends[.partition | tostring]) then
            "end offsets \([$ps[] | {(.partition | tostring): .end_offset}] | add), kcat reads \($ends)"
          elif any($ps[]; .lag_records != .end_offset - .next_offset) then
            "lag_records is not end_offset - next_offset: \($ps)"
          elif .lag.records != ([$ps[].lag_records] | add) then
            "lag.records \(.lag.records) is not the sum of lag_records \([$ps[].lag_records] | add)"
          else empty end' <<<"$1"
}

# While behind: several samples, each consistent and still behind.
behind=0
with_wm=0
sample=0
deadline=$((SECONDS + 60))
while [ $SECONDS -lt $deadline ]; do
    sample=$((sample + 1))
    before=$(status)
    t_before=$(date +%s%3N)
    "$BIN" lag "$id" --server "$url" >"$work/cli-lag" || fail "streamvisor lag failed"
    t_after=$(date +%s%3N)
    after=$(status)
    for d in "$before" "$after"; do
        why=$(check_doc "$d")
        [ -z "$why" ] || fail "sample $sample while behind: $why"
    done
    lag_before=$(jq .lag.records <<<"$before")
    [ "$lag_before" -gt 0 ] || break
    [ "$(jq -r .state <<<"$after")" = running ] || fail "job left running: $after"
    behind=$((behind + 1))
    # lag.seconds = wall clock - watermark (bounded by the request times).
    # (No watermark until every partition has been read: then no seconds.)
    jq -e --argjson t0 "$t_before" --argjson t1 "$t_after" '
        if .watermark_ms == null then .lag.seconds == null else
        .lag.seconds >= ($t0 - 1000 - .watermark_ms) / 1000 - 0.5 and
        .lag.seconds <= ($t1 + 1000 - .watermark_ms) / 1000 + 0.5 end' \
        <<<"$before" >/dev/null ||
        fail "lag.seconds is not now - watermark: $(jq -c '{watermark_ms, lag}' <<<"$before"), now ~$t_before"
    [ "$(jq .watermark_ms <<<"$before")" = null ] || with_wm=$((with_wm + 1))
    # The CLI table: the same end offsets, each row consistent, next offsets
    # between the two documents around it, total = the sum of the rows.
    python3 - "$work/cli-lag" "$topic" "$before" "$after" <<'EOF' || fail "streamvisor lag disagrees with the status documents (above)"
import json, sys
text = open(sys.argv[1]).read()
topic, before, after = sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
lines = text.splitlines()
def die(msg):
    print(msg + "\n" + text, file=sys.stderr); sys.exit(1)
if lines[0].split() != ["TOPIC", "PARTITION", "NEXT_OFFSET", "END_OFFSET", "LAG"]:
    die("bad header")
rows = [l.split() for l in lines[1:] if l.split() and l.split()[0] == topic]
if len(rows) != 4:
    die("want 4 partition rows")
b = {p["partition"]: p for p in before["partitions"]}
a = {p["partition"]: p for p in after["partitions"]}
total = 0
for r in rows:
    part, nxt, end, lag = (int(x) for x in r[1:5])
    if end != b[part]["end_offset"] or end != a[part]["end_offset"]:
        die("partition %d: end offset %d, status says %d" % (part, end, b[part]["end_offset"]))
    if not b[part]["next_offset"] <= nxt <= a[part]["next_offset"]:
        die("partition %d: next offset %d not in [%d, %d]" % (part, nxt, b[part]["next_offset"], a[part]["next_offset"]))
    if lag != end - nxt:
        die("partition %d: lag %d is not %d - %d" % (part, lag, end, nxt))
    total += lag
tot = [l.split() for l in lines if l.split()[:1] == ["total"]]
if len(tot) != 1 or int(tot[0][1]) != total:
    die("total row is not the sum %d" % total)
if not after["lag"]["records"] <= total <= before["lag"]["records"]:
    die("total %d not in [%d, %d]" % (total, after["lag"]["records"], before["lag"]["records"]))
wl = [l for l in lines if l.startswith("watermark lag: ")]
want_no_wm = before["watermark_ms"] is None and after["watermark_ms"] is None
if len(wl) != 1 or not (wl[0] == "watermark lag: - (no watermark yet)"
                        if want_no_wm else wl[0].endswith(")")):
    die("no watermark lag line")
EOF
    sleep 1
done
[ "$behind" -ge 2 ] ||
    fail "the throttled job was behind in only $behind samples (rate_per_s $RATE not applied?)"
ok "while behind ($behind samples, $with_wm with a watermark): end_offset = kcat's, lag_records = end - next, lag.records = sum, lag.seconds = now - watermark, streamvisor lag agrees"

# ---- caught up (bounded: the backlog takes ~10 s at 2,000/s) ----
deadline=$((SECONDS + 60))
while :; do
    st=$(status)
    [ "$(jq .records_in <<<"$st")" = $TOTAL ] && [ "$(jq .lag.records <<<"$st")" = 0 ] && break
    [ $SECONDS -lt $deadline ] ||
        fail "not caught up after 60 s: $(jq -c '{state, records_in, lag, partitions}' <<<"$st")"
    sleep 0.2
done
why=$(check_doc "$st")
[ -z "$why" ] || fail "caught up: $why"
jq -e 'all(.partitions[]; .lag_records == 0 and .next_offset == .end_offset)' \
    <<<"$st" >/dev/null || fail "caught up but a partition lags: $(jq -c .partitions <<<"$st")"
ends_now=$(kcat_ends)
[ "$ends_now" = "$ends" ] || fail "kcat end offsets moved: $ends_now"
ok "caught up: every partition's lag_records is 0 and next_offset = kcat end offset"

# Time lag once every partition has been read: the watermark is the
# smallest partition's newest event time minus max_out_of_orderness_ms (all
# partitions end at the same event time), and lag.seconds is wall clock
# minus it.
wm_want=$((now_ms - 60000 + (PER_PART - 1) * 10 - 100))
t0=$(date +%s%3N)
st=$(status)
t1=$(date +%s%3N)
jq -e --argjson w "$wm_want" '.watermark_ms >= $w - 1 and .watermark_ms <= $w' \
    <<<"$st" >/dev/null ||
    fail "watermark_ms $(jq .watermark_ms <<<"$st"), want $wm_want (newest event time - 100 ms)"
jq -e --argjson t0 "$t0" --argjson t1 "$t1" '
    .lag.seconds >= ($t0 - .watermark_ms) / 1000 - 0.01 and
    .lag.seconds <= ($t1 - .watermark_ms) / 1000 + 0.01' <<<"$st" >/dev/null ||
    fail "lag.seconds $(jq .lag.seconds <<<"$st") is not now - watermark (now in [$t0, $t1], watermark $(jq .watermark_ms <<<"$st"))"
ok "time lag: watermark_ms = newest event time - 100 ms, lag.seconds = now - watermark ($(jq .lag.seconds <<<"$st") s)"

"$BIN" lag "$id" --server "$url" >"$work/cli-lag" || fail "streamvisor lag failed"
{
    printf '%s\n' "TOPIC PARTITION NEXT_OFFSET END_OFFSET LAG"
    for p in $(seq 0 $((PARTS - 1))); do echo "$topic $p $PER_PART $PER_PART 0"; done
    echo "total 0"
} >"$work/cli-want"
grep -v '^watermark lag: ' "$work/cli-lag" | awk '{$1=$1; print}' >"$work/cli-got"
diff -u "$work/cli-want" "$work/cli-got" >&2 ||
    fail "streamvisor lag when caught up is not the expected table"
grep -Eq '^watermark lag: [0-9]+\.[0-9]{3} s \(watermark .+\)$' "$work/cli-lag" ||
    fail "streamvisor lag: no watermark lag line: $(cat "$work/cli-lag")"
ok "streamvisor lag prints next = end = $PER_PART, lag 0 per partition, total 0"

curl -sf "$url/metrics" >"$work/metrics" || fail "scrape failed"
zeros=$(grep -c "^streamvisor_source_lag_records{job=\"$id\",name=\"lag-job\",topic=\"$topic\",partition=\"[0-3]\"} 0$" "$work/metrics" || true)
[ "$zeros" = $PARTS ] ||
    fail "want $PARTS lag gauges at 0, got $zeros: $(grep "^streamvisor_source_lag_records" "$work/metrics")"
ok "metrics: streamvisor_source_lag_records is 0 for the 4 partitions"

# ---- Kafka's own tooling sees the group and its committed offsets ----
group=streamvisor-$id
groups_tool() {
    "$KAFKA_SH" run org.apache.kafka.tools.consumer.group.ConsumerGroupCommand \
        --bootstrap-server "$BOOTSTRAP" "$@" 2>"$work/cgc.err"
}
deadline=$((SECONDS + 40))
while :; do
    groups_tool --describe --group "$group" >"$work/cgc" || true
    # GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG ...
    rows=$(awk -v g="$group" -v t="$topic" '$1 == g && $2 == t { print $3, $4, $5, $6 }' \
        "$work/cgc" | sort -n)
    want_rows=$(for p in $(seq 0 $((PARTS - 1))); do echo "$p $PER_PART $PER_PART 0"; done)
    [ "$rows" = "$want_rows" ] && break
    [ $SECONDS -lt $deadline ] || {
        cat "$work/cgc" "$work/cgc.err" >&2
        fail "ConsumerGroupCommand --describe --group $group: committed offsets never reached the end offsets"
    }
    sleep 1
done
groups_tool --list >"$work/groups" || { cat "$work/cgc.err" >&2; fail "ConsumerGroupCommand --list failed"; }
grep -qx "$group" "$work/groups" || fail "group $group not listed by ConsumerGroupCommand: $(cat "$work/groups")"
ok "Kafka's ConsumerGroupCommand lists $group with committed offsets $PER_PART (lag 0) on every partition"

# Negative control: a group nobody committed for has no offsets there.
groups_tool --describe --group "streamvisor-no-such-job-$$" >"$work/cgc-none" 2>&1 || true
if awk -v t="$topic" '$2 == t' "$work/cgc-none" | grep -q .; then
    fail "an unknown group shows offsets for $topic: $(cat "$work/cgc-none")"
fi
ok "negative control: an unused group shows no offsets for the topic"

"$BIN" cancel "$id" --server "$url" >/dev/null || fail "cancel failed"
summary=1
echo "$passed passed, $failed failed"
