//! The two-step planner: the paper's scenario, invariants over random cases, bad input.

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::support::data;
use proptest::prelude::*;
use rankmig::availability::{Availability, AvailabilityFormat};
use rankmig::matrix::{CommMatrix, MatrixFormat, SymGraph};
use rankmig::planner::{Location, Placement, Plan, PlanError, PlanOptions, Step2, place, plan};
use rankmig::topology::{LeafKind, TopologySpec, Tree};

fn node_16() -> Tree {
    TopologySpec::Synthetic("pack:2 core:8 pu:1".into())
        .load(LeafKind::Core)
        .unwrap()
}

fn avail(text: &str) -> Availability {
    Availability::parse(text, "test", AvailabilityFormat::Auto).unwrap()
}

/// Checks every invariant of a plan; returns nothing, panics with a reason.
fn check_invariants(av: &Availability, before: &Placement, p: &Plan) {
    let n = before.len();
    let moved: BTreeSet<usize> = p.moves.iter().map(|m| m.rank).collect();
    for r in 0..n {
        if !moved.contains(&r) {
            assert_eq!(
                before.location(r),
                p.placement.location(r),
                "rank {r} moved without a move"
            );
        }
    }
    for m in &p.moves {
        assert_eq!(&m.from, before.location(m.rank));
        assert_eq!(&m.to, p.placement.location(m.rank));
        assert_ne!(m.from.node, m.to.node, "a move stays on its node");
    }
    assert_eq!(p.moves.len(), p.minimum_moves, "moves are not the minimum");
    let total = av.total_cores();
    for (name, load) in &p.nodes {
        let max_procs = (av.cores(name) * n).div_ceil(total);
        assert_eq!(load.max_procs, max_procs);
        assert!(
            load.after <= max_procs,
            "{name}: {} > maxProcs {max_procs}",
            load.after
        );
    }
    for l in p.placement.locations() {
        assert!(
            av.cores(&l.node) > 0,
            "rank left on unavailable node {}",
            l.node
        );
    }
    let senders: BTreeSet<&str> = p.moves.iter().map(|m| m.from.node.as_str()).collect();
    let receivers: BTreeSet<&str> = p.moves.iter().map(|m| m.to.node.as_str()).collect();
    assert!(
        senders.is_disjoint(&receivers),
        "a node both sends and receives"
    );
}

#[test]
fn paper_scenario_moves_the_fixed_number_of_ranks_with_every_matrix() {
    let before0 = Placement::load(&data("scenario/initial_placement.txt")).unwrap();
    let tree = node_16();
    for file in [
        "bt.W.64",
        "cg.W.64",
        "ft.W.64",
        "himeno.M.4x4x4.64",
        "is.W.64",
        "lu.W.64",
    ] {
        let m =
            CommMatrix::load(&data(&format!("matrices/{file}.mat")), MatrixFormat::Dense).unwrap();
        let g = m.symmetric();
        for step2 in [Step2::Paper, Step2::Residents] {
            let mut placement = before0.clone();
            let mut moves = Vec::new();
            for step in 0..=5 {
                let av = Availability::load(
                    &data(&format!("scenario/step{step}.avail")),
                    AvailabilityFormat::Auto,
                )
                .unwrap();
                let p = plan(&av, &placement, &g, &tree, &PlanOptions { step2 }).unwrap();
                check_invariants(&av, &placement, &p);
                moves.push(p.moves.len());
                placement = p.placement;
            }
            assert_eq!(moves[..3], [0, 16, 16], "{file}");
            // Step 3 empties node03, which received 4, 5 or 6 of the 16 ranks of step 2
            // (three targets with 6 free slots each): 20, 21 or 22 moves, always the minimum.
            assert!((20..=22).contains(&moves[3]), "{file}: {moves:?}");
            assert_eq!(moves[4..], [32, 64], "{file}");
        }
    }
}

#[test]
fn leavers_are_the_ranks_that_talk_least_to_the_stayers() {
    // Node a holds 0-3 (0-1 and 2-3 talk heavily); a loses half its cores.
    let before = Placement::parse("0 a 0\n1 a 1\n2 a 2\n3 a 3\n", "p").unwrap();
    let m = CommMatrix::from_triples(4, [(0, 1, 100.0), (2, 3, 100.0), (1, 2, 1.0)]);
    let av = avail("a 2\nb 2\n");
    let p = plan(
        &av,
        &before,
        &m.symmetric(),
        &node_16(),
        &PlanOptions::default(),
    )
    .unwrap();
    let moved: BTreeSet<usize> = p.moves.iter().map(|m| m.rank).collect();
    assert!(
        moved == [0, 1].into() || moved == [2, 3].into(),
        "{moved:?}"
    );
}

#[test]
fn residents_variant_lands_leavers_next_to_their_partners() {
    // 4 ranks of a vanish; 0 talks to b's residents, 1 to c's.
    let before = Placement::parse("0 a 0\n1 a 1\n2 b 0\n3 c 0\n", "p").unwrap();
    let m = CommMatrix::from_triples(4, [(0, 2, 100.0), (1, 3, 100.0)]);
    let av = avail("b 2\nc 2\n");
    let p = plan(
        &av,
        &before,
        &m.symmetric(),
        &node_16(),
        &PlanOptions {
            step2: Step2::Residents,
        },
    )
    .unwrap();
    assert_eq!(p.placement.location(0).node, "b");
    assert_eq!(p.placement.location(1).node, "c");
    assert!(p.hop_bytes_after < p.hop_bytes_before);
}

#[test]
fn bad_input_is_refused_and_unlisted_nodes_are_vacated() {
    let before = Placement::parse("0 a 0\n1 a 1\n2 z 0\n", "p").unwrap();
    let g3 = CommMatrix::from_triples(3, [(0, 1, 1.0)]).symmetric();
    let g4 = CommMatrix::from_triples(4, [(0, 1, 1.0)]).symmetric();
    let e = plan(
        &avail("a 2\n"),
        &before,
        &g4,
        &node_16(),
        &PlanOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            PlanError::RankCount {
                placement: 3,
                matrix: 4
            }
        ),
        "{e}"
    );
    // z is not in the file: its rank moves; a keeps its two.
    let p = plan(
        &avail("a 2\nb 1\n"),
        &before,
        &g3,
        &node_16(),
        &PlanOptions::default(),
    )
    .unwrap();
    assert_eq!(p.moves.len(), 1);
    assert_eq!(p.moves[0].rank, 2);
    assert_eq!(p.moves[0].to.node, "b");
    let e = Availability::parse("a 0\n", "av", AvailabilityFormat::Auto).unwrap_err();
    assert!(e.to_string().contains("keeps its current placement"));
    let far = Placement::parse("0 a 99\n1 a 1\n2 a 2\n", "p").unwrap();
    let e = plan(
        &avail("a 4\n"),
        &far,
        &g3,
        &node_16(),
        &PlanOptions::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("core 99 does not exist"), "{e}");
}

#[test]
fn place_fills_nodes_up_to_max_procs_and_oversubscribes_when_needed() {
    let m = CommMatrix::load(&data("matrices/cg.W.64.mat"), MatrixFormat::Dense).unwrap();
    let g = m.symmetric();
    let p = place(&avail("n1 16\nn2 16\nn3 16\nn4 16\n"), &g, &node_16()).unwrap();
    assert_eq!(p.len(), 64);
    let distinct: BTreeSet<&Location> = p.locations().iter().collect();
    assert_eq!(distinct.len(), 64, "one rank per core");
    let p = place(&avail("n1 8\nn2 8\n"), &g, &node_16()).unwrap();
    assert_eq!(p.ranks_count_on("n1"), 32);
    assert!(
        p.locations()
            .iter()
            .filter(|l| l.node == "n1")
            .all(|l| l.core < 8)
    );
    let p = place(&avail("n1 4 cpus=8-11\n"), &g, &node_16()).unwrap();
    assert!(p.locations().iter().all(|l| (8..12).contains(&l.core)));
}

/// (ranks, initial node of each rank, edges, new cores of each node, weight seed)
type Case = (usize, Vec<usize>, Vec<(usize, usize)>, Vec<usize>, u64);

fn random_case() -> impl Strategy<Value = Case> {
    (4usize..48).prop_flat_map(|n| {
        (
            Just(n),
            proptest::collection::vec(0usize..5, n),
            proptest::collection::vec((0..n, 0..n), 0..(3 * n)),
            proptest::collection::vec(0usize..17, 6),
            any::<u64>(),
        )
    })
}

fn build_case(
    n: usize,
    nodes: &[usize],
    edges: &[(usize, usize)],
    seed: u64,
) -> (Placement, SymGraph) {
    let mut next_core = [0usize; 5];
    let locations = (0..n)
        .map(|r| {
            let node = nodes[r];
            let core = next_core[node] % 16;
            next_core[node] += 1;
            Location {
                node: format!("n{node}"),
                core,
            }
        })
        .collect();
    let triples = edges
        .iter()
        .enumerate()
        .map(|(k, &(i, j))| (i, j, ((seed as usize ^ k) % 1000 + 1) as f64));
    (
        Placement::new(locations),
        CommMatrix::from_triples(n, triples).symmetric(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn plans_keep_every_invariant((n, nodes, edges, cores, seed) in random_case()) {
        let text: String = cores.iter().enumerate().map(|(i, c)| format!("n{i} {c}\n")).collect();
        prop_assume!(cores.iter().sum::<usize>() > 0);
        let av = avail(&text);
        let (before, g) = build_case(n, &nodes, &edges, seed);
        let tree = node_16();
        for step2 in [Step2::Paper, Step2::Residents] {
            let p = plan(&av, &before, &g, &tree, &PlanOptions { step2 }).unwrap();
            check_invariants(&av, &before, &p);
            let again = plan(&av, &before, &g, &tree, &PlanOptions { step2 }).unwrap();
            prop_assert_eq!(&p, &again, "same inputs, same plan");
        }
    }
}

#[test]
fn example_availability_files_parse() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("availability");
    let four = Availability::load(&dir.join("4x8.avail"), AvailabilityFormat::Auto).unwrap();
    let host = Availability::load(&dir.join("hostfile.avail"), AvailabilityFormat::Auto).unwrap();
    assert_eq!(four.total_cores(), 32);
    assert!(four.diff(&host).is_empty());
    let lost = Availability::load(
        &dir.join("lost-n1-spare-n5.avail"),
        AvailabilityFormat::Auto,
    )
    .unwrap();
    assert_eq!(
        four.diff(&lost).to_string(),
        "added n5 (8 cores); removed n1 (had 8 cores)"
    );
    let half = Availability::load(&dir.join("half-cores.avail"), AvailabilityFormat::Auto).unwrap();
    assert_eq!(
        half.node("n3").unwrap().cpus.as_deref(),
        Some(&[0, 1, 2, 3][..])
    );
}

/// Hosts with different hwloc trees (real XML exports): each node is planned on its
/// own tree. A 16-core node and a 36-core Skylake node; the small node shrinks to 8 cores
/// and its 8 leavers land on the big node's free cores (24..35), which a plan on the
/// small node's tree alone cannot even name.
#[test]
fn nodes_with_different_trees_are_planned_on_their_own_tree() {
    use rankmig::planner::{NodeTrees, plan_on};
    let small = TopologySpec::Xml(data("topologies/32em64t-2n8c2t-pci-noio.xml"))
        .load(LeafKind::Core)
        .unwrap();
    let big = TopologySpec::Xml(data("topologies/Intel-Skylake-2xXeon6140.xml"))
        .load(LeafKind::Core)
        .unwrap();
    assert_eq!((small.leaf_count(), big.leaf_count()), (16, 36));
    let mut locations: Vec<Location> = (0..16)
        .map(|core| Location {
            node: "small".into(),
            core,
        })
        .collect();
    locations.extend((0..24).map(|core| Location {
        node: "big".into(),
        core,
    }));
    let before = Placement::new(locations);
    let graph = CommMatrix::load(&data("matrices/cg.W.64.mat"), MatrixFormat::Auto)
        .unwrap()
        .symmetric()
        .subgraph(&(0..40).collect::<Vec<_>>());
    let av = avail("small 8\nbig 36\n");

    let uniform = plan(&av, &before, &graph, &small, &PlanOptions::default());
    assert!(
        matches!(uniform, Err(PlanError::NoSuchCore { ref node, .. }) if node == "big"),
        "{uniform:?}"
    );

    let trees = NodeTrees::uniform(&small).with_node("big", big.clone());
    let p = plan_on(&av, &before, &graph, &trees, &PlanOptions::default()).unwrap();
    check_invariants(&av, &before, &p);
    assert_eq!(p.moves.len(), 8);
    let landed: BTreeSet<usize> = p.moves.iter().map(|m| m.to.core).collect();
    assert!(
        p.moves
            .iter()
            .all(|m| m.from.node == "small" && m.to.node == "big")
    );
    assert_eq!(landed.len(), 8, "two leavers share a core: {landed:?}");
    assert!(landed.iter().all(|c| (24..36).contains(c)), "{landed:?}");
    // Hop-bytes use each node's depth: a pair split between the nodes costs
    // depth(small) + depth(big) + 2 edges.
    let a = Location {
        node: "small".into(),
        core: 0,
    };
    let b = Location {
        node: "big".into(),
        core: 0,
    };
    assert_eq!(
        rankmig::planner::location_hops_on(&trees, &a, &b),
        small.depth() + big.depth() + 2
    );
}

/// Issue 11: on a node of thousands of cores the residents refinement tries only the
/// slots near each leaver's partners (more than 4 million leaver × slot pairs), where it
/// tried every slot before (quadratic: 34 s for a 16 384-core node). It still only
/// improves on the paper's step 2, and the plan keeps every invariant.
#[test]
fn residents_refinement_on_a_large_node_improves_on_the_paper_step() {
    let tree = Tree::from_arities(&[8, 8, 64]).unwrap(); // 4096 cores
    let n = 4096;
    let g = rankmig::treematch::patterns::Pattern::Stencil2d
        .generate(n, 1)
        .symmetric();
    let before = Placement::new(
        (0..n)
            .map(|r| Location {
                node: "n1".into(),
                core: r,
            })
            .collect(),
    );
    // n1 keeps 1365 ranks, 2731 leave for n2: 2731 x 2731 > 4 million pairs.
    let av = avail("n1 2048\nn2 4096\n");
    let paper = plan(
        &av,
        &before,
        &g,
        &tree,
        &PlanOptions {
            step2: Step2::Paper,
        },
    )
    .unwrap();
    let residents = plan(
        &av,
        &before,
        &g,
        &tree,
        &PlanOptions {
            step2: Step2::Residents,
        },
    )
    .unwrap();
    check_invariants(&av, &before, &residents);
    assert!(residents.moves.len() * residents.moves.len() > 4_000_000);
    assert!(
        residents.hop_bytes_after <= paper.hop_bytes_after,
        "{} > {}",
        residents.hop_bytes_after,
        paper.hop_bytes_after
    );
}

/// The hwloc XML tree of `file` (cores as leaves), from tests/data/topologies.
fn xml_tree(file: &str) -> Tree {
    let path = data(&format!("topologies/{file}"));
    let spec: TopologySpec = format!("xml:{}", path.display()).parse().unwrap();
    spec.load(LeafKind::Core).unwrap()
}

/// The package (child of the root's level holding packages) of each leaf of `tree`:
/// the index of its ancestor at the level named `Package`.
fn package_of_leaves(tree: &Tree) -> Vec<usize> {
    let level = tree
        .level_names()
        .iter()
        .position(|n| n == "Package")
        .expect("a Package level");
    let ancestors = tree.ancestor_table();
    (0..tree.leaf_count())
        .map(|leaf| ancestors[level][leaf] as usize)
        .collect()
}

/// Ranks of 2 and 4 cores on two real machines, planned with `RankSlots`: every rank
/// lands on a group of exactly C cores, no core is in two groups, a group lies in one
/// package whenever the package's cores make whole groups, a node of N cores holds at
/// most ⌊N/C⌋ ranks, and the ranks of a vanishing node move by the minimum number.
#[test]
fn ranks_of_two_and_four_cores_are_planned_on_groups_of_real_machines() {
    use rankmig::planner::RankSlots;
    let graph = CommMatrix::load(&data("matrices/cg.W.16.mat"), MatrixFormat::Auto)
        .unwrap()
        .symmetric();
    for file in ["AMD-17h-Zen-2xEpyc-7451.xml", "32em64t-2n8c2t-pci-noio.xml"] {
        let node = xml_tree(file);
        let packages = package_of_leaves(&node);
        let cores = node.leaf_count();
        for c in [2usize, 4] {
            let slots = RankSlots::new(c);
            let groups = node.rank_groups(c);
            assert_eq!(groups.len(), cores / c, "{file}, C={c}: ⌊N/C⌋ groups");
            let mut seen = BTreeSet::new();
            for g in &groups {
                assert_eq!(g.len(), c, "{file}: {g:?}");
                assert!(
                    g.iter().all(|&leaf| seen.insert(leaf)),
                    "{file}: {g:?} twice"
                );
            }
            // Whole-package groups: each package's cores divide by C here.
            for g in &groups {
                let in_one = g.iter().all(|&l| packages[l] == packages[g[0]]);
                assert!(in_one, "{file}, C={c}: group {g:?} straddles packages");
            }
            // 16 ranks on nodes that hold 16·C cores in all, then n1 vanishes.
            let per_node = 16 * c / 4;
            let text: String = (1..=4).map(|i| format!("n{i} {per_node}\n")).collect();
            let before = slots.place(&avail(&text), &graph, &node).unwrap();
            for l in before.locations() {
                assert!(
                    l.core < groups.len(),
                    "{file}: slot {} of {}",
                    l.core,
                    groups.len()
                );
            }
            let text_after = format!("n1 0\n{}n5 {per_node}\n", &text[text.find("n2").unwrap()..]);
            let p = slots
                .plan(
                    &avail(&text_after),
                    &before,
                    &graph,
                    &node,
                    &PlanOptions::default(),
                )
                .unwrap();
            assert_eq!(p.moves.len(), before.ranks_count_on("n1"), "{file}, C={c}");
            assert_eq!(p.moves.len(), p.minimum_moves);
            assert!(p.moves.iter().all(|m| m.to.node == "n5"), "{file}, C={c}");
            for (name, load) in &p.nodes {
                assert!(load.after * c <= load.cores, "{name}: {load:?}");
            }
            let mut taken = BTreeSet::new();
            for l in p.placement.locations() {
                assert!(
                    taken.insert((l.node.clone(), l.core)),
                    "slot {l:?} given twice"
                );
            }
        }
    }
}

/// A rank on a core that its node's `cpus=` list no longer offers leaves that core
/// even when the counts would keep it (the contention watch withdraws a hogged core
/// so): it may land on a free offered core of the same node; the other ranks stay.
#[test]
fn a_rank_on_a_withdrawn_core_leaves_it_and_the_others_stay() {
    let g = CommMatrix::from_triples(3, [(0, 1, 10.0), (1, 2, 10.0)]).symmetric();
    let before = Placement::parse("0 n1 0\n1 n1 1\n2 n1 2\n", "before").unwrap();
    for step2 in [Step2::Paper, Step2::Residents] {
        let av = avail("n1 3 cpus=0,2,3\nn2 4\n");
        let p = plan(&av, &before, &g, &node_16(), &PlanOptions { step2 }).unwrap();
        assert_eq!(p.moves.len(), 1, "{:?}", p.moves);
        assert_eq!(p.minimum_moves, 1);
        let m = &p.moves[0];
        assert_eq!(
            (m.rank, &m.from),
            (
                1,
                &Location {
                    node: "n1".into(),
                    core: 1
                }
            )
        );
        assert_ne!(
            m.to,
            Location {
                node: "n1".into(),
                core: 1
            },
            "not back on the withdrawn core"
        );
        assert!(
            m.to.node != "n1" || m.to.core == 3,
            "core 3 is n1's free offered core: {m:?}"
        );
        assert_eq!(
            p.placement.location(0),
            &Location {
                node: "n1".into(),
                core: 0
            }
        );
        assert_eq!(
            p.placement.location(2),
            &Location {
                node: "n1".into(),
                core: 2
            }
        );
    }
    // Every core of n1 offered again (n1 alone: its share holds the 3 ranks):
    // nothing moves.
    let av = avail("n1 4\n");
    let p = plan(&av, &before, &g, &node_16(), &PlanOptions::default()).unwrap();
    assert!(p.moves.is_empty(), "{:?}", p.moves);
}
