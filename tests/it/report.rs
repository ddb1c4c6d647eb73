//! `rankmig report` on run directories written here as files.

use std::fs;
use std::path::Path;

use crate::support::rankmig;

/// A run of 100 iterations on two ranks: rank 1 computes a little longer except at
/// iteration 50, where rank 0 migrates for 3 s after one reconfiguration that took the
/// job from two nodes to one.
fn write_run(dir: &Path) {
    fs::create_dir_all(dir.join("iterations")).unwrap();
    let mut rank0 = String::new();
    let mut rank1 = String::new();
    for i in 1..=100 {
        let migration = if i == 50 { 3.0 } else { 0.0 };
        rank0.push_str(&format!("{i},0.001000000,0.000000000,{migration:.9}\n"));
        rank1.push_str(&format!("{i},0.002000000,0.000000000,0.000000000\n"));
    }
    fs::write(dir.join("iterations/rank-0.csv"), rank0).unwrap();
    fs::write(dir.join("iterations/rank-1.csv"), rank1).unwrap();
    fs::write(
        dir.join("reconfigurations.jsonl"),
        r#"{"index":1,"iteration":50,"at_seconds":0.1,"change":"removed n2 (had 1 cores)","nodes":1,"outcome":"migrated","detail":null,"moves":1,"minimum_moves":1,"hop_bytes_before":0.0,"hop_bytes_after":0.0,"scheduling":0.001,"phases":{"spawn":2.9,"transfer":0.05,"rebuild":0.05,"pause":0.031},"state_bytes":64}
"#,
    )
    .unwrap();
    fs::write(dir.join("placement-0.txt"), "0 n1 0\n1 n2 0\n").unwrap();
    fs::write(dir.join("placement-1.txt"), "0 n1 0\n1 n1 1\n").unwrap();
}

#[test]
fn report_totals_use_the_slowest_rank_and_the_chart_covers_the_migration() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path());
    let svg = dir.path().join("chart.svg");
    let out = rankmig()
        .arg("report")
        .arg(dir.path())
        .arg("--svg")
        .arg(&svg)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // 99 iterations where rank 1 (2 ms) is slowest, and iteration 50 where rank 0
    // (1 ms + 3 s) is: its compute counts, not rank 1's.
    assert!(
        stdout.contains("iterations: 100; compute 0.199 s, scheduling 0.000 s, migration 3.000 s"),
        "{stdout}"
    );
    let chart = fs::read_to_string(&svg).unwrap();
    assert!(chart.starts_with("<svg"), "{chart}");
    let texts = texts(&chart);
    // The 3 s iteration is inside the log axis (decades from 1 ms to 10 s), labelled
    // at its line; the node count has its own axis.
    for expected in [
        "1 ms",
        "10 ms",
        "1 s",
        "10 s",
        "#1 3.00 s, paused 31 ms",
        "nodes in use",
    ] {
        assert!(
            texts.iter().any(|t| t == expected),
            "no '{expected}' in {texts:?}"
        );
    }
    assert!(!texts.iter().any(|t| t == "100 s"), "{texts:?}");
}

/// The text elements of an SVG document, trimmed.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = &t[t.find('>')? + 1..t.find("</text>")?];
            Some(body.trim().to_owned())
        })
        .collect()
}

#[test]
fn report_on_a_missing_directory_fails_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-run");
    let out = rankmig().arg("report").arg(&missing).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&missing.display().to_string()) && stderr.contains("no such run directory"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "printed a table: {:?}", out.stdout);
    assert!(!missing.exists(), "created {}", missing.display());
}

#[test]
fn report_on_a_directory_without_records_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = rankmig().arg("report").arg(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not a run directory"), "{stderr}");
    assert!(!dir.path().join("report.svg").exists());
}

#[test]
fn report_names_the_line_of_a_bad_iteration_record() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path());
    fs::write(
        dir.path().join("iterations/rank-1.csv"),
        "1,0.001,0,0\n2,abc,0,0\n",
    )
    .unwrap();
    let out = rankmig().arg("report").arg(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("rank-1.csv:2:"), "{stderr}");
}

/// Records with the largest iteration number and times near the largest float: the
/// report is written, no panic (issue 11, section 5).
#[test]
fn report_survives_extreme_records() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::create_dir_all(d.join("iterations")).unwrap();
    fs::write(
        d.join("iterations/rank-0.csv"),
        "1,1000,0,0\n18446744073709551615,18446744073709551615,0,0\n",
    )
    .unwrap();
    fs::write(
        d.join("reconfigurations.jsonl"),
        r#"{"index":1,"iteration":18446744073709551615,"at_seconds":1e300,"change":"x","nodes":1,"outcome":"migrated","detail":null,"moves":1,"minimum_moves":1,"hop_bytes_before":0,"hop_bytes_after":0,"scheduling":1e308,"phases":{"spawn":1e308,"transfer":0,"rebuild":0},"state_bytes":1}
"#,
    )
    .unwrap();
    let out = rankmig().arg("report").arg(d).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(out.status.success(), "{stderr}");
    assert!(d.join("report.svg").exists());
}
