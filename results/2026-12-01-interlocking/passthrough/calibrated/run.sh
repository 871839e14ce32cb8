#!/bin/bash
# The pass-through check again with CPU-time profiles that carry the runtime's own units
# by CPU time (the calibration `interplace profile --clock cpu` now records), so the
# simulator charges each pass what the runtime spends beyond the per-node times. Three
# invocations, each 3 repeats x 4 measured steps, then the strategies report. From the root:
#   [INTERPLACE=path] results/2026-12-01-interlocking/passthrough/calibrated/run.sh
set -euo pipefail
dir=results/2026-12-01-interlocking/passthrough/calibrated
bin=${INTERPLACE:-build/runs/interplace}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# shellcheck source=../cpu-profiles.bash
source results/2026-12-01-interlocking/passthrough/cpu-profiles.bash
files=()
for n in 1 2 3; do
  for spec in check check-gpt; do
    rm -f "$dir/$spec-$n.h5"
    mpirun --oversubscribe -np 4 "$bin" sweep "$dir/$spec.toml" --out "$dir/$spec-$n.h5"
    files+=("$dir/$spec-$n.h5")
  done
done
python=${PYTHON:-.venv/bin/python}
"$python" -m interplace_analysis strategies "${files[@]}" --out "$dir/report" \
  --title "Pass-through check, calibrated CPU-time profiles" --quiet
