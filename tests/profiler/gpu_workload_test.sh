#!/usr/bin/env bash
# CTest `profiler_gpu_workload` (label gpu; `ctest -L gpu`): profiles bubblesim-workload on this
# machine's GPU and imports the result; prints the mean step time with and without the profiler
# (the overhead, for the record: no timing is asserted). Exits 77 (skipped) without a device.
# usage: gpu_workload_test.sh BUBBLESIM WORKLOAD PROBE
set -euo pipefail
bubblesim="$1" workload="$2" probe="$3"
"$probe" devices || { echo "no CUDA device: skipped"; exit 77; }
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
args=(--layers 2 --hidden 1024 --seq 512 --microbatches 4 --steps 5 --warmup 2)
"$workload" "${args[@]}" | tee "$dir/plain.txt"
"$bubblesim" profile --out "$dir" -- "$workload" "${args[@]}" | tee "$dir/profiled.txt"
ls "$dir"/bubblesim-profile.*.json >/dev/null
grep -q '"status":"ok"' "$dir"/bubblesim-profile.*.json
grep -o '"counters":{[^}]*}' "$dir"/bubblesim-profile.*.json
"$bubblesim" import "$dir"/bubblesim-profile.*.json
"$bubblesim" import "$dir"/bubblesim-profile.*.json --json > "$dir/passes.json"
# Every pass kind of stage 0 was measured.
for pass in F B W; do
  grep -q "\"pass\":\"$pass\"" "$dir/passes.json" || { cat "$dir/passes.json"; exit 1; }
done
plain="$(grep -o 'mean step time [0-9.]*' "$dir/plain.txt" | grep -o '[0-9.]*$')"
profiled="$(grep -o 'mean step time [0-9.]*' "$dir/profiled.txt" | grep -o '[0-9.]*$')"
echo "mean step time: ${plain} ms without the profiler, ${profiled} ms with it" \
  "(overhead $(awk -v a="$plain" -v b="$profiled" 'BEGIN { printf "%.2f", (b / a - 1) * 100 }') %)"
