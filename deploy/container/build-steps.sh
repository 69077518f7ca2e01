#!/usr/bin/env bash
# The build steps of the container image (deploy/container/Dockerfile), as
# one script so CI runs exactly what the image build runs
# (tests/e2e/deploy.sh runs build, test-unit and install on its build tree).
#
#   build-steps.sh deps                 Debian packages to build (install-deps.sh --no-kafka)
#   build-steps.sh build [PRESET]       configure and build (default preset: release)
#   build-steps.sh test-unit [PRESET]   the unit tests of that build
#   build-steps.sh install DIR [PRESET] install into DIR as prefix /usr/local (DESTDIR=DIR)
#   build-steps.sh runtime-packages     print the Debian packages the binary needs to run
#   build-steps.sh runtime-deps         install those (the image's runtime stage)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

# What the binary links against at run time, one Debian 12 package each
# (tests/e2e/deploy.sh checks this against ldd of the built binary).
runtime_packages=(
    librdkafka1 librocksdb7.8 libprotobuf-c1 libmicrohttpd12 libjansson4
    libfyaml0 libdouble-conversion3 libssl3 ca-certificates curl
)

step=${1:-}
shift || true
cd "$repo" # the presets are read from the working directory
case "$step" in
    deps)
        "$repo/deploy/install-deps.sh" --no-kafka
        ;;
    build)
        preset=${1:-release}
        cmake --preset "$preset" >/dev/null
        cmake --build --preset "$preset" -j "$(nproc)" --target streamvisor
        ;;
    test-unit)
        preset=${1:-release}
        cmake --build --preset "$preset" -j "$(nproc)"
        ctest --test-dir "build/$preset" -L unit --output-on-failure
        ;;
    install)
        dir=${1:?install needs a directory}
        case "$dir" in /*) ;; *) dir=$OLDPWD/$dir ;; esac
        preset=${2:-release}
        DESTDIR=$dir cmake --install "$repo/build/$preset" --prefix /usr/local
        ;;
    runtime-packages)
        printf '%s\n' "${runtime_packages[@]}"
        ;;
    runtime-deps)
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q
        apt-get install -y -q --no-install-recommends "${runtime_packages[@]}"
        rm -rf /var/lib/apt/lists/*
        ;;
    *)
        sed -n '2,12p' "$0" >&2
        exit 2
        ;;
esac
