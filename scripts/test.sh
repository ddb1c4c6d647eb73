#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs every test (unit,
# integration with real hwloc XML files and real MPI launchers), also without the MPI
# feature; then the multi-host scenarios of the emulated cluster and the C interface
# example and the Slurm scenarios again with MPICH and with Open MPI 5 (from PyPI, see
# scripts/setup.sh), and the C and Fortran examples with Debian's MPICH 4.0.2, each built in its own target directory with its own MPI first on
# PATH (Open MPI 5 moves ranks across hosts by relaunching from a checkpoint: it cannot
# spawn there).
#
# Every test runs even when one fails (--no-fail-fast); the script then exits
# non-zero and lists what failed. RANKMIG_TEST_MPIS="mpich" (or "") limits the
# other implementations.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# tests/it/slurm_rms.rs fails, rather than skips, when the emulated Slurm cannot start (on a
# machine that allows UTS namespaces; without them it skips and says so).
export RANKMIG_REQUIRE_SLURM=1
failed=()
step() {
  local name=$1
  shift
  echo "=== test.sh: $name" >&2
  local start=$SECONDS
  if ! "$@"; then
    failed+=("$name")
  fi
  echo "=== test.sh: $name took $((SECONDS - start)) s" >&2
}

step "build (Open MPI 4.1)" cargo build --release --all-targets
step "lib without MPI" cargo test --release --no-fail-fast --no-default-features --lib
step "all tests (Open MPI 4.1)" cargo test --release --no-fail-fast

ROOT=$PWD
for impl in ${RANKMIG_TEST_MPIS-mpich openmpi5}; do
  prefix="$ROOT/target/mpi/$impl"
  if [ ! -x "$prefix/bin/mpicc" ]; then
    failed+=("$impl: not installed in $prefix")
    continue
  fi
  with_impl=(env "PATH=$prefix/bin:$PATH" "CARGO_TARGET_DIR=$ROOT/target/$impl")
  step "build ($impl)" "${with_impl[@]}" cargo build --release --bins --examples --lib --tests
  # Open MPI 5.0.11 cannot spawn under several daemons (Capabilities::
  # spawn_across_daemons): its scenarios across hosts move the ranks by a relaunch
  # from a checkpoint, and the tests expect that.
  step "linked MPI and emulated cluster ($impl)" "${with_impl[@]}" \
    cargo test --release --no-fail-fast --test it -- linked_mpi:: cluster_mpi::
  step "C interface on the emulated cluster ($impl)" "${with_impl[@]}" \
    cargo test --release --no-fail-fast --test it -- c_programs::a_c_program_migrates_live
  # Under the emulated Slurm, as Open MPI 4.1 above.
  step "Slurm ($impl)" "${with_impl[@]}" cargo test --release --no-fail-fast --test it -- slurm_rms::
done

# Debian's MPICH 4.0.2 (libmpich-dev: the MPICH with Fortran bindings here), through the
# wrappers of scripts/mpich4-debian (mpicc -> mpicc.mpich, ...): the C and Fortran
# examples built against it print the Rust checksum, restart after SIGKILL, and their
# traffic is counted. It cannot spawn (Debian builds it with ch4:ucx, whose MPI_Open_port,
# which MPI_Comm_spawn needs, says "MPIDI_UCX_get_local_upids(31): The function is
# currently not supported with ucx netmod"), so its live migrations are not tested.
mpich4=(env "PATH=$ROOT/scripts/mpich4-debian:$PATH" "CARGO_TARGET_DIR=$ROOT/target/mpich4")
step "C and Fortran examples (Debian MPICH 4.0.2)" "${mpich4[@]}" \
  cargo test --release --no-fail-fast --test it -- c_programs::the_c_and_fortran_twins_print \
  c_programs::a_c_program_killed_with_sigkill c_programs::a_fortran_program_killed_with_sigkill \
  c_programs::the_traffic_of_ c_programs::the_mpi_f08_ring_prints_the_checksum_of_its_c_twin

if [ ${#failed[@]} -gt 0 ]; then
  echo "test.sh: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "test.sh: every step passed" >&2
