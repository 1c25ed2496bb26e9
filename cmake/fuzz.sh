#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (clang, AddressSanitizer + UBSan) in build-fuzz/
# and runs each for SECONDS (default 60) on its corpus: the seeds of tests/fuzz/corpus/TARGET,
# the real files of ../shared/data where they fit, and what earlier runs added
# (build-fuzz/corpus/TARGET, kept between runs). Prints executions and coverage per target;
# exits 1 when a target finds a crash (its reproducer is left in build-fuzz/findings/TARGET).
# Needs clang (apt-get install clang); not part of cmake/setup.sh. docs/robustness.md.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
jobs="$(nproc)"
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (apt-get install clang)" >&2; exit 2; }

[ -f build-fuzz/CMakeCache.txt ] ||
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DBUBBLESIM_FUZZ=ON -DBUBBLESIM_BUILD_TESTS=OFF -DBUBBLESIM_BUILD_BENCHMARKS=OFF \
    -DBUBBLESIM_WITH_CUDA=OFF >/dev/null
cmake --build build-fuzz -j "$jobs" --target kineto_trace_fuzz profiler_trace_fuzz \
  schedule_csv_fuzz model_yaml_fuzz cluster_yaml_fuzz study_yaml_fuzz profile_h5_fuzz \
  results_h5_fuzz options_fuzz

shared=../shared/data
status=0
printf '%-16s %12s %10s %8s %8s %s\n' target executions exec/s cov corpus result
for target in kineto_trace profiler_trace schedule_csv model_yaml cluster_yaml study_yaml \
              profile_h5 results_h5 options; do
  corpus="build-fuzz/corpus/$target"
  findings="build-fuzz/findings/$target"
  mkdir -p "$corpus" "$findings"
  cp -n tests/fuzz/corpus/"$target"/* "$corpus"/ 2>/dev/null || true
  if [ "$target" = kineto_trace ] && [ -d "$shared/traces" ]; then
    cp -n "$shared"/traces/*.json* "$corpus"/ 2>/dev/null || true
  fi
  max_len=65536
  case "$target" in kineto_trace|profiler_trace) max_len=1048576 ;; esac
  log="build-fuzz/findings/$target.log"
  result=ok
  # libhdf5 asks for absurd sizes on damaged files (it copes with a null) and leaks on its error
  # paths: neither is bubblesim's.
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
  LSAN_OPTIONS=suppressions=tests/fuzz/lsan.supp \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "build-fuzz/tests/fuzz/${target}_fuzz" "$corpus" -max_total_time="$seconds" \
      -dict="tests/fuzz/dict/$target.dict" -max_len="$max_len" -timeout=20 \
      -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$findings/" >"$log" 2>&1 ||
    { result="CRASH (see $log)"; status=1; }
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1 || true)
  per_second=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1 || true)
  cov=$( (grep -o 'cov: [0-9]*' "$log" || true) | tail -1 | cut -d' ' -f2)
  files=$(find "$corpus" -type f | wc -l)
  printf '%-16s %12s %10s %8s %8s %s\n' "$target" "${executions:-?}" "${per_second:-?}" \
    "${cov:-?}" "$files" "$result"
done
exit "$status"
