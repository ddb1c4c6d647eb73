//! Every real hwloc XML file of the test data loads into the expected tree.

use std::path::PathBuf;

use rankmig::topology::{CacheLevels, LeafKind, TopologySpec, Tree};

fn load(file: &str, leaves: LeafKind) -> Tree {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/topologies")
        .join(file);
    TopologySpec::Xml(path).load(leaves).expect(file)
}

/// (file, levels with shared caches kept, levels with every cache dropped), core
/// leaves, single-child levels merged. A cache that one package or one core owns alone
/// merges into that package or core; an L3 of several per package (AMD CCXs, ARM
/// clusters) and a 2-core L2 (Xeon Phi tiles, E-core clusters) stay.
const EXPECTED: &[(&str, &str, &str)] = &[
    (
        "16em64t-4s2c2t.xml",
        "Machine:1(x4) Package:4(x2) Core:8",
        "Machine:1(x4) Package:4(x2) Core:8",
    ),
    (
        "Intel-RaptorLake-Corei7-1370P.xml",
        "Machine:1(x8) L2Cache:8(x1-4) Core:14",
        "Machine:1(x14) Core:14",
    ),
    (
        "24em64t-2n6c2t-pci.xml",
        "Machine:1(x2) Package:2(x6) Core:12",
        "Machine:1(x2) Package:2(x6) Core:12",
    ),
    (
        "28intel64-2p2g7c-CoDgroups.v1tov2.xml",
        "Machine:1(x2) Package:2(x2) Group:4(x7) Core:28",
        "Machine:1(x2) Package:2(x2) Group:4(x7) Core:28",
    ),
    (
        "32em64t-2n8c2t-pci-noio.xml",
        "Machine:1(x2) Package:2(x8) Core:16",
        "Machine:1(x2) Package:2(x8) Core:16",
    ),
    (
        "48amd64-4d2n6c-sparse.xml",
        "Machine:1(x4) Package:4(x2) L3Cache:8(x6) Core:48",
        "Machine:1(x4) Package:4(x12) Core:48",
    ),
    (
        "Intel-Skylake-2xXeon6140.xml",
        "Machine:1(x2) Package:2(x18) Core:36",
        "Machine:1(x2) Package:2(x18) Core:36",
    ),
    (
        "memorysidecaches.xml",
        "Machine:1(x2) Package:2(x2) Group:4(x10) Core:40",
        "Machine:1(x2) Package:2(x2) Group:4(x10) Core:40",
    ),
    (
        "AMD-17h-Zen-2xEpyc-7451.xml",
        "Machine:1(x2) Package:2(x4) Group:8(x2) L3Cache:16(x3) Core:48",
        "Machine:1(x2) Package:2(x4) Group:8(x6) Core:48",
    ),
    (
        "128arm-2pa2n8cluster4co.xml",
        "Machine:1(x2) Package:2(x2) L3Cache:4(x8) Group:32(x4) Core:128",
        "Machine:1(x2) Package:2(x16) Group:32(x4) Core:128",
    ),
    (
        "128ia64-17n4s2c.xml",
        "Machine:1(x16) Group:16(x4) Package:64(x2) Core:128",
        "Machine:1(x16) Group:16(x4) Package:64(x2) Core:128",
    ),
    (
        "Intel-KnightsLanding-XeonPhi-7210.xml",
        "Machine:1(x32) L2Cache:32(x2) Core:64",
        "Machine:1(x64) Core:64",
    ),
];

#[test]
fn every_real_topology_loads_with_core_leaves() {
    for (file, shared, dropped) in EXPECTED {
        let tree = load(file, LeafKind::Core);
        assert_eq!(&tree.describe_levels(), shared, "{file}");
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/topologies")
            .join(file);
        let flat = TopologySpec::Xml(path)
            .load_with(LeafKind::Core, CacheLevels::Dropped)
            .expect(file);
        assert_eq!(&flat.describe_levels(), dropped, "{file}");
        assert_eq!(
            tree.leaves(),
            flat.leaves(),
            "{file}: leaves numbered alike"
        );
    }
}

#[test]
fn hybrid_cores_give_uneven_pu_leaves() {
    let tree = load("Intel-RaptorLake-Corei7-1370P.xml", LeafKind::Pu);
    assert_eq!(tree.leaf_count(), 20);
    // P-cores have 2 PUs, E-cores 1 and share an L2 by 4: the core level stays, with
    // arities 1 and 2, under the L2 level (a P-core under a single-child vertex).
    assert_eq!(
        tree.describe_levels(),
        "Machine:1(x8) L2Cache:8(x1-4) Core:14(x1-2) PU:20"
    );
    // Two PUs of the first P-core are 2 hops apart; two E-cores of one L2 (PUs 12 and
    // 13) 4; PUs of two P-cores 6.
    assert_eq!(tree.hops(0, 1), 2);
    assert_eq!(tree.hops(12, 13), 4);
    assert_eq!(tree.hops(0, 2), 6);
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/topologies/Intel-RaptorLake-Corei7-1370P.xml");
    let flat = TopologySpec::Xml(path)
        .load_with(LeafKind::Pu, CacheLevels::Dropped)
        .unwrap();
    assert_eq!(flat.describe_levels(), "Machine:1(x14) Core:14(x1-2) PU:20");
    assert_eq!(flat.hops(0, 1), 2);
    assert_eq!(flat.hops(0, 2), 4);
}

#[test]
fn leaves_carry_os_indexes_of_their_first_pu() {
    let tree = load("32em64t-2n8c2t-pci-noio.xml", LeafKind::Core);
    let os: Vec<u32> = tree
        .leaves()
        .iter()
        .filter_map(rankmig::topology::Leaf::os_index)
        .collect();
    assert_eq!(os.len(), 16);
    let mut sorted = os.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), 16, "os indexes are distinct: {os:?}");
}

#[test]
fn bad_xml_and_synthetic_are_errors_naming_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.xml");
    std::fs::write(&bad, "<topology><object type=\"Nonsense\"").unwrap();
    let err = TopologySpec::Xml(bad.clone())
        .load(LeafKind::Core)
        .unwrap_err();
    assert!(err.to_string().contains("bad.xml"), "{err}");
    let missing = dir.path().join("missing.xml");
    let err = TopologySpec::Xml(missing).load(LeafKind::Core).unwrap_err();
    assert!(err.to_string().contains("missing.xml"), "{err}");
    let err = TopologySpec::Synthetic("pack:two".into())
        .load(LeafKind::Core)
        .unwrap_err();
    assert!(err.to_string().contains("pack:two"), "{err}");
}

#[test]
fn synthetic_and_live_load() {
    let t = TopologySpec::Synthetic("pack:2 core:8 pu:2".into())
        .load(LeafKind::Pu)
        .unwrap();
    assert_eq!(
        t.describe_levels(),
        "Machine:1(x2) Package:2(x8) Core:16(x2) PU:32"
    );
    let live = TopologySpec::Live.load(LeafKind::Core).unwrap();
    assert!(live.leaf_count() >= 1);
}

#[test]
fn a_die_level_is_named_die() {
    let t = TopologySpec::Synthetic("pack:2 die:2 core:4 pu:1".into())
        .load(LeafKind::Core)
        .unwrap();
    assert_eq!(
        t.describe_levels(),
        "Machine:1(x2) Package:2(x2) Die:4(x4) Core:16"
    );
}

/// A copy of a real export in a temporary directory, changed by `edit`.
fn edited_copy(dir: &std::path::Path, name: &str, edit: impl Fn(&str) -> String) -> PathBuf {
    let real =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/topologies/16em64t-4s2c2t.xml");
    let text = std::fs::read_to_string(real).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, edit(&text)).unwrap();
    path
}

#[test]
fn a_newer_xml_format_and_a_truncated_file_get_different_reasons() {
    let dir = tempfile::tempdir().unwrap();
    let v3 = edited_copy(dir.path(), "v3.xml", |t| {
        t.replacen(
            "<topology version=\"2.0\">",
            "<topology version=\"3.0\">",
            1,
        )
    });
    let err = TopologySpec::Xml(v3).load(LeafKind::Core).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("v3.xml"), "{msg}");
    assert!(msg.contains("version 3.0"), "{msg}");
    assert!(msg.contains("newer hwloc"), "{msg}");

    let cut = edited_copy(dir.path(), "cut.xml", |t| t[..t.len() / 2].to_owned());
    let err = TopologySpec::Xml(cut).load(LeafKind::Core).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("cut.xml"), "{msg}");
    assert!(!msg.contains("version"), "{msg}");
    assert!(msg.contains("truncated"), "{msg}");
}
