//! `rankmig map`, `cost` and `topology` as a user runs them.

use std::path::PathBuf;
use std::process::{Command, Output};

use crate::support::{data_arg, write};

fn rankmig(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rankmig"))
        .args(args)
        .output()
        .expect("run rankmig")
}

fn xml_node() -> String {
    format!("xml:{}", data_arg("topologies/32em64t-2n8c2t-pci-noio.xml"))
}

/// Exit code 1 for our errors (2 for a usage error), one error line on stderr
/// containing every `needle`, no panic.
fn assert_clean_error(out: &Output, needles: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    // Our own errors are one line; clap's usage errors add a hint line after it.
    let first = stderr.lines().next().unwrap_or("");
    let usage = !first.starts_with("rankmig: error:") || stderr.contains("--hosts");
    let expected = if usage { 2 } else { 1 };
    assert_eq!(out.status.code(), Some(expected), "stderr: {stderr}");
    assert!(first.contains("error:"), "{stderr}");
    for needle in needles {
        assert!(stderr.contains(needle), "'{needle}' not in '{stderr}'");
    }
    if first.starts_with("rankmig: error:") {
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
}

#[test]
fn text_output_lists_every_rank_and_the_baselines() {
    let out = rankmig(&[
        "map",
        "--matrix",
        &data_arg("matrices/himeno.M.4x4x4.64.mat"),
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
    let m = data_arg("matrices/lu.W.16.mat");
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
}

/// `map` of lu.W.16 on `topology` with `extra` options, in `format`; must succeed.
fn map_lu16(topology: &str, extra: &[&str], format: &str) -> Vec<u8> {
    let m = data_arg("matrices/lu.W.16.mat");
    let mut args = vec!["map", "--matrix", &m, "-t", topology, "--format", format];
    args.extend_from_slice(extra);
    let out = rankmig(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn json_gives_each_ranks_host_core_and_os_cpus() {
    let skylake = format!(
        "xml:{}",
        data_arg("topologies/Intel-Skylake-2xXeon6140.xml")
    );
    let extra = ["--nodes", "2", "--hosts", "n1,n2", "--allowed", "0-7,36-43"];
    let v: serde_json::Value = serde_json::from_slice(&map_lu16(&skylake, &extra, "json")).unwrap();
    assert_eq!(v["version"], 1);
    let ranks = v["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 16);
    for (i, r) in ranks.iter().enumerate() {
        assert_eq!(r["rank"], i);
        assert_eq!(r["leaf"], v["mapping"][i]);
        let node = r["node"].as_u64().unwrap();
        assert_eq!(r["host"], ["n1", "n2"][node as usize]);
        // 36 cores per node; core c of package 0 has CPUs 2c and 2c+36, core 18+k of
        // package 1 has CPUs 2k+1 and 2k+37.
        let leaf = r["leaf"].as_u64().unwrap();
        let core = r["core"].as_u64().unwrap();
        assert_eq!(core, leaf - 36 * node);
        let first = if core < 18 {
            2 * core
        } else {
            2 * (core - 18) + 1
        };
        assert_eq!(r["cpu"], first);
        assert_eq!(r["cpus"], serde_json::json!([first, first + 36]));
    }
}

#[test]
fn slurm_for_several_nodes_is_a_hostfile_with_per_host_cpu_lists() {
    let topology = "synthetic:pack:1 core:4 pu:1";
    let extra = ["--nodes", "4", "--hosts", "a,b,c,d"];
    let v: serde_json::Value = serde_json::from_slice(&map_lu16(topology, &extra, "json")).unwrap();
    let text = String::from_utf8(map_lu16(topology, &extra, "slurm")).unwrap();
    let hosts: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    let ranks = v["ranks"].as_array().unwrap();
    assert_eq!(hosts.len(), 16, "{text}");
    for (host, r) in hosts.iter().zip(ranks) {
        assert_eq!(r["host"], *host);
    }
    for host in ["a", "b", "c", "d"] {
        let cpus: Vec<String> = ranks
            .iter()
            .filter(|r| r["host"] == host)
            .map(|r| r["cpu"].to_string())
            .collect();
        let line = format!("#   {host} map_cpu:{}", cpus.join(","));
        assert!(text.lines().any(|l| l == line), "'{line}' not in\n{text}");
    }
    assert!(text.contains("--distribution=arbitrary"), "{text}");
}

#[test]
fn hosts_that_could_inject_lines_are_refused() {
    let m = data_arg("matrices/lu.W.16.mat");
    let t = "synthetic:pack:1 core:8 pu:1";
    let map = |hosts: &str| {
        rankmig(&[
            "map", "--matrix", &m, "-t", t, "--nodes", "2", "--hosts", hosts, "--format",
            "rankfile",
        ])
    };
    assert_clean_error(
        &map("a\nrank 0=b slot=0,b"),
        &["--hosts", "a\\nrank 0=b slot=0", "host name"],
    );
    assert_clean_error(&map("a slot=3,b"), &["--hosts", "a slot=3"]);
    assert_clean_error(&map("a=b,b"), &["--hosts", "a=b"]);
    assert_clean_error(&map("a,a"), &["--hosts", "named twice"]);
    assert!(map("n-1.example,n2").status.success());
}

#[test]
fn allowed_takes_os_cpu_numbers_on_a_machine_numbered_across_sockets() {
    // Skylake 2 x 18 cores: package 0 holds the even CPUs 0-34 (threads 36-70), package
    // 1 the odd ones. CPUs 0-7 and their threads 36-43 are cores 0-3 of each package.
    let skylake = format!(
        "xml:{}",
        data_arg("topologies/Intel-Skylake-2xXeon6140.xml")
    );
    let m = data_arg("matrices/lu.W.16.mat");
    let map = |allowed: &str, leaves: &str| {
        rankmig(&[
            "map",
            "--matrix",
            &m,
            "-t",
            &skylake,
            "--leaves",
            leaves,
            "--allowed",
            allowed,
            "--oversubscribe",
            "2",
            "--format",
            "json",
        ])
    };
    let out = map("0-7,36-43", "core");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let leaves: std::collections::BTreeSet<u64> = v["mapping"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_u64().unwrap())
        .collect();
    assert_eq!(
        leaves.into_iter().collect::<Vec<_>>(),
        vec![0, 1, 2, 3, 18, 19, 20, 21]
    );
    let out = map("0-7", "pu");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for r in v["ranks"].as_array().unwrap() {
        assert!(r["cpu"].as_u64().unwrap() < 8, "{r}");
    }
    assert_clean_error(
        &map("0-7", "core"),
        &[
            "--allowed 0-7",
            "CPU 0",
            "Core L#0 (CPUs 0,36)",
            "--leaves pu",
        ],
    );
    assert_clean_error(
        &map("0-7,36-43,72", "core"),
        &["--allowed 0-7,36-43,72", "CPU 72", "0-71"],
    );
    let tleaf = format!("tleaf:{}", scotch("2x8.tgt"));
    let out = rankmig(&["map", "--matrix", &m, "-t", &tleaf, "--allowed", "0-7"]);
    assert_clean_error(&out, &["no OS CPU numbers", "--allowed-leaves"]);
    let out = rankmig(&[
        "map",
        "--matrix",
        &m,
        "-t",
        &tleaf,
        "--allowed-leaves",
        "8-15",
        "--oversubscribe",
        "2",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let leaf: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        assert!((8..16).contains(&leaf), "{line}");
    }
}

#[test]
fn cost_agrees_with_map() {
    let m = data_arg("matrices/cg.W.64.mat");
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
    let m = data_arg("matrices/lu.W.16.mat");
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
    let m = data_arg("matrices/lu.W.16.mat");
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
        &data_arg("prof/lu.W.16"),
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
    let m = data_arg("matrices/himeno.M.2x2x4.16.mat");
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
            &data_arg("matrices/himeno.M.2x2x4.16.mat"),
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
    let m = data_arg("matrices/himeno.M.2x2x4.16.mat");
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
