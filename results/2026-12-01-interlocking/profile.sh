#!/bin/bash
# Profiles of the experiment's models on this machine, one thread per rank as the runs
# had, at each micro-batch size the runs used (M = 4 and e2e's M = 1), for the simulator's
# comparable step times (simulate.sh). Timed in thread CPU time (--clock cpu): other
# helpers kept the 2 cores at a load of 10-18 while this ran, and a wall-clock profile
# taken then had backward passes of ReLU at 6 ms and input-only passes longer than full
# ones. Usage from the repository root:
#   [INTERPLACE=path] results/2026-12-01-interlocking/profile.sh [OUT_DIR]
set -euo pipefail
out=${1:-results/2026-12-01-interlocking/profiles}
bin=${INTERPLACE:-build/runs/interplace}
mkdir -p "$out"
profile() {  # name, then model options
  local name=$1
  shift
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    nice -n 5 mpirun --oversubscribe -np 2 "$bin" profile "$@" --threads 1 --clock cpu --repeats 7 \
    --warmup 2 --out "$out/$name.tsv" --format json > "$out/$name.json"
}
profile resnet20-w0.5-b32 --model resnet20 --width-multiplier 0.5 --batch-size 32
profile resnet20-w0.5-b128 --model resnet20 --width-multiplier 0.5 --batch-size 128
profile gpt-mini-t64-b4 --model gpt-mini --sequence-length 64 --batch-size 4
profile gpt-mini-t64-b16 --model gpt-mini --sequence-length 64 --batch-size 16
