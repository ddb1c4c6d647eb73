//! Bounded memory and time on large inputs (issue 11, section 4): each case runs the
//! `rankmig` binary under an address-space cap and a time limit, so an allocation
//! proportional to the square of an input size, or a quadratic loop, fails here.

use crate::support::limited::rankmig_within;
use crate::support::{stderr, write};

#[test]
fn a_cluster_of_100000_one_core_nodes_maps_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "two.edges", "0 1 5\n1 0 5\n");
    let out = rankmig_within(
        1024,
        30,
        &[
            "map",
            "--matrix",
            &m,
            "--matrix-format",
            "edges",
            "--nodes",
            "100000",
            "--topology",
            "synthetic:pu:1",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let ranks: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(ranks.len(), 2, "{text}");
}

#[test]
fn an_8000_rank_dense_text_maps_in_the_memory_of_its_nonzeros() {
    // 128 MB of text, 64 million values, 3 nonzeros per row: the rows held as f64 would
    // take 512 MB, the text 128 MB; the sparse matrix takes under 1 MB.
    let n = 8000;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d8000.mat");
    let mut text = Vec::with_capacity(n * n * 2);
    for i in 0..n {
        for j in 0..n {
            let near = j == (i + 1) % n || j == (i + n - 1) % n || j == (i + 97) % n;
            text.extend_from_slice(if near { b"12" } else { b"0" });
            text.push(if j + 1 == n { b'\n' } else { b' ' });
        }
    }
    std::fs::write(&path, &text).unwrap();
    let out = rankmig_within(
        384,
        60,
        &[
            "map",
            "--matrix",
            path.to_str().unwrap(),
            "--matrix-format",
            "dense",
            "--topology",
            "synthetic:pack:2 core:16 pu:1",
            "--nodes",
            "250",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().filter(|l| !l.starts_with('#')).count(), n);
}
