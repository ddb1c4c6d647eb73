#!/usr/bin/env bash
# What one live migration costs an application, by the application's own clock:
# examples/c/pause_probe.c (8 ranks on logical nodes n1:4 n2:4, STATE MB of state per
# rank, one ring exchange and one MPI_Allreduce per iteration, MPI_THREAD_MULTIPLE)
# runs under `rankmig run`; after WARMUP seconds one edit moves the 4 ranks of n1 to
# n3; AFTER seconds after the migration the job is stopped, then run plainly for as
# many iterations. Prints the longest iteration (slowest process of each iteration),
# the median iteration before and after the migration, rankmig's record of it, and
# whether the checksum equals the plain run's. Then a control: the same job under
# `rankmig run` for as many iterations without an edit; its median before and after
# the same iterations gives the ratio that this machine's noise gives alone.
#
# Usage: scripts/pause_probe.sh [STATE_MB] (default 8). Environment: KEEP=1 keeps the work
# directory (its live.err holds the TIMELINE lines with RANKMIG_TIMELINE=1), PROGRAM (probe,
# the default, or jacobi: examples/jacobi.rs on a grid of about STATE_MB per rank, with
# its --times), IMPL (openmpi4, Debian's Open MPI 4.1.4, the default; or openmpi418 or
# mpich: PyPI's Open MPI 4.1.8 or MPICH of scripts/setup.sh, built in target/IMPL),
# RANKS (8), CLUSTER (1: on the emulated cluster, hosts h1 h2 h3 of RANKS/2 cores
# each as UTS namespaces, --emulated-cluster, the edit moving h1's ranks to h3; needs
# root or user namespaces), WARMUP (3), AFTER (3), CKPT_DIR (where checkpoints go; default: the run
# directory, in the work directory made by mktemp, so under TMPDIR), and any RANKMIG_*
# variable (RANKMIG_BLOCKING_SPAWN=1 measures the spawn with the application held).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MB=${1:-8}
IMPL=${IMPL:-openmpi4}
RANKS=${RANKS:-8}
HALF=$((RANKS / 2))
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
case $IMPL in
  openmpi4) target=$ROOT/target ;;
  openmpi418 | mpich)
    target=$ROOT/target/$IMPL
    export PATH="$ROOT/target/mpi/$IMPL/bin:$PATH" CARGO_TARGET_DIR=$target ;;
  *) echo "pause_probe: IMPL must be openmpi4, openmpi418 or mpich" >&2; exit 2 ;;
esac
cargo build --release --quiet --bin rankmig --example jacobi
build=$target/release
# The probe links the runtime library as a user's code does: from an installed prefix.
prefix=$target/pause-probe-prefix
CARGO_TARGET_DIR=$target bash scripts/install.sh --prefix "$prefix" >/dev/null 2>&1 ||
  { echo "pause_probe: scripts/install.sh --prefix $prefix failed" >&2; exit 1; }
work=$(mktemp -d)
trap 'touch "$work/stop" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$work"; echo "work: $work"' EXIT
case ${PROGRAM:-probe} in
  probe)
    probe=$work/pause-probe
    # shellcheck disable=SC2046 # pkg-config's flags are several words
    mpicc -O2 examples/c/pause_probe.c -o "$probe" \
      $(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs rankmig)
    app=("$probe" --mb "$MB") ;;
  jacobi)
    # A grid of N x N doubles, N a multiple of RANKS, about MB per rank.
    size=$(python3 -c "import math; r=$RANKS; n=int(math.sqrt($MB*2**20/8*r)); print(n - n % r)")
    app=("$build/examples/jacobi" --size "$size") ;;
  *) echo "pause_probe: PROGRAM must be probe or jacobi" >&2; exit 2 ;;
esac

cd "$work"
mkdir times
where=()
if [ -n "${CLUSTER:-}" ]; then
  # Hosts h1 h2 h3 (UTS namespaces of this machine), RANKS/2 cores each.
  printf 'h1 slots=%s\nh2 slots=%s\nh3 slots=%s\n' "$HALF" "$HALF" "$HALF" >hosts
  where=(--hostfile hosts --emulated-cluster --node-topology "synthetic:core:$HALF pu:1")
  first=h1 second=h2 third=h3
else
  first=n1 second=n2 third=n3
fi
printf '%s %s\n%s %s\n' "$first" "$HALF" "$second" "$HALF" >av
"$build/rankmig" run -n "$RANKS" -a av "${where[@]}" --run-dir run ${CKPT_DIR:+--ckpt-dir "$CKPT_DIR"} --settle 0 -- \
  "${app[@]}" --iters 1000000000000 --times "$work/times" --stop-file "$work/stop" \
  >live.out 2>live.err &
job=$!
waited=0
until [ -s run/iterations/rank-0.csv ]; do
  sleep 0.2
  waited=$((waited + 1))
  if [ $waited -gt 600 ] || ! kill -0 $job 2>/dev/null; then
    echo "pause_probe: the job did not start" >&2
    cat live.err >&2
    exit 1
  fi
done
sleep "${WARMUP:-3}"
printf '%s %s\n%s %s\n' "$second" "$HALF" "$third" "$HALF" >av.tmp && mv av.tmp av
until grep -q '"outcome"' run/reconfigurations.jsonl 2>/dev/null; do
  sleep 0.2
  kill -0 $job 2>/dev/null || { echo "pause_probe: the job ended before migrating" >&2; cat live.err >&2; exit 1; }
done
sleep "${AFTER:-3}"
touch stop
wait $job
iters=$(sed -n -e 's/.* \([0-9]*\) iterations.*/\1/p' -e 's/^iterations: \([0-9]*\)$/\1/p' live.out)
mpirun_cmd=(mpirun --oversubscribe -np "$RANKS")
[ "$IMPL" = mpich ] && mpirun_cmd=(mpiexec -n "$RANKS")
RANKMIG_CKPT_DIR=$work/plain-ckpt "${mpirun_cmd[@]}" "${app[@]}" --iters "$iters" >plain.out 2>plain.err
# The control: as many iterations under rankmig run, from the same availability file
# and never edited.
mkdir control-times
printf '%s %s\n%s %s\n' "$first" "$HALF" "$second" "$HALF" >av-control
"$build/rankmig" run -n "$RANKS" -a av-control "${where[@]}" --run-dir run-control \
  ${CKPT_DIR:+--ckpt-dir "$CKPT_DIR/control"} --settle 0 -- \
  "${app[@]}" --iters "$iters" --times "$work/control-times" >control.out 2>control.err
python3 - "$work" <<'EOF'
import glob, json, re, statistics, sys
work = sys.argv[1]
def slowest_of(folder):
    """The slowest process's time of each iteration, from the times files in folder."""
    slowest = {}
    for path in glob.glob(f"{work}/{folder}/times-*.txt"):
        for line in open(path):
            _, it, secs = line.split()
            it, secs = int(it), float(secs)
            slowest[it] = max(slowest.get(it, 0.0), secs)
    return slowest
slowest = slowest_of("times")
control = slowest_of("control-times")
records = [json.loads(l) for l in open(f"{work}/run/reconfigurations.jsonl") if l.strip()]
moved = [r for r in records if r["outcome"] == "migrated"]
live = open(f"{work}/live.out").read().strip()
plain = open(f"{work}/plain.out").read().strip()
print("live: ", live)
print("plain:", plain)
def checksum(text):
    found = re.findall(r"^checksum: (\S+)$", text, re.M)
    return found[-1] if found else None
same = checksum(live) is not None and checksum(live) == checksum(plain)
print("checksum equal:", same)
for r in records:
    p = r.get("phases", {})
    print(f"record: {r['outcome']} at iteration {r['iteration']}: scheduling {r['scheduling']*1e3:.1f} ms, "
          f"background {p.get('background', 0)*1e3:.0f} ms, pause {p.get('pause', 0)*1e3:.1f} ms "
          f"(spawn/join {p.get('spawn', 0)*1e3:.1f}, transfer {p.get('transfer', 0)*1e3:.1f}, "
          f"rebuild {p.get('rebuild', 0)*1e3:.1f}), state {r.get('state_bytes', 0)} B")
if not moved:
    sys.exit("no migration recorded")
at = moved[0]["iteration"]
first_plan = moved[0].get("planned_iteration") or moved[0]["iteration"] if moved else records[0]["iteration"]
before = [s for i, s in slowest.items() if i < first_plan - 10]
after = [s for i, s in slowest.items() if i > at + 10]
worst_it = max(slowest, key=slowest.get)
print(f"longest iteration: {slowest[worst_it]*1e3:.1f} ms at iteration {worst_it} "
      f"(planned at {first_plan}, migrated at {at})")
print(f"median iteration before: {statistics.median(before)*1e3:.4f} ms ({len(before)} iterations), "
      f"after: {statistics.median(after)*1e3:.4f} ms ({len(after)} iterations), "
      f"ratio {statistics.median(after)/statistics.median(before):.2f}")
# The control: as many iterations under rankmig run without an edit, split at the same
# iterations; its ratio is what this machine's noise alone gives.
c_before = [s for i, s in control.items() if i < first_plan - 10]
c_after = [s for i, s in control.items() if i > at + 10]
c_ratio = statistics.median(c_after) / statistics.median(c_before) if c_before and c_after else float("nan")
print(f"control (no edit, same iterations): median before {statistics.median(c_before)*1e3:.4f} ms, "
      f"after {statistics.median(c_after)*1e3:.4f} ms, ratio {c_ratio:.2f}, "
      f"longest {max(control.values())*1e3:.1f} ms")
top = sorted(slowest.items(), key=lambda kv: -kv[1])[:5]
print("five longest:", ", ".join(f"{i}: {s*1e3:.1f} ms" for i, s in top))
p = moved[0]["phases"]
print(f"summary: longest {slowest[worst_it]*1e3:.1f} ms, median before {statistics.median(before)*1e3:.3f} ms, "
      f"after {statistics.median(after)*1e3:.3f} ms, pause {p.get('pause', 0)*1e3:.1f} ms, "
      f"background {p.get('background', 0)*1e3:.0f} ms, spawn/join {p['spawn']*1e3:.1f} ms, "
      f"transfer {p['transfer']*1e3:.1f} ms, rebuild {p['rebuild']*1e3:.1f} ms, "
      f"checksum {'equal' if same else 'DIFFERENT'}, ratio {statistics.median(after)/statistics.median(before):.2f} "
      f"(control {c_ratio:.2f})")
EOF
