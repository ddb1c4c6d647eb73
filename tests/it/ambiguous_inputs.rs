//! No silently wrong answer (issue 11, section 5): inputs that read two ways are
//! refused, oversubscription does not stack ranks while cores are free, metrics never
//! turn into `inf`/`NaN`, and host or availability values that would change the meaning
//! of a written file are refused with the file, line and value.

use crate::support::limited::rankmig_limited;
use crate::support::{stderr, write};

fn map(matrix: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "map",
        "--matrix",
        matrix,
        "--topology",
        "synthetic:pack:2 core:8 pu:1",
    ];
    args.extend_from_slice(extra);
    rankmig_limited(&args)
}

/// The `RANK LEAF` lines of `map`'s text output.
fn mapping(out: &std::process::Output) -> Vec<(usize, usize)> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let mut f = l
                .split_whitespace()
                .map(|x| x.parse::<usize>().expect("number"));
            (f.next().expect("rank"), f.next().expect("leaf"))
        })
        .collect()
}

#[test]
fn a_dense_matrix_missing_its_last_row_is_not_read_as_an_edge_list() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "cut.mat", "0 10 20\n10 0 30\n");
    let out = map(&m, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cut.mat") && stderr(&out).contains("--matrix-format"),
        "{}",
        stderr(&out)
    );
    let out = map(&m, &["--matrix-format", "dense"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("cut.mat:1: rows have 3 values but there are 2 rows"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_edge_list_of_three_lines_is_not_read_as_a_3x3_matrix() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "three.edges", "0 5 100\n1 4 100\n2 3 100\n");
    let out = map(&m, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("--matrix-format"), "{}", stderr(&out));
    let out = map(&m, &["--matrix-format", "edges"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(mapping(&out).len(), 6);
}

/// A ring of `n` ranks as a dense matrix.
fn ring(n: usize) -> String {
    let mut text = String::new();
    for i in 0..n {
        let row: Vec<&str> = (0..n)
            .map(|j| {
                if j == (i + 1) % n || (j + 1) % n == i {
                    "100"
                } else {
                    "0"
                }
            })
            .collect();
        text.push_str(&row.join(" "));
        text.push('\n');
    }
    text
}

fn distinct_leaves(pairs: &[(usize, usize)]) -> usize {
    pairs
        .iter()
        .map(|p| p.1)
        .collect::<std::collections::BTreeSet<_>>()
        .len()
}

#[test]
fn oversubscription_uses_free_cores_before_sharing_one() {
    let dir = tempfile::tempdir().unwrap();
    for (ranks, factor, leaves_used) in [(10, "2", 10), (16, "1024", 16), (20, "1024", 16)] {
        let m = write(dir.path(), &format!("ring{ranks}.mat"), &ring(ranks));
        let out = map(&m, &["--matrix-format", "dense", "--oversubscribe", factor]);
        assert!(out.status.success(), "{}", stderr(&out));
        let pairs = mapping(&out);
        assert_eq!(pairs.len(), ranks);
        assert_eq!(
            distinct_leaves(&pairs),
            leaves_used,
            "{ranks} ranks: {pairs:?}"
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let treematch = text
            .lines()
            .find(|l| l.starts_with("# treematch"))
            .expect("metrics line");
        let hop_bytes: f64 = treematch
            .split_whitespace()
            .nth(2)
            .unwrap()
            .parse()
            .unwrap();
        assert!(hop_bytes > 0.0, "stacking must not look free: {treematch}");
    }
}

#[test]
fn volumes_near_the_largest_float_are_an_error_not_inf() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "huge.mat", "0 1e308\n1e308 0\n");
    let out = map(&m, &["--matrix-format", "dense"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("huge.mat") && stderr(&out).contains("1e300"),
        "{}",
        stderr(&out)
    );
    // Within the volume bound, but times the link costs beyond the range of numbers.
    let m = write(dir.path(), "big.mat", "0 1e299\n1e299 0\n");
    let out = map(&m, &["--matrix-format", "dense", "--costs", "1e300,1e300"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("is inf"), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("inf") && !text.contains("NaN"), "{text}");
}

#[test]
fn host_names_that_would_change_the_rankfile_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "ring4.mat", &ring(4));
    for hosts in ["a\nrank 9=evil slot=0,b", "a b,c", "a=b,c", "n1,n1"] {
        let out = rankmig_limited(&[
            "map",
            "--matrix",
            &m,
            "--matrix-format",
            "dense",
            "--topology",
            "synthetic:core:2 pu:1",
            "--nodes",
            "2",
            "--format",
            "rankfile",
            "--hosts",
            hosts,
        ]);
        assert_eq!(out.status.code(), Some(2), "{hosts:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("--hosts"), "{}", stderr(&out));
        assert!(out.stdout.is_empty());
    }
}
