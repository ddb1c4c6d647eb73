//! A checkpoint directory holding things rankmig did not put there (issue 11, sections
//! 1 and 2): links, FIFOs, devices, unreadable files, another job's epochs, shared
//! permissions, absurd epoch numbers. Real files in temporary directories, the library
//! with one rank (`LocalCollective`) and the `rankmig inspect` binary.
//!
//! Anything that could hang on the code being tested runs on a thread or in a child
//! process with a time limit, and reads that could run away run under `ulimit -v`.

use std::fs;
use std::os::unix::fs::{FileTypeExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rankmig::checkpoint::epoch::{COMMIT_MARKER, SPARE_DIR, epoch_dir_name, rank_file_name};
use rankmig::checkpoint::job_dir::job_epochs_dir;
use rankmig::checkpoint::{CheckpointConfig, CheckpointContext, CheckpointError, LocalCollective};

/// Time any single library call or `inspect` run may take here.
const LIMIT: Duration = Duration::from_secs(20);

fn config(dir: &Path, job: &str, keep: usize) -> CheckpointConfig {
    CheckpointConfig::new(dir).job(job).every(1).keep(keep)
}

/// A fresh run of `job` saving `saves` states `vec![i; 64]`, i = 1..=saves.
fn save_states(dir: &Path, job: &str, keep: usize, saves: u64) -> Result<(), CheckpointError> {
    let mut ctx = CheckpointContext::new(config(dir, job, keep), LocalCollective)?;
    for i in 1..=saves {
        ctx.checkpoint(&vec![i; 64])?;
    }
    ctx.finalize()
}

/// Restarts `job` from `dir`; the value saved in the restored state, and the epoch.
fn restart(dir: &Path, job: &str) -> Result<(u64, u64), CheckpointError> {
    let cfg = config(dir, job, 10).restart(true);
    let mut ctx = CheckpointContext::new(cfg, LocalCollective)?;
    let state: Vec<u64> = ctx.restore()?;
    let epoch = ctx.restored_epoch().unwrap_or(0);
    // A save after the restart must work too.
    ctx.checkpoint(&state)?;
    ctx.finalize()?;
    Ok((state[0], epoch))
}

/// Runs `f` on a thread; panics if it takes longer than [`LIMIT`] (a hang).
fn within_limit<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(LIMIT) {
        Ok(v) => v,
        Err(_) => panic!("{what} did not return within {LIMIT:?} (hangs)"),
    }
}

/// `rankmig inspect DIR [--verify]` under a 1 GiB address-space limit, killed after
/// [`LIMIT`] (which fails the test).
fn inspect(dir: &Path, verify: bool) -> Output {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("ulimit -v 1048576; exec \"$0\" inspect \"$1\" $2")
        .arg(env!("CARGO_BIN_EXE_rankmig"))
        .arg(dir)
        .arg(if verify { "--verify" } else { "" })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn rankmig inspect");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("rankmig inspect {} hangs", dir.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Job `job`'s directory in the checkpoint directory `dir`.
fn job_path(dir: &Path, job: &str) -> PathBuf {
    job_epochs_dir(dir, job)
}

/// Epoch `epoch` of job "j" (most tests' job).
fn epoch_path(dir: &Path, epoch: u64) -> PathBuf {
    job_path(dir, "j").join(epoch_dir_name(epoch))
}

fn rank_path(dir: &Path, epoch: u64) -> PathBuf {
    epoch_path(dir, epoch).join(rank_file_name(0))
}

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo")
        .arg(path)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "mkfifo {}", path.display());
}

/// An outside directory with a file and a sub-directory holding a file.
fn victim_dir(root: &Path) -> PathBuf {
    let v = root.join("victim");
    fs::create_dir_all(v.join("sub")).unwrap();
    fs::write(v.join("precious.txt"), b"precious").unwrap();
    fs::write(v.join("sub/deep.txt"), b"deep").unwrap();
    v
}

fn assert_victim_intact(v: &Path) {
    assert_eq!(
        fs::read(v.join("precious.txt")).ok().as_deref(),
        Some(&b"precious"[..])
    );
    assert_eq!(
        fs::read(v.join("sub/deep.txt")).ok().as_deref(),
        Some(&b"deep"[..])
    );
}

/// The checkpoint directory inside a private temporary root (the root also holds the
/// "outside" victims).
fn setup() -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("ckpt");
    (root, dir)
}

// ---- section 1: links, FIFOs, devices, shared directories ----

/// Two more saves into `dir` (job `j`, keeping `keep`), on a thread with a time limit.
fn two_more_saves(dir: &Path, keep: usize) -> Result<(), CheckpointError> {
    let dir = dir.to_path_buf();
    within_limit("save", move || {
        let mut ctx = CheckpointContext::new(config(&dir, "j", keep), LocalCollective)?;
        ctx.checkpoint(&vec![7u64; 64])?;
        ctx.checkpoint(&vec![8u64; 64])?;
        ctx.finalize()
    })
}

/// Every regular file under `dir` is private (no group or other bits).
fn assert_all_private(dir: &Path) {
    for e in fs::read_dir(dir).unwrap().flatten() {
        let meta = fs::symlink_metadata(e.path()).unwrap();
        if meta.is_dir() {
            assert_all_private(&e.path());
        } else if meta.is_file() {
            assert_eq!(meta.permissions().mode() & 0o077, 0, "{:?}", e.path());
        }
    }
}

#[test]
fn symlinked_spare_file_is_never_written_through() {
    let (root, dir) = setup();
    // keep 1: the retired epoch 1 leaves a spare file for rank 0.
    save_states(&dir, "j", 1, 2).unwrap();
    let victim = root.path().join("victim.txt");
    fs::write(&victim, b"precious").unwrap();
    fs::set_permissions(&victim, fs::Permissions::from_mode(0o644)).unwrap();
    let spare = job_path(&dir, "j").join(SPARE_DIR).join(rank_file_name(0));
    fs::remove_file(&spare).unwrap();
    symlink(&victim, &spare).unwrap();
    let r = two_more_saves(&dir, 1);
    assert_eq!(fs::read(&victim).unwrap(), b"precious", "{r:?}");
    r.unwrap();
    assert_eq!(restart(&dir, "j").unwrap().0, 8);
    assert_all_private(&dir);
}

/// The spare directory itself a link to an outside copy (issue 22): the files there
/// are a victim's, and neither a later save nor a restart may take, move or remove them.
#[test]
fn symlinked_spare_directory_is_never_emptied() {
    let (root, dir) = setup();
    save_states(&dir, "j", 1, 2).unwrap();
    let outside = root.path().join("outside-spare");
    fs::rename(job_path(&dir, "j").join(SPARE_DIR), &outside).unwrap();
    symlink(&outside, job_path(&dir, "j").join(SPARE_DIR)).unwrap();
    let kept = |name: &str| fs::read(outside.join(name)).ok();
    let before = kept(&rank_file_name(0));
    assert!(before.is_some(), "the retired epoch left no spare file");
    let r = two_more_saves(&dir, 1);
    assert_eq!(kept(&rank_file_name(0)), before, "{r:?}");
    r.unwrap();
    assert_eq!(restart(&dir, "j").unwrap().0, 8);
    assert_eq!(kept(&rank_file_name(0)), before);
    assert!(
        fs::symlink_metadata(job_path(&dir, "j").join(SPARE_DIR))
            .is_ok_and(|m| m.file_type().is_symlink()),
        "the link itself is the user's: left alone"
    );
}

/// Two jobs in one checkpoint directory (issue 22): A commits, B commits newer epochs,
/// then A restarts: it restores its own newest epoch, and B's epochs are kept.
#[test]
fn a_restart_restores_its_own_jobs_newest_epoch() {
    let (_root, dir) = setup();
    save_states(&dir, "a", 10, 2).unwrap();
    save_states(&dir, "b", 10, 4).unwrap();
    let (value, epoch) = within_limit("restart of a", {
        let dir = dir.clone();
        move || restart(&dir, "a")
    })
    .unwrap();
    assert_eq!(value, 2, "a's newest state");
    assert_eq!(epoch, 2, "a's newest epoch");
    let (value, _) = restart(&dir, "b").unwrap();
    assert_eq!(value, 4, "b's epochs survived a's restart");
}

#[test]
fn symlinked_temporary_file_is_never_written_through() {
    let (root, dir) = setup();
    // keep 10: no spare, the save creates its temporary file.
    save_states(&dir, "j", 10, 2).unwrap();
    let victim = root.path().join("victim.txt");
    fs::write(&victim, b"precious").unwrap();
    fs::set_permissions(&victim, fs::Permissions::from_mode(0o644)).unwrap();
    // The link appears while the job runs, in the epoch it is about to write.
    let r = within_limit("save", {
        let (dir, victim) = (dir.clone(), victim.clone());
        move || {
            let mut ctx = CheckpointContext::new(config(&dir, "j", 10), LocalCollective)?;
            fs::create_dir(epoch_path(&dir, 3)).unwrap();
            let tmp = epoch_path(&dir, 3).join(format!(".{}.tmp", rank_file_name(0)));
            symlink(&victim, tmp).unwrap();
            ctx.checkpoint(&vec![7u64; 64])?;
            ctx.checkpoint(&vec![8u64; 64])?;
            ctx.finalize()
        }
    });
    assert_eq!(fs::read(&victim).unwrap(), b"precious", "{r:?}");
    r.unwrap();
    assert_eq!(restart(&dir, "j").unwrap().0, 8);
    assert_all_private(&dir);
}

#[test]
fn symlinked_epoch_directory_is_never_emptied_by_retention() {
    let (root, dir) = setup();
    let victim = victim_dir(root.path());
    for d in [dir.clone(), job_path(&dir, "j")] {
        fs::create_dir(&d).unwrap();
        fs::set_permissions(&d, fs::Permissions::from_mode(0o700)).unwrap();
    }
    // An old "epoch" that is a link to the victim; retention would retire it.
    symlink(&victim, epoch_path(&dir, 1)).unwrap();
    fs::write(
        victim.join(COMMIT_MARKER),
        b"format=1\njob=j\nranks=1\nepoch=1\n",
    )
    .unwrap();
    fs::write(victim.join(rank_file_name(0)), b"x").unwrap();
    let r = within_limit("saves with retention", {
        let dir = dir.clone();
        move || save_states(&dir, "j", 1, 3)
    });
    assert_victim_intact(&victim);
    assert!(victim.join(rank_file_name(0)).exists(), "{r:?}");
    r.unwrap();
}

#[test]
fn symlinked_newer_epoch_is_never_emptied_at_restart() {
    let (root, dir) = setup();
    let victim = victim_dir(root.path());
    save_states(&dir, "j", 10, 2).unwrap();
    // A newer "epoch" linking outside: restart skips it and must not discard it.
    symlink(&victim, epoch_path(&dir, 9)).unwrap();
    for _ in 0..2 {
        let r = within_limit("restart", {
            let dir = dir.clone();
            move || restart(&dir, "j")
        });
        assert_victim_intact(&victim);
        assert_eq!(r.unwrap().0, 2);
    }
}

#[test]
fn fifo_rank_file_or_marker_hangs_nothing() {
    let (_root, dir) = setup();
    save_states(&dir, "j", 10, 3).unwrap();
    fs::remove_file(rank_path(&dir, 3)).unwrap();
    mkfifo(&rank_path(&dir, 3));
    let marker = epoch_path(&dir, 2).join(COMMIT_MARKER);
    fs::remove_file(&marker).unwrap();
    mkfifo(&marker);
    let out = inspect(&dir, true);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("not a regular file"), "{}", text(&out));
    let r = within_limit("restart", {
        let dir = dir.clone();
        move || restart(&dir, "j")
    });
    assert_eq!(r.unwrap().0, 1, "restored from the only readable epoch");
    // A fresh run applies retention over the FIFOs.
    let r = within_limit("fresh run", {
        let dir = dir.clone();
        move || save_states(&dir, "j", 1, 2)
    });
    r.unwrap();
    // The FIFOs are not ours to remove: they are still there.
    let meta = fs::symlink_metadata(rank_path(&dir, 3)).unwrap();
    assert!(meta.file_type().is_fifo());
}

#[test]
fn rank_file_linked_to_dev_zero_is_not_read_forever() {
    let (_root, dir) = setup();
    save_states(&dir, "j", 10, 2).unwrap();
    fs::remove_file(rank_path(&dir, 2)).unwrap();
    symlink("/dev/zero", rank_path(&dir, 2)).unwrap();
    let out = inspect(&dir, true);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains(&rank_file_name(0)), "{}", text(&out));
    // Epoch 1 is intact; epoch 2's link is skipped, not followed.
    let r = within_limit("restart", {
        let dir = dir.clone();
        move || restart(&dir, "j")
    });
    assert_eq!(r.unwrap().0, 1);
}

#[test]
fn rank_file_longer_than_its_header_says_is_corrupt() {
    let (_root, dir) = setup();
    save_states(&dir, "j", 10, 2).unwrap();
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(rank_path(&dir, 2))
        .unwrap();
    std::io::Write::write_all(&mut f, &[0u8; 4096]).unwrap();
    drop(f);
    let (value, epoch) = restart(&dir, "j").unwrap();
    assert_eq!((value, epoch), (1, 1));
}

#[test]
fn group_or_world_writable_directory_is_refused_unless_allowed() {
    let (_root, dir) = setup();
    fs::create_dir(&dir).unwrap();
    for mode in [0o777, 0o770, 0o1777] {
        fs::set_permissions(&dir, fs::Permissions::from_mode(mode)).unwrap();
        let e = CheckpointContext::new(config(&dir, "j", 1), LocalCollective).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains(&dir.display().to_string()), "{msg}");
        assert!(msg.contains("RANKMIG_CKPT_ALLOW_SHARED_DIR"), "{msg}");
        assert!(msg.contains(&format!("{:o}", mode & 0o7777)), "{msg}");
    }
    // No epoch was written into it.
    assert_eq!(fs::read_dir(&dir).unwrap().count(), 0);
    // Opt-in from code and from the environment.
    let cfg = config(&dir, "j", 1).allow_shared_dir(true);
    let mut ctx = CheckpointContext::new(cfg, LocalCollective).unwrap();
    ctx.checkpoint(&1u64).unwrap();
    ctx.finalize().unwrap();
    let cfg = config(&dir, "j", 1)
        .with_vars(|k| (k == "RANKMIG_CKPT_ALLOW_SHARED_DIR").then(|| "1".to_owned()))
        .unwrap();
    assert!(CheckpointContext::new(cfg, LocalCollective).is_ok());
    // inspect reads it (safely) but says so.
    let out = inspect(&dir, true);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("WARNING") && text(&out).contains("1777"),
        "{}",
        text(&out)
    );
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
    assert!(!text(&inspect(&dir, true)).contains("WARNING"));
}

// ---- section 2: never lose a good checkpoint ----

#[test]
fn unreadable_file_in_newest_epoch_deletes_nothing() {
    let (_root, dir) = setup();
    save_states(&dir, "j", 10, 3).unwrap();
    // An I/O error (EISDIR; EACCES needs a non-root user) on the newest epoch's file.
    let kept = fs::read(rank_path(&dir, 3)).unwrap();
    fs::rename(rank_path(&dir, 3), dir.join("saved")).unwrap();
    fs::create_dir(rank_path(&dir, 3)).unwrap();
    let (value, epoch) = restart(&dir, "j").unwrap();
    assert_eq!((value, epoch), (2, 2));
    // Epoch 3 is still there, committed, and back in use once the file is readable.
    assert!(epoch_path(&dir, 3).join(COMMIT_MARKER).exists());
    fs::remove_dir(rank_path(&dir, 3)).unwrap();
    fs::write(rank_path(&dir, 3), kept).unwrap();
    fs::set_permissions(rank_path(&dir, 3), fs::Permissions::from_mode(0o600)).unwrap();
    let out = inspect(&dir, true);
    assert!(text(&out).contains("epoch 3: complete"), "{}", text(&out));
}

/// Marks the child process [`unreadable_permission_on_newest_epoch_deletes_nothing`]
/// starts without the capabilities that let root read anything.
const NO_CAPS_CHILD: &str = "RANKMIG_TEST_NO_CAPS_CHILD";

#[test]
fn unreadable_permission_on_newest_epoch_deletes_nothing() {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    if root && std::env::var_os(NO_CAPS_CHILD).is_none() {
        // Root reads a mode-000 file; without CAP_DAC_OVERRIDE/READ_SEARCH it gets
        // EACCES like anybody else. Rerun this test so, in a child process.
        let out = Command::new("setpriv")
            .args(["--bounding-set=-all", "--inh-caps=-all", "--"])
            .arg(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "checkpoint_hostile::unreadable_permission_on_newest_epoch_deletes_nothing",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(NO_CAPS_CHILD, "1")
            .output()
            .expect("setpriv runs");
        assert!(out.status.success(), "{}", text(&out));
        assert!(text(&out).contains("1 passed"), "{}", text(&out));
        return;
    }
    let (_root, dir) = setup();
    save_states(&dir, "j", 10, 3).unwrap();
    fs::set_permissions(rank_path(&dir, 3), fs::Permissions::from_mode(0o000)).unwrap();
    assert!(
        fs::File::open(rank_path(&dir, 3)).is_err(),
        "EACCES expected"
    );
    let (value, epoch) = restart(&dir, "j").unwrap();
    assert_eq!((value, epoch), (2, 2));
    assert!(epoch_path(&dir, 3).join(COMMIT_MARKER).exists());
    assert!(rank_path(&dir, 3).exists());
    // Once readable again, epoch 3 is restored from (epoch 4, saved after the restart
    // above from epoch 2's state, is newer: remove it first).
    fs::set_permissions(rank_path(&dir, 3), fs::Permissions::from_mode(0o600)).unwrap();
    fs::remove_dir_all(epoch_path(&dir, 4)).unwrap();
    assert_eq!(restart(&dir, "j").unwrap(), (3, 3));
}

#[test]
fn another_jobs_epochs_survive_retention_and_discard() {
    let (_root, dir) = setup();
    save_states(&dir, "a", 10, 3).unwrap();
    let a_epoch = |e: u64| job_path(&dir, "a").join(epoch_dir_name(e));
    // An uncommitted epoch of job a too (a crash before its commit).
    fs::remove_file(a_epoch(3).join(COMMIT_MARKER)).unwrap();
    save_states(&dir, "b", 1, 3).unwrap();
    for e in 1..=2 {
        assert!(a_epoch(e).join(COMMIT_MARKER).exists(), "epoch {e}");
    }
    assert!(a_epoch(3).join(rank_file_name(0)).exists());
    // Job b keeps one epoch of its own, numbered after its own epochs only.
    let (value, epoch) = restart(&dir, "b").unwrap();
    assert_eq!((value, epoch), (3, 3));
    // A restart of job b that discards a damaged newer epoch of its own leaves a's alone.
    for e in 1..=2 {
        assert!(a_epoch(e).join(COMMIT_MARKER).exists(), "epoch {e}");
    }
}

/// The job's own directory replaced by a link to an outside directory holding a copy
/// of its epochs: the job refuses to start, naming the link, and touches nothing
/// there; `rankmig inspect` reports the link and reads nothing through it.
#[test]
fn a_linked_job_directory_is_refused_and_nothing_behind_it_is_touched() {
    let (root, dir) = setup();
    save_states(&dir, "j", 10, 2).unwrap();
    let outside = root.path().join("outside-job");
    fs::rename(job_path(&dir, "j"), &outside).unwrap();
    symlink(&outside, job_path(&dir, "j")).unwrap();
    let listing = |d: &Path| {
        let mut names: Vec<_> = fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        names
    };
    let before = listing(&outside);
    for r in [save_states(&dir, "j", 1, 3), restart(&dir, "j").map(|_| ())] {
        let e = r.unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(e.to_string().contains("job-j"), "{e}");
    }
    assert_eq!(listing(&outside), before);
    assert!(outside.join(epoch_dir_name(2)).join(COMMIT_MARKER).exists());
    let out = inspect(&dir, true);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("IGNORED"), "{}", text(&out));
    assert!(!text(&out).contains("epoch 2"), "{}", text(&out));
}

#[test]
fn empty_directory_setting_is_refused() {
    let e = CheckpointConfig::new("x")
        .job("j")
        .with_vars(|k| (k == "RANKMIG_CKPT_DIR").then(String::new))
        .unwrap_err();
    assert!(e.to_string().contains("RANKMIG_CKPT_DIR"), "{e}");
    let e = CheckpointContext::new(config(Path::new(""), "j", 1), LocalCollective).unwrap_err();
    assert!(matches!(e, CheckpointError::Config { .. }), "{e}");
}

#[test]
fn epoch_number_near_the_limit_does_not_wrap() {
    let (_root, dir) = setup();
    save_states(&dir, "j", 10, 2).unwrap();
    let before = fs::read(rank_path(&dir, 1)).unwrap();
    fs::create_dir(epoch_path(&dir, u64::MAX)).unwrap();
    let r = within_limit("fresh run", {
        let dir = dir.clone();
        move || save_states(&dir, "j", 10, 3)
    });
    let e = r.unwrap_err();
    assert!(e.to_string().contains(&epoch_dir_name(u64::MAX)), "{e}");
    assert_eq!(fs::read(rank_path(&dir, 1)).unwrap(), before);
    assert!(epoch_path(&dir, 1).join(COMMIT_MARKER).exists());
}

fn write_marker(dir: &Path, epoch: u64, text: &str) {
    fs::write(epoch_path(dir, epoch).join(COMMIT_MARKER), text).unwrap();
}

#[test]
fn inspect_verify_checks_the_marker_fully() {
    let bad = [
        ("format=0\njob=j\nranks=1\nepoch=2\n", "format"),
        ("format=9\njob=j\nranks=1\nepoch=2\n", "format"),
        ("format=1\njob=j\nranks=1\nepoch=7\n", "epoch"),
        ("format=1\njob=k\nranks=1\nepoch=2\n", "job"),
        ("format=1\njob=j\nranks=1\nepoch=2\nepoch=3\n", "epoch"),
    ];
    for (marker, word) in bad {
        let (_root, dir) = setup();
        save_states(&dir, "j", 10, 2).unwrap();
        let out = inspect(&dir, true);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        write_marker(&dir, 2, marker);
        let out = inspect(&dir, true);
        assert_eq!(out.status.code(), Some(1), "{marker:?}: {}", text(&out));
        assert!(text(&out).contains(word), "{marker:?}: {}", text(&out));
    }
}
