#!/usr/bin/env bash
# auth_roles.sh — authentication and roles (docs/security.md): every route
# of the OpenAPI document with no token, a wrong token, a wrong scheme and
# each role gives 401/403/2xx exactly as the role table says
# (walk_routes.py), the principal is in the observations of every action,
# the CLI sends the token (--token-file, $STREAMVISOR_TOKEN), SIGHUP reloads
# the tokens, and a non-loopback listen address without TLS and auth is
# refused at start.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
sec_init auth_roles

port=$(th_free_port)
url=http://127.0.0.1:$port
cat > "$work/sv.yaml" <<EOF
listen: 127.0.0.1:$port
data_dir: $work/data
auth: {tokens_file: tokens.yaml}
EOF
sec_start "$work/sv.yaml" "$url"

"$PY" "$here/walk_routes.py" "$url" > "$work/walk.log" 2>&1 ||
    { tail -n 30 "$work/walk.log" >&2; fail "route walk"; }
ok "$(tail -n 1 "$work/walk.log")"

# No token in any log line; the audit line names the principal.
for t in "$TOK_viewer" "$TOK_operator" "$TOK_admin"; do
    if grep -qF "$t" "$work/log"; then fail "a token in the supervisor log"; fi
done
grep -q "\[audit\] POST /v1/jobs by 'carol'" "$work/log" ||
    fail "no audit line for carol's submit"
ok "audit lines name the principal; no token in the log"

# The CLI: refused without a token (exit 3: HTTP 4xx), works with
# --token-file and with $STREAMVISOR_TOKEN.
set +e
"$BIN" jobs --server "$url" > "$work/cli.out" 2>&1
rc=$?
set -e
[ $rc -eq 3 ] && grep -q "authentication required" "$work/cli.out" ||
    fail "cli without token: rc $rc $(cat "$work/cli.out")"
printf '%s\n' "$TOK_viewer" > "$work/viewer.token"
chmod 600 "$work/viewer.token"
"$BIN" jobs --server "$url" --token-file "$work/viewer.token" > "$work/cli.out" 2>&1 ||
    fail "cli --token-file: $(cat "$work/cli.out")"
grep -q "walk-" "$work/cli.out" || fail "cli --token-file listed no job"
STREAMVISOR_TOKEN=$TOK_viewer "$BIN" jobs --server "$url" > "$work/cli.out" 2>&1 ||
    fail "cli \$STREAMVISOR_TOKEN: $(cat "$work/cli.out")"
set +e
STREAMVISOR_TOKEN=$TOK_viewer "$BIN" cancel --server "$url" nosuchjob > "$work/cli.out" 2>&1
rc=$?
set -e
[ $rc -eq 3 ] && grep -q "needs role operator" "$work/cli.out" ||
    fail "cli cancel as viewer: rc $rc $(cat "$work/cli.out")"
ok "CLI: 401 without a token, --token-file and \$STREAMVISOR_TOKEN sent, 403 for the viewer's cancel"

# SIGHUP reloads the tokens file: a new operator token works after it.
newtok=$(head -c 24 /dev/urandom | base64 | tr '+/' '-_')
printf 'dave: {role: operator, sha256: %s}\n' \
    "$(printf '%s' "$newtok" | sha256sum | cut -d' ' -f1)" >> "$tokens"
st=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $newtok" "$url/v1/jobs")
[ "$st" = 401 ] || fail "new token before SIGHUP: $st"
kill -HUP "$pid"
for _ in $(seq 50); do
    st=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $newtok" "$url/v1/jobs")
    [ "$st" = 200 ] && break
    sleep 0.1
done
[ "$st" = 200 ] || fail "new token after SIGHUP: $st"
ok "SIGHUP reloads the tokens file"
sec_stop

# A tokens file others can read is refused.
chmod 644 "$tokens"
set +e
"$BIN" serve --config "$work/sv.yaml" > "$work/out" 2>&1
rc=$?
set -e
[ $rc -ne 0 ] && grep -q "chmod 600" "$work/out" ||
    fail "world-readable tokens file: rc $rc $(cat "$work/out")"
chmod 600 "$tokens"
ok "a tokens file readable by others is refused"

# Secure defaults: a non-loopback address without TLS and auth is refused.
set +e
"$BIN" serve --listen 0.0.0.0:0 --data-dir "$work/d2" > "$work/out" 2>&1
rc=$?
set -e
[ $rc -ne 0 ] && grep -q "set tls.cert_file and tls.key_file and auth.tokens_file" "$work/out" ||
    fail "0.0.0.0 without TLS and auth: rc $rc $(cat "$work/out")"
set +e
"$BIN" serve --config "$work/sv.yaml" --listen 0.0.0.0:0 > "$work/out" 2>&1
rc=$?
set -e
[ $rc -ne 0 ] && grep -q "without TLS: set tls.cert_file and tls.key_file" "$work/out" ||
    fail "0.0.0.0 with auth but no TLS: rc $rc $(cat "$work/out")"
ok "non-loopback listen refused without TLS and auth, saying what to set"

summary=1
echo "$passed passed, $failed failed"
