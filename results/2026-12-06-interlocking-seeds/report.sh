#!/usr/bin/env bash
# The strategies report over every run kept under runs/ (seeds 1-2 recovered from their
# sessions' curve.md by from_curves.py; later runs exported by export.sh), with the
# comparable step times of K = 4 separate cores (the simulator on profiles measured one
# rank per core: results/2026-12-05-interlocking-seed2/step_times.sh).
#   bash results/2026-12-06-interlocking-seeds/report.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
here=results/2026-12-06-interlocking-seeds
python=${PYTHON:-.venv/bin/python}
"$python" "$here/from_curves.py" results/2026-12-04-interlocking-converge/curve.md \
  results/2026-12-05-interlocking-seed2/curve.md --seeds 1,2 --out "$here/runs/seeds1-2"
"$python" -m interplace_analysis strategies "$here"/runs/* --out "$here/report" --quiet \
  --step-times results/2026-12-05-interlocking-seed2/step_times.csv \
  --title "resnet20 x0.5 on gomez2022-converge's schedule, K = 4: every run kept under runs/"
