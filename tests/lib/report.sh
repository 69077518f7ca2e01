#!/usr/bin/env bash
# tests/lib/report.sh — the failure report of a ctest run (the fixture
# "report" of CMakeLists.txt): `report.sh reset` at the start empties
# $SV_BUILD_DIR/test-failures; `report.sh` at the end prints what
# tests/lib/capture.sh left there for each failed test and exits 1 when
# anything failed (so ctest shows it, next to its summary), 0 otherwise.
set -u
dir=${SV_BUILD_DIR:-.}/test-failures
if [ "${1:-}" = reset ]; then
    rm -rf "$dir"
    mkdir -p "$dir"
    exit 0
fi
shopt -s nullglob
files=("$dir"/*.txt)
if [ ${#files[@]} -eq 0 ]; then
    echo "report: no captured test failed"
    exit 0
fi
echo "report: ${#files[@]} captured test(s) failed (full output: ${SV_BUILD_DIR:-.}/test-output/):"
for f in "${files[@]}"; do
    cut -c1-300 "$f"
done
exit 1
