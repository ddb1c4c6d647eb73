/* MPICH: does joining processes of another launch by connect/accept hold the
 * application's MPI calls? (scripts/hold_compare.sh runs it beside scripts/spawn_hold.c.) Parent job (argv[1] = "parent", argv[2] = directory): rank 0's
 * helper thread opens a port (port_name_size 4096), writes it to DIR/port, waits (no MPI)
 * for DIR/ready, then accepts on MPI_COMM_SELF; every rank times MPI_Allreduce.
 * Children (argv[1] = "child"): a separate mpiexec; rank 0 writes DIR/ready when all
 * have initialised, then all connect. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *dir;
static volatile int done = 0;
static double accept_ms = 0, wait_ms = 0;

static void path(char *out, const char *name) { snprintf(out, 512, "%s/%s", dir, name); }

static void *helper(void *arg) {
  (void)arg;
  static char port[4096];
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "port_name_size", "4096");
  if (MPI_Open_port(info, port) != MPI_SUCCESS) { fprintf(stderr, "open_port failed\n"); exit(1); }
  char p[512], tmp[512];
  path(tmp, "port.tmp"); path(p, "port");
  FILE *f = fopen(tmp, "w"); fputs(port, f); fclose(f); rename(tmp, p);
  char ready[512]; path(ready, "ready");
  double t = MPI_Wtime();
  while (access(ready, F_OK) != 0) usleep(2000);
  wait_ms = (MPI_Wtime() - t) * 1e3;
  MPI_Comm inter;
  t = MPI_Wtime();
  MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter);
  accept_ms = (MPI_Wtime() - t) * 1e3;
  MPI_Comm_disconnect(&inter);
  done = 1;
  return NULL;
}

int main(int argc, char **argv) {
  int provided, rank;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  dir = argv[2];
  if (strcmp(argv[1], "child") == 0) {
    char p[512], port[4096] = {0};
    path(p, "port");
    FILE *f = fopen(p, "r"); size_t n = fread(port, 1, sizeof port - 1, f); port[n] = 0; fclose(f);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) { char r[512]; path(r, "ready"); fclose(fopen(r, "w")); }
    MPI_Comm inter;
    MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter);
    MPI_Comm_disconnect(&inter);
    MPI_Finalize();
    return 0;
  }
  pthread_t th;
  if (rank == 0) pthread_create(&th, NULL, helper, NULL);
  double max_after = 0;
  long after_done = 0;
  for (;;) {
    double flag = (rank == 0 && done && ++after_done > 2000) ? 1 : 0;
    double t = MPI_Wtime(), out;
    MPI_Allreduce(&flag, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    double dt = (MPI_Wtime() - t) * 1e3;
    if (dt > max_after) max_after = dt;
    if (out > 0) break;
  }
  if (rank == 0) pthread_join(th, NULL);
  double m;
  MPI_Reduce(&max_after, &m, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("longest allreduce %.1f ms; waited %.0f ms for the children, accept %.1f ms\n", m, wait_ms, accept_ms);
  MPI_Finalize();
  return 0;
}
