//! Binding a rank to its planned core with hwloc.

use mpi::traits::Communicator;

use crate::monitor;

use super::Job;

impl Job {
    /// Binds this process to the real core of its logical location (best effort: a
    /// failure is reported and the rank runs unbound).
    ///
    /// Not when the job has more ranks than this machine has CPUs: pinned ranks that
    /// busy-wait starve one another and Open MPI's runtime (a spawn then hung in 4 of 6
    /// runs here, 0 of 6 unpinned), so oversubscribed ranks are left to the scheduler,
    /// as Open MPI itself does. `RANKMIG_BIND=off` also disables binding.
    pub(super) fn bind(&self) {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        if std::env::var("RANKMIG_BIND").is_ok_and(|v| v == "off")
            || self.comm.size() as usize > cpus
        {
            return;
        }
        let Some(view) = &self.view else { return };
        let node_index = view
            .nodes()
            .iter()
            .position(|n| n.name == self.location.node)
            .unwrap_or(0);
        let cores = self.settings.cores_per_node.max(1);
        if let Err(e) = monitor::location::bind_logical_core(node_index, self.location.core, cores)
        {
            eprintln!("rankmig: rank {}: {e}", self.comm.rank());
        }
    }
}
