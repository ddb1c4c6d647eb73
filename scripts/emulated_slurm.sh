#!/usr/bin/env bash
# The emulated Slurm: a real Slurm (Debian's slurmctld, slurmd and munge) on this one
# machine, with one slurmd per emulated node, each in a UTS namespace of its own named
# after its node (n1..nN), so processes Slurm starts there see themselves on that node.
#
#   scripts/emulated_slurm.sh start    start it (nothing to do when it already answers)
#   scripts/emulated_slurm.sh stop     stop every daemon it started
#   scripts/emulated_slurm.sh status   exit 0 when it answers, print `sinfo`
#   scripts/emulated_slurm.sh env      print the `export SLURM_CONF=...` line to use it
#
# Settings (environment): RANKMIG_SLURM_DIR (default /tmp/rankmig-slurm: configuration,
# state, spool and logs), RANKMIG_SLURM_NODES (default 4), RANKMIG_SLURM_CPUS (CPUs per
# node, default 4), RANKMIG_SLURM_PORT (slurmctld's port, default 16817; node i listens on
# 17000+i). Clients need SLURM_CONF=$RANKMIG_SLURM_DIR/slurm.conf (see `env`).
# Each node has a directory of its own for Slurm's PMIx plugin (RANKMIG_SLURM_DIR/tmp-nI,
# TmpFS in slurm.conf), so `srun --mpi=pmix` (Open MPI) runs across nodes as `srun
# --mpi=pmi2` (MPICH) does; see write_config and docs/slurm.md.
# Needs root (slurmd, namespaces) and the packages scripts/setup.sh installs.
set -euo pipefail

DIR=${RANKMIG_SLURM_DIR:-/tmp/rankmig-slurm}
NODES=${RANKMIG_SLURM_NODES:-4}
CPUS=${RANKMIG_SLURM_CPUS:-4}
CTLD_PORT=${RANKMIG_SLURM_PORT:-16817}
CONF=$DIR/slurm.conf
export SLURM_CONF=$CONF

die() {
  echo "emulated_slurm: $*" >&2
  exit 1
}

node_names() { for i in $(seq 1 "$NODES"); do echo "n$i"; done; }

answers() { [ -f "$CONF" ] && timeout 10 sinfo -h >/dev/null 2>&1; }

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

write_config() {
  mkdir -p "$DIR/state" "$DIR/log"
  {
    echo "# Written by scripts/emulated_slurm.sh: $NODES emulated nodes on this machine."
    echo "ClusterName=rankmig"
    echo "SlurmctldHost=$(hostname)(127.0.0.1)"
    echo "SlurmctldPort=$CTLD_PORT"
    echo "SlurmdPort=$((17000 + 1))"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "AuthType=auth/munge"
    echo "StateSaveLocation=$DIR/state"
    echo "SlurmdSpoolDir=$DIR/spool-%n"
    echo "SlurmctldPidFile=$DIR/slurmctld.pid"
    echo "SlurmdPidFile=$DIR/slurmd-%n.pid"
    echo "SlurmctldLogFile=$DIR/log/slurmctld.log"
    echo "SlurmdLogFile=$DIR/log/slurmd-%n.log"
    # One PMIx directory per node (srun --mpi=pmix). Slurm's PMIx plugin makes the
    # directory of a step's clients, spmix_appdir_UID_JOB.STEP, under TmpFS, which it
    # expands with the node's name (%n); its own server directory, pmix.JOB.STEP, is
    # under SlurmdSpoolDir (also %n). With the default TmpFS=/tmp every slurmd of this
    # machine made the same /tmp/spmix_appdir_0_J.S, and the step failed on all nodes
    # but the first ("File exists"). mpi.conf's PMIxCliTmpDirBase would not do: Slurm
    # 22.05 takes it as written, the same for every node (pmixp_info.c). Nothing else
    # reads TmpFS here (no job_container/tmpfs; it sets only the nodes' TmpDisk).
    # Checked with srun -N 2 -n 4 / -N 4 -n 8 --mpi=pmix of an MPI_Allreduce program:
    # Debian's Open MPI 4.1.4, PyPI's 4.1.8 and 5.0.11 ran on n1..n4 (2026-11-29).
    # slurmd logs "rmdir_recursive: could not open .../spmix_appdir_..." at each step's
    # end: the directory is gone already (nothing is left in tmp-nI); harmless.
    echo "TmpFS=$DIR/tmp-%n"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "MpiDefault=none"
    echo "SwitchType=switch/none"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_Core"
    echo "SchedulerType=sched/backfill"
    echo "ReturnToService=2"
    echo "SlurmdParameters=config_overrides"
    # Slurm's own default (300 s), not less: the emulated nodes share this machine's
    # CPUs, and on a 2-CPU VM (kernel 6.18) a job whose new processes sleep and yield
    # in short loops beside busy ranks once kept every other task off the CPUs for up
    # to 59 s (the kernel's "rcu_preempt kthread starved", "workqueue lockup"): with 30 s
    # slurmctld set the nodes DOWN and killed the job's step. A node whose slurmd is
    # killed is found lost by the launcher, not by this timeout.
    echo "SlurmdTimeout=300"
    echo "InactiveLimit=0"
    echo "KillWait=5"
    echo "MinJobAge=60"
    for i in $(seq 1 "$NODES"); do
      echo "NodeName=n$i NodeAddr=127.0.0.1 Port=$((17000 + i)) CPUs=$CPUS State=UNKNOWN"
    done
    echo "PartitionName=emulated Nodes=n[1-$NODES] Default=YES MaxTime=INFINITE State=UP"
  } >"$CONF.tmp"
  mv "$CONF.tmp" "$CONF"
}

start_munge() {
  if pgrep -x munged >/dev/null; then return; fi
  [ -f /etc/munge/munge.key ] || die "/etc/munge/munge.key is missing (run scripts/setup.sh)"
  mkdir -p /run/munge
  chown munge:munge /run/munge
  chmod 0755 /run/munge
  runuser -u munge -- /usr/sbin/munged || die "munged did not start"
}

# Starts the slurmd of node $1 in a UTS namespace named after it.
start_node() {
  mkdir -p "$DIR/spool-$1" "$DIR/tmp-$1"
  chmod 1777 "$DIR/tmp-$1"
  unshare --uts sh -c "hostname $1 && exec slurmd -f '$CONF' -N $1" ||
    die "slurmd of $1 did not start: see $DIR/log/slurmd-$1.log"
}

start() {
  [ "$(id -u)" -eq 0 ] || die "needs root (slurmd and UTS namespaces)"
  command -v slurmctld >/dev/null || die "slurmctld not installed (run scripts/setup.sh)"
  unshare --uts true 2>/dev/null || die "this machine does not allow UTS namespaces"
  if answers && pid_alive "$DIR/slurmctld.pid"; then
    # The controller runs: start only the nodes that died (a test kills one). A full
    # restart would forget the jobs and hand out job ids again from 1.
    local missing=()
    for n in $(node_names); do pid_alive "$DIR/slurmd-$n.pid" || missing+=("$n"); done
    # One started by this script before TmpFS was per node: srun --mpi=pmix fails on
    # all nodes but one there ("File exists"). Not restarted here: others' jobs run on it.
    grep -q '^TmpFS=' "$CONF" ||
      echo "emulated_slurm: running without a PMIx directory per node (no TmpFS in $CONF): srun --mpi=pmix needs \`$0 stop\` and \`start\`" >&2
    if [ ${#missing[@]} = 0 ]; then
      echo "emulated_slurm: already running ($CONF)" >&2
      return
    fi
    start_munge
    for n in "${missing[@]}"; do start_node "$n"; done
  else
    stop quietly
    write_config
    start_munge
    slurmctld -f "$CONF" -i || die "slurmctld did not start: see $DIR/log/slurmctld.log"
    for n in $(node_names); do start_node "$n"; done
  fi
  local deadline=$((SECONDS + 60))
  until [ "$(sinfo -h -N -t idle,mix,alloc -o %N 2>/dev/null | sort -u | wc -l)" -ge "$NODES" ]; do
    scontrol update nodename="n[1-$NODES]" state=resume >/dev/null 2>&1 || true
    [ $SECONDS -lt $deadline ] || die "the nodes did not come up within 60 s: $(sinfo -N 2>&1 | tr '\n' ' ')"
    sleep 1
  done
  echo "emulated_slurm: running, $NODES nodes; use it with: export SLURM_CONF=$CONF" >&2
}

stop() {
  for pidfile in "$DIR"/slurmd-*.pid "$DIR/slurmctld.pid"; do
    [ -f "$pidfile" ] || continue
    kill "$(cat "$pidfile")" 2>/dev/null || true
  done
  local deadline=$((SECONDS + 15))
  for pidfile in "$DIR"/slurmd-*.pid "$DIR/slurmctld.pid"; do
    while pid_alive "$pidfile" && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
    pid_alive "$pidfile" && kill -9 "$(cat "$pidfile")" 2>/dev/null || true
    rm -f "$pidfile"
  done
  # The state of jobs of an earlier start is not wanted by the next one, on the
  # controller nor on the nodes: job ids start again from 1, and a slurmd that kept the
  # credentials it revoked for an earlier job 1 would refuse the steps of the new one.
  rm -rf "$DIR/state" "$DIR"/spool-* "$DIR"/tmp-*
  [ "${1:-}" = quietly ] || echo "emulated_slurm: stopped" >&2
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status)
  answers || die "not answering ($CONF)"
  sinfo -N -o '%N %T %E'
  ;;
env) echo "export SLURM_CONF=$CONF" ;;
*)
  sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
  ;;
esac
