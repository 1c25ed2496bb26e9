#!/usr/bin/env bash
# cmake/fuzz-hdf5.sh [SECONDS] [BUILD_DIR]: long runs of the HDF5 readers' fuzz targets
# (profile_h5, results_h5) without the guard, at about ten times the guarded rate.
#
# As users run them, the readers first check every file in a forked child (analysis/hdf5_guard.h):
# about 45 ms an input in the sanitizer build, and mutated files that send libhdf5 into an endless
# loop cost the guard's whole time limit, so the guarded targets manage 1-20 inputs a second (a
# week for 10 million). Here the guard is off (BUBBLESIM_HDF5_GUARD=0) and libFuzzer runs in its
# fork mode, going on past crashes, timeouts and out-of-memory ends (libhdf5 has all three on
# damaged files); each target runs SECONDS (default 600). Then every input it saved is triaged:
#  - run without the guard, the first frame of the sanitizer's report (or of the timeout's stack)
#    outside the sanitizer runtime and libc, and of the report's "allocated by" stack where it
#    has one, must be in libhdf5: a frame of bubblesim's code there is a finding (the guard's
#    child would have hidden it as "libhdf5 crashed");
#  - the first input of each kind of report (its error and first frames) is run again with the
#    guard on, and must end cleanly (refused in one line, or read): a crash there is bubblesim's.
# Inputs that run cleanly on their own, without the state earlier inputs left in libhdf5, are
# kept and counted ("alone"). Prints executions, exec/s, saved inputs, how many were libhdf5's
# and in how many kinds per target, and exits 1 with the inputs that were not (left in
# BUILD_DIR/findings/TARGET-fast/). BUILD_DIR is a build configured with -DBUBBLESIM_FUZZ=ON
# (default build-fuzz, as cmake/fuzz.sh makes it); the corpus is BUILD_DIR/corpus/TARGET, shared
# with cmake/fuzz.sh. FUZZ_HDF5_TARGETS="profile_h5" runs one of the two. docs/robustness.md.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-600}"
build="${2:-build-fuzz}"
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz-hdf5.sh: SECONDS must be a whole number > 0, got '$seconds'" >&2; exit 2; }
grep -q '^BUBBLESIM_FUZZ:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null ||
  { echo "fuzz-hdf5.sh: $build is not configured with -DBUBBLESIM_FUZZ=ON (run cmake/fuzz.sh once)" >&2; exit 2; }
read -r -a targets <<<"${FUZZ_HDF5_TARGETS:-profile_h5 results_h5}"
for target in "${targets[@]}"; do
  case "$target" in profile_h5|results_h5) ;; *) echo "fuzz-hdf5.sh: unknown target '$target' in FUZZ_HDF5_TARGETS (profile_h5, results_h5)" >&2; exit 2 ;; esac
done
cmake --build "$build" --target "${targets[@]/%/_fuzz}"
root="$PWD"
build_abs="$(cd "$build" && pwd)"
export ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# The frames of a report's stack (from line $2 of file $1 on) outside the sanitizer runtime and
# libc, without their addresses and build ids, one a line. bubblesim's code carries debug
# information: its frames name their source line. Frames of the fuzz binary without one (it
# names the binary instead) are the runtime's: libFuzzer, and the interceptors of malloc,
# memcpy, strdup and the like, whatever their names.
frames() {
  sed -n "$2,\$p" "$1" | sed -n '/^ *#[0-9]* /,/^$/p' | grep -E '^ +#[0-9]+ ' |
    grep -vE '_fuzz\+0x[0-9a-f]+\)|__interceptor_|__asan|__sanitizer|__ubsan|libc\.so|/libc-|csu/|sysdeps/' |
    sed -E 's/^ +#[0-9]+ 0x[0-9a-f]+ +//; s/ \(BuildId: [0-9a-f]+\)//' || true
}

# "libhdf5" when the first of those frames is libhdf5's, "no stack", or "other: FRAME".
first_frame() {
  local frame
  frame=$(frames "$1" "$2" | head -1)
  case "$frame" in *libhdf5*) echo libhdf5 ;; "") echo "no stack" ;; *) echo "other: $frame" ;; esac
}

status=0
printf '%-11s %12s %8s %6s %8s %6s %6s %s\n' target executions exec/s saved libhdf5 kinds alone result
for target in "${targets[@]}"; do
  fuzzer="$build_abs/tests/fuzz/${target}_fuzz"
  corpus="$build_abs/corpus/$target" findings="$build_abs/findings/$target-fast"
  work="$build_abs/work/$target-fast" log="$build_abs/findings/$target-fast.log"
  mkdir -p "$corpus"
  rm -rf "$findings" "$work" && mkdir -p "$findings" "$work"
  cp -n tests/fuzz/corpus/"$target"/* "$corpus"/ 2>/dev/null || true
  (cd "$work" && BUBBLESIM_HDF5_GUARD=0 "$fuzzer" "$corpus" -fork=1 -ignore_crashes=1 \
     -ignore_timeouts=1 -ignore_ooms=1 -max_total_time="$seconds" -timeout=1 -rss_limit_mb=2048 \
     -dict="$root/tests/fuzz/dict/$target.dict" -artifact_prefix="$findings/" >"$log" 2>&1) || true
  executions=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
  saved=0 ours=0 alone=0
  declare -A kinds=()
  for input in "$findings"/*; do
    [ -f "$input" ] || continue
    saved=$((saved + 1))
    # Without the guard (a second's time limit, no memory thread): where it fails.
    (cd "$work" && BUBBLESIM_HDF5_GUARD=0 timeout 120 "$fuzzer" -timeout=1 -rss_limit_mb=0 \
       "$input" >"$input.report" 2>&1) || true
    verdict=$(first_frame "$input.report" 1)
    allocated=$(grep -n -m1 'allocated by thread' "$input.report" | cut -d: -f1 || true)
    if [ "$verdict" = libhdf5 ] && [ -n "$allocated" ]; then verdict=$(first_frame "$input.report" "$allocated"); fi
    # No report: the input ran cleanly on its own (its crash needed the state that earlier
    # inputs had left in libhdf5 in the fuzzing process). Counted, kept, not a finding.
    if [ "$verdict" = "no stack" ] && ! grep -qE 'ERROR: |ALARM: ' "$input.report"; then
      alone=$((alone + 1)); continue
    fi
    kind="$( (grep -m1 -oE 'ERROR: [A-Za-z]+: [a-z-]+|ALARM: working' "$input.report" || true); frames "$input.report" 1 | head -3)"
    # With the guard on (from 0.5 s, not 5: a loop in libhdf5 is refused sooner), once a kind.
    if [ "$verdict" = libhdf5 ] && [ -z "${kinds[$kind]:-}" ]; then
      kinds[$kind]=1
      (cd "$work" && BUBBLESIM_HDF5_GUARD=0.5 timeout 120 "$fuzzer" -rss_limit_mb=0 "$input" \
         >"$input.guarded" 2>&1) || verdict="crashes with the guard on"
    fi
    if [ "$verdict" = libhdf5 ]; then
      rm -f "$input" "$input.guarded" "$input.report"
    else
      ours=$((ours + 1)); status=1
      echo "$target: $input: $verdict" >&2
    fi
  done
  result=ok
  [ "$ours" = 0 ] || result="$ours NOT libhdf5's (see $findings)"
  [ -z "$(ls -A "$work")" ] || { result="WROTE FILES where it ran (see $work)"; status=1; }
  elapsed=$(grep -oE 'time: [0-9]+s' "$log" | tail -1 | grep -oE '[0-9]+' || echo "$seconds")
  printf '%-11s %12s %8s %6s %8s %6s %6s %s\n' "$target" "${executions:-?}" \
    "$((${executions:-0} / (elapsed > 0 ? elapsed : 1)))" "$saved" "$((saved - ours - alone))" \
    "${#kinds[@]}" "$alone" "$result"
done
exit "$status"
