#!/usr/bin/env bash
# After a kill -9, exactly-once output becomes readable in steps while the
# backlog is read (docs/performance.md "Exactly-once recovery": the
# catch-up cadence), not only once the whole backlog is through.
#
# An exactly_once Kafka -> Kafka job throttled to 8,000 records/s
# (source.rate_per_s) with a 60 s checkpoint interval reads 2,000 records
# and takes its catch-up checkpoint. The supervisor is killed with kill -9,
# 16,000 more records are produced (a 2 s backlog at the throttle), and
# the supervisor is restarted on the same data dir. While the job is still
# at least 1,000 records behind:
#   - its last committed checkpoint moves on at least 3 times (a checkpoint
#     every 100 ms, the interval being 60 s; each is a committed
#     transaction, so its output is readable);
#   - the log names those checkpoints "(catch-up cadence)".
# Once caught up, the read_committed output holds every input record once
# (18,000 ids, none twice). Negative control: the same kill and backlog
# again with STREAMVISOR_NO_CATCHUP_CADENCE=1 on the restart: no
# checkpoint completes while the job is behind (the rule the cadence
# replaces), and the output is still exact (34,000 ids).
#
# Needs $KAFKA_BOOTSTRAP (the ctest fixture's broker) and $STREAMVISOR_BIN.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/../lib/harness.sh"
th_init catchup_cadence
T0=$(date +%s%3N)
at() { echo "[$(($(date +%s%3N) - T0)) ms] $*"; }
KAFKA_SH=$repo/deploy/kafka/kafka.sh
PARTS=4
RATE=8000

for tool in kcat jq curl; do
    command -v "$tool" >/dev/null || fail "$tool not found (run deploy/install-deps.sh)"
done
[ -x "$BIN" ] || fail "streamvisor binary '$BIN' not found (STREAMVISOR_BIN)"

in=it-cadence-in-$$-$RANDOM
out=it-cadence-out-$$-$RANDOM
for t in "$in" "$out"; do
    "$KAFKA_SH" topic-create "$t" $PARTS >/dev/null 2>"$work/topic.err" ||
        { cat "$work/topic.err" >&2; fail "cannot create topic $t"; }
done

at "topics $in and $out created"
next_id=0
produce() { # $1 = records, spread over the partitions by id
    local n=$1 p
    for p in $(seq 0 $((PARTS - 1))); do
        awk -v from=$next_id -v n="$n" -v p="$p" -v np=$PARTS 'BEGIN {
            for (i = from; i < from + n; i++)
                if (i % np == p) printf "{\"id\":%d,\"k\":\"k%d\"}\n", i, i % 10 }' \
            >"$work/p$p.jsonl"
        kcat -P -b "$BOOTSTRAP" -t "$in" -p "$p" -l "$work/p$p.jsonl" ||
            fail "cannot produce to $in partition $p"
    done
    next_id=$((next_id + n))
}

port=$(th_free_port)
url=http://127.0.0.1:$port
start() { # env assignments for the supervisor, if any
    env "$@" "$BIN" serve --listen "127.0.0.1:$port" --data-dir "$work/data" \
        --bootstrap-servers "$BOOTSTRAP" >>"$work/log" 2>&1 &
    pid=$!
    th_wait_up "$url" || fail "supervisor did not start"
}
status() { curl -sf "$url/v1/jobs/$id"; }
committed_ids() { # the output's ids, read_committed, one per line
    kcat -C -b "$BOOTSTRAP" -t "$out" -e -q -X isolation.level=read_committed \
        -f '%s\n' 2>/dev/null | jq -r .id
}

produce 2000
start
cat >"$work/spec.json" <<EOF
{"name": "cadence-job",
 "source": {"kind": "kafka", "topic": "$in", "rate_per_s": $RATE},
 "schema": [{"name": "id", "type": "int64"}, {"name": "k", "type": "string"}],
 "pipeline": [{"filter": "id >= 0"}],
 "sink": {"kind": "kafka", "topic": "$out"},
 "delivery": "exactly_once",
 "checkpoint": {"interval_ms": 60000}}
EOF
id=$("$BIN" submit --server "$url" "$work/spec.json") || fail "submit failed"
[ -n "$id" ] || fail "submit printed no id"

# caught up with the first 2,000 (its catch-up checkpoint committed them)
wait_caught_up() { # $1 = records the output must hold
    local deadline=$((SECONDS + 60)) n=0
    while [ $SECONDS -lt $deadline ]; do
        n=$(committed_ids | wc -l)
        [ "$n" -ge "$1" ] && return 0
        sleep 0.2
    done
    fail "the read_committed output holds $n records after 60 s, want $1"
}
wait_caught_up 2000
ok "job $id caught up with the first 2,000 records"

# kill -9, a 3 s backlog, restart; sample the status while behind
round() { # $1 = label, $2... = env of the restarted supervisor
    local label=$1
    shift
    kill -9 "$pid"
    wait "$pid" 2>/dev/null || true
    pid=
    produce 16000
    at "$label: killed, 16,000 records produced"
    start "$@"
    at "$label: restarted"
    local deadline=$((SECONDS + 60)) ids="" n_behind=0 lag=-1 ck
    while [ $SECONDS -lt $deadline ]; do
        local st state
        st=$(status | jq -r '"\(.state) \(.lag.records // -1) \(.last_checkpoint.id // -1)"') ||
            { sleep 0.05; continue; }
        read -r state lag ck <<<"$st"
        echo "$(date +%s.%N | cut -c1-14) $st" >>"$work/samples.$label"
        if [ "$state" = running ] && [ "$lag" -ge 1000 ]; then
            n_behind=$((n_behind + 1))
            case " $ids " in *" $ck "*) ;; *) ids="$ids $ck" ;; esac
        elif [ "$n_behind" -gt 0 ] && [ "$lag" -ge 0 ] && [ "$lag" -lt 1000 ]; then
            break
        fi
        sleep 0.05
    done
    [ "$n_behind" -ge 4 ] || { tail -n 40 "$work/samples.$label" >&2
        fail "$label: only $n_behind status samples while >= 1,000 records behind (rate_per_s $RATE not applied?)"; }
    # distinct checkpoint ids seen while behind, minus the first (restored)
    moves=$(($(wc -w <<<"$ids") - 1))
    echo "$label: $n_behind samples while behind, checkpoint ids seen:$ids (moved $moves times)"
    at "$label: caught up (status)"
    wait_caught_up "$next_id"
    at "$label: the output holds $next_id records"
    committed_ids | sort -n >"$work/ids"
    local dup n
    dup=$(uniq -d "$work/ids" | wc -l)
    n=$(wc -l <"$work/ids")
    [ "$n" = "$next_id" ] && [ "$dup" = 0 ] &&
        [ "$(head -1 "$work/ids")" = 0 ] && [ "$(tail -1 "$work/ids")" = $((next_id - 1)) ] ||
        fail "$label: the read_committed output holds $n records ($dup ids twice), want ids 0..$((next_id - 1)) once each"
    ok "$label: the read_committed output holds ids 0..$((next_id - 1)) once each"
}

round cadence
[ "$moves" -ge 3 ] ||
    fail "cadence: the last checkpoint moved $moves times while the job was >= 1,000 records behind, want >= 3"
ok "cadence: the last checkpoint moved $moves times while the job was behind"
grep -q '(catch-up cadence)' "$work/log" ||
    fail "cadence: the log names no '(catch-up cadence)' checkpoint"
ok "cadence: the log names the catch-up cadence checkpoint"

round control STREAMVISOR_NO_CATCHUP_CADENCE=1
[ "$moves" -eq 0 ] ||
    fail "negative control: without the cadence the last checkpoint moved $moves times while behind, want 0"
ok "negative control: without the cadence no checkpoint completed while the job was behind"

summary=1
echo "$passed passed, $failed failed"
