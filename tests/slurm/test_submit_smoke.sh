#!/usr/bin/env bash
# slurm.submit_smoke_array: slurm/submit end to end on a real (one-node, throw-away) Slurm
# cluster on this machine. Starts munged, slurmctld and slurmd (tests/slurm/local-cluster.bash),
# submits the smoke sweep as a 2-shard job array plus the merge-and-report job through the
# real slurm/submit, waits for them, and checks the shards, the merged file and the report.
#
#   tests/slurm/test_submit_smoke.sh INTERPLACE [SPEC]
#     INTERPLACE  the interplace binary (CTest passes $<TARGET_FILE:interplace>)
#     SPEC        sweep specification (default runs/configs/smoke.toml)
#   Environment: INTERPLACE_SLURM_TEST_RANKS  MPI ranks per shard (default 2)
#                INTERPLACE_SLURM_TEST_KEEP=1 keep the temporary directory (logs, results)
#
# Needs root (it installs slurm-wlm and munge with apt-get when missing, and runs the
# daemons as root); otherwise it exits 77, which CTest reports as skipped.
# Duration, measured on 2 cores: 25-45 s in all, plus apt-get the first time (~30-60 s).
# Daemons up and the node idle in ~3 s; the two shards run one after the other (each takes
# both cores), 2-4 s and 4-12 s of smoke sweep plus ~2 s of scheduling each; the merge and
# report job ~8 s (matplotlib); the checks ~3 s; stopping the cluster ~2 s.
# Every wait is bounded: 60 s for the daemons, and the jobs get what is left of a 540 s
# budget (the CTest TIMEOUT is 600 s; a test killed by CTest could not stop its daemons).
set -euo pipefail

BUDGET_S=540
SHARDS=2

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source-path=SCRIPTDIR
source "$here/local-cluster.bash"

interplace=${1:?usage: test_submit_smoke.sh INTERPLACE [SPEC]}
spec=${2:-$root/runs/configs/smoke.toml}
ranks=${INTERPLACE_SLURM_TEST_RANKS:-2}

if ! why=$(slurm_supported); then
  echo "SKIP: $why"
  exit 77
fi
[[ -x "$interplace" ]] || die "interplace binary '$interplace' is not executable"
"$interplace" --help 2>/dev/null | grep -qE '^ +sweep ' \
  || die "$interplace has no 'sweep' subcommand (built without MPI/HDF5, or before the runtime's training was wired into the CLI)"
[[ -r "$spec" ]] || die "cannot read the sweep specification '$spec'"

cluster_test_begin test

# --- submit -------------------------------------------------------------------------------
out=$work/out
log "slurm/submit $spec --shards $SHARDS ($ranks ranks each) --out $out"
submit_output=$("$root/slurm/submit" "$spec" --shards "$SHARDS" --out "$out" \
                  --tasks-per-node "$ranks" --allow-too-few-ranks --time 10 --merge-time 10 --interplace "$interplace")
echo "$submit_output" | sed 's/^/    /'
sweep_job=$(awk '$1 == "sweep" && $2 == "job:" {print $3}' <<<"$submit_output")
merge_job=$(awk '$1 == "merge" && $2 == "job:" {print $3}' <<<"$submit_output")
[[ "$sweep_job" =~ ^[0-9]+$ && "$merge_job" =~ ^[0-9]+$ ]] \
  || die "could not read the job ids from slurm/submit's output"

# --- wait (no slurmdbd here, so no sacct: scontrol keeps finished jobs for MinJobAge) -------
job_state() { scontrol show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | head -n 1 | cut -d= -f2; }
terminal() { [[ "$1" =~ ^(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|PREEMPTED|BOOT_FAIL|DEADLINE)$ ]]; }
array_states() {  # "0=COMPLETED 1=RUNNING": one word per array task
  scontrol show job "$sweep_job" 2>/dev/null \
    | awk '/ArrayTaskId=/ {match($0, /ArrayTaskId=[^ ]*/); t = substr($0, RSTART + 12, RLENGTH - 12)}
           /JobState=/ {match($0, /JobState=[A-Z_]*/); print t "=" substr($0, RSTART + 9, RLENGTH - 9)}' \
    | paste -sd ' '
}

# Leave 40 s of the budget for stopping the cluster (jobs are cancelled, KillWait is 5 s).
job_timeout_s=${INTERPLACE_SLURM_TEST_TIMEOUT_S:-$((BUDGET_S - 40 - SECONDS))}
log "waiting for array $sweep_job and merge job $merge_job (at most $job_timeout_s s)"
deadline=$((SECONDS + job_timeout_s))
last=""
while :; do
  state=$(job_state "$merge_job")
  now="sweep: $(array_states); merge: ${state:-?}"
  [[ "$now" == "$last" ]] || { log "$now"; last=$now; }
  terminal "$state" && break
  ((SECONDS < deadline)) || die "jobs not finished after $job_timeout_s s ($now)"
  sleep 2
done
[[ "$state" == COMPLETED ]] || die "merge job $merge_job ended $state"
for ((i = 0; i < SHARDS; i++)); do
  [[ " $(array_states) " == *" $i=COMPLETED "* ]] || die "array task ${sweep_job}_$i did not complete: $(array_states)"
done

# --- check the results --------------------------------------------------------------------
# Root attribute NAME of FILE (a string), read with h5dump (hdf5-tools).
root_attr() {
  h5dump -A -a "/$2" "$1" | sed -n 's/^ *(0): "\(.*\)"$/\1/p' | head -n 1
}
config_ids() { h5ls "$1/configs" | awk '{print $1}' | sort; }
# The ids shard $1 of the spec should hold: `interplace sweep --dry-run` (no MPI, runs nothing).
expected_ids() {
  "$interplace" sweep "$spec" --dry-run --shard "$1" --format json \
    | python3 -c 'import json, sys; print("\n".join(c["id"] for c in json.load(sys.stdin)["configs"]))' | sort
}

shard_ids=()
for ((i = 0; i < SHARDS; i++)); do
  f=$out/shard-$i.h5
  [[ -f "$f" ]] || die "missing $f"
  "$interplace" inspect "$f" >/dev/null || die "interplace inspect $f failed"
  [[ "$(root_attr "$f" shard)" == "$i/$SHARDS" ]] || die "$f: shard attribute is '$(root_attr "$f" shard)', not $i/$SHARDS"
  [[ "$(root_attr "$f" slurm_array_job_id)" == "$sweep_job" ]] \
    || die "$f: slurm_array_job_id is '$(root_attr "$f" slurm_array_job_id)', not $sweep_job"
  [[ "$(root_attr "$f" slurm_array_task_id)" == "$i" ]] \
    || die "$f: slurm_array_task_id is '$(root_attr "$f" slurm_array_task_id)', not $i"
  [[ "$(root_attr "$f" slurm_job_id)" =~ ^[0-9]+$ ]] || die "$f: no slurm_job_id"
  mapfile -t ids < <(config_ids "$f")
  mapfile -t want < <(expected_ids "$i/$SHARDS")
  ((${#want[@]} > 0)) || die "interplace sweep --dry-run --shard $i/$SHARDS lists no configuration"
  [[ "${ids[*]}" == "${want[*]}" ]] \
    || die "$f holds ${#ids[@]} configurations, not the ${#want[@]} of shard $i/$SHARDS (sweep --dry-run)"
  log "shard $i: ${#ids[@]} configuration(s) as expected, job $(root_attr "$f" slurm_job_id) = ${sweep_job}_$i"
  shard_ids+=("${ids[@]}")
done

merged=$out/merged.h5
[[ -f "$merged" ]] || die "missing $merged"
summary=$("$interplace" inspect "$merged") || die "interplace inspect $merged failed (exit $?)"
mapfile -t merged_ids < <(config_ids "$merged")
mapfile -t union_ids < <(printf '%s\n' "${shard_ids[@]}" | sort)
mapfile -t all_ids < <(expected_ids 0/1)
[[ "${merged_ids[*]}" == "${all_ids[*]}" ]] \
  || die "$merged holds ${#merged_ids[@]} configurations, the spec ${#all_ids[@]} (sweep --dry-run)"
((${#merged_ids[@]} > 0)) || die "$merged holds no configuration"
[[ -z "$(printf '%s\n' "${union_ids[@]}" | uniq -d)" ]] || die "the shards share configurations"
[[ "${merged_ids[*]}" == "${union_ids[*]}" ]] \
  || die "$merged holds ${#merged_ids[@]} configurations, the shards ${#union_ids[@]}"
failed=()
for id in "${merged_ids[@]}"; do
  status=$(h5dump -a "/configs/$id/status" "$merged" | sed -n 's/^ *(0): "\(.*\)"$/\1/p')
  [[ "$status" == ok || "$status" == skipped ]] || failed+=("$id:$status")
done
((${#failed[@]} == 0)) || die "configurations not ok: ${failed[*]}"
[[ -d "$out/report" && -n "$(ls -A "$out/report")" ]] || die "no report in $out/report"

log "PASSED: sweep array job $sweep_job (shards ${sweep_job}_0..${sweep_job}_$((SHARDS - 1))), merge job $merge_job"
log "merged: $merged, ${#merged_ids[@]} configuration(s); report: $(ls "$out/report" | paste -sd ' ')"
echo "$summary" | sed 's/^/    /'
