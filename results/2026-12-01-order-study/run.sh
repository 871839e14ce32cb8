#!/bin/bash
# The traversal-order study (issue 18 parts 3-4) as it was run on 2026-12-01 (commit 0161c24's
# interplace for the study; 67e24c1's for place --save-placement / train --placement), from a
# directory DATA outside git (the HDF5 files are ~0.1-0.5 MB each; the tables and figures
# made from them are committed here). Usage: run.sh BUILD_DIR DATA_DIR
set -euo pipefail
I=$(realpath "$1")/runs/interplace
HERE=$(dirname "$(realpath "$0")")
mkdir -p "$2" && cd "$2"
# --rl-groups 0: node by node, as the study ran before rl grouped graphs of more than 448
# nodes by default (nasnet_a_mobile has 931).
RL="--seeds 10 --rl-episodes 40 --rl-learning-rate 0.01 --rl-final-learning-rate 0.001 --rl-groups 0"
SMALL=resnet50-small,vgg16-small,mobilenet_v2-small,inception_v3-small,nasnet_a_mobile-small,gpt-mini,bert-mini
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1

# CPU-measured profiles of the small presets (batch 32, 1 thread per rank, link by ping-pong).
mkdir -p profiles
for m in ${SMALL//,/ }; do
  nice -n 5 mpirun -np 2 --oversubscribe "$I" profile --model $m --batch-size 32 --threads 1 \
    --repeats 3 --warmup 1 --top 3 --out profiles/$m.tsv > profiles/$m.log
done

# h100 preset, K = 3: the full-size zoo graphs and the small presets. nasnet_a_mobile (931
# nodes, 8x inception_v3's cost per episode) with 20 episodes instead of 40 to fit the time.
nice -n 5 "$I" order-study --models inception_v3,resnet50,gpt2-small,bert_base,$SMALL --devices 3 \
  $RL --device-preset h100 --out h100-k3-rest.h5
nice -n 5 "$I" order-study --models nasnet_a_mobile --devices 3 \
  ${RL/--rl-episodes 40/--rl-episodes 20} --device-preset h100 --out h100-k3-nasnet-e20.h5
# CPU profiles, K = 3, and K = 2, 4, 8 on the cheaper small presets.
nice -n 5 "$I" order-study --models $SMALL --devices 3 $RL --profile-dir profiles \
  --out cpu-profile-k3.h5
nice -n 5 "$I" order-study --models resnet50-small,vgg16-small,mobilenet_v2-small,gpt-mini,bert-mini \
  --devices 2,4,8 $RL --profile-dir profiles --out cpu-profile-k248.h5

# Real-run check: best and worst order's learned placement (CPU-profile study, K = 3) trained
# on 3 MPI ranks, 3 repeats interleaved.
python "$HERE/realrun.py" "$I" cpu-profile-k3.h5 profiles realrun 3 ${SMALL//,/ } > realrun.log

# Tables and figures.
python -m interplace_analysis order-study h100-k3-rest.h5 h100-k3-nasnet-e20.h5 cpu-profile-k3.h5 \
  cpu-profile-k248.h5 --out report --quiet
