#!/usr/bin/env bash
# Makes this folder's tables: two sweeps (n = 3 each), a K = 4 sweep with n = 10 and a K = 2 sweep on 2 ranks with n = 5 of runs/configs/interlocking-vs-pipelines.toml on
# this machine (4 ranks on 2 cores), the report of each, and the simulator's step on K
# separate devices from the profile the first sweep measured (sim_separate.py).
#   results/2026-12-03-interlocking-vs-pipelines/run.sh [BUILD_DIR] [WORK_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
work=${2:-$(mktemp -d)}
bin=$build/runs/interplace
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
for run in 1 2; do
  mpirun --oversubscribe -np 4 "$bin" sweep "$root/runs/configs/interlocking-vs-pipelines.toml" \
    --out "$work/ivp$run.h5"
  "$root/.venv/bin/python" -m interplace_analysis report "$work/ivp$run.h5" \
    --out "$work/report$run" --quiet
  cp "$work/report$run/tables/strategies.csv" "$here/strategies-run$run.csv"
  cp "$work/report$run/tables/simulator.csv" "$here/simulator-run$run.csv"
done
"$root/.venv/bin/python" - "$work/ivp1.h5" "$work/profile.tsv" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    (key,) = list(f["profiles"])
    open(sys.argv[2], "w").write(f["profiles"][key].attrs["profile"])
PY
python3 "$here/sim_separate.py" "$bin" "$work/profile.tsv" > "$here/separate-devices.csv"
# K = 4 alone with 10 runs per configuration: n = 3 cannot reach significance after Holm.
mpirun --oversubscribe -np 4 "$bin" sweep "$root/runs/configs/interlocking-vs-pipelines.toml" \
  devices=4 repeats=10 --out "$work/ivp-k4.h5"
"$root/.venv/bin/python" -m interplace_analysis report "$work/ivp-k4.h5" --out "$work/report-k4" --quiet
cp "$work/report-k4/tables/strategies.csv" "$here/strategies-k4-n10.csv"
cp "$work/report-k4/tables/simulator.csv" "$here/simulator-k4-n10.csv"
# K = 2 on 2 ranks, one per core (the regime the simulator is validated in), 5 runs each.
mpirun --oversubscribe -np 2 "$bin" sweep "$root/runs/configs/interlocking-vs-pipelines.toml" \
  devices=2 repeats=5 --out "$work/ivp-k2.h5"
"$root/.venv/bin/python" -m interplace_analysis report "$work/ivp-k2.h5" --out "$work/report-k2" --quiet
cp "$work/report-k2/tables/strategies.csv" "$here/strategies-k2-n5.csv"
cp "$work/report-k2/tables/simulator.csv" "$here/simulator-k2-n5.csv"
python3 "$here/tables.py" > /dev/null
echo "tables in $here; files in $work"
