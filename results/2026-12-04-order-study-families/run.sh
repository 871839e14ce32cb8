#!/bin/bash
# The traversal-order study on its own graph sets (issue #28, item 5): the three generated
# families (enas-cnn, enas-rnn, nmt; seeds 0-31 each, docs/models.md) through
# `order-study --preset wang2022` (3 devices, the study's six orders of which the distinct
# ones run, 10 seeds, 50 episodes; docs/placers.md), with the heuristics recorded beside rl.
# Six order-study files (each family in two halves of 16 graphs), two at a time on the
# 2 cores. Then the ablation: the same on the first 16 graphs of each family with the
# study's own policy inputs (`--rl-features placeto`) instead of the lookahead. Then the
# tables and figures (report/, report-placeto/). The HDF5 files (~0.5 MB each) go to
# DATA_DIR, outside git. Usage: run.sh BUILD_DIR DATA_DIR
set -euo pipefail
I=$(realpath "$1")/runs/interplace
HERE=$(dirname "$(realpath "$0")")
PY=$HERE/../../.venv/bin/python
mkdir -p "$2" && cd "$2"
export OMP_NUM_THREADS=1

# Lines "FILE MODELS [OPTIONS...]", run two at a time; a finished FILE.h5 is kept.
studies() {
  xargs -P 2 -L 1 sh -c '
    [ -f "$0.h5" ] && { echo "$0.h5 exists: kept"; exit 0; }
    rm -f "$0.h5.part"
    f=$0 m=$1; shift
    '"$I"' order-study --models "$m" --preset wang2022 \
      --baselines greedy-eft,contiguous,balanced,refine "$@" --out "$f.h5.part" > "$f.log" 2>&1 &&
    mv "$f.h5.part" "$f.h5" && echo "$f.h5 done"'
}
for family in enas-cnn enas-rnn nmt; do
  echo "$family-a $(seq -s, -f "$family:%g" 0 15)"
  echo "$family-b $(seq -s, -f "$family:%g" 16 31)"
done | studies
for family in enas-cnn enas-rnn nmt; do
  echo "placeto-$family $(seq -s, -f "$family:%g" 0 15) --rl-features placeto"
done | studies

report() {
  rm -rf "$HERE/$1"
  "$PY" -m interplace_analysis order-study "${@:2}" --out "$HERE/$1" --quiet
  rm -f "$HERE/$1"/tables/*.tex "$HERE/$1"/tables/*.md  # report.md has them
}
report report enas-cnn-?.h5 enas-rnn-?.h5 nmt-?.h5
report report-placeto placeto-*.h5
