/* The floor of a migration's spawn (scripts/spawn_phases.sh): the parents (the job the
   launcher started) spawn "HOST:N" groups with MPI_Comm_spawn_multiple as rankmig does
   with the MPI under test, merge and meet at a barrier; rank 0 prints the spawn and
   spawn+merge times, and after a second barrier every process exits without MPI_Finalize. FLOOR_SPAWN says how the hosts are named, as src/launcher does:
   "host" (Open MPI 4.1: one command per group, info host=HOST), "host-add" (Open MPI 5:
   host=HOST:N and PMIX_ADD_HOST=HOST:N), "hostfile" (MPICH: one command, info hostfile
   naming a file of HOST:N lines, FLOOR_HOSTFILE). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>
int main(int c, char **v) {
  /* Teardown across emulated hosts sometimes ends in a broken TCP pipe: not measured. */
  signal(SIGPIPE, SIG_IGN);
  MPI_Init(&c, &v);
  MPI_Comm parent; MPI_Comm_get_parent(&parent);
  if (parent != MPI_COMM_NULL) {
    MPI_Comm m; MPI_Intercomm_merge(parent, 1, &m); MPI_Barrier(m);
    /* Leave only after rank 0 has printed: the launcher ends the job at the first exit. */
    MPI_Barrier(m); _exit(0);
  }
  int r; MPI_Comm_rank(MPI_COMM_WORLD, &r);
  const char *mode = getenv("FLOOR_SPAWN") ? getenv("FLOOR_SPAWN") : "host";
  int g = c - 1, total = 0; char *cmds[16]; int np[16]; MPI_Info info[16]; char hosts[16][64];
  char value[80];
  for (int i = 0; i < g; i++) {
    char *colon = strchr(v[i + 1], ':'); *colon = 0; strcpy(hosts[i], v[i + 1]);
    np[i] = atoi(colon + 1); cmds[i] = v[0]; total += np[i];
    MPI_Info_create(&info[i]);
    if (strcmp(mode, "host-add") == 0) {
      snprintf(value, sizeof value, "%s:%d", hosts[i], np[i]);
      MPI_Info_set(info[i], "host", value);
      MPI_Info_set(info[i], "PMIX_ADD_HOST", value);
    } else {
      MPI_Info_set(info[i], "host", hosts[i]);
    }
  }
  if (strcmp(mode, "hostfile") == 0) {
    const char *path = getenv("FLOOR_HOSTFILE");
    if (r == 0) {
      FILE *f = fopen(path, "w");
      for (int i = 0; i < g; i++) fprintf(f, "%s:%d\n", hosts[i], np[i]);
      fclose(f);
    }
    MPI_Info_free(&info[0]);
    MPI_Info_create(&info[0]); MPI_Info_set(info[0], "hostfile", path);
    g = 1; np[0] = total;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  MPI_Comm inter; MPI_Comm_spawn_multiple(g, cmds, MPI_ARGVS_NULL, np, info, 0, MPI_COMM_WORLD, &inter, MPI_ERRCODES_IGNORE);
  double t1 = MPI_Wtime();
  MPI_Comm m; MPI_Intercomm_merge(inter, 0, &m); MPI_Barrier(m);
  double t2 = MPI_Wtime();
  if (r == 0) printf("spawn %.3f s, spawn+merge %.3f s\n", t1 - t0, t2 - t0);
  fflush(stdout);
  MPI_Barrier(m);
  /* Measured: leave without MPI_Finalize (its teardown across emulated hosts could
     hang); the launcher then ends the job. */
  _exit(0);
}
