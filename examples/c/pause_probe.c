/* What a migration costs the application, measured by the application's own clock.
 *
 * Every rank holds STATE_MB megabytes of state (doubles), and each iteration: updates
 * a window of it, passes a block around a ring (MPI_Sendrecv), sums a value over all
 * ranks (MPI_Allreduce), then calls rankmig_checkpoint(). Each process times its
 * iterations with MPI_Wtime and, at the end, writes them to TIMES_DIR/times-PID.txt
 * ("rank iteration seconds" lines; a rank that leaves by migration writes none, its
 * replacement writes from its arrival on), and TIMES_DIR/clock-PID.txt ("rank start end
 * seconds": the wall clock, CLOCK_REALTIME, when its loop started and ended, and the
 * loop's MPI_Wtime seconds, so that the iterations can be placed on the wall clock of
 * file times; scripts/save_pause.sh uses it). Rank 0 prints "iterations: K" and
 * "checksum: X", a hash of every rank's state (bitwise XOR of hashes, exact), equal to
 * a plain run's with as many iterations.
 *
 * MPI is initialised with MPI_THREAD_MULTIPLE so that rankmig can spawn replacement
 * processes in the background.
 *
 * Build (from the repository root, against a prefix DIR installed by
 * scripts/install.sh --prefix DIR):
 *   mpicc -O2 examples/c/pause_probe.c -o target/pause-probe \
 *         $(PKG_CONFIG_PATH=DIR/lib/pkgconfig pkg-config --cflags --libs rankmig)
 * Run:  rankmig run -n 8 -a av -- target/pause-probe --mb 8 --iters 20000 --times DIR
 * Options: --mb N (state per rank, MB), --iters K, --times DIR, --stop-file PATH
 * (ends the loop at the first iteration, a multiple of 256, that finds it; the
 * iteration it ended at is printed, so a plain run can do as many).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <unistd.h>

#include <mpi.h>

#include "rankmig.h"

#define RING_DOUBLES 1024
#define WINDOW_DOUBLES 4096
#define STOP_CHECK 256
#define MAX_TIMES (1u << 22)

struct options {
    long mb;
    uint64_t iters;
    const char *times_dir;
    const char *stop_file;
};

static int parse(int argc, char **argv, struct options *o) {
    o->mb = 8;
    o->iters = 1000;
    o->times_dir = NULL;
    o->stop_file = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--mb") == 0) {
            o->mb = atol(argv[i + 1]);
        } else if (strcmp(argv[i], "--iters") == 0) {
            o->iters = strtoull(argv[i + 1], NULL, 10);
        } else if (strcmp(argv[i], "--times") == 0) {
            o->times_dir = argv[i + 1];
        } else if (strcmp(argv[i], "--stop-file") == 0) {
            o->stop_file = argv[i + 1];
        } else {
            fprintf(stderr, "pause-probe: unknown option %s\n", argv[i]);
            return -1;
        }
    }
    return o->mb > 0 ? 0 : -1;
}

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h;
}

static uint64_t state_hash(const double *s, size_t n) {
    uint64_t h = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t bits;
        memcpy(&bits, &s[i], sizeof bits);
        h = mix(h, bits);
    }
    return h;
}

int main(int argc, char **argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    struct options o;
    if (parse(argc, argv, &o) != 0) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm comm;
    if (rankmig_init(&comm) != 0) {
        fprintf(stderr, "pause-probe: %s\n", rankmig_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    size_t n = (size_t)o.mb * 1024 * 1024 / sizeof(double);
    double *state = malloc(n * sizeof(double));
    if (state == NULL) {
        MPI_Abort(comm, 1);
    }
    /* A process that resumes (it replaces a rank that moved, or restarts) gets its state
       from rankmig_register below: the initial values are not computed again. */
    if (!rankmig_resumed()) {
        for (size_t i = 0; i < n; i++) {
            state[i] = (double)((rank * 7919 + i) % 1000) * 1e-3;
        }
    }
    uint64_t iter = 0;
    double total = 0.0;
    rankmig_register("iter", &iter, sizeof iter);
    rankmig_register("total", &total, sizeof total);
    rankmig_register("state", state, n * sizeof(double));

    /* Times of the first MAX_TIMES iterations of this process are kept. */
    uint64_t capacity = o.iters < MAX_TIMES ? o.iters : MAX_TIMES;
    double *times = malloc((capacity + 1) * sizeof(double));
    if (times == NULL) {
        MPI_Abort(comm, 1);
    }
    uint64_t first = iter, count = 0;
    double ring_out[RING_DOUBLES], ring_in[RING_DOUBLES];
    int stop = 0;
    const char *timeline_env = getenv("RANKMIG_TIMELINE");
    int timeline = timeline_env != NULL && strcmp(timeline_env, "0") != 0;
    int start_rank = rank;
    struct timespec wall_start, wall_end;
    clock_gettime(CLOCK_REALTIME, &wall_start);
    double loop_start = MPI_Wtime();
    while (iter < o.iters && !stop) {
        double t0 = MPI_Wtime();
        comm = rankmig_comm();
        MPI_Comm_rank(comm, &rank);
        size_t window = (size_t)(iter * WINDOW_DOUBLES) % (n - WINDOW_DOUBLES + 1);
        double local = 0.0;
        for (size_t i = window; i < window + WINDOW_DOUBLES; i++) {
            state[i] = state[i] * 0.999 + 1e-3;
            local += state[i];
        }
        memcpy(ring_out, state + window, sizeof ring_out);
        MPI_Sendrecv(ring_out, RING_DOUBLES, MPI_DOUBLE, (rank + 1) % size, 7, ring_in,
                     RING_DOUBLES, MPI_DOUBLE, (rank + size - 1) % size, 7, comm,
                     MPI_STATUS_IGNORE);
        state[window] += ring_in[0] * 1e-6;
        double sum = 0.0;
        MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, comm);
        total += sum * 1e-9;
        iter++;
        if (o.stop_file != NULL && iter % STOP_CHECK == 0) {
            int here = rank == 0 && access(o.stop_file, F_OK) == 0;
            MPI_Allreduce(&here, &stop, 1, MPI_INT, MPI_MAX, comm);
        }
        if (rankmig_checkpoint() < 0) {
            fprintf(stderr, "pause-probe: rank %d: %s\n", rank, rankmig_last_error());
        }
        if (timeline && MPI_Wtime() - t0 > 0.015) {
            /* Long iterations on rankmig's timeline (RANKMIG_TIMELINE=1). */
            struct timespec now;
            clock_gettime(CLOCK_REALTIME, &now);
            fprintf(stderr, "TIMELINE %ld.%06ld %d iteration %" PRIu64 " took %.1f ms (rank %d)\n",
                    (long)now.tv_sec, now.tv_nsec / 1000, (int)getpid(), iter,
                    (MPI_Wtime() - t0) * 1e3, rank);
        }
        if (count < capacity) {
            times[count++] = MPI_Wtime() - t0;
        }
    }
    double loop_seconds = MPI_Wtime() - loop_start;
    clock_gettime(CLOCK_REALTIME, &wall_end);
    comm = rankmig_comm();
    MPI_Comm_rank(comm, &rank);
    uint64_t h = state_hash(state, n), all = 0;
    MPI_Reduce(&h, &all, 1, MPI_UINT64_T, MPI_BXOR, 0, comm);
    if (rank == 0) {
        uint64_t tbits;
        memcpy(&tbits, &total, sizeof tbits);
        fprintf(stderr, "pause-probe: %d ranks, %ld MB each\n", size, o.mb);
        printf("iterations: %" PRIu64 "\nchecksum: %016" PRIx64 "\n", iter, mix(all, tbits));
    }
    if (o.times_dir != NULL) {
        char path[4096];
        snprintf(path, sizeof path, "%s/times-%d.txt", o.times_dir, (int)getpid());
        FILE *f = fopen(path, "w");
        if (f != NULL) {
            for (uint64_t i = 0; i < count; i++) {
                fprintf(f, "%d %" PRIu64 " %.9f\n", rank, first + i + 1, times[i]);
            }
            fclose(f);
        }
        snprintf(path, sizeof path, "%s/clock-%d.txt", o.times_dir, (int)getpid());
        f = fopen(path, "w");
        if (f != NULL) {
            fprintf(f, "%d %ld.%09ld %ld.%09ld %.9f\n", start_rank, (long)wall_start.tv_sec,
                    wall_start.tv_nsec, (long)wall_end.tv_sec, wall_end.tv_nsec, loop_seconds);
            fclose(f);
        }
    }
    free(times);
    rankmig_finalize();
    free(state);
    MPI_Finalize();
    return 0;
}
