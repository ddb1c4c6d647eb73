#!/usr/bin/env bash
# A soak of `rankmig run` on an emulated cluster: 8 Jacobi ranks on 6 hosts
# (h1..h6, 2 cores each offered at the start on h1..h4), `--auto-restart 2 --settle 1`,
# while this script edits the availability file every 3-9 s (seeded: the same seed
# gives the same edits at the same times) with good edits (random hosts and core
# counts, some oversubscribing) and bad ones (a host outside the allocation, a line
# `h1 two cores`, every host at 0), and SIGKILLs one random rank once, between 30 % and
# 60 % of the run, after a first checkpoint.
#
# At the end the job is stopped through the Jacobi example's stop file, and the run
# passes when: rankmig run exits 0, its checksum is that of a plain run of as many
# iterations, no process of the job is left, at least SOAK_MIN_CARRIED edits were
# carried out (recorded as migrated, relaunch or no moves), and the kill was survived
# (an automatic restart). Prints one table row (with SOAK_HEADER=1, the header first);
# exits 1 when the run failed.
#
# Usage: scripts/soak.sh [SEED]   (default 1)
# Settings (environment): SOAK_MPI (openmpi4 = Debian's Open MPI 4.1, default; mpich =
# the PyPI build under target/mpi, built in target/mpich), SOAK_SECONDS (length of
# the edits, default 180), SOAK_MIN_CARRIED (4), SOAK_DIR (a new temporary directory;
# kept when the run fails), SOAK_KILL (1; 0 = no kill). The binaries must be built
# (`cargo build --release --bin rankmig --examples`, with CARGO_TARGET_DIR=target/mpich
# and target/mpi/mpich/bin first on PATH for MPICH). The script runs under nice.
set -uo pipefail
cd "$(dirname "$0")/.."
SEED=${1:-1}
MPI=${SOAK_MPI:-openmpi4}
SECONDS_OF_EDITS=${SOAK_SECONDS:-180}
MIN_CARRIED=${SOAK_MIN_CARRIED:-4}
KILL=${SOAK_KILL:-1}
case "$MPI" in
  openmpi4) TARGET=$PWD/target/release ;;
  mpich)
    export PATH="$PWD/target/mpi/mpich/bin:$PATH"
    TARGET=$PWD/target/mpich/release
    ;;
  *)
    echo "soak.sh: SOAK_MPI must be openmpi4 or mpich, not $MPI" >&2
    exit 2
    ;;
esac
RANKMIG=$TARGET/rankmig
JACOBI=$TARGET/examples/jacobi
for f in "$RANKMIG" "$JACOBI"; do
  [ -x "$f" ] || { echo "soak.sh: $f is not built" >&2; exit 2; }
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
DIR=${SOAK_DIR:-$(mktemp -d /tmp/rankmig-soak.XXXXXX)}
mkdir -p "$DIR"
cd "$DIR" || exit 2
HOSTS=(h1 h2 h3 h4 h5 h6)
for h in "${HOSTS[@]}"; do echo "$h slots=4"; done >hosts
RANDOM=$SEED

log() { echo "soak +$((SECONDS - START))s: $*" >>soak.log; }

# Writes the availability file atomically, as an editor saving it.
edit() {
  printf '%b' "$1" >av.tmp && mv av.tmp av
  log "edit ($2): $(printf '%b' "$1" | tr '\n' ' ')"
}

# Sets GOOD to a random good content: 2 to 6 distinct hosts, 1 to 4 cores each (fewer
# than 8 in all: oversubscribed), different from the current one. Called in this shell,
# not a subshell, so that RANDOM follows the seed.
good_content() {
  local n i j t order
  while :; do
    order=(0 1 2 3 4 5)
    for ((i = 5; i > 0; i--)); do
      j=$((RANDOM % (i + 1)))
      t=${order[$i]} && order[$i]=${order[$j]} && order[$j]=$t
    done
    GOOD=""
    n=$((2 + RANDOM % 5))
    for ((i = 0; i < n; i++)); do
      GOOD+="${HOSTS[${order[$i]}]} $((1 + RANDOM % 4))\n"
    done
    [ "$(printf '%b' "$GOOD")" != "$(cat av)" ] && break
  done
}

# Iterations rank 0 has recorded.
progress() {
  tail -n 1 run/iterations/rank-0.csv 2>/dev/null | cut -d, -f1
}

# The jacobi processes of this run (their environment names its run directory).
job_ranks() {
  local p
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/exe" 2>/dev/null)" = "$JACOBI" ] || continue
    grep -qaF "$DIR/run" "$p/environ" 2>/dev/null && echo "${p#/proc/}"
  done
}

# Processes left of this run: its jacobi ranks, and anything whose command line or
# environment names its directory.
left_over() {
  local p
  for p in /proc/[0-9]*; do
    [ "${p#/proc/}" = "$$" ] && continue
    if grep -qaF "$DIR/" "$p/cmdline" 2>/dev/null || grep -qaF "$DIR/run" "$p/environ" 2>/dev/null; then
      [ "$(cut -d' ' -f3 "$p/stat" 2>/dev/null)" = Z ] || echo "${p#/proc/}"
    fi
  done
}

printf 'h1 2\nh2 2\nh3 2\nh4 2\n' >av
START=$SECONDS
RANKMIG_CKPT_EVERY=2000 nice -n 10 "$RANKMIG" run -n 8 -a av --hostfile hosts \
  --emulated-cluster --node-topology "synthetic:core:4 pu:1" --run-dir run \
  --check-every 50 --settle 1 --auto-restart 2 -- \
  "$JACOBI" --size 128 --iters 100000000 --stop-file "$DIR/stop" >job.out 2>job.err &
JOB=$!
log "rankmig run $JOB ($MPI, seed $SEED)"

KILL_AT=$((SECONDS_OF_EDITS * (30 + RANDOM % 31) / 100))
made=0 bad=0 killed=""
while [ $((SECONDS - START)) -lt "$SECONDS_OF_EDITS" ] && kill -0 "$JOB" 2>/dev/null; do
  sleep $((3 + RANDOM % 7))
  roll=$((RANDOM % 10))
  case $roll in
    0) edit "h1 2\nh9 2\n" "bad: a host outside the allocation"; bad=$((bad + 1)) ;;
    1) edit "h1 two cores\nh2 2\n" "bad: not a number"; bad=$((bad + 1)) ;;
    2) edit "h1 0\nh2 0\nh3 0\nh4 0\nh5 0\nh6 0\n" "bad: no cores"; bad=$((bad + 1)) ;;
    *) good_content && edit "$GOOD" good ;;
  esac
  made=$((made + 1))
  # After the first checkpoint (iteration 2000) has surely been committed.
  if [ "$KILL" = 1 ] && [ -z "$killed" ] && [ $((SECONDS - START)) -ge "$KILL_AT" ] &&
    [ "$(progress)" -gt 4500 ] 2>/dev/null; then
    mapfile -t ranks < <(job_ranks)
    if [ ${#ranks[@]} -gt 0 ]; then
      killed=${ranks[$((RANDOM % ${#ranks[@]}))]}
      host=$(nsenter -t "$killed" -u hostname 2>/dev/null)
      # The process may have left since it was listed (a migration replaced it): then
      # another one is chosen at the next edit.
      if kill -KILL "$killed" 2>/dev/null; then
        log "SIGKILL rank process $killed on $host"
      else
        log "rank process $killed left before the kill: choosing again"
        killed=""
      fi
    fi
  fi
done
# A good content last, so the job ends on an availability it accepts.
edit "h1 2\nh2 2\nh3 2\nh4 2\n" "good, last"
made=$((made + 1))
sleep 5
touch stop
log "stop file written"
deadline=$((SECONDS + 240))
while kill -0 "$JOB" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 1; done
if kill -0 "$JOB" 2>/dev/null; then
  log "rankmig run did not end within 240 s of the stop file: SIGTERM"
  kill -TERM "$JOB"
fi
wait "$JOB"
code=$?
log "rankmig run exited $code"
sleep 3

checksum=$(sed -n 's/^checksum: //p' job.out)
iters=$(sed -n 's/^iterations: //p' job.out)
plain=""
if [ -n "$iters" ]; then
  case "$MPI" in
    openmpi4) launch=(mpirun --oversubscribe -np 4) ;;
    mpich) launch=(mpiexec -n 4) ;;
  esac
  plain=$(env RANKMIG_CKPT_DIR="$DIR/plain-ckpt" nice -n 10 "${launch[@]}" "$JACOBI" --size 128 --iters "$iters" 2>/dev/null |
    sed -n 's/^checksum: //p')
fi
outcome_count() { grep -c "\"outcome\":\"$1\"" run/reconfigurations.jsonl 2>/dev/null || true; }
migrated=$(outcome_count migrated)
relaunched=$(outcome_count relaunch)
no_moves=$(outcome_count "no moves")
refused=$(outcome_count refused)
carried=$((migrated + relaunched + no_moves))
restarts=$(grep -c "(auto-restart [0-9]* of 2)" job.err || true)
left=$(left_over | wc -l)
faults=0
[ -n "$killed" ] && faults=1
survived=yes
if [ -n "$killed" ] && [ "$restarts" -lt 1 ]; then survived=no; fi
result=PASS
[ "$code" = 0 ] && [ -n "$checksum" ] && [ "$checksum" = "$plain" ] && [ "$left" = 0 ] &&
  [ "$carried" -ge "$MIN_CARRIED" ] && [ "$survived" = yes ] || result=FAIL
[ -n "${SOAK_HEADER:-}" ] &&
  echo "| MPI | seed | length | edits made | bad | carried out | refused | faults | survived | auto-restarts | exit | checksum | processes left | result |"
printf '| %s | %s | %s s | %s | %s | %s (%s live, %s relaunch, %s no moves) | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
  "$MPI" "$SEED" "$((SECONDS - START))" "$made" "$bad" "$carried" "$migrated" "$relaunched" "$no_moves" \
  "$refused" "$faults" "$survived" "$restarts" "$code" \
  "$([ -n "$checksum" ] && [ "$checksum" = "$plain" ] && echo "= plain ($iters it)" || echo "$checksum vs $plain")" \
  "$left" "$result"
if [ "$result" = PASS ] && [ -z "${SOAK_DIR:-}" ]; then
  rm -rf "$DIR"
else
  echo "soak.sh: records kept in $DIR" >&2
fi
[ "$result" = PASS ]
