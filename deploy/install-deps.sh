#!/usr/bin/env bash
# Install everything streamvisor's build, tests and test broker need, from
# Debian's packages (bookworm), then pre-resolve the Kafka broker jars.
#
# Idempotent and fast when everything is present: each package is checked
# with dpkg-query, and apt-get runs only for the missing ones.
#
# Usage: deploy/install-deps.sh [--no-kafka]
#   --no-kafka   skip resolving the Kafka broker jars (deploy/kafka/kafka.sh fetch)
#                and the Python test venv
#
# Python tools the tests use (pinned in deploy/requirements-test.txt) go into
# a venv of their own, $SV_VENV (default <repo>/build/venv), made here and
# refreshed when the requirements file changes.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

fetch_kafka=1
for arg in "$@"; do
    case "$arg" in
        --no-kafka) fetch_kafka=0 ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) echo "install-deps: unknown argument: $arg" >&2; exit 2 ;;
    esac
done

# Required: the install fails if any of these cannot be installed.
required=(
    build-essential cmake ninja-build pkg-config
    librdkafka-dev librocksdb-dev
    libprotobuf-c-dev protobuf-c-compiler
    libprotobuf-dev          # google/protobuf/{any,empty}.proto for the Substrait protos
    libmicrohttpd-dev libgnutls28-dev libcmocka-dev libjansson-dev libfyaml-dev libssl-dev
    libdouble-conversion-dev # shortest float digits in the JSON encoder (core/codec_dtoa.cc)
    kcat                     # produce/consume from shell tests
    prometheus               # only for promtool (metrics format checks)
    python3-confluent-kafka  # transactional check in broker smoke test
    openjdk-17-jdk-headless maven  # the real Kafka broker (deploy/kafka)
    curl jq python3 python3-venv
    clang-format cppcheck    # make lint (STYLE.md)
    chromium chromium-driver # headless browser test of the dashboard (tests/e2e/dashboard.sh)
    systemd                  # systemd-analyze verify of deploy/systemd/streamvisor.service
    clang libclang-rt-14-dev # make fuzz: libFuzzer and the sanitizer runtimes
    openssl                  # TLS tests make their certificates
)
# Optional: installed only when the distribution has them (libyyjson-dev is
# not in bookworm; a newer Debian has it).
optional=(libyyjson-dev)

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO=(sudo)
    else
        echo "install-deps: not root and no sudo; cannot install packages" >&2
        exit 1
    fi
fi

# One dpkg-query for all packages (fast path when nothing is missing).
declare -A installed=()
while read -r name status; do
    [ "$status" = "installed" ] && installed[$name]=1
done < <(dpkg-query -W -f='${Package} ${db:Status-Status}\n' \
             "${required[@]}" "${optional[@]}" 2>/dev/null || true)

is_installed() {
    [ -n "${installed[$1]:-}" ] || \
        [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true)" = "installed" ]
}

has_candidate() {
    local c
    c=$(apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2}')
    [ -n "$c" ] && [ "$c" != "(none)" ]
}

missing=()
for p in "${required[@]}"; do
    is_installed "$p" || missing+=("$p")
done
# Node.js and npm (the dashboard's uPlot at build time, web/; the browser
# test's playwright-core): Debian's, unless the machine has its own.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    for p in nodejs npm; do is_installed "$p" || missing+=("$p"); done
fi
missing_opt=()
for p in "${optional[@]}"; do
    is_installed "$p" || missing_opt+=("$p")
done

prometheus_was_installed=0
is_installed prometheus && prometheus_was_installed=1

if [ "${#missing[@]}" -gt 0 ]; then
    echo "install-deps: missing packages: ${missing[*]}"
    echo "install-deps: apt-get update"
    "${SUDO[@]}" apt-get update -q
fi

# Optional packages: add the ones this distribution has.
for p in "${missing_opt[@]}"; do
    if has_candidate "$p"; then
        missing+=("$p")
    else
        echo "install-deps: $p is not available in this distribution; skipped"
    fi
done

if [ "${#missing[@]}" -gt 0 ]; then
    echo "install-deps: installing: ${missing[*]}"
    "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
else
    echo "install-deps: all packages already installed"
fi

# The tests start their own Prometheus server (tests/e2e/prometheus.sh, on a
# free loopback port with a temporary config) and use promtool; the
# system's service is not needed. Debian's package enables and starts it
# where systemd runs (containers usually block it with policy-rc.d); stop
# and disable it if we just installed it.
if [ "$prometheus_was_installed" -eq 0 ] && is_installed prometheus \
   && [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
    echo "install-deps: disabling the prometheus service (only promtool is needed)"
    "${SUDO[@]}" systemctl disable --now prometheus.service >/dev/null 2>&1 || true
fi

command -v promtool >/dev/null || { echo "install-deps: promtool not found after install" >&2; exit 1; }
command -v kcat >/dev/null || { echo "install-deps: kcat not found after install" >&2; exit 1; }

if [ "$fetch_kafka" -eq 1 ]; then
    echo "install-deps: resolving the Kafka broker jars"
    "$here/kafka/kafka.sh" fetch

    # Isthmus (the second Substrait producer of tests/integration/
    # substrait_diff.sh): its jars into the local Maven repository.
    echo "install-deps: resolving Isthmus (tests/substrait/isthmus/pom.xml)"
    mvn -q -B -f "$here/../tests/substrait/isthmus/pom.xml" dependency:resolve >/dev/null

    # The Python test venv: one pinned requirements file, a stamp of its hash.
    venv=${SV_VENV:-$here/../build/venv}
    req=$here/requirements-test.txt
    stamp=$venv/.requirements.sha256
    want=$(sha256sum "$req" | cut -d' ' -f1)
    if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
        echo "install-deps: python test venv at $venv"
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q --disable-pip-version-check -r "$req"
        echo "$want" > "$stamp"
    fi

    # The browser test's playwright-core (tests/browser/package-lock.json;
    # it drives /usr/bin/chromium and downloads no browser of its own).
    bdir=${SV_BROWSER_DIR:-$here/../build/browser}
    lock=$here/../tests/browser/package-lock.json
    want=$(sha256sum "$lock" | cut -d' ' -f1)
    if [ ! -d "$bdir/node_modules/playwright-core" ] ||
       [ "$(cat "$bdir/.lock.sha256" 2>/dev/null)" != "$want" ]; then
        echo "install-deps: playwright-core at $bdir"
        mkdir -p "$bdir"
        cp "$here/../tests/browser/package.json" "$lock" "$bdir/"
        (cd "$bdir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
        echo "$want" > "$bdir/.lock.sha256"
    fi
fi

echo "install-deps: done"
