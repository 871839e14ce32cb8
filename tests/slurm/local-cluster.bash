# A one-node Slurm cluster on this machine, for tests: munged, slurmctld and slurmd with
# every file (keys, sockets, state, spool, logs) under one private directory, and ports
# that are free. Sourced by test_submit_smoke.sh; needs bash, root, Debian 12's slurm-wlm
# 22.05 and munge (install_slurm installs them).
#
#   slurm_supported         0 when this machine can install and run the daemons (else
#                           prints why: not root, root of a user namespace only, packages
#                           missing where they cannot be installed)
#   install_slurm           apt-get install slurm-wlm munge when missing (root only)
#   cluster_start DIR       writes DIR/slurm.conf, starts the daemons, waits for an idle node,
#                           exports SLURM_CONF so that sbatch/scontrol/srun talk to it
#   cluster_stop            cancels every job of this cluster, stops the daemons it started
#                           (by PID) and any process that still carries its SLURM_CONF
#
# Nothing here touches /etc/slurm, /etc/munge, the system's munged or a real Slurm
# controller: the daemons use their own key, socket and ports, and run in the foreground
# as children of the test (so they are stopped by PID). No cgroups are used
# (proctrack/linuxproc, task/none, jobacct_gather/none), so it works in a container
# without systemd. The MPI plugin is pmix: Debian's Open MPI 4.1 is built against PMIx
# (ext3x component) and has no PMI-2 client, so srun --mpi=pmi2 cannot start it.

cluster_dir=""
cluster_pids=()   # munged slurmctld slurmd, in start order

log() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*"; }
die() { log "ERROR: $*" >&2; exit 1; }

slurm_supported() {
  [[ $(id -u) -eq 0 ]] || {
    echo "needs root to install slurm-wlm/munge and run slurmctld, slurmd and munged as root"
    return 1
  }
  # An unprivileged container maps its root to an ordinary user of the host (a user
  # namespace): the daemons' root-only steps fail there, so tell it from the real root.
  local map
  map=$(awk '{print $1, $2, $3}' /proc/self/uid_map 2>/dev/null)
  if [[ -n "$map" && "$map" != "0 0 4294967295" ]]; then
    echo "root only inside a user namespace (an unprivileged container; uid_map '$map'): Slurm's daemons need the host's root"
    return 1
  fi
  local installed
  installed=$(dpkg-query -W -f='${Status}\n' slurm-wlm munge 2>/dev/null | grep -c "install ok installed")
  if [[ $installed -ne 2 && ! -w /var/lib/dpkg ]]; then
    echo "slurm-wlm and munge are not installed and cannot be here (/var/lib/dpkg is not writable)"
    return 1
  fi
}

install_slurm() {
  local missing=() p status
  for p in slurm-wlm munge; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [[ "$status" == "install ok installed" ]] || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  log "installing ${missing[*]} (apt-get)"
  # Bounded: a hung mirror must not eat the test's time budget.
  DEBIAN_FRONTEND=noninteractive timeout 120 apt-get update -qq \
    || die "apt-get update failed or took over 120 s"
  DEBIAN_FRONTEND=noninteractive timeout 240 apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null || die "apt-get install ${missing[*]} failed or took over 240 s"
}

# A TCP port nothing listens on (the kernel picks it; a race with another process binding
# it in the next milliseconds is possible but harmless for a test: slurmctld would fail
# to start and the test would say so).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits up to $1 seconds for the command "$2 ..." to succeed; returns 1 on timeout.
wait_for() {
  local timeout=$1; shift
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || return 1
    sleep 0.5
  done
}

_start_munge() {
  local d=$cluster_dir/munge
  mkdir -p "$d"
  chmod 700 "$d"
  # Our own key: the system's /etc/munge/munge.key (if any) is never read.
  dd if=/dev/urandom of="$d/munge.key" bs=1 count=1024 status=none
  chmod 600 "$d/munge.key"
  # --force: munged refuses a socket directory under a world-writable /tmp otherwise.
  munged --foreground --force --key-file="$d/munge.key" --socket="$d/munge.socket" \
    --pid-file="$d/munged.pid" --log-file="$d/munged.log" --seed-file="$d/munged.seed" \
    >"$d/munged.out" 2>&1 &
  cluster_pids+=($!)
  wait_for 20 munge --socket="$d/munge.socket" --no-input \
    || { cat "$d/munged.out" "$d/munged.log" 2>/dev/null; die "munged did not start"; }
  log "munged running (pid ${cluster_pids[-1]}, socket $d/munge.socket)"
}

_write_slurm_conf() {
  local host node_line ctld_port slurmd_port
  host=$(hostname -s)
  # The machine's real CPUs, sockets, cores and memory, as slurmd sees them.
  node_line=$(slurmd -C | head -n 1)
  [[ "$node_line" == NodeName=* ]] || die "slurmd -C printed no NodeName line: $node_line"
  node_line=${node_line#NodeName=* }   # keep CPUs=... RealMemory=...
  ctld_port=$(free_port)
  slurmd_port=$(free_port)
  mkdir -p "$cluster_dir"/{state,spool,log,tmp}
  cat >"$cluster_dir/slurm.conf" <<EOF
# Generated by tests/slurm/local-cluster.bash: a throw-away one-node cluster.
ClusterName=interplace-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
MailProg=/bin/true
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$cluster_dir/munge/munge.socket
StateSaveLocation=$cluster_dir/state
SlurmdSpoolDir=$cluster_dir/spool
# The pmix plugin's per-step directories (spmix_appdir_<uid>_<job>.<step>) go under TmpFS:
# under /tmp, a directory left by an earlier test cluster (job ids restart at 1) fails the launch.
TmpFS=$cluster_dir/tmp
SlurmctldPidFile=$cluster_dir/slurmctld.pid
SlurmdPidFile=$cluster_dir/slurmd.pid
SlurmctldLogFile=$cluster_dir/log/slurmctld.log
SlurmdLogFile=$cluster_dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups (containers without systemd): plain process tracking, no task binding.
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
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
MinJobAge=600
NodeName=$host NodeAddr=127.0.0.1 $node_line State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=30 State=UP
EOF
}

node_idle() { sinfo --noheader --responding --states=idle --format=%n | grep -q .; }

cluster_start() {
  cluster_dir=$1
  mkdir -p "$cluster_dir"
  chmod 700 "$cluster_dir"
  # A test run inside a real Slurm job must not talk to that job's cluster.
  local v
  for v in $(compgen -e | grep -E '^(SLURM|SBATCH|SRUN|SALLOC)_' || true); do unset "$v"; done
  export SLURM_CONF=$cluster_dir/slurm.conf

  _start_munge
  _write_slurm_conf
  slurmctld -D -i -f "$SLURM_CONF" >"$cluster_dir/log/slurmctld.out" 2>&1 &
  cluster_pids+=($!)
  wait_for 30 scontrol ping \
    || { tail -n 30 "$cluster_dir"/log/slurmctld.*; die "slurmctld did not answer within 30 s"; }
  log "slurmctld running (pid ${cluster_pids[-1]})"
  slurmd -D -f "$SLURM_CONF" >"$cluster_dir/log/slurmd.out" 2>&1 &
  cluster_pids+=($!)
  wait_for 60 node_idle \
    || { sinfo; tail -n 30 "$cluster_dir"/log/slurmd.*; die "the node did not become idle within 60 s"; }
  log "slurmd running (pid ${cluster_pids[-1]}); node idle:"
  sinfo --Node --long | sed 's/^/    /'
}

# PIDs of processes whose environment holds this cluster's SLURM_CONF: the daemons'
# job step daemons (slurmstepd inherits slurmd's environment) and the jobs' processes.
_cluster_processes() {
  local p needle="SLURM_CONF=$cluster_dir/slurm.conf"
  for p in /proc/[0-9]*; do
    [[ ${p#/proc/} == "$$" || ${p#/proc/} == "$BASHPID" ]] && continue
    { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qxF "$needle" && echo "${p#/proc/}"
  done
  return 0
}

_no_jobs() { [[ -z "$(squeue --noheader 2>/dev/null)" ]]; }

# A process has exited once it is gone or a zombie (kill -0 succeeds on zombies).
_exited() {
  local state
  state=$(sed -n 's/^[0-9]* (.*) \([A-Z]\).*/\1/p' "/proc/$1/stat" 2>/dev/null) || return 0
  [[ -z "$state" || "$state" == Z ]]
}

cluster_stop() {
  [[ -n "$cluster_dir" ]] || return 0
  local i pid left
  if ((${#cluster_pids[@]} >= 2)) && scontrol ping >/dev/null 2>&1; then
    # Every job of this cluster (they are all ours); they end within KillWait (5 s).
    scancel --full --partition=debug 2>/dev/null || true
    wait_for 30 _no_jobs || log "jobs still listed 30 s after scancel"
  fi
  # Daemons in reverse start order: slurmd, slurmctld, munged.
  for ((i = ${#cluster_pids[@]} - 1; i >= 0; i--)); do
    pid=${cluster_pids[i]}
    kill -TERM "$pid" 2>/dev/null || continue
    wait_for 20 _exited "$pid" || { log "pid $pid ignored SIGTERM for 20 s: SIGKILL"; kill -KILL "$pid" 2>/dev/null; }
    wait "$pid" 2>/dev/null || true   # reap it (they are children of this shell)
  done
  cluster_pids=()
  # Whatever still carries our SLURM_CONF (a step daemon or a job task of a killed job).
  mapfile -t left < <(_cluster_processes)
  if ((${#left[@]})); then
    log "stopping leftover processes of this cluster: ${left[*]}"
    kill -TERM "${left[@]}" 2>/dev/null || true
    sleep 2
    mapfile -t left < <(_cluster_processes)
    ((${#left[@]} == 0)) || kill -KILL "${left[@]}" 2>/dev/null || true
  fi
  log "cluster stopped"
}

# The EXIT trap of a test on this cluster (`trap cluster_test_finish EXIT`): after a failure
# the last lines of the job logs and of the daemons' logs, then the cluster stopped and the
# test's folder $work removed (kept with INTERPLACE_SLURM_TEST_KEEP=1).
cluster_test_finish() {
  local status=$?
  set +e
  if ((status != 0)) && [[ -n "${work:-}" ]]; then
    log "FAILED (exit $status); logs:"
    # slurmd.log here, slurmd-node1.log ... on the two-node cluster; Open MPI's verbose
    # transport lines left out.
    for f in "$work"/out/logs/*.out "$cluster_dir"/log/slurmctld.log "$cluster_dir"/log/slurmd*.log; do
      [[ -f "$f" ]] || continue
      echo "----- $f (last 40 lines)"
      grep -v 'btl\|mca: base' "$f" | tail -n 40
    done
  fi
  "${cluster_stop_command:-cluster_stop}"
  if [[ -n "${work:-}" ]]; then
    if [[ "${INTERPLACE_SLURM_TEST_KEEP:-0}" == 1 ]]; then log "kept $work"; else rm -rf "$work"; fi
  fi
  exit "$status"
}

# The start of a test on this cluster: its EXIT trap, slurm-wlm installed, a fresh folder
# $work (/tmp/interplace-slurm-$1.XXXXXX) and the cluster started in it.
cluster_test_begin() {
  work=""
  trap cluster_test_finish EXIT
  trap 'exit 130' INT TERM
  install_slurm
  work=$(mktemp -d "/tmp/interplace-slurm-$1.XXXXXX")
  cluster_start "$work/cluster"
}
