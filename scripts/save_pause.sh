#!/usr/bin/env bash
# What a checkpoint save costs an application, by the application's own clock:
# examples/c/pause_probe.c (RANKS ranks on logical nodes n1 and n2, STATE_MB MB of state
# per rank, one ring exchange and one MPI_Allreduce per iteration) runs under `rankmig
# run`, never migrated, for DURATION seconds with a save every EVERY seconds
# (RANKMIG_CKPT_SECONDS), then, as a control, as long with an interval longer than the
# run (no save); a stop file ends each run (the probe looks for it every 256
# iterations). While a run goes on, a watcher reads the `checkpoint!` call count of each
# epoch from rank 0's file header (the iteration of the save: the probe makes one call
# per iteration) and the times of the rank files and of the commit marker (the commit's
# delay). Per run it prints the median and the longest iteration (slowest process of
# each iteration), then per save: the extra time over the run's median of the save's
# iteration, and what the WINDOW milliseconds that start with it took beyond as many
# iterations at the median (rank 0's iterations and clock: the save, the write on its
# thread, the checks, the commit); the control's iterations at the same times since the
# start of the loop give what this machine's noise gives alone (and the difference of
# the two windows is printed). Then the medians over the rounds.
#
# BASE=DIR compares with another checkout of rankmig (e.g. `git worktree add DIR COMMIT`,
# with its own target directory): each checkout is installed by its own scripts/install.sh
# into target/IMPL/save-pause-prefix, this checkout's probe is built against each, and the
# runs alternate base, this, base, this (ROUNDS rounds of a saving run of each, then a
# control of each), so that the load of the machine falls on both alike; the summary gives
# the ratio this/base.
#
# Usage: scripts/save_pause.sh [STATE_MB] (default 8). Environment: RANKS (4), DURATION (20),
# EVERY (2), WINDOW (500), ROUNDS (3), BASE, IMPL (openmpi4, Debian's Open MPI 4.1.4, the
# default; or openmpi418 or mpich: PyPI's Open MPI 4.1.8 or MPICH of scripts/setup.sh,
# built in target/IMPL), KEEP=1 keeps the work directory (made by mktemp, so under TMPDIR,
# where the checkpoints go too), and any RANKMIG_* variable.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MB=${1:-8}
IMPL=${IMPL:-openmpi4}
RANKS=${RANKS:-4}
HALF=$((RANKS / 2))
DURATION=${DURATION:-20}
EVERY=${EVERY:-2}
ROUNDS=${ROUNDS:-3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
case $IMPL in
  openmpi4 | openmpi418 | mpich) ;;
  *) echo "save_pause: IMPL must be openmpi4, openmpi418 or mpich" >&2; exit 2 ;;
esac
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"; echo "work: $work"' EXIT

# Installs the checkout $2 into its target/IMPL/save-pause-prefix with its own install.sh
# and builds this checkout's probe against it as $work/$1/pause-probe.
build() {
  local name=$1 tree=$2 target prefix
  target=$tree/target
  (
    if [ "$IMPL" != openmpi4 ]; then
      target=$tree/target/$IMPL
      export PATH="$tree/target/mpi/$IMPL/bin:$PATH"
    fi
    prefix=$target/save-pause-prefix
    CARGO_TARGET_DIR=$target bash "$tree/scripts/install.sh" --prefix "$prefix" >"$work/$name-install.log" 2>&1 ||
      { echo "save_pause: $tree/scripts/install.sh --prefix $prefix failed (see $work/$name-install.log)" >&2; exit 1; }
    mkdir -p "$work/$name"
    ln -s "$prefix/bin/rankmig" "$work/$name/rankmig"
    # shellcheck disable=SC2046 # pkg-config's flags are several words
    mpicc -O2 "$ROOT/examples/c/pause_probe.c" -o "$work/$name/pause-probe" \
      $(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs rankmig)
  )
}
[ "$IMPL" = openmpi4 ] || export PATH="$ROOT/target/mpi/$IMPL/bin:$PATH"
versions=()
if [ -n "${BASE:-}" ]; then
  BASE=$(cd "$BASE" && pwd)
  build base "$BASE"
  versions+=(base)
fi
build this "$ROOT"
versions+=(this)

# Records each epoch of the checkpoint directory $1 while process $2 runs, in file $3:
# "epoch calls newest-rank-file-mtime commit-mtime" (mtimes in seconds, 0 if not seen).
watch_epochs() {
  python3 - "$@" <<'EOF'
import glob, os, struct, sys, time
ckpt, pid, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
seen = {}
def alive():
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False
def scan():
    for d in glob.glob(f"{ckpt}/job-*/epoch-*"):
        epoch = int(d.rsplit("-", 1)[1])
        e = seen.setdefault(epoch, [None, 0.0, 0.0])
        try:
            if e[0] is None:
                with open(f"{d}/rank-000000.ckpt", "rb") as f:
                    e[0] = struct.unpack_from("<Q", f.read(40), 32)[0]
            if not e[2]:
                commit = os.stat(f"{d}/COMMIT").st_mtime
                e[1] = max(os.stat(p).st_mtime for p in glob.glob(f"{d}/rank-*.ckpt"))
                e[2] = commit
        except (OSError, struct.error):
            pass
while alive():
    scan()
    time.sleep(0.1)
scan()
with open(out, "w") as f:
    for epoch, (calls, written, commit) in sorted(seen.items()):
        if calls is not None:
            f.write(f"{epoch} {calls} {written:.6f} {commit:.6f}\n")
EOF
}

# One run of version $1 ($2: save or control), numbered $3.
run() {
  local version=$1 kind=$2 n=$3 seconds=$EVERY dir
  [ "$kind" = control ] && seconds=1000000
  dir=$work/$version-$kind-$n
  mkdir -p "$dir/times"
  printf 'n1 %s\nn2 %s\n' "$HALF" "$HALF" >"$dir/av"
  RANKMIG_CKPT_SECONDS=$seconds "$work/$version/rankmig" run -n "$RANKS" -a "$dir/av" \
    --run-dir "$dir/run" --settle 0 -- \
    "$work/$version/pause-probe" --mb "$MB" --iters 1000000000000 --times "$dir/times" \
    --stop-file "$dir/stop" >"$dir/out" 2>"$dir/err" &
  local job=$!
  # The duration counts from the loop's first iteration (rank 0's progress file).
  ( until [ -s "$dir/run/iterations/rank-0.csv" ] || ! kill -0 "$job" 2>/dev/null; do sleep 0.2; done
    sleep "$DURATION"; touch "$dir/stop" ) &
  watch_epochs "$dir/run/ckpt" "$job" "$dir/epochs.txt"
  wait "$job" || { echo "save_pause: $version $kind run $n failed:" >&2; cat "$dir/err" >&2; exit 1; }
  echo "$(date -u +%H:%M:%S) $version $kind $n: $(tr '\n' ' ' <"$dir/out")" >&2
}

for n in $(seq "$ROUNDS"); do
  for kind in save control; do
    for version in "${versions[@]}"; do
      run "$version" "$kind" "$n"
    done
  done
done

python3 - "$work" "$ROUNDS" "${WINDOW:-500}" "${versions[@]}" <<'EOF'
import bisect, glob, itertools, statistics, sys
work, rounds, window, versions = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]) / 1e3, sys.argv[4:]
med = statistics.median
def series(folder):
    """The slowest process's time of each iteration, and rank 0's time since the start of
    the loop at the start of each iteration (its own clock), from the times files."""
    slowest, rank0 = {}, {}
    for path in glob.glob(f"{folder}/times/times-*.txt"):
        for line in open(path):
            rank, it, secs = line.split()
            it, secs = int(it), float(secs)
            slowest[it] = max(slowest.get(it, 0.0), secs)
            if rank == "0":
                rank0[it] = secs
    its = sorted(rank0)
    starts = [0.0] + list(itertools.accumulate(rank0[i] for i in its))[:-1]
    return slowest, rank0, its, starts
def extra(rank0, its, starts, t0):
    """Rank 0's time over its median in the iterations that start in [t0, t0 + window)."""
    m = med(rank0.values())
    a, b = bisect.bisect_left(starts, t0), bisect.bisect_left(starts, t0 + window)
    return sum(rank0[i] - m for i in its[a:b])
def nan_med(xs):
    return med(xs) if xs else float("nan")
rows = {v: [] for v in versions}
for v in versions:
    for n in range(1, rounds + 1):
        s, s0, its, starts = series(f"{work}/{v}-save-{n}")
        c, c0, c_its, c_starts = series(f"{work}/{v}-control-{n}")
        at_time = dict(zip(its, starts))
        epochs = [l.split() for l in open(f"{work}/{v}-save-{n}/epochs.txt")]
        saves = [int(e[1]) for e in epochs if int(e[1]) in s and int(e[1]) in at_time]
        commit_ms = [(float(e[3]) - float(e[2])) * 1e3 for e in epochs if float(e[3]) > 0]
        sm, cm = med(s.values()), med(c.values())
        at = [s[i] - sm for i in saves]
        win = [extra(s0, its, starts, at_time[i]) for i in saves]
        # The control's iteration running at the save's time, and its window.
        c_at_its = [c_its[min(bisect.bisect_right(c_starts, at_time[i]), len(c_its)) - 1] for i in saves]
        c_at = [c[i] - cm for i in c_at_its if i in c]
        c_win = [extra(c0, c_its, c_starts, at_time[i]) for i in saves]
        r = dict(median=sm * 1e3, longest=max(s.values()) * 1e3, saves=len(saves), iters=len(s),
                 at=nan_med(at) * 1e3, at_max=max(at, default=float("nan")) * 1e3,
                 win=nan_med(win) * 1e3, commit=nan_med(commit_ms),
                 c_median=cm * 1e3, c_longest=max(c.values()) * 1e3, c_iters=len(c),
                 c_at=nan_med(c_at) * 1e3, c_win=nan_med(c_win) * 1e3,
                 net=nan_med([w - cw for w, cw in zip(win, c_win)]) * 1e3)
        rows[v].append(r)
        print(f"{v} round {n}: {r['iters']} iterations, median {r['median']:.4f} ms, longest "
              f"{r['longest']:.1f} ms, {r['saves']} saves at iterations {saves}; the save's "
              f"iteration +{r['at']:.2f} ms (median; largest +{r['at_max']:.1f}), its "
              f"{window * 1e3:.0f} ms +{r['win']:.1f} ms (median), commit {r['commit']:.0f} ms "
              f"after the newest rank file (median) | control: {r['c_iters']} iterations, median "
              f"{r['c_median']:.4f} ms, longest {r['c_longest']:.1f} ms, at the saves' times "
              f"+{r['c_at']:.2f} ms, their {window * 1e3:.0f} ms +{r['c_win']:.1f} ms")
keys = [("median", "median iteration"), ("longest", "longest iteration"),
        ("at", "save's iteration, extra"), ("win", f"save's {window * 1e3:.0f} ms, extra"),
        ("commit", "commit after newest rank file"), ("c_median", "control: median iteration"),
        ("c_longest", "control: longest iteration"), ("c_at", "control: same time, extra"),
        ("c_win", f"control: same {window * 1e3:.0f} ms, extra"),
        ("net", f"save's {window * 1e3:.0f} ms minus control's")]
print(f"summary: medians over {rounds} rounds (ms)")
print(f"{'':34}" + "".join(f"{v:>10}" for v in versions) + ("     ratio" if len(versions) == 2 else ""))
for k, label in keys:
    vals = [med([r[k] for r in rows[v]]) for v in versions]
    ratio = f"{vals[1] / vals[0]:10.2f}" if len(vals) == 2 and vals[0] else ""
    print(f"{label:34}" + "".join(f"{x:10.3f}" for x in vals) + ratio)
EOF
