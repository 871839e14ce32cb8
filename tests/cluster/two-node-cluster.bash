# A two-node Slurm cluster on one machine, for tests: two network namespaces, each a
# "node" with its own interface, address and (UTS namespace) host name, joined by a veth
# pair; munged; slurmctld on node1 (the head node); a slurmd on each node
# (NodeName=node[1-2]). Open MPI and Slurm see two hosts: ranks on different nodes talk over
# TCP on the veth link, not shared memory. Sourced by the tests in tests/cluster/; needs
# bash, root, iproute2, util-linux (unshare) and Debian 12's slurm-wlm 22.05 and munge.
#
#   cluster2_supported      0 when this machine lets us create network and UTS namespaces
#   cluster2_start DIR      creates the namespaces and the link, writes DIR/slurm.conf,
#                           starts the daemons, waits until both nodes are idle, exports
#                           SLURM_CONF
#   on_head CMD...          runs CMD on node1 (sbatch, squeue, scontrol, slurm/submit: the
#                           controller listens on node1's address, which only the two
#                           namespaces can reach)
#   on_node N CMD...        runs CMD on node N (1 or 2), with its host name
#   cluster2_power_off N    kills every process on node N (its slurmd, step daemons and
#                           ranks) with SIGKILL, as if it lost power; the namespace stays
#   cluster2_power_on N     starts node N's slurmd again and waits until it is back in service
#   cluster2_stop           cancels the jobs, stops the daemons it started (by PID), kills
#                           what is left in its namespaces and deletes them
#
# By hand (as root; see tests/cluster/README.md):
#   source tests/cluster/two-node-cluster.bash; cluster2_start /tmp/c2
#   on_head sinfo; on_head srun -N2 hostname; ...; cluster2_stop
#
# The namespaces are named interplace-<pid>-node1/2 (<pid>: the shell that made them), so
# tests running at the same time do not meet; inside them the addresses are always
# 10.77.0.1 and .2 and the ports Slurm's defaults, as nothing else lives there. The host
# names come from a UTS namespace per daemon (`unshare --uts` then `hostname nodeN`): every
# process of a node descends from its slurmd (slurmstepd, the job's shell, the ranks) and
# inherits the name, which is what MPI_Get_processor_name reports. Files (keys, sockets,
# spool, logs, results) are the one shared file system; munged's socket is a file, so one
# munged serves both nodes. The Slurm options are those of tests/slurm/local-cluster.bash
# (no cgroups, pmix), whose helpers this file reuses.

_cluster2_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../slurm/local-cluster.bash
source "$_cluster2_here/../slurm/local-cluster.bash"

cluster2_ns=()        # the two namespaces, node1 first
cluster2_addr=(10.77.0.1 10.77.0.2)
cluster2_veth=()      # the veth link's ends, node1's first

# Whether the namespaces this cluster needs can be made here: prints why not and returns 1.
# It tries every kind of operation _cluster2_make_nodes and cluster2_stop do, on throw-away
# namespaces, because each can fail on its own: root alone is not enough in an
# unprivileged container, and in a chroot `ip netns add` works but `ip -n` does not (it
# remounts / as a slave, "mount --make-rslave / failed: Invalid argument", where / is not
# a mount point).
cluster2_supported() {
  local probe=(interplace-$$-probe1 interplace-$$-probe2) out why=""
  [[ $(id -u) -eq 0 ]] || { echo "needs root (network namespaces, Slurm daemons as root)"; return 1; }
  for cmd in ip nsenter unshare hostname slurmctld slurmd munged; do
    command -v "$cmd" >/dev/null || { echo "'$cmd' is not installed"; return 1; }
  done
  if ! out=$(ip netns add "${probe[0]}" 2>&1); then
    echo "ip netns add is not permitted here: $out"; return 1
  fi
  if ! out=$(ip netns add "${probe[1]}" 2>&1); then
    why="a second network namespace cannot be made: $out"
  elif ! out=$(ip -n "${probe[0]}" link set lo up 2>&1); then
    why="ip -n (a command inside a network namespace) fails here: $out"
  elif ! out=$(ip link add "ipl$$p" netns "${probe[0]}" type veth peer name "ipl$$q" \
      netns "${probe[1]}" 2>&1); then
    why="a veth pair between two network namespaces cannot be made: $out"
  elif ! out=$(nsenter --net="/run/netns/${probe[0]}" unshare --uts sh -c 'hostname probe-node' 2>&1); then
    why="a UTS namespace inside a network namespace is not permitted here: $out"
  fi
  local ns
  for ns in "${probe[@]}"; do
    [[ -e /run/netns/$ns ]] || continue
    if ! out=$(ip netns del "$ns" 2>&1); then
      why=${why:-"a network namespace cannot be deleted here: $out"}
    fi
  done
  [[ -z "$why" ]] || { echo "$why"; return 1; }
}

# nsenter, not `ip netns exec`: the latter also makes a mount namespace with a fresh /sys,
# without /sys/fs/cgroup, and slurmd 22.05 refuses to start without it (even with no
# cgroup plugins configured).
on_node() { local n=$1; shift; nsenter --net="/run/netns/${cluster2_ns[n - 1]}" "$@"; }
on_head() { on_node 1 "$@"; }

_cluster2_make_nodes() {
  local i
  # 15 characters at most for an interface name: ipl + pid (<= 7 digits) + a/b.
  cluster2_veth=(ipl$$a ipl$$b)
  local veth=("${cluster2_veth[@]}")
  cluster2_ns=("interplace-$$-node1" "interplace-$$-node2")
  for i in 0 1; do
    ip netns add "${cluster2_ns[i]}" || die "ip netns add ${cluster2_ns[i]} failed"
    ip -n "${cluster2_ns[i]}" link set lo up
  done
  ip link add "${veth[0]}" netns "${cluster2_ns[0]}" type veth peer name "${veth[1]}" netns "${cluster2_ns[1]}" \
    || die "could not create the veth pair between the namespaces"
  for i in 0 1; do
    ip -n "${cluster2_ns[i]}" addr add "${cluster2_addr[i]}/24" dev "${veth[i]}"
    ip -n "${cluster2_ns[i]}" link set "${veth[i]}" up
  done
  log "namespaces ${cluster2_ns[*]}: node1 ${cluster2_addr[0]} <-> node2 ${cluster2_addr[1]} (${veth[*]})"
}

_cluster2_write_conf() {
  local node_line
  # The machine's real CPUs and memory, claimed by each node (they share them).
  node_line=$(slurmd -C | head -n 1)
  [[ "$node_line" == NodeName=* ]] || die "slurmd -C printed no NodeName line: $node_line"
  node_line=${node_line#NodeName=* }
  mkdir -p "$cluster_dir"/{state,spool/node1,spool/node2,log,tmp/here}
  cat >"$cluster_dir/slurm.conf" <<CONF
# Generated by tests/cluster/two-node-cluster.bash: a throw-away two-node cluster whose
# nodes are network namespaces of one machine.
ClusterName=interplace-2node
SlurmctldHost=node1(${cluster2_addr[0]})
SlurmUser=root
SlurmdUser=root
MailProg=/bin/true
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$cluster_dir/munge/munge.socket
StateSaveLocation=$cluster_dir/state
# %n: the node's name, as both slurmds share one file system.
SlurmdSpoolDir=$cluster_dir/spool/%n
SlurmdPidFile=$cluster_dir/slurmd-%n.pid
SlurmdLogFile=$cluster_dir/log/slurmd-%n.log
# Per node (a bind mount in each slurmd's mount namespace, cluster2_start).
TmpFS=$cluster_dir/tmp/here
SlurmctldPidFile=$cluster_dir/slurmctld.pid
SlurmctldLogFile=$cluster_dir/log/slurmctld.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=pmix
ReturnToService=2
# A node that stops answering is DOWN after 10 s (the node-failure test), not 5 minutes.
SlurmdTimeout=10
InactiveLimit=0
KillWait=5
MinJobAge=600
NodeName=node1 NodeAddr=${cluster2_addr[0]} $node_line State=UNKNOWN
NodeName=node2 NodeAddr=${cluster2_addr[1]} $node_line State=UNKNOWN
PartitionName=debug Nodes=node[1-2] Default=YES MaxTime=30 State=UP
CONF
}

_cluster2_idle_nodes() { on_head sinfo --noheader --responding --states=idle --format=%n 2>/dev/null | sort -u | wc -l; }
_cluster2_all_idle() { [[ $(_cluster2_idle_nodes) == 2 ]]; }

# Each node's own TmpFS (where the pmix plugin makes spmix_appdir_<uid>_<job>.<step> on
# every node of a step: one shared directory makes the second node's launch fail with
# "File exists"): a private mount namespace binds tmp/nodeN over the TmpFS path.
_cluster2_start_slurmd() {
  local n=$1
  mkdir -p "$cluster_dir/tmp/node$n"
  on_node "$n" unshare --uts --mount --propagation private bash -c \
    "hostname node$n && mount --bind \"\$1/tmp/node$n\" \"\$1/tmp/here\" && exec slurmd -D -f \"\$SLURM_CONF\"" \
    slurmd-node$n "$cluster_dir" >>"$cluster_dir/log/slurmd-node$n.out" 2>&1 &
  cluster_pids+=($!)
}

cluster2_start() {
  cluster_dir=$1
  mkdir -p "$cluster_dir"
  chmod 700 "$cluster_dir"
  local v n
  for v in $(compgen -e | grep -E '^(SLURM|SBATCH|SRUN|SALLOC)_' || true); do unset "$v"; done
  export SLURM_CONF=$cluster_dir/slurm.conf
  _cluster2_make_nodes
  _start_munge
  _cluster2_write_conf
  # Each daemon execs through nsenter, unshare and bash: $! is the daemon's PID.
  on_head unshare --uts bash -c 'hostname node1 && exec slurmctld -D -i -f "$SLURM_CONF"' \
    >"$cluster_dir/log/slurmctld.out" 2>&1 &
  cluster_pids+=($!)
  wait_for 30 on_head scontrol ping \
    || { tail -n 30 "$cluster_dir"/log/slurmctld.*; die "slurmctld did not answer within 30 s"; }
  log "slurmctld running on node1 (pid ${cluster_pids[-1]})"
  _cluster2_start_slurmd 1
  _cluster2_start_slurmd 2
  wait_for 60 _cluster2_all_idle || {
    on_head sinfo; tail -n 30 "$cluster_dir"/log/slurmd-*
    die "the two nodes did not become idle within 60 s"
  }
  log "slurmd running on node1 (pid ${cluster_pids[2]}) and node2 (pid ${cluster_pids[3]}); nodes:"
  on_head sinfo --Node --long | sed 's/^/    /'
}

# Starts node N's slurmd again (after cluster2_power_off) and waits until both nodes are
# idle (ReturnToService=2: a node that was DOWN for not responding is back once it
# registers).
cluster2_power_on() {
  _cluster2_start_slurmd "$1"
  wait_for 90 _cluster2_all_idle || { on_head sinfo; die "node$1 did not come back within 90 s"; }
  log "node$1 back (slurmd pid ${cluster_pids[-1]})"
}

# Kills every process in node N's namespace (slurmd, slurmstepd, the job's tasks) at once.
cluster2_power_off() {
  local n=$1 pids
  mapfile -t pids < <(ip netns pids "${cluster2_ns[n - 1]}")
  ((${#pids[@]})) || return 0
  log "powering node$n off: SIGKILL to ${pids[*]}"
  kill -KILL "${pids[@]}" 2>/dev/null || true
}

cluster2_stop() {
  [[ -n "$cluster_dir" ]] || return 0
  local ns pids
  if ((${#cluster2_ns[@]})) && ((${#cluster_pids[@]} >= 2)) && on_head scontrol ping >/dev/null 2>&1; then
    on_head scancel --full --partition=debug 2>/dev/null || true
    wait_for 30 _cluster2_no_jobs || log "jobs still listed 30 s after scancel"
  fi
  # local-cluster.bash's cluster_stop: the daemons by PID in reverse start order, then what
  # still carries our SLURM_CONF (its own scancel finds no controller from here: skipped).
  cluster_stop
  # Anything still in our namespaces was started in them by us.
  for ns in "${cluster2_ns[@]}"; do
    mapfile -t pids < <(ip netns pids "$ns" 2>/dev/null)
    if ((${#pids[@]})); then
      log "killing what is left in $ns: ${pids[*]}"
      kill -KILL "${pids[@]}" 2>/dev/null || true
    fi
    ip netns del "$ns" 2>/dev/null || log "could not delete namespace $ns"
  done
  cluster2_ns=()
}
_cluster2_no_jobs() { [[ -z "$(on_head squeue --noheader 2>/dev/null)" ]]; }

# The start of a test on the two-node cluster (cluster_test_begin of local-cluster.bash for
# two nodes): its EXIT trap (cluster_test_finish, stopping with cluster2_stop), a fresh
# folder $work (/tmp/interplace-cluster-$1.XXXXXX) and the cluster started in it.
cluster2_test_begin() {
  work=""
  cluster_stop_command=cluster2_stop
  trap cluster_test_finish EXIT
  trap 'exit 130' INT TERM
  work=$(mktemp -d "/tmp/interplace-cluster-$1.XXXXXX")
  cluster2_start "$work/cluster"
}
