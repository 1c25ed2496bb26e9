#!/usr/bin/env bash
# cmake/fuzz.sh [SECONDS] [BUILD_DIR]: builds the libFuzzer targets of tests/fuzz (clang,
# AddressSanitizer + UBSan) and runs each for SECONDS (default 60) on its corpus: the seeds of
# tests/fuzz/corpus/TARGET, the real files of ../shared/data where they fit, and what earlier
# runs added (BUILD_DIR/corpus/TARGET, kept between runs). BUILD_DIR defaults to build-fuzz
# (configured here: Release, fuzz targets only); another one must be configured with
# -DBUBBLESIM_FUZZ=ON (cmake/test.sh's build-asan is). FUZZ_PARALLEL=N runs N targets at once
# (default 1). Prints executions and coverage per target; exits 1 when a target finds a crash
# (its reproducer is left in BUILD_DIR/findings/TARGET) or leaves files in its working folder
# (BUILD_DIR/work/TARGET). Needs clang. docs/robustness.md.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
build="${2:-build-fuzz}"
parallel="${FUZZ_PARALLEL:-1}"
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (apt-get install clang)" >&2; exit 2; }
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: SECONDS must be a whole number > 0, got '$seconds'" >&2; exit 2; }
[[ "$parallel" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: FUZZ_PARALLEL must be a whole number > 0, got '$parallel'" >&2; exit 2; }

targets=(kineto_trace profiler_trace schedule_csv lowered_schedule model_yaml cluster_yaml
         study_yaml runs_yaml calibration_yaml profile_h5 results_h5 options profile_values results_values)

if [ ! -f "$build/CMakeCache.txt" ]; then
  [ "$build" = build-fuzz ] || { echo "fuzz.sh: $build is not configured (cmake -DBUBBLESIM_FUZZ=ON)" >&2; exit 2; }
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DBUBBLESIM_FUZZ=ON -DBUBBLESIM_BUILD_TESTS=OFF -DBUBBLESIM_BUILD_BENCHMARKS=OFF \
    -DBUBBLESIM_WITH_CUDA=OFF >/dev/null
fi
grep -q '^BUBBLESIM_FUZZ:BOOL=ON' "$build/CMakeCache.txt" ||
  { echo "fuzz.sh: $build is not configured with -DBUBBLESIM_FUZZ=ON" >&2; exit 2; }
cmake --build "$build" -j "$(nproc)" --target "${targets[@]/%/_fuzz}"

shared=../shared/data
root="$PWD"
build_abs="$(cd "$build" && pwd)"

# Runs one target in an empty working folder of its own ($build/work/TARGET: a target that
# writes files where it runs, as options_fuzz once did through an abbreviated --out, is a
# finding, not litter in the checkout); its log is $build/findings/TARGET.log, 0 or 1 (crash)
# in TARGET.status.
run_target() {
  local target="$1" corpus="$build_abs/corpus/$1" findings="$build_abs/findings/$1"
  local work="$build_abs/work/$1" max_len=65536
  mkdir -p "$corpus" "$findings"
  rm -rf "$work" && mkdir -p "$work"
  cp -n tests/fuzz/corpus/"$target"/* "$corpus"/ 2>/dev/null || true
  if [ "$target" = kineto_trace ] && [ -d "$shared/traces" ]; then
    cp -n "$shared"/traces/*.json* "$corpus"/ 2>/dev/null || true
  fi
  case "$target" in kineto_trace|profiler_trace) max_len=1048576 ;; esac
  # A unit over 60 s is a hang: the slowest sound inputs (compare -s all in options_fuzz) take
  # about 4 s on a free core, and over 20 s on a starved one (nice 19 on a loaded machine).
  # libhdf5 asks for absurd sizes on damaged files (it copes with a null) and leaks on its error
  # paths: neither is bubblesim's.
  (cd "$work" &&
    ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
    LSAN_OPTIONS=suppressions="$root/tests/fuzz/lsan.supp" \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      "$build_abs/tests/fuzz/${target}_fuzz" "$corpus" -max_total_time="$seconds" \
        -dict="$root/tests/fuzz/dict/$target.dict" -max_len="$max_len" -timeout=60 \
        -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$findings/" \
        >"$findings.log" 2>&1) && echo 0 >"$findings.status" || echo 1 >"$findings.status"
}

for target in "${targets[@]}"; do
  rm -f "$build/findings/$target.status"
  while (($(jobs -rp | wc -l) >= parallel)); do wait -n || true; done
  run_target "$target" &
done
wait

status=0
printf '%-17s %12s %10s %8s %8s %s\n' target executions exec/s cov corpus result
for target in "${targets[@]}"; do
  log="$build/findings/$target.log"
  result=ok
  [ "$(cat "$build/findings/$target.status" 2>/dev/null)" = 0 ] ||
    { result="CRASH (see $log)"; status=1; }
  [ -z "$(ls -A "$build/work/$target" 2>/dev/null)" ] ||
    { result="WROTE FILES where it ran (see $build/work/$target)"; status=1; }
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1 || true)
  per_second=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1 || true)
  cov=$( (grep -o 'cov: [0-9]*' "$log" || true) | tail -1 | cut -d' ' -f2)
  files=$(find "$build/corpus/$target" -type f | wc -l)
  printf '%-17s %12s %10s %8s %8s %s\n' "$target" "${executions:-?}" "${per_second:-?}" \
    "${cov:-?}" "$files" "$result"
done
exit "$status"
