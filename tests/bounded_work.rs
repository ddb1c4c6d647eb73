//! Bounded memory and time on large inputs (issue 11, section 4): each case runs the
//! `rankmig` binary under an address-space cap and a time limit, so an allocation
//! proportional to the square of an input size, or a quadratic loop, fails here.

mod common;

use std::path::Path;

use common::limited::{rankmig_within, stderr};

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write input");
    p.display().to_string()
}

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
