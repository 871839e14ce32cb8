#!/usr/bin/env bash
# Issue #34, item 1's first step: where does e2e's test accuracy plateau for the scaled
# interlocking study's network (resnet20 x0.5) on the whole Fashion-MNIST training split?
# One rank, one thread, the study's recipe scaled to 30 epochs (SGD momentum 0.9, lr 0.1,
# weight decay 2e-4 on every parameter, lr x0.1 at 45.5%, 68% and 91% of the epochs as
# the study's 91/136/182 of 200, crop-flip), the whole test split evaluated after every
# epoch. Writes train.jsonl beside this file (about 45 min on one core of the 2-core VM);
# SEED (default 1) and OUT (default train.jsonl beside this file) choose another run.
#   nice -n 19 bash results/2026-12-04-interlocking-plateau/run.sh
#   SEED=2 OUT=/var/tmp/train-seed2.jsonl nice -n 19 bash results/2026-12-04-interlocking-plateau/run.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
interplace=${INTERPLACE:-$here/../../build/runs/interplace}
epochs=30
seed=${SEED:-1}
out=${OUT:-$here/train.jsonl}
"$interplace" train --model resnet20 --width-multiplier 0.5 --dataset fashion-mnist \
  --batch-size 128 --strategy global --pipeline e2e --threads-per-rank 1 \
  --optimizer sgd-momentum --learning-rate 0.1 --weight-decay 2e-4 --weight-decay-all \
  --lr-schedule step --lr-milestones 13.65,20.4,27.3 --lr-milestone-unit epochs --lr-decay 0.1 \
  --augmentation crop-flip --epochs "$epochs" \
  --eval-epochs "$(seq -s, 1 "$epochs")" --eval-samples 10000 --seed "$seed" --format json \
  > "$out"
