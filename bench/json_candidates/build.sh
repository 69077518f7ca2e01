#!/bin/sh
# Build the simdjson candidate shim for bench/bench_json_decode.c.
# usage: bench/json_candidates/build.sh [outdir]   (default: build/h-codec-release)
# Needs libsimdjson-dev. -march=native: without it the header-only
# on-demand front end compiles for simdjson's scalar fallback kernel.
# The benchmark finds the result through
# SV_SIMDJSON_SHIM=<outdir>/libsvj_simdjson.so and skips candidate (c)
# when it is absent.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../build/h-codec-release}
mkdir -p "$out"
${CXX:-g++} -O3 -DNDEBUG -march=native -std=c++17 -shared -fPIC -Wall -Wextra \
	"$here/simdjson_shim.cc" -lsimdjson -o "$out/libsvj_simdjson.so"
echo "$out/libsvj_simdjson.so"
