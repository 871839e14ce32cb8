#!/usr/bin/env bash
# Issue #34, item 2: step time per strategy where it is defined, one rank per core. The
# scaled interlocking study's network (resnet20 x0.5, Fashion-MNIST, batch 128; pipelined
# strategies in 4 micro-batches of 32, e2e one pass of 128; the study's heads) on K = 2
# ranks of one thread each, on the idle 2-core machine:
# 1. profiles measured the same way (2 ranks, 1 thread each, wall clock): micro-batch 32 and
#    128, with the link between the two ranks;
# 2. every strategy trained for real, REPEATS runs each, interleaved (strategy order rotated
#    per round), STEPS measured steps after WARMUP, each run's prediction the simulator's
#    step on the profile of its micro-batch (train --cost-device profile:PATH: the schedule
#    the ranks execute, simulated);
# 3. summary.py: measured against predicted per strategy (median of the runs' medians,
#    bootstrap interval over runs), and what K = 4 separate cores would give (simulated).
#   bash results/2026-12-04-interlocking-time-k2/run.sh [OUT_DIR]   (default /var/tmp/itk2)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/var/tmp/itk2}
interplace=${INTERPLACE:-$here/../../build/runs/interplace}
repeats=${REPEATS:-5}
steps=${STEPS:-40}
warmup=${WARMUP:-3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$out"
model=(--model resnet20 --width-multiplier 0.5 --in-channels 1 --image-size 28 --classes 10
       --batch-size 128)
for m in 4 1; do
  [[ -f $out/profile-m$m.tsv ]] ||
    mpirun -np 2 "$interplace" profile "${model[@]}" --micro-batches "$m" --threads 1 \
      --repeats 7 --warmup 2 --out "$out/profile-m$m.tsv" > "$out/profile-m$m.txt"
done
strategies=("global e2e 1" "global gpipe 4" "global 1f1b 4" "local - 4" "pairwise - 4")
for ((round = 0; round < repeats; round++)); do
  for ((i = 0; i < ${#strategies[@]}; i++)); do
    read -r strategy pipeline m <<< "${strategies[(i + round) % ${#strategies[@]}]}"
    if [[ $pipeline == - ]]; then label=$strategy pipeline_args=(); else
      label=$strategy-$pipeline pipeline_args=(--pipeline "$pipeline"); fi
    mpirun -np 2 "$interplace" train "${model[@]}" --dataset fashion-mnist --order topo \
      --placer stages --strategy "$strategy" "${pipeline_args[@]}" --micro-batches "$m" \
      --threads-per-rank 1 --warmup-steps "$warmup" --steps "$steps" --seed "$((round + 1))" \
      --cost-device "profile:$out/profile-m$m.tsv" --format json \
      > "$out/train-$label-r$round.jsonl"
  done
done
# What K = 4 separate cores would give: the simulator on the same profiles (4 stages).
for entry in "${strategies[@]}"; do
  read -r strategy pipeline m <<< "$entry"
  if [[ $pipeline == - ]]; then label=$strategy pipeline_args=(); else
    label=$strategy-$pipeline pipeline_args=(--pipeline "$pipeline"); fi
  [[ $pipeline == e2e ]] && pipeline_args=(--pipeline gpipe)  # M = 1: one pass
  "$interplace" simulate "${model[@]}" --order topo --placer stages --devices 4 \
    --strategy "$strategy" "${pipeline_args[@]}" --micro-batches "$m" \
    --profile "$out/profile-m$m.tsv" --format json > "$out/sim-k4-$label.json"
done
"${PYTHON:-$here/../../.venv/bin/python}" "$here/summary.py" "$out" | tee "$here/summary.md"
