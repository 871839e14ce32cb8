#!/usr/bin/env bash
# cluster.two_node_sweep: slurm/submit --nodes 2 --tasks-per-node 2 on a two-node Slurm
# cluster made of network namespaces on this machine (two-node-cluster.bash; root, else
# exit 77 = skipped, with the reason).
#
#   tests/cluster/test_two_node_sweep.sh INTERPLACE PYTHON
#     INTERPLACE  the interplace binary (CTest passes $<TARGET_FILE:interplace>)
#     PYTHON      a Python with h5py and numpy (the project's .venv)
#   INTERPLACE_SLURM_TEST_KEEP=1 keeps the temporary directory (logs, results)
#
# The sweep (cross_node.toml) runs resnet20 on 1 rank and on K = 4 ranks, ranks 0-1 on
# node1 and 2-3 on node2 (srun's block distribution), launched by srun --mpi=pmix through
# the two slurmds. Open MPI is told to use tcp, self and vader only and to say which
# connections it makes (btl_base_verbose). Checks:
#   * the merged file: hosts and node-local ranks per rank, K = 4 losses = 1-rank losses to
#     1e-5, the inter-node bytes on the veth link and the intra-node bytes not on lo
#     (check_cross_node.py);
#   * the log: every rank made TCP connections to the other node's address and none to its
#     own node's (so same-node ranks talked through shared memory).
# Duration, measured on 2 cores: ~20 s (cluster up in ~3 s, the sweep ~8 s, merge and
# report ~6 s, stop ~3 s).
set -euo pipefail

BUDGET_S=200
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source-path=SCRIPTDIR
source "$here/two-node-cluster.bash"

interplace=${1:?usage: test_two_node_sweep.sh INTERPLACE PYTHON}
python=${2:?usage: test_two_node_sweep.sh INTERPLACE PYTHON}
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
"$python" -c 'import h5py, numpy' 2>/dev/null || die "$python has no h5py/numpy (scripts/install-deps makes .venv)"

start=$SECONDS
cluster2_test_begin sweep

# Bytes sent by each node's interfaces (veth to the other node; lo within the node), read
# through ip (on_node keeps this mount namespace, whose /sys/class/net is the machine's).
veth=("${cluster2_veth[@]}")
tx_bytes() { on_node "$1" ip -s -j link show dev "$2" | "$python" -c 'import json, sys; print(json.load(sys.stdin)[0]["stats64"]["tx"]["bytes"])'; }
declare -A before
for n in 1 2; do
  before[$n.veth]=$(tx_bytes "$n" "${veth[n - 1]}")
  before[$n.lo]=$(tx_bytes "$n" lo)
done

out=$work/out
submit_output=$(on_head env OMPI_MCA_btl=tcp,self,vader OMPI_MCA_btl_base_verbose=100 \
  "$root/slurm/submit" "$here/cross_node.toml" --out "$out" --nodes 2 --tasks-per-node 2 \
  --time 5 --warn-before 0 --merge-time 5 --interplace "$interplace")
echo "$submit_output" | sed 's/^/    /'
grep -q '1 shard(s) x 2 node(s) x 2 rank(s)' <<<"$submit_output" || die "submit did not ask for 2 nodes x 2 ranks"
sweep_job=$(awk '$1 == "sweep" && $2 == "job:" {print $3}' <<<"$submit_output")
merge_job=$(awk '$1 == "merge" && $2 == "job:" {print $3}' <<<"$submit_output")
[[ "$sweep_job" =~ ^[0-9]+$ && "$merge_job" =~ ^[0-9]+$ ]] || die "could not read the job ids"

field() { on_head scontrol show job "$1" 2>/dev/null | grep -oE "(^| )$2=[^ ]*" | head -n 1 | cut -d= -f2; }
deadline=$((start + BUDGET_S - 40)) last=""
while :; do
  m=$(field "$merge_job" JobState)
  now="sweep: $(field "${sweep_job}_0" JobState) on $(field "${sweep_job}_0" NodeList); merge: ${m:-?}"
  [[ "$now" == "$last" ]] || { log "$now"; last=$now; }
  [[ "$m" =~ ^(COMPLETED|FAILED|CANCELLED|TIMEOUT)$ ]] && break
  ((SECONDS < deadline)) || die "jobs not finished after $((SECONDS - start)) s ($now)"
  sleep 1
done
[[ "$(field "${sweep_job}_0" JobState)" == COMPLETED ]] || die "the sweep job ended $(field "${sweep_job}_0" JobState)"
[[ "$m" == COMPLETED ]] || die "the merge job ended $m"
[[ "$(field "${sweep_job}_0" NodeList)" == "node[1-2]" ]] || die "the sweep ran on $(field "${sweep_job}_0" NodeList), not node[1-2]"

traffic=$work/traffic.json
{
  echo "{"
  for n in 1 2; do
    echo "  \"node$n\": {\"veth\": $(($(tx_bytes "$n" "${veth[n - 1]}") - before[$n.veth])), \"lo\": $(($(tx_bytes "$n" lo) - before[$n.lo]))}$([[ $n == 1 ]] && echo ,)"
  done
  echo "}"
} >"$traffic"
"$python" "$here/check_cross_node.py" "$out/merged.h5" "$traffic"

# The connections Open MPI's TCP transport made ("[nodeN:pid] btl:tcp: now connected to
# ADDRESS, process ..."): from both nodes, each to the other node's address only.
logfile=$(ls "$out"/logs/sweep-*.out)
for n in 1 2; do
  other=${cluster2_addr[2 - n]} own=${cluster2_addr[n - 1]}
  grep -q "^\[node$n:[0-9]*\] btl:tcp: now connected to $other," "$logfile" \
    || die "no TCP connection from node$n to the other node ($other) in $logfile"
  ! grep -q "^\[node$n:[0-9]*\] btl:tcp: now connected to $own," "$logfile" \
    || die "a TCP connection between two ranks of node$n ($own): they should use shared memory"
done
log "TCP connections: $(grep -c 'btl:tcp: now connected to' "$logfile") between the nodes, none within one"
log "PASSED in $((SECONDS - start)) s"
