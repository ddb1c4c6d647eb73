#!/usr/bin/env bash
# Phases of a migration with 1 and with 4 target hosts, on the emulated cluster, per
# MPI implementation, next to the floor: a plain MPI_Comm_spawn_multiple
# (scripts/spawn_floor.c, hosts named as rankmig names them with that MPI) of the same
# processes onto the same hosts from the same 8 parents. Prints one line per run, then
# a table of medians. Needs root (UTS namespaces). Settings: RUNS (3) repetitions,
# IMPLS ("openmpi4 mpich openmpi5"; the PyPI ones are installed by scripts/setup.sh and
# built in target/<name>).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
results=$work/results.txt
: >"$results"

# The floor program launched as 8 parents, 2 on each of h1..h4: floor IMPL GROUPS...
floor() {
  local impl=$1 agent=$2
  shift 2
  case $impl in
    openmpi4)
      OMPI_MCA_plm_rsh_agent="$agent" OMPI_MCA_oob_tcp_if_include=lo \
        OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_mpi_yield_when_idle=1 \
        mpirun --hostfile seqhosts --map-by seq -np 8 --bind-to none \
        --mca rmaps_base_oversubscribe 1 ./floor "$@" ;;
    openmpi5)
      PRTE_MCA_plm_ssh_agent="$agent" OMPI_MCA_btl='^ofi' OMPI_MCA_mtl='^ofi' \
        OMPI_MCA_mpi_yield_when_idle=1 FLOOR_SPAWN=host-add \
        mpirun --allow-run-as-root --bind-to none --with-ft ulfm --mca async_mpi_finalize 1 \
        -x FLOOR_SPAWN --hostfile slothosts \
        -np 2 --host h1:2 ./floor "$@" : -np 2 --host h2:2 ./floor "$@" : \
        -np 2 --host h3:2 ./floor "$@" : -np 2 --host h4:2 ./floor "$@" ;;
    mpich)
      HYDRA_LAUNCHER=ssh HYDRA_LAUNCHER_EXEC="$agent" MPIR_CVAR_NO_COLLECTIVE_FINALIZE=1 \
        FLOOR_SPAWN=hostfile FLOOR_HOSTFILE=$PWD/spawn-hosts \
        mpiexec -f colonhosts -n 8 ./floor "$@" ;;
  esac
}

for impl in ${IMPLS:-openmpi4 mpich openmpi5}; do
  if [ "$impl" = openmpi4 ]; then
    target=$ROOT/target
    path=$PATH
  else
    target=$ROOT/target/$impl
    path=$ROOT/target/mpi/$impl/bin:$PATH
  fi
  (
    export PATH=$path CARGO_TARGET_DIR=$target
    cargo build --release --quiet --bin rankmig --example jacobi
    R=$target/release/rankmig
    J=$target/release/examples/jacobi
    dir=$work/$impl
    mkdir -p "$dir"
    mpicc -O2 -o "$dir/floor" scripts/spawn_floor.c
    cd "$dir"
    printf 'h%d slots=4\n' 1 2 3 4 5 6 7 8 >hosts
    printf 'h%d slots=8\n' 1 2 3 4 5 6 7 8 >slothosts
    printf 'h1\nh1\nh2\nh2\nh3\nh3\nh4\nh4\nh5\nh6\nh7\nh8\n' >seqhosts
    printf 'h1:2\nh2:2\nh3:2\nh4:2\n' >colonhosts
    printf '#!/bin/sh\nexec %s emulated-host "$@"\n' "$R" >agent
    chmod +x agent
    for rep in $(seq "${RUNS:-3}"); do
      for case in one four; do
        rm -rf run stop
        printf 'h1 2\nh2 2\nh3 2\nh4 2\n' >av
        "$R" run -n 8 -a av --hostfile hosts --emulated-cluster --node-topology "synthetic:core:4 pu:1" \
          --run-dir run --check-every 50 --settle 0 -q -- "$J" --size 128 --iters 1000000000 \
          --stop-file "$dir/stop" >/dev/null 2>&1 &
        pid=$!
        # Waits for a file while the job runs; false if the job ended first.
        wait_for() { until [ -s "$1" ]; do kill -0 $pid 2>/dev/null || return 1; sleep 0.5; done; }
        if ! wait_for run/iterations/rank-0.csv; then
          echo "$impl rankmig $case did-not-start" | tee -a "$results"
          continue
        fi
        sleep 2
        if [ $case = one ]; then printf 'h3 2\nh4 2\nh5 4\n' >av.t; else printf 'h3 2\nh4 2\nh5 1\nh6 1\nh7 1\nh8 1\n' >av.t; fi
        mv av.t av
        if ! wait_for run/reconfigurations.jsonl; then
          echo "$impl rankmig $case job-ended" | tee -a "$results"
          continue
        fi
        python3 -c "
import json; r = json.loads(open('run/reconfigurations.jsonl').readline())
p = r['phases']
print('$impl rankmig $case', r['outcome'], r['moves'], '%.2f %.2f %.2f %.2f' % (r['scheduling'] * 1e3, p['spawn'] * 1e3, p['transfer'] * 1e3, p['rebuild'] * 1e3))" | tee -a "$results"
        touch stop
        wait $pid 2>/dev/null || true
      done
      for case in "h5:4" "h5:1 h6:1 h7:1 h8:1"; do
        name=one
        [ "$case" = "h5:4" ] || name=four
        # shellcheck disable=SC2086
        line=$(timeout 60 bash -c "$(declare -f floor); cd $dir; floor $impl $dir/agent $case" 2>&1 | grep "^spawn" || true)
        echo "$impl floor $name $line" | tee -a "$results"
      done
    done
  )
done

echo
python3 - "$results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    w = line.split()
    if len(w) < 4:
        continue
    impl, kind, case = w[0], w[1], w[2]
    key = (impl, case)
    d = rows.setdefault(key, {"sched": [], "spawn": [], "xfer": [], "rebuild": [], "floor": []})
    if kind == "rankmig" and w[3] == "migrated":
        s, sp, x, rb = map(float, w[5:9])
        d["sched"].append(s); d["spawn"].append(sp); d["xfer"].append(x); d["rebuild"].append(rb)
    elif kind == "floor" and len(w) >= 8:
        d["floor"].append(float(w[7]) * 1e3)
med = lambda v: "%.1f" % statistics.median(v) if v else "-"
print("medians in ms      target     runs  scheduling     spawn  transfer   rebuild  floor(spawn+merge)")
for (impl, case), d in sorted(rows.items()):
    print("%-18s %-9s %5d %11s %9s %9s %9s %19s" % (impl, case + " host(s)", len(d["spawn"]), med(d["sched"]), med(d["spawn"]), med(d["xfer"]), med(d["rebuild"]), med(d["floor"])))
PY
