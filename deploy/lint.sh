#!/usr/bin/env bash
# Style checks run by `make test` (STYLE.md "Build and checks"):
#   clang-format  every tracked C/C++ file matches .clang-format
#   cppcheck      our code, no warnings (generated protobuf-c code excluded)
# Exit 1 naming the files or findings; `make format` fixes the first kind.
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t files < <(git ls-files '*.c' '*.h' '*.cc')
bad=()
for f in "${files[@]}"; do
    [ -f "$f" ] || continue
    if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
        bad+=("$f")
    fi
done
if [ "${#bad[@]}" -gt 0 ]; then
    echo "lint: not clang-formatted (run 'make format'): ${bad[*]}" >&2
    exit 1
fi
echo "lint: clang-format clean (${#files[@]} files)"

mapfile -t csrc < <(git ls-files '*.c' | grep -v '^bench/json_candidates/')
out=$(cppcheck --quiet --error-exitcode=1 --std=c11 --language=c \
        --enable=warning,portability,performance \
        --inline-suppr --suppressions-list=deploy/cppcheck.supp \
        -I . -D__GNUC__ -DSV_VERSION_STRING='"0"' \
        '-Djson_array_foreach(a,i,v)=for(i=0;(v=json_array_get(a,i));i++)' \
        '-Djson_object_foreach(o,k,v)=for(k=0;(v=json_object_get(o,k));)' \
        "${csrc[@]}" 2>&1) || { echo "$out" >&2; echo "lint: cppcheck found the above" >&2; exit 1; }
echo "lint: cppcheck clean (${#csrc[@]} files)"
