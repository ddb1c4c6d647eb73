//! The trees TreeMatch works on: a machine from live hwloc, an hwloc XML file or an hwloc
//! synthetic string; a cluster of identical machines under one root; virtual trees
//! (restricted to some leaves, with oversubscription slots, composed from parts).
//!
//! ```
//! use rankmig::topology::{LeafKind, TopologySpec};
//! let spec: TopologySpec = "synthetic:pack:2 core:8 pu:2".parse().unwrap();
//! let node = spec.load(LeafKind::Core).unwrap();
//! assert_eq!(node.leaf_count(), 16);
//! let cluster = rankmig::topology::Tree::cluster(&node, 4).unwrap();
//! assert_eq!(cluster.describe_levels(), "Cluster:1(x4) Machine:4(x2) Package:8(x8) Core:64");
//! ```

mod cluster_slots;
mod hwloc;
mod hwloc_stderr;
mod os_cpus;
mod rank_cpus;
mod rank_groups;
mod tree;

pub use hwloc::{MAX_SYNTHETIC_LEAVES, MAX_SYNTHETIC_WORK};

use std::path::PathBuf;
use std::str::FromStr;

pub use cluster_slots::ClusterSlots;
pub use os_cpus::{CpuSelectionError, leaves_on_cpus};
pub use rank_cpus::{CoreSpread, slot_cpus};
pub use tree::{Leaf, Shape, Tree};

/// What the leaves of a tree are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum LeafKind {
    /// Physical cores (the default).
    #[default]
    Core,
    /// Hardware threads (hwloc PUs).
    Pu,
}

/// Which hwloc CPU cache levels a tree read from hwloc keeps.
///
/// A cache with a single child (with leaves under it) is always spliced away: it
/// separates nothing. A cache shared by two or more children (an L3 shared by the
/// cores of an AMD CCX, the 2-core L2 tile of a Xeon Phi) tells which cores are
/// closest, so by default it is a level of the tree, and TreeMatch keeps heavily
/// communicating ranks inside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub enum CacheLevels {
    /// Caches shared by at least two children are levels (the default).
    #[default]
    Shared,
    /// Every cache is spliced away: only packages, dies, groups, cores, PUs remain.
    Dropped,
}

impl CacheLevels {
    /// [`CacheLevels::Dropped`] when `dropped`, else [`CacheLevels::Shared`] (for a
    /// `--no-shared-caches` flag).
    pub fn unless_dropped(dropped: bool) -> Self {
        if dropped { Self::Dropped } else { Self::Shared }
    }
}

/// Where a machine's topology comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopologySpec {
    /// The machine this process runs on (hwloc discovery).
    Live,
    /// An hwloc XML export (`lstopo file.xml`).
    Xml(PathBuf),
    /// An hwloc synthetic description such as `pack:2 core:8 pu:1`.
    Synthetic(String),
    /// A Scotch `tleaf` target file (`tleaf LEVELS ARITY0 LINK0 ARITY1 LINK1 ...`): a
    /// symmetric tree whose leaves are Scotch's terminal domains, in the same order.
    Tleaf(PathBuf),
}

impl TopologySpec {
    /// Loads the machine tree, shared caches kept as levels (see [`CacheLevels`]).
    pub fn load(&self, leaves: LeafKind) -> Result<Tree, TopologyError> {
        self.load_with(leaves, CacheLevels::default())
    }

    /// Loads the machine tree with the cache levels `caches` says (a Scotch `tleaf`
    /// target has no caches: `caches` changes nothing there).
    ///
    /// ```
    /// use rankmig::topology::{CacheLevels, LeafKind, TopologySpec};
    /// let spec: TopologySpec = "synthetic:pack:2 l3:4 core:3 pu:1".parse().unwrap();
    /// let kept = spec.load_with(LeafKind::Core, CacheLevels::Shared).unwrap();
    /// assert_eq!(kept.describe_levels(), "Machine:1(x2) Package:2(x4) L3Cache:8(x3) Core:24");
    /// let dropped = spec.load_with(LeafKind::Core, CacheLevels::Dropped).unwrap();
    /// assert_eq!(dropped.describe_levels(), "Machine:1(x2) Package:2(x12) Core:24");
    /// ```
    pub fn load_with(&self, leaves: LeafKind, caches: CacheLevels) -> Result<Tree, TopologyError> {
        match self {
            TopologySpec::Live => hwloc::live(leaves, caches),
            TopologySpec::Xml(path) => hwloc::from_xml_file(path, leaves, caches),
            TopologySpec::Synthetic(s) => hwloc::from_synthetic(s, leaves, caches),
            TopologySpec::Tleaf(path) => from_tleaf_file(path),
        }
    }
}

impl FromStr for TopologySpec {
    type Err = TopologyError;

    /// Parses `live`, `xml:FILE`, `synthetic:STRING` or `tleaf:FILE`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "live" {
            Ok(TopologySpec::Live)
        } else if let Some(path) = s.strip_prefix("xml:") {
            Ok(TopologySpec::Xml(PathBuf::from(path)))
        } else if let Some(desc) = s.strip_prefix("synthetic:") {
            Ok(TopologySpec::Synthetic(desc.to_owned()))
        } else if let Some(path) = s.strip_prefix("tleaf:") {
            Ok(TopologySpec::Tleaf(PathBuf::from(path)))
        } else {
            Err(TopologyError::BadSpec(s.to_owned()))
        }
    }
}

impl std::fmt::Display for TopologySpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TopologySpec::Live => write!(f, "live"),
            TopologySpec::Xml(p) => write!(f, "xml:{}", p.display()),
            TopologySpec::Synthetic(s) => write!(f, "synthetic:{s}"),
            TopologySpec::Tleaf(p) => write!(f, "tleaf:{}", p.display()),
        }
    }
}

/// Why a topology could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    /// The topology argument is none of the accepted forms.
    #[error("topology '{0}': expected 'live', 'xml:FILE', 'synthetic:STRING' or 'tleaf:FILE'")]
    BadSpec(String),
    /// The XML file could not be read.
    #[error("{}: cannot read topology file: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// hwloc refused the XML file.
    #[error("{}: hwloc refused this XML topology: {problem}", path.display())]
    InvalidXml {
        /// The file.
        path: PathBuf,
        /// hwloc's reason when it gave one, else what is visibly wrong.
        problem: String,
    },
    /// The XML file is in a format version newer than hwloc 2 reads.
    #[error(
        "{}: XML topology format version {version} (written by a newer hwloc); the hwloc \
         rankmig is built with reads versions 1.x and 2.x: export the machine with an hwloc 2 lstopo",
        path.display()
    )]
    NewerXml {
        /// The file.
        path: PathBuf,
        /// The `version` attribute of its `<topology>` element.
        version: String,
    },
    /// hwloc refused the synthetic description.
    #[error(
        "synthetic topology '{description}': hwloc refused it: {reason} (example: 'pack:2 core:8 pu:1')"
    )]
    InvalidSynthetic {
        /// The description.
        description: String,
        /// hwloc's reason.
        reason: String,
    },
    /// A Scotch target file is not a `tleaf` description.
    #[error("{}: {problem} (expected 'tleaf LEVELS ARITY0 LINK0 ARITY1 LINK1 ...')", path.display())]
    InvalidTleaf {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the offending value.
        problem: String,
    },
    /// hwloc could not discover this machine.
    #[error("cannot discover this machine's topology: {0}")]
    Live(String),
    /// The tree has no leaf (no core, or everything filtered away).
    #[error("the topology has no usable leaf")]
    NoLeaves,
    /// A rank needs more cores than the node's tree has ([`Tree::grouped`]).
    #[error(
        "a node of {leaves} cores cannot hold a rank of {cores_per_rank} cores per rank; give fewer cores per rank or a larger node tree"
    )]
    RankLargerThanNode {
        /// Leaves of the node's tree.
        leaves: usize,
        /// Cores each rank needs.
        cores_per_rank: usize,
    },
    /// A synthetic description hwloc would take too long to build (see
    /// [`MAX_SYNTHETIC_WORK`]).
    #[error(
        "synthetic topology '{description}': more than {} leaves, or leaves times its widest level above {}; describe large machines with --nodes or an XML export",
        MAX_SYNTHETIC_LEAVES,
        MAX_SYNTHETIC_WORK
    )]
    SyntheticTooWide {
        /// The description.
        description: String,
    },
    /// A size given by the user would make a tree of more than [`MAX_LEAVES`] leaves.
    #[error("{what} {value}: more than {MAX_LEAVES} leaves, the limit")]
    TooLarge {
        /// What was asked, e.g. "a cluster of this node, nodes =".
        what: &'static str,
        /// The value given.
        value: String,
    },
    /// A leaf index does not exist in the tree.
    #[error("leaf {leaf} does not exist (the tree has {leaves} leaves)")]
    LeafOutOfRange {
        /// The index asked for.
        leaf: usize,
        /// How many leaves there are.
        leaves: usize,
    },
}

/// Most leaves a tree may have (a cluster, a synthetic description, symmetric
/// arities): larger sizes are refused before anything proportional is allocated.
pub const MAX_LEAVES: usize = 1 << 20;

/// Highest CPU (leaf) index an index list may name: lists are at most 65536 long.
pub const MAX_CPU_INDEX: usize = 65_535;

/// Reads a Scotch `tleaf` target file: `tleaf LEVELS` then, per level from the top,
/// the number of children and the link cost (ignored here; give costs with `--costs`).
/// Whitespace and line breaks are free. Leaves have no OS index.
fn from_tleaf_file(path: &std::path::Path) -> Result<Tree, TopologyError> {
    let text = std::fs::read_to_string(path).map_err(|source| TopologyError::Read {
        path: path.to_owned(),
        source,
    })?;
    let bad = |problem: String| TopologyError::InvalidTleaf {
        path: path.to_owned(),
        problem,
    };
    let mut words = text.split_whitespace();
    match words.next() {
        Some("tleaf") => {}
        Some(other) => return Err(bad(format!("target type '{other}' is not tleaf"))),
        None => return Err(bad("empty file".to_owned())),
    }
    let mut number = |what: &str| -> Result<usize, TopologyError> {
        let word = words.next().ok_or_else(|| bad(format!("missing {what}")))?;
        word.parse::<usize>()
            .map_err(|_| bad(format!("{what} '{word}' is not a non-negative integer")))
    };
    let levels = number("level count")?;
    if levels == 0 || levels > 64 {
        return Err(bad(format!("level count {levels} is not in 1..=64")));
    }
    let mut arities = Vec::with_capacity(levels);
    for level in 0..levels {
        let arity = number(&format!("arity of level {level}"))?;
        if arity == 0 {
            return Err(bad(format!("arity of level {level} is 0")));
        }
        number(&format!("link cost of level {level}"))?;
        arities.push(arity);
    }
    let leaves = arities.iter().try_fold(1usize, |n, a| {
        n.checked_mul(*a).filter(|n| *n <= MAX_LEAVES)
    });
    if leaves.is_none() {
        return Err(bad(format!(
            "{arities:?} makes more than {MAX_LEAVES} leaves"
        )));
    }
    Tree::from_arities(&arities)
}

/// Parses an index list such as `0-7,16-23` or `3,5,9`, returned sorted. Indexes go
/// from 0 to [`MAX_CPU_INDEX`]; an index named twice (`0,0` or `0-3,2`) is an error,
/// not silently merged. Time and memory depend on the indexes listed, not on their
/// values.
///
/// ```
/// assert_eq!(rankmig::topology::parse_index_list("5,0-2").unwrap(), vec![0, 1, 2, 5]);
/// assert!(rankmig::topology::parse_index_list("3-1").is_err());
/// assert!(rankmig::topology::parse_index_list("0-65536").is_err());
/// assert!(rankmig::topology::parse_index_list("0-3,2").is_err());
/// ```
pub fn parse_index_list(list: &str) -> Result<Vec<usize>, IndexListError> {
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || IndexListError::Malformed(part.to_owned());
        let index = |t: &str| {
            t.trim()
                .parse::<usize>()
                .ok()
                .filter(|&v| v <= MAX_CPU_INDEX)
                .ok_or_else(bad)
        };
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (index(a)?, index(b)?),
            None => {
                let v = index(part)?;
                (v, v)
            }
        };
        if lo > hi {
            return Err(bad());
        }
        ranges.push((lo, hi));
    }
    if ranges.is_empty() {
        return Err(IndexListError::Malformed(list.to_owned()));
    }
    ranges.sort_unstable();
    let mut indexes = Vec::new();
    let mut highest: Option<usize> = None;
    for &(lo, hi) in &ranges {
        if highest.is_some_and(|h| lo <= h) {
            return Err(IndexListError::Repeated {
                list: list.to_owned(),
                index: lo,
            });
        }
        highest = Some(hi);
        indexes.extend(lo..=hi);
    }
    Ok(indexes)
}

/// Writes indexes (ascending) as a list such as `0-3,8,10-11`, the inverse of
/// [`parse_index_list`].
///
/// ```
/// assert_eq!(rankmig::topology::format_index_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
/// ```
pub fn format_index_list(indexes: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < indexes.len() {
        let start = indexes[i];
        let mut end = start;
        while i + 1 < indexes.len() && end.checked_add(1) == Some(indexes[i + 1]) {
            i += 1;
            end = indexes[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

/// Why an index list was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexListError {
    /// A part does not parse, or names an index above [`MAX_CPU_INDEX`].
    #[error("'{0}' is not an index list (indexes 0 to 65535, e.g. 0-7,16-23)")]
    Malformed(String),
    /// An index is named twice .
    #[error("'{list}' names {index} twice")]
    Repeated {
        /// The whole list.
        list: String,
        /// The first index named again.
        index: usize,
    },
}
