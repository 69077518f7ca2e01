#!/usr/bin/env bash
# No output of the supervisor contains a credential; cluster profiles appear
# by name only (DESIGN.md §6, issue 6 item 5).
#
# A server config has a cluster profile "vault-profile" pointing at the test
# broker whose `credentials` names an entry of a secrets_file holding
# planted values (sasl.username, sasl.password, ssl.key.password: random
# strings). security.protocol stays plaintext, so librdkafka accepts the
# properties and the broker still works; the profile also sets
# `debug: conf,security`, so librdkafka logs its whole client configuration
# (it must redact the sensitive properties), and the server runs with
# STREAMVISOR_LOG_LEVEL=debug, so every one of those lines reaches stderr.
#
# On it run: a good job (kafka source → kafka sink, checkpoints, completes a
# drain), a good exactly-once job (its submit-time admin check and its
# transactional producer use the profile's credentials), an exactly-once
# job on the broken profile (the submit-time admin client is refused: the
# 400 names the property, where librdkafka's own text quotes the value),
# a job on a missing topic (fails with a binding error), a job on a
# second profile whose secrets entry librdkafka refuses (an invalid
# sasl.mechanisms value: the config error path), and refused submissions
# (bad spec 400, unknown profile, name in use). Every output is collected:
# GET /v1/info, /v1/jobs, each job's status, /observations, /checkpoints,
# /preview, /metrics, every error body, every CLI command's stdout and
# stderr (tables and --json), the server's log, and the server's data dir
# (job definitions, observations, checkpoints). None may contain a planted
# value; the profile's name must appear (in /v1/info, as a name only).
# Also: `serve --config` with a broken secrets file (a refused property, a
# key set twice, a YAML syntax error inside a planted value, an entry that
# is not a mapping) fails with a message that names entries and keys, never
# a value.
# Negative control: the planted values are in the secrets file the server
# read, and the scan finds them there (the grep is not vacuous).
#
# Needs $KAFKA_BOOTSTRAP (the ctest fixture's broker) and $STREAMVISOR_BIN.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/../lib/harness.sh"
th_init secrets
KAFKA_SH=$repo/deploy/kafka/kafka.sh

out=$work/out # everything the supervisor said goes under here
mkdir -p "$out"

for tool in kcat jq curl python3; do
    command -v "$tool" >/dev/null || fail "$tool not found (run deploy/install-deps.sh)"
done
[ -x "$BIN" ] || fail "streamvisor binary '$BIN' not found (STREAMVISOR_BIN)"

rnd() { head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
SECRET_PW=PLANTED-s3cr3t-$(rnd)
SECRET_USER=PLANTED-user-$(rnd)
SECRET_KEYPW=PLANTED-keypw-$(rnd)
SECRET_BROKEN=PLANTED-broken-$(rnd)
SECRETS=("$SECRET_PW" "$SECRET_USER" "$SECRET_KEYPW" "$SECRET_BROKEN")
# What a leak would look like in part: a long prefix of each value (a
# message that cut the value short still leaks it).
for s in "${SECRETS[@]}"; do printf '%s\n' "$s" "${s:0:20}" "${s: -16}"; done \
    >"$work/needles"

# ---- topics and input ----
topic=it-secrets-$$-$RANDOM
sink_topic=$topic-out
missing=$topic-does-not-exist
"$KAFKA_SH" topic-create "$topic" 2 >/dev/null 2>"$work/topic.err" ||
    { cat "$work/topic.err" >&2; fail "cannot create topic $topic"; }
"$KAFKA_SH" topic-create "$sink_topic" 1 >/dev/null 2>"$work/topic.err" ||
    { cat "$work/topic.err" >&2; fail "cannot create topic $sink_topic"; }
for i in $(seq 1 200); do echo "{\"id\":$i,\"ts\":$((1700000000000 + i * 10))}"; done |
    kcat -P -b "$BOOTSTRAP" -t "$topic" || fail "cannot produce"

# ---- the config and its secrets file ----
port=$(th_free_port)
url=http://127.0.0.1:$port
cfgdir=$work/etc
mkdir -p "$cfgdir"
cat >"$cfgdir/secrets.yaml" <<EOF
vault-creds:
  sasl.username: "$SECRET_USER"
  sasl.password: "$SECRET_PW"
  ssl.key.password: "$SECRET_KEYPW"
broken-creds:
  sasl.password: "$SECRET_PW"
  ssl.endpoint.identification.algorithm: "$SECRET_BROKEN"
EOF
chmod 600 "$cfgdir/secrets.yaml"
cat >"$cfgdir/streamvisor.yaml" <<EOF
listen: 127.0.0.1:$port
data_dir: $work/data
identity: sv-secrets-test
secrets_file: secrets.yaml
clusters:
  vault-profile:
    bootstrap_servers: $BOOTSTRAP
    properties:
      security.protocol: plaintext
      debug: conf,security
    credentials: vault-creds
  broken-profile:
    bootstrap_servers: $BOOTSTRAP
    properties:
      security.protocol: plaintext
    credentials: broken-creds
EOF
# Negative control: the scan below finds the planted values where they are.
grep -qF -f "$work/needles" "$cfgdir/secrets.yaml" ||
    fail "negative control: the needles are not found in the secrets file itself"
ok "negative control: the scan finds the planted values in the secrets file"

STREAMVISOR_LOG_LEVEL=debug "$BIN" serve --config "$cfgdir/streamvisor.yaml" \
    >"$out/server.stdout" 2>"$out/server.stderr" &
pid=$!
for _ in $(seq 100); do curl -sf "$url/healthz" >/dev/null && break; sleep 0.1; done
curl -sf "$url/healthz" >/dev/null ||
    { tail -n 30 "$out/server.stderr" >&2; fail "supervisor did not start with the config"; }

# get NAME PATH: GET into $out/NAME (body and status line).
n_req=0
get() {
    n_req=$((n_req + 1))
    curl -s -o "$out/$1" -w '%{http_code}\n' "$url$2" >"$out/$1.code" ||
        fail "GET $2: no answer"
}
post() { # post NAME PATH BODY-FILE-OR-STRING
    n_req=$((n_req + 1))
    curl -s -o "$out/$1" -w '%{http_code}\n' -X POST \
        -H 'Content-Type: application/json' --data-binary "$3" "$url$2" \
        >"$out/$1.code" || fail "POST $2: no answer"
}
code() { cat "$out/$1.code"; }
cli() { # cli NAME ARGS...: stdout, stderr and exit code into $out
    local name=$1 rc=0
    shift
    "$BIN" "$@" --server "$url" >"$out/cli-$name.stdout" 2>"$out/cli-$name.stderr" || rc=$?
    echo "$rc" >"$out/cli-$name.rc"
}

# ---- the profile by name only ----
get info /v1/info
[ "$(code info)" = 200 ] || fail "/v1/info answered $(code info)"
jq -e '[.clusters[].name] | sort == ["broken-profile", "default", "vault-profile"]' "$out/info" >/dev/null ||
    fail "/v1/info does not list the profiles by name: $(jq -c .clusters "$out/info")"
jq -e 'all(.clusters[]; keys == ["development", "name"])' "$out/info" >/dev/null ||
    fail "/v1/info shows more of a profile than its name: $(jq -c .clusters "$out/info")"
for word in credentials vault-creds broken-creds sasl secrets.yaml; do
    ! grep -qiF "$word" "$out/info" || fail "/v1/info mentions '$word'"
done
ok "/v1/info lists the profiles by name only (vault-profile, broken-profile and the embedded default; no credentials entry, property or secrets path)"

# ---- jobs ----
cat >"$work/good.json" <<EOF
{"name": "secret-good",
 "source": {"kind": "kafka", "cluster": "vault-profile", "topic": "$topic"},
 "schema": [{"name": "id", "type": "int64"}, {"name": "ts", "type": "timestamp_ms"}],
 "event_time": {"field": "ts", "max_out_of_orderness_ms": 100},
 "pipeline": [{"filter": "id % 2 == 0"}],
 "sink": {"kind": "kafka", "cluster": "vault-profile", "topic": "$sink_topic"},
 "checkpoint": {"interval_ms": 500}}
EOF
cat >"$work/missing.json" <<EOF
{"name": "secret-missing-topic",
 "source": {"kind": "kafka", "cluster": "vault-profile", "topic": "$missing"},
 "schema": [{"name": "id", "type": "int64"}],
 "sink": {"kind": "null"},
 "restart": {"max_attempts": 1, "initial_backoff_ms": 100}}
EOF
cat >"$work/broken.json" <<EOF
{"name": "secret-broken-profile",
 "source": {"kind": "kafka", "cluster": "broken-profile", "topic": "$topic"},
 "schema": [{"name": "id", "type": "int64"}],
 "sink": {"kind": "null"},
 "restart": {"max_attempts": 1, "initial_backoff_ms": 100}}
EOF
cat >"$work/broken-sink.json" <<EOF
{"name": "secret-broken-sink",
 "source": {"kind": "generator", "count": 100},
 "schema": [{"name": "id", "type": "int64"}],
 "sink": {"kind": "kafka", "cluster": "broken-profile", "topic": "$sink_topic"},
 "restart": {"max_attempts": 1, "initial_backoff_ms": 100}}
EOF
eo_topic=$topic-eo
"$KAFKA_SH" topic-create "$eo_topic" 1 >/dev/null 2>"$work/topic.err" ||
    { cat "$work/topic.err" >&2; fail "cannot create topic $eo_topic"; }
cat >"$work/good-eo.json" <<EOF
{"name": "secret-good-eo",
 "source": {"kind": "kafka", "cluster": "vault-profile", "topic": "$topic"},
 "schema": [{"name": "id", "type": "int64"}, {"name": "ts", "type": "timestamp_ms"}],
 "sink": {"kind": "kafka", "cluster": "vault-profile", "topic": "$eo_topic"},
 "delivery": "exactly_once",
 "checkpoint": {"interval_ms": 500}}
EOF
cat >"$work/broken-eo.json" <<EOF
{"name": "secret-broken-eo",
 "source": {"kind": "kafka", "cluster": "vault-profile", "topic": "$topic"},
 "schema": [{"name": "id", "type": "int64"}],
 "sink": {"kind": "kafka", "cluster": "broken-profile", "topic": "$sink_topic"},
 "delivery": "exactly_once"}
EOF
cat >"$work/bad.json" <<EOF
{"name": "secret-bad-spec",
 "source": {"kind": "kafka", "cluster": "vault-profile", "topic": "$topic",
            "properties": {"sasl.password": "x"}},
 "schema": [{"name": "id", "type": "int64"}],
 "sink": {"kind": "null"}}
EOF
cat >"$work/unknown-profile.json" <<EOF
{"name": "secret-unknown-profile",
 "source": {"kind": "kafka", "cluster": "no-such-profile", "topic": "$topic"},
 "schema": [{"name": "id", "type": "int64"}],
 "sink": {"kind": "null"}}
EOF

cli submit-good submit "$work/good.json"
[ "$(cat "$out/cli-submit-good.rc")" = 0 ] || fail "submit good: $(cat "$out/cli-submit-good.stderr")"
good=$(cat "$out/cli-submit-good.stdout")
post submit-missing /v1/jobs @"$work/missing.json"
[ "$(code submit-missing)" = 201 ] || fail "submit missing-topic job answered $(code submit-missing)"
missing_id=$(jq -r .id "$out/submit-missing")
cli submit-broken submit "$work/broken.json"
[ "$(cat "$out/cli-submit-broken.rc")" = 0 ] ||
    fail "submit broken-profile job: $(cat "$out/cli-submit-broken.stderr")"
broken_id=$(cat "$out/cli-submit-broken.stdout")
cli submit-broken-sink submit "$work/broken-sink.json"
[ "$(cat "$out/cli-submit-broken-sink.rc")" = 0 ] ||
    fail "submit broken-profile sink job: $(cat "$out/cli-submit-broken-sink.stderr")"
broken_sink_id=$(cat "$out/cli-submit-broken-sink.stdout")
cli submit-good-eo submit "$work/good-eo.json"
[ "$(cat "$out/cli-submit-good-eo.rc")" = 0 ] || fail "submit good exactly-once: $(cat "$out/cli-submit-good-eo.stderr")"
good_eo=$(cat "$out/cli-submit-good-eo.stdout")
post submit-broken-eo /v1/jobs @"$work/broken-eo.json"
[ "$(code submit-broken-eo)" = 400 ] ||
    fail "exactly-once job on the broken profile answered $(code submit-broken-eo), want 400: $(cat "$out/submit-broken-eo")"
jq -e '.error.message | contains("ssl.endpoint.identification.algorithm") and contains("broken-profile")' \
    "$out/submit-broken-eo" >/dev/null ||
    fail "the exactly-once refusal does not name the property and profile: $(cat "$out/submit-broken-eo")"
cli submit-broken-eo submit "$work/broken-eo.json"
[ "$(cat "$out/cli-submit-broken-eo.rc")" = 3 ] ||
    fail "CLI submit of the broken exactly-once job exited $(cat "$out/cli-submit-broken-eo.rc"), want 3"
post submit-bad /v1/jobs @"$work/bad.json"
[ "$(code submit-bad)" = 400 ] || fail "bad spec answered $(code submit-bad), want 400: $(cat "$out/submit-bad")"
cli submit-bad submit "$work/bad.json"
[ "$(cat "$out/cli-submit-bad.rc")" = 3 ] || fail "CLI submit of the bad spec exited $(cat "$out/cli-submit-bad.rc"), want 3"
post submit-unknown /v1/jobs @"$work/unknown-profile.json"
cli submit-unknown submit "$work/unknown-profile.json"
cli submit-dup submit "$work/good.json" # name in use: 409
[ "$(cat "$out/cli-submit-dup.rc")" = 3 ] || fail "duplicate name: CLI exited $(cat "$out/cli-submit-dup.rc"), want 3"
ok "submitted: good $good, missing-topic $missing_id, broken-profile source $broken_id and sink $broken_sink_id; bad spec 400, unknown profile $(code submit-unknown), duplicate name refused"

# Wait (bounded) for the good job to read everything and checkpoint, and
# for the missing-topic job to fail.
deadline=$((SECONDS + 60))
while :; do
    get st-good "/v1/jobs/$good"
    get st-missing "/v1/jobs/$missing_id"
    g_in=$(jq -r .records_in "$out/st-good")
    g_ck=$(jq -r '.last_checkpoint.id // -1' "$out/st-good")
    m_state=$(jq -r .state "$out/st-missing")
    get st-good-eo "/v1/jobs/$good_eo"
    e_in=$(jq -r .records_in "$out/st-good-eo")
    e_ck=$(jq -r '.last_checkpoint.id // -1' "$out/st-good-eo")
    [ "$g_in" = 200 ] && [ "$g_ck" != -1 ] && [ "$m_state" = failed ] &&
        [ "$e_in" = 200 ] && [ "$e_ck" != -1 ] && break
    [ $SECONDS -lt $deadline ] || fail "after 60 s: good job read $g_in records (checkpoint $g_ck), exactly-once job $e_in (checkpoint $e_ck), missing-topic job is $m_state"
    [ "$(jq -r .state "$out/st-good-eo")" = running ] ||
        fail "good exactly-once job is $(jq -r .state "$out/st-good-eo"): $(jq -c .error "$out/st-good-eo")"
    [ "$(jq -r .state "$out/st-good")" = running ] ||
        fail "good job is $(jq -r .state "$out/st-good"): $(jq -c .error "$out/st-good")"
    sleep 0.2
done
jq -e --arg t "$missing" '(.error.category == "binding" or .error.category == "retry_exhausted")
        and (.error.message | contains("topic \u0027\($t)\u0027 does not exist"))' \
    "$out/st-missing" >/dev/null ||
    fail "missing-topic job error does not say the topic is missing: $(jq -c .error "$out/st-missing")"
ok "good jobs (at-least-once and exactly-once) read 200 records and checkpointed; missing-topic job failed ($(jq -r .error.message "$out/st-missing"))"

# librdkafka refuses the broken entry's value (and its own error text
# quotes it): both jobs on that profile fail with a config error that names
# the property only.
for j in "$broken_id" "$broken_sink_id"; do
    deadline=$((SECONDS + 30))
    while :; do
        get "st-broken-$j" "/v1/jobs/$j"
        [ "$(jq -r .state "$out/st-broken-$j")" = failed ] && break
        [ $SECONDS -lt $deadline ] ||
            fail "broken-profile job $j is $(jq -r .state "$out/st-broken-$j") after 30 s: $(jq -c .error "$out/st-broken-$j")"
        sleep 0.2
    done
    jq -e '.error.message | contains("ssl.endpoint.identification.algorithm")' \
        "$out/st-broken-$j" >/dev/null ||
        fail "broken-profile job $j: the error does not name the refused property: $(jq -c .error "$out/st-broken-$j")"
done
ok "broken-profile jobs failed naming the property: $(jq -r .error.message "$out/st-broken-$broken_id") / $(jq -r .error.message "$out/st-broken-$broken_sink_id")"

# Every job's documents, by HTTP and by the CLI (tables and --json).
post ck-good "/v1/jobs/$good/checkpoints" '{}'
ids=("$good" "$good_eo" "$missing_id" "$broken_id" "$broken_sink_id")
for j in "${ids[@]}"; do
    get "status-$j" "/v1/jobs/$j"
    get "obs-$j" "/v1/jobs/$j/observations?limit=1000"
    get "cks-$j" "/v1/jobs/$j/checkpoints"
    get "preview-$j" "/v1/jobs/$j/preview?limit=10"
    get "result-$j" "/v1/jobs/$j/result?limit=10"
    for c in status lag checkpoints observations; do
        cli "$c-$j" "$c" "$j"
        cli "$c-json-$j" "$c" "$j" --json
    done
done
jq -e '.observations | length > 0' "$out/obs-$good" >/dev/null ||
    fail "the good job has no observations"
jq -e '[.observations[].kind] | index("checkpoint_completed") != null' "$out/obs-$good" >/dev/null ||
    fail "the good job's observations hold no completed checkpoint: $(jq -c '[.observations[].kind]' "$out/obs-$good")"
get jobs /v1/jobs
get metrics /metrics
get notfound /v1/jobs/no-such-job
post cancel-failed "/v1/jobs/$missing_id/cancel" '{}'
post drain-good "/v1/jobs/$good/drain" '{"final_watermark": true, "timeout_ms": 20000}'
[ "$(code drain-good)" = 200 ] || fail "drain answered $(code drain-good): $(cat "$out/drain-good")"
deadline=$((SECONDS + 30))
while :; do
    get status-drained "/v1/jobs/$good"
    [ "$(jq -r .state "$out/status-drained")" = checkpointed ] && break
    [ $SECONDS -lt $deadline ] ||
        fail "the good job is $(jq -r .state "$out/status-drained") 30 s after drain"
    sleep 0.2
done
get obs-drained "/v1/jobs/$good/observations?limit=1000"
cli jobs jobs
cli jobs-json jobs --json
cli info info
cli info-json info --json
cli metrics metrics
cli notfound status no-such-job
get info-end /v1/info
ok "collected $n_req HTTP answers and $(ls "$out" | grep -c '^cli-.*\.stdout$') CLI runs"

# The profile name shows up where a job names its cluster, never more.
grep -q vault-profile "$out/cli-info.stdout" || fail "streamvisor info does not name the profile"
ok "streamvisor info names the profile vault-profile"

# ---- serve --config with broken secrets files ----
bad_config() { # bad_config NAME: secrets in $cfgdir/bad-NAME.yaml
    local name=$1 rc=0
    chmod 600 "$cfgdir/bad-$name.yaml"
    sed -e "s|secrets_file: secrets.yaml|secrets_file: bad-$name.yaml|" \
        -e "s|^listen: .*|listen: 127.0.0.1:0|" \
        -e "s|^data_dir: .*|data_dir: $work/data-bad|" \
        "$cfgdir/streamvisor.yaml" >"$cfgdir/bad-$name-config.yaml"
    timeout 20 "$BIN" serve --config "$cfgdir/bad-$name-config.yaml" \
        >"$out/bad-$name.stdout" 2>"$out/bad-$name.stderr" || rc=$?
    [ "$rc" = 1 ] || fail "serve with secrets '$name' exited $rc, want 1: $(cat "$out/bad-$name.stderr")"
    [ -s "$out/bad-$name.stderr" ] || fail "serve with secrets '$name' printed no error"
}
cat >"$cfgdir/bad-refused.yaml" <<EOF
vault-creds:
  sasl.password: "$SECRET_PW"
  sasl.kerberos.kinit.cmd: "$SECRET_USER"
broken-creds:
  sasl.password: "$SECRET_PW"
EOF
cat >"$cfgdir/bad-twice.yaml" <<EOF
vault-creds:
  security.protocol: "$SECRET_PW"
broken-creds:
  sasl.password: "$SECRET_PW"
EOF
cat >"$cfgdir/bad-syntax.yaml" <<EOF
vault-creds:
  sasl.password: "$SECRET_PW
  sasl.username: [$SECRET_USER
broken-creds: {
EOF
cat >"$cfgdir/bad-shape.yaml" <<EOF
vault-creds: "$SECRET_PW"
broken-creds:
  sasl.password: ["$SECRET_USER"]
EOF
for b in refused twice syntax shape; do
    bad_config "$b"
done
grep -q "kinit" "$out/bad-refused.stderr" || fail "refused property not named: $(cat "$out/bad-refused.stderr")"
grep -q "security.protocol" "$out/bad-twice.stderr" || fail "twice-set key not named: $(cat "$out/bad-twice.stderr")"
ok "serve --config refuses 4 broken secrets files (exit 1), naming entries and keys: $(head -n1 "$out/bad-refused.stderr")"

# ---- stop the server (its log is complete after it exits) ----
kill "$pid"
wait "$pid" 2>/dev/null || true
pid=

# ---- the scan ----
# The server's log must have seen the librdkafka configuration dump, or the
# scan of it would prove little.
grep -q 'sasl.password' "$out/server.stderr" ||
    fail "the debug log never shows librdkafka's configuration (debug: conf not routed?)"
nfiles=$(find "$out" -type f | wc -l)
if grep -rlaF -f "$work/needles" "$out" >"$work/leaks"; then
    {
        echo "planted secret values found in supervisor output:"
        while read -r f; do
            echo "--- ${f#"$out"/}:"
            grep -naF -f "$work/needles" "$f" | head -n 5 | cut -c1-300
        done <"$work/leaks"
    } >&2
    fail "a planted secret leaked into $(wc -l <"$work/leaks") of $nfiles outputs: $(tr '\n' ' ' <"$work/leaks")"
fi
ok "no planted value in $nfiles outputs (HTTP answers, CLI stdout/stderr, server log)"

# The data dir: job definitions, observations, checkpoints (RocksDB files
# read raw; values may be compressed, so this is a best effort on top of
# the API scan above).
ndata=$(find "$work/data" -type f | wc -l)
[ "$ndata" -gt 0 ] || fail "the data dir is empty"
if grep -rlaF -f "$work/needles" "$work/data" >"$work/leaks"; then
    fail "a planted secret is stored in the data dir: $(tr '\n' ' ' <"$work/leaks")"
fi
ok "no planted value in the $ndata files of the data dir"

summary=1
echo "$passed passed, $failed failed"
