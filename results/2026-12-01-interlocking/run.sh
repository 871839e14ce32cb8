#!/bin/bash
# The interlocking experiment of issue #17 (parts 5-6) on this 2-core machine: one sweep
# per seed and model, in the order ResNet seed 1, GPT seed 1, ResNet seeds 2 and 3, GPT
# seeds 2 and 3, so that a stopped run leaves whole seeds of both and the ResNet's three
# seeds come first. (On 2026-12-01 GPT seeds 2 and 3 ran beside ResNet seed 3, the same
# sweeps started by hand, as they turned out to take 3 minutes each.) Usage, from the repository root after building:
#   [INTERPLACE=path/to/interplace] results/2026-12-01-interlocking/run.sh [OUT_DIR]
set -euo pipefail
out=${1:-results/2026-12-01-interlocking/raw}
mkdir -p "$out"
bin=${INTERPLACE:-build/runs/interplace}
sweep() {  # spec seed file
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    nice -n 5 mpirun --oversubscribe -np 4 "$bin" sweep "$1" "seed=$2" --out "$3" --resume
}
resnet() { sweep runs/configs/gomez2022-small.toml "$1" "$out/resnet-seed$1.h5"; }
gpt() { sweep runs/configs/gomez2022-gpt-small.toml "$1" "$out/gpt-seed$1.h5"; }
resnet 1
gpt 1
resnet 2
resnet 3
gpt 2
gpt 3
