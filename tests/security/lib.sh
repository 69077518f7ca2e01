# tests/security/lib.sh — what the security tests share (sourced): the
# harness (tests/lib/harness.sh), a tokens file with one principal per role,
# and starting a supervisor from a config file.
#
#   . "$(dirname "$0")/lib.sh"; sec_init NAME
#
# sets everything th_init sets, plus $PY (the test venv's python, for the
# scripts beside this file), $tokens (a tokens file, mode 600: principals
# alice=viewer, bob=operator, carol=admin), $TOK_viewer, $TOK_operator,
# $TOK_admin (their tokens), and sec_start CONFIG [URL] (starts
# `streamvisor serve --config CONFIG`, log in $work/log, waits for /healthz).
. "$(dirname "${BASH_SOURCE[0]}")/../lib/harness.sh"

sec_init() {
    th_init "$1"
    PY=${SV_VENV_PY:-${SV_BUILD_DIR:+$SV_BUILD_DIR/../venv/bin/python}}
    [ -x "${PY:-}" ] || PY=$repo/build/venv/bin/python
    here=$repo/tests/security
    TOK_viewer=$(head -c 24 /dev/urandom | base64 | tr '+/' '-_')
    TOK_operator=$(head -c 24 /dev/urandom | base64 | tr '+/' '-_')
    TOK_admin=$(head -c 24 /dev/urandom | base64 | tr '+/' '-_')
    tokens=$work/tokens.yaml
    h() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }
    umask 077
    cat > "$tokens" <<EOT
# principal: {role, sha256 of its token}
alice: {role: viewer, sha256: $(h "$TOK_viewer")}
bob: {role: operator, sha256: $(h "$TOK_operator")}
carol: {role: admin, sha256: $(h "$TOK_admin")}
EOT
    umask 022
    export TOK_viewer TOK_operator TOK_admin
}

# sec_start CONFIG URL [extra serve args...]: start the supervisor, wait
# up to 10 s until URL/healthz answers (curl options in $CURL_OPTS).
sec_start() {
    local conf=$1 url=$2
    shift 2
    "$BIN" serve --config "$conf" "$@" >"$work/log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do
        # shellcheck disable=SC2086
        curl -s -o /dev/null ${CURL_OPTS:-} "$url/healthz" && return 0
        kill -0 "$pid" 2>/dev/null || fail "supervisor exited at start"
        sleep 0.1
    done
    fail "supervisor did not answer $url/healthz within 10 s"
}

sec_stop() {
    if [ -n "$pid" ]; then
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        pid=
    fi
}
