#!/usr/bin/env bash
# The golden check (issue 16): runs every command of commands.txt with the built `bubblesim` and
# compares, byte for byte, what it printed on standard output, its exit status and every file it
# wrote (HDF5 files as bubblesim_h5_dump prints them) with expected/NAME.txt.
#
#   check.sh BUBBLESIM H5DUMP SOURCE_DIR SHARED_DATA            check (CTest: golden_cli)
#   check.sh BUBBLESIM H5DUMP SOURCE_DIR SHARED_DATA --update   rewrite expected/ from this build
#   check.sh ... [--update] NAME...                             only these commands
#
# Refresh the golden files with --update (tests/golden/regenerate.sh) only when a change of output
# is intended, and say in the commit which outputs changed and why; `git diff tests/golden` shows
# exactly what did. Each command runs in a fresh directory holding the links `src` (the source
# tree) and `data` (../shared/data), so no absolute path reaches an output; standard error is kept
# only for commands named error-*, whose message is the output. A path that a command made
# absolute is written relative to its directory; times measured and the study's fingerprint (a
# hash of its absolute paths too) are replaced by placeholders.
set -u
if [ $# -lt 4 ]; then
  echo "usage: $0 BUBBLESIM H5DUMP SOURCE_DIR SHARED_DATA [--update] [NAME...]" >&2
  exit 2
fi
exe=$(realpath "$1") dump=$(realpath "$2") src=$(realpath "$3") data=$(realpath -m "$4")
# Without ../shared/data (a clone alone), the commands that read its traces are skipped, saying so.
have_data=1
[ -d "$data" ] || have_data=0
shift 4
update=0
if [ "${1:-}" = "--update" ]; then
  update=1
  shift
fi
golden="$src/tests/golden"
work=$(mktemp -d "${TMPDIR:-/tmp}/bubblesim-golden.XXXXXX")
trap 'rm -rf "$work"' EXIT
export BUBBLESIM_EXE="$exe"
bubblesim() { "$BUBBLESIM_EXE" "$@"; }
export -f bubblesim

failed=0 count=0
while IFS= read -r line; do
  case "$line" in '' | '#'*) continue ;; esac
  name=${line%%:*}
  command=${line#*: }
  if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then continue; fi
  if [ $have_data -eq 0 ] && [ "${command#*data/}" != "$command" ]; then
    echo "golden: $name skipped: no shared data at $data"
    continue
  fi
  count=$((count + 1))
  dir="$work/$name"
  mkdir -p "$dir"
  ln -s "$src" "$dir/src"
  ln -s "$data" "$dir/data"
  actual="$work/$name.txt"
  (
    cd "$dir" || exit 1
    printf '$ %s\n' "$command"
    if [ "${name#error-}" != "$name" ]; then
      bash -c "$command" 2>&1
    else
      bash -c "$command" 2>/dev/null
    fi
    printf -- '--- exit status %d\n' $?
    for file in $(find . -path ./src -prune -o -path ./data -prune -o -type f -print | sort); do
      printf -- '--- file %s\n' "${file#./}"
      case "$file" in
        *.h5) "$dump" "$file" ;;
        *) cat "$file" ;;
      esac
    done
  ) | sed "s|$dir/||g; s|$dir|.|g; s|simulations in [0-9.]* s|simulations in <seconds> s|" |
    sed '/@study_fingerprint/{n;s/".*"/"<hash of the study, with its absolute paths>"/}' >"$actual"
  expected="$golden/expected/$name.txt"
  if [ $update -eq 1 ]; then
    mkdir -p "$golden/expected"
    cp "$actual" "$expected"
  elif ! cmp -s "$actual" "$expected"; then
    echo "golden: $name differs from tests/golden/expected/$name.txt:"
    diff -u "$expected" "$actual" | head -40
    failed=$((failed + 1))
  fi
done <"$golden/commands.txt"

if [ $update -eq 1 ]; then
  echo "golden: wrote $count expected outputs to $golden/expected"
  exit 0
fi
if [ $count -eq 0 ]; then
  echo "golden: no command ran" >&2
  exit 1
fi
echo "golden: $((count - failed)) of $count commands as expected"
[ $failed -eq 0 ]
