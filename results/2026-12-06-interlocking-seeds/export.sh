#!/usr/bin/env bash
# The finished runs of train.sh as exported tables, one directory per run under runs/
# (runs/pairwise-s3/, ...): the few kB per run (configs, evaluations) that the strategies
# report needs and that git keeps, where the HDF5 files (megabytes of step timings each)
# stay on the machine. A run already exported is exported again (the same tables).
#   bash results/2026-12-06-interlocking-seeds/export.sh OUT_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
out=${1:?OUT_DIR of train.sh}
python=${PYTHON:-$root/.venv/bin/python}
cd "$root/analysis"
exported=0
for f in "$out"/*-s[0-9]*.h5; do
  [ -e "$f" ] || continue
  # A file whose run has not finished holds no configuration yet.
  if "$python" -c "import sys; from interplace_analysis import load_results
sys.exit(0 if len(load_results(sys.argv[1]).ok) else 1)" "$f" 2>/dev/null; then
    "$python" -m interplace_analysis export "$f" --format csv --tables configs,evaluations \
      --out "$here/runs/$(basename "$f" .h5)"
    exported=$((exported + 1))
  else
    echo "export.sh: $f: not finished, left out" >&2
  fi
done
if [ "$exported" -eq 0 ]; then
  echo "export.sh: no finished run in $out" >&2
  exit 1
fi
