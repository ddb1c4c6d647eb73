//! No silently wrong answer (issue 11, section 5): inputs that read two ways are
//! refused, oversubscription does not stack ranks while cores are free, metrics never
//! turn into `inf`/`NaN`, and host or availability values that would change the meaning
//! of a written file are refused with the file, line and value.

mod common;

use std::path::Path;

use common::limited::{rankmig_limited, stderr};

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write input");
    p.display().to_string()
}

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
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cut.mat") && stderr(&out).contains("--matrix-format"),
        "{}",
        stderr(&out)
    );
    let out = map(&m, &["--matrix-format", "dense"]);
    assert_eq!(out.status.code(), Some(2));
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
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--matrix-format"), "{}", stderr(&out));
    let out = map(&m, &["--matrix-format", "edges"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(mapping(&out).len(), 6);
}
