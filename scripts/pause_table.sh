#!/usr/bin/env bash
# The pause of one live migration against the state per rank and the rank count, per
# MPI implementation, with the spawn in the background and held (RANKMIG_BLOCKING_SPAWN),
# by the application's own clock: scripts/pause_probe.sh once per case, its summary
# line kept. Half of the ranks move (logical nodes n1, n2 -> n2, n3).
#
# Environment: IMPLS ("openmpi4 mpich"), SIZES_MB ("1 16 256", at 8 ranks), COUNTS
# ("8 16 32 64", at 1 MB per rank), MODES ("background blocking").
set -uo pipefail
cd "$(dirname "$0")/.."
run_case() {
  local impl=$1 mode=$2 ranks=$3 mb=$4 blocking=0
  [ "$mode" = blocking ] && blocking=1
  local line
  line=$(IMPL=$impl RANKS=$ranks RANKMIG_BLOCKING_SPAWN=$blocking timeout 900 \
    bash scripts/pause_probe.sh "$mb" 2>&1 | sed -n 's/^summary: //p')
  printf '| %s | %s | %s | %s | %s |\n' "$impl" "$mode" "$ranks" "$mb" "${line:-failed}"
}
echo "| MPI | spawn | ranks | MB per rank | application's clock and rankmig's record |"
echo "|---|---|---|---|---|"
for impl in ${IMPLS:-openmpi4 mpich}; do
  for mode in ${MODES:-background blocking}; do
    for mb in ${SIZES_MB:-1 16 256}; do run_case "$impl" "$mode" 8 "$mb"; done
    for ranks in ${COUNTS:-8 16 32 64}; do
      [ "$ranks" = 8 ] && continue
      run_case "$impl" "$mode" "$ranks" 1
    done
  done
done
