//! Tests of the context without MPI: one process, or several ranks as threads.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::epoch::{self, COMMIT_MARKER, epoch_dir_name, rank_file_name};
use super::job_dir;
use super::*;

/// Messages between ranks as threads, by (from, to).
type Mail = Arc<Mutex<std::collections::HashMap<(u32, u32), Vec<u8>>>>;

/// Ranks as threads: `all_max` through shared slots and a barrier, messages through a
/// shared mailbox; each rank names the host it pretends to run on.
pub(super) struct ThreadCollective {
    rank: u32,
    size: u32,
    slots: Arc<Mutex<Vec<Vec<u64>>>>,
    barrier: Arc<Barrier>,
    mail: Mail,
    host: String,
}

impl Collective for ThreadCollective {
    type Exchange = crate::checkpoint::Exchanged;

    fn rank(&self) -> u32 {
        self.rank
    }
    fn size(&self) -> u32 {
        self.size
    }
    fn all_max(&self, values: &mut [u64]) {
        self.slots.lock().unwrap()[self.rank as usize] = values.to_vec();
        self.barrier.wait();
        {
            let slots = self.slots.lock().unwrap();
            for (i, v) in values.iter_mut().enumerate() {
                *v = slots.iter().map(|s| s[i]).max().unwrap();
            }
        }
        self.barrier.wait();
    }
    fn barrier(&self) {
        self.barrier.wait();
    }
    fn start_exchange(
        &self,
        sends: Vec<(u32, Vec<u8>)>,
        from: &[u32],
        reserve: usize,
    ) -> Self::Exchange {
        {
            let mut mail = self.mail.lock().unwrap();
            for (to, bytes) in &sends {
                assert!(mail.insert((self.rank, *to), bytes.clone()).is_none());
            }
        }
        self.barrier.wait();
        let received = {
            let mut mail = self.mail.lock().unwrap();
            from.iter()
                .map(|f| {
                    let mut buf = vec![0u8; reserve];
                    buf.extend(
                        mail.remove(&(*f, self.rank))
                            .expect("a message from each sender"),
                    );
                    buf
                })
                .collect()
        };
        self.barrier.wait();
        crate::checkpoint::Exchanged {
            received,
            sent: sends.into_iter().map(|(_, b)| b).collect(),
        }
    }
    fn host_name(&self) -> String {
        self.host.clone()
    }
}

/// Runs `f(rank, collective)` on `size` threads and returns the results by rank.
fn on_ranks<T: Send + 'static>(
    size: u32,
    f: impl Fn(u32, ThreadCollective) -> T + Send + Sync + 'static,
) -> Vec<T> {
    on_hosts(size, |_| "h0".to_owned(), f)
}

/// [`on_ranks`] with rank `r` on host `host_of(r)`.
pub(super) fn on_hosts<T: Send + 'static>(
    size: u32,
    host_of: impl Fn(u32) -> String,
    f: impl Fn(u32, ThreadCollective) -> T + Send + Sync + 'static,
) -> Vec<T> {
    let mail: Mail = Arc::default();
    let slots = Arc::new(Mutex::new(vec![Vec::new(); size as usize]));
    let barrier = Arc::new(Barrier::new(size as usize));
    let f = Arc::new(f);
    let handles: Vec<_> = (0..size)
        .map(|rank| {
            let c = ThreadCollective {
                rank,
                size,
                slots: Arc::clone(&slots),
                barrier: Arc::clone(&barrier),
                mail: Arc::clone(&mail),
                host: host_of(rank),
            };
            let f = Arc::clone(&f);
            std::thread::spawn(move || f(rank, c))
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct State {
    pub(super) iter: u64,
    rows: Vec<f64>,
}

fn fresh(rank: u32) -> State {
    State {
        iter: 0,
        rows: vec![f64::from(rank); 512],
    }
}

fn step(s: &mut State) {
    for x in &mut s.rows {
        *x = *x * 0.5 + 1.0;
    }
    s.iter += 1;
}

/// Runs the loop to `iters`, saving every `every` calls; `finalize` or not (a crash).
pub(super) fn run<C: Collective>(
    cfg: CheckpointConfig,
    coll: C,
    iters: u64,
    finalize: bool,
) -> Result<State, CheckpointError> {
    let rank = coll.rank();
    let mut ctx = CheckpointContext::new(cfg, coll)?;
    let mut state = ctx.restore_or(|| fresh(rank))?;
    while state.iter < iters {
        step(&mut state);
        crate::checkpoint!(ctx, state);
    }
    if finalize {
        ctx.finalize()?;
    }
    Ok(state)
}

fn cfg(dir: &Path, every: u64) -> CheckpointConfig {
    CheckpointConfig::new(dir).job("t").every(every).keep(10)
}

fn run_ranks(size: u32, c: CheckpointConfig, iters: u64) -> Vec<Result<State, String>> {
    on_ranks(size, move |_, coll| {
        run(c.clone(), coll, iters, true).map_err(|e| e.to_string())
    })
}

/// The directory of job "t"'s epochs in the checkpoint directory `dir`.
fn job_t(dir: &Path) -> PathBuf {
    job_dir::job_epochs_dir(dir, "t")
}

fn epochs(dir: &Path) -> Vec<u64> {
    epochs_of(dir, "t")
}

/// Job `job`'s epoch numbers in the checkpoint directory `dir`, newest first.
fn epochs_of(dir: &Path, job: &str) -> Vec<u64> {
    epoch::list_epochs(&job_dir::job_epochs_dir(dir, job))
        .unwrap()
        .iter()
        .map(|e| e.epoch)
        .collect()
}

fn file(dir: &Path, epoch: u64, rank: u32) -> PathBuf {
    job_t(dir)
        .join(epoch_dir_name(epoch))
        .join(rank_file_name(rank))
}

fn flip_last_byte(p: &Path) {
    let mut b = fs::read(p).unwrap();
    let n = b.len() - 1;
    b[n] ^= 0x10;
    fs::write(p, b).unwrap();
}

#[test]
fn restart_resumes_after_saved_iteration() {
    let tmp = tempfile::tempdir().unwrap();
    let reference = run(cfg(tmp.path(), 10), LocalCollective, 25, true).unwrap();
    assert_eq!(epochs(tmp.path()), vec![2, 1]);
    let mut ctx =
        CheckpointContext::new(cfg(tmp.path(), 10).restart(true), LocalCollective).unwrap();
    let state: State = ctx.restore_or(|| unreachable!()).unwrap();
    assert_eq!(
        (state.iter, ctx.calls(), ctx.restored_epoch()),
        (20, 20, Some(2))
    );
    drop(ctx);
    let restarted = run(cfg(tmp.path(), 10).restart(true), LocalCollective, 25, true).unwrap();
    assert_eq!(restarted, reference);
}

#[test]
fn crash_leaves_last_write_uncommitted() {
    let tmp = tempfile::tempdir().unwrap();
    run(cfg(tmp.path(), 5), LocalCollective, 11, false).unwrap();
    let d2 = job_t(tmp.path()).join(epoch_dir_name(2));
    assert!(file(tmp.path(), 2, 0).exists());
    assert!(!d2.join(COMMIT_MARKER).exists());
    let mut ctx =
        CheckpointContext::new(cfg(tmp.path(), 5).restart(true), LocalCollective).unwrap();
    let s: State = ctx.restore().unwrap();
    assert_eq!(s.iter, 5);
    assert!(
        ctx.notes()[0].contains("no commit marker"),
        "{:?}",
        ctx.notes()
    );
    // the uncommitted newer epoch is discarded, numbering goes on after it
    assert_eq!(epochs(tmp.path()), vec![1]);
}

#[test]
fn fresh_run_numbers_after_existing_epochs() {
    let tmp = tempfile::tempdir().unwrap();
    run(cfg(tmp.path(), 5), LocalCollective, 10, true).unwrap();
    run(cfg(tmp.path(), 5), LocalCollective, 5, true).unwrap();
    assert_eq!(epochs(tmp.path()), vec![3, 2, 1]);
}

#[test]
fn retention_keeps_only_keep_epochs() {
    let tmp = tempfile::tempdir().unwrap();
    run(cfg(tmp.path(), 2).keep(2), LocalCollective, 10, true).unwrap();
    assert_eq!(epochs(tmp.path()), vec![5, 4]);
    let mode = {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(job_t(tmp.path()).join(epoch_dir_name(5)))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode, 0o700);
}

#[test]
fn damaged_epochs_are_skipped_on_every_rank() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let done = run_ranks(3, cfg(&dir, 2), 10);
    assert!(done.iter().all(Result::is_ok), "{done:?}");
    assert_eq!(epochs(&dir), vec![5, 4, 3, 2, 1]);
    let restart = |expect: Result<u64, &str>| {
        let got = run_ranks(3, cfg(&dir, 2).restart(true), 0);
        for r in got {
            match (&r, expect) {
                (Ok(s), Ok(iter)) => assert_eq!(s.iter, iter),
                (Err(e), Err(text)) => assert!(e.contains(text), "{e}"),
                _ => panic!("{r:?} vs {expect:?}"),
            }
        }
    };
    // flipped byte on rank 1 in epoch 5, truncation on rank 0 in epoch 4: a rank
    // whose newest valid epoch is 5 must step down to the one valid everywhere.
    flip_last_byte(&file(&dir, 5, 1));
    let f = fs::OpenOptions::new()
        .write(true)
        .open(file(&dir, 4, 0))
        .unwrap();
    f.set_len(200).unwrap();
    restart(Ok(6));
    fs::remove_file(file(&dir, 3, 2)).unwrap();
    restart(Ok(4));
    fs::remove_file(job_t(&dir).join(epoch_dir_name(2)).join(COMMIT_MARKER)).unwrap();
    restart(Ok(2));
    flip_last_byte(&file(&dir, 1, 0));
    restart(Err("no usable checkpoint"));
}

/// Another rank count of the same job is refused; another job's epochs are not this
/// job's checkpoints (a directory shared by two jobs): none to restore here.
#[test]
fn other_rank_count_is_refused_and_another_jobs_epochs_are_not_restored() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run_ranks(2, cfg(&dir, 2), 4);
    for r in run_ranks(3, cfg(&dir, 2).restart(true), 4) {
        let e = r.unwrap_err();
        assert!(e.contains("2-rank job, this job has 3 ranks"), "{e}");
    }
    for r in run_ranks(2, cfg(&dir, 2).job("other").restart(true), 4) {
        let e = r.unwrap_err();
        assert!(e.contains("no usable checkpoint"), "{e}");
        assert!(e.contains("also holds checkpoints of job(s) \"t\""), "{e}");
    }
}

#[test]
fn restart_without_checkpoint_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let e = run(cfg(tmp.path(), 2).restart(true), LocalCollective, 4, true).unwrap_err();
    assert!(matches!(e, CheckpointError::NoCheckpoint { .. }), "{e}");
}

#[test]
fn failed_write_on_one_rank_fails_the_epoch_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let c = cfg(&dir, 2);
    let got = on_ranks(2, move |rank, coll| {
        let mut ctx = CheckpointContext::new(c.clone(), coll).unwrap();
        let mut s = fresh(rank);
        for i in 1..=6u64 {
            if i == 3 && rank == 1 {
                // a directory where this rank's file of epoch 2 goes: its write refuses it
                fs::create_dir_all(file(&c.dir, 2, 1)).unwrap();
            }
            step(&mut s);
            ctx.checkpoint(&s).map_err(|e| (i, e.to_string()))?;
        }
        ctx.finalize().map_err(|e| (7, e.to_string()))
    });
    let (at0, e0) = got[0].as_ref().unwrap_err();
    assert!(e0.contains("epoch 2") && e0.contains("rank 1"), "{e0}");
    let (at1, e1) = got[1].as_ref().unwrap_err();
    assert!(e1.contains("not a regular file but a directory"), "{e1}");
    assert_eq!(at0, at1);
    assert!(
        job_t(&dir)
            .join(epoch_dir_name(1))
            .join(COMMIT_MARKER)
            .exists()
    );
    assert!(
        !job_t(&dir)
            .join(epoch_dir_name(2))
            .join(COMMIT_MARKER)
            .exists()
    );
}

#[test]
fn time_interval_saves_at_the_same_call_on_every_rank() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let c = CheckpointConfig::new(&dir)
        .job("t")
        .every_duration(Duration::from_millis(5))
        .keep(100);
    let calls = on_ranks(3, move |rank, coll| {
        let mut ctx = CheckpointContext::new(c.clone(), coll).unwrap();
        let mut s = fresh(rank);
        for _ in 0..60 {
            // ranks run at different speeds
            std::thread::sleep(Duration::from_micros(100 * u64::from(rank + 1)));
            step(&mut s);
            ctx.checkpoint(&s).unwrap();
        }
        ctx.finalize().unwrap();
        ctx.calls()
    });
    assert_eq!(calls, vec![60; 3]);
    let report = inspect(&dir, true).unwrap();
    assert!(report.epochs().count() >= 2, "{report}");
    assert!(!report.has_corruption(), "{report}");
    for e in report.epochs() {
        assert!(e.is_complete(), "{report}");
        let iters: Vec<u64> = e
            .files
            .iter()
            .map(|f| f.header.as_ref().unwrap().calls)
            .collect();
        assert_eq!(iters.len(), 3);
        assert!(iters.iter().all(|&c| c == iters[0]), "{report}");
    }
}

#[test]
fn non_saving_call_does_not_touch_the_disk() {
    let tmp = tempfile::tempdir().unwrap();
    let mut ctx = CheckpointContext::new(cfg(tmp.path(), 1000), LocalCollective).unwrap();
    for i in 0..999u64 {
        ctx.checkpoint(&i).unwrap();
    }
    assert!(epochs(tmp.path()).is_empty());
    ctx.checkpoint(&0u64).unwrap();
    ctx.finalize().unwrap();
    assert_eq!(epochs(tmp.path()), vec![1]);
}

/// Issue 22: two jobs in one checkpoint directory number their epochs independently,
/// and each restarts from its own newest epoch whatever the other wrote since.
#[test]
fn two_jobs_in_one_directory_number_and_restore_their_epochs_independently() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let job = |name: &str| CheckpointConfig::new(dir).job(name).every(5).keep(10);
    let a_done = run(job("a"), LocalCollective, 12, true).unwrap();
    run_ranks(3, job("b"), 40);
    let numbers = |name: &str| epochs_of(dir, name);
    assert_eq!(numbers("a"), [2, 1]);
    assert_eq!(numbers("b"), [8, 7, 6, 5, 4, 3, 2, 1]);
    // Job a restarts from its own epoch 2 (iteration 10) after b wrote 8 epochs, and
    // goes on numbering after its own epochs, not after b's.
    let mut ctx = CheckpointContext::new(job("a").restart(true), LocalCollective).unwrap();
    let state: State = ctx.restore().unwrap();
    assert_eq!((state.iter, ctx.restored_epoch()), (10, Some(2)));
    ctx.save_now(&state).unwrap();
    ctx.finalize().unwrap();
    assert_eq!(ctx.last_committed(), Some(3));
    drop(ctx);
    assert_eq!(numbers("a"), [3, 2, 1]);
    assert_eq!(
        numbers("b"),
        [8, 7, 6, 5, 4, 3, 2, 1],
        "job b's epochs untouched"
    );
    let again = run(job("a").restart(true), LocalCollective, 12, true).unwrap();
    assert_eq!(again, a_done);
}

/// A checkpoint directory of the layout before job directories is not read, and the
/// error says how to move its epochs into the job's directory.
#[test]
fn epochs_left_directly_in_the_directory_are_named_in_the_restart_error() {
    let tmp = tempfile::tempdir().unwrap();
    run(cfg(tmp.path(), 5), LocalCollective, 12, true).unwrap();
    for e in epochs(tmp.path()) {
        let name = epoch_dir_name(e);
        fs::rename(job_t(tmp.path()).join(&name), tmp.path().join(&name)).unwrap();
    }
    let e = run(cfg(tmp.path(), 5).restart(true), LocalCollective, 12, true).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, CheckpointError::NoCheckpoint { .. }), "{text}");
    assert!(
        text.contains("holds 2 epoch director(ies) directly"),
        "{text}"
    );
    assert!(
        text.contains(&format!("mv {}/epoch-*", tmp.path().display())),
        "{text}"
    );
}

/// Time interval mode: the first save comes after `first_save_after` (not the hour's
/// interval), and its epoch is committed once its write ended, long before the next
/// save, on every rank.
#[test]
fn a_save_is_committed_soon_after_its_write_not_at_the_next_save() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let committed = on_ranks(3, move |rank, coll| {
        let cfg = CheckpointConfig::new(&path)
            .job("t")
            .every_duration(Duration::from_secs(3600))
            .first_save_after(Duration::from_millis(5));
        let mut ctx = CheckpointContext::new(cfg, coll).unwrap();
        let mut state = fresh(rank);
        let start = std::time::Instant::now();
        // Every rank stops at the same call: the commit is agreed collectively.
        while ctx.last_committed().is_none() {
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "never committed"
            );
            step(&mut state);
            std::thread::sleep(Duration::from_micros(200));
            ctx.checkpoint(&state).unwrap();
        }
        let at = (ctx.last_committed(), ctx.calls());
        ctx.finalize().unwrap();
        at
    });
    assert!(
        committed.iter().all(|c| *c == committed[0]),
        "{committed:?}"
    );
    let epoch = committed[0].0.unwrap();
    let epoch_dir = job_dir::job_epochs_dir(dir.path(), "t").join(epoch_dir_name(epoch));
    assert!(epoch_dir.join(COMMIT_MARKER).exists());
}

/// Issue 51: a `checkpoint!` call from a thread other than the context's (a worker of a
/// hybrid rank's parallel region) is refused with an error naming both threads, before
/// anything is counted or saved; the loop then goes on from its own thread.
#[test]
fn a_call_from_another_thread_is_refused_and_counts_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    // A save at every call: a call that were let through would save.
    let mut ctx = CheckpointContext::new(cfg(tmp.path(), 1), LocalCollective).unwrap();
    let owner_tid = super::thread_owner::ThreadLabel::current().tid;
    fn macro_call(ctx: &mut CheckpointContext, state: &u64) -> Result<(), CheckpointError> {
        crate::checkpoint!(ctx, *state);
        Ok(())
    }
    let (by_macro, by_method) = std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("omp-worker".into())
            .spawn_scoped(s, || (macro_call(&mut ctx, &7), ctx.checkpoint(&7u64)))
            .unwrap()
            .join()
            .unwrap()
    });
    for e in [by_macro.unwrap_err(), by_method.unwrap_err()] {
        let CheckpointError::Misplaced {
            owner,
            caller,
            in_parallel,
        } = &e
        else {
            panic!("not a misplaced call: {e}");
        };
        assert_eq!(owner.tid, owner_tid);
        assert_ne!(caller.tid, owner_tid);
        assert_eq!(caller.name.as_deref(), Some("omp-worker"));
        assert!(!in_parallel);
        let text = e.to_string();
        assert!(
            text.starts_with(&format!(
                "checkpoint called from thread {} (omp-worker), not from thread {owner_tid}",
                caller.tid
            )),
            "{text}"
        );
        assert!(
            text.contains(
                "belongs outside parallel regions, on the thread that called rankmig_init"
            ),
            "{text}"
        );
    }
    assert_eq!(ctx.calls(), 0, "the refused calls were not counted");
    assert!(epochs(tmp.path()).is_empty(), "nothing saved");
    // On its own thread the context goes on as if the calls had not been made.
    assert!(ctx.check_thread().is_ok());
    ctx.checkpoint(&1u64).unwrap();
    ctx.finalize().unwrap();
    assert_eq!(ctx.calls(), 1);
    assert_eq!(epochs(tmp.path()), vec![1]);
}
