#!/usr/bin/env bash
# expect_failure.sh SECONDS REGEX COMMAND...: passes when COMMAND fails (a non-zero exit) within SECONDS
# and its output (stdout and stderr) matches the extended REGEX; a command still running after SECONDS
# (a hang) is killed and fails the test.
set -uo pipefail
limit=$1 pattern=$2
shift 2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$(date +%s.%N)
timeout --kill-after=5 "$limit" "$@" >"$log" 2>&1
rc=$?
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
cat "$log"
echo "expect_failure.sh: exit $rc after $took s"
if ((rc == 124 || rc == 137)) && ((${took%.*} >= limit)); then
  echo "expect_failure.sh: FAILED: still running after $limit s (a hang)"
  exit 1
fi
if ((rc == 0)); then
  echo "expect_failure.sh: FAILED: the command succeeded"
  exit 1
fi
if ! grep -Eq "$pattern" "$log"; then
  echo "expect_failure.sh: FAILED: no line matches: $pattern"
  exit 1
fi
echo "expect_failure.sh: failed as expected, with: $(grep -E -m1 -o "$pattern" "$log")"
