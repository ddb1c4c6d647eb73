//! Binding a rank to a real core of its logical node.
//!
//! On one machine several logical nodes stand for the same host: logical core `core` of
//! the node numbered `node_index` (each node having `cores_per_node` logical cores) is
//! real core `(node_index × cores_per_node + core) mod real cores`, so logical cores are
//! spread over the real ones when there are more logical than real cores.

use hwlocality::Topology;
use hwlocality::cpu::binding::CpuBindingFlags;
use hwlocality::object::types::ObjectType;

/// Why binding failed (callers may go on unbound).
#[derive(Debug, thiserror::Error)]
#[error("cannot bind to real core {core}: {why}")]
pub struct BindError {
    /// The real core (logical index in hwloc).
    pub core: usize,
    /// Why.
    pub why: String,
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

/// Binds this process to the real core of a logical core.
pub fn bind_logical_core(
    node_index: usize,
    core: usize,
    cores_per_node: usize,
) -> Result<usize, BindError> {
    let error = |core: usize, why: String| BindError { core, why };
    let topology = Topology::new().map_err(|e| error(0, e.to_string()))?;
    let cores: Vec<_> = topology.objects_with_type(ObjectType::Core).collect();
    let real = real_core(node_index, core, cores_per_node, cores.len());
    let target = cores
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

/// The CPUs this process may run on, as Linux lists them (`Cpus_allowed_list`).
pub fn allowed_cpus() -> Option<String> {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .map(|v| v.trim().to_owned())
        })
}
