//! A code nobody here wrote: HPCC 1.5.0's MPI RandomAccess (Debian source package
//! `hpcc`), with the rankmig calls added (`examples/thirdparty/hpcc-randomaccess`),
//! built with real `mpicc`, run under plain `mpirun`, then under `rankmig run` with two
//! availability edits that move ranks live (rank 0 among them): the table's checksum and
//! HPCC's own verification must not change.
#![cfg(feature = "mpi")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::job::{Hung, Job, retry_on_hang, set_availability, wait_for};
use crate::support::prefix::compile_against_prefix;
use crate::support::{checksum, mpi_lock, rankmig};
use rankmig::run_dir::record::{Reconfiguration, read_reconfigurations};

const RANKS: usize = 8;
/// HPCC's memory per process (bytes): a table of 2^22 words, 2048 loop iterations.
const MEMORY: &str = "4194304";

/// Builds the benchmark with `mpicc` against the library-only prefix into `dir`; `None`
/// when `mpicc` cannot be run (the prefix install before it needs `mpicc` too).
fn build(dir: &Path) -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let code = root.join("examples/thirdparty/hpcc-randomaccess");
    let ours = code.join("rankmig/RandomAccess");
    let out = dir.join("randomaccess");
    // Against the installed prefix, through pkg-config, as a user builds it.
    let mut sources = vec![code.join("rankmig/driver.c")];
    for file in [
        "MPIRandomAccess.c",
        "MPIRandomAccess_vanilla.c",
        "verification.c",
        "utility.c",
    ] {
        sources.push(ours.join(file));
    }
    let sources: Vec<&Path> = sources.iter().map(PathBuf::as_path).collect();
    let mut cmd = compile_against_prefix("mpicc", "rankmig", &sources, &out, &["-lxxhash"]);
    cmd.args(["-DRA_SANDIA_NOPT", "-DLONG_IS_64BITS"])
        .arg("-I")
        .arg(code.join("original/include"))
        .arg("-I")
        .arg(code.join("original/hpl/include"));
    match cmd.output() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => panic!("mpicc: {e}"),
        Ok(o) => {
            assert!(
                o.status.success(),
                "mpicc failed:\n{}",
                String::from_utf8_lossy(&o.stderr)
            );
            Some(out)
        }
    }
}

/// HPCC's verdict and the result line of the driver, which must not change either.
fn results(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("Found ") || l.starts_with("result: "))
        .map(str::to_owned)
        .collect()
}

fn reference(program: &Path, dir: &Path) -> Output {
    Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np"])
        .arg(RANKS.to_string())
        .arg(program)
        .arg(MEMORY)
        .env("RANKMIG_CKPT_DIR", dir.join("unused-ckpt"))
        .current_dir(dir)
        .output()
        .expect("mpirun runs")
}

fn records(dir: &Path) -> Vec<Reconfiguration> {
    read_reconfigurations(&dir.join("run")).unwrap_or_default()
}

/// The run directory holds the placement of a launch again after a hung spawn.
fn relaunched(dir: &Path) -> bool {
    dir.join("run/placement-restart-1.txt").exists()
}

/// Two availability changes: n1's ranks (0 and 1) to n5, then n2's ranks spread out,
/// the second edit written as soon as the first change was carried out. Each is
/// carried out live, or, when Open MPI leaves the spawn hanging (see
/// `rankmig::run_dir::spawn_watch`), by launching the job again after 10 s from the
/// checkpoint taken before the spawn.
fn migrated(program: &Path) -> Result<(Output, Vec<Reconfiguration>, String), Hung> {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    set_availability(d, "n1 2\nn2 2\nn3 2\nn4 2\n");
    let job = Job(Some(
        rankmig()
            .current_dir(d)
            .args(["run", "-n", &RANKS.to_string(), "--availability", "av"])
            .args(["--run-dir", "run", "--check-every", "20", "--settle", "0"])
            .args(["--spawn-timeout", "10"])
            .arg("--")
            .arg(program)
            .arg(MEMORY)
            .stdout(std::fs::File::create(d.join("out.txt")).unwrap())
            .stderr(std::fs::File::create(d.join("err.txt")).unwrap())
            .spawn()
            .expect("rankmig run starts"),
    ));
    // On a hang, say what the run had printed (files, not pipes: nothing can block).
    let said = |Hung(why): Hung| {
        let err = std::fs::read_to_string(d.join("err.txt")).unwrap_or_default();
        Hung(format!("{why}; rankmig run's stderr so far:\n{err}"))
    };
    wait_for("the first availability check", || {
        d.join("run/iterations/rank-0.csv").exists()
    })
    .map_err(said)?;
    set_availability(d, "n1 0\nn2 2\nn3 2\nn4 2\nn5 2\n");
    wait_for("the first reconfiguration", || {
        !records(d).is_empty() || relaunched(d)
    })
    .map_err(said)?;
    set_availability(d, "n3 2\nn4 2\nn5 2\n");
    let mut out = job.finish().map_err(said)?;
    out.stdout = std::fs::read(d.join("out.txt")).unwrap_or_default();
    out.stderr = std::fs::read(d.join("err.txt")).unwrap_or_default();
    let processes = std::fs::read_to_string(d.join("run/processes.csv")).unwrap_or_default();
    Ok((out, records(d), processes))
}

#[test]
fn hpcc_randomaccess_migrates_live_with_an_unchanged_result() {
    let _lock = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    let Some(program) = build(dir.path()) else {
        crate::support::skip::on_this_machine(
            "no mpicc on this machine, HPCC RandomAccess not built",
        );
        return;
    };
    let reference = reference(&program, dir.path());
    let expected = checksum(&reference);
    let expected_results = results(&reference);
    assert_eq!(
        expected_results,
        [
            "Found 0 errors in 4194304 locations (passed).",
            "result: N=4194304 errors=0 passed"
        ],
        "{}",
        String::from_utf8_lossy(&reference.stdout)
    );

    let (out, recs, processes) = retry_on_hang(|| migrated(&program));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        checksum(&out),
        expected,
        "migrated run differs from a static run:\n{stdout}"
    );
    assert_eq!(results(&out), expected_results, "{stdout}");
    // Every change carried out live moved 2 ranks; a hung spawn was relaunched.
    assert!(!recs.is_empty(), "{recs:?}\n{stderr}");
    for r in &recs {
        assert_eq!(r.outcome, "migrated", "{r:?}");
        assert_eq!(r.moves, 2, "{r:?}");
        assert!(r.state_bytes > 0, "{r:?}");
    }
    if recs.len() < 2 {
        assert!(stderr.contains("has not completed after 10 s"), "{stderr}");
    }
    // Whichever way, the 8 ranks finish on the nodes left: n3, n4, n5.
    let finished: Vec<&str> = processes
        .lines()
        .filter(|l| l.split(',').nth(4) == Some("finish"))
        .collect();
    assert_eq!(finished.len(), RANKS, "{processes}");
    for line in finished {
        let node = line.split(',').nth(2).unwrap_or("");
        assert!(["n3", "n4", "n5"].contains(&node), "{processes}");
    }
}
