#!/usr/bin/env bash
# How long MPICH holds an application's MPI calls while a helper thread of rank 0 joins 4
# new processes: by MPI_Comm_spawn (scripts/spawn_hold.c) against a separate launch
# joined by MPI_Comm_accept once the new processes wait in MPI_Comm_connect
# (scripts/connect_hold.c). 4 ranks time each MPI_Allreduce; each trial prints the longest.
# Usage: scripts/hold_compare.sh [TRIALS] (default 3), with the PyPI MPICH of
# scripts/setup.sh (target/mpi/mpich). Needs a quiet machine: MPICH's ranks busy-poll.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/target/mpi/mpich/bin:$PATH"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpicc -O2 -pthread scripts/spawn_hold.c -o "$work/spawn_hold"
mpicc -O2 -pthread scripts/connect_hold.c -o "$work/connect_hold"
for trial in $(seq "${1:-3}"); do
  echo "trial $trial, spawn:   $(timeout 120 mpiexec -n 4 "$work/spawn_hold" | tail -1)"
  dir=$(mktemp -d -p "$work")
  timeout 120 mpiexec -n 4 "$work/connect_hold" parent "$dir" >"$dir/out" &
  parent=$!
  while [ ! -f "$dir/port" ]; do
    kill -0 $parent 2>/dev/null || { echo "hold_compare: the parent job ended without a port" >&2; exit 1; }
    sleep 0.05
  done
  timeout 120 mpiexec -n 4 "$work/connect_hold" child "$dir"
  wait $parent
  echo "trial $trial, connect: $(tail -1 "$dir/out")"
done
