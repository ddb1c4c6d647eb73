/* A small MPI code written apart from rankmig's examples, ported with the C interface
 * only: one MPI_Allreduce per iteration; its state is the iteration counter and one
 * value per rank. Prints "iterations: K" and "checksum: HEX" (the bits of the sum of
 * every rank's value) on rank 0.
 * Arguments: --iters K [--pause-us U] (U microseconds of sleep per iteration). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rankmig.h"

static void fail(const char *what) {
    fprintf(stderr, "allreduce-sum: %s: %s\n", what, rankmig_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    long long iters = 1000;
    int pause = 0;
    for (int k = 1; k + 1 < argc; k += 2) {
        if (!strcmp(argv[k], "--iters")) iters = atoll(argv[k + 1]);
        else if (!strcmp(argv[k], "--pause-us")) pause = atoi(argv[k + 1]);
    }
    MPI_Comm comm;
    if (rankmig_init(&comm) != 0) fail("rankmig_init");
    int rank;
    MPI_Comm_rank(comm, &rank);
    int64_t iter = 0;
    double x = 1.0 + rank;
    if (rankmig_register("iter", &iter, sizeof iter) != 0) fail("register iter");
    if (rankmig_register("x", &x, sizeof x) != 0) fail("register x");
    while (iter < iters) {
        double total;
        MPI_Allreduce(&x, &total, 1, MPI_DOUBLE, MPI_SUM, comm);
        x = 0.5 * x + 0.125 * total / (1.0 + (double)(iter % 7)) + 1.0 / (double)(iter + 1);
        iter++;
        if (pause > 0) usleep(pause);
        if (rankmig_checkpoint() < 0) fail("rankmig_checkpoint");
        comm = rankmig_comm();
    }
    double sum = 0.0;
    MPI_Reduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, comm);
    if (rank == 0) {
        uint64_t bits;
        memcpy(&bits, &sum, sizeof bits);
        printf("iterations: %lld\nchecksum: %016llx\n", (long long)iter, (unsigned long long)bits);
    }
    if (rankmig_finalize() != 0) fail("rankmig_finalize");
    MPI_Finalize();
    return 0;
}
