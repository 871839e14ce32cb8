#!/usr/bin/env bash
# bench/compare_losses.py judges the first --strict-steps steps to rounding and the rest to
# the trajectory: a difference of 1e-3 fails in a strict step and passes after them, a run
# that leaves the trajectory (10%) or turns non-finite fails, and a twin with other steps
# is unreadable input (2).
#   test_compare_losses.sh PYTHON COMPARE_LOSSES
set -uo pipefail
python=$1 compare=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
write() {  # write FILE LOSS...: one step record per loss, then a summary line
  local file=$1 step=0
  shift
  : > "$file"
  for loss in "$@"; do
    echo "{\"step\": $step, \"loss\": $loss}" >> "$file"
    step=$((step + 1))
  done
  echo '{"summary": true}' >> "$file"
}
write "$dir/ref" 2.5 2.4 2.3 2.2
write "$dir/late" 2.5 2.4 2.3023 2.2
write "$dir/early" 2.5 2.4024 2.3 2.2
write "$dir/off" 2.5 2.4 2.3 2.42
write "$dir/nan" 2.5 2.4 2.3 NaN
write "$dir/short" 2.5 2.4 2.3
failed=0
expect() {  # expect STATUS ARGS...
  local want=$1
  shift
  "$python" "$compare" "$@" > "$dir/out" 2>&1
  local got=$?
  if ((got != want)); then
    echo "FAIL: compare_losses $* exited $got, expected $want"
    cat "$dir/out"
    failed=1
  fi
}
expect 0 "$dir/ref" "$dir/late" --strict-steps 2
expect 1 "$dir/ref" "$dir/late"
expect 1 "$dir/ref" "$dir/early" --strict-steps 2
expect 1 "$dir/ref" "$dir/off" --strict-steps 2
expect 1 "$dir/ref" "$dir/nan" --strict-steps 2
expect 0 "$dir/ref" "$dir/late" --strict-steps 2 --twin "$dir/late"
expect 2 "$dir/ref" "$dir/late" --strict-steps 2 --twin "$dir/short"
expect 2 "$dir/ref" "$dir/late" --strict-steps 0
grep -q "twin's relative difference" <("$python" "$compare" "$dir/ref" "$dir/late" \
  --strict-steps 2 --twin "$dir/late") || { echo "FAIL: no twin column"; failed=1; }
exit $failed
