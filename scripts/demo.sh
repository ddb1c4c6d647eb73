#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs the live-migration demo.
#
# The Jacobi example runs as 32 MPI ranks on 4 logical nodes of 8 cores (all on this
# machine) under `rankmig run`. While it runs, this script edits its availability file
# as in Fig. 3 of the paper (availability/demo/step1..5.avail): one node lost and
# replaced by a spare, nodes lost one by one until one is left, then the last lost and
# four back at once. Each edit waits for the job to have carried out the previous one.
# At the end: the placement after each step, the report table, the chart's path, and
# the final checksum next to that of a run without availability changes.
#
# Settings (environment): DEMO_RANKS (32), DEMO_SIZE (256), DEMO_ITERS (20000),
# DEMO_CHECK_EVERY (20), DEMO_DIR (target/demo).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release --quiet --bin rankmig --example jacobi

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
RANKS=${DEMO_RANKS:-32}
SIZE=${DEMO_SIZE:-256}
ITERS=${DEMO_ITERS:-20000}
CHECK=${DEMO_CHECK_EVERY:-20}
DIR=${DEMO_DIR:-target/demo}
BIN=$PWD/target/release/rankmig
APP=$PWD/target/release/examples/jacobi
STEPS=$PWD/availability/demo

rm -rf "$DIR"
mkdir -p "$DIR"
cd "$DIR"

echo "== reference: the same computation without availability changes (4 ranks)"
reference=$(mpirun --oversubscribe -np 4 "$APP" --size "$SIZE" --iters "$ITERS" 2>/dev/null |
  sed -n 's/^checksum: //p')
echo "reference checksum: $reference"

cp "$STEPS/step0.avail" av
echo
echo "== rankmig run -n $RANKS --availability av -- jacobi --size $SIZE --iters $ITERS"
"$BIN" run -n "$RANKS" --availability av --run-dir run --check-every "$CHECK" -- \
  "$APP" --size "$SIZE" --iters "$ITERS" >run.out 2>run.err &
job=$!

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
if wait_until "its first availability check" started; then
  for k in 1 2 3 4 5; do
    # Spread the steps over the run: step k at about k/6 of the iterations.
    due=$((ITERS * k / 6))
    reached() { [ "$(progress)" -ge "$due" ]; }
    wait_until "iteration $due" reached || break
    grep -v '^#' "$STEPS/step$k.avail" | tr '\n' ' ' | sed "s/^/iteration $(progress), step $k: /"; echo
    cp "$STEPS/step$k.avail" av.tmp && mv av.tmp av
    target=$k
    have_records() { [ "$(records)" -ge "$target" ]; }
    wait_until "step $k" have_records || break
    steps_done=$k
  done
fi
if [ "$steps_done" -lt 5 ]; then
  # The job is stuck or gone: stop it (mpirun's ranks are in their own process groups).
  for m in $(pgrep -P "$job" mpirun); do pkill -KILL -P "$m"; kill -KILL "$m"; done 2>/dev/null || true
fi
status=0
wait "$job" || status=$?
echo
echo "== job finished (exit $status) after $steps_done of 5 availability steps"
sed -n 's/^checksum: //p' run.out | sed 's/^/migrated run checksum: /'
echo "reference checksum:     $reference"

summary() { # a placement file -> "node:ranks ..." in node order
  awk '{n[$2]++} END {for (k in n) printf "%s:%d ", k, n[k]; print ""}' "$1" |
    tr ' ' '\n' | sort | tr '\n' ' '
}
echo
echo "== placement after each step (node:ranks)"
for f in run/placement-0.txt $(ls run/placement-[1-9]*.txt 2>/dev/null | sort -V); do
  printf '%-22s %s\n' "$(basename "$f")" "$(summary "$f")"
done
echo
echo "== report"
"$BIN" report run
echo
got=$(sed -n 's/^checksum: //p' run.out)
if [ "$status" -eq 0 ] && [ -n "$got" ] && [ "$got" = "$reference" ]; then
  echo "RESULT: checksums equal ($got): the migrations changed nothing in the result."
else
  echo "RESULT: FAILED (exit $status, checksum '${got:-none}' vs '$reference'); see $DIR/run.err"
  exit 1
fi
