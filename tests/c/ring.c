/* The C twin of tests/fortran/ring_f08.f90: the same MPI calls with the same counts
 * (MPI_Sendrecv to the right, MPI_Isend/MPI_Irecv to the left, MPI_Allreduce, then
 * MPI_Gather to rank 0) on a periodic Cartesian ring made in a rankmig_on_comm
 * callback, so the same RANKMIG_MATRIX_OUT matrix and the same checksum.
 * Arguments: --size N --iters K [--pause-us U]. */
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

static void fail(const char *what) {
    fprintf(stderr, "ring-c: %s: %s\n", what, rankmig_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int n = 64;
    long long iters = 100;
    int pause = 0;
    for (int k = 1; k + 1 < argc; k += 2) {
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
