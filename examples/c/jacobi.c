/* 2D Jacobi solver of -Δu = 1 on the unit square (u = 0 on the boundary), on an N x N
 * interior grid whose rows are split over the ranks: the C twin of examples/jacobi.rs,
 * with the same numerics, so the same size, iterations and rank count print the same
 * checksum (XXH3-64 of the final global grid, row-major little-endian doubles).
 *
 * The rankmig lines are marked "rankmig:". Build (from the repository root, against a
 * prefix DIR installed by scripts/install.sh --prefix DIR):
 *
 *   mpicc -O2 examples/c/jacobi.c -o target/jacobi-c \
 *         $(PKG_CONFIG_PATH=DIR/lib/pkgconfig pkg-config --cflags --libs rankmig) -lxxhash
 *
 * Run:       mpirun -np 4 target/jacobi-c --size 256 --iters 1000
 * Migrating: rankmig run -n 4 --availability av -- target/jacobi-c --size 256 --iters 1000
 *
 * Hybrid (MPI + OpenMP): built with -fopenmp, each sweep's rows are shared among the
 * rank's OpenMP threads (each point is computed as without threads, so the checksum
 * does not change), and every process prints its thread count and how many CPUs it
 * may use. Ranks of 2 threads on 2 cores each:
 *   OMP_NUM_THREADS=2 rankmig run -n 4 --cores-per-rank 2 --availability av -- target/jacobi-omp ...
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include <mpi.h>
#include <xxhash.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "rankmig.h" /* rankmig: the interface */

/* Iterations between two looks for the stop file. */
#define STOP_CHECK 100

static int parse_args(int argc, char **argv, long *size, uint64_t *iters,
                      const char **stop_file) {
    *size = 256;
    *iters = 100;
    *stop_file = NULL;
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc) {
            fprintf(stderr, "jacobi-c: %s needs a value\n", argv[i]);
            return -1;
        }
        if (strcmp(argv[i], "--stop-file") == 0) {
            *stop_file = argv[i + 1];
            continue;
        }
        char *end = NULL;
        unsigned long long v = strtoull(argv[i + 1], &end, 10);
        if (*end != '\0' || argv[i + 1][0] == '-' || end == argv[i + 1]) {
            fprintf(stderr, "jacobi-c: %s \"%s\": not a whole number\n", argv[i], argv[i + 1]);
            return -1;
        }
        if (strcmp(argv[i], "--size") == 0) {
            *size = (long)v;
        } else if (strcmp(argv[i], "--iters") == 0) {
            *iters = (uint64_t)v;
        } else {
            fprintf(stderr, "jacobi-c: unknown argument \"%s\" (use --size N --iters K [--stop-file PATH])\n", argv[i]);
            return -1;
        }
    }
    if (*size <= 0) {
        fprintf(stderr, "jacobi-c: --size must be positive\n");
        return -1;
    }
    return 0;
}

/* Sends the first row up and the last row down; receives the halo rows (the row above
 * ours into up, the row below into down). Rows outside the grid stay zero. */
static void halo_exchange(MPI_Comm cart, const double *rows, long n, long local, double *up,
                          double *down) {
    int above, below; /* MPI_PROC_NULL at the grid's edges */
    MPI_Cart_shift(cart, 0, 1, &above, &below);
    MPI_Comm comm = cart;
    MPI_Sendrecv(rows, (int)n, MPI_DOUBLE, above, 0, down, (int)n, MPI_DOUBLE, below, 0, comm,
                 MPI_STATUS_IGNORE);
    MPI_Sendrecv(rows + (local - 1) * n, (int)n, MPI_DOUBLE, below, 1, up, (int)n, MPI_DOUBLE,
                 above, 1, comm, MPI_STATUS_IGNORE);
}

/* The ranks as a line (a 1-D Cartesian communicator), derived from the job's
 * communicator. rankmig: rankmig_on_comm calls this at once, then again in every
 * process each time the job's communicator is replaced by a migration. */
static MPI_Comm cart = MPI_COMM_NULL;
static void make_cart(MPI_Comm comm, void *arg) {
    (void)arg;
    if (cart != MPI_COMM_NULL)
        MPI_Comm_free(&cart);
    int ranks;
    MPI_Comm_size(comm, &ranks);
    int dims[1] = {ranks}, periods[1] = {0};
    MPI_Cart_create(comm, 1, dims, periods, 0, &cart);
}

/* One sweep: next = (up + down + left + right + h²) / 4, summed in the Rust example's order. */
static void sweep(const double *rows, const double *up, const double *down, long n, long local,
                  double h2, double *next) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (long i = 0; i < local; i++) {
        const double *above = i == 0 ? up : rows + (i - 1) * n;
        const double *below = i + 1 == local ? down : rows + (i + 1) * n;
        const double *row = rows + i * n;
        double *out = next + i * n;
        for (long j = 0; j < n; j++) {
            double left = j == 0 ? 0.0 : row[j - 1];
            double right = j + 1 == n ? 0.0 : row[j + 1];
            out[j] = 0.25 * ((above[j] + below[j]) + (left + right) + h2);
        }
    }
}

/* Gathers the grid on rank 0 and prints its XXH3-64 there. */
static void print_checksum(MPI_Comm comm, const double *rows, long n, long local) {
    int rank;
    MPI_Comm_rank(comm, &rank);
    double *all = rank == 0 ? malloc(sizeof(double) * (size_t)(n * n)) : NULL;
    MPI_Gather(rows, (int)(local * n), MPI_DOUBLE, all, (int)(local * n), MPI_DOUBLE, 0, comm);
    if (rank == 0) {
        printf("checksum: %016" PRIx64 "\n",
               (uint64_t)XXH3_64bits(all, sizeof(double) * (size_t)(n * n)));
        free(all);
    }
}

static int fail(const char *what) {
    fprintf(stderr, "jacobi-c: %s: %s\n", what, rankmig_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
}

/* At every STOP_CHECK-th iteration, true on every rank when the stop file exists for
 * any rank (collective then). */
static int stop_requested(MPI_Comm comm, const char *stop_file, uint64_t iter) {
    if (stop_file == NULL || iter % STOP_CHECK != 0)
        return 0;
    int here = access(stop_file, F_OK) == 0, anywhere = 0;
    MPI_Allreduce(&here, &anywhere, 1, MPI_INT, MPI_MAX, comm);
    return anywhere;
}

int main(int argc, char **argv) {
#ifdef JACOBI_THREAD_MULTIPLE
    /* Built with -DJACOBI_THREAD_MULTIPLE: a migration starts the replacements while the
     * ranks compute (needed under srun, where they start as a new job step). */
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
#else
    MPI_Init(&argc, &argv);
#endif
    long n;
    uint64_t iters;
    const char *stop_file;
    if (parse_args(argc, argv, &n, &iters, &stop_file) != 0) {
        MPI_Finalize();
        return 1;
    }
    MPI_Comm comm;
    if (rankmig_init(&comm) != 0) /* rankmig: instead of MPI_COMM_WORLD */
        return fail("rankmig_init");
    int rank, ranks;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    if (n % ranks != 0) {
        fprintf(stderr, "jacobi-c: %d ranks do not divide the grid size %ld\n", ranks, n);
        MPI_Abort(comm, 1);
    }
    long local = n / ranks;
    uint64_t iter = 0;
    double *rows = calloc((size_t)(local * n), sizeof(double));
    double *next = calloc((size_t)(local * n), sizeof(double));
    double *up = calloc((size_t)n, sizeof(double));
    double *down = calloc((size_t)n, sizeof(double));
    /* rankmig: the state; in a resumed process the saved values are copied in here */
    if (rankmig_register("iter", &iter, sizeof iter) != 0 ||
        rankmig_register("rows", rows, sizeof(double) * (size_t)(local * n)) != 0)
        return fail("rankmig_register");
    if (rank == 0 && !rankmig_resumed()) /* rankmig: set-up that runs once */
        fprintf(stderr, "jacobi-c: grid %ldx%ld, %d ranks, %" PRIu64 " iterations\n", n, n,
                ranks, iters);
    if (rank == 0 && rankmig_resumed() && iter > 0)
        fprintf(stderr, "jacobi-c: resumed at iteration %" PRIu64 "\n", iter);
#ifdef _OPENMP
    /* Every process, replacements included: its threads and the CPUs it may use. */
    fprintf(stderr, "jacobi-c: process %ld, rank %d: %d OpenMP threads, %d CPUs available\n",
            (long)getpid(), rank, omp_get_max_threads(), omp_get_num_procs());
#endif
    double h = 1.0 / ((double)n + 1.0);
    double h2 = h * h;
#ifdef JACOBI_CART_ONCE
    /* The naive port (built with -DJACOBI_CART_ONCE for tests/it/c_programs.rs): the
     * Cartesian communicator made once; after a migration the survivors' one still holds
     * the departed processes and the job stops until `rankmig run --stall-timeout`
     * launches it again. */
    make_cart(rankmig_comm(), NULL);
#else
    if (rankmig_on_comm(make_cart, NULL) != 0) /* rankmig: derived communicators */
        return fail("rankmig_on_comm");
#endif
    /* The compute loop's own time (this process's loop: a replacement's from its arrival),
     * printed by rank 0 as examples/jacobi.rs prints it; benches/hybrid.rs reads it. */
    double loop_start = MPI_Wtime();
    while (iter < iters) {
        if (stop_requested(cart, stop_file, iter))
            break;
        halo_exchange(cart, rows, n, local, up, down);
        sweep(rows, up, down, n, local, h2, next);
        memcpy(rows, next, sizeof(double) * (size_t)(local * n));
        iter++;
        if (rankmig_checkpoint() < 0) /* rankmig: may save, move this rank, or give */
            return fail("rankmig_checkpoint"); /* a new communicator (make_cart ran) */
    }
    double loop_seconds = MPI_Wtime() - loop_start;
    comm = rankmig_comm();
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) {
        fprintf(stderr, "jacobi-c: %" PRIu64 " iterations done in %.3f s\n", iter, loop_seconds);
        printf("iterations: %" PRIu64 "\n", iter);
        fprintf(stderr, "jacobi-c: communicator generation %lu\n", rankmig_generation());
    }
    print_checksum(comm, rows, n, local);
    MPI_Comm_free(&cart);
    if (rankmig_finalize() != 0) /* rankmig */
        return fail("rankmig_finalize");
    free(rows);
    free(next);
    free(up);
    free(down);
    MPI_Finalize();
    return 0;
}
