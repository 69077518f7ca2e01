#!/usr/bin/env bash
# bench/lib/peak_smaps.sh — what a job's peak RSS is made of: one bounded
# job (bench/lib/specs.sh: W1, W2 or W3 at parallelism 1) on the bench
# broker, the server's /proc/PID/smaps_rollup sampled every 30 ms; prints
# the idle server's Rss / Anonymous, at the sampled peak Rss, Anonymous and
# the file-backed rest (shared libraries' code faulted back in), VmHWM, and
# the file-backed pages per library at the job's end (bench/BASELINE.md
# "What W3's peak under the 64 MB budget holds").
#
# Usage: bench/lib/peak_smaps.sh [W3 [exactly_once [MEMORY_MB [RECORDS]]]]
#   (W3, exactly_once, 64, 2000000). Needs the release build in
#   build/bench/sv (bench/run.sh builds it). env BENCH_KAFKA_PORT (19492),
#   BENCH_SV_PORT (19480); the server's other environment is passed on
#   (e.g. MALLOC_MMAP_THRESHOLD_).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"
W=${1:-W3}; D=${2:-exactly_once}; MEM=${3:-64}; N=${4:-2000000}
export KAFKA_PORT=${BENCH_KAFKA_PORT:-19492} KAFKA_STATE_DIR=$repo/build/bench/kafka
export KAFKA_NUM_PARTITIONS=8 KAFKA_JVM_PERF_OPTS=
BOOT=127.0.0.1:$KAFKA_PORT
PORT=${BENCH_SV_PORT:-19480}
RAWK=$repo/build/bench/sv/bench_raw_kafka
SV=$repo/build/bench/sv/streamvisor
OUT=$repo/build/bench/smaps
[ -x "$SV" ] || { echo "no release build in build/bench/sv" >&2; exit 1; }
. "$here/specs.sh"
case $W in W1|W2|W3) ;; *) echo "workload: W1, W2 or W3" >&2; exit 2 ;; esac
SV_PID=""
cleanup() {
    [ -z "$SV_PID" ] || kill -KILL "$SV_PID" 2>/dev/null || true
    deploy/kafka/kafka.sh stop >/dev/null 2>&1 || true
}
trap cleanup EXIT
mkdir -p "$OUT"; rm -rf "$OUT/data"
deploy/kafka/kafka.sh start >/dev/null
IN=smaps-bids-$$ O=smaps-out-$$
"$RAWK" topics --bootstrap "$BOOT" --topic "$IN,$O" >/dev/null
"$RAWK" load --bootstrap "$BOOT" --topic "$IN" --count "$N" >/dev/null
spec smaps bounded "$W" "$D" "$IN" "$O" 1 "" "$MEM" >"$OUT/spec.json"
"$SV" serve --listen "127.0.0.1:$PORT" --data-dir "$OUT/data" --bootstrap-servers "$BOOT" >"$OUT/server.log" 2>&1 &
SV_PID=$!
job_up "$PORT" || true
sleep 0.5
roll() { awk '/^Rss:/ { r = $2 } /^Anonymous:/ { a = $2 } END { print r, a, r - a }' "/proc/$SV_PID/smaps_rollup"; }
read -r r0 a0 f0 < <(roll)
id=$(job_submit "$PORT" "$OUT/spec.json")
mr=0 ma=0 mf=0
while :; do
    read -r r a f < <(roll)
    [ "$r" -gt "$mr" ] && { mr=$r; ma=$a; mf=$f; }
    st=$(job_state "$PORT" "$id")
    case "$st" in completed|failed|cancelled) break ;; esac
    sleep 0.03
done
echo "$W $D memory_mb $MEM: $st; idle Rss $r0 kB (Anonymous $a0, file-backed $f0); at the sampled peak Rss $mr kB, Anonymous $ma, file-backed $mf; VmHWM $(awk '/^VmHWM/ { print $2 }' "/proc/$SV_PID/status") kB"
echo "file-backed kB per file at the end (> 200 kB):"
awk '/^[0-9a-f]+-[0-9a-f]+ / { f = $6 } /^Rss:/ { if (f ~ /^\//) r[f] += $2 }
     END { for (k in r) if (r[k] > 200) print r[k], k }' "/proc/$SV_PID/smaps" | sort -rn
kill -TERM "$SV_PID"; wait "$SV_PID" 2>/dev/null || true; SV_PID=""
"$RAWK" delete --bootstrap "$BOOT" --topic "$IN,$O" >/dev/null 2>&1 || true
