//! Building a [`Tree`] from hwloc: the live machine, an XML file or a synthetic string.

use std::path::Path;

use hwlocality::Topology;
use hwlocality::object::TopologyObject;
use hwlocality::object::types::ObjectType;

use super::tree::{Leaf, Shape, Tree};
use super::{CacheLevels, LeafKind, MAX_LEAVES, TopologyError, hwloc_stderr};

/// Loads the topology of the machine this process runs on.
pub fn live(leaves: LeafKind, caches: CacheLevels) -> Result<Tree, TopologyError> {
    let topology = Topology::new().map_err(|e| TopologyError::Live(e.to_string()))?;
    tree_of(&topology, leaves, caches)
}

/// Loads an hwloc XML file (as `lstopo file.xml` writes it).
///
/// A file whose `<topology version="...">` is newer than the 2.x this hwloc reads is
/// refused with that version; another refusal gives hwloc's reason when it printed one
/// (with `HWLOC_XML_VERBOSE=1`), or says when the file ends before `</topology>`.
pub fn from_xml_file(
    path: &Path,
    leaves: LeafKind,
    caches: CacheLevels,
) -> Result<Tree, TopologyError> {
    let text = std::fs::read_to_string(path).map_err(|source| TopologyError::Read {
        path: path.to_owned(),
        source,
    })?;
    if let Some(version) = xml_format_version(&text) {
        let major = version
            .split('.')
            .next()
            .and_then(|m| m.parse::<u32>().ok());
        if major.is_some_and(|m| m > MAX_XML_MAJOR) {
            return Err(TopologyError::NewerXml {
                path: path.to_owned(),
                version: version.to_owned(),
            });
        }
    }
    let build = || Topology::builder().from_xml(&text).map(|b| b.build());
    let said = match build_telling(build) {
        Ok(topology) => return tree_of(&topology, leaves, caches),
        Err(said) => said,
    };
    // libxml2 follows its complaint with the offending text and a caret line; hwloc
    // may first note that the file has no DTD, which is not the reason.
    let reason = said.iter().find(|l| !l.contains("without DTD"));
    let problem = match reason {
        Some(first) => format!("hwloc says: {first}"),
        None if !text.trim_end().ends_with("</topology>") => {
            "the file ends before </topology> (truncated?)".to_owned()
        }
        None => "not an hwloc XML export? (HWLOC_XML_VERBOSE=1 makes hwloc say why)".to_owned(),
    };
    Err(TopologyError::InvalidXml {
        path: path.to_owned(),
        problem,
    })
}

/// Runs an hwloc topology build: the topology, or what hwloc printed when it refused.
/// hwloc prints its reasons only when `HWLOC_SYNTHETIC_VERBOSE` or `HWLOC_XML_VERBOSE`
/// is set; only then is standard error captured (what it printed about an input it
/// accepted goes to the debug log). Otherwise the process's descriptor 2 is never
/// touched.
fn build_telling<E1, E2>(
    build: impl FnOnce() -> Result<Result<Topology, E2>, E1>,
) -> Result<Topology, Vec<String>> {
    let verbose = ["HWLOC_SYNTHETIC_VERBOSE", "HWLOC_XML_VERBOSE"]
        .iter()
        .any(|k| std::env::var_os(k).is_some_and(|v| !v.is_empty() && v != "0"));
    if !verbose {
        return match build() {
            Ok(Ok(topology)) => Ok(topology),
            _ => Err(Vec::new()),
        };
    }
    let (result, said) = hwloc_stderr::capture(build);
    match result {
        Ok(Ok(topology)) => {
            for line in &said {
                log::debug!("hwloc: {line}");
            }
            Ok(topology)
        }
        _ => Err(said),
    }
}

/// Highest major version of the hwloc XML format that hwloc 2 reads.
const MAX_XML_MAJOR: u32 = 2;

/// The `version` attribute of the `<topology>` element, if the file has one.
fn xml_format_version(text: &str) -> Option<&str> {
    let start = text.find("<topology")?;
    let tag = &text[start..];
    let tag = &tag[..tag.find('>')?];
    let value = tag.split_once("version=")?.1;
    let quote = value.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let value = &value[1..];
    Some(&value[..value.find(quote)?])
}

/// Builds a topology from an hwloc synthetic description such as `pack:2 core:8 pu:1`.
///
/// hwloc's reason for refusing it is in the error when `HWLOC_SYNTHETIC_VERBOSE` is set
/// (the `rankmig` binary sets it).
///
/// The product of the counts (`TYPE:COUNT` or bare `COUNT` words) must be at most
/// [`MAX_SYNTHETIC_LEAVES`], and that product times the widest count at most
/// [`MAX_SYNTHETIC_WORK`]: hwloc's time to build a synthetic topology grows with the
/// objects times the widest level (`pack:2 core:8192 pu:1` took 142 s). Both are
/// checked before hwloc builds anything. Larger machines are described with `--nodes`
/// or an XML export.
pub fn from_synthetic(
    description: &str,
    leaves: LeafKind,
    caches: CacheLevels,
) -> Result<Tree, TopologyError> {
    let work = synthetic_objects(description)
        .zip(widest_count(description))
        .and_then(|(n, w)| n.checked_mul(w).map(|work| (n, work)));
    let Some((_, work)) = work.filter(|&(n, _)| n <= MAX_LEAVES as u64) else {
        return Err(TopologyError::TooLarge {
            what: "synthetic topology",
            value: format!("'{description}'"),
        });
    };
    if work > MAX_SYNTHETIC_WORK
        || synthetic_objects(description).is_none_or(|n| n > MAX_SYNTHETIC_LEAVES)
    {
        return Err(TopologyError::SyntheticTooWide {
            description: description.to_owned(),
        });
    }
    let build = || {
        Topology::builder()
            .from_synthetic(description)
            .map(|b| b.build())
    };
    match build_telling(build) {
        Ok(topology) => tree_of(&topology, leaves, caches),
        Err(said) => Err(TopologyError::InvalidSynthetic {
            description: description.to_owned(),
            reason: if said.is_empty() {
                "no reason given; HWLOC_SYNTHETIC_VERBOSE=1 makes hwloc say why".to_owned()
            } else {
                said.join(" / ")
            },
        }),
    }
}

/// Most leaves a synthetic description may have (16 384): hwloc's build time grows
/// faster than the leaves (`2 4 8 4 8 8 8`, 131 072 leaves, took 13 s of CPU).
pub const MAX_SYNTHETIC_LEAVES: u64 = 1 << 14;

/// Largest value of leaves × widest count of a synthetic description (2^20): about a
/// second of hwloc's time. `pack:2 core:64 pu:2` is 256 × 64; `pack:2 core:1024 pu:1`
/// (2048 × 1024) is refused.
pub const MAX_SYNTHETIC_WORK: u64 = 1 << 20;

/// The widest count of a synthetic description (as [`synthetic_objects`] reads them).
fn widest_count(description: &str) -> Option<u64> {
    let mut widest = 1u64;
    for word in description.split_whitespace() {
        let rest = word.split_once(':').map_or(word, |(_, rest)| rest);
        let digits: &str = &rest[..rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len())];
        if !digits.is_empty() {
            widest = widest.max(digits.parse::<u64>().ok()?);
        }
    }
    Some(widest)
}

/// Number of objects at the bottom level of a synthetic description, over-estimated:
/// the product of the counts of every word, a count being the leading digits after the
/// `:` of a `TYPE:COUNT` word or the leading digits of a bare `COUNT` word (hwloc reads
/// `2 4 8` as three levels); a count of 0 counts as 1. `None` on overflow.
fn synthetic_objects(description: &str) -> Option<u64> {
    let mut n = 1u64;
    for word in description.split_whitespace() {
        let rest = word.split_once(':').map_or(word, |(_, rest)| rest);
        let digits: &str = &rest[..rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len())];
        if digits.is_empty() {
            continue;
        }
        n = n.checked_mul(digits.parse::<u64>().ok()?.max(1))?;
    }
    Some(n)
}

/// Converts an hwloc topology to our tree: leaves are cores or PUs; a CPU cache is a
/// level of the tree when `caches` keeps shared caches and it has at least two
/// children with leaves under them (an L3 shared by the cores of a CCX, a 2-core L2
/// tile); any other cache is spliced away, its children taking its place.
fn tree_of(
    topology: &Topology,
    leaves: LeafKind,
    caches: CacheLevels,
) -> Result<Tree, TopologyError> {
    let walk = Walk {
        leaf_type: effective_leaf_type(topology, leaves),
        caches,
    };
    let mut next_leaf = 0u32;
    // The root is not a cache: it stands for itself or, without leaves, for nothing.
    let shape = walk
        .shapes_of(topology.root_object(), None, &mut next_leaf)
        .pop()
        .ok_or(TopologyError::NoLeaves)?;
    Tree::from_shape(&shape)
}

/// Cores when asked and present, PUs otherwise.
fn effective_leaf_type(topology: &Topology, leaves: LeafKind) -> ObjectType {
    match leaves {
        LeafKind::Pu => ObjectType::PU,
        LeafKind::Core => {
            if topology
                .objects_with_type(ObjectType::Core)
                .next()
                .is_some()
            {
                ObjectType::Core
            } else {
                ObjectType::PU
            }
        }
    }
}

/// What the walk over hwloc objects keeps.
struct Walk {
    leaf_type: ObjectType,
    caches: CacheLevels,
}

impl Walk {
    /// The shapes `object` stands for in its parent's children: none (no leaf under
    /// it), one, or its children's shapes when it is a cache spliced away. `core` is
    /// the logical index of the core `object` is in; `next` the next leaf index.
    fn shapes_of(&self, object: &TopologyObject, core: Option<u32>, next: &mut u32) -> Vec<Shape> {
        let kind = object.object_type();
        let core = if kind == ObjectType::Core {
            u32::try_from(object.logical_index()).ok()
        } else {
            core
        };
        if kind == self.leaf_type {
            return vec![leaf_shape(object, core, next)];
        }
        let children: Vec<Shape> = object
            .normal_children()
            .flat_map(|child| self.shapes_of(child, core, next))
            .collect();
        if children.is_empty() {
            return Vec::new();
        }
        if kind.is_cpu_cache() && !self.keeps_cache(children.len()) {
            return children;
        }
        vec![Shape::inner(&kind.to_string(), children)]
    }

    /// Whether a cache with `children` children (with leaves under them) is a level.
    fn keeps_cache(&self, children: usize) -> bool {
        self.caches == CacheLevels::Shared && children >= 2
    }
}

/// The leaf shape of `object`, numbered `next` (which moves on).
fn leaf_shape(object: &TopologyObject, core: Option<u32>, next: &mut u32) -> Shape {
    let cpus = object.cpuset().map_or_else(Vec::new, |set| {
        set.iter_set()
            .filter_map(|i| u32::try_from(usize::from(i)).ok())
            .collect()
    });
    let leaf = Leaf {
        node: 0,
        logical_index: *next,
        core,
        cpus,
    };
    *next += 1;
    Shape::leaf(&object.object_type().to_string(), leaf)
}
