//! Shared CPU caches are levels of the trees read from hwloc, and TreeMatch keeps
//! coupled ranks inside them: 16 heavily communicating triples on L3 caches shared by 3
//! cores (as on AMD EPYC CCXs) and 16 pairs on 2-core L2 tiles (as on a Xeon Phi), on
//! hwloc synthetic machines and on real exports of both. The
//! same mappings with the caches dropped split groups across caches, so the cache level
//! is what keeps them together.

use std::process::Command;

use rankmig::matrix::{CommMatrix, SymGraph};
use rankmig::topology::{CacheLevels, LeafKind, TopologySpec, Tree};
use rankmig::treematch::metrics::{LinkCosts, evaluate};
use rankmig::treematch::{MapOptions, map};

/// 2 packages of 8 L3 caches shared by 3 cores: 48 cores, 16 L3s.
const L3_MACHINE: &str = "pack:2 l3:8 core:3 pu:1";
/// One package of 16 L2 tiles of 2 cores with 4 threads each: 32 cores, 16 tiles.
const TILE_MACHINE: &str = "pack:1 l2:16 core:2 pu:4";
/// Number of coupled groups.
const GROUPS: usize = 16;

fn load(description: &str, caches: CacheLevels) -> Tree {
    load_spec(&TopologySpec::Synthetic(description.to_owned()), caches)
}

fn load_spec(spec: &TopologySpec, caches: CacheLevels) -> Tree {
    spec.load_with(LeafKind::Core, caches)
        .unwrap_or_else(|e| panic!("{spec}: {e}"))
}

/// A real hwloc export of the test data.
fn xml(file: &str) -> TopologySpec {
    TopologySpec::Xml(
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/topologies")
            .join(file),
    )
}

/// `GROUPS` groups of `size` ranks, group g = {g, g + 16, g + 32, ...} (so that rank
/// order does not line the groups up with the caches), each pair inside a group
/// exchanging 1e6 bytes, and a light ring between the groups (group g's first rank
/// sends 10 bytes to group g+1's).
fn coupled_groups(size: usize) -> (CommMatrix, Vec<Vec<usize>>) {
    let groups: Vec<Vec<usize>> = (0..GROUPS)
        .map(|g| (0..size).map(|k| g + k * GROUPS).collect())
        .collect();
    let mut triples = Vec::new();
    for group in &groups {
        for (i, &a) in group.iter().enumerate() {
            for &b in &group[i + 1..] {
                triples.push((a, b, 1e6));
            }
        }
    }
    for g in 0..GROUPS {
        triples.push((groups[g][0], groups[(g + 1) % GROUPS][0], 10.0));
    }
    (CommMatrix::from_triples(GROUPS * size, triples), groups)
}

/// The cache (vertex of the `level_name` level of `tree`) of every leaf.
fn cache_of_leaves(tree: &Tree, level_name: &str) -> Vec<u32> {
    let level = tree
        .level_names()
        .iter()
        .position(|n| n == level_name)
        .unwrap_or_else(|| panic!("no {level_name} level in {}", tree.describe_levels()));
    tree.ancestor_table().swap_remove(level)
}

/// How many groups have all their ranks under one cache.
fn groups_inside_one_cache(groups: &[Vec<usize>], leaf_of_rank: &[usize], cache: &[u32]) -> usize {
    groups
        .iter()
        .filter(|group| {
            let first = cache[leaf_of_rank[group[0]]];
            group.iter().all(|&r| cache[leaf_of_rank[r]] == first)
        })
        .count()
}

fn map_leaves(graph: &SymGraph, tree: &Tree) -> Vec<usize> {
    map(graph, tree, &MapOptions::default())
        .expect("mapping")
        .leaves()
        .to_vec()
}

/// Maps the coupled groups on the machine with and without its shared caches; returns
/// how many groups land inside one cache each time (judged on the caches of the
/// machine, the leaves being numbered alike in both trees).
fn inside_with_and_without(spec: &TopologySpec, size: usize, level_name: &str) -> (usize, usize) {
    let kept = load_spec(spec, CacheLevels::Shared);
    let dropped = load_spec(spec, CacheLevels::Dropped);
    assert_eq!(kept.leaves(), dropped.leaves(), "leaves numbered alike");
    assert!(
        !dropped.level_names().iter().any(|n| n == level_name),
        "{}",
        dropped.describe_levels()
    );
    let cache = cache_of_leaves(&kept, level_name);
    let (matrix, groups) = coupled_groups(size);
    let graph = matrix.symmetric();
    let with = groups_inside_one_cache(&groups, &map_leaves(&graph, &kept), &cache);
    let without = groups_inside_one_cache(&groups, &map_leaves(&graph, &dropped), &cache);
    (with, without)
}

#[test]
fn synthetic_caches_shared_by_several_cores_are_levels() {
    let kept = load(L3_MACHINE, CacheLevels::Shared);
    assert_eq!(
        kept.describe_levels(),
        "Machine:1(x2) Package:2(x8) L3Cache:16(x3) Core:48"
    );
    let dropped = load(L3_MACHINE, CacheLevels::Dropped);
    assert_eq!(
        dropped.describe_levels(),
        "Machine:1(x2) Package:2(x24) Core:48"
    );
    let tiles = load(TILE_MACHINE, CacheLevels::Shared);
    assert_eq!(
        tiles.describe_levels(),
        "Machine:1(x16) L2Cache:16(x2) Core:32"
    );
    // Leaves 0 and 1 share a tile, 1 and 2 do not.
    assert_eq!(tiles.hops(0, 1), 2);
    assert_eq!(tiles.hops(1, 2), 4);
}

#[test]
fn a_cache_of_a_single_core_is_not_a_level() {
    // An L2 per core and an L1 per core: nothing shared, nothing kept.
    let tree = load("pack:2 l2:4 l1:1 core:1 pu:2", CacheLevels::Shared);
    assert_eq!(tree.describe_levels(), "Machine:1(x2) Package:2(x4) Core:8");
    let threads = TopologySpec::Synthetic("pack:2 l2:4 l1:1 core:1 pu:2".into())
        .load_with(LeafKind::Pu, CacheLevels::Shared)
        .unwrap();
    assert_eq!(
        threads.describe_levels(),
        "Machine:1(x2) Package:2(x4) Core:8(x2) PU:16"
    );
}

#[test]
fn coupled_triples_land_inside_shared_l3_caches() {
    let (with, without) = inside_with_and_without(&synthetic(L3_MACHINE), 3, "L3Cache");
    assert_eq!(with, GROUPS, "every triple inside one L3");
    assert!(
        without < GROUPS,
        "without the L3 level the mapper cannot see the caches ({without} triples inside)"
    );
}

#[test]
fn coupled_pairs_land_inside_shared_l2_tiles() {
    let (with, without) = inside_with_and_without(&synthetic(TILE_MACHINE), 2, "L2Cache");
    assert_eq!(with, GROUPS, "every pair inside one tile");
    assert!(
        without < GROUPS,
        "without the L2 level the mapper cannot see the tiles ({without} pairs inside)"
    );
}

fn synthetic(description: &str) -> TopologySpec {
    TopologySpec::Synthetic(description.to_owned())
}

#[test]
fn on_a_real_epyc_export_triples_land_inside_its_ccx_l3_caches() {
    // 2 x EPYC 7451: 48 cores, 16 L3 caches of 3 cores, the machine of the report.
    let (with, without) =
        inside_with_and_without(&xml("AMD-17h-Zen-2xEpyc-7451.xml"), 3, "L3Cache");
    assert_eq!(with, GROUPS, "every triple inside one L3");
    assert!(
        without < GROUPS,
        "{without} triples inside without the L3 level"
    );
}

#[test]
fn on_a_real_xeon_phi_export_pairs_land_inside_its_tiles() {
    // Xeon Phi 7210: 64 cores, 32 L2 tiles of 2 cores; 16 pairs.
    let (with, without) =
        inside_with_and_without(&xml("Intel-KnightsLanding-XeonPhi-7210.xml"), 2, "L2Cache");
    assert_eq!(with, GROUPS, "every pair inside one tile");
    assert!(
        without < GROUPS,
        "{without} pairs inside without the L2 level"
    );
}

#[test]
fn default_costs_make_a_shared_cache_cheaper_than_the_level_above() {
    let tree = load(L3_MACHINE, CacheLevels::Shared);
    let costs = LinkCosts::default_for(tree.depth());
    let pair = CommMatrix::from_triples(2, [(0, 1, 1.0)]).symmetric();
    let sum_com = |a: usize, b: usize| evaluate(&pair, &tree, &[a, b], &costs).unwrap().sum_com;
    // Leaves 0 and 1 share an L3; 0 and 3 share a package only; 0 and 24 nothing.
    let (l3, package, machine) = (sum_com(0, 1), sum_com(0, 3), sum_com(0, 24));
    assert!(
        l3 < package && package < machine,
        "{l3} {package} {machine}"
    );
    assert_eq!((l3, package, machine), (1.0, 11.0, 111.0));
}

/// `rankmig map` on an edge-list file of the triples; the leaf of every rank.
fn cli_map(matrix: &std::path::Path, extra: &[&str]) -> Vec<usize> {
    let topology = format!("synthetic:{L3_MACHINE}");
    let out = Command::new(env!("CARGO_BIN_EXE_rankmig"))
        .args(["map", "--matrix"])
        .arg(matrix)
        .args(["--topology", &topology])
        .args(extra)
        .output()
        .expect("run rankmig");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut leaves = Vec::new();
    for line in stdout.lines().filter(|l| !l.starts_with('#')) {
        let fields: Vec<usize> = line
            .split_whitespace()
            .map(|f| f.parse().expect("RANK LEAF"))
            .collect();
        assert_eq!(fields, [leaves.len(), fields[1]], "{line}");
        leaves.push(fields[1]);
    }
    leaves
}

#[test]
fn rankmig_map_keeps_triples_inside_l3_unless_told_to_drop_caches() {
    let (matrix, groups) = coupled_groups(3);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("triples.edges");
    let mut text = String::new();
    for i in 0..matrix.order() {
        for (j, w) in matrix.symmetric().neighbors(i) {
            if j > i {
                text.push_str(&format!("{i} {j} {w}\n"));
            }
        }
    }
    std::fs::write(&path, text).unwrap();
    let cache = cache_of_leaves(&load(L3_MACHINE, CacheLevels::Shared), "L3Cache");
    let kept = cli_map(&path, &[]);
    assert_eq!(kept.len(), 48);
    assert_eq!(groups_inside_one_cache(&groups, &kept, &cache), GROUPS);
    let dropped = cli_map(&path, &["--no-shared-caches"]);
    assert!(groups_inside_one_cache(&groups, &dropped, &cache) < GROUPS);
}
