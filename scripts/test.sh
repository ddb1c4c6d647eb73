#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs every test
# (unit, integration with real hwloc XML files and real `mpirun`), also without the
# MPI feature.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cargo build --release --all-targets
cargo test --release --no-default-features --lib
cargo test --release
