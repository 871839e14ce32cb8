#!/bin/bash
# The committed report from the raw result files: the strategies study of the experiment
# (report/) and of part 1's pass-through check (passthrough/report/). From the root:
#   [PYTHON=.venv/bin/python] results/2026-12-01-interlocking/report.sh
set -euo pipefail
dir=results/2026-12-01-interlocking
py=${PYTHON:-.venv/bin/python}
"$py" -m interplace_analysis strategies "$dir"/raw/*.h5 --step-times "$dir/step_times.csv" \
  --out "$dir/report" --title "Interlocking backpropagation, small scale (2026-12-01)" --quiet
"$py" -m interplace_analysis strategies "$dir"/passthrough/check*.h5 \
  --out "$dir/passthrough/report" --title "Pass-through check (2026-12-01)" --quiet
