/* A bulk-synchronous loop written apart from rankmig's own examples: each iteration
 * steps a chaotic map (the logistic map at 3.9, so any change in the order or the
 * number of operations changes the result) over a vector, then one MPI_Allreduce (of
 * the vector's sum and of a stop flag) couples the ranks. Rank 0 looks for the stop file every 1000 iterations; the flag it adds
 * to the reduction stops every rank at the same iteration. Prints the iterations made
 * and a checksum of the final vectors (bit pattern of their sum).
 * Arguments: --iters K [--stop-file PATH] [--size N]. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rankmig.h"

static void fail(const char *what) {
    fprintf(stderr, "allreduce: %s: %s\n", what, rankmig_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    long long iters = 1000;
    int n = 256;
    const char *stop = NULL;
    for (int k = 1; k + 1 < argc; k += 2) {
        if (!strcmp(argv[k], "--iters")) iters = atoll(argv[k + 1]);
        else if (!strcmp(argv[k], "--size")) n = atoi(argv[k + 1]);
        else if (!strcmp(argv[k], "--stop-file")) stop = argv[k + 1];
    }
    MPI_Comm comm;
    if (rankmig_init(&comm) != 0) fail("rankmig_init");
    int rank, ranks;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    double *v = malloc(sizeof(double) * n);
    for (int i = 0; i < n; i++) {
        unsigned long long k = ((unsigned long long)rank * n + i) * 2654435761ull % 1000003ull;
        v[i] = 0.01 + 0.98 * (double)k / 1000003.0;
    }
    int64_t iter = 0;
    if (rankmig_register("iter", &iter, sizeof iter) != 0) fail("register");
    if (rankmig_register("v", v, sizeof(double) * n) != 0) fail("register");
    double halt = 0.0;
    while (iter < iters && halt == 0.0) {
        double local[2] = {0.0, 0.0};
        for (int i = 0; i < n; i++) {
            v[i] = 3.9 * v[i] * (1.0 - v[i]);
            local[0] += v[i];
        }
        if (rank == 0 && stop && iter % 1000 == 999 && access(stop, F_OK) == 0) local[1] = 1.0;
        double global[2];
        comm = rankmig_comm();
        MPI_Allreduce(local, global, 2, MPI_DOUBLE, MPI_SUM, comm);
        double mean = global[0] / ((double)n * ranks);
        for (int i = 0; i < n; i++) v[i] = 0.999 * v[i] + 0.001 * mean;
        halt = global[1];
        iter++;
        if (rankmig_checkpoint() < 0) fail("rankmig_checkpoint");
    }
    comm = rankmig_comm();
    double mine = 0.0, total = 0.0;
    for (int i = 0; i < n; i++) mine += v[i];
    MPI_Reduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, 0, comm);
    if (rank == 0) {
        uint64_t bits;
        memcpy(&bits, &total, sizeof bits);
        printf("iterations: %lld\n", (long long)iter);
        printf("checksum: %016llx\n", (unsigned long long)bits);
    }
    if (rankmig_finalize() != 0) fail("rankmig_finalize");
    MPI_Finalize();
    return 0;
}
