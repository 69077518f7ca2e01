#!/usr/bin/env bash
# schemathesis.sh — schemathesis (pinned in deploy/requirements-test.txt)
# against GET /v1/openapi.json of a live supervisor with authentication on:
# examples, coverage, fuzzing and stateful phases (the stateful one follows
# the document's links from POST /v1/jobs to the job routes), at most
# $SV_SCHEMATHESIS_EXAMPLES examples per operation (default 15; ~15 s).
# Checks: no 5xx, every status, content type, header and body as documented.
# A second, short run as the viewer must see only documented 403s.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
sec_init schemathesis

st=$(dirname "$PY")/schemathesis
[ -x "$st" ] || fail "schemathesis not installed in $(dirname "$PY") (deploy/install-deps.sh)"
port=$(th_free_port)
url=http://127.0.0.1:$port
mkdir -p "$work/roots"
cat > "$work/sv.yaml" <<EOF
listen: 127.0.0.1:$port
data_dir: $work/data
auth: {tokens_file: tokens.yaml}
file_sink_roots: [$work/roots]
EOF
sec_start "$work/sv.yaml" "$url"

checks=not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance
examples=${SV_SCHEMATHESIS_EXAMPLES:-15}
export SCHEMATHESIS_HOOKS=
mkdir -p "$work/cwd"
cd "$work/cwd" # its own state (.hypothesis, .schemathesis) goes here
if ! "$st" run "$url/v1/openapi.json" -H "Authorization: Bearer $TOK_admin" \
        --checks "$checks" --max-examples "$examples" --seed 1 \
        --request-timeout 30 --no-color > "$work/st.log" 2>&1; then
    tail -n 60 "$work/st.log" >&2
    fail "schemathesis as admin"
fi
grep -E "generated, [0-9]+ passed" "$work/st.log" | tail -n 1 > "$work/cases"
ok "schemathesis as admin: $(cat "$work/cases") ($examples examples per operation)"
kill -0 "$pid" || fail "the supervisor died"

# As the viewer, every operation that acts must answer a documented 403.
if ! "$st" run "$url/v1/openapi.json" -H "Authorization: Bearer $TOK_viewer" \
        --checks "$checks" --max-examples 3 --seed 2 --phases fuzzing \
        --no-color > "$work/st-viewer.log" 2>&1; then
    tail -n 60 "$work/st-viewer.log" >&2
    fail "schemathesis as viewer (403s must be documented)"
fi
ok "schemathesis as viewer: $(grep -E "generated, [0-9]+ passed" "$work/st-viewer.log" | tail -n 1)"

# no file outside the root was created by whatever it submitted
outside=$(find "$work" -newer "$work/sv.yaml" -not -path "$work/roots*" \
    -not -path "$work/data*" -not -name "*.log" -not -name log -not -name cases \
    -not -path "$work/cwd*" -not -path "$work" -print)
[ -z "$outside" ] || fail "files created outside the root: $outside"
ok "nothing written outside the file sink root"

summary=1
echo "$passed passed, $failed failed"
