#!/usr/bin/env bash
# Issue #34 on the 2-core machine, two parts (README.md says what each found):
#  1. e2e on the convergence study's schedule (runs/configs/gomez2022-converge.toml: the
#     whole Fashion-MNIST split less a 10% validation split, 20 epochs), seeds 1 and 2, on
#     one rank (e2e computes one stage at a time, so K = 1 trains exactly what K = 4 does):
#     does the 20-epoch schedule reach the 30-epoch plateau within a point, chosen on the
#     validation split? ~25-30 min of one core per seed. Then seed 1 of pairwise, 1F1B,
#     local and 3-wise at K = 4: does every strategy reach its own plateau, in which order?
#  2. gpt-mini on the text corpus, the scaled study's five strategies at K = 4
#     (runs/configs/gomez2022-gpt-small.toml) trained 10x longer (1000 steps instead of
#     100), 3 seeds, 2048 test windows at the end: is every strategy above the majority
#     byte? 4 ranks on 2 cores, ~1 h.
# Then the strategies report of each (Holm-adjusted paired verdicts).
#   bash results/2026-12-04-interlocking-converge/run.sh build OUT_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
build=${1:-$root/build}
out=${2:-$here/out}
mkdir -p "$out"
interplace=$build/runs/interplace
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
python=${PYTHON:-$root/.venv/bin/python}

mpirun -np 1 "$interplace" sweep "$root/runs/configs/gomez2022-converge.toml" \
  strategies=global pipelines=e2e devices=1 seeds=1,2 threads_per_rank=1 \
  --out "$out/e2e-k1.h5"
# Seed 1 of the study's other strategies at K = 4 (13-18 min each, 4 ranks on 2 cores):
# pairwise, then 1F1B, local and 3-wise (GPipe, 1F1B's mathematics, not run).
mpirun --oversubscribe -np 4 "$interplace" sweep "$root/runs/configs/gomez2022-converge.toml" \
  strategies=pairwise seeds=1 threads_per_rank=1 --out "$out/pairwise-s1.h5"
mpirun --oversubscribe -np 4 "$interplace" sweep "$root/runs/configs/gomez2022-converge.toml" \
  strategies=global,local,nwise:3 pipelines=1f1b seeds=1 threads_per_rank=1 \
  --out "$out/others-s1.h5"
mpirun --oversubscribe -np 4 "$interplace" sweep "$root/runs/configs/gomez2022-gpt-small.toml" \
  steps=999 eval_samples=2048 threads_per_rank=1 --out "$out/gpt-1000.h5"

cd "$root/analysis"
"$python" -m interplace_analysis strategies "$out/e2e-k1.h5" "$out/pairwise-s1.h5" \
  "$out/others-s1.h5" --out "$here/report-resnet" --title "resnet20 x0.5 on \
gomez2022-converge's schedule: e2e (seeds 1, 2), the other strategies (seed 1)" --quiet
# Comparable step times: the 12-01 study's simulation of the same configurations for K
# separate cores from CPU-time profiles of this machine (its simulate.py).
"$python" -m interplace_analysis strategies "$out/gpt-1000.h5" --out "$here/report-gpt" \
  --step-times "$root/results/2026-12-01-interlocking/step_times.csv" \
  --title "gpt-mini, the scaled study's strategies at 1000 steps" --quiet
"$python" "$here/curve.py" "$out/e2e-k1.h5" "$out/pairwise-s1.h5" "$out/others-s1.h5" \
  > "$here/curve.md"
