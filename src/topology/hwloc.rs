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
    let (objects, widest) =
        synthetic_size(description).map_err(|at| TopologyError::InvalidSynthetic {
            description: description.to_owned(),
            reason: format!("no 'TYPE:COUNT' or 'COUNT' level at '{at}'"),
        })?;
    let Some(objects) = objects.filter(|&n| n <= MAX_LEAVES as u64) else {
        return Err(TopologyError::TooLarge {
            what: "synthetic topology",
            value: format!("'{description}'"),
        });
    };
    if objects > MAX_SYNTHETIC_LEAVES
        || objects
            .checked_mul(widest)
            .is_none_or(|w| w > MAX_SYNTHETIC_WORK)
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

/// The size of a synthetic description as hwloc 2 reads it: the number of objects at
/// the bottom level (the product of the level counts, a count of 0 counting as 1) plus
/// the attached NUMA nodes (`[numa]` after a level: one per object of that level; a
/// few hundred of them made hwloc build for seconds), `None` on overflow; and the
/// widest count.
///
/// The levels are found the way hwloc's parser finds them, not by splitting on
/// whitespace: a level need not be followed by a space (`21483pu:64` is two levels,
/// 1.4 million objects), a type runs to the next `:` wherever it is, and a count is
/// read by `strtoul` in base 0 (`0x400` is 1024, `+8` is 8). `Err` names the text
/// where that reading cannot go on; hwloc would refuse it too, but the bounds do not
/// rely on that.
fn synthetic_size(description: &str) -> Result<(Option<u64>, u64), String> {
    let b = description.as_bytes();
    let mut pos = 0;
    if b.first() == Some(&b'(') {
        pos = after(b, 1, b')').ok_or_else(|| description.to_owned())?;
    }
    let (mut objects, mut widest, mut attached) = (Some(1u64), 1u64, Some(0u64));
    loop {
        while matches!(b.get(pos), Some(b' ' | b'\n')) {
            pos += 1;
        }
        let Some(&c) = b.get(pos) else {
            let total = objects.zip(attached).and_then(|(n, a)| n.checked_add(a));
            return Ok((total, widest));
        };
        let level = pos;
        let rest = || String::from_utf8_lossy(&b[level..]).into_owned();
        if c == b'[' {
            // An attached NUMA node per object of the level above: no level of its own.
            attached = attached.zip(objects).and_then(|(a, n)| a.checked_add(n));
            pos = after(b, pos, b']').ok_or_else(rest)?;
            continue;
        }
        if !c.is_ascii_digit() {
            // A type name, up to the next ':' (hwloc's strchr).
            pos = after(b, pos, b':').ok_or_else(rest)?;
        }
        let (count, end) = strtoul_base0(b, pos).ok_or_else(rest)?;
        pos = end;
        if b.get(pos) == Some(&b'(') {
            pos = after(b, pos, b')').ok_or_else(rest)?;
        }
        objects = objects.and_then(|n| n.checked_mul(count.max(1)));
        widest = widest.max(count);
    }
}

/// The position just past the first `byte` at or after `from`.
fn after(b: &[u8], from: usize, byte: u8) -> Option<usize> {
    b.get(from..)?
        .iter()
        .position(|&c| c == byte)
        .map(|p| from + p + 1)
}

/// C's `strtoul(text + pos, &end, 0)`: leading whitespace, a sign, then a hexadecimal
/// (`0x`), octal (leading `0`) or decimal number; saturated at `u64::MAX` (as `strtoul`
/// saturates, and a negated number is huge too). `None` when there is no number.
fn strtoul_base0(b: &[u8], mut pos: usize) -> Option<(u64, usize)> {
    while matches!(b.get(pos), Some(b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')) {
        pos += 1;
    }
    let negative = b.get(pos) == Some(&b'-');
    if matches!(b.get(pos), Some(b'+' | b'-')) {
        pos += 1;
    }
    let hex = matches!(b.get(pos..pos + 2), Some(b"0x" | b"0X"))
        && b.get(pos + 2).is_some_and(u8::is_ascii_hexdigit);
    let (radix, start) = match (hex, b.get(pos)) {
        (true, _) => (16, pos + 2),
        (false, Some(b'0')) => (8, pos),
        _ => (10, pos),
    };
    let mut end = start;
    let mut value = 0u64;
    while let Some(d) = b.get(end).and_then(|&c| char::from(c).to_digit(radix)) {
        value = value
            .saturating_mul(u64::from(radix))
            .saturating_add(u64::from(d));
        end += 1;
    }
    if end == start {
        return None;
    }
    Some((
        if negative && value != 0 {
            u64::MAX
        } else {
            value
        },
        end,
    ))
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
