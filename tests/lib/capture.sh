#!/usr/bin/env bash
# tests/lib/capture.sh — run one test, keep its output, and when it fails
# leave a short account for tests/lib/report.sh, which ctest runs last
# (CMakeLists.txt, fixture "report"): a CI log that shows only the head of
# each failing test's output and the tail of the run then still names what
# failed and why.
#
#   capture.sh NAME COMMAND [ARG...]
#
# The whole output goes to $SV_BUILD_DIR/test-output/NAME.log and, as
# before, to stdout; the exit status is the command's.
set -u
name=$1
shift
dir=${SV_BUILD_DIR:-.}
mkdir -p "$dir/test-output" "$dir/test-failures"
log=$dir/test-output/$name.log
"$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
    {
        echo "---- $name: exit status $rc; lines that say what failed:"
        grep -n -E 'FAIL|[Ee]rror|[Ff]ailed|not exact|did not|expected|Assert|assert|timed? ?out|missing=[1-9]|duplicates=[1-9]' "$log" |
            grep -v -E 'missing=0 wrong=0 unexpected=0|expected=[0-9]+ got=[0-9]+ duplicates=0 missing=0' |
            head -20
        echo "---- $name: its last lines:"
        tail -8 "$log"
    } >"$dir/test-failures/$name.txt"
fi
exit "$rc"
