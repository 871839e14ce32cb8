#!/usr/bin/env bash
# Comparable step times of gomez2022-converge.toml's configurations on K = 4 separate
# cores: the simulator (`interplace simulate`, the schedule each strategy executes) on the
# per-node profiles measured one rank per core on this machine
# (results/2026-12-04-interlocking-time-k2/profile-m{1,4}.tsv: micro-batch 128 for e2e,
# 32 for the rest), with the spec's proportional heads, and the study's heads beside them
# (capped_heads_step_time_s column: what-if). Writes step_times.csv for `strategies
# --step-times`.
#   bash results/2026-12-05-interlocking-seed2/step_times.sh [BUILD] > step_times.csv
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
interplace=${1:-$here/../../build}/runs/interplace
profiles=$here/../2026-12-04-interlocking-time-k2
model=(--model resnet20 --width-multiplier 0.5 --in-channels 1 --image-size 28 --classes 10
       --batch-size 128 --order topo --placer stages --devices 4)
step() {  # strategy pipeline micro_batches aux_head -> simulated step time in seconds
  local pipeline_args=()
  [[ $2 != - ]] && pipeline_args=(--pipeline "$2")
  "$interplace" simulate "${model[@]}" --strategy "$1" "${pipeline_args[@]}" \
    --micro-batches "$3" --aux-head "$4" --profile "$profiles/profile-m$3.tsv" --format json |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["simulation"]["step_time_s"])'
}
echo "model,strategy_label,step_time_s,study_heads_step_time_s,source"
for entry in "global gpipe 1 e2e" "global gpipe 4 global/gpipe" "global 1f1b 4 global/1f1b" \
             "global zb-h1 4 global/zb-h1" "local - 4 local" "pairwise - 4 pairwise" \
             "nwise:3 - 4 nwise:3"; do
  read -r strategy pipeline m label <<< "$entry"
  echo "resnet20,$label,$(step "$strategy" "$pipeline" "$m" proportional),$(step "$strategy" \
    "$pipeline" "$m" study),\"simulated, K = 4 separate cores, profile one rank per core\""
done
