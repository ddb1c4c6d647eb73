/* Output files written through rankmig (rankmig_open_output): each rank writes one
 * line per iteration to out-RANK.txt, and rank 0 one more to all.txt, so that after a
 * migration or a restart each file must hold each iteration's line once, in order
 * (tests/it/c_programs/output_files.rs). The iteration counter is the registered
 * state; an MPI_Allreduce per iteration keeps the ranks together and carries the stop.
 * Arguments: --iters K [--stop-file PATH] [--pause-us U] [--line-bytes B] (each line
 * padded with '.' to B bytes, so that the buffer reaches the file between checkpoints).
 * Rank 0 prints "output-lines: N iterations" at the end. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rankmig.h"

static void fail(const char *what) {
    fprintf(stderr, "output-lines: %s: %s\n", what, rankmig_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Writes "iteration I[ sum S]" padded to `bytes` bytes and a newline to `handle`. */
static void write_line(int handle, int64_t iter, const int64_t *sum, size_t bytes) {
    char line[8192];
    int n = sum ? snprintf(line, sizeof line, "iteration %lld sum %lld", (long long)iter,
                           (long long)*sum)
                : snprintf(line, sizeof line, "iteration %lld", (long long)iter);
    size_t len = (size_t)n;
    while (len + 1 < bytes && len + 1 < sizeof line) line[len++] = '.';
    line[len++] = '\n';
    if (rankmig_write_output(handle, line, len) != 0) fail("rankmig_write_output");
}

int main(int argc, char **argv) {
    int64_t iters = 1000;
    long pause_us = 0;
    size_t line_bytes = 0;
    const char *stop_file = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--iters")) iters = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--pause-us")) pause_us = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--line-bytes")) line_bytes = (size_t)atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--stop-file")) stop_file = argv[i + 1];
    }
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm comm;
    if (rankmig_init(&comm) != 0) fail("rankmig_init");
    int64_t iter = 0;
    if (rankmig_register("iter", &iter, sizeof iter) != 0) fail("rankmig_register");
    int rank;
    MPI_Comm_rank(comm, &rank);
    char path[64];
    snprintf(path, sizeof path, "out-%d.txt", rank);
    int mine, all = -1;
    if (rankmig_open_output(path, &mine) != 0) fail("rankmig_open_output");
    if (rank == 0 && rankmig_open_output("all.txt", &all) != 0) fail("rankmig_open_output");
    while (iter < iters) {
        comm = rankmig_comm();
        int64_t local[2] = {iter, stop_file && rank == 0 && access(stop_file, F_OK) == 0};
        int64_t agreed[2];
        MPI_Allreduce(local, agreed, 2, MPI_INT64_T, MPI_MAX, comm);
        if (agreed[1]) break;
        iter++;
        write_line(mine, iter, NULL, line_bytes);
        if (rank == 0) write_line(all, iter, &agreed[0], line_bytes);
        if (pause_us > 0) usleep((useconds_t)pause_us);
        if (rankmig_checkpoint() < 0) fail("rankmig_checkpoint");
    }
    if (rankmig_close_output(mine) != 0) fail("rankmig_close_output");
    if (rank == 0) {
        if (rankmig_close_output(all) != 0) fail("rankmig_close_output");
        printf("output-lines: %lld iterations\n", (long long)iter);
        fflush(stdout);
    }
    if (rankmig_finalize() != 0) fail("rankmig_finalize");
    MPI_Finalize();
    return 0;
}
