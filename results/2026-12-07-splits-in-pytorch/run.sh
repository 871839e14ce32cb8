#!/usr/bin/env bash
# The split users get today against the split interplace recommends, measured in PyTorch
# (issue #57): 4 imported networks no one in this project wrote or that are written as users
# write them, trained by PyTorch itself (runtime = "torch") on K = 2 and 4 ranks
# (mpirun -np K on this machine's cores), 1F1B, interplace's placers (stages, balanced)
# against the baselines (torchtitan's even-layers, DeepSpeed's uniform and parameters),
# the simulator given each network's profile measured in the torch runtime, R interleaved
# rounds (each runs every configuration once), then tables.py.
#   results/2026-12-07-splits-in-pytorch/run.sh [BUILD] [WORK] [ROUNDS]   (build, mktemp -d, 5)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
work=${2:-$(mktemp -d)}
rounds=${3:-5}
mkdir -p "$work"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
export PYTHONPATH="$root/importers${PYTHONPATH:+:$PYTHONPATH}"
py=/usr/bin/python3
"$root/scripts/machine-line" > "$here/machine.txt"

# name | importer arguments (one node per block: what the users' tools split at)
nets=(
  "gpt2_small-blocks|module interplace_importers.example_nets:gpt2_small_blocks --input-shape 64 --input-dtype int64 --granularity modules:2"
  "vit_ti_cifar-blocks|module interplace_importers.example_nets:vit_ti_cifar --input-shape 3,32,32 --granularity modules:3"
  "convnext_tiny-blocks|torchvision convnext_tiny --input-shape 3,32,32 --num-classes 10 --granularity modules:3"
  "resnet18-blocks|torchvision resnet18 --input-shape 3,64,64 --num-classes 10 --granularity modules:2"
)
: > "$work/imports.txt"
for entry in "${nets[@]}"; do
  name=${entry%%|*}; args=${entry#*|}
  start=$(date +%s.%N)
  # shellcheck disable=SC2086
  $py -m interplace_importers $args --name "$name" --out "$work/$name.json" 2>/dev/null
  echo "$name import_s $(echo "$(date +%s.%N) - $start" | bc)" >> "$work/imports.txt"
  $py -m interplace_importers.torch_profile "$work/$name.json" --micro-batch 1 --steps 10 \
    --out "$work/$name.tsv"
  for k in 2 4; do
    cat > "$work/$name-k$k.toml" <<SPEC
description = "splits in PyTorch: $name, K = $k, 1F1B, interplace's placers and the baselines"
graph_file = "$work/$name.json"
runtime = "torch"
dataset = "synthetic"
devices = $k
order = "topo"
placers = ["stages", "balanced", "even-layers", "deepspeed-uniform", "deepspeed-parameters"]
pipeline = "1f1b"
micro_batches = 4
batch_size = 4
warmup_steps = 1
steps = 5
threads_per_rank = 1
cost_device = "profile:$work/$name.tsv"
SPEC
  done
done
for round in $(seq 1 "$rounds"); do
  for entry in "${nets[@]}"; do
    name=${entry%%|*}
    for k in 2 4; do
      mpirun --oversubscribe -np "$k" "$build/runs/interplace" sweep "$work/$name-k$k.toml" \
        seed="$round" --out "$work/$name-k$k-r$round.h5" 2>&1 | tail -1
    done
  done
done
"$root/.venv/bin/python" "$here/tables.py" --imports "$work/imports.txt" "$work"/*-k*-r*.h5 \
  > "$here/tables.md"
echo "tables in $here; files in $work"
