#!/usr/bin/env bash
# Every shell example of README.md and docs/*.md runs as written against
# `make run`'s service, and every link resolves (issue 19, first contact).
#
# The service is the one `make run` starts: its serve command is read from
# `make -n run` (so a change to the Makefile is what is tested) and run on a
# free loopback port with a fresh data dir. Each ```sh block is run by
# `bash -euo pipefail` from a directory holding examples/ (as the docs
# assume: the repository's directory), with `streamvisor` on PATH, after
# two rewrites a reader does in their head: localhost:8080 / 127.0.0.1:8080
# -> the test's port, and `<id>` -> the example job's id. curl runs with
# --fail-with-body, so an HTTP error fails the block (curl -s alone would
# not). A block that starts its own `streamvisor serve` gets a port of its
# own and no service. A block preceded by `<!-- docs-test: skip: REASON -->`
# is not run; the reasons are printed.
#
# Links: every relative markdown link in README.md and docs/*.md, and every
# docs/*.md, examples/*.json and deploy/... path named in those files or in
# the C sources' comments, exists.
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"
th_init docs_examples
bindir=$(cd "$(dirname "$BIN")" && pwd)

# ---- links ----
python3 - "$repo" <<'PY' || fail "broken links (above)"
import pathlib, re, subprocess, sys
repo = pathlib.Path(sys.argv[1])
bad = []
mds = [repo / "README.md"] + sorted((repo / "docs").glob("*.md"))
for md in mds:
    text = md.read_text()
    for m in re.finditer(r"\]\(([^)\s]+)\)", text):
        target = m.group(1).split("#")[0]
        if not target or re.match(r"[a-z]+:", target):
            continue
        if not (md.parent / target).exists():
            bad.append(f"{md.relative_to(repo)}: link {m.group(1)}")
files = subprocess.run(["git", "-C", str(repo), "ls-files", "*.md", "*.c", "*.h", "*.sh"],
                       capture_output=True, text=True).stdout.split()
named = re.compile(r"(?<![\w/.-])((?:docs/[\w.-]+\.md)|(?:examples/[\w.-]+\.json)|(?:deploy/[\w./-]+\.(?:yml|yaml|json|sh|service)))")
for f in files:
    if f.startswith("tests/e2e/docs_examples"):
        continue
    for m in named.finditer((repo / f).read_text(errors="replace")):
        if not (repo / m.group(1)).exists():
            bad.append(f"{f}: names {m.group(1)}")
for b in sorted(set(bad)):
    print("  " + b)
print(f"  {len(mds)} markdown files, {len(files)} files scanned")
sys.exit(1 if bad else 0)
PY
ok "every link and named docs/, examples/, deploy/ path resolves"

# ---- the blocks ----
python3 - "$repo" "$work/blocks" <<'PY'
import json, pathlib, re, sys
repo, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
out.mkdir()
n = 0
for md in [repo / "README.md"] + sorted((repo / "docs").glob("*.md")):
    lines = md.read_text().splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() in ("```sh", "```bash"):
            j = i + 1
            while lines[j].strip() != "```":
                j += 1
            prev = next((l for l in reversed(lines[:i]) if l.strip()), "")
            skip = re.match(r"\s*<!-- docs-test: skip: (.*) -->", prev)
            n += 1
            meta = {"file": str(md.relative_to(repo)), "line": i + 1,
                    "skip": skip.group(1) if skip else None}
            (out / f"{n:03d}.json").write_text(json.dumps(meta))
            (out / f"{n:03d}.sh").write_text("\n".join(lines[i + 1:j]) + "\n")
            i = j
        i += 1
PY

# the service `make run` starts
port=$(th_free_port)
serve_cmd=$(cd "$repo" && make -s -n run BUILD="$bindir" LISTEN="127.0.0.1:$port" \
    | sed -e ':a' -e '/\\$/N; s/\\\n//; ta' | grep -E '/streamvisor serve ' | tail -1)
[ -n "$serve_cmd" ] || fail "no serve command in 'make -n run'"
serve_cmd=${serve_cmd/build\/run-data/$work\/run-data}
echo "  make run's service: $serve_cmd"
(cd "$repo" && exec $serve_cmd) >"$work/log" 2>&1 &
pid=$!
th_wait_up "http://127.0.0.1:$port" || fail "make run's service did not start"
for _ in $(seq 100); do
    example=$(curl -s "http://127.0.0.1:$port/v1/jobs" | jq -r '.jobs[0].id // empty')
    [ -n "$example" ] && break
    sleep 0.1
done
[ -n "$example" ] || fail "make run's service has no example job"

mkdir -p "$work/cwd"
ln -s "$repo/examples" "$work/cwd/examples"
ran=0
skipped=0
for meta in "$work"/blocks/*.json; do
    b=${meta%.json}.sh
    where=$(jq -r '"\(.file):\(.line)"' "$meta")
    reason=$(jq -r '.skip // empty' "$meta")
    if [ -n "$reason" ]; then
        echo "  skip $where: $reason"
        skipped=$((skipped + 1))
        continue
    fi
    bport=$port
    grep -q 'streamvisor serve' "$b" && bport=$(th_free_port)
    sed -e "s/localhost:8080/127.0.0.1:$bport/g; s/127\.0\.0\.1:8080/127.0.0.1:$bport/g" \
        -e "s/<id>/$example/g" "$b" >"$work/run.sh"
    set +e
    (cd "$work/cwd" && PATH="$bindir:$PATH" STREAMVISOR_URL="http://127.0.0.1:$bport" \
        timeout 90 bash -c '
            set -euo pipefail
            curl() { command curl --fail-with-body "$@"; }
            trap "rc=\$?; set +e; kill \$(jobs -p) 2>/dev/null; wait 2>/dev/null; exit \$rc" EXIT
            . "$1"' _ "$work/run.sh") >"$work/out" 2>&1
    rc=$?
    set -e
    if [ $rc -ne 0 ]; then
        echo "----- $where (exit $rc) -----" >&2
        cat "$work/run.sh" >&2
        echo "----- its output -----" >&2
        tail -30 "$work/out" >&2
        fail "the example at $where does not run as written"
    fi
    echo "  ran $where ($(wc -l <"$b") lines)"
    ran=$((ran + 1))
done
[ "$ran" -ge 2 ] || fail "only $ran blocks ran"

# what the README's last command submitted really runs and produces
id=$(curl -s "http://127.0.0.1:$port/v1/jobs" | jq -r '.jobs[] | select(.name == "orders-over-90") | .id')
[ -n "$id" ] || fail "the README's curl -d did not submit orders-over-90"
deadline=$((SECONDS + 30))
until [ "$(curl -s "http://127.0.0.1:$port/v1/jobs/$id" | jq '.records_out')" -gt 0 ]; do
    st=$(curl -s "http://127.0.0.1:$port/v1/jobs/$id" | jq -c '{state, error, records_in}')
    [ $SECONDS -lt $deadline ] || fail "orders-over-90 writes nothing: $st"
    sleep 0.3
done
ok "$ran shell examples ran as written ($skipped skipped with a reason); orders-over-90 reads the example job's output"
summary=1
echo "$passed passed, $failed failed"
