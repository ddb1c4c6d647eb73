/* A loop whose state is three registered regions: the iteration counter, a value per
 * rank the loop changes (x), and a table the loop accumulates into (acc). One
 * MPI_Allreduce per iteration. Prints "iterations: K" and "checksum: HEX" (the bits of
 * the sum over the ranks of x and of acc) on rank 0.
 * Arguments: --iters K [--leave-out NAME]: region NAME (x or acc) is not registered,
 * the mistake scripts/verify_restart.sh finds (a restart resumes it at its initial
 * value). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rankmig.h"

#define TABLE 64

static void fail(const char *what) {
    fprintf(stderr, "state-regions: %s: %s\n", what, rankmig_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Registers the region unless it is the one left out. */
static void keep(const char *name, void *p, size_t len, const char *left_out) {
    if (left_out && !strcmp(name, left_out)) return;
    if (rankmig_register(name, p, len) != 0) fail(name);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    long long iters = 1000;
    const char *left_out = NULL;
    for (int k = 1; k + 1 < argc; k += 2) {
        if (!strcmp(argv[k], "--iters")) iters = atoll(argv[k + 1]);
        else if (!strcmp(argv[k], "--leave-out")) left_out = argv[k + 1];
    }
    MPI_Comm comm;
    if (rankmig_init(&comm) != 0) fail("rankmig_init");
    int rank;
    MPI_Comm_rank(comm, &rank);
    int64_t iter = 0;
    double x = 1.0 + rank;
    double acc[TABLE] = {0};
    keep("iter", &iter, sizeof iter, NULL);
    keep("x", &x, sizeof x, left_out);
    keep("acc", acc, sizeof acc, left_out);
    while (iter < iters) {
        double total;
        MPI_Allreduce(&x, &total, 1, MPI_DOUBLE, MPI_SUM, comm);
        x = 0.5 * x + 0.25 * total / (2.0 + (double)(iter % 5));
        acc[iter % TABLE] += x / (double)(iter + 1);
        iter++;
        if (rankmig_checkpoint() < 0) fail("rankmig_checkpoint");
        comm = rankmig_comm();
    }
    double mine = x, sum = 0.0;
    for (int k = 0; k < TABLE; k++) mine += acc[k];
    MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, comm);
    if (rank == 0) {
        uint64_t bits;
        memcpy(&bits, &sum, sizeof bits);
        printf("iterations: %lld\nchecksum: %016llx\n", (long long)iter, (unsigned long long)bits);
    }
    if (rankmig_finalize() != 0) fail("rankmig_finalize");
    MPI_Finalize();
    return 0;
}
