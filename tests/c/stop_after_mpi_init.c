/* Preloaded into the replacement processes of a migration by tests/it/migrate_mpi.rs
 * (a rank killed during the state transfer): once MPI_Init returns, the spawn is
 * complete on both sides, and the process stops itself with SIGSTOP before it
 * receives its state. The original ranks are then all in the state transfer, and
 * the test kills one of them there. */
#include <mpi.h>
#include <signal.h>

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    raise(SIGSTOP);
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    raise(SIGSTOP);
    return rc;
}
