#!/bin/bash
# The pass-through check (check.toml, check-gpt.toml) after profile.sh. From the root:
#   [INTERPLACE=path] results/2026-12-01-interlocking/passthrough/run.sh
set -euo pipefail
dir=results/2026-12-01-interlocking/passthrough
bin=${INTERPLACE:-build/runs/interplace}
for spec in check check-gpt; do
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    nice -n 5 mpirun --oversubscribe -np 4 "$bin" sweep "$dir/$spec.toml" --out "$dir/$spec.h5" --resume
done
