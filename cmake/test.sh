#!/usr/bin/env bash
# README command 2: the whole test suite, twice: the release build, then a build with
# AddressSanitizer and UndefinedBehaviorSanitizer. Run cmake/setup.sh once before.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="$(nproc)"

[ -f build/CMakeCache.txt ] || cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"

cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS=-O1 \
  -DBUBBLESIM_SANITIZE=ON -DBUBBLESIM_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs"
