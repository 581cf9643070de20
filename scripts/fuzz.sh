#!/usr/bin/env bash
# Runs every fuzz target of the module briefly (FUZZTIME each, default 5000 inputs).
# Their seed corpora already run in the normal test run; this adds a short
# coverage-guided search over the decoders that take outside input (and
# what converts their output: FuzzJobDataBudget bounds a Quartz job data
# map's params by its BLOB's size), so a crash found by a change shows up
# in CI. Every Fuzz function of a _test.go file is found by itself. A
# count, not a duration: under load the fuzzer fails a time budget that
# runs out while it is still gathering its baseline coverage. Longer runs:
# FUZZTIME=10m.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-5000x}"
status=0
while IFS=: read -r file name; do
  pkg="./$(dirname "$file")"
  echo "fuzz $pkg $name ($fuzztime)"
  if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg"; then
    status=1
  fi
done < <(grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' . | sed 's/:func /:/' | sed 's|^\./||' | sort)
exit "$status"
