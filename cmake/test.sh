#!/usr/bin/env bash
# README command 2: the whole test suite in the release build, then again in a build with
# AddressSanitizer and UndefinedBehaviorSanitizer, all but the tests labelled `breadth` (the
# same code over many configurations: tests/CMakeLists.txt); then a short fuzzing run (20 s
# per target).
# Run cmake/setup.sh once before.
#
# With clang (cmake/setup.sh installs it), the sanitizer build is one clang tree, build-asan,
# with everything also instrumented for libFuzzer (-DBUBBLESIM_FUZZ=ON): it builds both the
# sanitized test suite and the fuzz targets of tests/fuzz, which cmake/fuzz.sh then runs on
# their seed corpora, two at a time. Without clang the sanitizer suite is built with gcc and
# the fuzzing run is skipped, with a line saying so. FUZZ_SECONDS=N changes the 20 s (0: skip).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="$(nproc)"
fuzz_seconds="${FUZZ_SECONDS:-20}"
[[ "$fuzz_seconds" =~ ^[0-9]+$ ]] ||
  { echo "test.sh: FUZZ_SECONDS must be a whole number of seconds, got '$fuzz_seconds'" >&2; exit 2; }

[ -f build/CMakeCache.txt ] || cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"

sanitize=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS=-O1 -DBUBBLESIM_SANITIZE=ON
          -DBUBBLESIM_BUILD_BENCHMARKS=OFF)
if command -v clang++ >/dev/null; then
  # A tree configured with another compiler is configured afresh.
  grep -q '^CMAKE_CXX_COMPILER:.*clang' build-asan/CMakeCache.txt 2>/dev/null || rm -rf build-asan
  CC=clang CXX=clang++ cmake -S . -B build-asan -G Ninja "${sanitize[@]}" -DBUBBLESIM_FUZZ=ON \
    >/dev/null
  fuzz=1
else
  grep -q '^CMAKE_CXX_COMPILER:.*clang' build-asan/CMakeCache.txt 2>/dev/null && rm -rf build-asan
  cmake -S . -B build-asan -G Ninja "${sanitize[@]}" >/dev/null
  fuzz=0
fi
cmake --build build-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" -LE breadth

if ((fuzz == 0)); then
  echo "test.sh: clang++ not found: sanitizer suite built with gcc, no fuzzing run" \
       "(cmake/setup.sh installs clang)" >&2
elif ((fuzz_seconds > 0)); then
  FUZZ_PARALLEL="$jobs" cmake/fuzz.sh "$fuzz_seconds" build-asan
fi
