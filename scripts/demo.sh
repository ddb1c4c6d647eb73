#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs the rankmig demo.
# Until the live-migration demo exists this maps a real measured communication matrix
# (NAS LU class W, 16 ranks) onto two 8-core sockets of a real machine's hwloc tree,
# and a 64-rank Himeno run onto 4 such nodes, printing the mapping and its cost
# against the packed, round-robin and random baselines.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release --quiet
echo "== rankmig map: NAS LU (W, 16 ranks) on one 2x8-core node (hwloc XML)"
target/release/rankmig map --matrix examples/data/lu.W.16.mat \
  --topology xml:examples/data/32em64t-2n8c2t-pci-noio.xml
echo
echo "== rankmig map: Himeno 4x4x4 (64 ranks) on 4 nodes of 2x8 cores"
target/release/rankmig map --matrix examples/data/himeno.M.4x4x4.64.mat \
  --topology xml:examples/data/32em64t-2n8c2t-pci-noio.xml --nodes 4
