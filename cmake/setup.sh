#!/usr/bin/env bash
# README command 1: installs the Debian packages bubblesim needs (only those missing),
# configures and builds it, then runs the main job: `bubblesim compare` of every schedule on
# the embedded default example (the zero-bubble paper's 1.5B model at p = 8, m = 24).
set -euo pipefail
cd "$(dirname "$0")/.."

# clang and its sanitizer runtimes (libFuzzer among them): cmake/test.sh's sanitizer build and
# fuzzing run (docs/robustness.md); the release build stays gcc's.
packages=(g++ clang libclang-rt-dev cmake ninja-build ccache pkg-config
          libboost-graph-dev libboost-program-options-dev libboost-regex-dev libfmt-dev rapidjson-dev zlib1g-dev
          libgtest-dev libgmock-dev libbenchmark-dev coinor-libcbc-dev libyaml-cpp-dev libhdf5-dev libtbb-dev
          libopenmpi-dev openmpi-bin
          python3-h5py python3-pandas)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)"
echo
./build/bubblesim compare
