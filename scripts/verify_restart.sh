#!/usr/bin/env bash
# Finds a state region a program forgot to register: a restart from each checkpoint
# epoch must print what a plain run prints.
#
# Runs PROGRAM once plainly under the MPI launcher with a checkpoint every EVERY
# rankmig_checkpoint / checkpoint! calls and every epoch kept, then, for each committed
# epoch in turn, runs it again restarted from that epoch alone (a checkpoint directory
# holding only it, RANKMIG_RESTART=1) and compares the lines of its standard output
# that match PATTERN with the plain run's. A region the loop changes but that is not
# registered shows at once: the restart resumes with it at its initial value. (A
# region only set-up communication makes shows in a migration instead: see
# docs/fortran-and-c.md, "Choosing the state".)
#
# Usage: scripts/verify_restart.sh [-n RANKS] [-e EVERY] [-p PATTERN] [-k] PROGRAM [ARG...]
#   -n RANKS    ranks (default 4)
#   -e EVERY    a save every EVERY calls (default 100): RANKMIG_CKPT_EVERY
#   -p PATTERN  the lines compared (grep -E; default '^checksum')
#   -k          keep the work directory (its path is printed)
#   -h          this help
# Environment: MPIRUN (default mpirun; for MPICH, mpiexec), MPIRUN_ARGS (more launcher
# arguments, whitespace separated, e.g. --oversubscribe), TMPDIR (the work directory
# is made there with mktemp). Other RANKMIG_* variables reach every run, except
# RANKMIG_CKPT_DIR, _EVERY, _SECONDS, _KEEP, _JOB and _RESTART, which this sets.
#
# Prints one line per epoch, "epoch N: same" or "epoch N: differs" (or "the restart failed")
# with both outputs' lines, then a verdict. Exit status: 0 when every epoch agrees, 1
# when a restart differs or fails, 2 on a usage error, a failed plain run, or a plain
# run that committed no epoch or printed no line matching PATTERN.
set -uo pipefail

usage() { sed -n '2,/^set -uo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }

RANKS=4 EVERY=100 PATTERN='^checksum' KEEP=0
while getopts 'n:e:p:kh' opt; do
    case $opt in
        n) RANKS=$OPTARG ;;
        e) EVERY=$OPTARG ;;
        p) PATTERN=$OPTARG ;;
        k) KEEP=1 ;;
        h) usage; exit 0 ;;
        *) usage >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
if [ $# -lt 1 ]; then
    echo "verify_restart: no PROGRAM given" >&2
    usage >&2
    exit 2
fi
for v in "$RANKS" "$EVERY"; do
    case $v in
        '' | *[!0-9]* | 0) echo "verify_restart: '$v' is not a whole number of at least 1" >&2; exit 2 ;;
    esac
done

MPIRUN=${MPIRUN:-mpirun}
read -r -a LAUNCHER_ARGS <<< "${MPIRUN_ARGS:-}"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/verify-restart.XXXXXX") || exit 2
if [ "$KEEP" = 1 ]; then
    echo "work directory: $WORK"
else
    trap 'rm -rf "$WORK"' EXIT
fi
JOB=verify
unset RANKMIG_CKPT_SECONDS RANKMIG_CKPT_FIRST_SECONDS RANKMIG_RESTART

PROGRAM=("$@")

# run DIR OUT [VAR=VALUE...]: PROGRAM under the launcher, checkpointing into DIR, with
# the variables given.
run() {
    local dir=$1 out=$2
    shift 2
    env RANKMIG_CKPT_DIR="$dir" RANKMIG_CKPT_EVERY="$EVERY" RANKMIG_CKPT_KEEP=1000000 \
        RANKMIG_CKPT_JOB="$JOB" "$@" \
        "$MPIRUN" "${LAUNCHER_ARGS[@]}" -n "$RANKS" "${PROGRAM[@]}" >"$out" 2>"$out.err"
}

# The lines compared.
lines() { grep -E -- "$PATTERN" "$1"; }

if ! run "$WORK/plain" "$WORK/plain.out"; then
    echo "verify_restart: the plain run failed; its standard error:" >&2
    tail -n 20 "$WORK/plain.out.err" >&2
    exit 2
fi
if ! lines "$WORK/plain.out" >/dev/null; then
    echo "verify_restart: the plain run printed no line matching '$PATTERN'" >&2
    exit 2
fi
epochs=()
for e in "$WORK/plain/job-$JOB"/epoch-*; do
    [ -f "$e/COMMIT" ] && epochs+=("$(basename "$e")")
done
if [ ${#epochs[@]} -eq 0 ]; then
    echo "verify_restart: the plain run committed no epoch (fewer than $EVERY calls of rankmig_checkpoint?)" >&2
    exit 2
fi

differ=()
for e in "${epochs[@]}"; do
    n=$((10#${e#epoch-}))
    try=$WORK/from-$n
    mkdir -p "$try/ckpt/job-$JOB"
    cp -r "$WORK/plain/job-$JOB/$e" "$try/ckpt/job-$JOB/"
    if ! run "$try/ckpt" "$try/out" RANKMIG_RESTART=1; then
        echo "epoch $n: the restart failed: $(tail -n 1 "$try/out.err")"
        differ+=("$n")
    elif [ "$(lines "$WORK/plain.out")" = "$(lines "$try/out")" ]; then
        echo "epoch $n: same"
    else
        echo "epoch $n: differs"
        echo "  plain run:    $(lines "$WORK/plain.out" | tr '\n' ' ')"
        echo "  from epoch $n: $(lines "$try/out" | tr '\n' ' ')"
        differ+=("$n")
    fi
done

if [ ${#differ[@]} -eq 0 ]; then
    echo "all ${#epochs[@]} epochs agree with the plain run"
    exit 0
fi
echo "restarts from epoch(s) ${differ[*]} of ${#epochs[@]} differ from the plain run: a region the loop changes is not registered (or the program's output depends on more than its registered state)"
exit 1
