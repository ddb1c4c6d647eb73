//! Where a rank runs: its logical node and core, and binding it to a real core.
//!
//! The launcher tells a rank its location through the environment, in this order of
//! precedence:
//!
//! 1. `RANKMIG_NODE` (node name) and `RANKMIG_CORE` (core inside the node, default 0);
//! 2. `RANKMIG_PLACEMENT=FILE`: a placement file (`RANK NODE CORE`), the rank's own line;
//! 3. otherwise the host name, and the node-local rank (the variable of the launcher:
//!    `OMPI_COMM_WORLD_LOCAL_RANK`, `MPI_LOCALRANKID`; see
//!    [`crate::launcher::local_rank_from`]) or the rank as the core.
//!
//! On one machine several logical nodes stand for the same host: logical core `core` of
//! the node numbered `node_index` (`RANKMIG_NODE_INDEX`, each node having
//! `cores_per_node` = `RANKMIG_CORES_PER_NODE` logical cores) is real core
//! `(node_index × cores_per_node + core) mod real cores`, so logical cores are spread
//! over the real ones when there are more logical than real cores.

use std::path::PathBuf;
use std::sync::OnceLock;

use hwlocality::Topology;
use hwlocality::cpu::binding::CpuBindingFlags;
use hwlocality::object::types::ObjectType;

use crate::planner::{Location, Placement};

use super::error::MonitorError;

/// Node name of this rank.
pub const ENV_NODE: &str = "RANKMIG_NODE";
/// Core of this rank inside its logical node.
pub const ENV_CORE: &str = "RANKMIG_CORE";
/// Index of this rank's logical node among the job's nodes (for binding).
pub const ENV_NODE_INDEX: &str = "RANKMIG_NODE_INDEX";
/// Logical cores per logical node (for binding).
pub const ENV_CORES_PER_NODE: &str = "RANKMIG_CORES_PER_NODE";
/// Placement file; a rank reads its own line.
pub const ENV_PLACEMENT: &str = "RANKMIG_PLACEMENT";

/// This rank's location, from the environment (see the module documentation). `rank`
/// is the rank in the job's communicator.
///
/// ```no_run
/// let here = rankmig::monitor::own_location(0)?;
/// println!("{} core {}", here.node, here.core);
/// # Ok::<(), rankmig::monitor::MonitorError>(())
/// ```
pub fn own_location(rank: usize) -> Result<Location, MonitorError> {
    own_location_from(rank, |k| std::env::var(k).ok())
}

/// [`own_location`] with a custom variable lookup.
///
/// ```
/// use rankmig::monitor::location::own_location_from;
/// let env = |k: &str| match k {
///     "RANKMIG_NODE" => Some("a".to_owned()),
///     "RANKMIG_CORE" => Some("3".to_owned()),
///     _ => None,
/// };
/// let here = own_location_from(5, env).unwrap();
/// assert_eq!((here.node.as_str(), here.core), ("a", 3));
/// assert!(own_location_from(0, |k| (k == "RANKMIG_CORE").then(|| "x".into())).is_err());
/// ```
pub fn own_location_from(
    rank: usize,
    get: impl Fn(&str) -> Option<String>,
) -> Result<Location, MonitorError> {
    let get = |k: &str| get(k).filter(|v| !v.trim().is_empty());
    if let Some(node) = get(ENV_NODE) {
        let core = number(ENV_CORE, get(ENV_CORE))?.unwrap_or(0);
        return Ok(Location {
            node: node.trim().to_owned(),
            core,
        });
    }
    if let Some(path) = get(ENV_PLACEMENT).map(PathBuf::from) {
        let placement = Placement::load(&path)?;
        if rank >= placement.len() {
            return Err(MonitorError::NotPlaced {
                path,
                rank,
                ranks: placement.len(),
            });
        }
        return Ok(placement.location(rank).clone());
    }
    let core = number(ENV_CORE, get(ENV_CORE))?
        .or_else(|| crate::launcher::local_rank_from(get))
        .unwrap_or(rank);
    Ok(Location {
        node: hostname(),
        core,
    })
}

fn number(name: &'static str, value: Option<String>) -> Result<Option<usize>, MonitorError> {
    value
        .map(|v| {
            v.trim().parse().map_err(|_| MonitorError::Env {
                name,
                value: v,
                reason: "expected a non-negative integer",
            })
        })
        .transpose()
}

/// This machine's host name.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

/// A logical core: core `core` of the logical node numbered `node_index`, each logical
/// node having `cores_per_node` cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogicalCore {
    /// Index of the logical node.
    pub node_index: usize,
    /// Core inside the logical node.
    pub core: usize,
    /// Cores of each logical node (at least 1).
    pub cores_per_node: usize,
}

impl LogicalCore {
    /// The logical core of `location`, with the node index and cores per node from the
    /// environment (`RANKMIG_NODE_INDEX`, default 0; `RANKMIG_CORES_PER_NODE`, default 1).
    ///
    /// ```
    /// use rankmig::monitor::location::LogicalCore;
    /// use rankmig::planner::Location;
    /// let at = Location { node: "b".into(), core: 1 };
    /// let env = |k: &str| match k {
    ///     "RANKMIG_NODE_INDEX" => Some("2".to_owned()),
    ///     "RANKMIG_CORES_PER_NODE" => Some("4".to_owned()),
    ///     _ => None,
    /// };
    /// let l = LogicalCore::of_location(&at, env).unwrap();
    /// assert_eq!((l.node_index, l.core, l.cores_per_node), (2, 1, 4));
    /// ```
    pub fn of_location(
        location: &Location,
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, MonitorError> {
        let get = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        Ok(Self {
            node_index: number(ENV_NODE_INDEX, get(ENV_NODE_INDEX))?.unwrap_or(0),
            core: location.core,
            cores_per_node: number(ENV_CORES_PER_NODE, get(ENV_CORES_PER_NODE))?
                .unwrap_or(1)
                .max(1),
        })
    }

    /// The real core (index among `real_cores`) this logical core maps to.
    ///
    /// ```
    /// use rankmig::monitor::location::LogicalCore;
    /// let l = LogicalCore { node_index: 1, core: 3, cores_per_node: 8 };
    /// assert_eq!(l.real_core(2), 1); // (1×8 + 3) mod 2
    /// assert_eq!(l.real_core(16), 11);
    /// ```
    pub fn real_core(&self, real_cores: usize) -> usize {
        real_core(self.node_index, self.core, self.cores_per_node, real_cores)
    }
}

/// The real core (hwloc logical index) a logical core maps to, given the real cores.
///
/// ```
/// use rankmig::monitor::location::real_core;
/// assert_eq!(real_core(1, 3, 8, 2), 1); // (1×8 + 3) mod 2
/// assert_eq!(real_core(0, 5, 8, 16), 5);
/// ```
pub fn real_core(
    node_index: usize,
    core: usize,
    cores_per_node: usize,
    real_cores: usize,
) -> usize {
    (node_index * cores_per_node + core) % real_cores.max(1)
}

/// Binds this process to the real core of `logical` (hwloc cores, or processing units
/// when the machine reports no cores). Returns the real core's index. A failure is an
/// error value; the caller may go on unbound.
///
/// ```no_run
/// use rankmig::monitor::location::{LogicalCore, bind_to};
/// let l = LogicalCore { node_index: 0, core: 1, cores_per_node: 2 };
/// if let Err(e) = bind_to(l) {
///     eprintln!("running unbound: {e}");
/// }
/// ```
pub fn bind_to(logical: LogicalCore) -> Result<usize, MonitorError> {
    let error = |core: usize, why: String| MonitorError::Bind { core, why };
    let topology = machine_topology().map_err(|why| error(0, why))?;
    let mut targets: Vec<_> = topology.objects_with_type(ObjectType::Core).collect();
    if targets.is_empty() {
        targets = topology.objects_with_type(ObjectType::PU).collect();
    }
    let real = logical.real_core(targets.len());
    let target = targets
        .get(real)
        .ok_or_else(|| error(real, "no such core".into()))?;
    let cpuset = target
        .cpuset()
        .ok_or_else(|| error(real, "the core has no cpuset".into()))?;
    topology
        .bind_cpu(cpuset, CpuBindingFlags::PROCESS)
        .map_err(|e| error(real, e.to_string()))?;
    Ok(real)
}

/// Binds every thread of this process to the CPUs (OS numbers) `cpus`, unless the
/// process already runs on exactly those (then nothing changes: threads that a
/// threaded runtime placed inside the set stay where they are). Returns whether it
/// bound.
///
/// ```no_run
/// use rankmig::monitor::location::bind_to_cpus;
/// if let Err(e) = bind_to_cpus(&[0, 1]) {
///     eprintln!("running unbound: {e}");
/// }
/// ```
pub fn bind_to_cpus(cpus: &[u32]) -> Result<bool, MonitorError> {
    let list = crate::topology::format_index_list(cpus);
    let error = |why: String| MonitorError::BindCpus {
        cpus: list.clone(),
        why,
    };
    if cpus.is_empty() {
        return Err(error("no CPU".into()));
    }
    if allowed_cpus().is_some_and(|now| now.trim() == list) {
        return Ok(false);
    }
    let topology = machine_topology().map_err(error)?;
    let mut set = hwlocality::cpu::cpuset::CpuSet::new();
    for &cpu in cpus {
        set.set(cpu as usize);
    }
    topology
        .bind_cpu(&set, CpuBindingFlags::PROCESS)
        .map_err(|e| error(e.to_string()))?;
    Ok(true)
}

/// This machine's hardware tree, discovered once per process: a discovery takes
/// milliseconds, and a rank binds again after each migration.
fn machine_topology() -> Result<&'static Topology, String> {
    static TOPOLOGY: OnceLock<Result<Topology, String>> = OnceLock::new();
    TOPOLOGY
        .get_or_init(|| Topology::new().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(Clone::clone)
}

/// Binds this process to the real core of a logical core (see [`bind_to`]).
pub fn bind_logical_core(
    node_index: usize,
    core: usize,
    cores_per_node: usize,
) -> Result<usize, MonitorError> {
    bind_to(LogicalCore {
        node_index,
        core,
        cores_per_node,
    })
}

/// The CPUs this process may run on, as Linux lists them (`Cpus_allowed_list`).
pub fn allowed_cpus() -> Option<String> {
    cpus_allowed_in("/proc/self/status")
}

/// The CPUs process `pid` may run on, read from outside it (`Cpus_allowed_list` of
/// `/proc/PID/status`); `None` when there is no such process.
///
/// ```
/// use rankmig::monitor::location::{allowed_cpus, allowed_cpus_of};
/// assert_eq!(allowed_cpus_of(std::process::id()), allowed_cpus());
/// ```
pub fn allowed_cpus_of(pid: u32) -> Option<String> {
    cpus_allowed_in(&format!("/proc/{pid}/status"))
}

/// The `Cpus_allowed_list` line of the status file at `path`.
fn cpus_allowed_in(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .map(|v| v.trim().to_owned())
    })
}
