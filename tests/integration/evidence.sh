#!/usr/bin/env bash
# evidence.sh — coverage records and execution observations in IncQL's
# shape (issue 20, docs/incql.md): runs evidence_check.py with the pinned
# test venv (deploy/requirements-test.txt, made by deploy/install-deps.sh),
# which starts its own supervisor (no broker needed) and validates every
# record against docs/schemas/. Prints "N passed, M failed".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
py=${SV_BUILD_DIR:+$SV_BUILD_DIR/../venv/bin/python}
[ -n "$py" ] && [ -x "$py" ] || py=$repo/build/venv/bin/python
if [ ! -x "$py" ]; then
    echo "evidence: FAIL: no test venv at $py (run deploy/install-deps.sh)" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
exec "$py" "$here/evidence_check.py"
