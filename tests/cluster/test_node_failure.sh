#!/usr/bin/env bash
# cluster.node_failure_resume: a node of a two-node sweep loses power mid-sweep, on the
# cluster of network namespaces (two-node-cluster.bash; root, else exit 77 = skipped).
#
#   tests/cluster/test_node_failure.sh INTERPLACE PYTHON
#     INTERPLACE  interplace_fake (CTest passes it): each configuration sleeps
#                 INTERPLACE_FAKE_STEP_S per step, so its length does not depend on load
#     PYTHON      a Python with h5py (the project's .venv)
#
# slurm/submit runs 8 configurations of K = 4 ranks over both nodes (--nodes 2
# --tasks-per-node 2, ~2 s each) with --max-requeues 0 (sbatch --no-requeue: Slurm would
# otherwise requeue the shard, which then waits for two healthy nodes). Once 2 are in the
# shard file, every process of node2 (slurmd, step daemon, ranks) gets SIGKILL. Checks:
#   * the shard ends (NODE_FAIL or FAILED, not left hanging: slurmctld marks node2 DOWN after
#     SlurmdTimeout = 10 s and ends the job), and the merge job (afterany) COMPLETES;
#   * the shard file holds the finished configurations, each once and `ok`; the merge log
#     and report/missing.txt list exactly the others;
#   * node2 powered on again, `slurm/submit --resume` with the same options completes the
#     sweep: all 8 once each, the first ones not run again (same started_utc).
# Duration, measured on 2 cores: ~90 s (see the log's PASSED line).
set -euo pipefail

BUDGET_S=280
TOTAL=8
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source-path=SCRIPTDIR
source "$here/two-node-cluster.bash"

interplace=${1:?usage: test_node_failure.sh INTERPLACE PYTHON}
python=${2:?usage: test_node_failure.sh INTERPLACE PYTHON}
# As root, Slurm is installed here rather than left to the tests/slurm cases that happen to
# run first (this test would otherwise skip on a fresh machine when scheduled before them).
if ! why=$(slurm_supported); then
  echo "SKIP: no two-node Slurm cluster on this machine: $why"
  exit 77
fi
install_slurm
if ! why=$(cluster2_supported); then
  echo "SKIP: no two-node cluster of namespaces on this machine: $why"
  exit 77
fi
[[ -x "$interplace" ]] || die "interplace binary '$interplace' is not executable"
"$python" -c 'import h5py' 2>/dev/null || die "$python has no h5py (scripts/install-deps makes .venv)"

start=$SECONDS
cluster2_test_begin fail

spec=$work/eight.toml
cat >"$spec" <<'TOML'
models = ["resnet20"]
dataset = "synthetic"
devices = 4
micro_batches = 2
batch_size = 8
warmup_steps = 1
steps = 3
seeds = [1, 2, 3, 4, 5, 6, 7, 8]
TOML
export INTERPLACE_FAKE_STEP_S=0.4   # 4 steps: ~2 s per configuration
out=$work/out
shard=$out/shard-0.h5
submit() {
  on_head "$root/slurm/submit" "$spec" --out "$out" --nodes 2 --tasks-per-node 2 --time 5 \
    --warn-before 0 --max-requeues 0 --merge-time 5 --interplace "$interplace" "$@"
}
job_ids() {  # sets sweep_job and merge_job from submit's output
  sweep_job=$(awk '$1 == "sweep" && $2 == "job:" {print $3}' <<<"$1")
  merge_job=$(awk '$1 == "merge" && $2 == "job:" {print $3}' <<<"$1")
  [[ "$sweep_job" =~ ^[0-9]+$ && "$merge_job" =~ ^[0-9]+$ ]] || die "could not read the job ids: $1"
}
field() { on_head scontrol show job "$1" 2>/dev/null | grep -oE "(^| )$2=[^ ]*" | head -n 1 | cut -d= -f2; }
count() { "$python" -c 'import h5py, sys
try:
    print(len(h5py.File(sys.argv[1], "r")["configs"]))
except Exception:
    print(0)' "$1"; }
wait_merge() {  # waits for the merge job $merge_job to end; its state in $m
  local deadline=$((start + BUDGET_S - 30)) last="" now
  sweep_ended_at=""
  while :; do
    m=$(field "$merge_job" JobState)
    s=$(field "${sweep_job}_0" JobState)
    [[ -n "$sweep_ended_at" || "$s" =~ ^(PENDING|RUNNING|COMPLETING|CONFIGURING)$ ]] || sweep_ended_at=$SECONDS
    now="sweep: $s; merge: ${m:-?}; nodes: $(on_head sinfo -h -N -o '%N=%T' | paste -sd ' ')"
    [[ "$now" == "$last" ]] || { log "$now"; last=$now; }
    [[ "$m" =~ ^(COMPLETED|FAILED|CANCELLED|TIMEOUT)$ ]] && return 0
    ((SECONDS < deadline)) || die "jobs not finished after $((SECONDS - start)) s ($now)"
    sleep 1
  done
}

# --- run 1: node2 dies after 2 configurations ------------------------------------------
output=$(submit)
echo "$output" | sed 's/^/    /'
job_ids "$output"
deadline=$((SECONDS + 90))
until (($(count "$shard") >= 2)); do
  ((SECONDS < deadline)) || die "no 2 configurations in $shard after 90 s"
  sleep 0.3
done
cluster2_power_off 2
killed_at=$SECONDS
wait_merge
s=$(field "${sweep_job}_0" JobState)
log "shard ended $s $((sweep_ended_at - killed_at)) s after the power-off (SlurmdTimeout 10 s + slurmctld's ping interval)"
[[ "$s" =~ ^(NODE_FAIL|FAILED)$ ]] || die "the shard ended $s, not NODE_FAIL or FAILED"
[[ "$m" == COMPLETED ]] || die "the merge job ended $m"
[[ "$(field "${sweep_job}_0" Restarts)" == 0 ]] || die "the shard was requeued"

have=$(count "$out/merged.h5")
missing=$(grep -c '^  shard 0: ' "$out/report/missing.txt" || true)
((have >= 2 && have < TOTAL)) || die "$out/merged.h5 holds $have configurations (expected 2 to $((TOTAL - 1)))"
((have + missing == TOTAL)) || die "$have in merged.h5 + $missing listed missing != $TOTAL"
grep -q "WARNING: $missing of $TOTAL configuration(s) missing" "$out"/logs/merge-*.out \
  || die "the merge log does not say what is missing"
[[ -n "$(ls "$out/report"/*.md 2>/dev/null)" ]] || die "no report written: $(ls "$out/report")"
"$python" - "$shard" <<'PY' || die "the shard file is not as expected"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    ids = [g.attrs["id"] for g in f["configs"].values()]
    assert len(ids) == len(set(ids)), f"duplicate ids {ids}"
    bad = [(g.attrs["id"], g.attrs["status"]) for g in f["configs"].values() if g.attrs["status"] != "ok"]
    assert not bad, f"not ok: {bad}"
PY
started=$("$python" - "$shard" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    print(" ".join(sorted(k + "=" + g.attrs["started_utc"] for k, g in f["configs"].items())))
PY
)
log "run 1: $have of $TOTAL kept, $missing listed missing"

# --- run 2: node2 back, --resume ---------------------------------------------------------
cluster2_power_on 2
output=$(submit --resume)
echo "$output" | sed 's/^/    /'
job_ids "$output"
wait_merge
[[ "$(field "${sweep_job}_0" JobState)" == COMPLETED ]] || die "the resumed shard ended $(field "${sweep_job}_0" JobState)"
[[ "$m" == COMPLETED ]] || die "the second merge job ended $m"
grep -q "^resuming: $have of $TOTAL configurations already in the file" "$out/logs/sweep-${sweep_job}_0.out" \
  || die "the resumed shard did not say it resumed $have of $TOTAL"
"$python" - "$out/merged.h5" "$TOTAL" "$started" <<'PY' || die "the merged file after --resume is not as expected"
import sys, h5py
total, before = int(sys.argv[2]), dict(w.split("=", 1) for w in sys.argv[3].split())
with h5py.File(sys.argv[1], "r") as f:
    groups = {k: g.attrs for k, g in f["configs"].items()}
    ids = [a["id"] for a in groups.values()]
    assert len(ids) == total and len(set(ids)) == total, f"{len(ids)} groups, {len(set(ids))} ids"
    assert all(a["status"] == "ok" for a in groups.values()), "not all ok"
    again = [k for k, when in before.items() if groups[k]["started_utc"] != when]
    assert not again, f"run again: {again}"
PY
grep -q 'missing configurations: none' "$out/report/missing.txt" || die "missing.txt still lists configurations"
log "PASSED in $((SECONDS - start)) s: node2 powered off after $have of $TOTAL, resumed to $TOTAL, none twice"
