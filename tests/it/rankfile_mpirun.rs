//! `rankmig map --format rankfile` files given to the installed Open MPI `mpirun`.
//!
//! This machine may have one hardware thread per core, so the hyperthreaded case gives
//! mpirun a real hwloc export of a 2 x 8-core, 2-thread machine
//! (`--mca hwloc_base_topo_file`): mpirun maps and binds against that tree; the bind
//! itself then fails on this machine, which Open MPI reports as a warning naming the
//! CPUs it tried (`bitmap "c,t"`), and the job still runs.

use crate::support::{data, mpi_lock};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

fn rankmig(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_rankmig"))
        .args(args)
        .output()
        .expect("run rankmig");
    assert!(
        out.status.success(),
        "rankmig {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `mpirun --rankfile FILE -np N [extra] true`, allowed to run as root; one MPI job at a
/// time ([`mpi_lock`]): concurrent ones on this small machine can stall.
fn mpirun(rankfile: &Path, ranks: usize, extra: &[&str]) -> Output {
    let _one = mpi_lock();
    // A stalled mpirun fails the test instead of hanging it.
    Command::new("timeout")
        .args(["120", "mpirun"])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .args(extra)
        .arg("--rankfile")
        .arg(rankfile)
        .args(["-np", &ranks.to_string(), "true"])
        .output()
        .expect("run mpirun")
}

/// The `slot=` value of each line, in rank order (lines are written in rank order).
fn slots(rankfile: &str) -> Vec<u32> {
    rankfile
        .lines()
        .enumerate()
        .map(|(rank, line)| {
            assert!(line.starts_with(&format!("rank {rank}=")), "{line}");
            let slot = line.rsplit_once("slot=").expect("slot=").1;
            slot.parse().expect("numeric slot")
        })
        .collect()
}

#[test]
fn a_pu_rankfile_of_a_hyperthreaded_machine_runs_under_plain_mpirun() {
    let xml = data("topologies/32em64t-2n8c2t-pci-noio.xml");
    let topology = format!("xml:{}", xml.display());
    let matrix = data("matrices/lu.W.16.mat");
    let matrix = matrix.to_str().unwrap();
    // OS CPUs 16-31 are the second hardware thread of each of the 16 cores.
    let map = |format: &str| {
        rankmig(&[
            "map",
            "--matrix",
            matrix,
            "-t",
            &topology,
            "--leaves",
            "pu",
            "--allowed",
            "16-31",
            "--format",
            format,
        ])
        .stdout
    };
    let json: serde_json::Value = serde_json::from_slice(&map("json")).unwrap();
    let ranks = json["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 16);
    let rankfile = String::from_utf8(map("rankfile")).unwrap();
    let slots = slots(&rankfile);
    for (rank, r) in ranks.iter().enumerate() {
        let cpu = r["cpu"].as_u64().unwrap();
        assert!((16..32).contains(&cpu), "rank {rank} on CPU {cpu}");
        // The slot is the core of the rank's hardware thread, not the thread's index.
        assert_eq!(u64::from(slots[rank]), r["core"].as_u64().unwrap());
        assert_ne!(u64::from(slots[rank]), r["leaf"].as_u64().unwrap());
    }

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rankfile");
    std::fs::write(&path, &rankfile).unwrap();
    let topo_file = xml.to_str().unwrap();
    let out = mpirun(
        &path,
        16,
        &[
            "--mca",
            "hwloc_base_topo_file",
            topo_file,
            "--mca",
            "orte_base_help_aggregate",
            "0",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "mpirun refused it: {stderr}");
    // Each rank was bound to the two threads of its core: core c has CPUs c and c+16.
    // The bind fails, and is reported, unless the set holds a CPU of this machine.
    let reported: BTreeSet<String> = stderr
        .split("bitmap \"")
        .skip(1)
        .filter_map(|s| s.split('"').next().map(str::to_owned))
        .collect();
    let here = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let expected: BTreeSet<String> = ranks
        .iter()
        .map(|r| r["cpu"].as_u64().unwrap() - 16)
        .filter(|&core| core >= here)
        .map(|core| format!("{core},{}", core + 16))
        .collect();
    assert_eq!(reported, expected, "{stderr}");

    // The control: the same ranks with the hardware-thread index as the slot, as
    // rankmig wrote before, make this mpirun fail.
    let old: String = ranks
        .iter()
        .map(|r| {
            format!(
                "rank {}=localhost slot={}\n",
                r["rank"].as_u64().unwrap(),
                r["leaf"].as_u64().unwrap()
            )
        })
        .collect();
    std::fs::write(&path, old).unwrap();
    let out = mpirun(&path, 16, &["--mca", "hwloc_base_topo_file", topo_file]);
    assert!(!out.status.success(), "thread indexes were accepted");
}

#[test]
fn a_pu_rankfile_of_this_machine_binds_under_mpirun() {
    let dir = tempfile::tempdir().unwrap();
    let matrix = dir.path().join("pair.mat");
    std::fs::write(&matrix, "0 1000\n1000 0\n").unwrap();
    let out = rankmig(&[
        "map",
        "--matrix",
        matrix.to_str().unwrap(),
        "--leaves",
        "pu",
        "--format",
        "rankfile",
    ]);
    let rankfile = String::from_utf8(out.stdout).unwrap();
    assert_eq!(slots(&rankfile).len(), 2);
    let path = dir.path().join("rankfile");
    std::fs::write(&path, &rankfile).unwrap();
    let out = mpirun(&path, 2, &["--report-bindings"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "mpirun refused it: {stderr}");
    assert_eq!(stderr.matches("bound to").count(), 2, "{stderr}");
    assert!(!stderr.contains("not bound"), "{stderr}");
}

#[test]
fn a_place_rankfile_with_pu_leaves_names_cores_and_runs_under_mpirun() {
    let xml = data("topologies/32em64t-2n8c2t-pci-noio.xml");
    let dir = tempfile::tempdir().unwrap();
    // The PU leaves 16-31 of this machine: both threads of cores 8-15.
    let availability = dir.path().join("here.avail");
    std::fs::write(&availability, "localhost 16 cpus=16-31\n").unwrap();
    let place = |format: &str| {
        let out = rankmig(&[
            "place",
            "--availability",
            availability.to_str().unwrap(),
            "--matrix",
            data("matrices/lu.W.16.mat").to_str().unwrap(),
            "--node-topology",
            &format!("xml:{}", xml.display()),
            "--leaves",
            "pu",
            "--format",
            format,
        ]);
        String::from_utf8(out.stdout).unwrap()
    };
    // RANK NODE LEAF lines; on this machine PU leaf l is a thread of core l / 2.
    let leaves: Vec<u32> = place("text")
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().nth(2).unwrap().parse().unwrap())
        .collect();
    assert_eq!(leaves.len(), 16);
    assert!(leaves.iter().all(|&l| l >= 16), "{leaves:?}");
    let rankfile = place("rankfile");
    let slots = slots(&rankfile);
    let cores: Vec<u32> = leaves.iter().map(|l| l / 2).collect();
    assert_eq!(slots, cores, "{rankfile}");
    let path = dir.path().join("rankfile");
    std::fs::write(&path, &rankfile).unwrap();
    let out = mpirun(
        &path,
        16,
        &["--mca", "hwloc_base_topo_file", xml.to_str().unwrap()],
    );
    assert!(
        out.status.success(),
        "mpirun refused it: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
