//! `rankmig map --cores-per-rank C` on real machines' hwloc XML files: every rank gets C
//! cores of its own, inside the packages and NUMA nodes the XML itself describes (read
//! here from its cpusets, not through rankmig's tree), and every output format gives
//! each rank the same cores.

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Command, Output};

use crate::support::{data, data_arg, stderr, write};

fn rankmig(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rankmig"))
        .args(args)
        .output()
        .expect("run rankmig")
}

/// What an hwloc XML file says of its machine: per Core (hwloc logical order, the
/// order of the objects in the file), Package and NUMA node, its OS CPU numbers.
struct Machine {
    cores: Vec<BTreeSet<u32>>,
    packages: Vec<BTreeSet<u32>>,
    numa_nodes: Vec<BTreeSet<u32>>,
}

/// The CPUs of an hwloc cpuset string: 32-bit hexadecimal words, the most significant
/// first, an empty word being 0 (`0x000000fc,,0x00fc0000`).
fn cpuset(text: &str) -> BTreeSet<u32> {
    let mut cpus = BTreeSet::new();
    for (i, word) in text.split(',').rev().enumerate() {
        let word = word.trim_start_matches("0x");
        let bits = if word.is_empty() {
            0
        } else {
            u32::from_str_radix(word, 16).expect("a hex cpuset word")
        };
        for b in 0..32 {
            if bits & (1 << b) != 0 {
                cpus.insert(32 * i as u32 + b);
            }
        }
    }
    cpus
}

impl Machine {
    fn read(file: &str) -> Self {
        let xml = std::fs::read_to_string(data(&format!("topologies/{file}"))).unwrap();
        let objects = |kind: &str| -> Vec<BTreeSet<u32>> {
            let tag = format!("<object type=\"{kind}\"");
            xml.match_indices(&tag)
                .map(|(at, _)| {
                    let rest = &xml[at..];
                    let rest = &rest[..rest.find('>').unwrap()];
                    let start = rest.find(" cpuset=\"").unwrap() + " cpuset=\"".len();
                    let end = start + rest[start..].find('"').unwrap();
                    cpuset(&rest[start..end])
                })
                .collect()
        };
        Self {
            cores: objects("Core"),
            packages: objects("Package"),
            numa_nodes: objects("NUMANode"),
        }
    }

    /// Cores inside `cpus` (a package's or a NUMA node's).
    fn cores_in(&self, cpus: &BTreeSet<u32>) -> usize {
        self.cores.iter().filter(|c| c.is_subset(cpus)).count()
    }
}

/// A matrix of `n` ranks: a light ring, and (from 3 ranks) ranks 1 and n-1
/// exchanging far more.
fn matrix(dir: &std::path::Path, n: usize) -> String {
    let mut m = vec![vec![0u64; n]; n];
    let mut edges: Vec<(usize, usize, u64)> = (0..n).map(|i| (i, (i + 1) % n, 10)).collect();
    if n > 2 {
        edges.push((1, n - 1, 1_000_000));
    }
    for (i, j, w) in edges.into_iter().filter(|(i, j, _)| i != j) {
        m[i][j] += w;
        m[j][i] += w;
    }
    let text: String = m
        .iter()
        .map(|row| {
            let row: Vec<String> = row.iter().map(u64::to_string).collect();
            row.join(" ") + "\n"
        })
        .collect();
    write(dir, &format!("ring{n}.mat"), &text)
}

fn map(matrix: &str, file: &str, c: usize, extra: &[&str], format: &str) -> String {
    let topology = format!("xml:{}", data_arg(&format!("topologies/{file}")));
    let c = c.to_string();
    let mut args = vec![
        "map",
        "--matrix",
        matrix,
        "-t",
        &topology,
        "--cores-per-rank",
        &c,
        "--format",
        format,
        "--matrix-format",
        "dense",
    ];
    args.extend_from_slice(extra);
    let out = rankmig(&args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// A list such as `0-3,8`.
fn index_list(text: &str) -> BTreeSet<u32> {
    let mut set = BTreeSet::new();
    for part in text.split(',') {
        match part.split_once('-') {
            Some((a, b)) => set.extend(a.parse::<u32>().unwrap()..=b.parse().unwrap()),
            None => {
                set.insert(part.parse().unwrap());
            }
        }
    }
    set
}

/// The CPUs of a Slurm mask (`0x` and hexadecimal digits).
fn mask_cpus(mask: &str) -> BTreeSet<u32> {
    let digits = mask.strip_prefix("0x").expect("a 0x mask");
    let mut cpus = BTreeSet::new();
    for (i, d) in digits.chars().rev().enumerate() {
        let v = d.to_digit(16).expect("a hex digit");
        for b in 0..4 {
            if v & (1 << b) != 0 {
                cpus.insert(4 * i as u32 + b);
            }
        }
    }
    cpus
}

/// Per rank (rank order): its host, its cores and its OS CPUs, from the JSON output.
type Places = Vec<(String, BTreeSet<u32>, BTreeSet<u32>)>;

fn json_places(json: &str) -> Places {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    let set = |a: &serde_json::Value| -> BTreeSet<u32> {
        a.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u32)
            .collect()
    };
    v["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, r)| {
            assert_eq!(r["rank"], i);
            (
                r["host"].as_str().unwrap().to_owned(),
                set(&r["cores"]),
                set(&r["cpus"]),
            )
        })
        .collect()
}

/// Every rank on `c` distinct cores, no core given twice on a host, the CPUs given
/// those of the cores (per the XML), and per package and NUMA node holding k cores,
/// exactly ⌊k/c⌋ ranks wholly inside it (all of them when c divides every k: no rank
/// straddles); the heavy pair in one package when a package holds two ranks.
fn check_places(machine: &Machine, places: &Places, c: usize, what: &str) {
    let mut taken: BTreeMap<&str, BTreeSet<u32>> = BTreeMap::new();
    for (rank, (host, cores, cpus)) in places.iter().enumerate() {
        assert_eq!(cores.len(), c, "{what}: rank {rank} has cores {cores:?}");
        for &core in cores {
            assert!(
                taken.entry(host).or_default().insert(core),
                "{what}: core {core} of {host} given twice"
            );
        }
        let of_cores: BTreeSet<u32> = cores
            .iter()
            .flat_map(|&k| machine.cores[k as usize].iter().copied())
            .collect();
        assert_eq!(cpus, &of_cores, "{what}: rank {rank}");
    }
    let hosts: BTreeSet<&str> = places.iter().map(|(h, _, _)| h.as_str()).collect();
    for (kind, parts) in [
        ("package", &machine.packages),
        ("NUMA node", &machine.numa_nodes),
    ] {
        for host in &hosts {
            for part in parts {
                let k = machine.cores_in(part);
                let inside = places
                    .iter()
                    .filter(|(h, _, cpus)| h == host && cpus.is_subset(part))
                    .count();
                assert_eq!(inside, k / c, "{what}: {host} {kind} {part:?} of {k} cores");
            }
        }
        if parts.iter().all(|p| machine.cores_in(p) % c == 0) {
            for (rank, (_, _, cpus)) in places.iter().enumerate() {
                assert!(
                    parts.iter().any(|p| cpus.is_subset(p)),
                    "{what}: rank {rank} straddles {kind}s: {cpus:?}"
                );
            }
        }
    }
    let n = places.len();
    if n < 3 || machine.packages.iter().any(|p| machine.cores_in(p) / c < 2) {
        return;
    }
    let package_of = |rank: usize| {
        let (host, _, cpus) = &places[rank];
        let p = machine.packages.iter().position(|p| cpus.is_subset(p));
        (host.clone(), p)
    };
    let heavy = package_of(1);
    assert!(heavy.1.is_some(), "{what}: rank 1 straddles packages");
    assert_eq!(heavy, package_of(n - 1), "{what}: ranks 1 and {}", n - 1);
}

/// The rankfile's and Slurm's outputs give each rank the cores and CPUs of the JSON.
fn check_other_formats(places: &Places, rankfile: &str, slurm: &str, text: &str, what: &str) {
    let lines: Vec<&str> = rankfile.lines().collect();
    assert_eq!(lines.len(), places.len(), "{what}: {rankfile}");
    for (rank, line) in lines.iter().enumerate() {
        let (host, cores, _) = &places[rank];
        let expected = format!("rank {rank}={host} slot=");
        let slot = line.strip_prefix(&expected).expect(line);
        assert_eq!(&index_list(slot), cores, "{what}: {line}");
    }
    let ranks: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(ranks.len(), places.len(), "{what}: {text}");
    for (rank, line) in ranks.iter().enumerate() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(fields[0], rank.to_string(), "{what}: {line}");
        let (_, cores, cpus) = &places[rank];
        let value = |key: &str| {
            let field = fields.iter().find_map(|f| f.strip_prefix(key));
            index_list(field.expect(line))
        };
        assert_eq!(&value("cores="), cores, "{what}: {line}");
        assert_eq!(&value("cpus="), cpus, "{what}: {line}");
    }
    // One node: one mask per rank. Several: each host's masks in # comments, in the
    // order of its ranks, then one host line per rank.
    if let Some(list) = slurm.trim().strip_prefix("--cpu-bind=mask_cpu:") {
        let masks: Vec<&str> = list.split(',').collect();
        assert_eq!(masks.len(), places.len(), "{what}: {slurm}");
        for (rank, mask) in masks.iter().enumerate() {
            assert_eq!(mask_cpus(mask), places[rank].2, "{what}: rank {rank}");
        }
        return;
    }
    let hosts: Vec<&str> = slurm.lines().filter(|l| !l.starts_with('#')).collect();
    let expected: Vec<&str> = places.iter().map(|(h, _, _)| h.as_str()).collect();
    assert_eq!(hosts, expected, "{what}: {slurm}");
    for host in BTreeSet::from_iter(expected) {
        let prefix = format!("#   {host} mask_cpu:");
        let line = slurm.lines().find_map(|l| l.strip_prefix(&prefix));
        let masks: Vec<BTreeSet<u32>> = line.expect(host).split(',').map(mask_cpus).collect();
        let of_host: Vec<BTreeSet<u32>> = places
            .iter()
            .filter(|(h, _, _)| h == host)
            .map(|(_, _, cpus)| cpus.clone())
            .collect();
        assert_eq!(masks, of_host, "{what}: {host}");
    }
}

/// Maps as many ranks as `nodes` copies of `file` hold with ranks of `c` cores, in
/// every format, and checks them.
fn map_full(file: &str, c: usize, nodes: usize) {
    let machine = Machine::read(file);
    let dir = tempfile::tempdir().unwrap();
    let n = nodes * (machine.cores.len() / c);
    let m = matrix(dir.path(), n);
    let (count, hosts) = (nodes.to_string(), ["h1", "h2", "h3"][..nodes].join(","));
    let extra = if nodes > 1 {
        vec!["--nodes", count.as_str(), "--hosts", hosts.as_str()]
    } else {
        Vec::new()
    };
    let what = format!("{file} with {c} cores per rank on {nodes} node(s)");
    let places = json_places(&map(&m, file, c, &extra, "json"));
    assert_eq!(places.len(), n, "{what}");
    check_places(&machine, &places, c, &what);
    let rankfile = map(&m, file, c, &extra, "rankfile");
    let slurm = map(&m, file, c, &extra, "slurm");
    let text = map(&m, file, c, &extra, "text");
    assert!(
        text.contains(&format!("# cores per rank: {c} ")),
        "{what}: {text}"
    );
    check_other_formats(&places, &rankfile, &slurm, &text, &what);
}

#[test]
fn ranks_of_two_and_four_cores_on_a_two_package_xeon() {
    // 2 packages (and NUMA nodes) of 6 cores of 2 hardware threads: with ranks of 4,
    // each package holds one rank and the 2 cores each leaves over make a third.
    map_full("24em64t-2n6c2t-pci.xml", 2, 1);
    map_full("24em64t-2n6c2t-pci.xml", 4, 1);
    map_full("24em64t-2n6c2t-pci.xml", 4, 3);
}

#[test]
fn ranks_of_two_and_four_cores_on_a_two_socket_epyc() {
    // 2 packages of 4 NUMA nodes of 6 cores (two L3 caches of 3): ranks of 2 stay in a
    // NUMA node, ranks of 4 in a package, one per NUMA node and one across two.
    map_full("AMD-17h-Zen-2xEpyc-7451.xml", 2, 1);
    map_full("AMD-17h-Zen-2xEpyc-7451.xml", 4, 1);
    map_full("AMD-17h-Zen-2xEpyc-7451.xml", 4, 2);
}

#[test]
fn ranks_of_four_cores_on_an_arm_of_four_core_clusters() {
    map_full("128arm-2pa2n8cluster4co.xml", 4, 1);
}

#[test]
fn a_rank_larger_than_a_node_is_refused() {
    let m = data_arg("matrices/lu.W.16.mat");
    let topology = format!("xml:{}", data_arg("topologies/24em64t-2n6c2t-pci.xml"));
    for nodes in ["1", "4"] {
        let out = rankmig(&[
            "map",
            "--matrix",
            &m,
            "-t",
            &topology,
            "--nodes",
            nodes,
            "--cores-per-rank",
            "13",
        ]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.starts_with("rankmig: error: a node of 12 cores cannot hold a rank of 13 cores"),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    let out = rankmig(&[
        "map",
        "--matrix",
        &m,
        "-t",
        &topology,
        "--cores-per-rank",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn a_selection_keeps_the_groups_all_of_whose_cores_it_selects() {
    let file = "24em64t-2n6c2t-pci.xml";
    let machine = Machine::read(file);
    let dir = tempfile::tempdir().unwrap();
    // Package 0's CPUs: its 6 cores hold one group of 4; its 2 other cores are in a
    // group with 2 cores of package 1, which is not selected.
    let package0: Vec<String> = machine.packages[0].iter().map(u32::to_string).collect();
    let allowed = package0.join(",");
    let one = json_places(&map(
        &matrix(dir.path(), 1),
        file,
        4,
        &["--allowed", &allowed],
        "json",
    ));
    assert!(one[0].2.is_subset(&machine.packages[0]), "{:?}", one[0]);
    let topology = format!("xml:{}", data_arg(&format!("topologies/{file}")));
    let two = matrix(dir.path(), 2);
    let args = [
        "map",
        "--matrix",
        &two,
        "--matrix-format",
        "dense",
        "-t",
        &topology,
        "--cores-per-rank",
        "4",
        "--allowed",
        &allowed,
    ];
    let out = rankmig(&args);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("2 ranks do not fit on 1 slots"),
        "{}",
        stderr(&out)
    );
    // Three cores of package 0: no group of 4 left.
    let three: Vec<String> = machine.cores[..3]
        .iter()
        .flatten()
        .map(u32::to_string)
        .collect();
    let three = three.join(",");
    let mut args = args;
    args[10] = &three;
    let out = rankmig(&args);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("--allowed: no rank slot (a group of 4 leaves of a node)"),
        "{}",
        stderr(&out)
    );
}
