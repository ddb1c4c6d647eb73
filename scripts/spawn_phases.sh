#!/usr/bin/env bash
# Phases of a migration with 1 and with 4 target hosts, on the emulated cluster, next
# to the floor: a plain MPI_Comm_spawn_multiple (scripts/spawn_floor.c) of the same
# processes onto the same hosts from the same 8 parents. Prints one line per run.
# Needs root (UTS namespaces); RUNS (3) repetitions.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cargo build --release --quiet --bin rankmig --example jacobi
R=$PWD/target/release/rankmig
J=$PWD/target/release/examples/jacobi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpicc -O2 -o "$work/floor" scripts/spawn_floor.c
cd "$work"
printf 'h%d slots=4\n' 1 2 3 4 5 6 7 8 >hosts
printf 'h1\nh1\nh2\nh2\nh3\nh3\nh4\nh4\nh5\nh6\nh7\nh8\n' >seqhosts
for rep in $(seq "${RUNS:-3}"); do
  for case in one four; do
    rm -rf run
    printf 'h1 2\nh2 2\nh3 2\nh4 2\n' >av
    "$R" run -n 8 -a av --hostfile hosts --emulated-cluster --node-topology "synthetic:core:4 pu:1" \
      --run-dir run --check-every 50 --settle 0 -q -- "$J" --size 128 --iters 1000000 >/dev/null 2>&1 &
    pid=$!
    until [ -f run/iterations/rank-0.csv ]; do sleep 0.5; done
    sleep 2
    if [ $case = one ]; then printf 'h3 2\nh4 2\nh5 4\n' >av.t; else printf 'h3 2\nh4 2\nh5 1\nh6 1\nh7 1\nh8 1\n' >av.t; fi
    mv av.t av
    until [ -s run/reconfigurations.jsonl ]; do sleep 0.5; done
    python3 -c "
import json; r = json.loads(open('run/reconfigurations.jsonl').readline())
p = r['phases']
print('rankmig $case target host(s):', r['outcome'], r['moves'], 'moves; scheduling %.1f ms, spawn %.1f ms, transfer %.1f ms, rebuild %.1f ms' % (r['scheduling'] * 1e3, p['spawn'] * 1e3, p['transfer'] * 1e3, p['rebuild'] * 1e3))"
    kill -TERM $pid
    wait $pid 2>/dev/null || true
  done
  for case in "h5:4" "h5:1 h6:1 h7:1 h8:1"; do
    echo -n "floor $case: "
    # shellcheck disable=SC2086
    OMPI_MCA_plm_rsh_agent="$R emulated-host" OMPI_MCA_oob_tcp_if_include=lo \
      OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_mpi_yield_when_idle=1 \
      mpirun --hostfile seqhosts --map-by seq -np 8 --bind-to none \
      --mca rmaps_base_oversubscribe 1 ./floor $case 2>&1 | grep spawn || true
  done
done
