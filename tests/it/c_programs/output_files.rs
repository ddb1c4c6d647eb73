//! Output files written through rankmig (`rankmig_open_output`, issue 54): a C program
//! (`tests/c/output_lines.c`) and its Fortran twin (`tests/fortran/output_lines.f90`),
//! built against the installed prefix through pkg-config, write one line per iteration
//! to a file per rank and to a file of rank 0 alone. After a live migration that moves
//! rank 0, and after a rank is SIGKILLed and `rankmig run --auto-restart 1` restarts the
//! job from its checkpoint, each file holds each iteration's line exactly once, in
//! order.
//!
//! Each step waits for what the job records (its iteration records, a reconfiguration,
//! a process's arrival or start, a committed epoch, lines in the files), not for a time.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::OnceLock;

use crate::support::job::{Hung, Job, retry_on_hang, set_availability, wait_for};
use crate::support::{
    self, has_committed_epoch, mpi_lock, prefix, processes_csv, rankmig, records,
};

const RANKS: usize = 4;

/// The language of the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lang {
    C,
    Fortran,
}

/// The program, built once per test binary; `None` (the skip logged) for Fortran with
/// an MPI without a Fortran wrapper (PyPI's).
fn program(lang: Lang) -> Option<&'static Path> {
    static C: OnceLock<PathBuf> = OnceLock::new();
    static FORTRAN: OnceLock<Option<PathBuf>> = OnceLock::new();
    match lang {
        Lang::C => Some(C.get_or_init(|| {
            support::build_c_program("tests/c/output_lines.c", "output-lines-c", &[])
        })),
        Lang::Fortran => FORTRAN.get_or_init(build_fortran).as_deref(),
    }
}

/// The Fortran program built with `mpif90` against `rankmig-fortran` of the installed
/// prefix, or `None` when the prefix has no Fortran modules (no Fortran wrapper).
fn build_fortran() -> Option<PathBuf> {
    let pc = prefix::library_prefix().join("lib/pkgconfig/rankmig-fortran.pc");
    if !pc.exists() {
        return None;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = prefix::programs_dir().join("output-lines-f");
    let source = root.join("tests/fortran/output_lines.f90");
    let out = prefix::compile_against_prefix("mpif90", "rankmig-fortran", &[&source], &exe, &[])
        .output()
        .expect("mpif90 runs");
    assert!(
        out.status.success(),
        "mpif90 could not build {}:\n{}",
        source.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(exe)
}

/// The program of `lang`, or `None` after logging why it is not tested with this MPI.
fn program_or_skip(lang: Lang) -> Option<&'static Path> {
    let found = program(lang);
    if found.is_none() {
        support::skip::not_for_this_mpi(
            "this MPI has no Fortran wrapper: the prefix has no Fortran modules",
        );
    }
    found
}

/// `rankmig run` of `program` on [`RANKS`] ranks on logical nodes n1:2 n2:2 in `d`
/// (run directory `run`, checks every 200 calls), stopped through `d/stop`.
fn start(d: &Path, program: &Path, options: &[&str], program_args: &[&str], every: &str) -> Job {
    set_availability(d, "n1 2\nn2 2\n");
    let child = rankmig()
        .current_dir(d)
        .env("RANKMIG_CKPT_EVERY", every)
        .args([
            "run",
            "-n",
            &RANKS.to_string(),
            "-a",
            "av",
            "--run-dir",
            "run",
        ])
        .args(["--check-every", "200", "--settle", "0"])
        .args(options)
        .arg("--")
        .arg(program)
        .args(["--iters", "100000000", "--pause-us", "400", "--stop-file"])
        .arg(d.join("stop"))
        .args(program_args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rankmig run");
    Job(Some(child))
}

/// The iterations the program ran ("output-lines: N iterations").
fn iterations(out: &Output) -> u64 {
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("output-lines: "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| {
            panic!(
                "no iteration count: {stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

/// The iteration of a line "iteration N..." (N followed by padding or " sum S").
fn iteration_of(line: &str) -> Option<u64> {
    let rest = line.strip_prefix("iteration ")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    rest[..digits].parse().ok()
}

/// The iteration of each line of `path`.
fn lines_of(path: &Path) -> Vec<u64> {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| iteration_of(l).unwrap_or_else(|| panic!("{}: {l:?}", path.display())))
        .collect()
}

/// The last whole line's iteration of `path` (0 without one).
fn last_line(path: &Path) -> u64 {
    let text = fs::read(path).unwrap_or_default();
    let whole = text.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    String::from_utf8_lossy(&text[..whole])
        .lines()
        .last()
        .and_then(iteration_of)
        .unwrap_or(0)
}

/// Asserts that every rank's file and rank 0's `all.txt` hold the lines of iterations
/// 1 to `last`, each once, in order.
fn assert_each_line_once(d: &Path, last: u64, what: &str) {
    let expected: Vec<u64> = (1..=last).collect();
    let mut files: Vec<PathBuf> = (0..RANKS).map(|r| d.join(format!("out-{r}.txt"))).collect();
    files.push(d.join("all.txt"));
    for file in files {
        let got = lines_of(&file);
        let first_wrong = got.iter().zip(&expected).position(|(g, e)| g != e);
        assert!(
            got == expected,
            "{what}: {} holds {} lines for {last} iterations; first out of place at line {:?}: {:?}",
            file.display(),
            got.len(),
            first_wrong.map(|i| i + 1),
            first_wrong.map(|i| &got[i..(i + 5).min(got.len())])
        );
    }
}

/// Rows `(rank, event, iteration)` of the run directory's `processes.csv`.
fn process_events(run: &Path) -> Vec<(usize, String, u64)> {
    let text = fs::read_to_string(run.join("processes.csv")).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            Some((
                f.first()?.parse().ok()?,
                f.get(4)?.to_string(),
                f.get(8)?.parse().ok()?,
            ))
        })
        .collect()
}

/// Rank 0 moves (its node n1 is taken back) live, with rank 1; ranks 2 and 3 stay.
fn moved_live(lang: Lang, program: &Path) -> Result<(), Hung> {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let run = d.join("run");
    let job = start(d, program, &[], &[], "5000");
    wait_for("the job to start", || {
        run.join("iterations/rank-0.csv").exists()
    })?;
    set_availability(d, "n2 2\nn3 2\n");
    wait_for("the migration", || !records(&run).is_empty())?;
    assert_eq!(
        records(&run)[0]["outcome"],
        "migrated",
        "{lang:?}: {:?}",
        records(&run)
    );
    wait_for("rank 0's arrival", || {
        processes_csv(&run)
            .iter()
            .any(|p| p.0 == 0 && p.3 == "arrived")
    })?;
    let size = || fs::metadata(run.join("iterations/rank-0.csv")).map_or(0, |m| m.len());
    let after = size();
    wait_for("iterations after the migration", || size() > after + 1000)?;
    fs::write(d.join("stop"), "").expect("stop file");
    let out = job.finish()?;
    assert!(
        out.status.success(),
        "{lang:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_each_line_once(d, iterations(&out), &format!("{lang:?} migrated"));
    Ok(())
}

/// Checkpoints every 2000 iterations, lines of 2 KiB (so the files hold the lines of
/// the iterations after the last checkpoint when the rank is killed): rank 2 is
/// SIGKILLed at least 300 iterations after a checkpoint; the restart cuts what was
/// written after the checkpoint it restores, and writes it again.
fn killed_and_restarted(lang: Lang, program: &Path) -> Result<(), Hung> {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let run = d.join("run");
    let job = start(
        d,
        program,
        &["--auto-restart", "1"],
        &["--line-bytes", "2048"],
        "2000",
    );
    let out2 = d.join("out-2.txt");
    wait_for("a committed checkpoint and lines well after it", || {
        let last = last_line(&out2);
        has_committed_epoch(&run.join("ckpt"))
            && last > 2000
            && (300..1700).contains(&(last % 2000))
    })?;
    let pid = processes_csv(&run)
        .iter()
        .rev()
        .find(|p| p.0 == 2 && p.3 == "start")
        .map(|p| p.1)
        .expect("rank 2 started");
    let written = last_line(&out2);
    // SAFETY: kill(2) on a rank of the job this test started.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let restarted = || {
        process_events(&run)
            .into_iter()
            .find(|(rank, event, _)| *rank == 2 && event == "restarted")
            .map(|(_, _, iteration)| iteration)
    };
    wait_for("the restart", || restarted().is_some())?;
    wait_for("lines past the point of the kill", || {
        last_line(&out2) > written + 100
    })?;
    fs::write(d.join("stop"), "").expect("stop file");
    let out = job.finish()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{lang:?}: {stderr}");
    assert!(
        stderr.contains("was killed by signal 9 (SIGKILL)"),
        "{lang:?}: {stderr}"
    );
    let from = restarted().unwrap_or(0);
    assert!(
        from < written,
        "{lang:?}: restarted at iteration {from}, the file held lines to {written}: \
         nothing was there to cut"
    );
    assert_each_line_once(
        d,
        iterations(&out),
        &format!("{lang:?} restarted at {from}"),
    );
    Ok(())
}

#[test]
fn a_c_program_s_output_files_hold_each_line_once_after_a_migration() {
    let _lock = mpi_lock();
    let program = program(Lang::C).expect("mpicc");
    retry_on_hang(|| moved_live(Lang::C, program));
}

#[test]
fn a_c_program_s_output_files_hold_each_line_once_after_a_restart() {
    let _lock = mpi_lock();
    let program = program(Lang::C).expect("mpicc");
    retry_on_hang(|| killed_and_restarted(Lang::C, program));
}

#[test]
fn a_fortran_program_s_output_files_hold_each_line_once_after_a_migration() {
    let _lock = mpi_lock();
    let Some(program) = program_or_skip(Lang::Fortran) else {
        return;
    };
    retry_on_hang(|| moved_live(Lang::Fortran, program));
}

#[test]
fn a_fortran_program_s_output_files_hold_each_line_once_after_a_restart() {
    let _lock = mpi_lock();
    let Some(program) = program_or_skip(Lang::Fortran) else {
        return;
    };
    retry_on_hang(|| killed_and_restarted(Lang::Fortran, program));
}
