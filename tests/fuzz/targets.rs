//! The parsers under fuzzing, each with its seed inputs, its tokens and the properties
//! a successful parse must have. A target's `run` returns `Err` for a broken property;
//! panics, oversized allocations and slow inputs are caught by the driver.

use std::path::{Path, PathBuf};

use rankmig::availability::{Availability, AvailabilityFormat, MAX_CORES_PER_NODE, is_hostname};
use rankmig::checkpoint::epoch::{CommitMarker, parse_epoch_dir_name, parse_rank_file_name};
use rankmig::checkpoint::job_dir::{job_dir_name, parse_job_dir_name};
use rankmig::checkpoint::storage::{FileHeader, HEADER_LEN, payload_checksum};
use rankmig::matrix::{CommMatrix, MAX_RANKS, MAX_TOTAL_VOLUME, MatrixFormat};
use rankmig::planner::Placement;
use rankmig::topology::{LeafKind, MAX_LEAVES, TopologySpec};
use rankmig::treematch::mapping_file::parse_mapping;

/// One parser under test.
pub struct Target {
    /// Name (also the corpus directory under `tests/fuzz_corpus/`).
    pub name: &'static str,
    /// Valid (or nearly valid) inputs to mutate.
    pub seeds: Vec<Vec<u8>>,
    /// Tokens of the format.
    pub tokens: &'static [&'static str],
    /// Parses one input and checks the result.
    pub run: fn(&Scratch, u64, &[u8]) -> Result<(), String>,
}

/// Files the targets that read from disk write their input to, and a topology that
/// keeps hwloc's components loaded.
pub struct Scratch {
    _dir: tempfile::TempDir,
    file: PathBuf,
    prof_dir: PathBuf,
    /// hwloc loads its plugins when the first topology of the process is created and
    /// unloads them when the last one is dropped: without a topology alive for the
    /// whole run, every synthetic input paid a `dlopen` of every plugin (90% of its
    /// time, about 450 inputs/s).
    _hwloc: Option<hwlocality::Topology>,
}

impl Scratch {
    /// A fresh scratch directory (the `.prof` directory holds a fixed rank-1 dump).
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("scratch dir");
        let prof_dir = dir.path().join("prof");
        std::fs::create_dir(&prof_dir).expect("prof dir");
        std::fs::write(
            prof_dir.join("x.1.prof"),
            "E\t1\t0\t100 bytes\t1 msgs sent\n",
        )
        .expect("rank 1 dump");
        let hwloc = hwlocality::Topology::builder()
            .from_synthetic("pu:1")
            .ok()
            .and_then(|b| b.build().ok());
        Self {
            file: dir.path().join("input.txt"),
            prof_dir,
            _dir: dir,
            _hwloc: hwloc,
        }
    }

    fn write(&self, path: &Path, data: &[u8]) -> Result<(), String> {
        std::fs::write(path, data).map_err(|e| format!("scratch write: {e}"))
    }
}

fn data_file(rel: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every target.
pub fn all() -> Vec<Target> {
    vec![
        Target {
            name: "dense",
            seeds: vec![
                data_file("matrices/cg.S.16.mat"),
                b"0 1 2\n3 0 4\n5 6 0\n".to_vec(),
                b"# c\r\n0 1.5\r\n2e3 0 # x\r\n".to_vec(),
            ],
            tokens: &["0 0 0 0 ", "0", "1", "1.5e3"],
            run: run_dense,
        },
        Target {
            name: "edges",
            seeds: vec![
                b"0 1 10\n1 2 20\n2 3 30\n3 0 40\n".to_vec(),
                b"# c\n0 1048575 1\n5 4 1e3\n".to_vec(),
            ],
            tokens: &["0 1 5\n", "1048575", "1048576"],
            run: run_edges,
        },
        Target {
            name: "prof",
            seeds: vec![
                b"# POINT TO POINT\nE\t0\t1\t10209400 bytes\t9637 msgs sent\t2,0,5\nI\t0\t1\t240 bytes\t12 msgs sent\nC\t0\t1\t5 bytes\n".to_vec(),
            ],
            tokens: &["E\t", "I\t", "C\t", "\t", " bytes", " msgs sent", "0\t1\t"],
            run: run_prof,
        },
        Target {
            name: "availability",
            seeds: vec![
                b"# nodes\nnode01 16\nnode02 0 # drained\nnode03 8 cpus=0-3,8-11\n".to_vec(),
                b"n1 slots=4 max_slots=8\nn2 slots=2\n".to_vec(),
                b"n1:4\nn2:2\n".to_vec(),
                b"n1\nn2\nn1\n".to_vec(),
            ],
            tokens: &["slots=", "max_slots=", "cpus=", "0-3", "0-65535", "n1", "n2", ":"],
            run: run_availability,
        },
        Target {
            name: "placement",
            seeds: vec![
                data_file("scenario/initial_placement.txt"),
                b"0 n1 0\n1 n1 1\n2 n2 0\n".to_vec(),
            ],
            tokens: &["n1", "n2", "1048575", "65535"],
            run: run_placement,
        },
        Target {
            name: "mapping",
            seeds: vec![
                data_file("../scotch/grid4x4-on-2x8.map"),
                b"3\n0\n2\n1\n".to_vec(),
                b"# rank leaf\n2 1\n0 3\n1 0\n3 2\n".to_vec(),
            ],
            tokens: &["\n", " ", "0", "1", "16", "4", "18446744073709551615"],
            run: run_mapping,
        },
        Target {
            name: "checkpoint",
            seeds: vec![header_seed(), marker_seed()],
            tokens: &["format=", "job=", "ranks=", "epoch=", "epoch-", "rank-", ".ckpt", "job-", "%2F"],
            run: run_checkpoint,
        },
        Target {
            name: "synthetic",
            seeds: vec![
                b"pack:2 core:8 pu:1".to_vec(),
                b"2 4 8".to_vec(),
                b"numa:2 pack:1 l3:1 core:4 pu:2".to_vec(),
            ],
            tokens: &["pack:", "core:", "pu:", "numa:", "l3:", "group:", "machine:", "(", ")", "[numa]"],
            run: run_synthetic,
        },
    ]
}

fn header_seed() -> Vec<u8> {
    let header = FileHeader {
        version: 1,
        rank: 3,
        ranks: 8,
        epoch: 42,
        calls: 1000,
        payload_len: 4096,
        checksum: 7,
        job: "jacobi".into(),
    };
    let mut bytes = [0u8; HEADER_LEN];
    header.encode(&mut bytes);
    bytes.to_vec()
}

fn marker_seed() -> Vec<u8> {
    CommitMarker {
        version: 1,
        job: "jacobi".into(),
        ranks: 8,
        epoch: 42,
    }
    .to_text()
    .into_bytes()
}

fn check_matrix(m: &CommMatrix) -> Result<(), String> {
    let n = m.order();
    if n == 0 || n > MAX_RANKS {
        return Err(format!("order {n}"));
    }
    let total = m.total();
    if !(total.is_finite() && total <= MAX_TOTAL_VOLUME) {
        return Err(format!("total {total}"));
    }
    for i in 0..n {
        let mut last = None;
        for (j, w) in m.row(i) {
            if j >= n || j == i || !(w.is_finite() && w > 0.0) || last.is_some_and(|l| l >= j) {
                return Err(format!("entry ({i}, {j}) = {w}"));
            }
            last = Some(j);
        }
    }
    let g = m.symmetric();
    for v in 0..n {
        if g.neighbors(v).any(|(_, w)| !w.is_finite()) {
            return Err(format!("symmetric weight of {v} not finite"));
        }
    }
    Ok(())
}

fn run_matrix(s: &Scratch, index: u64, data: &[u8], format: MatrixFormat) -> Result<(), String> {
    s.write(&s.file, data)?;
    // Every other input goes through auto-detection.
    let format = if index % 2 == 0 {
        format
    } else {
        MatrixFormat::Auto
    };
    match CommMatrix::load(&s.file, format) {
        Ok(m) => check_matrix(&m),
        Err(e) => check_message(&e.to_string()),
    }
}

fn run_dense(s: &Scratch, index: u64, data: &[u8]) -> Result<(), String> {
    run_matrix(s, index, data, MatrixFormat::Dense)
}

fn run_edges(s: &Scratch, index: u64, data: &[u8]) -> Result<(), String> {
    run_matrix(s, index, data, MatrixFormat::Edges)
}

fn run_prof(s: &Scratch, _: u64, data: &[u8]) -> Result<(), String> {
    s.write(&s.prof_dir.join("x.0.prof"), data)?;
    match CommMatrix::load(&s.prof_dir, MatrixFormat::Prof) {
        Ok(m) if m.order() != 2 => Err(format!("order {} from 2 dumps", m.order())),
        Ok(m) => check_matrix(&m),
        Err(e) => check_message(&e.to_string()),
    }
}

fn run_availability(_: &Scratch, index: u64, data: &[u8]) -> Result<(), String> {
    let text = String::from_utf8_lossy(data);
    let formats = [
        AvailabilityFormat::Auto,
        AvailabilityFormat::Native,
        AvailabilityFormat::Hostfile,
        AvailabilityFormat::Colon,
        AvailabilityFormat::Nodefile,
    ];
    let format = formats[(index % formats.len() as u64) as usize];
    let a = match Availability::parse(&text, "av", format) {
        Ok(a) => a,
        Err(e) => return check_message(&e.to_string()),
    };
    let mut names = std::collections::HashSet::new();
    for n in a.nodes() {
        if !is_hostname(&n.name) || !names.insert(n.name.clone()) {
            return Err(format!("node name {:?}", n.name));
        }
        if n.cores == 0 || n.cores > MAX_CORES_PER_NODE {
            return Err(format!("{} offers {} cores", n.name, n.cores));
        }
        if let Some(cpus) = &n.cpus
            && (cpus.len() != n.cores || cpus.windows(2).any(|w| w[0] >= w[1]))
        {
            return Err(format!("{} cpus {cpus:?} for {} cores", n.name, n.cores));
        }
    }
    Ok(())
}

fn run_placement(_: &Scratch, _: u64, data: &[u8]) -> Result<(), String> {
    let text = String::from_utf8_lossy(data);
    let p = match Placement::parse(&text, "p") {
        Ok(p) => p,
        Err(e) => return check_message(&e.to_string()),
    };
    if p.is_empty() || p.len() > MAX_RANKS {
        return Err(format!("{} ranks", p.len()));
    }
    if let Some(bad) = p.locations().iter().find(|l| !is_hostname(&l.node)) {
        return Err(format!("node {:?}", bad.node));
    }
    // The text form reads back as the same placement.
    let again = Placement::parse(&p.to_text(), "again").map_err(|e| format!("reparse: {e}"))?;
    if again.locations() != p.locations() {
        return Err("placement does not round-trip".into());
    }
    Ok(())
}

/// Mappings for 1 to 16 ranks on 16 leaves: every rank gets one leaf of the tree, and
/// the mapping written one leaf per line reads back the same.
fn run_mapping(_: &Scratch, index: u64, data: &[u8]) -> Result<(), String> {
    const LEAVES: usize = 16;
    let ranks = 1 + (index % 16) as usize;
    let text = String::from_utf8_lossy(data);
    let leaves = match parse_mapping(&text, "m", ranks, LEAVES) {
        Ok(leaves) => leaves,
        Err(e) => return check_message(&e.to_string()),
    };
    if leaves.len() != ranks || leaves.iter().any(|&l| l >= LEAVES) {
        return Err(format!("{ranks} ranks mapped to {leaves:?}"));
    }
    let plain: String = leaves.iter().map(|l| format!("{l}\n")).collect();
    let again =
        parse_mapping(&plain, "again", ranks, LEAVES).map_err(|e| format!("reparse: {e}"))?;
    if again != leaves {
        return Err("mapping does not round-trip".into());
    }
    Ok(())
}

fn run_checkpoint(_: &Scratch, index: u64, data: &[u8]) -> Result<(), String> {
    let path = Path::new("ckpt");
    // Headers: half of the inputs get a valid header checksum, to reach the fields.
    let mut bytes = data.to_vec();
    if index % 2 == 0 && bytes.len() >= HEADER_LEN {
        let sum = payload_checksum(&bytes[..120]);
        bytes[120..128].copy_from_slice(&sum.to_le_bytes());
    }
    match FileHeader::decode(&bytes, path) {
        Ok(h) => {
            let mut again = [0u8; HEADER_LEN];
            h.encode(&mut again);
            let back = FileHeader::decode(&again, path).map_err(|e| format!("re-decode: {e}"))?;
            if back != h {
                return Err(format!("header does not round-trip: {h:?}"));
            }
            let _ = h.file_len();
        }
        Err(e) => check_message(&e.to_string())?,
    }
    let text = String::from_utf8_lossy(data);
    match CommitMarker::parse(&text, path) {
        Ok(m) => {
            let back = CommitMarker::parse(&m.to_text(), path)
                .map_err(|e| format!("marker re-parse: {e}"))?;
            if back != m {
                return Err(format!("marker does not round-trip: {m:?}"));
            }
        }
        Err(e) => check_message(&e.to_string())?,
    }
    let first_line = text.lines().next().unwrap_or("");
    if let Some(epoch) = parse_epoch_dir_name(first_line)
        && parse_epoch_dir_name(&rankmig::checkpoint::epoch::epoch_dir_name(epoch)) != Some(epoch)
    {
        return Err(format!("epoch name {first_line:?}"));
    }
    // Any job name maps to a directory name that reads back as that job name.
    if !first_line.is_empty() {
        let name = job_dir_name(first_line);
        if parse_job_dir_name(&name).as_deref() != Some(first_line) {
            return Err(format!(
                "job {first_line:?} -> directory {name:?} does not read back"
            ));
        }
    }
    if let Some(rank) = parse_rank_file_name(first_line)
        && parse_rank_file_name(&rankmig::checkpoint::epoch::rank_file_name(rank)) != Some(rank)
    {
        return Err(format!("rank file name {first_line:?}"));
    }
    Ok(())
}

fn run_synthetic(_: &Scratch, index: u64, data: &[u8]) -> Result<(), String> {
    let text = String::from_utf8_lossy(data).into_owned();
    let leaves = if index % 2 == 0 {
        LeafKind::Core
    } else {
        LeafKind::Pu
    };
    match TopologySpec::Synthetic(text).load(leaves) {
        Ok(t) if t.leaf_count() == 0 || t.leaf_count() > MAX_LEAVES => {
            Err(format!("{} leaves", t.leaf_count()))
        }
        Ok(_) => Ok(()),
        Err(e) => check_message(&e.to_string()),
    }
}

/// An error message must be one readable paragraph of bounded size.
fn check_message(msg: &str) -> Result<(), String> {
    if msg.is_empty() || msg.len() > 16 * 1024 {
        return Err(format!("error message of {} bytes", msg.len()));
    }
    Ok(())
}
