#!/usr/bin/env bash
# The PyTorch runtime measured against the simulator (issue #56, part 4): imported networks
# trained by PyTorch itself (runtime = "torch") on 2 ranks, the simulator given each
# network's profile measured in the torch runtime (interplace_importers.torch_profile).
#   results/2026-12-07-torch-runtime/run.sh [BUILD] [OUT]     (defaults: build, /tmp/torch-runtime)
# Writes OUT/<net>.h5, OUT/<net>.tsv (profiles), OUT/report-<net>/, and prints the import
# wall times and each report's simulator summary. Run it on an otherwise idle machine.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-build}" && pwd)
out=${2:-/tmp/torch-runtime}
mkdir -p "$out"
cd "$root"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
export PYTHONPATH="$root/importers:$root/tests/importers${PYTHONPATH:+:$PYTHONPATH}"
py=/usr/bin/python3
scripts/machine-line > "$out/machine.txt"

timed_import() {  # name, importer arguments...
  local name=$1; shift
  local start=$(date +%s.%N)
  $py -m interplace_importers "$@" --name "$name" --out "$out/$name.json" 2>/dev/null | tail -1
  echo "import $name: $(echo "$(date +%s.%N) - $start" | bc) s" | tee -a "$out/imports.txt"
}
: > "$out/imports.txt"
timed_import gpt2_tiny-blocks module interplace_importers.example_nets:gpt2_tiny --input-shape 32 \
  --input-dtype int64 --granularity modules:2
timed_import transformer_encoder-blocks module small_nets:transformer_encoder --input-shape 8,16 \
  --granularity modules:3
timed_import resnet18-cifar10 torchvision resnet18 --input-shape 3,32,32 --num-classes 10
timed_import vit_b_16-blocks torchvision vit_b_16 --input-shape 3,224,224 --granularity modules:3
timed_import swin_t-blocks torchvision swin_t --input-shape 3,224,224 --granularity modules:3

# net  batch  micro-batches  steps  repeats  placers
configs=(
  "gpt2_tiny-blocks 16 4 6 3 stages,even-layers,deepspeed-parameters"
  "transformer_encoder-blocks 32 4 6 3 stages,even-layers,deepspeed-parameters"
  "resnet18-cifar10 16 4 6 3 stages,contiguous,deepspeed-parameters"
)
for line in "${configs[@]}"; do
  read -r net batch m steps repeats placers <<< "$line"
  mb=$((batch / m))
  $py -m interplace_importers.torch_profile "$out/$net.json" --micro-batch "$mb" \
    --out "$out/$net.tsv" --steps 10
  placer_list=$(echo "$placers" | sed 's/\([^,]*\)/"\1"/g')
  cat > "$out/$net.toml" <<SPEC
description = "torch runtime vs simulator: $net, 2 ranks"
graph_file = "$out/$net.json"
runtime = "torch"
dataset = "synthetic"
devices = 2
order = "topo"
placers = [$placer_list]
pipelines = ["gpipe", "1f1b"]
micro_batches = $m
batch_size = $batch
warmup_steps = 1
steps = $steps
threads_per_rank = 1
cost_device = "profile:$out/$net.tsv"
repeats = $repeats
SPEC
  rm -f "$out/$net.h5"
  mpirun --oversubscribe -np 2 "$build/runs/interplace" sweep "$out/$net.toml" --out "$out/$net.h5" \
    2>&1 | tail -1
  "$root/.venv/bin/python" -m interplace_analysis report "$out/$net.h5" --out "$out/report-$net" --quiet
  echo "== $net"; sed -n '3,20p' "$out/report-$net/tables/simulator_summary.md"
done
