#!/usr/bin/env bash
# bench/lib/pair.sh — W1's CPU per record, an older streamvisor build
# against this tree's, in alternating (ABBA) rounds on one broker and one
# loaded topic (bench/BASELINE.md "W1: the Kafka sink's batched produce").
#
# Usage: bench/lib/pair.sh OLD_TREE [ROUNDS [RECORDS]]   (6, 2000000)
#   OLD_TREE: a source tree (e.g. `git archive <commit> | tar -x -C DIR`)
#   whose release build is in OLD_TREE/build/bench/sv, as bench/run.sh
#   builds it; this tree's must be in build/bench/sv too (bench/run.sh
#   --quick, or cmake --build build/bench/sv --target streamvisor
#   bench_raw_kafka).
#   env BENCH_KAFKA_PORT (19492), BENCH_SV_PORT (19480)
#
# Starts the bench broker (build/bench/kafka), loads RECORDS bids once, then
# per round and delivery mode runs W1 (bench/run.sh's spec: bounded,
# parallelism 1, a checkpoint a second) once with each binary, the order
# alternating per round, and measures streamvisor's process CPU from submit
# to completed, as bench/run.sh does, and its peak RSS (VmHWM, idle
# included). Prints one line per job, then per delivery the median of the
# per-round ratios new/old and each binary's median peak RSS.
#   env PAIR_OLD_ENV: assignments for the old binary's environment (e.g.
#   PAIR_OLD_ENV=STREAMVISOR_DEEP_QUEUES=1 bench/lib/pair.sh . pairs one
#   build against itself with a switch); PAIR_PARALLELISM (1);
#   PAIR_MEMORY_MB (0: no resources.memory_mb in the spec); PAIR_WORKLOAD
#   (W1; W2 and W3 are bench/run.sh's windows over the same topic, as at
#   parallelism 1). Each job line also has the server's minor page faults
#   per record (allocator churn, independent of the machine's load).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"
OLD=$(cd "${1:?usage: bench/lib/pair.sh OLD_TREE [ROUNDS [RECORDS]]}" && pwd)
R=${2:-6}
N=${3:-2000000}
export KAFKA_PORT=${BENCH_KAFKA_PORT:-19492} KAFKA_STATE_DIR=$repo/build/bench/kafka
export KAFKA_NUM_PARTITIONS=8 KAFKA_JVM_PERF_OPTS=
BOOT=127.0.0.1:$KAFKA_PORT
PORT=${BENCH_SV_PORT:-19480}
TCK=$(getconf CLK_TCK)
RAWK=$repo/build/bench/sv/bench_raw_kafka
OUT=$repo/build/bench/pair
for t in "$repo" "$OLD"; do
    [ -x "$t/build/bench/sv/streamvisor" ] || { echo "no release build in $t/build/bench/sv" >&2; exit 1; }
done
mkdir -p "$OUT"
SV_PID=""
cleanup() {
    [ -z "$SV_PID" ] || kill -KILL "$SV_PID" 2>/dev/null || true
    deploy/kafka/kafka.sh stop >/dev/null 2>&1 || true
}
trap cleanup EXIT
. "$here/specs.sh"
W=${PAIR_WORKLOAD:-W1}
case "$W" in W1|W2|W3) ;; *) echo "PAIR_WORKLOAD: W1, W2 or W3" >&2; exit 2 ;; esac
deploy/kafka/kafka.sh start >/dev/null
IN=pair-bids-$$
"$RAWK" topics --bootstrap "$BOOT" --topic "$IN" >/dev/null
"$RAWK" load --bootstrap "$BOOT" --topic "$IN" --count "$N" >"$OUT/load.json"
PAR=${PAIR_PARALLELISM:-1}
MEM=${PAIR_MEMORY_MB:-0}
hwm() { awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
cpu() { awk -v t="$TCK" '{ sub(/^.*\) /, ""); print ($12 + $13) / t }' "/proc/$1/stat"; }
minflt() { awk '{ sub(/^.*\) /, ""); print $8 }' "/proc/$1/stat"; }
k=0
one() { # old|new DELIVERY ROUND
    local which=$1 d=$2 r=$3 tree=$repo out id st c0 c1 t0 t1 l0 rss f0 f1
    local -a envs=()
    [ "$which" = old ] && tree=$OLD && read -r -a envs <<<"${PAIR_OLD_ENV:-}"
    k=$((k + 1)); out=pair-out-$$-$k
    "$RAWK" topics --bootstrap "$BOOT" --topic "$out" >/dev/null
    # an unkeyed topic: at parallelism > 1 a window is repartitioned
    spec pair bounded "$W" "$d" "$IN" "$out" "$PAR" rp "$MEM" >"$OUT/spec.json"
    rm -rf "$OUT/data"
    env "${envs[@]}" "$tree/build/bench/sv/streamvisor" serve --listen "127.0.0.1:$PORT" --data-dir "$OUT/data" \
        --bootstrap-servers "$BOOT" >>"$OUT/server-$which.log" 2>&1 &
    SV_PID=$!
    job_up "$PORT" || true
    l0=$(cut -d' ' -f1 /proc/loadavg); c0=$(cpu "$SV_PID"); f0=$(minflt "$SV_PID"); t0=$(date +%s%3N)
    id=$(job_submit "$PORT" "$OUT/spec.json")
    st=$(job_wait "$PORT" "$id")
    t1=$(date +%s%3N); c1=$(cpu "$SV_PID"); f1=$(minflt "$SV_PID"); rss=$(hwm "$SV_PID")
    kill -TERM "$SV_PID"; wait "$SV_PID" 2>/dev/null || true; SV_PID=""
    echo "$r $which $d $st $(awk -v a="$c0" -v b="$c1" -v n="$N" 'BEGIN { printf "%.3f", (b - a) * 1e6 / n }') \
$(( N * 1000 / (t1 - t0) )) $l0 $rss $(awk -v a="$f0" -v b="$f1" -v n="$N" 'BEGIN { printf "%.4f", (b - a) / n }')" | tee -a "$OUT/jobs.txt"
}
: >"$OUT/jobs.txt"
echo "# round binary delivery state cpu_s_per_M records_per_s load_average peak_rss_mb minflt_per_record"
for r in $(seq 1 "$R"); do
    order="old new"; [ $((r % 2)) = 1 ] || order="new old"
    for d in at_least_once exactly_once; do
        for b in $order; do one "$b" "$d" "$r"; done
    done
done
for d in at_least_once exactly_once; do
    awk -v d="$d" '$3 == d && $4 == "completed" { c[$1 " " $2] = $5 }
        END { for (k in c) { split(k, a, " "); if (a[2] == "new" && ((a[1] " old") in c))
                  print c[k] / c[a[1] " old"] } }' "$OUT/jobs.txt" | sort -n |
        awk -v d="$d" '{ x[NR] = $1 } END { if (NR) printf "%s: median ratio new/old %.3f over %d rounds (%.3f-%.3f)\n",
            d, (NR % 2 ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2), NR, x[1], x[NR] }'
    for b in old new; do
        awk -v d="$d" -v b="$b" '$3 == d && $2 == b && $4 == "completed" { print $8 }' "$OUT/jobs.txt" | sort -n |
            awk -v d="$d" -v b="$b" '{ x[NR] = $1 } END { if (NR) printf "%s %s: median peak RSS %.1f MB (%.1f-%.1f)\n",
                d, b, (NR % 2 ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2), x[1], x[NR] }'
        awk -v d="$d" -v b="$b" '$3 == d && $2 == b && $4 == "completed" { print $9 }' "$OUT/jobs.txt" | sort -n |
            awk -v d="$d" -v b="$b" '{ x[NR] = $1 } END { if (NR) printf "%s %s: median minor faults per record %.4f (%.4f-%.4f)\n",
                d, b, (NR % 2 ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2), x[1], x[NR] }'
    done
done
