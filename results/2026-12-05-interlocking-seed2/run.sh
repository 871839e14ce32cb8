#!/usr/bin/env bash
# Issue #34 on the 2-core machine, continued from results/2026-12-04-interlocking-converge/
# (whose run.sh made seed 1 of every strategy and e2e's seeds 1 and 2):
#  1. seed 2 of pairwise, 1F1B, local and 3-wise on gomez2022-converge.toml's schedule
#     (K = 4 ranks on 2 cores, 20-35 min each beside other work);
#  2. comparable step times for K = 4 separate cores (step_times.sh: the simulator on the
#     profiles measured one rank per core), for the time-to-accuracy table;
#  3. gpt-mini trained 5x longer than the 12-04 run (5,000 steps instead of 1,000), e2e
#     and local, seeds 1 and 2: does the 4-layer model trained end to end overtake local's
#     one-layer head given the steps?
# Then the strategies report over both sessions' resnet files and over the GPT file.
#   bash results/2026-12-05-interlocking-seed2/run.sh BUILD OUT_DIR PREVIOUS_OUT_DIR
# PREVIOUS_OUT_DIR: where results/2026-12-04-interlocking-converge/run.sh wrote its files.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
build=${1:-$root/build}
out=${2:-$here/out}
previous=${3:-$root/results/2026-12-04-interlocking-converge/out}
mkdir -p "$out"
interplace=$build/runs/interplace
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
python=${PYTHON:-$root/.venv/bin/python}
converge=$root/runs/configs/gomez2022-converge.toml

mpirun --oversubscribe -np 4 "$interplace" sweep "$converge" strategies=pairwise seeds=2 \
  threads_per_rank=1 --out "$out/pairwise-s2.h5"
mpirun --oversubscribe -np 4 "$interplace" sweep "$converge" strategies=global,local,nwise:3 \
  pipelines=1f1b seeds=2 threads_per_rank=1 --out "$out/others-s2.h5"
mpirun --oversubscribe -np 4 "$interplace" sweep "$root/runs/configs/gomez2022-gpt-small.toml" \
  strategies=global,local pipelines=e2e steps=4999 eval_samples=2048 seeds=1,2 \
  threads_per_rank=1 --out "$out/gpt-5000.h5"
bash "$here/step_times.sh" "$build" > "$here/step_times.csv"

cd "$root/analysis"
"$python" -m interplace_analysis strategies "$previous/e2e-k1.h5" "$previous/pairwise-s1.h5" \
  "$previous/others-s1.h5" "$out/pairwise-s2.h5" "$out/others-s2.h5" \
  --step-times "$here/step_times.csv" --out "$here/report-resnet" --quiet \
  --title "resnet20 x0.5 on gomez2022-converge's schedule, seeds 1 and 2, K = 4"
"$python" -m interplace_analysis strategies "$out/gpt-5000.h5" --out "$here/report-gpt" \
  --step-times "$root/results/2026-12-01-interlocking/step_times.csv" --quiet \
  --title "gpt-mini, e2e and local at 5000 steps"
"$python" "$root/results/2026-12-04-interlocking-converge/curve.py" "$out/pairwise-s2.h5" \
  "$out/others-s2.h5" > "$here/curve.md"
"$python" "$here/gpt_curve.py" "$previous/gpt-1000.h5" \
  "$out/gpt-5000.h5" > "$here/gpt_curve.md"
