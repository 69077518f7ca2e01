#!/usr/bin/env bash
# Smoke test of the real Kafka test broker (deploy/kafka/kafka.sh start).
#
# Needs a running broker at $KAFKA_BOOTSTRAP (default 127.0.0.1:19092); if it
# does not answer, the test FAILS (it never skips). Checks:
#   1. a 4-partition topic created with kafka.sh topic-create is usable;
#   2. 100 keyed messages produced with kcat are all consumed back, spread
#      over more than one partition;
#   3. transactions (python3-confluent-kafka on librdkafka): an aborted
#      transaction is invisible to a read_committed consumer and visible to
#      a read_uncommitted one, a committed one is visible, and offsets sent
#      to the transaction are committed for the consumer group with it.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
kafka_sh=$repo/deploy/kafka/kafka.sh

BOOTSTRAP=${KAFKA_BOOTSTRAP:-127.0.0.1:${KAFKA_PORT:-19092}}
export KAFKA_BOOTSTRAP=$BOOTSTRAP

fail() {
    echo "broker_smoke: FAIL: $*" >&2
    echo "0 passed, 1 failed"
    exit 1
}
step() { echo "broker_smoke: $*"; }

# Debian's python3-confluent-kafka is built for the system interpreter; a
# python3 earlier on PATH (pyenv, venv) does not see it.
PY=${SMOKE_PYTHON:-/usr/bin/python3}

for tool in kcat jq java "$PY"; do
    command -v "$tool" >/dev/null 2>&1 || fail "$tool not found (run deploy/install-deps.sh)"
done
"$PY" -c 'import confluent_kafka' 2>/dev/null ||
    fail "python3-confluent-kafka not importable by $PY (run deploy/install-deps.sh)"

# 0. The broker answers.
meta=$(timeout 15 kcat -b "$BOOTSTRAP" -L -m 10 -J 2>/dev/null) ||
    fail "no Kafka broker answers at $BOOTSTRAP (start one: deploy/kafka/kafka.sh start)"
nbrokers=$(jq '.brokers | length' <<<"$meta")
[ "$nbrokers" -ge 1 ] || fail "broker at $BOOTSTRAP lists no brokers"
step "broker at $BOOTSTRAP answers ($nbrokers broker(s))"

suffix=$(date +%s)-$$-$RANDOM
topic=smoke-$suffix
txn_topic=smoke-txn-$suffix

# 1. Topic creation through the shared helper.
timeout 60 "$kafka_sh" topic-create "$topic" 4 >/dev/null ||
    fail "kafka.sh topic-create $topic 4 failed"
parts=$(timeout 15 kcat -b "$BOOTSTRAP" -L -t "$topic" -m 10 -J 2>/dev/null |
        jq --arg t "$topic" '.topics[] | select(.topic == $t) | .partitions | length')
[ "$parts" = 4 ] || fail "topic $topic has ${parts:-no} partitions, expected 4"
step "created topic $topic with 4 partitions"

# 2. Produce 100 keyed messages, consume them back.
for i in $(seq 1 100); do echo "k$i:v$i"; done |
    timeout 60 kcat -P -b "$BOOTSTRAP" -t "$topic" -K: -X acks=all 2>/dev/null ||
    fail "kcat could not produce to $topic"
out=$(timeout 60 kcat -C -b "$BOOTSTRAP" -t "$topic" -o beginning -e -q \
          -f '%p %k %s\n' 2>/dev/null) || fail "kcat could not consume from $topic"
count=$(grep -c . <<<"$out" || true)
[ "$count" = 100 ] || fail "consumed $count messages from $topic, expected 100"
values=$(awk '{print $3}' <<<"$out" | sort -u | wc -l)
[ "$values" = 100 ] || fail "consumed $values distinct values, expected 100"
bad=$(awk '$2 != "k" substr($3, 2)' <<<"$out" | head -1)
[ -z "$bad" ] || fail "key and value do not match: $bad"
used=$(awk '{print $1}' <<<"$out" | sort -u | wc -l)
[ "$used" -gt 1 ] || fail "all 100 keyed messages landed in one partition"
step "produced and consumed 100 messages over $used partitions"

# 3. Transactions.
timeout 60 "$kafka_sh" topic-create "$txn_topic" 1 >/dev/null ||
    fail "kafka.sh topic-create $txn_topic 1 failed"
timeout 120 "$PY" - "$BOOTSTRAP" "$txn_topic" "$topic" "$suffix" <<'EOF' ||
import sys
from confluent_kafka import Consumer, Producer, TopicPartition, KafkaException

bootstrap, topic, input_topic, suffix = sys.argv[1:5]
group = "smoke-txn-group-" + suffix

def die(msg):
    print("broker_smoke: txn: " + msg, file=sys.stderr)
    sys.exit(1)

p = Producer({"bootstrap.servers": bootstrap,
              "transactional.id": "smoke-txn-" + suffix,
              "transaction.timeout.ms": 60000,
              "message.timeout.ms": 30000})
try:
    p.init_transactions(30)
    # Aborted transaction: 10 records that read_committed must never see.
    p.begin_transaction()
    for i in range(10):
        p.produce(topic, value=b"aborted-%d" % i)
    p.flush(30)
    p.abort_transaction(30)
    # Committed transaction with offsets of the input topic for a group.
    grp = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                    "enable.auto.commit": False})
    p.begin_transaction()
    for i in range(10):
        p.produce(topic, value=b"committed-%d" % i)
    offsets = [TopicPartition(input_topic, part, 7 + part) for part in range(4)]
    p.send_offsets_to_transaction(offsets, grp.consumer_group_metadata(), 30)
    p.commit_transaction(30)
except KafkaException as e:
    die("transactional producer failed: %s" % e)

def read_all(isolation):
    c = Consumer({"bootstrap.servers": bootstrap,
                  "group.id": "smoke-reader-%s-%s" % (isolation, suffix),
                  "isolation.level": isolation,
                  "auto.offset.reset": "earliest",
                  "enable.auto.commit": False,
                  "enable.partition.eof": True})
    c.assign([TopicPartition(topic, 0, 0)])
    vals = []
    while True:
        m = c.poll(30)
        if m is None:
            die("timed out reading %s (%s)" % (topic, isolation))
        if m.error():
            if m.error().code() == -191:  # _PARTITION_EOF
                break
            die("consumer error: %s" % m.error())
        vals.append(m.value().decode())
    c.close()
    return vals

committed = read_all("read_committed")
expect = ["committed-%d" % i for i in range(10)]
if committed != expect:
    die("read_committed saw %r, expected %r" % (committed, expect))
uncommitted = read_all("read_uncommitted")
if sorted(uncommitted) != sorted(expect + ["aborted-%d" % i for i in range(10)]):
    die("read_uncommitted saw %r, expected the 10 aborted and 10 committed" % uncommitted)

got = grp.committed([TopicPartition(input_topic, part) for part in range(4)], 30)
got = {tp.partition: tp.offset for tp in got}
want = {part: 7 + part for part in range(4)}
if got != want:
    die("group %s committed offsets %r, expected %r" % (group, got, want))
grp.close()
print("broker_smoke: transactions: aborted records hidden from read_committed, "
      "committed records and transactional offsets visible")
EOF
    fail "transaction check failed"

echo "broker_smoke: PASS"
echo "1 passed, 0 failed"
