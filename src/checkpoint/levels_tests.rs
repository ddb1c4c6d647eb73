//! The node-local level with partner copies and the flush to the shared directory,
//! with ranks as threads on pretend hosts ([`super::context_tests::on_hosts`]).

use std::fs;
use std::path::{Path, PathBuf};

use super::context_tests::{State, on_hosts, run};
use super::epoch::{COMMIT_MARKER, epoch_dir_name, rank_file_name};
use super::job_dir;
use super::levels::Level;
use super::*;

/// Shared directory `tmp/shared`, node-local `tmp/local/HOST`, a save every 2 calls,
/// every 2nd epoch flushed.
fn cfg(tmp: &Path) -> CheckpointConfig {
    CheckpointConfig::new(tmp.join("shared"))
        .local(tmp.join("local/%h"))
        .flush_every(2)
        .job("t")
        .every(2)
        .keep(2)
}

/// Job "t"'s epoch `epoch` in the checkpoint directory `dir`.
fn epoch_dir(dir: &Path, epoch: u64) -> PathBuf {
    job_dir::job_epochs_dir(dir, "t").join(epoch_dir_name(epoch))
}

/// The rank files of an epoch directory, by rank.
fn ranks_in(dir: &Path) -> Vec<u32> {
    files_in(dir, "rank-")
}

/// The partner copies of an epoch directory, by rank.
fn copies_in(dir: &Path) -> Vec<u32> {
    files_in(dir, "copy-")
}

fn files_in(dir: &Path, prefix: &str) -> Vec<u32> {
    let mut ranks: Vec<u32> = fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| {
                let name = e.ok()?.file_name().to_string_lossy().into_owned();
                let rest = name.strip_prefix(prefix)?;
                epoch::parse_rank_file_name(&format!("rank-{rest}"))
            })
            .collect()
        })
        .unwrap_or_default();
    ranks.sort_unstable();
    ranks
}

/// Ranks 0, 1 on host h0 and 2, 3 on h1 until `moved`, then every rank on h0.
fn two_hosts(rank: u32) -> String {
    format!("h{}", rank / 2)
}

/// Runs 4 ranks to `iters` and returns their states, or the first error.
fn run_four(c: CheckpointConfig, host_of: fn(u32) -> String, iters: u64) -> Vec<State> {
    on_hosts(4, host_of, move |_, coll| {
        run(c.clone(), coll, iters, true).map_err(|e| e.to_string())
    })
    .into_iter()
    .map(|r| r.unwrap())
    .collect()
}

/// Restarts 4 ranks on `host_of`'s hosts: their states, levels and epochs.
fn restart_four(
    c: CheckpointConfig,
    host_of: fn(u32) -> String,
) -> Vec<(State, Option<Level>, Option<u64>)> {
    on_hosts(4, host_of, move |_, coll| {
        let mut ctx = CheckpointContext::new(c.clone().restart(true), coll).unwrap();
        let state: State = ctx
            .restore()
            .map_err(|e| format!("{e}: {:?}", ctx.notes()))
            .unwrap();
        (state, ctx.restored_level(), ctx.restored_epoch())
    })
}

#[test]
fn each_host_holds_its_ranks_files_and_its_partners_and_every_second_epoch_is_flushed() {
    let tmp = tempfile::tempdir().unwrap();
    run_four(cfg(tmp.path()), two_hosts, 6);
    for host in ["h0", "h1"] {
        let e3 = epoch_dir(&tmp.path().join("local").join(host), 3);
        let (own, partners) = if host == "h0" {
            (vec![0, 1], vec![2, 3])
        } else {
            (vec![2, 3], vec![0, 1])
        };
        assert_eq!(
            (ranks_in(&e3), copies_in(&e3)),
            (own, partners),
            "{host} keeps its own and its partners'"
        );
        assert!(e3.join(COMMIT_MARKER).is_file(), "{host} committed epoch 3");
    }
    let shared = tmp.path().join("shared");
    assert_eq!(ranks_in(&epoch_dir(&shared, 2)), vec![0, 1, 2, 3]);
    assert!(epoch_dir(&shared, 2).join(COMMIT_MARKER).is_file());
    assert!(!epoch_dir(&shared, 3).exists(), "epoch 3 is not flushed");
    assert!(!epoch_dir(&shared, 1).exists(), "epoch 1 is not flushed");
}

#[test]
fn a_lost_host_restarts_from_its_partners_copies_without_the_shared_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let reference = run_four(cfg(tmp.path()), two_hosts, 6);
    // Host h1 is gone with its files, and so is the shared directory's content.
    fs::remove_dir_all(tmp.path().join("local/h1")).unwrap();
    fs::remove_dir_all(tmp.path().join("shared/job-t")).unwrap();
    // Ranks 2 and 3 start again on a new host h2, with an empty node-local directory.
    let restored = restart_four(cfg(tmp.path()), |r| {
        if r < 2 { "h0" } else { "h2" }.to_owned()
    });
    for (rank, (state, level, epoch)) in restored.iter().enumerate() {
        assert_eq!(
            (level, epoch),
            (&Some(Level::Partner), &Some(3)),
            "rank {rank}"
        );
        assert_eq!(
            state, &reference[rank],
            "rank {rank}: the state saved at call 6"
        );
    }
    // h0 sent the copies of ranks 2 and 3, which h2 now holds as their own files.
    assert_eq!(
        ranks_in(&epoch_dir(&tmp.path().join("local/h2"), 3)),
        vec![2, 3]
    );
    assert!(
        epoch_dir(&tmp.path().join("local/h2"), 3)
            .join(COMMIT_MARKER)
            .is_file()
    );
    // With every rank on h0, the copies are read where they lie.
    let restored = restart_four(cfg(tmp.path()), |_| "h0".to_owned());
    assert!(
        restored
            .iter()
            .all(|(s, l, _)| s.iter == 6 && *l == Some(Level::Partner))
    );
}

#[test]
fn a_killed_rank_restarts_from_node_local_files_and_damage_falls_back_a_level() {
    let tmp = tempfile::tempdir().unwrap();
    run_four(cfg(tmp.path()), two_hosts, 6);
    let restored = restart_four(cfg(tmp.path()), two_hosts);
    assert!(
        restored
            .iter()
            .all(|(s, l, e)| s.iter == 6 && *l == Some(Level::Local) && *e == Some(3))
    );
    // Rank 2's file damaged on h1 and its partner's copy on h0 gone: epoch 3 cannot be
    // made whole, epoch 2 can (on the node level, which is kept 2 deep).
    let damaged = epoch_dir(&tmp.path().join("local/h1"), 3).join(rank_file_name(2));
    let mut bytes = fs::read(&damaged).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    fs::write(&damaged, bytes).unwrap();
    fs::remove_file(epoch_dir(&tmp.path().join("local/h0"), 3).join(epoch::copy_file_name(2)))
        .unwrap();
    let restored = restart_four(cfg(tmp.path()), two_hosts);
    assert!(
        restored
            .iter()
            .all(|(s, _, e)| s.iter == 4 && *e == Some(2)),
        "{:?}",
        restored
            .iter()
            .map(|r| (r.0.iter, r.1, r.2))
            .collect::<Vec<_>>()
    );
    // Both hosts gone: the shared directory's flushed epoch 2.
    fs::remove_dir_all(tmp.path().join("local")).unwrap();
    let restored = restart_four(cfg(tmp.path()), two_hosts);
    assert!(
        restored
            .iter()
            .all(|(s, l, e)| s.iter == 4 && *l == Some(Level::Shared) && *e == Some(2))
    );
}

#[test]
fn ranks_on_one_host_keep_no_partner_copy_and_say_so() {
    let tmp = tempfile::tempdir().unwrap();
    let notes = on_hosts(2, |_| "h0".to_owned(), {
        let c = cfg(tmp.path());
        move |_, coll| {
            let mut ctx = CheckpointContext::new(c.clone(), coll).unwrap();
            let mut s = 0u64;
            for _ in 0..2 {
                s += 1;
                ctx.checkpoint(&s).unwrap();
            }
            ctx.finalize().unwrap();
            ctx.notes().to_vec()
        }
    });
    assert!(
        notes[0].iter().any(|n| n.contains("no partner copies")),
        "{notes:?}"
    );
    assert_eq!(
        ranks_in(&epoch_dir(&tmp.path().join("local/h0"), 1)),
        vec![0, 1]
    );
}

#[test]
fn the_last_epoch_flushed_is_committed_in_the_shared_directory_before_finalize_returns() {
    let tmp = tempfile::tempdir().unwrap();
    run_four(cfg(tmp.path()).flush_every(3), two_hosts, 6);
    let shared = epoch_dir(&tmp.path().join("shared"), 3);
    assert_eq!(ranks_in(&shared), vec![0, 1, 2, 3]);
    assert!(
        shared.join(COMMIT_MARKER).is_file(),
        "finalize left the flush uncommitted"
    );
}

/// Four ranks on hosts h0 and h1 make one save with h1's node-local directory spoilt
/// by `spoil` (run once every context exists, before the save), with nothing flushed
/// otherwise; returns each rank's notes after checking that h1's ranks said `said` and
/// that the shared directory holds the epoch whole and committed.
fn one_save_with_h1_spoilt(
    tmp: &Path,
    spoil: impl Fn() + Send + Sync + 'static,
    said: &str,
) -> CheckpointConfig {
    let c = cfg(tmp).flush_every(1000);
    let notes = on_hosts(4, two_hosts, {
        let c = c.clone();
        move |rank, coll| {
            let mut ctx = CheckpointContext::new(c.clone(), coll).unwrap();
            if rank == 2 {
                spoil();
            }
            ctx.collective().barrier();
            ctx.save_now(&2u64).unwrap();
            ctx.finalize().unwrap();
            ctx.notes().to_vec()
        }
    });
    for rank in [2, 3] {
        assert!(
            notes[rank].iter().any(|n| n.contains(said)),
            "rank {rank}: {:?}",
            notes[rank]
        );
    }
    let shared = epoch_dir(&tmp.join("shared"), 1);
    assert_eq!(ranks_in(&shared), vec![0, 1, 2, 3]);
    assert!(shared.join(COMMIT_MARKER).is_file());
    c
}

/// A node-local directory that cannot take the save (here a file stands where host h1's
/// epoch directory goes; a full disk fails the same way): h1's ranks write the epoch to
/// the shared directory instead and say so, the other ranks flush theirs there too, the
/// job goes on, and a restart without any node-local file finds the epoch whole there.
#[test]
fn a_node_local_directory_that_fails_sends_the_epoch_to_the_shared_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let blocker = epoch_dir(&tmp.path().join("local/h1"), 1);
    let spoil = move || fs::write(&blocker, b"in the way").unwrap();
    let c = one_save_with_h1_spoilt(tmp.path(), spoil, "instead of the node-local directory");
    fs::remove_dir_all(tmp.path().join("local")).unwrap();
    let restored = on_hosts(4, two_hosts, move |_, coll| {
        let mut ctx = CheckpointContext::new(c.clone().restart(true), coll).unwrap();
        let s: u64 = ctx.restore().unwrap();
        (s, ctx.restored_level())
    });
    assert!(
        restored.iter().all(|r| *r == (2, Some(Level::Shared))),
        "{restored:?}"
    );
}

/// A partner copy replaced by a link (to a file with the right content) is not
/// followed: the epoch it belongs to is not whole, and the restart takes the epoch
/// before, whose copy is a file of the user.
#[test]
fn a_partner_copy_replaced_by_a_link_is_not_followed() {
    let tmp = tempfile::tempdir().unwrap();
    run_four(cfg(tmp.path()), two_hosts, 6);
    fs::remove_dir_all(tmp.path().join("local/h1")).unwrap();
    let copy = epoch_dir(&tmp.path().join("local/h0"), 3).join(epoch::copy_file_name(2));
    let elsewhere = tmp.path().join("elsewhere.ckpt");
    fs::rename(&copy, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &copy).unwrap();
    let restored = restart_four(cfg(tmp.path()), |_| "h0".to_owned());
    assert!(
        restored
            .iter()
            .all(|(s, l, e)| s.iter == 4 && *l == Some(Level::Partner) && *e == Some(2)),
        "{:?}",
        restored
            .iter()
            .map(|r| (r.0.iter, r.1, r.2))
            .collect::<Vec<_>>()
    );
}

#[path = "../../tests/it/support/small_fs.rs"]
mod small_fs;
use small_fs::SmallFs;

/// Host h1's node-local directory is a full tmpfs: its ranks' saves go to the shared
/// directory with "No space left on device" said, and the epoch is whole there.
#[test]
fn a_full_node_local_disk_sends_the_save_to_the_shared_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(disk) = SmallFs::mount(&tmp.path().join("local/h1"), "256k") else {
        eprintln!("SKIPPED: cannot mount a tmpfs here (needs root)");
        return;
    };
    let filler = disk.0.join("filler");
    let spoil = move || {
        // Fill the disk, whatever its block accounting: write until refused.
        let mut f = fs::File::create(&filler).unwrap();
        while std::io::Write::write_all(&mut f, &[7u8; 4096]).is_ok() {}
    };
    one_save_with_h1_spoilt(tmp.path(), spoil, "No space left on device");
}

/// The shared directory's commit of a flushed epoch comes at the collective checks that
/// follow its flush, not at the next save: with a save due only after a million calls,
/// the ranks see epoch 1 committed there while they go on calling `checkpoint!`.
#[test]
fn a_flushed_epoch_is_committed_in_the_shared_directory_before_the_next_save() {
    let tmp = tempfile::tempdir().unwrap();
    let c = cfg(tmp.path()).every(1_000_000).flush_every(1);
    let marker = epoch_dir(&tmp.path().join("shared"), 1).join(COMMIT_MARKER);
    let calls = on_hosts(4, two_hosts, move |_, coll| {
        let mut ctx = CheckpointContext::new(c.clone(), coll).unwrap();
        let state = vec![0.25f64; 4096];
        ctx.save_now(&state).unwrap();
        for waited in 0.. {
            // About a minute of 1 ms steps: far beyond a small file's flush.
            assert!(
                waited < 60_000,
                "epoch 1 not committed in the shared directory"
            );
            ctx.checkpoint(&state).unwrap();
            let mut seen = [u64::from(marker.is_file())];
            ctx.collective().all_max(&mut seen);
            if seen[0] != 0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let calls = ctx.calls();
        ctx.finalize().unwrap();
        calls
    });
    assert!(calls.iter().all(|&n| n < 1_000_000), "{calls:?}");
    assert_eq!(
        ranks_in(&epoch_dir(&tmp.path().join("shared"), 1)),
        vec![0, 1, 2, 3]
    );
}
