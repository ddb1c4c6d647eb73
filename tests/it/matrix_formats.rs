//! The matrix importers on the real measured data.

use crate::support::data;
use rankmig::matrix::{CommMatrix, MatrixFormat};

#[test]
fn prof_dumps_reproduce_the_published_matrices_exactly() {
    for run in ["lu.W.16", "ft.S.64"] {
        let from_dumps =
            CommMatrix::load(&data(&format!("prof/{run}")), MatrixFormat::Auto).unwrap();
        let reference =
            CommMatrix::load(&data(&format!("matrices/{run}.mat")), MatrixFormat::Dense).unwrap();
        assert_eq!(from_dumps.order(), reference.order(), "{run}");
        assert_eq!(from_dumps, reference, "{run}");
    }
}

#[test]
fn every_real_matrix_loads_with_its_documented_total() {
    // (file, order, off-diagonal total bytes) from tests/data/README.md
    let expected = [
        ("bt.W.64.mat", 64, 1_601_224_356u64),
        ("cg.S.16.mat", 16, 51_472_564),
        ("ft.S.64.mat", 64, 33_104_988),
        ("himeno.M.4x4x4.64.mat", 64, 218_127_048),
        ("lu.W.16.mat", 16, 456_682_380),
    ];
    for (file, order, total) in expected {
        let m = CommMatrix::load(&data(&format!("matrices/{file}")), MatrixFormat::Auto).unwrap();
        assert_eq!(m.order(), order, "{file}");
        assert_eq!(m.total() as u64, total, "{file}");
    }
}

#[test]
fn dense_round_trip_and_edge_list_agree() {
    let m = CommMatrix::load(&data("matrices/lu.W.16.mat"), MatrixFormat::Dense).unwrap();
    let mut dense = Vec::new();
    m.write_dense(&mut dense).unwrap();
    let again = CommMatrix::parse_dense(std::str::from_utf8(&dense).unwrap(), "buffer").unwrap();
    assert_eq!(m, again);
    let mut edges = String::new();
    for i in 0..m.order() {
        for (j, w) in m.row(i) {
            edges.push_str(&format!("{i} {j} {w}\n"));
        }
    }
    let from_edges = CommMatrix::parse_edges(&edges, "edges").unwrap();
    assert_eq!(m, from_edges);
}

#[test]
fn dump_directory_errors_name_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let err = CommMatrix::load(dir.path(), MatrixFormat::Prof)
        .unwrap_err()
        .to_string();
    assert!(err.contains("no NAME.RANK.prof"), "{err}");
    std::fs::write(
        dir.path().join("x.0.prof"),
        "E\t0\t1\t5 bytes\t1 msgs sent\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("x.2.prof"), "").unwrap();
    let err = CommMatrix::load(dir.path(), MatrixFormat::Prof)
        .unwrap_err()
        .to_string();
    assert!(err.contains("rank 1 has no dump file"), "{err}");
}

/// A dump linked to `/dev/zero` (endless bytes, no newline) stops at the line bound with
/// an error naming the file, instead of being read until memory runs out.
#[test]
fn a_prof_dump_linked_to_dev_zero_is_an_error_not_an_endless_read() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("x.0.prof"),
        "E\t0\t1\t8 bytes\t1 msgs sent\n",
    )
    .unwrap();
    std::os::unix::fs::symlink("/dev/zero", dir.path().join("x.1.prof")).unwrap();
    let err = CommMatrix::load(dir.path(), MatrixFormat::Prof)
        .unwrap_err()
        .to_string();
    assert!(err.contains("x.1.prof"), "{err}");
}
