//! `rankmig map`, `cost` and `topology` as a user runs them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn rankmig(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rankmig"))
        .args(args)
        .output()
        .expect("run rankmig")
}

fn data(rel: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
        .display()
        .to_string()
}

fn xml_node() -> String {
    format!("xml:{}", data("topologies/32em64t-2n8c2t-pci-noio.xml"))
}

/// Exit code 2, one error line on stderr containing every `needle`, no panic.
fn assert_clean_error(out: &Output, needles: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    // Our own errors are one line; clap's usage errors add a hint line after it.
    let first = stderr.lines().next().unwrap_or("");
    assert!(first.contains("error:"), "{stderr}");
    for needle in needles {
        assert!(stderr.contains(needle), "'{needle}' not in '{stderr}'");
    }
    if first.starts_with("rankmig: error:") {
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn text_output_lists_every_rank_and_the_baselines() {
    let out = rankmig(&[
        "map",
        "--matrix",
        &data("matrices/himeno.M.4x4x4.64.mat"),
        "-t",
        &xml_node(),
        "--nodes",
        "4",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let mut leaves: Vec<usize> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().nth(1).unwrap().parse().unwrap())
        .collect();
    assert_eq!(leaves.len(), 64);
    leaves.sort_unstable();
    leaves.dedup();
    assert_eq!(leaves.len(), 64, "each rank on its own core");
    for name in [
        "treematch",
        "packed",
        "round-robin",
        "random",
        "mapping time",
    ] {
        assert!(text.contains(name), "{name} missing");
    }
}

#[test]
fn json_rankfile_and_slurm_formats() {
    let m = data("matrices/lu.W.16.mat");
    let out = rankmig(&["map", "--matrix", &m, "-t", &xml_node(), "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["mapping"].as_array().unwrap().len(), 16);
    assert!(v["metrics"]["hop_bytes"].as_f64().unwrap() > 0.0);
    assert!(v["baselines"]["packed"]["hop_bytes"].is_number());
    assert!(v["seconds"].as_f64().unwrap() >= 0.0);

    let out = rankmig(&[
        "map",
        "--matrix",
        &m,
        "-t",
        &xml_node(),
        "--nodes",
        "2",
        "--hosts",
        "a,b",
        "--format",
        "rankfile",
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 16);
    assert!(
        text.lines()
            .all(|l| l.starts_with("rank ") && l.contains("slot="))
    );
    assert!(text.contains("=a slot=") || text.contains("=b slot="));

    let out = rankmig(&[
        "map",
        "--matrix",
        &m,
        "-t",
        &xml_node(),
        "--format",
        "slurm",
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    let list = text.trim().strip_prefix("--cpu-bind=map_cpu:").unwrap();
    assert_eq!(list.split(',').count(), 16);
    let out = rankmig(&[
        "map",
        "--matrix",
        &m,
        "-t",
        &xml_node(),
        "--nodes",
        "2",
        "--format",
        "slurm",
    ]);
    assert_clean_error(&out, &["one node"]);
}

#[test]
fn cost_agrees_with_map() {
    let m = data("matrices/cg.W.64.mat");
    let out = rankmig(&[
        "map",
        "--matrix",
        &m,
        "-t",
        &xml_node(),
        "--nodes",
        "4",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mapping: String = v["mapping"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
    let f = write(dir.path(), "m.map", &mapping);
    let out = rankmig(&[
        "cost",
        "--matrix",
        &m,
        "-t",
        &xml_node(),
        "--nodes",
        "4",
        "--mapping",
        &f,
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    let hb: f64 = text
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(hb, v["metrics"]["hop_bytes"].as_f64().unwrap());
}

#[test]
fn bad_matrices_are_one_line_errors_naming_file_line_and_value() {
    let dir = tempfile::tempdir().unwrap();
    let t = "synthetic:pack:2 core:2 pu:1";
    let f = write(dir.path(), "neg.mat", "0 1\n-4 0\n");
    assert_clean_error(
        &rankmig(&["map", "--matrix", &f, "-t", t]),
        &["neg.mat:2", "'-4'"],
    );
    let f = write(dir.path(), "word.mat", "0 1\n1 zero\n");
    assert_clean_error(
        &rankmig(&["map", "--matrix", &f, "-t", t]),
        &["word.mat:2", "'zero'"],
    );
    let f = write(dir.path(), "nan.mat", "0 nan\n1 0\n");
    assert_clean_error(
        &rankmig(&["map", "--matrix", &f, "-t", t]),
        &["nan.mat:1", "'nan'"],
    );
    let f = write(dir.path(), "rect.mat", "0 1 1 1\n1 0 1 1\n");
    assert_clean_error(
        &rankmig(&["map", "--matrix", &f, "-t", t]),
        &["rect.mat:1", "square"],
    );
    let f = write(dir.path(), "empty.mat", "\n# nothing\n");
    assert_clean_error(
        &rankmig(&["map", "--matrix", &f, "-t", t]),
        &["empty.mat", "empty"],
    );
    let missing = dir.path().join("missing.mat").display().to_string();
    assert_clean_error(
        &rankmig(&["map", "--matrix", &missing, "-t", t]),
        &["missing.mat", "cannot read"],
    );
    let big = (0..5).map(|_| "0 0 0 0 0\n").collect::<String>();
    let f = write(dir.path(), "big.mat", &big);
    assert_clean_error(
        &rankmig(&["map", "--matrix", &f, "-t", t]),
        &["5 ranks", "4 slots"],
    );
}

#[test]
fn bad_topologies_and_options_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let m = data("matrices/lu.W.16.mat");
    let x = write(dir.path(), "junk.xml", "<topology><object");
    assert_clean_error(
        &rankmig(&["map", "--matrix", &m, "-t", &format!("xml:{x}")]),
        &["junk.xml", "hwloc refused"],
    );
    assert_clean_error(
        &rankmig(&["map", "--matrix", &m, "-t", "synthetic:pack:x"]),
        &["pack:x"],
    );
    assert_clean_error(
        &rankmig(&["map", "--matrix", &m, "-t", "nonsense"]),
        &["nonsense"],
    );
    assert_clean_error(
        &rankmig(&["map", "--matrix", &m, "-t", &xml_node(), "--costs", "1,2,3"]),
        &["--costs", "1,2,3"],
    );
    assert_clean_error(
        &rankmig(&["map", "--matrix", &m, "-t", &xml_node(), "--allowed", "4-x"]),
        &["--allowed", "4-x"],
    );
}

#[test]
fn oversubscription_and_allowed_leaves() {
    let m = data("matrices/lu.W.16.mat");
    let t = "synthetic:pack:2 core:4 pu:1";
    let out = rankmig(&["map", "--matrix", &m, "-t", t]);
    assert_clean_error(&out, &["16 ranks", "8 slots", "--oversubscribe"]);
    let out = rankmig(&[
        "map",
        "--matrix",
        &m,
        "-t",
        t,
        "--oversubscribe",
        "2",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut count = [0usize; 8];
    for l in v["mapping"].as_array().unwrap() {
        count[l.as_u64().unwrap() as usize] += 1;
    }
    assert!(count.iter().all(|&c| c == 2), "{count:?}");
    let out = rankmig(&[
        "map",
        "--matrix",
        &m,
        "-t",
        &xml_node(),
        "--nodes",
        "2",
        "--allowed",
        "0-7,16-23",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for l in v["mapping"].as_array().unwrap() {
        let l = l.as_u64().unwrap();
        assert!(l < 8 || (16..24).contains(&l), "leaf {l} not allowed");
    }
}

#[test]
fn topology_command_describes_the_tree() {
    let out = rankmig(&["topology", "-t", &xml_node(), "--nodes", "4"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("Cluster:1(x4) Machine:4(x2) Package:8(x8) Core:64"),
        "{text}"
    );
    assert!(text.contains("leaves: 64"));
}

#[test]
fn prof_directory_is_a_matrix() {
    let out = rankmig(&[
        "map",
        "--matrix",
        &data("prof/lu.W.16"),
        "-t",
        &xml_node(),
        "--format",
        "json",
    ]);
    assert_json_mapping_of(&out, 16);
}

fn scotch(rel: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scotch")
        .join(rel)
        .display()
        .to_string()
}

fn first_number(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().next().unwrap_or("").to_owned()
}

#[test]
fn cost_reads_scotch_gmap_output_as_the_same_mapping() {
    let m = data("matrices/himeno.M.2x2x4.16.mat");
    let t = "synthetic:pack:2 core:8 pu:1";
    let gmap = scotch("grid4x4-on-2x8.map");
    let scotch_cost = rankmig(&["cost", "--matrix", &m, "-t", t, "--mapping", &gmap]);
    // The same mapping as one leaf per line, rank order.
    let text = std::fs::read_to_string(&gmap).unwrap();
    let mut pairs: Vec<(usize, usize)> = text
        .lines()
        .skip(1)
        .map(|l| {
            let mut f = l.split_whitespace().map(|x| x.parse::<usize>().unwrap());
            (f.next().unwrap(), f.next().unwrap())
        })
        .collect();
    pairs.sort();
    let dir = tempfile::tempdir().unwrap();
    let leaves: String = pairs.iter().map(|(_, leaf)| format!("{leaf}\n")).collect();
    let plain = write(dir.path(), "plain.map", &leaves);
    let plain_cost = rankmig(&["cost", "--matrix", &m, "-t", t, "--mapping", &plain]);
    assert_eq!(first_number(&scotch_cost), first_number(&plain_cost));
    // Vertex labels from 1 (a graph with base 1) mean the same ranks.
    let from_one: String = std::iter::once("16\n".to_owned())
        .chain(pairs.iter().map(|(v, leaf)| format!("{}\t{leaf}\n", v + 1)))
        .collect();
    let one = write(dir.path(), "one.map", &from_one);
    let one_cost = rankmig(&["cost", "--matrix", &m, "-t", t, "--mapping", &one]);
    assert_eq!(first_number(&one_cost), first_number(&plain_cost));
}

#[test]
fn a_scotch_mapping_with_a_wrong_count_names_the_header() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "short.map", "3\n0 1\n1 0\n");
    assert_clean_error(
        &rankmig(&[
            "cost",
            "--matrix",
            &data("matrices/himeno.M.2x2x4.16.mat"),
            "-t",
            "synthetic:pack:2 core:8 pu:1",
            "--mapping",
            &f,
        ]),
        &["short.map:1", "3 vertices but 2 lines follow"],
    );
}

#[test]
fn a_scotch_tleaf_target_is_a_topology_to_compare_on() {
    let m = data("matrices/himeno.M.2x2x4.16.mat");
    let target = format!("tleaf:{}", scotch("2x8.tgt"));
    let out = rankmig(&["topology", "-t", &target]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("leaves: 16") && text.contains("depth: 2"),
        "{text}"
    );
    // Scotch's mapping costs the same on its own target as on the hwloc tree of the
    // same shape: the leaves are numbered alike.
    let gmap = scotch("grid4x4-on-2x8.map");
    let on_tleaf = rankmig(&["cost", "--matrix", &m, "-t", &target, "--mapping", &gmap]);
    let on_hwloc = rankmig(&[
        "cost",
        "--matrix",
        &m,
        "-t",
        "synthetic:pack:2 core:8 pu:1",
        "--mapping",
        &gmap,
    ]);
    assert_eq!(first_number(&on_tleaf), first_number(&on_hwloc));
    // And rankmig maps onto it.
    let out = rankmig(&["map", "--matrix", &m, "-t", &target, "--format", "json"]);
    assert_json_mapping_of(&out, 16);
}

#[test]
fn a_target_that_is_not_tleaf_is_a_clean_error() {
    let dir = tempfile::tempdir().unwrap();
    let cmplt = write(dir.path(), "c.tgt", "cmplt 16\n");
    assert_clean_error(
        &rankmig(&["topology", "-t", &format!("tleaf:{cmplt}")]),
        &["c.tgt", "'cmplt' is not tleaf"],
    );
    let short = write(dir.path(), "s.tgt", "tleaf 2 2 10 x 1\n");
    assert_clean_error(
        &rankmig(&["topology", "-t", &format!("tleaf:{short}")]),
        &["s.tgt", "arity of level 1 'x'"],
    );
}

/// A successful `map --format json` whose mapping places `ranks` ranks.
fn assert_json_mapping_of(out: &std::process::Output, ranks: usize) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    assert_eq!(v["mapping"].as_array().map(Vec::len), Some(ranks));
}

#[test]
fn a_refused_synthetic_topology_gives_hwlocs_reason() {
    let out = rankmig(&["topology", "-t", "synthetic:pack:2 core:8"]);
    assert_clean_error(
        &out,
        &["pack:2 core:8", "cannot use non-PU type for last level"],
    );
}
