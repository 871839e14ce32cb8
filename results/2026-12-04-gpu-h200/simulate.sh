#!/usr/bin/env bash
# What the full-scale interlocking spec (runs/configs/gomez2022.toml: resnet34-cifar on
# Fashion-MNIST, batch 128, K = 4 at block boundaries) costs per step on H200s: the simulator
# from the h200 preset (a roofline of the datasheet) beside the simulator from the profile
# measured on the H200 (profile_resnet34_b128_m4.tsv, micro-batch 32, by run.sh), and one
# rank's measured e2e step (train_e2e_1rank.jsonl). Runs anywhere (no GPU):
#   bash results/2026-12-04-gpu-h200/simulate.sh > results/2026-12-04-gpu-h200/gomez2022-costs.md
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
interplace=${INTERPLACE:-$here/../../build/runs/interplace}
profile=$here/profile_resnet34_b128_m4.tsv
model=(--model resnet34-cifar --in-channels 1 --image-size 28 --classes 10 --batch-size 128
       --order topo)
step_ms() {
  "$interplace" simulate "${model[@]}" "$@" --format json |
    python3 -c 'import json, sys; print("%.2f" % (json.load(sys.stdin)["simulation"]["step_time_s"] * 1e3))'
}
measured=$(python3 -c '
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
steps = [r["step_time_s"] for r in rows if "step" in r and not r["warmup"]]
print(f"{statistics.median(steps) * 1e3:.2f} (median of {len(steps)} steps, {min(steps) * 1e3:.2f}-{max(steps) * 1e3:.2f})")
' "$here/train_e2e_1rank.jsonl")
echo "| configuration | h200 preset, ms | measured H200 profile (micro-batch 32), ms | measured on one H200, ms | epoch of 468 steps, s (profile) |"
echo "| --- | --- | --- | --- | --- |"
echo "| K = 1, e2e (one pass of 128) | $(step_ms --micro-batches 1 --placer contiguous --devices 1 --device-preset h200) | needs a micro-batch-128 profile | $measured | |"
echo "| K = 1, GPipe 4 x 32 | $(step_ms --micro-batches 4 --placer contiguous --devices 1 --device-preset h200) | $(step_ms --micro-batches 4 --placer contiguous --devices 1 --profile "$profile") | | |"
echo "| K = 4, e2e (one pass of 128) | $(step_ms --micro-batches 1 --placer stages --devices 4 --device-preset h200) | needs a micro-batch-128 profile | | |"
for strategy in "global --pipeline gpipe" "global --pipeline 1f1b" "local" "pairwise" "nwise:3"; do
  # shellcheck disable=SC2086
  p=$(step_ms --micro-batches 4 --placer stages --devices 4 --strategy $strategy --profile "$profile")
  # shellcheck disable=SC2086
  echo "| K = 4, ${strategy/global --pipeline /} 4 x 32 | $(step_ms --micro-batches 4 --placer stages --devices 4 --strategy $strategy --device-preset h200) | $p | | $(python3 -c "print(f'{$p * 468 / 1e3:.1f}')") |"
done
