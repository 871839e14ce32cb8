#!/usr/bin/env bash
# Issue #34: gpt-mini at 5,000 steps for 1F1B, pairwise and 3-wise (seeds 1-3) and seed 3 of
# e2e and local, beside the
# e2e and local runs of results/2026-12-05-interlocking-seed2 (seeds 1 and 2), so that every
# strategy of the study has a transformer trained 5x longer than the 1,000-step study.
#   [SEEDS_MORE=4] bash results/2026-12-05-interlocking-gpt5000/run.sh BUILD OUT_DIR SEED2_OUT_DIR
# SEED2_OUT_DIR: where results/2026-12-05-interlocking-seed2/run.sh wrote gpt-5000.h5 (and
# results/2026-12-04-interlocking-converge/run.sh its gpt-1000.h5, the 1,000-step study).
# About 1 h on the 2-core machine (4 ranks, threads_per_rank=1).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
build=${1:-$root/build}
out=${2:-$here/out}
seed2=${3:-$root/results/2026-12-05-interlocking-seed2/out}
previous=${4:-$root/results/2026-12-04-interlocking-converge/out}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
python=${PYTHON:-$root/.venv/bin/python}

mpirun --oversubscribe -np 4 "$build/runs/interplace" sweep \
  "$root/runs/configs/gomez2022-gpt-small.toml" strategies=global,pairwise,nwise:3 \
  pipelines=1f1b steps=4999 eval_samples=2048 seeds=1,2,3 threads_per_rank=1 \
  --out "$out/gpt-5000-others.h5"
mpirun --oversubscribe -np 4 "$build/runs/interplace" sweep \
  "$root/runs/configs/gomez2022-gpt-small.toml" strategies=global,local pipelines=e2e \
  steps=4999 eval_samples=2048 seeds=3 threads_per_rank=1 --out "$out/gpt-5000-s3.h5"

cd "$root/analysis"
"$python" -m interplace_analysis strategies "$seed2/gpt-5000.h5" "$out/gpt-5000-s3.h5" "$out/gpt-5000-others.h5" \
  --step-times "$root/results/2026-12-01-interlocking/step_times.csv" \
  --out "$here/report" --quiet --title "gpt-mini, every strategy at 5000 steps, seeds 1-3"
"$python" "$root/results/2026-12-05-interlocking-seed2/gpt_curve.py" "$previous/gpt-1000.h5" \
  "$seed2/gpt-5000.h5" "$out/gpt-5000-s3.h5" "$out/gpt-5000-others.h5" > "$here/gpt_curve.md"

# Further seeds of every strategy (SEEDS_MORE, e.g. 4 or 4,5), and the report over all of them.
if [ -n "${SEEDS_MORE:-}" ]; then
  cd "$root"
  mpirun --oversubscribe -np 4 "$build/runs/interplace" sweep \
    "$root/runs/configs/gomez2022-gpt-small.toml" strategies=global,pairwise,nwise:3 \
    pipelines=1f1b steps=4999 eval_samples=2048 seeds="$SEEDS_MORE" threads_per_rank=1 \
    --out "$out/gpt-5000-more-others.h5" --resume
  mpirun --oversubscribe -np 4 "$build/runs/interplace" sweep \
    "$root/runs/configs/gomez2022-gpt-small.toml" strategies=global,local pipelines=e2e \
    steps=4999 eval_samples=2048 seeds="$SEEDS_MORE" threads_per_rank=1 \
    --out "$out/gpt-5000-more.h5" --resume
  cd "$root/analysis"
  "$python" -m interplace_analysis strategies "$seed2/gpt-5000.h5" "$out/gpt-5000-s3.h5" \
    "$out/gpt-5000-others.h5" "$out/gpt-5000-more.h5" "$out/gpt-5000-more-others.h5" \
    --step-times "$root/results/2026-12-01-interlocking/step_times.csv" \
    --out "$here/report-seeds1-$(echo "$SEEDS_MORE" | tr , '\n' | tail -1)" --quiet \
    --title "gpt-mini, every strategy at 5000 steps, seeds 1-$(echo "$SEEDS_MORE" | tr , '\n' | tail -1)"
fi
