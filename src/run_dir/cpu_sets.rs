//! The CPUs each process of a launch or a spawn runs on, for ranks of several cores, and
//! the file that carries them to `rankmig bind-exec`.
//!
//! A threaded rank must be on its cores before its program starts: OpenMP runtimes
//! (libgomp, LLVM's, Intel's) count the CPUs they may use when they are loaded and size
//! their thread pools and spin-waits from that count. So with ranks of several cores
//! (`rankmig run --cores-per-rank C`, C > 1) the launcher does not start the program
//! itself but `rankmig bind-exec --cpus-file FILE -- PROGRAM ARGS`: it reads its own
//! line of FILE (by its rank in the launch, [`launch_index`]), binds itself to those
//! CPUs and executes the program in its place (same process). The planner's side
//! (`rankmig run` for a launch, rank 0 for a spawn) writes FILE: one `INDEX CPUS` line
//! per process, CPUS a list such as `0-1,4` or `-` (left unbound).
//!
//! ```
//! use rankmig::run_dir::cpu_sets::{CpuSets, parse_line_of};
//! let sets = CpuSets::new(vec![Some(vec![0, 1]), None]);
//! assert_eq!(sets.to_text(), "0 0-1\n1 -\n");
//! assert_eq!(parse_line_of(&sets.to_text(), "f", 0).unwrap(), Some(vec![0, 1]));
//! assert_eq!(parse_line_of(&sets.to_text(), "f", 1).unwrap(), None);
//! ```

use std::path::{Path, PathBuf};

use crate::availability::Availability;
use crate::planner::Placement;
use crate::topology::{CoreSpread, Tree, format_index_list, parse_index_list, slot_cpus};

/// A process's rank in its launch (or spawn), from the first of
/// [`crate::launcher::RANK_IN_LAUNCH_VARIABLES`] set (each launcher's own variable).
///
/// ```
/// use rankmig::run_dir::cpu_sets::launch_index;
/// let env = |k: &str| (k == "PMI_RANK").then(|| "3".to_owned());
/// assert_eq!(launch_index(&env), Some(3));
/// ```
pub fn launch_index(get: &dyn Fn(&str) -> Option<String>) -> Option<usize> {
    crate::launcher::RANK_IN_LAUNCH_VARIABLES
        .iter()
        .find_map(|v| get(v))
        .and_then(|v| v.trim().parse().ok())
}

/// Why a CPU-sets file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CpuSetsError {
    /// The file cannot be read.
    #[error("{path}: cannot read the CPU sets: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A line is not `INDEX CPUS`.
    #[error("{path}:{line}: {problem}: {text:?}")]
    Invalid {
        /// The file.
        path: String,
        /// The line (1-based).
        line: usize,
        /// The line's text.
        text: String,
        /// What is wrong.
        problem: &'static str,
    },
    /// No line for this process.
    #[error("{path}: no line for process {index}")]
    Missing {
        /// The file.
        path: String,
        /// The process's index.
        index: usize,
    },
}

/// The CPUs of each process of a launch, by index (`None`: left unbound).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuSets {
    sets: Vec<Option<Vec<u32>>>,
}

impl CpuSets {
    /// Wraps the sets (index = process index).
    pub fn new(sets: Vec<Option<Vec<u32>>>) -> Self {
        Self { sets }
    }

    /// The set of process `index`.
    pub fn get(&self, index: usize) -> Option<&[u32]> {
        self.sets.get(index).and_then(|s| s.as_deref())
    }

    /// The file's text: one `INDEX CPUS` line per process.
    pub fn to_text(&self) -> String {
        self.sets
            .iter()
            .enumerate()
            .map(|(i, set)| match set {
                Some(cpus) => format!("{i} {}\n", format_index_list(cpus)),
                None => format!("{i} -\n"),
            })
            .collect()
    }

    /// Writes the file at `path` (replacing it whole: written beside it, then renamed).
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let partial = path.with_extension("partial");
        std::fs::write(&partial, self.to_text())?;
        std::fs::rename(&partial, path)
    }
}

/// The set of process `index` in the text of a CPU-sets file (`origin` names it in
/// errors).
pub fn parse_line_of(
    text: &str,
    origin: &str,
    index: usize,
) -> Result<Option<Vec<u32>>, CpuSetsError> {
    for (n, line) in text.lines().enumerate() {
        let invalid = |problem| CpuSetsError::Invalid {
            path: origin.to_owned(),
            line: n + 1,
            text: line.to_owned(),
            problem,
        };
        let mut fields = line.split_whitespace();
        let (Some(i), Some(cpus), None) = (fields.next(), fields.next(), fields.next()) else {
            return Err(invalid("expected INDEX CPUS"));
        };
        let i: usize = i
            .parse()
            .map_err(|_| invalid("the index is not a number"))?;
        if i != index {
            continue;
        }
        if cpus == "-" {
            return Ok(None);
        }
        let list = parse_index_list(cpus).map_err(|_| invalid("not a CPU list"))?;
        let cpus = list
            .into_iter()
            .map(u32::try_from)
            .collect::<Result<Vec<u32>, _>>()
            .map_err(|_| invalid("a CPU number is too large"))?;
        return Ok(Some(cpus));
    }
    Err(CpuSetsError::Missing {
        path: origin.to_owned(),
        index,
    })
}

/// The set of process `index` in the CPU-sets file at `path`.
pub fn read_line_of(path: &Path, index: usize) -> Result<Option<Vec<u32>>, CpuSetsError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| CpuSetsError::Read {
        path: origin.clone(),
        source,
    })?;
    parse_line_of(&text, &origin, index)
}

/// Where the nodes of a job are on the machines that run it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hosts {
    /// Logical nodes of this machine, each of `cores_per_node` logical cores.
    Logical {
        /// Logical cores per node.
        cores_per_node: usize,
    },
    /// Hosts emulated on this machine (UTS namespaces): they share its CPUs, each
    /// taking as many logical cores as the largest offer.
    Emulated,
    /// Real hosts: each rank uses its own host's groups of cores.
    Real,
}

impl Hosts {
    /// How `node`'s slots map onto this machine's cores, by the availability the job
    /// follows (`view`): its place there for logical and emulated nodes.
    pub fn spread(self, view: &Availability, node: &str) -> CoreSpread {
        let place = |same: &dyn Fn(&str) -> bool| {
            view.nodes().iter().position(|n| same(&n.name)).unwrap_or(0)
        };
        match self {
            Hosts::Logical { cores_per_node } => CoreSpread::Logical {
                node_index: place(&|n| n == node),
                cores_per_node,
            },
            Hosts::Emulated => CoreSpread::Logical {
                node_index: place(&|n| same_host(n, node)),
                cores_per_node: view
                    .nodes()
                    .iter()
                    .map(|n| n.cores)
                    .max()
                    .unwrap_or(1)
                    .max(1),
            },
            Hosts::Real => CoreSpread::Host,
        }
    }
}

/// Whether host names `a` and `b` name one host: equal, or equal up to the first dot
/// (`node01` and `node01.cluster`).
pub fn same_host(a: &str, b: &str) -> bool {
    let short = |h: &str| h.split('.').next().unwrap_or(h).to_ascii_lowercase();
    a == b || short(a) == short(b)
}

/// The CPUs of every rank of `placement` (slots of `cores_per_rank` cores), on
/// `machine` (the tree of the machine the ranks run on, cores as leaves), by `view`.
/// Ranks that would share CPUs with more ranks than the machine has CPUs for (more
/// ranks × cores per rank on a machine, on one host for real hosts) are left unbound,
/// as ranks of one core are: pinned ranks that busy-wait starve one another.
pub fn for_placement(
    placement: &Placement,
    view: &Availability,
    machine: &Tree,
    cores_per_rank: usize,
    hosts: Hosts,
) -> CpuSets {
    let machine_cpus: usize = machine.leaves().iter().map(|l| l.cpus.len().max(1)).sum();
    let sets = placement
        .locations()
        .iter()
        .map(|l| {
            let sharing = match hosts {
                Hosts::Real => placement.ranks_count_on(&l.node),
                _ => placement.len(),
            };
            if sharing.saturating_mul(cores_per_rank) > machine_cpus {
                return None;
            }
            slot_cpus(machine, hosts.spread(view, &l.node), l.core, cores_per_rank)
        })
        .collect();
    CpuSets::new(sets)
}

/// The CPU sets of launch `launch` of a run (`0`, `restart-1`, ...):
/// `RUN_DIR/cpus-LAUNCH.txt`.
pub fn launch_file(run_dir: &Path, launch: &str) -> PathBuf {
    run_dir.join(format!("cpus-{launch}.txt"))
}

/// The CPU sets of the replacements of migration `migration` (1, 2, ...):
/// `RUN_DIR/cpus-spawn-N.txt`.
pub fn spawn_file(run_dir: &Path, migration: u64) -> PathBuf {
    run_dir.join(format!("cpus-spawn-{migration}.txt"))
}

/// The command a launcher starts for `program` so that each process binds to its line
/// of `cpus_file` first: `EXE bind-exec --cpus-file FILE -- PROGRAM...`.
pub fn bound_program(exe: &Path, cpus_file: &Path, program: &[String]) -> Vec<String> {
    let mut command = vec![
        exe.display().to_string(),
        "bind-exec".to_owned(),
        "--cpus-file".to_owned(),
        cpus_file.display().to_string(),
        "--".to_owned(),
    ];
    command.extend(program.iter().cloned());
    command
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::availability::AvailabilityFormat;
    use crate::topology::Shape;

    /// A flat machine of `cores` cores, core i being CPU i.
    fn machine(cores: usize) -> Tree {
        let mut shape: Shape = Tree::from_arities(&[cores]).unwrap().to_shape();
        for (i, leaf) in shape.children.iter_mut().enumerate() {
            leaf.leaf.as_mut().unwrap().cpus = vec![i as u32];
        }
        Tree::from_shape(&shape).unwrap()
    }

    #[test]
    fn logical_nodes_take_consecutive_cores_and_oversubscribed_ranks_none() {
        let view = Availability::parse("n1 2\nn2 2\n", "av", AvailabilityFormat::Auto).unwrap();
        let two_ranks = Placement::parse("0 n1 0\n1 n2 0\n", "p").unwrap();
        let logical = Hosts::Logical { cores_per_node: 2 };
        let sets = for_placement(&two_ranks, &view, &machine(4), 2, logical);
        assert_eq!(sets.get(0), Some(&[0, 1][..]));
        assert_eq!(sets.get(1), Some(&[2, 3][..]));
        // The same on 2 CPUs: 2 ranks of 2 cores would share them, so none is bound.
        let sets = for_placement(&two_ranks, &view, &machine(2), 2, logical);
        assert_eq!(sets.to_text(), "0 -\n1 -\n");
        // One rank of 2 cores on n2 of a 2-CPU machine: node 1 wraps onto CPUs 0-1.
        let one = Placement::parse("0 n2 0\n", "p").unwrap();
        let sets = for_placement(&one, &view, &machine(2), 2, logical);
        assert_eq!(sets.get(0), Some(&[0, 1][..]));
    }

    #[test]
    fn a_bad_line_is_named_and_a_missing_one_too() {
        let e = parse_line_of("0 0-1\n1 x\n", "cpus.txt", 1).unwrap_err();
        assert_eq!(e.to_string(), "cpus.txt:2: not a CPU list: \"1 x\"");
        let e = parse_line_of("0 0-1\n", "cpus.txt", 5).unwrap_err();
        assert_eq!(e.to_string(), "cpus.txt: no line for process 5");
    }
}
