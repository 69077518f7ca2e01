#!/usr/bin/env bash
# bench/lib/pair_w4.sh — W4 (the lookup join) with a memory budget, two
# streamvisor binaries in alternating (ABBA) rounds on one broker and one
# loaded table + auctions (bench/BASELINE.md "Memory budget on W4: the
# answered burst in pieces").
#
# Usage: bench/lib/pair_w4.sh OLD_BIN NEW_BIN [ROUNDS [RECORDS [PERSONS]]]
#   (3, 2000000, 100000). Each binary a release streamvisor (bench/run.sh
#   builds this tree's into build/bench/sv/streamvisor; copy an older one
#   aside first). bench_raw_kafka from build/bench/sv.
#   env BENCH_KAFKA_PORT (19492), BENCH_SV_PORT (19480),
#   PAIR_MEMORY_MB (64), PAIR_PARALLELISM (list, "1,2"),
#   PAIR_DELIVERY (list, "at_least_once"),
#   PAIR_WRAP (a command the server runs under, %k the job's number, e.g.
#   "heaptrack -o build/bench/pair-w4/ht-%k").
#
# Per round, parallelism and delivery: a fresh server per binary (the order
# alternating per round), its VmHWM before the job is submitted and after
# it completed (the difference is bench/run.sh's "RSS − idle"), records/s
# from submit to completed, the output's count and wrong names
# (bench_raw_kafka count --join-check). One line per job into
# build/bench/pair-w4/jobs.txt, then per parallelism the medians.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"
OLD=$(realpath "${1:?usage: bench/lib/pair_w4.sh OLD_BIN NEW_BIN [ROUNDS [RECORDS [PERSONS]]]}")
NEW=$(realpath "${2:?usage: bench/lib/pair_w4.sh OLD_BIN NEW_BIN [ROUNDS [RECORDS [PERSONS]]]}")
R=${3:-3}
N=${4:-2000000}
P=${5:-100000}
export KAFKA_PORT=${BENCH_KAFKA_PORT:-19492} KAFKA_STATE_DIR=$repo/build/bench/kafka
export KAFKA_NUM_PARTITIONS=8 KAFKA_JVM_PERF_OPTS=
BOOT=127.0.0.1:$KAFKA_PORT
PORT=${BENCH_SV_PORT:-19480}
RAWK=$repo/build/bench/sv/bench_raw_kafka
OUT=$repo/build/bench/pair-w4
MEM=${PAIR_MEMORY_MB:-64}
PARS=${PAIR_PARALLELISM:-1,2}
DELS=${PAIR_DELIVERY:-at_least_once}
read -r -a WRAP <<<"${PAIR_WRAP:-}"
for b in "$OLD" "$NEW" "$RAWK"; do
    [ -x "$b" ] || { echo "not executable: $b" >&2; exit 1; }
done
mkdir -p "$OUT"
SV_PID=""
cleanup() {
    [ -z "$SV_PID" ] || kill -KILL "$SV_PID" 2>/dev/null || true
    [ -z "${SRV:-}" ] || kill -KILL "$SRV" 2>/dev/null || true
    deploy/kafka/kafka.sh stop >/dev/null 2>&1 || true
}
trap cleanup EXIT
deploy/kafka/kafka.sh start >/dev/null
TABLE=pair-persons-$$ IN=pair-auctions-$$
"$RAWK" topics --bootstrap "$BOOT" --topic "$TABLE" --partitions 8 --compact >/dev/null
"$RAWK" topics --bootstrap "$BOOT" --topic "$IN" --partitions 8 >/dev/null
"$RAWK" load-q3 --bootstrap "$BOOT" --table "$TABLE" --topic "$IN" \
    --persons "$P" --count "$N" >"$OUT/load.json"
hwm() { awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
. "$here/specs.sh"
w4_spec() { # DELIVERY PARALLELISM OUT: bench/run.sh's W4
    spec_q3 pair-w4 bounded "$1" "$IN" "$TABLE" "$3" "$2" "$MEM"
}
k=0
one() { # old|new DELIVERY PARALLELISM ROUND
    local which=$1 d=$2 par=$3 r=$4 bin=$OLD out id st t0 t1 l0 h0 h1 cnt
    [ "$which" = new ] && bin=$NEW
    k=$((k + 1)); out=pair-w4-out-$$-$k
    "$RAWK" topics --bootstrap "$BOOT" --topic "$out" >/dev/null
    w4_spec "$d" "$par" "$out" >"$OUT/spec.json"
    rm -rf "$OUT/data"
    ! curl -sf "127.0.0.1:$PORT/v1/info" >/dev/null 2>&1 || { echo "port $PORT in use" >&2; exit 1; }
    "${WRAP[@]//%k/$k}" "$bin" serve --listen "127.0.0.1:$PORT" --data-dir "$OUT/data" \
        --bootstrap-servers "$BOOT" >>"$OUT/server-$which.log" 2>&1 &
    SV_PID=$!
    local pid
    job_up "$PORT" || true
    # under a wrapper, the server is its child
    pid=$SV_PID
    [ ${#WRAP[@]} -eq 0 ] || pid=$(pgrep -n -x streamvisor -P "$SV_PID")
    SRV=$pid
    l0=$(cut -d' ' -f1 /proc/loadavg); h0=$(hwm "$pid"); t0=$(date +%s%3N)
    id=$(job_submit "$PORT" "$OUT/spec.json")
    st=$(job_wait "$PORT" "$id")
    t1=$(date +%s%3N); h1=$(hwm "$pid")
    kill -TERM "$pid"; wait "$SV_PID" 2>/dev/null || true; SV_PID="" SRV=""
    cnt=$("$RAWK" count --bootstrap "$BOOT" --topic "$out" --join-check | jq -r '"\(.records) \(.wrong)"')
    echo "$r $which $d p$par $st $(( N * 1000 / (t1 - t0) )) $l0 $h0 $h1 \
$(awk -v a="$h0" -v b="$h1" 'BEGIN { printf "%.1f", b - a }') $cnt" | tee -a "$OUT/jobs.txt"
}
: >"$OUT/jobs.txt"
echo "# round binary delivery parallelism state records_per_s load_average start_hwm_mb peak_hwm_mb rss_minus_idle_mb output_records output_wrong"
for r in $(seq 1 "$R"); do
    order="old new"; [ $((r % 2)) = 1 ] || order="new old"
    for par in ${PARS//,/ }; do
        for d in ${DELS//,/ }; do
            for b in $order; do one "$b" "$d" "$par" "$r"; done
        done
    done
done
for par in ${PARS//,/ }; do
    for b in old new; do
        awk -v p="p$par" -v b="$b" '$4 == p && $2 == b && $5 == "completed" { print $10, $6 }' "$OUT/jobs.txt" |
            sort -n | awk -v p="p$par" -v b="$b" '{ x[NR] = $1; s += $2 } END { if (NR)
                printf "%s %s: RSS - idle median %.1f MB (%.1f-%.1f), mean %d records/s, %d jobs\n",
                p, b, (NR % 2 ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2), x[1], x[NR], s / NR, NR }'
    done
done
