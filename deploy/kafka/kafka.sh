#!/usr/bin/env bash
# A real single-node Apache Kafka 4.x broker (KRaft) on loopback, for
# streamvisor's development and integration tests. See README.md here.
#
# Usage: deploy/kafka/kafka.sh COMMAND [ARGS]
#   fetch                     resolve the broker jars from Maven Central into
#                             $KAFKA_LIBDIR (no-op when already there)
#   start                     fetch if needed, format storage once, start the
#                             broker in the background and wait until it
#                             answers; prints the bootstrap address last
#   stop                      stop the broker started here (pid file only)
#   status                    exit 0 if running and answering, 1 otherwise
#   reset                     stop and delete the data dir (fresh cluster)
#   topic-create NAME [PARTITIONS] [TopicCommand args...]
#                             create a topic (replication factor 1)
#   run CLASS [ARGS...]       run any class from the Kafka jars (tools)
#   bootstrap                 print the bootstrap address
#
# Environment (defaults in brackets):
#   KAFKA_STATE_DIR   [<repo>/build/kafka]  config, data/, logs/, kafka.pid
#                     (KAFKA_HOME_DIR is accepted as an alias)
#   KAFKA_LIBDIR      [$KAFKA_STATE_DIR/libs]  the resolved jars
#   KAFKA_PORT        [19092]               PLAINTEXT listener, 127.0.0.1
#   KAFKA_CONTROLLER_PORT [KAFKA_PORT+1]    KRaft controller listener
#   KAFKA_ADVERTISED_PORT [KAFKA_PORT]      the port clients are told to use
#                     (a fault-injecting proxy in front of the broker:
#                     tests/integration/faultproxy.py)
#   KAFKA_NUM_PARTITIONS  [4]               default partitions of new topics
#   KAFKA_BOOTSTRAP   [127.0.0.1:$KAFKA_PORT]  used by topic-create
#   KAFKA_START_TIMEOUT [90]                seconds to wait for the broker
#   KAFKA_HEAP_OPTS   [-Xms256m -Xmx1g]
#   KAFKA_JVM_PERF_OPTS [-XX:TieredStopAtLevel=1]  empty: full JIT (benchmarks)
#   JAVA              [java]   MVN [mvn]
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

STATE_DIR=${KAFKA_STATE_DIR:-${KAFKA_HOME_DIR:-$repo/build/kafka}}
LIBDIR=${KAFKA_LIBDIR:-$STATE_DIR/libs}
PORT=${KAFKA_PORT:-19092}
CONTROLLER_PORT=${KAFKA_CONTROLLER_PORT:-$((PORT + 1))}
ADVERTISED_PORT=${KAFKA_ADVERTISED_PORT:-$PORT}
NUM_PARTITIONS=${KAFKA_NUM_PARTITIONS:-4}
START_TIMEOUT=${KAFKA_START_TIMEOUT:-90}
HEAP_OPTS=${KAFKA_HEAP_OPTS:--Xms256m -Xmx1g}
# C1-only JIT: the broker answers ~1 s sooner and burns less CPU on this
# 2-core machine while tests run. Set KAFKA_JVM_PERF_OPTS= (empty) for
# throughput benchmarks against the broker (full C2 JIT).
JVM_PERF_OPTS=${KAFKA_JVM_PERF_OPTS--XX:TieredStopAtLevel=1}
JAVA=${JAVA:-java}
MVN=${MVN:-mvn}

ADDR=127.0.0.1:$PORT
DATA_DIR=$STATE_DIR/data
LOG_DIR=$STATE_DIR/logs
PROPS=$STATE_DIR/server.properties
PIDFILE=$STATE_DIR/kafka.pid
LOCKFILE=$STATE_DIR/.lock
POM=$here/pom.xml
STAMP=$LIBDIR/.fetched

# JVM flags for a fast start on a 2-core machine: serial GC (no GC threads
# to spin up), class data sharing.
JVM_COMMON=(-XX:+UseSerialGC -Xshare:auto -Djava.awt.headless=true)
# Short-lived tools: C1 only starts faster.
JVM_TOOLS=("${JVM_COMMON[@]}" -XX:TieredStopAtLevel=1 -Xmx256m
           "-Dlog4j2.configurationFile=$here/tools-log4j2.yaml")

say() { echo "kafka.sh: $*" >&2; }
die() { echo "kafka.sh: ERROR: $*" >&2; exit 1; }

lock() {
    mkdir -p "$STATE_DIR"
    exec 9>"$LOCKFILE"
    flock -w 300 9 || die "could not lock $LOCKFILE"
}

# The stamp holds a hash of pom.xml: editing the pom (e.g. the Kafka
# version) re-resolves the jars.
pom_hash() { sha256sum "$POM" | cut -d' ' -f1; }

fetched() { [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$(pom_hash)" ]; }

do_fetch() {
    if fetched; then
        return 0
    fi
    command -v "$MVN" >/dev/null 2>&1 || die "maven ($MVN) not found; run deploy/install-deps.sh"
    say "resolving Kafka broker jars with Maven into $LIBDIR"
    local tmp=$LIBDIR.tmp.$$
    rm -rf "$tmp"
    # (Debian's Maven 3.8.7 prints stray ANSI resets even in batch mode.)
    if ! "$MVN" -B -q -Dstyle.color=never -f "$POM" dependency:copy-dependencies \
            -DincludeScope=runtime -DoutputDirectory="$tmp" 2>&1 |
            sed 's/\x1b\[[0-9;]*m//g' >&2; then
        rm -rf "$tmp"
        die "Maven could not resolve the Kafka broker (see $POM); is Maven Central reachable?"
    fi
    ls "$tmp"/kafka_2.13-*.jar >/dev/null 2>&1 || { rm -rf "$tmp"; die "kafka_2.13 jar missing after Maven resolution"; }
    pom_hash >"$tmp/.fetched"
    rm -rf "$LIBDIR"
    mv "$tmp" "$LIBDIR"
    local jars=("$LIBDIR"/*.jar)
    say "resolved ${#jars[@]} jars ($(basename "$LIBDIR"/kafka_2.13-*.jar))"
}

# pid of our broker if it is alive, empty otherwise. Checks the command
# line so a recycled pid is never mistaken for (or killed as) the broker.
broker_pid() {
    local pid
    [ -f "$PIDFILE" ] || return 0
    pid=$(cat "$PIDFILE" 2>/dev/null || true)
    case "$pid" in ''|*[!0-9]*) return 0 ;; esac
    if [ -r "/proc/$pid/cmdline" ] &&
       tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "kafka.Kafka $PROPS"; then
        echo "$pid"
    fi
}

# Does anything accept TCP connections on the port?
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Does the broker answer a metadata request and list itself?
answers() {
    local out
    out=$(timeout 10 kcat -b "$ADDR" -L -m 3 -J 2>/dev/null) || return 1
    [ "$(jq '.brokers | length' <<<"$out" 2>/dev/null)" -ge 1 ] 2>/dev/null
}

show_logs() {
    local f
    for f in "$LOG_DIR/kafka.out" "$LOG_DIR/server.log"; do
        [ -s "$f" ] || continue
        echo "----- last lines of $f -----" >&2
        tail -n 40 "$f" >&2
    done
}

write_props() {
    mkdir -p "$DATA_DIR" "$LOG_DIR"
    sed -e "s|@KAFKA_PORT@|$PORT|g" \
        -e "s|@ADVERTISED_PORT@|$ADVERTISED_PORT|g" \
        -e "s|@CONTROLLER_PORT@|$CONTROLLER_PORT|g" \
        -e "s|@DATA_DIR@|$DATA_DIR|g" \
        -e "s|@NUM_PARTITIONS@|$NUM_PARTITIONS|g" \
        "$here/server.properties.in" >"$PROPS.tmp"
    mv "$PROPS.tmp" "$PROPS"
}

# A Kafka cluster id: 16 random bytes, URL-safe base64 without padding,
# not starting with '-' (what StorageTool random-uuid prints, without
# paying for a JVM start).
cluster_id() {
    local id
    while :; do
        id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
        case "$id" in -*) ;; *) echo "$id"; return ;; esac
    done
}

format_storage() {
    if [ -f "$DATA_DIR/meta.properties" ]; then
        return 0
    fi
    local id
    id=$(cluster_id)
    say "formatting storage in $DATA_DIR (cluster id $id)"
    "$JAVA" "${JVM_TOOLS[@]}" -cp "$LIBDIR/*" kafka.tools.StorageTool format \
        -t "$id" -c "$PROPS" --standalone >"$LOG_DIR/format.out" 2>&1 ||
        { cat "$LOG_DIR/format.out" >&2; die "storage format failed"; }
}

cmd_start() {
    command -v "$JAVA" >/dev/null 2>&1 || die "java not found; run deploy/install-deps.sh"
    command -v kcat >/dev/null 2>&1 || die "kcat not found; run deploy/install-deps.sh"
    lock
    local pid
    pid=$(broker_pid)
    if [ -n "$pid" ]; then
        if answers; then
            say "already running (pid $pid)"
            echo "$ADDR"
            return 0
        fi
        say "pid $pid is alive but does not answer yet; waiting"
    else
        rm -f "$PIDFILE"
        if port_open "$PORT" || port_open "$CONTROLLER_PORT"; then
            die "port $PORT or $CONTROLLER_PORT is already in use by another process (not the broker of $STATE_DIR); set KAFKA_PORT"
        fi
        do_fetch
        write_props
        format_storage
        say "starting Kafka broker on $ADDR (logs in $LOG_DIR)"
        # setsid: the broker outlives the shell and test harness that
        # started it; fd 9 (the lock) must not leak into it.
        # shellcheck disable=SC2086,SC2016 # HEAP_OPTS is a list of JVM flags; $$ is for sh
        setsid nohup sh -c 'echo $$ >"$0"; exec "$@"' "$PIDFILE" \
            "$JAVA" $HEAP_OPTS $JVM_PERF_OPTS "${JVM_COMMON[@]}" \
            -XX:+ExitOnOutOfMemoryError \
            "-Dkafka.logs.dir=$LOG_DIR" \
            "-Dlog4j2.configurationFile=$here/log4j2.yaml" \
            -cp "$LIBDIR/*" kafka.Kafka "$PROPS" \
            >"$LOG_DIR/kafka.out" 2>&1 </dev/null 9>&- &
        local i
        for i in 1 2 3 4 5 6 7 8 9 10; do
            [ -s "$PIDFILE" ] && break
            sleep 0.1
        done
    fi
    local t0=$SECONDS
    while :; do
        pid=$(broker_pid)
        if [ -z "$pid" ]; then
            show_logs
            rm -f "$PIDFILE"
            die "the broker process exited during startup"
        fi
        if answers; then
            break
        fi
        if [ $((SECONDS - t0)) -ge "$START_TIMEOUT" ]; then
            show_logs
            die "the broker (pid $pid) did not answer on $ADDR within ${START_TIMEOUT}s; it is left running (kafka.sh stop)"
        fi
        sleep 0.25
    done
    say "broker up (pid $pid) after $((SECONDS - t0))s"
    echo "$ADDR"
}

cmd_stop() {
    lock
    local pid i
    pid=$(broker_pid)
    if [ -z "$pid" ]; then
        rm -f "$PIDFILE"
        say "not running"
        return 0
    fi
    say "stopping broker (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 200; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        say "still alive after 20s; sending KILL"
        kill -KILL "$pid" 2>/dev/null || true
        for ((i = 0; i < 50; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
    fi
    rm -f "$PIDFILE"
    say "stopped"
}

cmd_status() {
    local pid
    pid=$(broker_pid)
    if [ -z "$pid" ]; then
        echo "not running"
        return 1
    fi
    if answers; then
        echo "running (pid $pid) at $ADDR"
        return 0
    fi
    echo "process $pid alive but not answering on $ADDR"
    return 1
}

cmd_reset() {
    cmd_stop
    say "deleting $DATA_DIR"
    rm -rf "$DATA_DIR" "$PROPS"
}

need_libs() {
    fetched || { lock; do_fetch; }
}

cmd_topic_create() {
    [ $# -ge 1 ] || die "usage: kafka.sh topic-create NAME [PARTITIONS] [TopicCommand args...]"
    local name=$1 parts=${2:-$NUM_PARTITIONS}
    shift
    [ $# -ge 1 ] && shift
    need_libs
    local bootstrap=${KAFKA_BOOTSTRAP:-$ADDR}
    "$JAVA" "${JVM_TOOLS[@]}" -cp "$LIBDIR/*" org.apache.kafka.tools.TopicCommand \
        --bootstrap-server "$bootstrap" --create --topic "$name" \
        --partitions "$parts" --replication-factor 1 "$@" >&2
    # Return only once every partition has a leader in the metadata, so a
    # client started right after this finds the topic usable.
    local t0=$SECONDS out
    while :; do
        out=$(timeout 10 kcat -b "$bootstrap" -L -t "$name" -m 3 -J 2>/dev/null || true)
        if [ -n "$out" ] && jq -e --arg t "$name" \
              '[.topics[] | select(.topic == $t and .error == null)] | length == 1 and
               (.[0].partitions | length >= 1 and all(.leader >= 0))' \
              <<<"$out" >/dev/null 2>&1; then
            return 0
        fi
        [ $((SECONDS - t0)) -lt 30 ] || die "topic $name has no leaders after 30s"
        sleep 0.2
    done
}

cmd_run() {
    [ $# -ge 1 ] || die "usage: kafka.sh run CLASS [ARGS...]"
    need_libs
    exec "$JAVA" "${JVM_TOOLS[@]}" -cp "$LIBDIR/*" "$@"
}

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

case "${1:-}" in
    fetch) lock; do_fetch ;;
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    reset) cmd_reset ;;
    topic-create) shift; cmd_topic_create "$@" ;;
    run) shift; cmd_run "$@" ;;
    bootstrap) echo "$ADDR" ;;
    -h|--help|help) usage ;;
    *) usage | sed -n '/^Usage:/,/^$/p' >&2; exit 2 ;;
esac
