#!/usr/bin/env bash
# Makes this folder's tables: every pipeline of the registry on ResNet-20 and gpt-mini,
# K = 2 and 4 ranks (mpirun -np K on this machine's 2 cores: K = 4 shares them), 5 rounds
# of runs/configs/every-pipeline.toml per K, interleaved (each round runs every
# configuration once and measures its own profile, so each prediction is of that
# round's profile), then tables.py (measured against simulated step and peak memory, and
# the bubble at unit costs against the published formulas).
#   results/2026-12-07-every-pipeline/run.sh [BUILD_DIR] [WORK_DIR] [ROUNDS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
work=${2:-$(mktemp -d)}
rounds=${3:-5}
bin=$build/runs/interplace
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
"$root/scripts/machine-line" > "$here/machine.txt"
for round in $(seq 1 "$rounds"); do
  for k in 2 4; do
    mpirun --oversubscribe -np "$k" "$bin" sweep "$root/runs/configs/every-pipeline.toml" \
      devices="$k" --out "$work/p$k-r$round.h5"
  done
done
"$root/.venv/bin/python" "$here/tables.py" --grid "$build/tests/docs/schedule_grid" \
  "$work"/p*-r*.h5 > "$here/tables.md"
echo "tables in $here; files in $work"
