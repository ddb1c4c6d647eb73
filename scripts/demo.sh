#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs the live-migration demo.
#
# The Jacobi example runs as 32 MPI ranks on 4 nodes of 8 cores under `rankmig run`.
# Where this machine lets root create UTS namespaces (the default here), the nodes are
# the hosts n1..n5 of an emulated cluster (`rankmig run --hostfile ... --emulated-cluster`:
# each host a namespace with its own host name, reached by the MPI's launcher through
# `rankmig emulated-host`), and after each step the script prints where the ranks' processes
# really are, read from outside them (`nsenter -t PID -u hostname`), next to the plan.
# Elsewhere, or with DEMO_CLUSTER=0, the nodes are logical nodes of this one host. The
# script says which mode ran. While it runs, this script edits its availability file
# as in Fig. 3 of the paper (availability/demo/step1..5.avail): one node lost and
# replaced by a spare, nodes lost one by one until one is left, then the last lost and
# four back at once. Each edit waits for the job to have carried out the previous one.
# On the emulated cluster with Open MPI, step 5 is carried out by a relaunch from a
# checkpoint (Open MPI 4.1 and 5 cannot spawn onto hosts whose daemon forgot a launch of
# the job; see README); MPICH carries it out live.
# The job runs until the fifth step has been carried out, whatever the machine's speed:
# the steps are paced by wall time (DEMO_STEP_SECONDS of computation between two steps),
# then the script stops the job through the Jacobi example's --stop-file and compares its
# checksum with a plain run of as many iterations.
# At the end: the placement after each step, the report table, the chart's path, and
# the final checksum next to that of a run without availability changes. The job does
# not outlive the script (Ctrl-C, SIGTERM, SIGHUP or an error stops it).
#
# Settings (environment): DEMO_MPI (openmpi418 = PyPI's Open MPI 4.1.8, default; mpich,
# openmpi5: the other PyPI builds scripts/setup.sh installs under target/mpi, each built
# in target/<name>; openmpi4 = Debian's Open MPI 4.1.4, built in target), DEMO_RANKS
# (32), DEMO_SIZE (256), DEMO_STEP_SECONDS (3), DEMO_CHECK_EVERY (20), DEMO_DIR (target/demo), DEMO_CLUSTER (1 = emulated hosts where
# possible; 0 = logical nodes).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
MPI=${DEMO_MPI:-openmpi418}
case "$MPI" in
  openmpi4) TARGET=$PWD/target ;;
  openmpi418 | mpich | openmpi5)
    export PATH="$PWD/target/mpi/$MPI/bin:$PATH"
    export CARGO_TARGET_DIR="$PWD/target/$MPI"
    TARGET=$CARGO_TARGET_DIR
    ;;
  *) echo "demo: DEMO_MPI=$MPI: expected openmpi418, openmpi4, mpich or openmpi5" >&2; exit 2 ;;
esac
cargo build --release --quiet --bin rankmig --example jacobi

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
RANKS=${DEMO_RANKS:-32}
SIZE=${DEMO_SIZE:-256}
STEP_SECONDS=${DEMO_STEP_SECONDS:-3}
CHECK=${DEMO_CHECK_EVERY:-20}
DIR=${DEMO_DIR:-target/demo}
BIN=$TARGET/release/rankmig
APP=$TARGET/release/examples/jacobi
STEPS=$PWD/availability/demo
# An upper bound only: the script stops the job after its fifth step.
ITERS=1000000000

rm -rf "$DIR"
mkdir -p "$DIR"
cd "$DIR"

# A plain run (no rankmig) of 4 ranks by the launcher of $MPI: plain_run ARGS...
plain_run() {
  case "$MPI" in
    openmpi4 | openmpi418) mpirun --oversubscribe -np 4 "$APP" "$@" ;;
    openmpi5) mpirun --map-by :OVERSUBSCRIBE -np 4 "$APP" "$@" ;;
    mpich) mpiexec -n 4 "$APP" "$@" ;;
  esac
}

echo "== MPI: $MPI; this takes about $((30 + 5 * (STEP_SECONDS + 8))) s: 5 availability steps, each"
echo "   acted on after the 3 s settle time, carried out, then $STEP_SECONDS s of computation"
cp "$STEPS/step0.avail" av
MODE_ARGS=()
if [ "${DEMO_CLUSTER:-1}" = 1 ] && unshare --uts true 2>/dev/null && command -v nsenter >/dev/null; then
  MODE="emulated cluster: hosts n1..n5 are UTS namespaces of this machine"
  printf 'n%d slots=8\n' 1 2 3 4 5 >hosts
  MODE_ARGS=(--hostfile hosts --emulated-cluster --node-topology "synthetic:pack:2 core:4 pu:1")
else
  MODE="logical nodes of this host (DEMO_CLUSTER=0, or no UTS namespaces here)"
fi
echo
echo "== mode: $MODE"
echo "== rankmig run -n $RANKS --availability av ${MODE_ARGS[*]} -- jacobi --size $SIZE --stop-file stop"
"$BIN" run -n "$RANKS" --availability av "${MODE_ARGS[@]}" --run-dir run --check-every "$CHECK" -- \
  "$APP" --size "$SIZE" --iters "$ITERS" --stop-file "$PWD/stop" >run.out 2>run.err &
job=$!

# Where the job's processes run, read from outside: "host:processes ..." per host.
descendants() { local p; for p in $(pgrep -P "$1"); do echo "$p"; descendants "$p"; done; }

# The job does not outlive the script: on its exit, Ctrl-C (a background job of a
# script ignores SIGINT, so the job would run on), SIGTERM or SIGHUP, rankmig run gets
# SIGTERM, which it forwards to the launcher; what still runs 15 s later is killed.
stop_job() {
  trap - EXIT INT TERM HUP
  kill -0 "$job" 2>/dev/null || return 0
  echo "demo: stopping the job (rankmig run, pid $job)" >&2
  kill -TERM "$job" 2>/dev/null || true
  local t
  for t in $(seq 150); do
    kill -0 "$job" 2>/dev/null || return 0
    sleep 0.1
  done
  local p
  for p in $(descendants "$job") "$job"; do kill -KILL "$p" 2>/dev/null || true; done
}
trap stop_job EXIT
trap 'stop_job; exit 130' INT
trap 'stop_job; exit 143' TERM
trap 'stop_job; exit 129' HUP
real_hosts() {
  local p
  for p in $(descendants "$job"); do
    [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$APP" ] || continue
    grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null && continue
    nsenter -t "$p" -u hostname 2>/dev/null
  done | sort | uniq -c | awk '{printf "%s:%d ", $2, $1}'
  echo
}

records() { [ -f run/reconfigurations.jsonl ] && wc -l <run/reconfigurations.jsonl || echo 0; }
progress() { tail -n 1 run/iterations/rank-0.csv 2>/dev/null | cut -d, -f1 || echo 0; }
wait_until() { # $1 = what, then a command that must succeed
  local what=$1; shift
  local t=0
  until "$@"; do
    if ! kill -0 "$job" 2>/dev/null; then echo "the job ended before $what"; return 1; fi
    sleep 0.2; t=$((t + 1))
    if [ $t -gt 1500 ]; then echo "timed out waiting for $what"; return 1; fi
  done
}
started() { [ -f run/iterations/rank-0.csv ]; }

steps_done=0
summary() { # a placement file -> "node:ranks ..." in node order
  awk '{n[$2]++} END {for (k in n) printf "%s:%d ", k, n[k]; print ""}' "$1" |
    tr ' ' '\n' | sort | tr '\n' ' '
}
# Waits until the job has computed for $STEP_SECONDS s since now (its iteration count
# moves on), so that each placement shows in the report's chart.
compute_a_while() {
  local from until
  from=$(progress)
  until=$((SECONDS + STEP_SECONDS))
  moved_on() { [ "$SECONDS" -ge "$until" ] && [ "$(progress)" -gt "$from" ]; }
  wait_until "$STEP_SECONDS s of computation" moved_on
}
if wait_until "its first availability check" started && compute_a_while; then
  for k in 1 2 3 4 5; do
    grep -v '^#' "$STEPS/step$k.avail" | tr '\n' ' ' | sed "s/^/iteration $(progress), step $k: /"; echo
    cp "$STEPS/step$k.avail" av.tmp && mv av.tmp av
    target=$k
    have_records() { [ "$(records)" -ge "$target" ]; }
    wait_until "step $k" have_records || break
    if [ ${#MODE_ARGS[@]} -gt 0 ]; then
      # The replaced processes exit right after the step; after a relaunch the new
      # launch needs a moment to start its ranks.
      all_ranks_up() { [ "$(real_hosts | tr ' ' '\n' | awk -F: '{s+=$2} END {print s+0}')" -eq "$RANKS" ]; }
      wait_until "the ranks of step $k to run" all_ranks_up || true
      latest=$(ls -t run/placement-*.txt 2>/dev/null | head -n 1)
      echo "   planned: $(summary "${latest:-run/placement-0.txt}")"
      echo "   real:    $(real_hosts)"
    fi
    compute_a_while || break
    steps_done=$k
  done
fi
# Done (or stuck): the job stops at its next look at the stop file.
touch stop
if [ "$steps_done" -lt 5 ]; then
  sleep 5
  # The job is stuck or gone: stop it (the launcher's ranks are in their own process groups).
  if kill -0 "$job" 2>/dev/null; then
    for m in $(pgrep -P "$job"); do pkill -KILL -P "$m"; kill -KILL "$m"; done 2>/dev/null || true
  fi
fi
status=0
wait "$job" || status=$?
echo
echo "== job finished (exit $status) after $steps_done of 5 availability steps ($MODE)"
done_iters=$(sed -n 's/^iterations: //p' run.out)
sed -n 's/^checksum: //p' run.out | sed "s/^/migrated run checksum: /; s/\$/ ($done_iters iterations)/"
reference=""
if [ -n "$done_iters" ]; then
  reference=$(plain_run --size "$SIZE" --iters "$done_iters" 2>/dev/null | sed -n 's/^checksum: //p')
fi
echo "reference checksum:     $reference (a plain run of 4 ranks, as many iterations)"
echo
echo "== placement after each step (node:ranks)"
for f in $(ls -tr run/placement-*.txt 2>/dev/null); do
  printf '%-22s %s\n' "$(basename "$f")" "$(summary "$f")"
done
echo
echo "== report"
"$BIN" report run
echo
got=$(sed -n 's/^checksum: //p' run.out)
if [ "$status" -eq 0 ] && [ "$steps_done" -eq 5 ] && [ -n "$got" ] && [ "$got" = "$reference" ]; then
  echo "RESULT: checksums equal ($got): the migrations changed nothing in the result."
else
  echo "RESULT: FAILED (exit $status, checksum '${got:-none}' vs '$reference'); see $DIR/run.err"
  exit 1
fi
