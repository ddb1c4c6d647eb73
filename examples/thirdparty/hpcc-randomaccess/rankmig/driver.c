/* A minimal main for HPCC's MPI RandomAccess, written for rankmig (not part of HPCC).
 *
 * HPCC's own main (src/hpcc.c) runs every HPCC test and reads hpccinf.txt through HPL,
 * which needs BLAS; this one runs only HPCC_MPIRandomAccess, with the memory per
 * process (bytes, HPCC's HPLMaxProcMem) as its first argument. The benchmark's report,
 * with the "checksum:" line added for rankmig, goes to stdout.
 *
 *   mpicc -O2 -DRA_SANDIA_NOPT -DLONG_IS_64BITS -I rankmig/RandomAccess \
 *     -I original/RandomAccess -I original/include -I original/hpl/include \
 *     rankmig/driver.c rankmig/RandomAccess/MPIRandomAccess.c \
 *     rankmig/RandomAccess/MPIRandomAccess_vanilla.c original/RandomAccess/verification.c \
 *     original/RandomAccess/utility.c $(pkg-config --cflags --libs rankmig) -lxxhash -o ra
 *
 * with PKG_CONFIG_PATH=PREFIX/lib/pkgconfig of a prefix installed by scripts/install.sh.
 */
#include <hpcc.h>
#include <rankmig.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

extern int HPCC_MPIRandomAccess(HPCC_Params *params);

/* HPL's timer, used by RandomAccess.h's CPUSEC(). */
double HPL_timer_cputime(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + 1e-6 * ru.ru_utime.tv_usec;
}

int main(int argc, char **argv) {
  HPCC_Params params;
  MPI_Comm comm;
  int rank;

  MPI_Init(&argc, &argv);
  if (rankmig_init(&comm) != 0) {
    fprintf(stderr, "rankmig_init: %s\n", rankmig_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  memset(&params, 0, sizeof params);
  params.HPLMaxProcMem = argc > 1 ? strtoul(argv[1], NULL, 10) : 1UL << 20;
  snprintf(params.outFname, sizeof params.outFname, "/dev/stdout");

  HPCC_MPIRandomAccess(&params);

  MPI_Comm_rank(rankmig_comm(), &rank);
  if (rank == 0)
    printf("result: N=%lld errors=%lld %s\n", (long long)params.MPIRandomAccess_N,
           (long long)params.MPIRandomAccess_Errors, params.Failure ? "failed" : "passed");
  if (rankmig_finalize() != 0) fprintf(stderr, "rankmig_finalize: %s\n", rankmig_last_error());
  MPI_Finalize();
  return 0;
}
