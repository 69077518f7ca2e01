#!/usr/bin/env bash
# The deployment artefacts (issue 19), checked offline:
#   - deploy/systemd/streamvisor.service: `systemd-analyze verify` prints
#     nothing (a broken copy, the negative control, does), as written and as
#     `make install` configures it; `systemd-analyze security --offline`
#     rates its exposure 2.0 or lower;
#   - the readiness protocol the unit relies on (Type=notify): serve sends
#     READY=1 to $NOTIFY_SOCKET once /healthz answers, and on SIGTERM
#     STOPPING=1, then exits 0 with a job running well within the unit's
#     TimeoutStopSec;
#   - deploy/container/build-steps.sh (the Dockerfile's steps) builds and
#     installs the tree: binary, unit, sysusers, config, docs, Grafana and
#     alert files; the staged binary runs; every library it links comes from
#     the runtime packages the script lists (or their dependencies);
#   - hadolint on the Dockerfile; kubernetes-validate --strict on
#     deploy/k8s/ and the references between the manifests (probes on
#     /healthz, ports, labels, the ServiceMonitor's honorLabels).
# No Docker engine or Kubernetes cluster is needed (none runs here).
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"
th_init deploy
venv=${SV_VENV:-$repo/build/venv}
[ -x "$venv/bin/kubernetes-validate" ] && [ -x "$venv/bin/hadolint" ] ||
    fail "kubernetes-validate / hadolint missing in $venv (run deploy/install-deps.sh)"
command -v systemd-analyze >/dev/null || fail "systemd-analyze missing (run deploy/install-deps.sh)"
unit=$repo/deploy/systemd/streamvisor.service

# ---- systemd ----
verify() { # UNIT_FILE: prints what systemd-analyze verify said
    systemd-analyze verify "$1" 2>&1 | grep -v -e '^$' || true
}
sed "s|/usr/local/bin/streamvisor|$BIN|" "$unit" >"$work/streamvisor.service"
out=$(verify "$work/streamvisor.service")
[ -z "$out" ] || fail "systemd-analyze verify: $out"
mkdir -p "$work/bad"
sed 's/^ProtectSystem=strict/ProtectSystem=bogus/; s/^Type=notify/Typo=notify/' \
    "$work/streamvisor.service" >"$work/bad/streamvisor.service"
bad=$(verify "$work/bad/streamvisor.service")
grep -q "Unknown key 'Typo'" <<<"$bad" && grep -q "protect system value" <<<"$bad" ||
    fail "negative control: verify did not flag a broken unit: $bad"
exposure=$(systemd-analyze security --offline=true "$work/streamvisor.service" 2>/dev/null |
    sed -n 's/.*Overall exposure level for streamvisor.service: \([0-9.]*\).*/\1/p')
[ -n "$exposure" ] && python3 -c "import sys; sys.exit(0 if float('$exposure') <= 2.0 else 1)" ||
    fail "exposure level '$exposure' (want <= 2.0)"
for key in 'Type=notify' 'User=streamvisor' 'ProtectSystem=strict' \
           'ReadWritePaths=/var/lib/streamvisor' 'TimeoutStopSec=30' 'NoNewPrivileges=yes'; do
    grep -qx "$key" "$unit" || fail "the unit lacks $key"
done
ok "systemd-analyze verify clean (a broken copy is flagged), exposure $exposure"

# ---- sd_notify readiness and graceful stop ----
port=$(th_free_port)
python3 - "$work/notify.sock" >"$work/notify.log" 2>&1 <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(60)
for _ in range(2):
    msg = s.recv(256).decode()
    print(f"{time.monotonic():.3f} {msg}", flush=True)
PY
npid=$!
for _ in $(seq 50); do [ -S "$work/notify.sock" ] && break; sleep 0.1; done
NOTIFY_SOCKET=$work/notify.sock "$BIN" serve --listen "127.0.0.1:$port" \
    --data-dir "$work/data" >"$work/log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q READY=1 "$work/notify.log" && break; sleep 0.1; done
grep -q READY=1 "$work/notify.log" || fail "no READY=1 from serve"
curl -sf "127.0.0.1:$port/healthz" >/dev/null || fail "READY=1 sent but /healthz does not answer"
jid=$(curl -s -XPOST -H 'Content-Type: application/json' "127.0.0.1:$port/v1/jobs" \
    --data-binary @"$repo/examples/generated-orders.json" | jq -r .id)
t0=$(date +%s%N)
kill -TERM "$pid"
set +e; wait "$pid"; rc=$?; set -e
pid=
ms=$((($(date +%s%N) - t0) / 1000000))
wait "$npid" || true
[ "$rc" = 0 ] || fail "serve exited $rc on SIGTERM"
grep -q STOPPING=1 "$work/notify.log" || fail "no STOPPING=1: $(cat "$work/notify.log")"
[ "$ms" -lt 30000 ] || fail "shutdown took $ms ms, the unit allows 30 s"
ok "READY=1 once /healthz answers; SIGTERM with a job ($jid) running: STOPPING=1, exit 0 in $ms ms (TimeoutStopSec=30)"

# ---- build steps (the Dockerfile's) ----
preset=${SV_DEPLOY_PRESET:-dev}
"$repo/deploy/container/build-steps.sh" build "$preset" >"$work/build.log" 2>&1 ||
    { tail "$work/build.log" >&2; fail "build-steps.sh build"; }
"$repo/deploy/container/build-steps.sh" install "$work/stage" "$preset" >"$work/install.log" 2>&1 ||
    { tail "$work/install.log" >&2; fail "build-steps.sh install"; }
s=$work/stage/usr/local
for f in bin/streamvisor lib/systemd/system/streamvisor.service lib/sysusers.d/streamvisor.conf \
         etc/streamvisor/streamvisor.yaml share/doc/streamvisor/README.md \
         share/doc/streamvisor/api.md share/doc/streamvisor/examples/generated-orders.json \
         share/streamvisor/grafana/streamvisor.json share/streamvisor/prometheus/alerts.yml; do
    [ -e "$s/$f" ] || fail "install lacks $f"
done
"$s/bin/streamvisor" --version | grep -q '^streamvisor ' || fail "the staged binary does not run"
grep -qx "ExecStart=/usr/local/bin/streamvisor serve --config /usr/local/etc/streamvisor/streamvisor.yaml --data-dir /var/lib/streamvisor" \
    "$s/lib/systemd/system/streamvisor.service" || fail "installed unit's ExecStart"
sed "s|/usr/local/bin/streamvisor|$s/bin/streamvisor|" "$s/lib/systemd/system/streamvisor.service" >"$work/installed.service"
out=$(verify "$work/installed.service")
[ -z "$out" ] || fail "verify of the installed unit: $out"
"$repo/deploy/container/build-steps.sh" runtime-packages >"$work/runtime"
python3 - "$s/bin/streamvisor" "$work/runtime" <<'PY' || fail "runtime packages do not cover the binary's libraries"
import subprocess, sys
binary, listed = sys.argv[1], open(sys.argv[2]).read().split()
pkgs = set(listed)
deps = subprocess.run(["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests",
                       "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances"] + listed,
                      capture_output=True, text=True).stdout
for line in deps.splitlines():
    line = line.strip()
    if line.startswith(("Depends:", "PreDepends:")):
        pkgs.add(line.split(":", 1)[1].strip().strip("<>").split(":")[0])
    elif line and not line.startswith(("|", "Depends", "PreDepends")) and ":" not in line:
        pkgs.add(line)
missing = []
for line in subprocess.run(["ldd", binary], capture_output=True, text=True).stdout.splitlines():
    if "=>" not in line or "vdso" in line:
        continue
    path = line.split("=>")[1].split("(")[0].strip()
    owner = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True).stdout
    if not owner:
        real = subprocess.run(["readlink", "-f", path], capture_output=True, text=True).stdout.strip()
        owner = subprocess.run(["dpkg", "-S", real], capture_output=True, text=True).stdout
    pkg = owner.split(":")[0].strip() if owner else "?"
    if pkg not in pkgs:
        missing.append(f"{path} ({pkg})")
if missing:
    print("not covered:", missing)
    sys.exit(1)
print(f"  {len(listed)} runtime packages cover every library of the binary")
PY
ok "build-steps.sh build + install: the tree, a runnable binary, runtime packages cover ldd"

# ---- Dockerfile and Kubernetes ----
"$venv/bin/hadolint" "$repo/deploy/container/Dockerfile" >"$work/hadolint" 2>&1 ||
    { cat "$work/hadolint" >&2; fail "hadolint"; }
grep -q 'build-steps.sh build' "$repo/deploy/container/Dockerfile" &&
    grep -q 'build-steps.sh install' "$repo/deploy/container/Dockerfile" ||
    fail "the Dockerfile does not build with build-steps.sh"
ok "hadolint $("$venv/bin/hadolint" --version | awk '{print $NF}'): Dockerfile clean"
"$venv/bin/kubernetes-validate" --strict "$repo"/deploy/k8s/{configmap,service,statefulset}.yaml \
    >"$work/kv" 2>&1 || { cat "$work/kv" >&2; fail "kubernetes-validate"; }
[ "$(grep -c ' passed for resource ' "$work/kv")" = 4 ] || fail "kubernetes-validate: $(cat "$work/kv")"
"$venv/bin/python" - "$repo/deploy/k8s" <<'PY' || fail "manifests do not fit together"
import sys, yaml, pathlib
d = pathlib.Path(sys.argv[1])
docs = [x for f in sorted(d.glob("*.yaml")) for x in yaml.safe_load_all(f.read_text()) if x]
by = {(x["kind"], x.get("metadata", {}).get("name", "")): x for x in docs}
sts = by[("StatefulSet", "streamvisor")]
svc, head = by[("Service", "streamvisor")], by[("Service", "streamvisor-headless")]
sm, cm = by[("ServiceMonitor", "streamvisor")], by[("ConfigMap", "streamvisor")]
kus = by[("Kustomization", "")]
labels = sts["spec"]["template"]["metadata"]["labels"]
assert sts["spec"]["selector"]["matchLabels"].items() <= labels.items()
assert sts["spec"]["serviceName"] == "streamvisor-headless" and head["spec"]["clusterIP"] == "None"
assert sts["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "data"
c = sts["spec"]["template"]["spec"]["containers"][0]
assert any(m["name"] == "data" and m["mountPath"] == "/var/lib/streamvisor" for m in c["volumeMounts"])
for p in ("startupProbe", "readinessProbe", "livenessProbe"):
    assert c[p]["httpGet"] == {"path": "/healthz", "port": "http"}, p
assert [p["name"] for p in c["ports"]] == ["http"] and c["ports"][0]["containerPort"] == 8080
for s in (svc, head):
    assert s["spec"]["selector"].items() <= labels.items()
    assert s["spec"]["ports"][0]["targetPort"] == "http"
assert sm["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
ep = sm["spec"]["endpoints"][0]
assert ep["port"] == svc["spec"]["ports"][0]["name"] and ep["path"] == "/metrics" and ep["honorLabels"] is True
conf = yaml.safe_load(cm["data"]["streamvisor.yaml"])
assert conf["listen"].endswith(":8080") and conf["data_dir"] == "/var/lib/streamvisor"
assert sts["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True
assert sorted(kus["resources"]) == sorted(f.name for f in d.glob("*.yaml") if f.name != "kustomization.yaml")
print("  manifests consistent:", ", ".join(f"{k}/{n}" for k, n in by if k != "Kustomization"))
PY
ok "kubernetes-validate --strict (4 resources) and the manifests' cross-references"
summary=1
echo "$passed passed, $failed failed"
