#!/usr/bin/env bash
# slurm.time_limit_requeue: a shard that reaches its time limit on a real (one-node,
# throw-away) Slurm cluster (tests/slurm/local-cluster.bash; root, else exit 77 = skipped).
#
#   tests/slurm/test_time_limit.sh INTERPLACE
#     INTERPLACE  interplace_fake (CTest passes it): its configurations sleep
#                 INTERPLACE_FAKE_STEP_S per step, so their length does not depend on how
#                 busy the machine is; the real `interplace` works too, only less predictably
#
# slurm/submit runs a 30-configuration spec (2 ranks, ~2 s each, ~60 s in all) as one shard
# with --time 1 (Slurm's minimum, 60 s), --warn-before 50 and --max-requeues 1:
#   run 1  SIGUSR1 arrives 10-40 s in (slurmctld checks time limits every 30 s), the batch
#          shell forwards it to srun, the ranks finish their configuration and stop at the
#          same boundary (exit 3), sweep.sbatch requeues the array task;
#   run 2  (released from the requeue's BeginTime hold by the test, to keep it short)
#          resumes the file, is warned again, stops, and is not requeued (the bound);
#   merge  runs after the shard ended (afterany, although it FAILED), merges what exists
#          and lists the missing configurations in its log and DIR/report/missing.txt.
# Checks: the log's forwarded signal, requeue and resume lines; the merged file holds the
# finished configurations once each and the rest are listed missing, not one more.
# Duration, measured on 2 cores: 70-75 s in all (jobs 66 s: two runs of ~26 s, the requeued
# step relaunched once after 10 s, merge and report ~5 s); at most ~130 s, as each warning
# comes 10-40 s into its run.
set -euo pipefail

BUDGET_S=170
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source-path=SCRIPTDIR
source "$here/local-cluster.bash"

interplace=${1:?usage: test_time_limit.sh INTERPLACE}
if ! why=$(slurm_supported); then
  echo "SKIP: $why"
  exit 77
fi
[[ -x "$interplace" ]] || die "interplace binary '$interplace' is not executable"

cluster_test_begin timelimit

# 30 configurations of 2 ranks (30 seeds).
spec=$work/slow.toml
cat >"$spec" <<'TOML'
models = ["resnet20"]
dataset = "synthetic"
devices = 2
micro_batches = 2
batch_size = 4
warmup_steps = 1
steps = 3
seeds = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,
         24, 25, 26, 27, 28, 29, 30]
TOML
export INTERPLACE_FAKE_STEP_S=0.5   # 4 steps: ~2 s per configuration

out=$work/out
start=$SECONDS
submit_output=$("$root/slurm/submit" "$spec" --out "$out" --time 1 --warn-before 50 \
                  --max-requeues 1 --merge-time 5 --interplace "$interplace" 2>&1 || true)
echo "$submit_output" | sed 's/^/    /'
sweep_job=$(awk '$1 == "sweep" && $2 == "job:" {print $3}' <<<"$submit_output")
merge_job=$(awk '$1 == "merge" && $2 == "job:" {print $3}' <<<"$submit_output")
[[ "$sweep_job" =~ ^[0-9]+$ && "$merge_job" =~ ^[0-9]+$ ]] || die "could not read the job ids"
grep -q 'ntasks-per-node=2\|x 2 rank' <<<"$submit_output" || die "submit did not take 2 ranks from the spec"

field() { scontrol show job "$1" 2>/dev/null | grep -o "$2=[^ ]*" | head -n 1 | cut -d= -f2; }
deadline=$((start + BUDGET_S - 30))
released=0 last="" pending_since=""
while :; do
  s=$(field "${sweep_job}_0" JobState) r=$(field "${sweep_job}_0" Restarts) m=$(field "$merge_job" JobState)
  now="shard: ${s:-?} (restarts ${r:-?}, $(field "${sweep_job}_0" Reason)); merge: ${m:-?}"
  [[ "$now" == "$last" ]] || { log "$now"; last=$now; }
  # The requeued task waits for its BeginTime (Slurm holds a requeued job until the
  # credentials of its previous run have expired): let it go sooner, but not within the
  # second of the requeue. slurmd refuses a credential made in the same second as the
  # revocation of the old run's (whole-second times, `cred->ctime <= revoked`), and the run
  # then fails at once with nothing in its log (seen in CI on a loaded machine); so wait
  # until the node has cleaned up the old run and a few seconds have passed.
  if [[ "$s" == PENDING && "${r:-0}" -ge 1 && $released == 0 ]]; then
    pending_since=${pending_since:-$SECONDS}
    if ((SECONDS - pending_since >= 3)) && ! sinfo -h -o %T | grep -q completing; then
      scontrol update JobId="${sweep_job}_0" StartTime=now && released=1
    fi
  fi
  [[ "$m" =~ ^(COMPLETED|FAILED|CANCELLED|TIMEOUT)$ ]] && break
  ((SECONDS < deadline)) || die "jobs not finished after $((SECONDS - start)) s ($now)"
  sleep 1
done
log "jobs ended after $((SECONDS - start)) s"

logfile=$(ls "$out"/logs/sweep-*.out)
cat "$logfile" | sed 's/^/    | /'
[[ "$m" == COMPLETED ]] || die "the merge job ended $m"
[[ "$(field "${sweep_job}_0" Restarts)" == 1 ]] || die "the shard was not requeued exactly once"
grep -q 'SIGUSR1: forwarded to the sweep' "$logfile" || die "no forwarded SIGUSR1 in the log"
[[ $(grep -c 'SIGUSR1: stopped after the configuration in flight; kept' "$logfile") == 2 ]] \
  || die "the sweep did not stop on the warning in both runs"
grep -q 'requeueing .* (restart 1 of at most 1)' "$logfile" || die "no requeue in the log"
grep -q 'not requeued (restart count 1, at most 1)' "$logfile" || die "the second run did not stop requeueing"
grep -q '^resuming: [1-9][0-9]* of 30 configurations already in the file' "$logfile" \
  || die "the requeued run did not resume the file"
grep -q ' start \[' "$logfile" || die "no timestamped start lines in the log"

merged=$out/merged.h5
have=$(h5ls "$merged/configs" | wc -l)
missing=$(grep -c '^  shard 0: ' "$out/report/missing.txt" || true)
((have > 0 && have < 30)) || die "$merged holds $have configurations (expected some, not all 30)"
((have + missing == 30)) || die "$have in $merged + $missing listed missing != 30"
grep -q "WARNING: $missing of 30 configuration(s) missing" "$out"/logs/merge-*.out \
  || die "the merge log does not say what is missing"
log "PASSED in $((SECONDS - start)) s: $have configurations kept over 2 runs, $missing listed missing"
