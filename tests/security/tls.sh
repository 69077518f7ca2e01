#!/usr/bin/env bash
# tls.sh — TLS and mTLS through libmicrohttpd's HTTPS (GnuTLS), with
# certificates made here by openssl: two CAs, a server certificate for
# 127.0.0.1 from CA 1, a client certificate from each CA.
#   mTLS (tls.client_ca_file = CA 1): curl with the right CA and a CA 1
#   client certificate gets 200; no client certificate, a CA 2 client
#   certificate, an untrusted server CA and plain HTTP to the TLS port are
#   all refused with no HTTP answer — and the request counter of /metrics
#   proves no handler ran for them. SIGHUP swaps in a new server certificate
#   without a restart. TLS without a client CA serves a client without one.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
sec_init tls

pki=$work/pki
mkdir -p "$pki"
cd "$pki"
mkca() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout "$1.key" -out "$1.pem" -days 2 -subj "/CN=$1" \
        -addext basicConstraints=critical,CA:TRUE \
        -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
}
mkcert() { # mkcert NAME CA EXT
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout "$1.key" -out "$1.csr" -subj "/CN=$1" 2>/dev/null
    printf '%s\n' "$3" > "$1.ext"
    openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" \
        -CAcreateserial -days 2 -extfile "$1.ext" -out "$1.pem" 2>/dev/null
}
mkca ca1
mkca ca2
srv_ext='subjectAltName=IP:127.0.0.1
extendedKeyUsage=serverAuth'
cli_ext='extendedKeyUsage=clientAuth'
mkcert server ca1 "$srv_ext"
mkcert client1 ca1 "$cli_ext"
mkcert client2 ca2 "$cli_ext"
chmod 600 ./*.key
cd "$work"
ok "made two CAs, a server certificate and a client certificate per CA"

port=$(th_free_port)
url=https://127.0.0.1:$port
cat > "$work/sv.yaml" <<EOF
listen: 127.0.0.1:$port
data_dir: $work/data
auth: {tokens_file: tokens.yaml}
tls: {cert_file: pki/server.pem, key_file: pki/server.key, client_ca_file: pki/ca1.pem}
EOF
good=(--cacert "$pki/ca1.pem" --cert "$pki/client1.pem" --key "$pki/client1.key")
CURL_OPTS="${good[*]}" sec_start "$work/sv.yaml" "$url"

auth=(-H "Authorization: Bearer $TOK_viewer")
st=$(curl -s -o "$work/resp" -w '%{http_code}' "${good[@]}" "${auth[@]}" "$url/v1/jobs")
[ "$st" = 200 ] || fail "right CA and client certificate: $st $(cat "$work/resp")"
st=$(curl -s -o /dev/null -w '%{http_code}' "${good[@]}" "$url/v1/jobs")
[ "$st" = 401 ] || fail "client certificate without token: $st"
ok "right CA + CA 1 client certificate: 200 (and still 401 without a token)"

# the CLI, same listener: right CA and client certificate work (options and
# their environment variables); each wrong one is exit 2 naming the cause
cli() { STREAMVISOR_TOKEN=$TOK_viewer "$BIN" jobs --server "$url" "$@"; }
cli --cacert "$pki/ca1.pem" --cert "$pki/client1.pem" --key "$pki/client1.key" \
    > "$work/cli.out" 2>&1 || fail "CLI over mTLS: $(cat "$work/cli.out")"
grep -q '^ID' "$work/cli.out" || fail "CLI over mTLS printed: $(cat "$work/cli.out")"
STREAMVISOR_CACERT=$pki/ca1.pem STREAMVISOR_CERT=$pki/client1.pem \
    STREAMVISOR_KEY=$pki/client1.key cli > "$work/cli.out" 2>&1 ||
    fail "CLI over mTLS from the environment: $(cat "$work/cli.out")"
cli_refused() { # cli_refused WHAT PATTERN cli-args...
    local what=$1 pat=$2 rc=0
    shift 2
    cli "$@" > "$work/cli.out" 2>&1 || rc=$?
    [ "$rc" = 2 ] || fail "CLI, $what: exit $rc: $(cat "$work/cli.out")"
    grep -q "$pat" "$work/cli.out" || fail "CLI, $what: $(cat "$work/cli.out")"
}
cli_refused "untrusted server CA" "not trusted for '127.0.0.1'" \
    --cacert "$pki/ca2.pem" --cert "$pki/client1.pem" --key "$pki/client1.key"
cli_refused "no client certificate" "client certificate" --cacert "$pki/ca1.pem"
cli_refused "another CA's client certificate" "client certificate" --cacert "$pki/ca1.pem" \
    --cert "$pki/client2.pem" --key "$pki/client2.key"
rc=0
cli --cacert "$pki/ca1.pem" --cert "$pki/client1.pem" > "$work/cli.out" 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q -- "--key" "$work/cli.out" ||
    fail "CLI, certificate without key: exit $rc: $(cat "$work/cli.out")"
rc=0
cli --cacert "$work/nonexistent.pem" > "$work/cli.out" 2>&1 || rc=$?
grep -q "nonexistent.pem" "$work/cli.out" ||
    fail "CLI, missing CA file: exit $rc: $(cat "$work/cli.out")"
ok "CLI over mTLS: 'jobs' works (options and environment); untrusted server, no or foreign client certificate refused with exit 2 and the reason; a certificate without key is a usage error; a missing CA file is named"

# the number of requests that reached the handlers
handled() {
    curl -s "${good[@]}" "${auth[@]}" "$url/metrics" |
        awk '/^streamvisor_http_requests_total/ {n += $NF} END {print n + 0}'
}
before=$(handled)
refused() { # refused WHAT curl-args...: curl must get no HTTP answer
    local what=$1
    shift
    local st
    st=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$@" "${auth[@]}" "$url/v1/jobs" || true)
    [ "$st" = 000 ] || fail "$what: got HTTP $st"
}
refused "no client certificate" --cacert "$pki/ca1.pem"
refused "client certificate of another CA" --cacert "$pki/ca1.pem" \
    --cert "$pki/client2.pem" --key "$pki/client2.key"
refused "untrusted server CA" --cacert "$pki/ca2.pem" \
    --cert "$pki/client1.pem" --key "$pki/client1.key"
st=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "${auth[@]}" \
    "http://127.0.0.1:$port/v1/jobs" || true)
[ "$st" = 000 ] || fail "plain HTTP to the TLS port: HTTP $st"
after=$(handled)
# exactly one request in between: the first /metrics itself
[ "$after" -eq $((before + 1)) ] ||
    fail "handlers ran for refused connections: $before -> $after"
ok "no client cert, another CA's cert, untrusted server CA, plain HTTP: refused, no handler ran ($before -> $after)"

# openssl s_client agrees the handshake itself fails without a client
# certificate (TLS 1.3: the alert comes after the server's Finished)
if echo | openssl s_client -connect "127.0.0.1:$port" -CAfile "$pki/ca1.pem" \
        -quiet -verify_return_error > "$work/sc.out" 2>&1 && \
        grep -q HTTP "$work/sc.out"; then
    fail "s_client without a certificate got an answer"
fi
ok "s_client without a client certificate gets no HTTP answer"

# SIGHUP: a new server certificate (new serial) is served after it.
serial() {
    echo | openssl s_client -connect "127.0.0.1:$port" -CAfile "$pki/ca1.pem" \
        -cert "$pki/client1.pem" -key "$pki/client1.key" 2>/dev/null |
        openssl x509 -noout -serial
}
old=$(serial)
(cd "$pki" && mkcert server ca1 "$srv_ext" && chmod 600 server.key)
kill -HUP "$pid"
new=$old
for _ in $(seq 50); do
    new=$(serial)
    [ "$new" != "$old" ] && break
    sleep 0.1
done
[ "$new" != "$old" ] || fail "SIGHUP did not swap the certificate ($old)"
st=$(curl -s -o /dev/null -w '%{http_code}' "${good[@]}" "${auth[@]}" "$url/v1/jobs")
[ "$st" = 200 ] || fail "after SIGHUP: $st"
ok "SIGHUP: new certificate served ($old -> $new) without a restart"
sec_stop

# TLS without a client CA: no client certificate needed, the token is.
sed -i 's/, client_ca_file: pki\/ca1.pem//' "$work/sv.yaml"
CURL_OPTS="--cacert $pki/ca1.pem" sec_start "$work/sv.yaml" "$url"
st=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$pki/ca1.pem" "${auth[@]}" "$url/v1/jobs")
[ "$st" = 200 ] || fail "TLS without client CA: $st"
hsts=$(curl -s -D - -o /dev/null --cacert "$pki/ca1.pem" "${auth[@]}" "$url/v1/jobs" | grep -ci strict-transport || true)
[ "$hsts" -ge 1 ] || fail "no Strict-Transport-Security header"
ok "TLS without a client CA: 200 with the token, HSTS header sent"

summary=1
echo "$passed passed, $failed failed"
