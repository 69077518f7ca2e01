#!/usr/bin/env bash
# tests/fuzz/run.sh — run the libFuzzer targets (make fuzz).
#
# Usage: tests/fuzz/run.sh [TARGET...]     (default: every fuzz_* target)
#   FUZZ_SECONDS  how long each target runs (default 60)
#   FUZZ_JOBS     how many targets run at once (default 2)
#   FUZZ_BUILD    the fuzz preset's build dir (default build/fuzz)
#
# Each target starts from its committed seeds (tests/fuzz/corpus/<name>/)
# plus what earlier runs found (build/fuzz/corpus/<name>/, never committed
# by this script), writes any crash, leak or timeout input to
# build/fuzz/artifacts/ and its log to build/fuzz/logs/<name>.log. The
# summary line per target gives seconds run, executions, coverage and
# findings; the script exits non-zero when any target found something.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${FUZZ_BUILD:-$root/build/fuzz}
secs=${FUZZ_SECONDS:-60}
jobs=${FUZZ_JOBS:-2}

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    for f in "$here"/fuzz_*.c; do
        n=$(basename "$f" .c)
        targets+=("${n#fuzz_}")
    done
fi

mkdir -p "$build/logs" "$build/artifacts"
# third-party leaks we cannot fix (each with its reason in the file)
export LSAN_OPTIONS=suppressions=$here/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}

run_one() {
    local t=$1 bin=$build/fuzz_$1 work=$build/corpus/$1
    mkdir -p "$work"
    local start=$SECONDS extra=()
    # http: jobs the inputs start keep allocating on their own threads
    # while libFuzzer's per-input leak check runs, which reports memory a
    # worker still holds; leaks on that path are checked by the replay
    # under ASan (LeakSanitizer at exit) instead.
    [ "$t" = http ] && extra=(-detect_leaks=0)
    "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 "${extra[@]}" \
        -print_final_stats=1 -artifact_prefix="$build/artifacts/$t-" \
        "$work" "$here/corpus/$t" >"$build/logs/$t.log" 2>&1
    local rc=$? took=$((SECONDS - start))
    local execs cov
    execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$build/logs/$t.log")
    cov=$(grep -Eo 'cov: [0-9]+' "$build/logs/$t.log" | tail -1 | cut -d' ' -f2)
    local found
    found=$(ls "$build/artifacts" 2>/dev/null | grep -c "^$t-" || true)
    printf 'fuzz %-12s %5ds  %10s execs  cov %6s  findings %s  rc %d\n' \
        "$t" "$took" "${execs:-?}" "${cov:-?}" "$found" "$rc"
    [ "$rc" -eq 0 ] && [ "$found" -eq 0 ]
}

fail=0
pids=()
for t in "${targets[@]}"; do
    [ -x "$build/fuzz_$t" ] || { echo "fuzz: $build/fuzz_$t not built" >&2; fail=1; continue; }
    run_one "$t" &
    pids+=($!)
    if [ ${#pids[@]} -ge "$jobs" ]; then
        wait "${pids[0]}" || fail=1
        pids=("${pids[@]:1}")
    fi
done
for p in "${pids[@]}"; do wait "$p" || fail=1; done
exit $fail
