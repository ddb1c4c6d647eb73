#!/usr/bin/env bash
# The pause of one live migration against the state per rank and the rank count, per
# MPI implementation, with the spawn in the background and held (RANKMIG_BLOCKING_SPAWN),
# by the application's own clock: scripts/pause_probe.sh once per case, its summary
# line kept. Half of the ranks move (n1, n2 -> n2, n3 on logical nodes of this host;
# h1, h2 -> h2, h3 on the emulated cluster).
#
# Environment: IMPLS ("openmpi4 mpich"), SIZES_MB ("1 16 256", at 8 ranks), COUNTS
# ("8 16 32 64", at 1 MB per rank), MODES ("background blocking"), PLACES ("nodes",
# logical nodes; "cluster", the emulated cluster of pause_probe.sh's CLUSTER=1).
set -uo pipefail
cd "$(dirname "$0")/.."
run_case() {
  local impl=$1 mode=$2 ranks=$3 mb=$4 blocking=0 cluster=
  [ "$mode" = blocking ] && blocking=1
  [ "$place" = cluster ] && cluster=1
  local line
  line=$(IMPL=$impl RANKS=$ranks CLUSTER=$cluster RANKMIG_BLOCKING_SPAWN=$blocking timeout 900 \
    bash scripts/pause_probe.sh "$mb" 2>&1 | sed -n 's/^summary: //p')
  printf '| %s | %s | %s | %s | %s | %s |\n' "$impl" "$place" "$mode" "$ranks" "$mb" "${line:-failed}"
}
echo "| MPI | where | spawn | ranks | MB per rank | application's clock and rankmig's record |"
echo "|---|---|---|---|---|---|"
for impl in ${IMPLS:-openmpi4 mpich}; do
  for place in ${PLACES:-nodes}; do
    for mode in ${MODES:-background blocking}; do
      for mb in ${SIZES_MB:-1 16 256}; do run_case "$impl" "$mode" 8 "$mb"; done
      for ranks in ${COUNTS:-8 16 32 64}; do
        [ "$ranks" = 8 ] && continue
        run_case "$impl" "$mode" "$ranks" 1
      done
    done
  done
done
