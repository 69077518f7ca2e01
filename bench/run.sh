#!/usr/bin/env bash
# bench/run.sh — streamvisor side by side with raw librdkafka, Kafka
# Streams and Apache Flink, on one real Kafka broker, the same input bytes, one machine, one
# run (issue 7; bench/README.md "run.sh").
#
# Usage: bench/run.sh [--quick] [--json PATH] [--records N]
#                     [--contenders raw,streamvisor,kstreams,flink] [--workloads W1,W2,W3,W4]
#                     [--no-latency] [--latency-s S] [--keep-broker]
#                     [--parallelism 1,2] [--persons N] [--repartition]
#                     [--memory-mb 0,64] [--latency-rate N] [--downtime-s S]
#
#   --workloads L  default W1,W2,W3,W4; with --quick W1,W2,W3 (W4, the
#                  lookup join, only when named: it loads two more topics)
#   --persons N    W4's persons table (default 100,000; --quick 10,000)
#
#   --quick        100,000 records, bounded runs of every contender (the CI
#                  smoke check: every contender completes with the right
#                  record count), latency and recovery for W1 only;
#                  under 3 minutes once built
#   --json PATH    the result rows ([default] build/bench/results.json)
#   --records N    input records (full run: 2,000,000)
#   --parallelism L  streamvisor's bounded runs at each parallelism of the
#                  list (default 1); rows "streamvisor-pN" for N > 1. Those
#                  read the same bids keyed by their window's key (W1:
#                  'bids' as loaded; W2: 'bids-key', W3: 'bids-auction',
#                  loaded with --key-by and declared source.partitioned_by,
#                  docs/parallelism.md); latency runs stay at parallelism 1
#   --repartition  also, for W2 and W3 at each parallelism N > 1 of the
#                  list, rows "streamvisor-rp-pN": the unkeyed 'bids' as
#                  loaded, no partitioned_by, so the window runs after a
#                  repartition through the job's internal topic
#                  (docs/repartition.md); their output must equal
#                  streamvisor's at parallelism 1
#   --memory-mb L  streamvisor's bounded runs at each memory budget of the
#                  list (resources.memory_mb; default 0: none); rows
#                  "streamvisor[-pN]-mM" for M > 0 carry the largest memory
#                  estimate the status showed (docs/performance.md)
#   --latency-rate N  the latency/recovery runs' input rate (default: 50%
#                  of streamvisor's bounded rate in this run), so paired
#                  runs compare the same rate
#   --downtime-s S the recovery run restarts S seconds after the kill
#                  (default 0: at once); recovery_s is still from the kill
#
# Everything is written under build/bench/ (the broker's state in
# build/bench/kafka, its own port 19492 so it never meets a test broker,
# streamvisor data dirs, Flink checkpoints, logs). Nothing goes into the
# source tree.
#
# The commit reported is HEAD when the run starts (the build is of the
# working tree at that moment).
#
# Steps: build (release streamvisor and bench_raw_kafka in build/bench/sv,
# the Kafka Streams and Flink peers with Maven into build/bench/kstreams
# and build/bench/flink); start the broker; load
# the input topic once (Nexmark bids as ~200-byte JSON, 8 partitions;
# for W4 the persons table and the auctions, bench_raw_kafka load-q3); for
# each workload and delivery guarantee run each contender in turn on that
# topic in bounded mode (throughput, CPU, peak RSS, checkpoint durations,
# output record count); then for streamvisor and Flink a stream-mode run
# at 50% of streamvisor's measured maximum rate on a fresh live topic
# (end-to-end latency), ending with kill -9 and a restart (recovery time).
# Prints one markdown table; writes the JSON rows.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
cd "$repo"

ORIG_ARGS="$*"
QUICK=0
JSON_OUT=""
RECORDS=""
CONTENDERS="raw,streamvisor,kstreams,flink"
WORKLOADS=""
PERSONS=""
LATENCY=1
LATENCY_S=""
KEEP_BROKER=0
PARALLELISM=1
REPARTITION=0
MEMORY_MB=0
LATENCY_RATE=""
DOWNTIME_S=0
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) QUICK=1 ;;
        --json) JSON_OUT=$2; shift ;;
        --records) RECORDS=$2; shift ;;
        --contenders) CONTENDERS=$2; shift ;;
        --workloads) WORKLOADS=$2; shift ;;
        --no-latency) LATENCY=0 ;;
        --latency-s) LATENCY_S=$2; shift ;;
        --keep-broker) KEEP_BROKER=1 ;;
        --parallelism) PARALLELISM=$2; shift ;;
        --persons) PERSONS=$2; shift ;;
        --repartition) REPARTITION=1 ;;
        --memory-mb) MEMORY_MB=$2; shift ;;
        --latency-rate) LATENCY_RATE=$2; shift ;;
        --downtime-s) DOWNTIME_S=$2; shift ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *) echo "run.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
    shift
done

if [ "$QUICK" = 1 ]; then
    RECORDS=${RECORDS:-100000}
    WORKLOADS=${WORKLOADS:-W1,W2,W3}
    PERSONS=${PERSONS:-10000}
    LATENCY_S=${LATENCY_S:-5}
    RECOVERY_S=10
    LAT_WORKLOADS="W1"
    LAT_DELIVERIES="exactly_once"
else
    RECORDS=${RECORDS:-2000000}
    WORKLOADS=${WORKLOADS:-W1,W2,W3,W4}
    PERSONS=${PERSONS:-100000}
    LATENCY_S=${LATENCY_S:-20}
    RECOVERY_S=25
    LAT_WORKLOADS="${WORKLOADS//,/ }"
    LAT_WORKLOADS="${LAT_WORKLOADS//W4/}" # no latency run of the join yet
    LAT_DELIVERIES="at_least_once exactly_once"
fi

OUT=$repo/build/bench
RUN=$OUT/run
JSON_OUT=${JSON_OUT:-$OUT/results.json}
SVB=$OUT/sv
FLB=$OUT/flink
KSB=$OUT/kstreams
ROWS=$RUN/rows.jsonl
LOGS=$RUN/logs
export KAFKA_PORT=${BENCH_KAFKA_PORT:-19492}
export KAFKA_STATE_DIR=$OUT/kafka
export KAFKA_NUM_PARTITIONS=8
export KAFKA_JVM_PERF_OPTS=          # full JIT for the broker
BOOT=127.0.0.1:$KAFKA_PORT
SV_PORT=${BENCH_SV_PORT:-19480}
FLINK_REST=${BENCH_FLINK_REST_PORT:-19481}
NCPU=$(nproc)
TCK=$(getconf CLK_TCK)
RAWK=$SVB/bench_raw_kafka
SV=$SVB/streamvisor

say() { echo "[bench $(date +%H:%M:%S)] $*" >&2; }
die() { echo "run.sh: ERROR: $*" >&2; exit 1; }
has() { case ",$1," in *",$2,"*) return 0 ;; esac; return 1; }

# ---- processes we start (only these are ever signalled) ----
PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do
        kill -KILL "$p" 2>/dev/null || true
    done
    # this run's bench clients started in $(...) are not in PIDS: every
    # one names this run's broker
    pkill -KILL -f -- "bench_raw_kafka .* --bootstrap $BOOT( |$)" 2>/dev/null || true
    if [ "$KEEP_BROKER" = 0 ]; then
        deploy/kafka/kafka.sh stop >/dev/null 2>&1 || true
    fi
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

proc_cpu() { # user+sys seconds of a live pid
    awk -v t="$TCK" '{ sub(/^.*\) /, ""); print ($12 + $13) / t }' "/proc/$1/stat"
}
proc_hwm_mb() {
    awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"
}
proc_rss_mb() {
    awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"
}
now_ms() { date +%s%3N; }

# ---- build ----
build() {
    say "building release streamvisor + bench_raw_kafka in $SVB"
    if [ ! -f "$SVB/build.ninja" ]; then
        cmake -S . -B "$SVB" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$OUT/cmake.log" 2>&1 ||
            { cat "$OUT/cmake.log" >&2; die "cmake configure failed"; }
    fi
    cmake --build "$SVB" --target streamvisor bench_raw_kafka >"$OUT/build.log" 2>&1 ||
        { tail -30 "$OUT/build.log" >&2; die "build failed"; }
    if has "$CONTENDERS" kstreams; then
        say "building the Kafka Streams peer with Maven into $KSB"
        (cd bench/peers/kstreams && mvn -B -q -Dstyle.color=never -Dbench.out="$KSB" package) \
            >"$OUT/kstreams-build.log" 2>&1 ||
            { sed 's/\x1b\[[0-9;]*m//g' "$OUT/kstreams-build.log" | tail -30 >&2; die "Kafka Streams peer build failed"; }
    fi
    if has "$CONTENDERS" flink; then
        say "building the Flink peer with Maven into $FLB"
        (cd bench/peers/flink && mvn -B -q -Dstyle.color=never -Dbench.out="$FLB" package) \
            >"$OUT/flink-build.log" 2>&1 ||
            { sed 's/\x1b\[[0-9;]*m//g' "$OUT/flink-build.log" | tail -30 >&2; die "Flink peer build failed"; }
    fi
}

# ---- one result row ----
# row CONTENDER WORKLOAD DELIVERY JSON-OBJECT-OF-FIGURES
row() {
    jq -c -n --arg c "$1" --arg w "$2" --arg d "$3" --argjson f "$4" \
        '{contender: $c, workload: $w, delivery: $d} + $f' >>"$ROWS"
}
# merge figures into the existing row (latency/recovery after throughput)
row_merge() {
    local tmp=$ROWS.tmp
    jq -c --arg c "$1" --arg w "$2" --arg d "$3" --argjson f "$4" \
        'if .contender == $c and .workload == $w and .delivery == $d then . + $f else . end' \
        "$ROWS" >"$tmp" && mv "$tmp" "$ROWS"
}

# ---- streamvisor specs (docs/jobspec.md): spec, spec_q3 ----
# shared with the paired and single-job scripts of bench/lib
. "$here/lib/specs.sh"
# the input topic of a workload (W4: the auctions; its table: TABLE)
input_of() { [ "$1" = W4 ] && echo auctions || echo "$IN"; }
TABLE=persons
# the output record count: W4 also checks each record's name is its seller's
count_out() { # TOPIC W -> {"records":..} (+ "wrong" for W4)
    local chk=()
    [ "$2" = W4 ] && chk=(--join-check)
    "$RAWK" count --bootstrap "$BOOT" --topic "$1" "${chk[@]}"
}
count_fig() { # COUNT-JSON -> {"output_records":..} (+ "output_wrong")
    jq -c '{output_records: .records} + (if has("wrong") then {output_wrong: .wrong} else {} end)' <<<"$1"
}

latency_field() { [ "$1" = W1 ] && echo ts || echo window_end; }

# ---- streamvisor server ----
SV_PID=""
sv_start() { # DATADIR LOG
    "$SV" serve --listen "127.0.0.1:$SV_PORT" --data-dir "$1" \
        --bootstrap-servers "$BOOT" >>"$2" 2>&1 &
    SV_PID=$!
    PIDS+=("$SV_PID")
    local i
    for i in $(seq 200); do
        curl -sf "http://127.0.0.1:$SV_PORT/v1/info" >/dev/null 2>&1 && return 0
        kill -0 "$SV_PID" 2>/dev/null || { tail -20 "$2" >&2; die "streamvisor exited at start"; }
        sleep 0.05
    done
    die "streamvisor did not answer on port $SV_PORT"
}
sv_stop() {
    [ -n "$SV_PID" ] || return 0
    kill -TERM "$SV_PID" 2>/dev/null || true
    local i
    for i in $(seq 100); do kill -0 "$SV_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SV_PID" 2>/dev/null || true
    wait "$SV_PID" 2>/dev/null || true
    SV_PID=""
}
sv_submit() { # SPECFILE -> job id
    local ans
    ans=$(curl -s -XPOST -H 'Content-Type: application/json' \
        "http://127.0.0.1:$SV_PORT/v1/jobs" --data-binary "@$1")
    jq -er .id <<<"$ans" 2>/dev/null || die "submit refused: $ans"
}
sv_job() { curl -s "http://127.0.0.1:$SV_PORT/v1/jobs/$1"; }

percentiles() { # reads numbers on stdin -> {"p50":..,"p99":..,"n":..}
    sort -n | awk '{ a[NR] = $1 } END {
        if (NR == 0) { print "{\"n\":0}"; exit }
        i50 = int((NR - 1) * 0.5) + 1; i99 = int((NR - 1) * 0.99) + 1
        printf "{\"n\":%d,\"p50\":%s,\"p99\":%s}\n", NR, a[i50], a[i99] }'
}

# ---- contender runs: bounded (throughput) ----
run_raw() { # W D
    local w=$1 d=$2 out="out-raw-$1-$2" txn=()
    if [ "$w" = W4 ]; then
        say "raw-librdkafka has no join: no W4 row"
        return 0
    fi
    [ "$d" = exactly_once ] && txn=(--txn)
    "$RAWK" topics --bootstrap "$BOOT" --topic "$out" >/dev/null
    say "raw-librdkafka $w $d"
    local r
    r=$("$RAWK" copy --bootstrap "$BOOT" --in "$IN" --out "$out" \
        --group "raw-$w-$d-$$" "${txn[@]}" 2>>"$LOGS/raw.log") || die "raw copy failed (see $LOGS/raw.log)"
    local n
    n=$("$RAWK" count --bootstrap "$BOOT" --topic "$out" | jq .records)
    row raw-librdkafka "$w" "$d" "$(jq -c --argjson out "$n" '{records, seconds,
        records_per_s: (.records / .seconds | floor),
        cpu_s_per_million: (.cpu_s / .records * 1e6 * 1000 | round / 1000),
        peak_rss_mb, output_records: $out, commits}' <<<"$r")"
}

SV_MAX_RATE_W1_at_least_once=0
run_sv() { # W D [PARALLELISM [rp|"" [MEMORY_MB]]]
    local w=$1 d=$2 par=${3:-1} rp=${4:-} mem=${5:-0} out="out-sv-$1-$2" dir="$RUN/sv-$1-$2" in
    in=$(input_of "$w")
    local name=streamvisor
    if [ "$par" -gt 1 ] && [ "$rp" = rp ]; then
        # the unkeyed input: the window is repartitioned
        name=streamvisor-rp-p$par; out="$out-rp-p$par"; dir="$dir-rp-p$par"
    elif [ "$par" -gt 1 ]; then
        name=streamvisor-p$par; out="$out-p$par"; dir="$dir-p$par"
        case "$(window_key "$w")" in
            key) in=bids-key ;; auction) in=bids-auction ;;
        esac
    fi
    if [ "$mem" -gt 0 ]; then
        name=$name-m$mem; out="$out-m$mem"; dir="$dir-m$mem"
    fi
    rm -rf "$dir"; mkdir -p "$dir"
    "$RAWK" topics --bootstrap "$BOOT" --topic "$out" >/dev/null
    if [ "$w" = W4 ]; then
        spec_q3 "bench-$w-$d-p$par" bounded "$d" "$in" "$TABLE" "$out" "$par" "$mem" >"$dir/spec.json"
    else
        spec "bench-$w-$d-p$par$rp" bounded "$w" "$d" "$in" "$out" "$par" "$rp" "$mem" >"$dir/spec.json"
    fi
    say "streamvisor $w $d parallelism $par memory_mb $mem (input $in)"
    sv_start "$dir/data" "$dir/server.log"
    local c0 t0 id st t1 c1 hwm job hwm0 rss0 est_max=0 est
    hwm0=$(proc_hwm_mb "$SV_PID"); rss0=$(proc_rss_mb "$SV_PID")
    c0=$(proc_cpu "$SV_PID"); t0=$(now_ms)
    id=$(sv_submit "$dir/spec.json")
    while :; do
        read -r st est < <(sv_job "$id" | jq -r '"\(.state) \(.memory.estimate_bytes // 0)"')
        [ "$est" -le "$est_max" ] || est_max=$est
        case "$st" in completed|failed|cancelled) break ;; esac
        kill -0 "$SV_PID" 2>/dev/null || die "streamvisor died (see $dir/server.log)"
        [ $(( $(now_ms) - t0 )) -lt 1800000 ] || die "streamvisor $w $d: not completed after 30 min"
        sleep 0.05
    done
    t1=$(now_ms); c1=$(proc_cpu "$SV_PID"); hwm=$(proc_hwm_mb "$SV_PID")
    job=$(sv_job "$id"); echo "$job" >"$dir/status.json"
    [ "$st" = completed ] || die "streamvisor $w $d ended $st: $(jq -c .error <<<"$job")"
    curl -s "http://127.0.0.1:$SV_PORT/v1/jobs/$id/checkpoints" >"$dir/checkpoints.json"
    # each checkpoint_completed has its steps' times (steps_us)
    curl -s "http://127.0.0.1:$SV_PORT/v1/jobs/$id/observations" >"$dir/observations.json"
    curl -s "http://127.0.0.1:$SV_PORT/metrics" >"$dir/metrics.txt"
    sv_stop
    local ck n
    ck=$(jq -r '.checkpoints[] | select(.status == "committed") | .duration_ms' "$dir/checkpoints.json" | percentiles)
    n=$(count_fig "$(count_out "$out" "$w")")
    local f
    f=$(jq -c -n --argjson j "$job" --argjson ck "$ck" --arg t0 "$t0" --arg t1 "$t1" \
        --arg c0 "$c0" --arg c1 "$c1" --arg hwm "$hwm" --argjson out "$n" '
        (($t1 | tonumber) - ($t0 | tonumber)) as $ms |
        {records: $j.records_in, seconds: ($ms / 1000),
         records_per_s: ($j.records_in / $ms * 1000 | floor),
         cpu_s_per_million: (((($c1 | tonumber) - ($c0 | tonumber)) / $j.records_in * 1e6) * 1000 | round / 1000),
         peak_rss_mb: ($hwm | tonumber), checkpoints: $ck.n} + $out
        + (if $ck.n > 0 then {checkpoint_p50_ms: $ck.p50, checkpoint_p99_ms: $ck.p99} else {} end)')
    row "$name" "$w" "$d" "$(jq -c --argjson p "$par" --argjson m "$mem" --arg h0 "$hwm0" \
        --arg r0 "$rss0" --argjson e "$est_max" '. + {parallelism: $p,
        idle_rss_mb: ($r0 | tonumber), start_hwm_mb: ($h0 | tonumber),
        memory_estimate_max_mb: ($e / 1048576 * 10 | round / 10)}
        + (if $m > 0 then {memory_mb: $m} else {} end)' <<<"$f")"
}

# Kafka Streams (bench/peers/kstreams): 2 stream threads, the same JVM
# options as Flink; bounded by the end offsets read at its start
KSTREAMS_JAVA_OPTS=(-Xmx1g -XX:+UseG1GC)
run_kstreams() { # W D
    local w=$1 d=$2 out="out-kstreams-$1-$2" dir="$RUN/kstreams-$1-$2" in
    in=$(input_of "$w")
    rm -rf "$dir"; mkdir -p "$dir"
    "$RAWK" topics --bootstrap "$BOOT" --topic "$out" >/dev/null
    say "kstreams $w $d"
    java "${KSTREAMS_JAVA_OPTS[@]}" -cp "$KSB/target/kstreams-peer-1.jar:$(cat "$KSB/classpath.txt")" \
        io.streamvisor.bench.KStreamsPeer \
        --bootstrap "$BOOT" --in "$in" --table "$TABLE" --out "$out" --workload "$w" --delivery "$d" \
        --threads 2 --state-dir "$dir/state" --name "kstreams-$w-$d-$$" --report "$dir/report.json" \
        >"$dir/stdout" 2>"$dir/stderr" || { tail -30 "$dir/stderr" >&2; die "kstreams $w $d failed"; }
    local n
    n=$(count_fig "$(count_out "$out" "$w")")
    row kstreams "$w" "$d" "$(jq -c --argjson out "$n" --argjson rec "$RECORDS" '
        {records: $rec, seconds, records_per_s: ($rec / .seconds | floor),
         cpu_s_per_million: (.cpu_s / $rec * 1e6 * 1000 | round / 1000),
         peak_rss_mb, commits, records_read} + $out' "$dir/report.json")"
}

flink_cp() { echo "$FLB/target/flink-peer-1.jar:$(cat "$FLB/classpath.txt")"; }
FLINK_JAVA_OPTS=(-Xmx1g -XX:+UseG1GC)
run_flink() { # W D
    local w=$1 d=$2 out="out-flink-$1-$2" dir="$RUN/flink-$1-$2" in
    in=$(input_of "$w")
    rm -rf "$dir"; mkdir -p "$dir"
    "$RAWK" topics --bootstrap "$BOOT" --topic "$out" >/dev/null
    say "flink $w $d"
    java "${FLINK_JAVA_OPTS[@]}" -cp "$(flink_cp)" io.streamvisor.bench.FlinkPeer \
        --bootstrap "$BOOT" --in "$in" --table "$TABLE" --out "$out" --workload "$w" --delivery "$d" \
        --bounded --parallelism "$NCPU" --rest-port "$FLINK_REST" \
        --ckpt-dir "$dir/ckpt" --name "flink-$w-$d-$$" --report "$dir/report.json" \
        >"$dir/stdout" 2>"$dir/stderr" || { tail -30 "$dir/stderr" >&2; die "flink $w $d failed"; }
    local n
    n=$(count_fig "$(count_out "$out" "$w")")
    row flink "$w" "$d" "$(jq -c --argjson out "$n" --argjson rec "$RECORDS" '
        {records: $rec, seconds, records_per_s: ($rec / .seconds | floor),
         cpu_s_per_million: (.cpu_s / $rec * 1e6 * 1000 | round / 1000),
         peak_rss_mb, checkpoints} + $out
        + (if .checkpoint_p50_ms then {checkpoint_p50_ms, checkpoint_p99_ms} else {} end)' \
        "$dir/report.json")"
}

# ---- stream mode: latency at a fixed rate, then kill -9 and recovery ----
# lat_run CONTENDER W D RATE
lat_run() {
    local c=$1 w=$2 d=$3 rate=$4
    local tag="$c-$w-$d" live="live-$c-$w-$d" out="lat-$c-$w-$d" dir="$RUN/lat-$c-$w-$d"
    rm -rf "$dir"; mkdir -p "$dir"
    "$RAWK" topics --bootstrap "$BOOT" --topic "$live,$out" >/dev/null
    say "latency $tag at $rate rec/s for ${LATENCY_S}s, then kill -9 and restart"
    local pid="" restart
    if [ "$c" = streamvisor ]; then
        spec "lat-$w-$d" stream "$w" "$d" "$live" "$out" >"$dir/spec.json"
        sv_start "$dir/data" "$dir/server.log"
        local id; id=$(sv_submit "$dir/spec.json")
        local i
        for i in $(seq 200); do
            [ "$(sv_job "$id" | jq -r .state)" = running ] && break; sleep 0.05
        done
    else
        java "${FLINK_JAVA_OPTS[@]}" -cp "$(flink_cp)" io.streamvisor.bench.FlinkPeer \
            --bootstrap "$BOOT" --in "$live" --out "$out" --workload "$w" --delivery "$d" \
            --parallelism "$NCPU" --rest-port "$FLINK_REST" --ckpt-dir "$dir/ckpt" \
            --name "flinklat-$w-$d-$$" >"$dir/stdout" 2>"$dir/stderr" &
        pid=$!; PIDS+=("$pid")
        local i
        for i in $(seq 600); do
            grep -q "flink-peer: RUNNING" "$dir/stderr" 2>/dev/null && break
            kill -0 "$pid" 2>/dev/null || { tail -20 "$dir/stderr" >&2; die "flink stream job exited"; }
            sleep 0.1
        done
        sleep 2 # source readers assigned
    fi
    local total=$((LATENCY_S + RECOVERY_S))
    rm -f "$dir/kill"
    "$RAWK" latency --bootstrap "$BOOT" --topic "$out" --field "$(latency_field "$w")" \
        --seconds "$((total + 3))" --warmup 3 --kill-file "$dir/kill" \
        >"$dir/latency.json" 2>"$dir/latency.err" &
    local lpid=$!; PIDS+=("$lpid")
    local i
    for i in $(seq 100); do grep -q ready "$dir/latency.err" 2>/dev/null && break; sleep 0.1; done
    "$RAWK" load --bootstrap "$BOOT" --topic "$live" --live --rate "$rate" \
        --seconds "$total" --count 0 >"$dir/load.json" 2>"$dir/load.err" &
    local gpid=$!; PIDS+=("$gpid")
    sleep "$LATENCY_S"
    # kill -9, then restart at once (streamvisor: the supervisor reloads the
    # job and recovers it from its last checkpoint; Flink: a new MiniCluster
    # from the newest retained checkpoint)
    if [ "$c" = streamvisor ]; then
        # the interval checkpoints of the steady state (~one a second over
        # LATENCY_S), before the kill: the checkpoint p99 of a bounded run
        # is over the 2-6 it retains, its final ones among them
        curl -s "http://127.0.0.1:$SV_PORT/v1/jobs/$id/checkpoints" >"$dir/checkpoints.json" || true
        now_ms >"$dir/kill.tmp"; kill -KILL "$SV_PID"; mv "$dir/kill.tmp" "$dir/kill"
        wait "$SV_PID" 2>/dev/null || true
        sleep "$DOWNTIME_S"
        restart=$(now_ms)
        sv_start "$dir/data" "$dir/server.log"
    else
        now_ms >"$dir/kill.tmp"; kill -KILL "$pid"; mv "$dir/kill.tmp" "$dir/kill"
        wait "$pid" 2>/dev/null || true
        sleep "$DOWNTIME_S"
        local chk
        chk=$(find "$dir/ckpt" -name _metadata -printf '%T@ %h\n' 2>/dev/null | sort -n | tail -1 | cut -d' ' -f2)
        restart=$(now_ms)
        if [ -n "$chk" ]; then
            java "${FLINK_JAVA_OPTS[@]}" -cp "$(flink_cp)" io.streamvisor.bench.FlinkPeer \
                --bootstrap "$BOOT" --in "$live" --out "$out" --workload "$w" --delivery "$d" \
                --parallelism "$NCPU" --rest-port "$FLINK_REST" --ckpt-dir "$dir/ckpt" \
                --restore "$chk" --name "flinklat-$w-$d-$$" >>"$dir/stdout" 2>>"$dir/stderr" &
            pid=$!; PIDS+=("$pid")
        else
            say "flink: no retained checkpoint in $dir/ckpt; not restarted"
        fi
    fi
    wait "$gpid" || die "live load failed ($dir/load.err)"
    wait "$lpid" || die "latency consumer failed ($dir/latency.err)"
    if [ "$c" = streamvisor ]; then sv_stop; else
        [ -n "$pid" ] && { kill -TERM "$pid" 2>/dev/null || true; sleep 1; kill -KILL "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
    fi
    local f ck='{"n":0}'
    local achieved
    achieved=$(jq '.records / .seconds | floor' "$dir/load.json")
    [ -s "$dir/checkpoints.json" ] &&
        ck=$(jq -r '.checkpoints[]? | select(.status == "committed") | .duration_ms' "$dir/checkpoints.json" | percentiles)
    f=$(jq -c --argjson rate "$rate" --argjson ach "$achieved" --argjson ck "$ck" '
        {latency_rate_per_s: $rate, latency_rate_achieved: $ach, latency_records: .measured}
        + (if .latency_p50_ms then {latency_p50_ms, latency_p99_ms} else {} end)
        + (if .recovery_s then {recovery_s} else {} end)
        + (if $ck.n > 0 then {stream_checkpoints: $ck.n, stream_checkpoint_p50_ms: $ck.p50,
                              stream_checkpoint_p99_ms: $ck.p99} else {} end)' "$dir/latency.json")
    row_merge "$c" "$w" "$d" "$f"
    # the live input and its output: ~4 GB a run at the full run's rates
    "$RAWK" delete --bootstrap "$BOOT" --topic "$live,$out" >/dev/null 2>&1 ||
        say "could not delete topics $live and $out"
}

# ---- main ----
mkdir -p "$OUT"
rm -rf "$RUN"; mkdir -p "$RUN" "$LOGS"
: >"$ROWS"
T_START=$(date +%s)
COMMIT_START=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
LOAD_AVG_START=$(cut -d' ' -f1-3 /proc/loadavg)
build
say "starting the broker on $BOOT (state in $KAFKA_STATE_DIR)"
deploy/kafka/kafka.sh reset >/dev/null 2>&1 || true
deploy/kafka/kafka.sh start >"$LOGS/kafka-start.log" 2>&1 || { cat "$LOGS/kafka-start.log" >&2; die "broker start failed"; }
IN=bids
"$RAWK" topics --bootstrap "$BOOT" --topic "$IN" --partitions 8 >/dev/null
# Warm the broker up outside the measurements: the first group commit
# creates __consumer_offsets and the first transaction __transaction_state
# (seconds each on a fresh broker).
"$RAWK" topics --bootstrap "$BOOT" --topic warm,warm-out --partitions 8 >/dev/null
"$RAWK" load --bootstrap "$BOOT" --topic warm --count 2000 >/dev/null
"$RAWK" copy --bootstrap "$BOOT" --in warm --out warm-out --group warm >/dev/null 2>&1
"$RAWK" copy --bootstrap "$BOOT" --in warm --out warm-out --group warm-txn --txn >/dev/null 2>&1
if has "$WORKLOADS" W1 || has "$WORKLOADS" W2 || has "$WORKLOADS" W3; then
    say "loading $RECORDS records into '$IN' (8 partitions)"
    LOAD=$("$RAWK" load --bootstrap "$BOOT" --topic "$IN" --count "$RECORDS")
    say "loaded: $LOAD"
else
    LOAD='{"records":0,"bytes":0,"avg_bytes":0,"seconds":0,"partitions":8}'
fi
echo "$LOAD" >"$RUN/load.json"
LOAD_Q3=null
if has "$WORKLOADS" W4; then
    # W4: the persons table (compacted, keyed by pid) loaded first, then
    # the auctions keyed by seller; both 8 partitions
    "$RAWK" topics --bootstrap "$BOOT" --topic "$TABLE" --partitions 8 --compact >/dev/null
    "$RAWK" topics --bootstrap "$BOOT" --topic auctions --partitions 8 >/dev/null
    say "loading $PERSONS persons into '$TABLE' and $RECORDS auctions into 'auctions' (W4)"
    LOAD_Q3=$("$RAWK" load-q3 --bootstrap "$BOOT" --table "$TABLE" --topic auctions \
        --persons "$PERSONS" --count "$RECORDS")
    echo "$LOAD_Q3" >"$RUN/load-q3.json"
    say "loaded: $LOAD_Q3"
fi
IFS=, read -r -a PARS <<<"$PARALLELISM"
IFS=, read -r -a MEMS <<<"$MEMORY_MB"
if has "$CONTENDERS" streamvisor && [ "$(printf '%s\n' "${PARS[@]}" | sort -n | tail -1)" -gt 1 ] &&
    { has "$WORKLOADS" W2 || has "$WORKLOADS" W3; }; then
    # the same bids, keyed by the windows' keys (Kafka's default
    # partitioner), for the parallel runs of W2 and W3
    for kb in key auction; do
        "$RAWK" topics --bootstrap "$BOOT" --topic "bids-$kb" --partitions 8 >/dev/null
        say "loading $RECORDS records into 'bids-$kb' keyed by $kb"
        "$RAWK" load --bootstrap "$BOOT" --topic "bids-$kb" --count "$RECORDS" --key-by "$kb" >"$RUN/load-$kb.json"
    done
fi

IFS=, read -r -a WL <<<"$WORKLOADS"
for w in "${WL[@]}"; do
    for d in at_least_once exactly_once; do
        has "$CONTENDERS" raw && run_raw "$w" "$d"
        if has "$CONTENDERS" streamvisor; then
            for p in "${PARS[@]}"; do
                for m in "${MEMS[@]}"; do run_sv "$w" "$d" "$p" "" "$m"; done
                if [ "$REPARTITION" = 1 ] && [ "$p" -gt 1 ] && [ -n "$(window_key "$w")" ]; then
                    run_sv "$w" "$d" "$p" rp
                fi
            done
        fi
        has "$CONTENDERS" kstreams && run_kstreams "$w" "$d"
        has "$CONTENDERS" flink && run_flink "$w" "$d"
    done
done

if [ "$LATENCY" = 1 ]; then
    for w in $LAT_WORKLOADS; do
        has "$WORKLOADS" "$w" || continue
        for d in $LAT_DELIVERIES; do
            # 50% of streamvisor's measured maximum for this workload
            rate=$(jq -s --arg w "$w" --arg d "$d" \
                '[.[] | select(.contender == "streamvisor" and .workload == $w and .delivery == $d)][0].records_per_s // 0 | . / 2 | floor' "$ROWS")
            [ "$rate" -gt 0 ] || rate=50000
            [ -n "$LATENCY_RATE" ] && rate=$LATENCY_RATE
            has "$CONTENDERS" streamvisor && lat_run streamvisor "$w" "$d" "$rate"
            has "$CONTENDERS" flink && lat_run flink "$w" "$d" "$rate"
        done
    done
fi

T_END=$(date +%s)
META=$(jq -n --arg date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --arg commit "$COMMIT_START" \
    --arg cpu "$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)" \
    --argjson cores "$NCPU" --arg mem "$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)" \
    --argjson records "$RECORDS" --argjson quick "$QUICK" --argjson load "$LOAD" --argjson q3 "$LOAD_Q3" \
    --arg flink "$(grep -o '<flink.version>[^<]*' bench/peers/flink/pom.xml | cut -d'>' -f2)" \
    --arg flink_kafka "$(grep -o '<flink.kafka.version>[^<]*' bench/peers/flink/pom.xml | cut -d'>' -f2)" \
    --arg kstreams "$(grep -o '<kafka.version>[^<]*' bench/peers/kstreams/pom.xml | cut -d'>' -f2)" \
    --arg kafka "$(grep -o '<kafka.version>[^<]*' deploy/kafka/pom.xml | cut -d'>' -f2)" \
    --arg rdkafka "$(pkg-config --modversion rdkafka 2>/dev/null || echo unknown)" \
    --arg java "$(java -version 2>&1 | head -1)" --arg gcc "$(gcc -dumpfullversion 2>/dev/null)" \
    --arg la0 "$LOAD_AVG_START" --arg la1 "$(cut -d' ' -f1-3 /proc/loadavg)" \
    --argjson seconds "$((T_END - T_START))" --arg cmd "bench/run.sh $ORIG_ARGS" \
    '{date: $date, commit: $commit, cpu: $cpu, cores: $cores, memory: $mem, records: $records,
      quick: ($quick == 1), input: $load, input_w4: $q3, flink: $flink, flink_connector_kafka: $flink_kafka,
      kafka_broker: $kafka, kafka_streams: $kstreams, librdkafka: $rdkafka, java: $java, gcc: $gcc, wall_seconds: $seconds,
      command: $cmd, loadavg_start: $la0, loadavg_end: $la1}')
jq -s '.' "$ROWS" >"$JSON_OUT"
echo "$META" >"$RUN/meta.json"
python3 bench/lib/report.py "$JSON_OUT" "$RUN/meta.json" | tee "$RUN/table.md"
say "rows: $JSON_OUT; table: $RUN/table.md; logs: $RUN"
python3 bench/lib/report.py --check "$JSON_OUT" || die "record counts do not match (see above)"
