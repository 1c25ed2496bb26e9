#!/usr/bin/env bash
# CTest `profiler_gpu_workload` (label gpu): profiles bubblesim-workload on this machine's GPUs
# and imports the result. Exits 77 (skipped) without a CUDA device.
# usage: gpu_workload_test.sh BUBBLESIM WORKLOAD PROBE
set -euo pipefail
bubblesim="$1" workload="$2" probe="$3"
"$probe" devices || { echo "no CUDA device: skipped"; exit 77; }
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
"$bubblesim" profile --out "$dir" -- "$workload" --layers 2 --hidden 1024 --seq 512 \
  --microbatches 4 --steps 2 --warmup 1
ls "$dir"/bubblesim-profile.*.json >/dev/null
grep -q '"status":"ok"' "$dir"/bubblesim-profile.*.json
"$bubblesim" import "$dir"/bubblesim-profile.*.json --json > "$dir/passes.json"
# Every pass kind of stage 0 was measured.
for pass in F B W; do
  grep -q "\"pass\":\"$pass\"" "$dir/passes.json" || { cat "$dir/passes.json"; exit 1; }
done
echo "ok"
