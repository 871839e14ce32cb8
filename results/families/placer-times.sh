#!/bin/bash
# Placer wall times on the largest generated graphs (issue 19's "every placer under 10 s"):
# `interplace place --model M --order topo --placer P --devices 4` at each placer's
# defaults, N runs each, one TSV line per run with the load average before it.
# Usage: placer-times.sh BUILD_DIR [N] > times.tsv
set -euo pipefail
I=$(realpath "$1")/runs/interplace
N=${2:-3}
printf 'model\tplacer\trun\tplacer_wall\tload_1min\tresult\n'
for m in nmt:13 enas-rnn:9 enas-cnn:0; do
  for p in contiguous stages greedy-eft balanced refine round-robin random rl; do
    for r in $(seq 1 "$N"); do
      load=$(cut -d' ' -f1 /proc/loadavg)
      out=$("$I" place --model "$m" --order topo --placer "$p" --devices 4 2>&1 || true)
      wall=$(sed -n 's/^placer wall time: //p' <<<"$out")
      result=$(grep -E '^rl: |^interplace: error' <<<"$out" | head -1 | tr '\t' ' ' || true)
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$m" "$p" "$r" "${wall:--}" "$load" "$result"
    done
  done
done
