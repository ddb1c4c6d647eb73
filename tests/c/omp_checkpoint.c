/* An MPI+OpenMP rank that calls rankmig_checkpoint where it does not belong: inside a
 * `#pragma omp parallel` region of 2 threads, once per thread (the master thread, which
 * called rankmig_init, and a worker). Each call must return RANKMIG_ERR_THREAD at once,
 * with rankmig_last_error() (the calling thread's) saying why, and leave the job as it
 * was: the loop's calls, outside the region on the main thread, go on and save.
 * Every rank checks its own calls; rank 0 prints "start: I" (the iteration it starts
 * from: 0, or the one restored at a restart), then, when the region ran, "team: N
 * threads", per thread "thread T: CODE: MESSAGE" and "refused on every rank: yes|no",
 * and at the end "iterations: K". Compiled with -fopenmp.
 * Arguments: --iters K (the region comes at iteration K / 2). */
#include <mpi.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rankmig.h"

#define THREADS 2
#define MESSAGE 512

static void fail(const char *what) {
    fprintf(stderr, "omp-checkpoint: %s: %s\n", what, rankmig_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    long long iters = 20;
    for (int k = 1; k + 1 < argc; k += 2)
        if (!strcmp(argv[k], "--iters")) iters = atoll(argv[k + 1]);
    MPI_Comm comm;
    if (rankmig_init(&comm) != 0) fail("rankmig_init");
    int rank;
    MPI_Comm_rank(comm, &rank);
    int64_t iter = 0;
    if (rankmig_register("iter", &iter, sizeof iter) != 0) fail("rankmig_register");
    if (rank == 0) printf("start: %lld\n", (long long)iter);
    int region_ran = 0;
    int codes[THREADS];
    char messages[THREADS][MESSAGE];
    int refused = 1, team = 0;
    while (iter < iters) {
        double mine = (double)(rank + iter), total;
        MPI_Allreduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, comm);
        iter++;
        if (iter == iters / 2) {
            region_ran = 1;
            for (int t = 0; t < THREADS; t++) codes[t] = 0;
            /* Wrong: the checkpoint inside the parallel region. */
#pragma omp parallel num_threads(THREADS)
            {
                int t = omp_get_thread_num();
                if (t == 0) team = omp_get_num_threads();
                if (t < THREADS) {
                    codes[t] = rankmig_checkpoint();
                    snprintf(messages[t], MESSAGE, "%s", rankmig_last_error());
                }
            }
            for (int t = 0; t < THREADS; t++) refused &= codes[t] == RANKMIG_ERR_THREAD;
        }
        /* Right: after the region, on the thread that called rankmig_init. */
        if (rankmig_checkpoint() < 0) fail("rankmig_checkpoint");
        comm = rankmig_comm();
    }
    int everywhere = 0;
    MPI_Allreduce(&refused, &everywhere, 1, MPI_INT, MPI_MIN, comm);
    if (rank == 0) {
        if (region_ran) {
            printf("team: %d threads\n", team);
            for (int t = 0; t < THREADS; t++)
                printf("thread %d: %d: %s\n", t, codes[t], messages[t]);
            printf("refused on every rank: %s\n", everywhere ? "yes" : "no");
        }
        printf("iterations: %lld\n", (long long)iter);
    }
    if (rankmig_finalize() != 0) fail("rankmig_finalize");
    MPI_Finalize();
    return 0;
}
