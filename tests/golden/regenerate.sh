#!/usr/bin/env bash
# Rewrites the golden files (tests/golden/expected/) from a build's `bubblesim`, for a change of
# output that is intended:  tests/golden/regenerate.sh [BUILD_DIR] [NAME...]
# Then read `git diff tests/golden` and commit the expected files with the change that made them.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
[ $# -gt 0 ] && shift
exec "$here/check.sh" "$build/bubblesim" "$build/tests/bubblesim_h5_dump" "$here/../.." \
  "$here/../../../shared/data" --update "$@"
