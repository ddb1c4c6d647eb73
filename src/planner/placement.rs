//! Placement files: one `RANK NODE CORE` line per rank.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::matrix::MAX_RANKS;
use crate::topology::MAX_CPU_INDEX;

/// Where one rank runs: a node name and a core (leaf logical index in the node's tree).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize)]
pub struct Location {
    /// Node name.
    pub node: String,
    /// Core: logical index of the leaf in the node's tree.
    pub core: usize,
}

/// Where every rank runs; index = rank.
///
/// ```
/// use rankmig::planner::Placement;
/// let p = Placement::parse("0 n1 0\n1 n1 1\n2 n2 0\n", "p.txt").unwrap();
/// assert_eq!(p.len(), 3);
/// assert_eq!(p.ranks_count_on("n1"), 2);
/// assert_eq!(p.to_text(), "0 n1 0\n1 n1 1\n2 n2 0\n");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Placement {
    locations: Vec<Location>,
}

impl Placement {
    /// Wraps locations (index = rank).
    pub fn new(locations: Vec<Location>) -> Self {
        Self { locations }
    }

    /// The same number of ranks on each node and the same cores, but the ranks of a
    /// node in one block of consecutive ranks, nodes in the order of `order` (nodes it
    /// does not name after them, in order of first appearance): for a launcher that
    /// starts ranks host by host in that order and cannot name a host twice.
    ///
    /// ```
    /// use rankmig::planner::Placement;
    /// let p = Placement::parse("0 b 0\n1 a 0\n2 b 1\n3 a 1\n", "p.txt").unwrap();
    /// let order = ["a".to_owned(), "b".to_owned()];
    /// assert_eq!(p.in_node_blocks(&order).to_text(), "0 a 0\n1 a 1\n2 b 0\n3 b 1\n");
    /// ```
    pub fn in_node_blocks(&self, order: &[String]) -> Self {
        // One pass over the ranks: each node's cores, nodes in order of first appearance.
        let mut index: std::collections::HashMap<&str, usize> = Default::default();
        let mut nodes: Vec<(&str, Vec<usize>)> = Vec::new();
        for l in &self.locations {
            let i = *index.entry(&l.node).or_insert_with(|| {
                nodes.push((&l.node, Vec::new()));
                nodes.len() - 1
            });
            nodes[i].1.push(l.core);
        }
        let position_in_order: std::collections::HashMap<&str, usize> = order
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), i))
            .collect();
        nodes.sort_by_key(|(n, _)| position_in_order.get(n).copied().unwrap_or(order.len()));
        let locations = nodes
            .into_iter()
            .flat_map(|(node, mut cores)| {
                cores.sort_unstable();
                cores.into_iter().map(move |core| Location {
                    node: node.to_owned(),
                    core,
                })
            })
            .collect();
        Self { locations }
    }

    /// Reads a placement file.
    pub fn load(path: &Path) -> Result<Self, PlacementError> {
        let text = std::fs::read_to_string(path).map_err(|source| PlacementError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses `RANK NODE CORE` lines (`#` comments, blank lines). Every rank from 0 to
    /// N−1 must appear exactly once. Ranks are below [`MAX_RANKS`], cores at most
    /// [`MAX_CPU_INDEX`]; larger values are errors naming the file, line and text.
    pub fn parse(text: &str, origin: &str) -> Result<Self, PlacementError> {
        let mut slots: Vec<Option<(Location, usize)>> = Vec::new();
        for (line, data) in crate::lines::data_lines(text) {
            let bad = |problem: &str| PlacementError::Line {
                origin: origin.to_owned(),
                line,
                problem: problem.to_owned(),
                text: data.to_owned(),
            };
            let max_rank = MAX_RANKS - 1;
            let fields: Vec<&str> = data.split_whitespace().collect();
            let [rank, node, core] = fields[..] else {
                return Err(bad("expected 'RANK NODE CORE'"));
            };
            let rank: u64 = rank
                .parse()
                .map_err(|_| bad("the rank is not a non-negative integer"))?;
            let rank = usize::try_from(rank).unwrap_or(usize::MAX);
            let core: usize = core
                .parse()
                .map_err(|_| bad("the core is not a non-negative integer"))?;
            if !crate::availability::is_hostname(node) {
                return Err(bad(
                    "the node is not a valid host name (letters, digits, '-' and '.')",
                ));
            }
            if rank > max_rank {
                return Err(bad(&format!("the rank is above the limit of {max_rank}")));
            }
            if core > MAX_CPU_INDEX {
                return Err(bad(&format!(
                    "the core is above the limit of {MAX_CPU_INDEX}"
                )));
            }
            if slots.len() <= rank {
                slots.resize(rank + 1, None);
            }
            if let Some((_, first)) = &slots[rank] {
                return Err(PlacementError::Repeated {
                    origin: origin.to_owned(),
                    line,
                    first: *first,
                    rank,
                });
            }
            let location = Location {
                node: node.to_owned(),
                core,
            };
            slots[rank] = Some((location, line));
        }
        if slots.is_empty() {
            return Err(PlacementError::Empty {
                origin: origin.to_owned(),
            });
        }
        let mut locations = Vec::with_capacity(slots.len());
        for (rank, slot) in slots.into_iter().enumerate() {
            match slot {
                Some((location, _)) => locations.push(location),
                None => {
                    return Err(PlacementError::Missing {
                        origin: origin.to_owned(),
                        rank,
                    });
                }
            }
        }
        Ok(Self { locations })
    }

    /// Number of ranks.
    pub fn len(&self) -> usize {
        self.locations.len()
    }

    /// True when there is no rank.
    pub fn is_empty(&self) -> bool {
        self.locations.is_empty()
    }

    /// Location of `rank`.
    pub fn location(&self, rank: usize) -> &Location {
        &self.locations[rank]
    }

    /// All locations, index = rank.
    pub fn locations(&self) -> &[Location] {
        &self.locations
    }

    /// Ranks on `node`.
    pub fn ranks_count_on(&self, node: &str) -> usize {
        self.locations.iter().filter(|l| l.node == node).count()
    }

    /// Ranks on `node`, ascending.
    pub fn ranks_on(&self, node: &str) -> Vec<usize> {
        (0..self.len())
            .filter(|&r| self.locations[r].node == node)
            .collect()
    }

    /// Node names in order of first appearance.
    pub fn node_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for l in &self.locations {
            if !names.contains(&l.node) {
                names.push(l.node.clone());
            }
        }
        names
    }

    /// The placement as `RANK NODE CORE` lines.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for (rank, l) in self.locations.iter().enumerate() {
            let _ = writeln!(out, "{rank} {} {}", l.node, l.core);
        }
        out
    }
}

/// Why a placement was refused.
#[derive(Debug, thiserror::Error)]
pub enum PlacementError {
    /// The file could not be read.
    #[error("{}: cannot read placement file: {source}", path.display())]
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
        /// 1-based line.
        line: usize,
        /// What is wrong.
        problem: String,
        /// The line.
        text: String,
    },
    /// A rank appears twice.
    #[error("{origin}:{line}: rank {rank} is already placed on line {first}")]
    Repeated {
        /// The input.
        origin: String,
        /// Line of the repetition.
        line: usize,
        /// Line of the first.
        first: usize,
        /// The rank.
        rank: usize,
    },
    /// A rank below the largest one has no line.
    #[error("{origin}: rank {rank} has no line (ranks must be 0..N-1)")]
    Missing {
        /// The input.
        origin: String,
        /// The rank.
        rank: usize,
    },
    /// No line at all.
    #[error("{origin}: the placement is empty")]
    Empty {
        /// The input.
        origin: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_and_cores_above_the_bounds_are_named() {
        for big in ["1048576", "16777216", "18446744073709551615"] {
            let e = Placement::parse(&format!("0 n1 0\n{big} n1 1\n"), "p.txt")
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("p.txt:2: "), "{e}");
            assert!(e.contains("1048575") && e.contains(big), "{e}");
        }
        let e = Placement::parse("0 n1 65536\n", "p.txt")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("p.txt:1: ") && e.contains("65535"), "{e}");
    }

    #[test]
    fn missing_and_repeated_ranks_are_named() {
        let e = Placement::parse("0 a 0\n2 a 1\n", "p")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "p: rank 1 has no line (ranks must be 0..N-1)");
        let e = Placement::parse("0 a 0\n0 a 1\n", "p")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "p:2: rank 0 is already placed on line 1");
        let e = Placement::parse("0 a\n", "p").unwrap_err().to_string();
        assert_eq!(e, "p:1: expected 'RANK NODE CORE': '0 a'");
        let e = Placement::parse("x a 0\n", "p").unwrap_err().to_string();
        assert!(e.contains("the rank is not"), "{e}");
        let e = Placement::parse("0 a=b 0\n", "p").unwrap_err().to_string();
        assert_eq!(
            e,
            "p:1: the node is not a valid host name (letters, digits, '-' and '.'): '0 a=b 0'"
        );
    }
}
