/* Rank 0's helper thread spawns SPAWN_N children on MPI_COMM_SELF while every rank's
 * main thread times MPI_Allreduce on COMM: MPI_COMM_WORLD, or (HOLD_DUP=k) the k-th
 * duplicate of it. Prints the longest allreduce before and during/after the spawn. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char *self_path;
static volatile int spawn_done = 0;
static double spawn_ms = 0;

static void *helper(void *arg) {
  (void)arg;
  MPI_Comm inter;
  int n = getenv("SPAWN_N") ? atoi(getenv("SPAWN_N")) : 4;
  double t = MPI_Wtime();
  MPI_Comm_spawn(self_path, MPI_ARGV_NULL, n, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter,
                 MPI_ERRCODES_IGNORE);
  spawn_ms = (MPI_Wtime() - t) * 1e3;
  MPI_Comm_disconnect(&inter);
  spawn_done = 1;
  return NULL;
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm parent;
  MPI_Comm_get_parent(&parent);
  if (parent != MPI_COMM_NULL) {
    MPI_Comm_disconnect(&parent);
    MPI_Finalize();
    return 0;
  }
  self_path = argv[0];
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm comm = MPI_COMM_WORLD;
  int dups = getenv("HOLD_DUP") ? atoi(getenv("HOLD_DUP")) : 0;
  for (int i = 0; i < dups; i++) {
    MPI_Comm d;
    MPI_Comm_dup(comm, &d);
    comm = d;
  }
  pthread_t th;
  int started = 0;
  double max_before = 0, max_during = 0, t_start = MPI_Wtime();
  long after_done = 0;
  for (long it = 0;; it++) {
    double flag = 0;
    if (rank == 0 && spawn_done && ++after_done > 2000) flag = 1;
    double t = MPI_Wtime(), out;
    MPI_Allreduce(&flag, &out, 1, MPI_DOUBLE, MPI_MAX, comm);
    double dt = (MPI_Wtime() - t) * 1e3;
    if (started) { if (dt > max_during) max_during = dt; }
    else if (dt > max_before) max_before = dt;
    if (out > 0) break;
    if (!started && MPI_Wtime() - t_start > 0.5) {
      started = 1;
      if (rank == 0) pthread_create(&th, NULL, helper, NULL);
    }
  }
  if (rank == 0) pthread_join(th, NULL);
  double mb, md;
  MPI_Reduce(&max_before, &mb, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Reduce(&max_during, &md, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("provided=%d dups=%d longest allreduce before %.1f ms, during/after %.1f ms; spawn %.0f ms\n",
           provided, dups, mb, md, spawn_ms);
  MPI_Finalize();
  return 0;
}
