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
# the two windows is printed). Then the medians over the rounds. The probe's wall clock
# at the start of its loop (TIMES/clock-PID.txt) places each save on the clock of the
# file times (the time between timed iterations, known at the end, spread evenly over
# them): the time from the save to the newest rank file and to the commit marker. File
# times tick with the kernel's clock (4 ms at HZ=250), and the watcher looks every 50 ms.
#
# LEVEL (issue 53) says where the saves go, one level or several separated by spaces,
# run one after the other in each round (then the control), so that the load of the
# machine falls on all alike:
#   shared  the checkpoint directory alone (--ckpt-dir, in the work directory; default)
#   local   --ckpt-local on LOCAL_DIR (default a directory made in /dev/shm) with
#           --ckpt-flush-every 1000000000 (no flush in the run): the node-local file and,
#           with CLUSTER=1, the partner's copy sent over MPI to the other host; the
#           commit is the node-level marker of every host
#   flush   the same with --ckpt-flush-every 1: every epoch is also copied to the
#           checkpoint directory by the flush thread once committed at the node level;
#           the flush's window (from the node-level commit to the newest rank file in
#           the checkpoint directory) and the iterations that ran in it are printed,
#           beside the control's iterations at the same times, and when the shared
#           directory's commit marker was written; for local and flush, the iterations
#           per second in the SPAN ms (40) after each node-level commit (where a flush
#           starts) against the control's at the same times
# CLUSTER=1 runs on the emulated cluster: hosts h1 and h2 (UTS namespaces of this
# machine, RANKS/2 cores each, --emulated-cluster, the node-local directory DIR/h1 and
# DIR/h2), so that partner copies go to another host (needs root or user namespaces);
# without it every rank runs on this host and a save has no partner copy.
#
# BASE=DIR compares with another checkout of rankmig (e.g. `git worktree add DIR COMMIT`,
# with its own target directory): each checkout is installed by its own scripts/install.sh
# into target/IMPL/save-pause-prefix, this checkout's probe is built against each, and the
# runs alternate base, this, base, this (ROUNDS rounds of a saving run of each, then a
# control of each), so that the load of the machine falls on both alike; the summary gives
# the ratio this/base. With several levels or versions the summary gives each one's ratio
# to the first.
#
# Usage: scripts/save_pause.sh [STATE_MB] (default 8). Environment: RANKS (4), DURATION (20),
# EVERY (2), WINDOW (500), SPAN (40), ROUNDS (3), LEVEL (shared), CLUSTER, LOCAL_DIR, BASE, IMPL
# (openmpi4, Debian's Open MPI 4.1.4, the default; or openmpi418 or mpich: PyPI's Open
# MPI 4.1.8 or MPICH of scripts/setup.sh, built in target/IMPL), CARGO_TARGET_DIR (this
# checkout's target directory instead of target or target/IMPL), KEEP=1 keeps the work
# directory (made by mktemp, so under TMPDIR, where the checkpoints go too) and the
# node-local one, and any RANKMIG_* variable.
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
read -r -a levels <<<"${LEVEL:-shared}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
case $IMPL in
  openmpi4 | openmpi418 | mpich) ;;
  *) echo "save_pause: IMPL must be openmpi4, openmpi418 or mpich" >&2; exit 2 ;;
esac
node_local=no
for level in "${levels[@]}"; do
  case $level in
    shared) ;;
    local | flush) node_local=yes ;;
    *) echo "save_pause: LEVEL must be shared, local or flush (or several of them)" >&2; exit 2 ;;
  esac
done
[ ${#levels[@]} -gt 0 ] || { echo "save_pause: LEVEL is empty" >&2; exit 2; }
THIS_TARGET=${CARGO_TARGET_DIR:-}
unset CARGO_TARGET_DIR
work=$(mktemp -d)
local_root=
if [ $node_local = yes ]; then
  local_root=${LOCAL_DIR:-$(mktemp -d /dev/shm/save-pause.XXXXXX)}
  mkdir -p "$local_root"
fi
trap '[ -n "${KEEP:-}" ] || rm -rf "$work" ${local_root:+"$local_root"}; echo "work: $work${local_root:+, node-local: $local_root}"' EXIT

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
    [ "$name" = this ] && [ -n "$THIS_TARGET" ] && target=$THIS_TARGET
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
# A variant is a level and a version, run in that order in each round; with the shared
# level alone it is named as the version (as before levels existed).
variants=() variant_version=() variant_level=()
for level in "${levels[@]}"; do
  for version in "${versions[@]}"; do
    if [ ${#levels[@]} = 1 ] && [ "$level" = shared ]; then
      variants+=("$version")
    elif [ ${#versions[@]} = 1 ]; then
      variants+=("$level")
    else
      variants+=("$version-$level")
    fi
    variant_version+=("$version") variant_level+=("$level")
  done
done

where=()
first=n1 second=n2
hosts=1
if [ -n "${CLUSTER:-}" ]; then
  printf 'h1 slots=%s\nh2 slots=%s\n' "$HALF" "$HALF" >"$work/hosts"
  where=(--hostfile "$work/hosts" --emulated-cluster --node-topology "synthetic:core:$HALF pu:1")
  first=h1 second=h2 hosts=2
fi

# Records each epoch while process $2 runs, in file $3: "epoch calls newest-file-mtime
# commit-mtime shared-newest-file-mtime shared-commit-mtime" (mtimes in seconds, 0 if
# not seen). $1 is the checkpoint directory; $4, if given, the node-local directory
# (DIR/HOST with CLUSTER=1), whose rank files and partner copies give the first two
# times (the commit: the last of the $5 hosts' markers); the checkpoint directory's
# give the last two (with $4: the flush).
watch_epochs() {
  python3 - "$@" <<'EOF'
import glob, os, struct, sys, time
ckpt, pid, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
local = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] else None
hosts = int(sys.argv[5]) if len(sys.argv) > 5 else 1
# epoch -> [calls, newest file, commit, shared newest file, shared commit]
seen = {}
def alive():
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False
def newest(paths):
    return max(os.stat(p).st_mtime for p in paths)
def scan_dirs(pattern, first, with_calls, markers):
    """Epoch directories matching pattern (one per host): the newest file and the last
    commit marker, once `markers` markers exist, into slots first, first + 1."""
    by_epoch = {}
    for d in glob.glob(pattern):
        by_epoch.setdefault(int(d.rsplit("-", 1)[1]), []).append(d)
    for epoch, dirs in by_epoch.items():
        e = seen.setdefault(epoch, [None, 0.0, 0.0, 0.0, 0.0])
        try:
            if with_calls and e[0] is None:
                for d in dirs:
                    if os.path.exists(f"{d}/rank-000000.ckpt"):
                        with open(f"{d}/rank-000000.ckpt", "rb") as f:
                            e[0] = struct.unpack_from("<Q", f.read(40), 32)[0]
            if not e[first + 1]:
                commits = [os.stat(f"{d}/COMMIT").st_mtime for d in dirs
                           if os.path.exists(f"{d}/COMMIT")]
                if len(commits) >= markers:
                    files = [p for d in dirs for p in glob.glob(f"{d}/rank-*.ckpt") +
                             glob.glob(f"{d}/copy-*.ckpt")]
                    e[first] = newest(files)
                    e[first + 1] = max(commits)
        except (OSError, struct.error, ValueError):
            pass
def scan():
    if local is None:
        scan_dirs(f"{ckpt}/job-*/epoch-*", 1, True, 1)
    else:
        pattern = f"{local}/*/job-*/epoch-*" if hosts > 1 else f"{local}/job-*/epoch-*"
        scan_dirs(pattern, 1, True, hosts)
        scan_dirs(f"{ckpt}/job-*/epoch-*", 3, False, 1)
while alive():
    scan()
    time.sleep(0.05)
scan()
with open(out, "w") as f:
    for epoch, (calls, written, commit, s_written, s_commit) in sorted(seen.items()):
        if calls is not None:
            f.write(f"{epoch} {calls} {written:.6f} {commit:.6f} {s_written:.6f} {s_commit:.6f}\n")
EOF
}

# One run of variant $1 (version $2, level $3; $4: save or control), numbered $5.
run() {
  local variant=$1 version=$2 level=$3 kind=$4 n=$5 seconds=$EVERY dir name
  [ "$kind" = control ] && seconds=1000000
  name=$variant-$kind-$n
  [ "$kind" = control ] && name=$version-control-$n
  dir=$work/$name
  mkdir -p "$dir/times"
  printf '%s %s\n%s %s\n' "$first" "$HALF" "$second" "$HALF" >"$dir/av"
  local levels_args=() local_dir=
  case $level in
    local) local_dir=$local_root/$name levels_args=(--ckpt-local "$local_dir" --ckpt-flush-every 1000000000) ;;
    flush) local_dir=$local_root/$name levels_args=(--ckpt-local "$local_dir" --ckpt-flush-every 1) ;;
  esac
  RANKMIG_CKPT_SECONDS=$seconds "$work/$version/rankmig" run -n "$RANKS" -a "$dir/av" "${where[@]}" \
    --run-dir "$dir/run" "${levels_args[@]}" --settle 0 -- \
    "$work/$version/pause-probe" --mb "$MB" --iters 1000000000000 --times "$dir/times" \
    --stop-file "$dir/stop" >"$dir/out" 2>"$dir/err" &
  local job=$!
  # The duration counts from the loop's first iteration (rank 0's progress file).
  ( until [ -s "$dir/run/iterations/rank-0.csv" ] || ! kill -0 "$job" 2>/dev/null; do sleep 0.2; done
    sleep "$DURATION"; touch "$dir/stop" ) &
  watch_epochs "$dir/run/ckpt" "$job" "$dir/epochs.txt" "$local_dir" "$hosts"
  wait "$job" || { echo "save_pause: $name run failed:" >&2; cat "$dir/err" >&2; exit 1; }
  echo "$(date -u +%H:%M:%S) $name: $(tr '\n' ' ' <"$dir/out")" >&2
}

for n in $(seq "$ROUNDS"); do
  for i in "${!variants[@]}"; do
    run "${variants[$i]}" "${variant_version[$i]}" "${variant_level[$i]}" save "$n"
  done
  for version in "${versions[@]}"; do
    run "$version" "$version" shared control "$n"
  done
done
pairs=()
for i in "${!variants[@]}"; do
  pairs+=("${variants[$i]}:${variant_version[$i]}:${variant_level[$i]}")
done
python3 - "$work" "$ROUNDS" "${WINDOW:-500}" "${SPAN:-40}" "${pairs[@]}" <<'EOF'
import bisect, glob, itertools, statistics, sys
work, rounds, window = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]) / 1e3
span = float(sys.argv[4]) / 1e3
variants = [a.split(":") for a in sys.argv[5:]]
med = statistics.median
def series(folder):
    """The slowest process's time of each iteration, rank 0's time since the start of
    the loop at the start of each iteration (its own clock), from the times files, and
    rank 0's wall clock at the start of its loop with the gap between its wall clock
    and its summed iterations at the end (clock file)."""
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
    wall0, gap, walls = None, float("nan"), starts
    for path in glob.glob(f"{folder}/times/clock-*.txt"):
        rank, start, end, _ = open(path).read().split()
        if rank == "0":
            wall0 = float(start)
            gap = float(end) - float(start) - sum(rank0.values())
            # The time between two timed iterations (the loop's test and the store of
            # the time) is spread evenly over the iterations: each start on the wall
            # clock, since wall0.
            walls = [t + gap * k / max(len(its), 1) for k, t in enumerate(starts)]
    return slowest, rank0, its, starts, wall0, gap, walls
def extra(rank0, its, starts, t0, t1=None):
    """Rank 0's time over its median in the iterations that start in [t0, t1), t1 being
    t0 + window by default."""
    m = med(rank0.values())
    a, b = bisect.bisect_left(starts, t0), bisect.bisect_left(starts, t0 + window if t1 is None else t1)
    return sum(rank0[i] - m for i in its[a:b])
def inside(its, starts, spans):
    """The iterations (by number) whose rank 0 start (on the wall clock since the loop's
    start) lies in one of spans, and the spans' total length."""
    found = []
    for t0, t1 in spans:
        a, b = bisect.bisect_left(starts, t0), bisect.bisect_left(starts, t1)
        found += its[a:b]
    return found, sum(t1 - t0 for t0, t1 in spans)
def nan_med(xs):
    return med(xs) if xs else float("nan")
nan = float("nan")
rows = {v: [] for v, _, _ in variants}
for v, version, level in variants:
    for n in range(1, rounds + 1):
        s, s0, its, starts, wall0, gap, walls = series(f"{work}/{v}-save-{n}")
        c, c0, c_its, c_starts, _, _, c_walls = series(f"{work}/{version}-control-{n}")
        at_time = dict(zip(its, starts))
        at_wall = dict(zip(its, walls))
        epochs = [[float(x) for x in l.split()] for l in open(f"{work}/{v}-save-{n}/epochs.txt")]
        epochs = [e for e in epochs if int(e[1]) in s and int(e[1]) in at_time]
        saves = [int(e[1]) for e in epochs]
        sm, cm = med(s.values()), med(c.values())
        at = [s[i] - sm for i in saves]
        win = [extra(s0, its, starts, at_time[i]) for i in saves]
        # The control's iteration running at the save's time, and its window.
        c_at_its = [c_its[min(bisect.bisect_right(c_starts, at_time[i]), len(c_its)) - 1] for i in saves]
        c_at = [c[i] - cm for i in c_at_its if i in c]
        c_win = [extra(c0, c_its, c_starts, at_time[i]) for i in saves]
        committed = [e for e in epochs if e[3] > 0]
        commit_ms = [(e[3] - e[2]) * 1e3 for e in committed]
        # Times from the save (rank 0's iteration start on its wall clock) to the newest
        # file of the epoch and to its commit marker.
        if wall0 is not None:
            to_file = [(e[2] - wall0 - at_wall[int(e[1])]) * 1e3 for e in committed]
            to_commit = [(e[3] - wall0 - at_wall[int(e[1])]) * 1e3 for e in committed]
            to_shared = [(e[5] - wall0 - at_wall[int(e[1])]) * 1e3 for e in epochs if e[5] > 0]
        else:
            to_file = to_commit = to_shared = []
        # The flush: from the node-level commit to the newest rank file in the shared
        # directory, on rank 0's loop clock.
        spans = []
        if level == "flush" and wall0 is not None:
            spans = [(e[3] - wall0, e[4] - wall0) for e in epochs if e[3] > 0 and e[4] > e[3]]
        f_its, f_len = inside(its, walls, spans)
        cf_its, _ = inside(c_its, c_walls, spans)
        f_ms = [(t1 - t0) * 1e3 for t0, t1 in spans]
        # The SPAN ms after each node-level commit (local and flush: with and without
        # the flush that starts there), against the control at the same times.
        after = []
        if level in ("local", "flush") and wall0 is not None:
            after = [(e[3] - wall0, e[3] - wall0 + span) for e in epochs if e[3] > 0]
        a_its, a_len = inside(its, walls, after)
        ca_its, _ = inside(c_its, c_walls, after)
        r = dict(median=sm * 1e3, longest=max(s.values()) * 1e3, saves=len(saves), iters=len(s),
                 at=nan_med(at) * 1e3, at_max=max(at, default=nan) * 1e3,
                 win=nan_med(win) * 1e3, commit=nan_med(commit_ms),
                 to_file=nan_med(to_file), to_commit=nan_med(to_commit),
                 to_shared=nan_med(to_shared), gap=gap * 1e3,
                 flush=nan_med(f_ms), flushes=len(spans),
                 f_med=nan_med([s[i] for i in f_its if i in s]) * 1e3,
                 c_f_med=nan_med([c[i] for i in cf_its if i in c]) * 1e3,
                 f_rate=len(f_its) / f_len if f_len else nan,
                 c_f_rate=len(cf_its) / f_len if f_len else nan,
                 a_rate=len(a_its) / a_len if a_len else nan,
                 c_a_rate=len(ca_its) / a_len if a_len else nan,
                 c_median=cm * 1e3, c_longest=max(c.values()) * 1e3, c_iters=len(c),
                 c_at=nan_med(c_at) * 1e3, c_win=nan_med(c_win) * 1e3,
                 net=nan_med([w - cw for w, cw in zip(win, c_win)]) * 1e3)
        rows[v].append(r)
        print(f"{v} round {n}: {r['iters']} iterations, median {r['median']:.4f} ms, longest "
              f"{r['longest']:.1f} ms, {r['saves']} saves at iterations {saves}; the save's "
              f"iteration +{r['at']:.2f} ms (median; largest +{r['at_max']:.1f}), its "
              f"{window * 1e3:.0f} ms +{r['win']:.1f} ms (median), newest file "
              f"{r['to_file']:.0f} ms and commit {r['to_commit']:.0f} ms after the save, "
              f"{r['commit']:.0f} ms after the newest file (medians; wall clock against the "
              f"summed iterations at the end: {r['gap']:+.1f} ms, spread over the iterations)"
              + (f", shared directory's commit {r['to_shared']:.0f} ms after the save; "
                 f"{r['flushes']} flushes of {r['flush']:.0f} ms (median), iterations in "
                 f"them: median {r['f_med']:.4f} ms, {r['f_rate']:.0f}/s (control at the "
                 f"same times: {r['c_f_med']:.4f} ms, {r['c_f_rate']:.0f}/s)"
                 if level == "flush" else "")
              + (f"; in the {span * 1e3:.0f} ms after each node-level commit "
                 f"{r['a_rate']:.0f} iterations/s (control: {r['c_a_rate']:.0f}/s)"
                 if level in ("local", "flush") else "")
              + f" | control: {r['c_iters']} iterations, median "
              f"{r['c_median']:.4f} ms, longest {r['c_longest']:.1f} ms, at the saves' times "
              f"+{r['c_at']:.2f} ms, their {window * 1e3:.0f} ms +{r['c_win']:.1f} ms")
keys = [("median", "median iteration"), ("longest", "longest iteration"),
        ("at", "save's iteration, extra"), ("win", f"save's {window * 1e3:.0f} ms, extra"),
        ("to_file", "save to newest file"), ("to_commit", "save to commit"),
        ("commit", "commit after newest rank file"),
        ("to_shared", "save to shared commit (flush)"), ("flush", "flush (commit to file)"),
        ("f_med", "iteration during flush"), ("c_f_med", "control: same times"),
        ("f_rate", "iterations/s during flush"), ("c_f_rate", "control: same times, /s"),
        ("a_rate", f"iterations/s, {span * 1e3:.0f} ms after commit"),
        ("c_a_rate", "control: same times, /s"),
        ("c_median", "control: median iteration"),
        ("c_longest", "control: longest iteration"), ("c_at", "control: same time, extra"),
        ("c_win", f"control: same {window * 1e3:.0f} ms, extra"),
        ("net", f"save's {window * 1e3:.0f} ms minus control's")]
names = [v for v, _, _ in variants]
print(f"summary: medians over {rounds} rounds (ms)")
print(f"{'':34}" + "".join(f"{v:>10}" for v in names)
      + "".join(f"{v + '/' + names[0]:>14}" for v in names[1:]))
for k, label in keys:
    vals = [med([r[k] for r in rows[v]]) for v in names]
    if all(x != x for x in vals):
        continue
    ratios = "".join(f"{x / vals[0]:14.2f}" if vals[0] else f"{'':14}" for x in vals[1:])
    print(f"{label:34}" + "".join(f"{x:10.3f}" for x in vals) + ratios)
EOF
