#!/bin/bash
# Placer wall times on the largest generated graphs (issue 19's "every placer under 10 s"):
# `interplace place --model M --order topo --placer P --devices 4` at each placer's
# defaults, N runs each, one TSV line per run: the placer wall time `place` prints, the CPU
# seconds of the whole process (user+sys, graph build included: less sensitive to the load
# of a shared machine than wall time) and the load average before the run.
# Usage: placer-times.sh BUILD_DIR [N [PLACERS]] > times.tsv (PLACERS: space-separated, by
# default every placer)
set -euo pipefail
I=$(realpath "$1")/runs/interplace
N=${2:-3}
PLACERS=${3:-contiguous stages greedy-eft balanced refine round-robin random rl}
printf 'model\tplacer\trun\tplacer_wall\tprocess_cpu_s\tload_1min\tresult\n'
CPU=$(mktemp)
trap 'rm -f "$CPU"' EXIT
for m in nmt:13 enas-rnn:9 enas-cnn:0; do
  for p in $PLACERS; do
    for r in $(seq 1 "$N"); do
      load=$(cut -d' ' -f1 /proc/loadavg)
      out=$(/usr/bin/time -o "$CPU" -f '%U %S' \
        "$I" place --model "$m" --order topo --placer "$p" --devices 4 2>&1 || true)
      # The last line: time writes "Command exited with non-zero status" before it.
      cpu=$(tail -n 1 "$CPU" | awk '{printf "%.2f", $1 + $2}')
      wall=$(sed -n 's/^placer wall time: //p' <<<"$out")
      result=$(grep -E '^rl: |^interplace: error' <<<"$out" | head -1 | tr '\t' ' ' || true)
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$m" "$p" "$r" "${wall:--}" "$cpu" "$load" "$result"
    done
  done
done
