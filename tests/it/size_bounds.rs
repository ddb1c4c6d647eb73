//! Sizes a user writes (issue 11, section 3): nodes of a cluster, synthetic topology
//! sizes, `-n`, rank numbers of a matrix. Each bound is documented; a value above it
//! is a clean error naming the value, never a panic or an allocation proportional to
//! it. The CLI runs are limited in time and address space (`ulimit -v`), so a
//! regression fails the test instead of exhausting the machine.

use crate::support::limited::rankmig_limited;
use crate::support::{stderr, write};
use rankmig::topology::{LeafKind, MAX_LEAVES, TopologySpec, Tree};

#[test]
fn a_cluster_of_too_many_nodes_is_an_error() {
    let node = Tree::from_arities(&[2, 8]).unwrap();
    let e = Tree::cluster(&node, 1 << 30).unwrap_err().to_string();
    assert!(
        e.contains("1073741824") && e.contains(&MAX_LEAVES.to_string()),
        "{e}"
    );
    let e = Tree::cluster(&node, usize::MAX).unwrap_err().to_string();
    assert!(e.contains(&usize::MAX.to_string()), "{e}");
    // At the bound it builds.
    let t = Tree::cluster(&node, MAX_LEAVES / 16).unwrap();
    assert_eq!(t.leaf_count(), MAX_LEAVES);
}

#[test]
fn symmetric_arities_above_the_bound_are_an_error() {
    let e = Tree::from_arities(&[1 << 20, 1 << 20])
        .unwrap_err()
        .to_string();
    assert!(e.contains("1099511627776") || e.contains("arities"), "{e}");
    let e = Tree::from_arities(&[usize::MAX, 2])
        .unwrap_err()
        .to_string();
    assert!(e.contains(&MAX_LEAVES.to_string()), "{e}");
}

#[test]
fn a_huge_synthetic_topology_is_refused_before_hwloc_builds_it() {
    let desc = "pack:100000 core:100000 pu:1";
    let e = TopologySpec::Synthetic(desc.into())
        .load(LeafKind::Core)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(desc) && e.contains(&MAX_LEAVES.to_string()),
        "{e}"
    );
    let desc = "pack:18446744073709551615 core:2";
    let e = TopologySpec::Synthetic(desc.into())
        .load(LeafKind::Core)
        .unwrap_err()
        .to_string();
    assert!(e.contains(desc), "{e}");
    // Ordinary descriptions still load.
    let t = TopologySpec::Synthetic("pack:2 core:8 pu:2".into())
        .load(LeafKind::Pu)
        .unwrap();
    assert_eq!(t.leaf_count(), 32);
}

#[test]
fn cli_nodes_above_the_bound_is_a_clean_error() {
    let out = rankmig_limited(&[
        "topology",
        "--topology",
        "synthetic:pack:2 core:8 pu:1",
        "--nodes",
        "4294967295",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("4294967295"), "{}", stderr(&out));
}

#[test]
fn cli_rank_count_above_the_bound_is_a_clean_error() {
    let dir = tempfile::tempdir().unwrap();
    let av = dir.path().join("av.txt");
    std::fs::write(&av, "localhost 2\n").unwrap();
    for n in ["18446744073709551615", "1048577"] {
        let out = rankmig_limited(&[
            "run",
            "-n",
            n,
            "--availability",
            av.to_str().unwrap(),
            "--",
            "true",
        ]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(n), "{}", stderr(&out));
        assert!(stderr(&out).contains("--ranks"), "{}", stderr(&out));
    }
}

#[test]
fn cli_edge_list_naming_rank_4294967295_is_a_clean_error() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "big.edges", "0 1 5\n1 0 5\n4294967295 0 1\n");
    let out = rankmig_limited(&[
        "map",
        "--matrix",
        &m,
        "--matrix-format",
        "edges",
        "--topology",
        "synthetic:pack:2 core:8 pu:1",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("big.edges:3") && err.contains("4294967295"),
        "{err}"
    );
}

#[test]
fn planning_on_a_65536_core_node_does_not_allocate_its_square() {
    use rankmig::availability::{Availability, AvailabilityFormat};
    use rankmig::matrix::CommMatrix;
    use rankmig::planner::{Placement, PlanOptions, plan};
    // 65536 cores: a table of core-to-core distances would take 32 GiB.
    let node = Tree::from_arities(&[64, 1024]).unwrap();
    let now = Placement::parse("0 n1 0\n1 n1 1\n2 n2 0\n3 n2 1\n", "p").unwrap();
    let av = Availability::parse("n1 0\nn2 2\nn3 2\n", "av", AvailabilityFormat::Auto).unwrap();
    let m = CommMatrix::from_triples(4, [(0, 1, 9.0), (2, 3, 9.0), (1, 2, 1.0)]);
    let p = plan(&av, &now, &m.symmetric(), &node, &PlanOptions::default()).unwrap();
    assert_eq!(p.moves.len(), 2);
    assert!(p.moves.iter().all(|mv| mv.to.node == "n3"));
}

#[test]
fn bare_counts_of_a_synthetic_topology_are_bounded_too() {
    // hwloc reads "1000 1000 1000" as three levels: a billion objects (found by the
    // synthetic-string fuzzer, tests/fuzz_corpus/synthetic).
    for desc in [
        "1000 1000 1000",
        "pack:1000 1000 core:1000",
        "2 4 0 1000000000",
    ] {
        let e = TopologySpec::Synthetic(desc.into())
            .load(LeafKind::Core)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(desc) && e.contains(&MAX_LEAVES.to_string()),
            "{e}"
        );
    }
    let t = TopologySpec::Synthetic("2 4 8".into())
        .load(LeafKind::Pu)
        .unwrap();
    assert_eq!(t.leaf_count(), 64);
}

#[test]
fn synthetic_descriptions_hwloc_would_build_for_minutes_are_refused() {
    // hwloc took 142 s on this one and 4.7 s on the second (found by the fuzzer).
    // Refused by the bound, before hwloc builds anything (the message says so).
    for desc in ["pack:2 core:8192 pu:1", "2 48 8 8 8", "2 4 8 4 8 8 8"] {
        let e = TopologySpec::Synthetic(desc.into())
            .load(LeafKind::Core)
            .unwrap_err()
            .to_string();
        assert!(e.contains(desc) && e.contains("--nodes"), "{e}");
    }
    let t = TopologySpec::Synthetic("pack:2 core:64 pu:2".into())
        .load(LeafKind::Pu)
        .unwrap();
    assert_eq!(t.leaf_count(), 256);
}

#[test]
fn synthetic_levels_are_counted_the_way_hwloc_reads_them() {
    // hwloc needs no space between levels ("21483pu:64" is 21483 × 64 PUs: the fuzzer
    // found hwloc building it for minutes), reads counts with strtoul in base 0 (hex,
    // octal, a sign) and a type up to the next ':'; an attached NUMA node is one more
    // object per object of its level. All refused before hwloc builds.
    for desc in [
        "21483pu:64",
        "pack:2core:4096 pu:1",
        "pack:0x400 core:0x400 pu:1",
        "pack:+1000 core:+1000 pu:1",
        "pack:04000 core:04000 pu:1",
        "pack: 1000core:1000 pu:1",
        &format!("2 2 4 8{} 4 8", "[numa]".repeat(200)),
    ] {
        let e = TopologySpec::Synthetic(desc.to_string())
            .load(LeafKind::Core)
            .unwrap_err()
            .to_string();
        assert!(e.contains(desc) && e.contains("leaves"), "{e}");
    }
    // What hwloc reads, we read the same: 2 packages of 8 cores.
    for desc in [
        "pack:0x2 core:8 pu:1",
        "pack:2core:8 pu:1",
        "pack:+2 core:010 pu:1",
    ] {
        let t = TopologySpec::Synthetic(desc.into())
            .load(LeafKind::Core)
            .unwrap();
        assert_eq!(t.leaf_count(), 16, "{desc}");
    }
    // A level rankmig cannot follow is refused with the place it stopped.
    let e = TopologySpec::Synthetic("pack:2 core:x pu:1".into())
        .load(LeafKind::Core)
        .unwrap_err()
        .to_string();
    assert!(e.contains("at 'core:x pu:1'"), "{e}");
}
