#!/usr/bin/env bash
# Scale on paper (issue #57, part 4): the splits users get today against interplace's
# placers, SIMULATED (nothing trained) for full-size networks on 8-64 H100s: K = 4 and 8
# pipeline stages x R = 1, 2, 8 data-parallel replicas, GPipe / 1F1B / interleaved 1F1B
# (2 chunks per device) / ZB-H1, the h100 preset (docs/cli.md, device presets), 16
# micro-batches of 1 sample per replica. Simulate-only sweeps run on one core.
#   results/2026-12-08-splits-at-scale-simulated/run.sh [BUILD] [WORK]   (build, mktemp -d)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
work=${2:-$(mktemp -d)}
mkdir -p "$work"
export PYTHONPATH="$root/importers${PYTHONPATH:+:$PYTHONPATH}"
py=/usr/bin/python3
"$root/scripts/machine-line" > "$here/machine.txt"

# name | importer arguments (one node per block: what the users' tools split at)
nets=(
  "gpt2_medium-blocks|module interplace_importers.example_nets:gpt2_medium --input-shape 1024 --input-dtype int64 --granularity modules:2"
  "vit_b_16-blocks|torchvision vit_b_16 --input-shape 3,224,224 --granularity modules:3"
  "convnext_tiny-blocks|torchvision convnext_tiny --input-shape 3,224,224 --granularity modules:3"
  "resnet50-blocks|torchvision resnet50 --input-shape 3,224,224 --granularity modules:2"
)
files=()
for entry in "${nets[@]}"; do
  name=${entry%%|*}; args=${entry#*|}
  [[ -s "$work/$name.json" ]] ||
    $py -m interplace_importers $args --name "$name" --out "$work/$name.json" 2>/dev/null  # shellcheck disable=SC2086
  for k in 4 8; do
    for r in 1 2 8; do
      spec="$work/$name-k$k-r$r.toml"
      cat > "$spec" <<SPEC
description = "splits at scale, simulated: $name, K = $k stages x R = $r replicas on h100"
graph_file = "$work/$name.json"
simulate_only = 1
devices = $k
data_parallel = $r
order = "topo"
placers = ["stages", "balanced", "even-layers", "deepspeed-uniform", "deepspeed-parameters"]
pipelines = ["gpipe", "1f1b", "interleaved-1f1b", "zb-h1"]
virtual_stages = 2
micro_batches = 16
batch_size = $((16 * r))
cost_device = "h100"
SPEC
      "$build/runs/interplace" sweep "$spec" --out "$work/$name-k$k-r$r.h5" 2>&1 | tail -1
      files+=("$work/$name-k$k-r$r.h5")
    done
  done
done
"$root/.venv/bin/python" "$here/tables.py" "${files[@]}" > "$here/tables.md"
echo "tables in $here; files in $work"
