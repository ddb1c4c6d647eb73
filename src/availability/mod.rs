//! The availability file: which nodes the job may use and how many cores each offers.
//!
//! Four forms are read ([`AvailabilityFormat`]); the native one is one `NAME CORES` line
//! per node, `#` comments, blank lines allowed, optionally `cpus=LIST` naming the offered
//! cores. A node absent from the file, or with 0 cores, is unavailable.
//!
//! Bounds: a node offers at most [`MAX_CORES_PER_NODE`] cores (or slots, in every
//! form), and a `cpus=` list names indexes 0 to [`crate::topology::MAX_CPU_INDEX`];
//! anything larger is an error naming the file, the line and the value.
//!
//! ```
//! use rankmig::availability::{Availability, AvailabilityFormat};
//! let old = Availability::parse("n1 2\nn2 2 # spare\n", "av", AvailabilityFormat::Auto).unwrap();
//! let new = Availability::parse("n1 0\nn2 2\nn3 4 cpus=0-3\n", "av", AvailabilityFormat::Auto).unwrap();
//! assert_eq!(new.total_cores(), 6);
//! let diff = old.diff(&new);
//! assert_eq!(diff.to_string(), "added n3 (4 cores); removed n1 (had 2 cores)");
//! ```

mod parse;

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub use parse::{AvailabilityFormat, is_hostname};

/// Most cores (or slots) one node may offer in an availability file.
pub const MAX_CORES_PER_NODE: usize = 65_536;

/// One available node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct NodeOffer {
    /// Node (host) name.
    pub name: String,
    /// Cores offered (> 0).
    pub cores: usize,
    /// Which cores (logical indexes in the node's tree), when the file says; otherwise
    /// the first `cores` leaves in logical order.
    pub cpus: Option<Vec<usize>>,
    /// Line of the file that offered it (1-based).
    pub line: usize,
}

/// The parsed availability: the nodes with at least one core, in file order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Availability {
    nodes: Vec<NodeOffer>,
}

impl Availability {
    /// Builds an availability from offers (nodes with 0 cores are dropped).
    pub fn from_offers(offers: Vec<NodeOffer>) -> Result<Self, AvailabilityError> {
        let nodes: Vec<NodeOffer> = offers.into_iter().filter(|o| o.cores > 0).collect();
        if nodes.is_empty() {
            return Err(AvailabilityError::NoCores {
                origin: "availability".into(),
            });
        }
        Ok(Self { nodes })
    }

    /// Reads and validates an availability file.
    pub fn load(path: &Path, format: AvailabilityFormat) -> Result<Self, AvailabilityError> {
        let text = std::fs::read_to_string(path).map_err(|source| AvailabilityError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text, &path.display().to_string(), format)
    }

    /// Parses availability text; `origin` names the input in errors.
    pub fn parse(
        text: &str,
        origin: &str,
        format: AvailabilityFormat,
    ) -> Result<Self, AvailabilityError> {
        let offers = parse::parse(text, origin, format)?;
        let nodes: Vec<NodeOffer> = offers.into_iter().filter(|o| o.cores > 0).collect();
        if nodes.is_empty() {
            return Err(AvailabilityError::NoCores {
                origin: origin.to_owned(),
            });
        }
        Ok(Self { nodes })
    }

    /// The available nodes, in file order.
    pub fn nodes(&self) -> &[NodeOffer] {
        &self.nodes
    }

    /// The offer of `name`, if available.
    pub fn node(&self, name: &str) -> Option<&NodeOffer> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// Cores offered by `name` (0 when absent).
    pub fn cores(&self, name: &str) -> usize {
        self.node(name).map_or(0, |n| n.cores)
    }

    /// Total cores offered (saturating; with bounded offers it cannot overflow).
    pub fn total_cores(&self) -> usize {
        self.nodes
            .iter()
            .fold(0usize, |sum, n| sum.saturating_add(n.cores))
    }

    /// What changed from `self` to `newer`.
    pub fn diff(&self, newer: &Availability) -> AvailabilityDiff {
        let mut diff = AvailabilityDiff::default();
        for n in &newer.nodes {
            match self.node(&n.name) {
                None => diff.added.push((n.name.clone(), n.cores)),
                Some(old) if old.cores != n.cores || old.cpus != n.cpus => {
                    diff.changed.push((n.name.clone(), old.cores, n.cores));
                }
                Some(_) => {}
            }
        }
        for old in &self.nodes {
            if newer.node(&old.name).is_none() {
                diff.removed.push((old.name.clone(), old.cores));
            }
        }
        diff
    }
}

/// Differences between two availabilities.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AvailabilityDiff {
    /// Nodes that became available: (name, cores).
    pub added: Vec<(String, usize)>,
    /// Nodes that are no longer available: (name, cores they had).
    pub removed: Vec<(String, usize)>,
    /// Nodes whose offer changed: (name, old cores, new cores).
    pub changed: Vec<(String, usize, usize)>,
}

impl AvailabilityDiff {
    /// True when nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

impl fmt::Display for AvailabilityDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        for (n, c) in &self.added {
            parts.push(format!("added {n} ({c} cores)"));
        }
        for (n, c) in &self.removed {
            parts.push(format!("removed {n} (had {c} cores)"));
        }
        for (n, a, b) in &self.changed {
            parts.push(format!("changed {n} ({a} -> {b} cores)"));
        }
        if parts.is_empty() {
            write!(f, "no change")
        } else {
            write!(f, "{}", parts.join("; "))
        }
    }
}

/// Why an availability file was refused. The job keeps its placement.
#[derive(Debug, thiserror::Error)]
pub enum AvailabilityError {
    /// The file could not be read.
    #[error("{}: cannot read availability file: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A line does not parse.
    #[error("{origin}:{line}: {problem}: '{text}'")]
    Line {
        /// The input.
        origin: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        problem: String,
        /// The offending text.
        text: String,
    },
    /// A node is listed twice.
    #[error("{origin}:{line}: node '{name}' is already listed on line {first}")]
    Duplicate {
        /// The input.
        origin: String,
        /// Line of the repetition.
        line: usize,
        /// Line of the first listing.
        first: usize,
        /// The node.
        name: String,
    },
    /// No core at all.
    #[error("{origin}: no cores available at all; the job keeps its current placement")]
    NoCores {
        /// The input.
        origin: String,
    },
}
