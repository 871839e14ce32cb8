#!/usr/bin/env bash
# One seed of gomez2022-converge.toml, one strategy per file, as seeds 1 and 2 were run
# (results/2026-12-04-interlocking-converge/, results/2026-12-05-interlocking-seed2/):
# e2e unpipelined on one rank; pairwise, 3-wise, 1F1B and local on K = 4 ranks with one
# thread each. A run already kept under runs/<name>-s<seed>/ (export.sh) is skipped, and
# every run is resumable (`--resume`: a file whose configuration finished is left as it
# is), so the script continues where a stopped session, or an earlier machine, left off.
#   bash results/2026-12-06-interlocking-seeds/train.sh BUILD OUT_DIR SEED [WHICH]
# WHICH: pipelined (the four K = 4 strategies, one after the other), e2e, or all (both
# chains at once: e2e's single rank beside the pipelines' four).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
build=${1:?BUILD directory}
out=${2:?OUT_DIR}
seed=${3:?SEED}
which=${4:-all}
mkdir -p "$out"
interplace=$build/runs/interplace
spec=$root/runs/configs/gomez2022-converge.toml
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

kept() {
  if [ -f "$here/runs/$1-s$seed/configs.csv" ]; then
    echo "train.sh: $1, seed $seed: kept in runs/$1-s$seed/, skipped"
    return 0
  fi
  return 1
}

pipelined() {
  # The same overrides as seeds 1 and 2 (pairwise kept the spec's pipelines, which a
  # non-global strategy ignores), so every seed's configuration has the same parameters.
  local name
  for name in pairwise nwise3 1f1b local; do
    kept "$name" && continue
    local args=()
    case $name in
      pairwise) args=(strategies=pairwise) ;;
      nwise3) args=(strategies=nwise:3 pipelines=1f1b) ;;
      1f1b) args=(strategies=global pipelines=1f1b) ;;
      local) args=(strategies=local pipelines=1f1b) ;;
    esac
    mpirun --oversubscribe -np 4 "$interplace" sweep "$spec" "${args[@]}" "seeds=$seed" \
      threads_per_rank=1 --resume --out "$out/$name-s$seed.h5"
  done
}
e2e() {
  kept e2e && return 0
  mpirun -np 1 "$interplace" sweep "$spec" strategies=global pipelines=e2e devices=1 \
    "seeds=$seed" threads_per_rank=1 --resume --out "$out/e2e-s$seed.h5"
}
case $which in
  pipelined) pipelined ;;
  e2e) e2e ;;
  all)
    e2e &
    e2e_pid=$!
    pipelined
    wait "$e2e_pid"
    ;;
  *) echo "train.sh: WHICH must be pipelined, e2e or all, not '$which'" >&2; exit 2 ;;
esac
