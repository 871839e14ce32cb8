#!/bin/bash
# The traversal-order study's grouped families again, with the placer that holds its own
# there (issue #28): runs/configs/wang2022-order-study.toml restricted to enas-rnn:0..31 and
# nmt:0..31 (the families whose graphs rl places as groups), the rl placer at
# rl_preset = "wang2022-fine" (the study's settings with coarse to fine:
# docs/placers.md#coarse-to-fine) with 3 seeds, the heuristics beside it once. Two shards at
# a time on the 2 cores per family, merged into fine.h5 (enas-rnn) and fine-nmt.h5 (in
# DATA_DIR, outside git); the report of both in report/. The comparison, the one-level study
# of results/2026-12-04-order-study-families on the same graphs and seeds: one_level.py.
# Usage: run.sh BUILD_DIR DATA_DIR   (a finished shard or merged file is kept)
set -euo pipefail
I=$(realpath "$1")/runs/interplace
HERE=$(dirname "$(realpath "$0")")
SPEC=$HERE/../../runs/configs/wang2022-order-study.toml
PY=$HERE/../../.venv/bin/python
mkdir -p "$2" && cd "$2"
export OMP_NUM_THREADS=1

# study NAME FAMILY: two shards in parallel, then NAME.h5 merged from them.
study() {
  local name=$1 family=$2
  [ -f "$name.h5" ] && { echo "$name.h5 exists: kept"; return; }
  for i in 0 1; do
    "$I" sweep "$SPEC" "models=[\"$family:0..31\"]" rl_preset=wang2022-fine seeds=1,2,3 \
      --shard "$i/2" --out "$name-$i.h5" --resume > "$name-$i.log" 2>&1 &
  done
  wait
  "$I" merge "$name-0.h5" "$name-1.h5" -o "$name.h5"
}
study fine enas-rnn
study fine-nmt nmt

rm -rf "$HERE/report"
"$PY" -m interplace_analysis order-study fine.h5 fine-nmt.h5 --out "$HERE/report" --quiet
rm -f "$HERE/report"/tables/*.tex "$HERE/report"/tables/*.md  # report.md has them
