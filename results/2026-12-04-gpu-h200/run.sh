#!/usr/bin/env bash
# The GPU session of 2026-12-04 on the workplace's H200 machine, in one call of the device
# tool (with .debs/ carried: scripts/fetch-device-debs first, where apt works):
#   bash results/2026-12-04-gpu-h200/run.sh
# 1. bench/gpu-check (bundled; its own deadline GPU_CHECK_BUDGET_S): the CUDA kernel tests,
#    the MPI runtime on the GPU, losses against the CPU, a sweep, benchmarks against PyTorch.
# 2. What the full-scale interlocking spec (runs/configs/gomez2022.toml: resnet34-cifar on
#    Fashion-MNIST, batch 128) costs on one H200: the per-node profile at the pipelined
#    strategies' micro-batch (32) and at e2e's (128), and one rank's measured e2e training
#    step, to set beside the simulator's step from that profile and from the h200 preset
#    (the simulations run anywhere afterwards: simulate.sh beside this file).
# Output under $OUT (the device tool brings it back), else bench/out/gpu-h200.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$root/bench/out/gpu-h200}
build=${BUILD:-$root/build-gpu}
mkdir -p "$out"
GPU_CHECK_BUNDLE=1 GPU_CHECK_BUDGET_S=${GPU_CHECK_BUDGET_S:-420} OUT="$out" BUILD="$build" \
  "$root/bench/gpu-check"
check=$?

costs="$out/gomez2022"
mkdir -p "$costs"
interplace="$build/runs/interplace"
if [[ ! -x $interplace ]]; then
  echo "run.sh: no $interplace (the check's build failed): no cost measurements" | tee "$costs/log.txt"
  exit 1
fi
# The unpacked Open MPI and HDF5 (gpu-check's prefix), when the check used them.
# shellcheck disable=SC1091
[[ -f $build/deps/env.sh ]] && . "$build/deps/env.sh"
model=(--model resnet34-cifar --in-channels 1 --image-size 28 --classes 10 --batch-size 128)
{
  for m in 4 1; do
    echo "== profile, micro-batches $m"
    timeout 90 "$interplace" profile "${model[@]}" --micro-batches "$m" --device cuda \
      --device-preset h200 --out "$costs/profile_resnet34_b128_m$m.tsv" --top 5
  done
  echo "== train e2e on one rank, batch 128 (synthetic data of the same shape)"
  timeout 90 "$interplace" train "${model[@]}" --strategy global --pipeline e2e \
    --placer contiguous --warmup-steps 3 --steps 30 --device cuda --format json \
    > "$costs/train_e2e_1rank.jsonl"
  echo "train exit $?"
} > "$costs/log.txt" 2>&1
cat "$costs/log.txt"
exit $check
