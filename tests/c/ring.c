/* The C twin of tests/fortran/ring_f08.f90: the same MPI calls with the same counts
 * (MPI_Sendrecv to the right, MPI_Isend/MPI_Irecv to the left, MPI_Allreduce, then
 * MPI_Gather to rank 0) on a periodic Cartesian ring made in a rankmig_on_comm
 * callback, so the same RANKMIG_MATRIX_OUT matrix and the same checksum.
 * Arguments: --size N --iters K [--pause-us U] [--every-call] (each other counted
 * call once after the loop, with counts of its own, as the Fortran twin). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rankmig.h"

/* The ring, rebuilt by rebuild (rankmig_on_comm). */
static MPI_Comm ring = MPI_COMM_NULL;

static void rebuild(MPI_Comm comm, void *arg) {
    (void)arg;
    if (ring != MPI_COMM_NULL) MPI_Comm_free(&ring);
    int ranks, periods = 1;
    MPI_Comm_size(comm, &ranks);
    MPI_Cart_create(comm, 1, &ranks, &periods, 0, &ring);
}

/* Each counted call not made in the loop, once, with the Fortran twin's counts. */
static void every_call(int rank, int ranks) {
    size_t len = 64 * (size_t)ranks + 64;
    double *a = malloc(len * sizeof(double)), *b = calloc(len, sizeof(double));
    int *counts = malloc(ranks * sizeof(int)), *displs = malloc(ranks * sizeof(int)),
        *rcounts = malloc(ranks * sizeof(int)), *rdispls = malloc(ranks * sizeof(int));
    for (size_t i = 0; i < len; i++) a[i] = 1.0;
    int left, right;
    MPI_Cart_shift(ring, 0, 1, &left, &right);
    MPI_Request r[2];
    MPI_Irecv(b, 3, MPI_DOUBLE, left, 2, ring, &r[0]);
    MPI_Ssend(a, 3, MPI_DOUBLE, right, 2, ring);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    MPI_Irecv(b, 5, MPI_DOUBLE, left, 3, ring, &r[0]);
    MPI_Issend(a, 5, MPI_DOUBLE, right, 3, ring, &r[1]);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    MPI_Irecv(b, 6, MPI_DOUBLE, left, 4, ring, &r[0]);
    MPI_Send(a, 6, MPI_DOUBLE, right, 4, ring);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    MPI_Send_init(a, 7, MPI_DOUBLE, right, 5, ring, &r[1]);
    MPI_Irecv(b, 7, MPI_DOUBLE, left, 5, ring, &r[0]);
    MPI_Start(&r[1]);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    MPI_Irecv(b, 7, MPI_DOUBLE, left, 5, ring, &r[0]);
    MPI_Startall(1, &r[1]);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    MPI_Request_free(&r[1]);
    for (int i = 0; i < 9; i++) b[i] = 2.0;
    MPI_Sendrecv_replace(b, 9, MPI_DOUBLE, right, 6, left, 6, ring, MPI_STATUS_IGNORE);
    MPI_Bcast(a, 11, MPI_DOUBLE, 0, ring);
    MPI_Reduce(a, b, 13, MPI_DOUBLE, MPI_SUM, 1 % ranks, ring);
    MPI_Scatter(a, 2, MPI_DOUBLE, b, 2, MPI_DOUBLE, 0, ring);
    for (int k = 0; k < ranks; k++) {
        counts[k] = k + 1;
        displs[k] = 16 * k;
    }
    MPI_Scatterv(a, counts, displs, MPI_DOUBLE, b, rank + 1, MPI_DOUBLE, 0, ring);
    MPI_Gatherv(a, rank + 1, MPI_DOUBLE, b, counts, displs, MPI_DOUBLE, 0, ring);
    MPI_Allgather(a, 3, MPI_DOUBLE, b, 3, MPI_DOUBLE, ring);
    MPI_Allgatherv(a, rank + 1, MPI_DOUBLE, b, counts, displs, MPI_DOUBLE, ring);
    MPI_Alltoall(a, 4, MPI_DOUBLE, b, 4, MPI_DOUBLE, ring);
    for (int k = 0; k < ranks; k++) {
        counts[k] = k + 2;
        rcounts[k] = rank + 2;
        rdispls[k] = 16 * k;
    }
    MPI_Alltoallv(a, counts, displs, MPI_DOUBLE, b, rcounts, rdispls, MPI_DOUBLE, ring);
    free(a), free(b), free(counts), free(displs), free(rcounts), free(rdispls);
}

static void fail(const char *what) {
    fprintf(stderr, "ring-c: %s: %s\n", what, rankmig_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int n = 64;
    long long iters = 100;
    int pause = 0;
    int every = 0;
    for (int k = 1; k < argc; k += 2) {
        if (!strcmp(argv[k], "--every-call")) {
            every = 1;
            k--;
            continue;
        }
        if (k + 1 >= argc) break;
        if (!strcmp(argv[k], "--size")) n = atoi(argv[k + 1]);
        else if (!strcmp(argv[k], "--iters")) iters = atoll(argv[k + 1]);
        else if (!strcmp(argv[k], "--pause-us")) pause = atoi(argv[k + 1]);
    }
    MPI_Comm comm;
    if (rankmig_init(&comm) != 0) fail("rankmig_init");
    int rank, ranks;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    double *v = malloc(sizeof(double) * n), *from_left = malloc(sizeof(double) * n),
           *from_right = malloc(sizeof(double) * n);
    for (int i = 1; i <= n; i++) v[i - 1] = (double)rank + (double)i / (double)n;
    int64_t iter = 0;
    if (rankmig_register("iter", &iter, sizeof iter) != 0) fail("register");
    if (rankmig_register("v", v, sizeof(double) * n) != 0) fail("register");
    if (rankmig_on_comm(rebuild, NULL) != 0) fail("rankmig_on_comm");
    while (iter < iters) {
        int left, right;
        MPI_Cart_shift(ring, 0, 1, &left, &right);
        MPI_Sendrecv(v, n, MPI_DOUBLE, right, 0, from_left, n, MPI_DOUBLE, left, 0, ring,
                     MPI_STATUS_IGNORE);
        MPI_Request requests[2];
        MPI_Irecv(from_right, n, MPI_DOUBLE, right, 1, ring, &requests[0]);
        MPI_Isend(v, n, MPI_DOUBLE, left, 1, ring, &requests[1]);
        MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
        double mine = v[0], total;
        MPI_Allreduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, ring);
        for (int i = 0; i < n; i++)
            v[i] = 0.5 * v[i] + 0.25 * (from_left[i] + from_right[i]) + 1e-6 * total;
        iter++;
        if (pause > 0) usleep(pause);
        if (rankmig_checkpoint() < 0) fail("rankmig_checkpoint");
    }
    comm = rankmig_comm();
    if (every) every_call(rank, ranks);
    double *all = malloc(sizeof(double) * (rank == 0 ? (size_t)n * ranks : 1));
    MPI_Gather(v, n, MPI_DOUBLE, all, n, MPI_DOUBLE, 0, comm);
    if (rank == 0) {
        double total = 0.0;
        for (long i = 0; i < (long)n * ranks; i++) total += all[i];
        uint64_t bits;
        memcpy(&bits, &total, sizeof bits);
        printf("checksum: %016llx\n", (unsigned long long)bits);
        fprintf(stderr, "ring-c: communicator generation %lu\n", rankmig_generation());
    }
    if (rankmig_finalize() != 0) fail("rankmig_finalize");
    MPI_Finalize();
    return 0;
}
