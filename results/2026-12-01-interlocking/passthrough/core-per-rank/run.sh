#!/bin/bash
# The pass-through check with the measured rank on a core of its own (check.toml says why):
# CPU-time profiles as ../calibrated/run.sh makes them, then each spec three times under
# mpirun -np 3 with rank 1 pinned to core 1 and ranks 0 and 2 to core 0 (taskset in a
# wrapper: Open MPI's binding is off, --bind-to none), then the strategies report. Needs 2
# cores. From the root:
#   [INTERPLACE=path] results/2026-12-01-interlocking/passthrough/core-per-rank/run.sh
set -euo pipefail
dir=results/2026-12-01-interlocking/passthrough/core-per-rank
bin=${INTERPLACE:-build/runs/interplace}
(($(nproc) >= 2)) || { echo "run.sh: needs 2 cores" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# shellcheck source=../cpu-profiles.bash
source results/2026-12-01-interlocking/passthrough/cpu-profiles.bash
# shellcheck disable=SC2016 # expanded by each rank's shell
pinned='exec taskset -c "$((OMPI_COMM_WORLD_RANK == 1 ? 1 : 0))" "$0" "$@"'
files=()
for n in 1 2 3; do
  for spec in check check-gpt; do
    rm -f "$dir/$spec-$n.h5"
    mpirun --oversubscribe --bind-to none -np 3 bash -c "$pinned" "$bin" sweep "$dir/$spec.toml" \
      --out "$dir/$spec-$n.h5"
    files+=("$dir/$spec-$n.h5")
  done
done
python=${PYTHON:-.venv/bin/python}
"$python" -m interplace_analysis strategies "${files[@]}" --out "$dir/report" \
  --title "Pass-through check, K = 3 pairwise, measured rank on its own core" --quiet
