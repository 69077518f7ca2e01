#!/usr/bin/env bash
# The Substrait differential test (issue 11): streamvisor runs Substrait
# plans written by DataFusion, Isthmus and in IncQL's shape, on the real
# broker, and its answers equal DataFusion's for the same SQL.
#
# tests/substrait/diff.py does the work (see its docstring): >= 10,000 seeded
# rows into a topic and into DataFusion, 25 SQL queries as bounded jobs
# (filters, projections with every mapped function, casts, CASE/COALESCE,
# IN, BETWEEN, LIKE, date_bin/date_trunc windows with every aggregate,
# DISTINCT, global and GROUP BY aggregates, ORDER BY + LIMIT/OFFSET,
# row_number() = 1), the windowed and stateless ones again as stream jobs
# (DISTINCT and row_number() = 1 too, with plan.dedup_within_ms)
# whose output is read back from Kafka after a sentinel record moves the
# watermark past the end, Isthmus plans of the filter/project/aggregate
# queries, and three IncQL-shaped plans. Multiset equality, floats to 1e-9
# relative, order where the plan declares one. First, over HTTP dry runs,
# every refusal (unknown function, stream GROUP BY, stream DISTINCT without
# a bound, a read root without a binding, an unused binding, decimal, a
# join of streams, a right join, a non-equi join) and hostile plans (20,000 deep, random, truncated, 761 KB: the
# largest a 1 MiB body holds as base64) answer 400/422 with the field or
# the coverage record, and the supervisor stays up.
#
# Needs the test venv (deploy/install-deps.sh: build/venv with datafusion
# and substrait-protobuf), Maven for Isthmus' classpath, $KAFKA_BOOTSTRAP
# (the ctest fixture's broker) and $STREAMVISOR_BIN.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/../lib/harness.sh"
th_init substrait_diff

PY=${SV_BUILD_DIR:+$SV_BUILD_DIR/../venv/bin/python}
[ -x "${PY:-}" ] || PY=$repo/build/venv/bin/python
[ -x "$PY" ] || fail "test venv python not found (run deploy/install-deps.sh)"
"$PY" -c 'import datafusion, substrait' 2>/dev/null ||
    fail "datafusion/substrait-protobuf not in $PY (run deploy/install-deps.sh)"
for tool in kcat curl java mvn; do
    command -v "$tool" >/dev/null || fail "$tool not found (run deploy/install-deps.sh)"
done
[ -x "$BIN" ] || fail "streamvisor binary '$BIN' not found (STREAMVISOR_BIN)"

# Isthmus' classpath, resolved once per pom (install-deps.sh fetched it).
pom=$repo/tests/substrait/isthmus/pom.xml
cpfile=${SV_BUILD_DIR:-$repo/build}/isthmus-$(sha256sum "$pom" | cut -c1-12).cp
if [ ! -s "$cpfile" ]; then
    mvn -q -B -f "$pom" dependency:build-classpath -Dmdep.outputFile="$cpfile" \
        >"$work/mvn.log" 2>&1 || { cat "$work/mvn.log" >&2; fail "cannot resolve Isthmus"; }
fi
ok "Isthmus classpath $(tr ':' '\n' <"$cpfile" | wc -l) jars"
sep=$(printf '\x1f')
isthmus="java${sep}-cp${sep}$(cat "$cpfile")${sep}$repo/tests/substrait/isthmus/IsthmusPlan.java"

port=$(th_free_port)
url=http://127.0.0.1:$port
"$BIN" serve --listen "127.0.0.1:$port" --data-dir "$work/data" \
    --bootstrap-servers "$BOOTSTRAP" >"$work/log" 2>&1 &
pid=$!
th_wait_up "$url" || fail "supervisor did not start"
ok "supervisor up at $url"

"$PY" "$repo/tests/substrait/diff.py" --server "$url" --bootstrap "$BOOTSTRAP" \
    --kafka-sh "$repo/deploy/kafka/kafka.sh" --work "$work" \
    --isthmus "$isthmus" >"$work/diff.out" 2>&1 || {
        cat "$work/diff.out" >&2
        fail "streamvisor and DataFusion differ"
    }
cat "$work/diff.out"
n=$(grep -c "rows equal DataFusion's" "$work/diff.out")
[ "$n" -ge 43 ] || fail "only $n comparisons ran"
ok "$n comparisons equal DataFusion's"
curl -sf "$url/healthz" >/dev/null || fail "supervisor is down after the run"
ok "supervisor still up"

# The CLI submits a plan file with its bindings; the job (plan, bindings,
# identity) survives a supervisor restart with the same plan id.
topic=$(sed -n 's/^ok: rows loaded into topics \([^,]*\),.*/\1/p' "$work/diff.out")
[ -n "$topic" ] || fail "no topic name in the diff output"
cat >"$work/envelope.json" <<JSON
{"name": "cli-plan", "mode": "stream",
 "plan": {"bindings": {"orders": {"topic": "$topic"}}},
 "event_time": {"field": "ts"}, "sink": {"kind": "memory"}}
JSON
"$BIN" submit --server "$url" --plan "$repo/tests/substrait/plans/df_filter_project.json" \
    --dry-run "$work/envelope.json" >"$work/dry.json" || fail "CLI dry run failed"
jq -e '.spec.pipeline[0].filter == "((`status` == '"'completed'"') AND (`amount` > 0.0))"' \
    "$work/dry.json" >/dev/null || fail "CLI dry run: $(cat "$work/dry.json")"
ok "streamvisor submit --plan --dry-run shows the translated filter"
id=$("$BIN" submit --server "$url" --plan "$repo/tests/substrait/plans/df_filter_project.json" \
    "$work/envelope.json") || fail "CLI submit --plan failed"
before=$(curl -sf "$url/v1/jobs/$id" | jq -c '{plan_id, s: .substrait.sha256, p: .substrait.producer}')
kill "$pid"; wait "$pid" 2>/dev/null || true
"$BIN" serve --listen "127.0.0.1:$port" --data-dir "$work/data" \
    --bootstrap-servers "$BOOTSTRAP" >>"$work/log" 2>&1 &
pid=$!
th_wait_up "$url" || fail "supervisor did not restart"
after=$(curl -sf "$url/v1/jobs/$id" | jq -c '{plan_id, s: .substrait.sha256, p: .substrait.producer}')
[ "$before" = "$after" ] && [ "$(jq -r .p <<<"$after")" = datafusion ] ||
    fail "plan job after restart: $before vs $after"
ok "the CLI-submitted plan job keeps plan id and Substrait identity across a restart"
summary=1
echo "$passed passed, $failed failed"
