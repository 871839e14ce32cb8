#!/bin/bash
# The traversal-order study on its own graph sets (issue #28, items 5 and 7): the study's
# spec, runs/configs/wang2022-order-study.toml, as a simulate-only sweep: the three generated
# families (enas-cnn, enas-rnn, nmt; seeds 0-31 each, docs/models.md), 3 devices, the
# study's six orders (dfs-post is skipped as topo-lifo-rev's twin), the rl placer at
# rl_preset = "wang2022" with 10 seeds beside greedy-eft, contiguous, balanced and refine
# (docs/placers.md). Two shards at a time on the 2 cores, merged into study.h5. Then the
# ablation: the first 16 graphs of each family with the study's own policy inputs
# (rl_preset = "wang2022-placeto"), the heuristics beside it again. Then the tables and
# figures (report/, report-placeto/). The HDF5 files go to DATA_DIR, outside git.
# Usage: run.sh BUILD_DIR DATA_DIR   (a finished shard or merged file is kept)
set -euo pipefail
I=$(realpath "$1")/runs/interplace
HERE=$(dirname "$(realpath "$0")")
SPEC=$HERE/../../runs/configs/wang2022-order-study.toml
PY=$HERE/../../.venv/bin/python
mkdir -p "$2" && cd "$2"
export OMP_NUM_THREADS=1

# study NAME [OVERRIDES...]: two shards in parallel, then NAME.h5 merged from them.
study() {
  local name=$1; shift
  [ -f "$name.h5" ] && { echo "$name.h5 exists: kept"; return; }
  for i in 0 1; do
    "$I" sweep "$SPEC" "$@" --shard "$i/2" --out "$name-$i.h5" --resume > "$name-$i.log" 2>&1 &
  done
  wait
  "$I" merge "$name-0.h5" "$name-1.h5" -o "$name.h5"
}
study study
study placeto 'models=["enas-cnn:0..15","enas-rnn:0..15","nmt:0..15"]' \
  rl_preset=wang2022-placeto

report() {
  rm -rf "$HERE/$1"
  "$PY" -m interplace_analysis order-study "${@:2}" --out "$HERE/$1" --quiet
  rm -f "$HERE/$1"/tables/*.tex "$HERE/$1"/tables/*.md  # report.md has them
}
report report study.h5
report report-placeto placeto.h5
