//! Checkpoint speed against plain file I/O on the same file system, in the same run.
//!
//! * write: a 256 MiB state saved and committed (serialise, checksum, atomic write,
//!   fsync, rename, directory fsync, commit marker, retention) against
//!   `File::write_all` + `fsync` of 256 MiB;
//! * what the application waits for at a save (serialisation into memory only);
//! * read: restore (read, checksum, deserialise) against `fs::read` of the same
//!   file (both from a warm page cache), in the same group: the state as a plain
//!   `Vec<f64>` (serde decodes it value by value), as a `checkpoint::bulk` vector and
//!   as a block of bytes (`serde_bytes`, as a C program's registered region), the
//!   last two read straight into their memory; and against a read of the file into
//!   fresh memory advised huge pages, as a restore reads large blocks;
//! * the `checkpoint!` call that does not save;
//! * a time-interval cycle (4 MiB state, a save every 200 ms, 20 µs of work per
//!   iteration): the mean cost of a `checkpoint!` call over saves, checks and commits,
//!   and how long after its save an epoch is committed (the age of the newest
//!   restartable point);
//! * per checkpoint level (issue 53), the same 256 MiB state: a save and its commit
//!   with the shared directory alone (on disk, under `target/`), with a node-local
//!   directory on `/dev/shm` (no flush), and with the node-local directory and a flush
//!   of every epoch to the shared directory (the commit there included); for each, the
//!   application's wait at the save. One process with [`LocalCollective`]: every rank
//!   on one host, so there is no partner copy (its MPI transfer is measured by
//!   `scripts/save_pause.sh` with `CLUSTER=1`).
//!
//! Ends with a summary of medians and ratios to the baselines. Files go to a
//! temporary directory under `target/` (override with `RANKMIG_BENCH_DIR`); node-local
//! ones to a temporary directory in `/dev/shm` (override with
//! `RANKMIG_BENCH_LOCAL_DIR`; `target/` when there is no `/dev/shm`).

use std::collections::BTreeMap;
use std::fs::File;
use std::hint::black_box;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::{BenchmarkGroup, Criterion, SamplingMode, measurement::WallTime};
use rankmig::checkpoint::{CheckpointConfig, CheckpointContext, LocalCollective};
use serde::{Deserialize, Serialize};

const STATE_BYTES: usize = 256 << 20;

#[derive(Serialize, Deserialize)]
struct State {
    iter: u64,
    data: Vec<f64>,
}

/// The same state with its vector as one block (`checkpoint::bulk`).
#[derive(Serialize, Deserialize)]
struct BulkState {
    iter: u64,
    #[serde(with = "rankmig::checkpoint::bulk")]
    data: Vec<f64>,
}

/// Named blocks of bytes, as the C interface saves registered regions.
#[derive(Serialize, Deserialize)]
struct Regions(Vec<(String, serde_bytes::ByteBuf)>);

fn big_state() -> State {
    State {
        iter: 1,
        data: (0..STATE_BYTES / 8).map(|i| i as f64 * 0.5).collect(),
    }
}

/// Seconds per operation recorded by each benchmark, for the summary.
static SAMPLES: Mutex<BTreeMap<&'static str, Vec<f64>>> = Mutex::new(BTreeMap::new());

fn record(name: &'static str, per_op: Duration) {
    record_secs(name, per_op.as_secs_f64());
}

fn record_secs(name: &'static str, secs: f64) {
    let mut s = SAMPLES.lock().unwrap_or_else(|e| e.into_inner());
    s.entry(name).or_default().push(secs);
}

fn median(name: &str) -> Option<f64> {
    let s = SAMPLES.lock().unwrap_or_else(|e| e.into_inner());
    let mut v = s.get(name)?.clone();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

/// Times `iters` runs of `op`, each after an untimed `prepare`, and records them.
fn timed(
    name: &'static str,
    iters: u64,
    mut prepare: impl FnMut(),
    mut op: impl FnMut(),
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        prepare();
        let t = Instant::now();
        op();
        let d = t.elapsed();
        record(name, d);
        total += d;
    }
    total
}

fn bench_dir() -> tempfile::TempDir {
    let base = std::env::var_os("RANKMIG_BENCH_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"),
        PathBuf::from,
    );
    std::fs::create_dir_all(&base).expect("bench base directory");
    tempfile::tempdir_in(base).expect("bench directory")
}

fn big_group<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(name);
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(8))
        .throughput(criterion::Throughput::Bytes(STATE_BYTES as u64));
    g
}

fn plain_write(path: &Path, bytes: &[u8]) {
    let mut f = File::create(path).expect("create");
    f.write_all(bytes).expect("write");
    f.sync_all().expect("fsync");
}

fn bench_write(c: &mut Criterion, state: &State) {
    let tmp = bench_dir();
    let bytes = vec![0x5au8; STATE_BYTES];
    let plain = tmp.path().join("plain.bin");
    let cfg = CheckpointConfig::new(tmp.path().join("ckpt"))
        .job("bench")
        .every(u64::MAX)
        .keep(1);
    let mut ctx = CheckpointContext::new(cfg, LocalCollective).expect("context");
    let mut g = big_group(c, "write_256MiB");
    g.bench_function("baseline_write_all_fsync", |b| {
        b.iter_custom(|n| {
            let prepare = || drop(std::fs::remove_file(&plain));
            timed("write baseline", n, prepare, || plain_write(&plain, &bytes))
        })
    });
    let _ = std::fs::remove_file(&plain);
    g.bench_function("checkpoint_save_and_commit", |b| {
        b.iter_custom(|n| {
            timed(
                "write checkpoint",
                n,
                || {},
                || {
                    ctx.save_now(state).expect("save");
                    ctx.finalize().expect("commit");
                },
            )
        })
    });
    g.bench_function("application_wait_at_save", |b| {
        b.iter_custom(|n| {
            let mut total = Duration::ZERO;
            for _ in 0..n {
                let t = Instant::now();
                ctx.save_now(state).expect("save");
                let d = t.elapsed();
                record("save wait", d);
                total += d;
                ctx.finalize().expect("commit");
            }
            total
        })
    });
    g.finish();
}

/// Saves `state` as job `job` under `dir`; returns the rank file written and a
/// context that restores it.
fn saved<T: Serialize>(
    dir: &Path,
    job: &str,
    state: &T,
) -> (PathBuf, CheckpointContext<LocalCollective>) {
    let cfg = CheckpointConfig::new(dir).job(job).every(u64::MAX).keep(1);
    let mut ctx = CheckpointContext::new(cfg.clone(), LocalCollective).expect("context");
    ctx.save_now(state).expect("save");
    ctx.finalize().expect("commit");
    let epoch = ctx.last_committed().expect("committed");
    let file = ctx
        .epochs_dir()
        .join(rankmig::checkpoint::epoch::epoch_dir_name(epoch))
        .join(rankmig::checkpoint::epoch::rank_file_name(0));
    let restarting = CheckpointContext::new(cfg.restart(true), LocalCollective).expect("context");
    (file, restarting)
}

fn bench_read(c: &mut Criterion, state: State) {
    let tmp = bench_dir();
    let dir = tmp.path().join("ckpt");
    let (file, mut plain) = saved(&dir, "bench", &state);
    let state = BulkState {
        iter: state.iter,
        data: state.data,
    };
    let (_, mut bulk) = saved(&dir, "bulk", &state);
    let bytes = Regions(vec![(
        "grid".to_owned(),
        serde_bytes::ByteBuf::from(bytemuck::cast_slice::<f64, u8>(&state.data).to_vec()),
    )]);
    drop(state);
    let (_, mut regions) = saved(&dir, "bytes", &bytes);
    drop(bytes);
    let mut g = big_group(c, "read_256MiB");
    g.bench_function("baseline_fs_read", |b| {
        b.iter_custom(|n| {
            timed(
                "read baseline",
                n,
                || {},
                || {
                    black_box(std::fs::read(&file).expect("read"));
                },
            )
        })
    });
    // The same read into memory advised huge pages, as a restore reads large blocks:
    // what is left of the difference is the restore's own work.
    g.bench_function("baseline_read_huge_pages", |b| {
        b.iter_custom(|n| {
            timed(
                "read baseline (huge pages)",
                n,
                || {},
                || {
                    let mut f = File::open(&file).expect("open");
                    let len = f.metadata().expect("stat").len();
                    let mut v = vec![0u8; usize::try_from(len).expect("size")];
                    rankmig::huge_pages::advise_capacity(&v);
                    f.read_exact(&mut v).expect("read");
                    black_box(v);
                },
            )
        })
    });
    g.bench_function("checkpoint_restore", |b| {
        b.iter_custom(|n| {
            timed(
                "read restore",
                n,
                || {},
                || {
                    let s: State = plain.restore().expect("restore");
                    black_box(s);
                },
            )
        })
    });
    g.bench_function("checkpoint_restore_bulk", |b| {
        b.iter_custom(|n| {
            timed(
                "read restore (bulk)",
                n,
                || {},
                || {
                    let s: BulkState = bulk.restore().expect("restore");
                    black_box(s);
                },
            )
        })
    });
    g.bench_function("checkpoint_restore_bytes", |b| {
        b.iter_custom(|n| {
            timed(
                "read restore (bytes)",
                n,
                || {},
                || {
                    let s: Regions = regions.restore().expect("restore");
                    black_box(s);
                },
            )
        })
    });
    g.finish();
}

fn bench_tick(c: &mut Criterion) {
    let tmp = bench_dir();
    let state = State {
        iter: 0,
        data: vec![0.0; 1024],
    };
    let mut g = c.benchmark_group("checkpoint_call_without_save");
    let every = CheckpointConfig::new(tmp.path())
        .job("bench")
        .every(u64::MAX);
    let mut ctx = CheckpointContext::new(every, LocalCollective).expect("context");
    g.bench_function("every_n_calls", |b| {
        b.iter_custom(|n| {
            let t = Instant::now();
            for _ in 0..n {
                ctx.checkpoint(black_box(&state)).expect("no save");
            }
            let d = t.elapsed();
            record_secs("call (every N)", d.as_secs_f64() / n as f64);
            d
        })
    });
    let timed_cfg = CheckpointConfig::new(tmp.path())
        .job("bench")
        .every_duration(Duration::from_secs(3600));
    let mut ctx = CheckpointContext::new(timed_cfg, LocalCollective).expect("context");
    g.bench_function("time_interval", |b| {
        b.iter_custom(|n| {
            let t = Instant::now();
            for _ in 0..n {
                ctx.checkpoint(black_box(&state)).expect("no save");
            }
            let d = t.elapsed();
            record_secs("call (time interval)", d.as_secs_f64() / n as f64);
            d
        })
    });
    g.finish();
}

/// Busy work of `d` (an iteration of the application).
fn work(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

fn bench_cycle(c: &mut Criterion) {
    const WORK: Duration = Duration::from_micros(20);
    let tmp = bench_dir();
    let state = State {
        iter: 0,
        data: vec![0.25; (4 << 20) / 8],
    };
    let cfg = CheckpointConfig::new(tmp.path().join("ckpt"))
        .job("bench")
        .every_duration(Duration::from_millis(200))
        .keep(2);
    let mut ctx = CheckpointContext::new(cfg, LocalCollective).expect("context");
    let mut saved_at: Option<Instant> = None;
    let mut committed = ctx.last_committed();
    let mut g = c.benchmark_group("time_interval_cycle");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(6));
    g.bench_function("call_with_20us_of_work", |b| {
        b.iter_custom(|n| {
            let mut in_calls = Duration::ZERO;
            for _ in 0..n {
                work(WORK);
                let was_pending = ctx.uncommitted();
                let t = Instant::now();
                ctx.checkpoint(black_box(&state)).expect("cycle");
                in_calls += t.elapsed();
                if ctx.last_committed() != committed {
                    committed = ctx.last_committed();
                    if let Some(at) = saved_at.take() {
                        record("commit after save", at.elapsed());
                    }
                }
                if !was_pending && ctx.uncommitted() {
                    saved_at = Some(t);
                }
            }
            record_secs("call (cycle)", in_calls.as_secs_f64() / n as f64);
            in_calls
        })
    });
    g.finish();
    ctx.finalize().expect("commit");
}

/// A temporary node-local directory: in `RANKMIG_BENCH_LOCAL_DIR`, else `/dev/shm` (a
/// RAM disk, as node-local storage often is), else the bench directory's base.
fn local_bench_dir() -> tempfile::TempDir {
    match std::env::var_os("RANKMIG_BENCH_LOCAL_DIR") {
        Some(base) => tempfile::tempdir_in(base).expect("node-local bench directory"),
        None if Path::new("/dev/shm").is_dir() => {
            tempfile::tempdir_in("/dev/shm").expect("node-local bench directory")
        }
        None => bench_dir(),
    }
}

/// A save and its commit per level (see the module's doc): the shared directory alone,
/// node-local without a flush, node-local with every epoch flushed (the time to the
/// shared directory's commit).
fn bench_levels(c: &mut Criterion, state: &State) {
    let shared = bench_dir();
    let local = local_bench_dir();
    let base = CheckpointConfig::new(shared.path().join("ckpt"))
        .every(u64::MAX)
        .keep(1);
    let levels: [(&str, &'static str, &'static str, CheckpointConfig); 3] = [
        (
            "shared_dir_on_disk",
            "level shared: commit",
            "level shared: wait",
            base.clone().job("shared"),
        ),
        (
            "node_local_on_dev_shm",
            "level local: commit",
            "level local: wait",
            base.clone()
                .job("local")
                .local(local.path())
                .flush_every(u64::MAX),
        ),
        (
            "node_local_flush_every_1",
            "level flush: commit",
            "level flush: wait",
            base.clone().job("flush").local(local.path()).flush_every(1),
        ),
    ];
    let mut g = big_group(c, "save_levels_256MiB");
    for (name, commit, wait, cfg) in levels {
        let mut ctx = CheckpointContext::new(cfg, LocalCollective).expect("context");
        g.bench_function(name, |b| {
            b.iter_custom(|n| {
                let mut total = Duration::ZERO;
                for _ in 0..n {
                    let t = Instant::now();
                    ctx.save_now(state).expect("save");
                    record(wait, t.elapsed());
                    ctx.finalize().expect("commit");
                    let d = t.elapsed();
                    record(commit, d);
                    total += d;
                }
                total
            })
        });
    }
    g.finish();
}

fn summary() {
    let mb = STATE_BYTES as f64 / f64::from(1u32 << 20);
    let line = |name: &str, base: Option<&str>| {
        let Some(m) = median(name) else { return };
        let ratio = base
            .and_then(|base| Some((base, median(base)?)))
            .map_or(String::new(), |(base, b)| {
                format!("  {:>5.1}% of {base} throughput", 100.0 * b / m)
            });
        println!(
            "  {name:<26} median {:>10.3} ms  {:>8.0} MiB/s{ratio}",
            m * 1e3,
            mb / m
        );
    };
    println!("\ncheckpoint summary (256 MiB state, medians of this run):");
    line("write baseline", None);
    line("write checkpoint", Some("write baseline"));
    line("save wait", None);
    line("read baseline", None);
    line("read restore", Some("read baseline"));
    line("read restore (bulk)", Some("read baseline"));
    line("read restore (bytes)", Some("read baseline"));
    line("read baseline (huge pages)", None);
    line("read restore (bulk)", Some("read baseline (huge pages)"));
    line("read restore (bytes)", Some("read baseline (huge pages)"));
    for name in ["call (every N)", "call (time interval)", "call (cycle)"] {
        if let Some(m) = median(name) {
            println!("  {name:<26} median {:>10.2} ns per call", m * 1e9);
        }
    }
    for level in ["shared", "local", "flush"] {
        let (Some(commit), Some(wait)) = (
            median(&format!("level {level}: commit")),
            median(&format!("level {level}: wait")),
        ) else {
            continue;
        };
        let ratio = |name: &str, m: f64| {
            median(&format!("level shared: {name}"))
                .map_or(String::new(), |b| format!("  {:>5.2} x shared", m / b))
        };
        println!(
            "  {:<26} median {:>10.3} ms{}; application's wait {:.3} ms{}",
            format!("level {level}: save+commit"),
            commit * 1e3,
            ratio("commit", commit),
            wait * 1e3,
            ratio("wait", wait),
        );
    }
    if let Some(m) = median("commit after save") {
        println!(
            "  {:<26} median {:>10.3} ms (cycle: 4 MiB every 200 ms)",
            "commit after save",
            m * 1e3
        );
    }
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench_tick(&mut c);
    bench_cycle(&mut c);
    let state = big_state();
    bench_write(&mut c, &state);
    bench_levels(&mut c, &state);
    bench_read(&mut c, state);
    c.final_summary();
    summary();
}
