#!/usr/bin/env bash
# file_sinks.sh — file sinks confined to file_sink_roots (sinks/confine.c):
# every path attack on sink.path, dead_letter.path and late_sink.path —
# '..', encoded and double-encoded traversal, absolute paths outside the
# roots, symlinks out of the root (to a directory, to '..', a chain), NUL,
# control bytes — is a 400 naming the field (the check runs on the parsed
# spec, so a protobuf submission takes the same path); a good path writes
# inside the root; and a listing of the whole tree around the
# roots before and after shows no file created outside them. Without roots
# (and not in development mode) file sinks are refused.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
sec_init file_sinks

root=$work/tree/root
mkdir -p "$root/ok" "$work/tree/outside" "$work/tree/rootx"
ln -s "$work/tree/outside" "$root/link"       # a symlink out of the root
ln -s .. "$root/up"                           # a symlink to '..'
ln -s link "$root/chain"                      # a symlink to a symlink
ln -s "$work/tree/outside" "$root/ok/deep"    # deeper down
port=$(th_free_port)
url=http://127.0.0.1:$port
cat > "$work/sv.yaml" <<EOF
listen: 127.0.0.1:$port
data_dir: $work/data
auth: {tokens_file: tokens.yaml}
file_sink_roots: [$root]
EOF
sec_start "$work/sv.yaml" "$url"
(cd "$work/tree" && find . | sort) > "$work/before"

post() { # post BODY -> status, body in $work/resp
    curl -s -o "$work/resp" -w '%{http_code}' -H "Authorization: Bearer $TOK_operator" \
        -H 'Content-Type: application/json' --data-binary "$1" "$url/v1/jobs"
}
n=0
spec() { # spec FIELD PATH(JSON string contents)
    n=$((n + 1))
    local sink='{"kind": "null"}' extra=''
    case $1 in
        sink) sink="{\"kind\": \"file\", \"path\": \"$2\"}" ;;
        dead_letter) extra=", \"dead_letter\": {\"kind\": \"file\", \"path\": \"$2\"}, \"on_invalid\": \"dead_letter\"" ;;
        late_sink) extra=", \"late_sink\": {\"kind\": \"file\", \"path\": \"$2\"}, \"event_time\": {\"field\": \"seq\"}, \"pipeline\": [{\"window\": {\"type\": \"tumbling\", \"size_ms\": 1000, \"aggregates\": {\"n\": \"count()\"}, \"late\": \"side_output\"}}]" ;;
    esac
    printf '{"name": "fs-%d", "mode": "bounded", "source": {"kind": "generator", "count": 20}, "schema": [{"name": "seq", "type": "int64"}], "sink": %s%s}' \
        "$n" "$sink" "$extra"
}

attacks=(
    "../outside"
    "ok/../../outside"
    "$root/../outside"
    "$root/ok/../../outside/x"
    "/etc/streamvisor-evil"
    "/etc/cron.d"
    "$work/tree/outside"
    "$work/tree/rootx"
    "$root/link"
    "$root/link/x"
    "link/x"
    "up/outside"
    "chain/x"
    "ok/deep/x"
    "%2e%2e/outside"
    "%2e%2e%2foutside"
    "..%2foutside"
    "%252e%252e/outside"
    "ok/%2e%2e/%2e%2e/outside"
    "..\\\\outside"
    "ok\\u0000/../../outside"
    "$root/ok\\u0000/../../../outside"
    "ok/\\n../x"
    "./ok"
    "ok//x"
    ""
)
for field in sink dead_letter late_sink; do
    for a in "${attacks[@]}"; do
        st=$(post "$(spec "$field" "$a")")
        got=$(jq -r '.error.field // empty' "$work/resp" 2>/dev/null || true)
        # a file sink takes no dead letters at all (SV_DRIVER_RAW): a
        # dead_letter file sink is refused on its kind before its path
        want=$field.path
        [ "$field" = dead_letter ] && [ "$got" = dead_letter.kind ] && want=$got
        [ "$st" = 400 ] && [ "$got" = "$want" ] ||
            fail "$field.path '$a': $st $(cat "$work/resp")"
    done
done
ok "${#attacks[@]} path attacks x 3 fields: each a 400 naming <field>.path (dead_letter: its kind, a file sink takes no dead letters)"

# A good path, absolute and relative, writes inside the root.
for p in "$root/ok/out" "rel/out"; do
    st=$(post "$(spec sink "$p")")
    [ "$st" = 201 ] || fail "good path '$p': $st $(cat "$work/resp")"
    id=$(jq -r .id "$work/resp")
    for _ in $(seq 100); do
        state=$(curl -s -H "Authorization: Bearer $TOK_viewer" "$url/v1/jobs/$id" | jq -r .state)
        [ "$state" = completed ] && break
        sleep 0.1
    done
    [ "$state" = completed ] || fail "job on '$p' is $state"
done
ls "$root"/ok/out/part-*.jsonl "$root"/rel/out/part-*.jsonl >/dev/null ||
    fail "no output inside the root"
[ "$(cat "$root"/ok/out/part-*.jsonl | wc -l)" = 20 ] || fail "output rows"
ok "good paths (absolute under the root, relative to it) write 20 rows inside it"

# The listing: only the two output directories (and their files) are new.
(cd "$work/tree" && find . | sort) > "$work/after"
new=$(comm -13 "$work/before" "$work/after" | grep -v -E '^\./root/(ok/out|rel|rel/out)(/part-[0-9a-f]+-a000001\.jsonl)?$' || true)
[ -z "$new" ] || fail "created outside the expected places: $new"
[ -z "$(ls -A "$work/tree/outside")" ] || fail "something in outside/"
[ -z "$(ls -A "$work/tree/rootx")" ] || fail "something in rootx/"
[ ! -e /etc/streamvisor-evil ] || fail "/etc/streamvisor-evil exists"
ok "listing around the roots: nothing created outside them"
sec_stop

# No roots, a real cluster profile (not development mode): refused.
cat > "$work/sv2.yaml" <<EOF
listen: 127.0.0.1:$port
data_dir: $work/data2
clusters: {default: {bootstrap_servers: 127.0.0.1:1}}
EOF
sec_start "$work/sv2.yaml" "$url"
st=$(post "$(spec sink "$root/ok/none")")
[ "$st" = 400 ] && grep -q "no file_sink_roots" "$work/resp" ||
    fail "without roots: $st $(cat "$work/resp")"
[ ! -e "$root/ok/none" ] || fail "created without roots"
ok "without file_sink_roots file sinks are refused"

summary=1
echo "$passed passed, $failed failed"
