/* Preloaded into the replacement processes of a migration by the fault tests
 * (tests/it/migrate_mpi.rs, tests/it/cluster_mpi.rs): once the process is joined to
 * the job's side, it stops itself with SIGSTOP before it receives its state. A
 * spawned process is joined when MPI_Init returns (the spawn is then complete on
 * both sides); a process that `rankmig run` launched for a migration (RANKMIG_JOIN
 * set, MPICH) when MPI_Comm_connect returns (old rank 0 has accepted it). The test
 * then kills a process of the job at that point. */
#include <mpi.h>
#include <signal.h>
#include <stdlib.h>

static void stop_if_spawned(void)
{
    const char *join = getenv("RANKMIG_JOIN");
    if (join == NULL || *join == '\0')
        raise(SIGSTOP);
}

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    stop_if_spawned();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    stop_if_spawned();
    return rc;
}

int MPI_Comm_connect(const char *port_name, MPI_Info info, int root, MPI_Comm comm,
                     MPI_Comm *newcomm)
{
    int rc = PMPI_Comm_connect(port_name, info, root, comm, newcomm);
    raise(SIGSTOP);
    return rc;
}
