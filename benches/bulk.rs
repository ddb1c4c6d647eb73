//! A rank's 8 MiB vector of f64 through bincode, as serde writes it (value by value)
//! and as `checkpoint::bulk` writes it (one block of bytes), against a baseline in the
//! same run: copying the same vector into a new one (`to_vec`, one allocation and one
//! copy). What a moving rank pays to serialise (into a reused buffer, as its state
//! message is) and its replacement to deserialise (into a new vector).
//!
//! Then a rank's 256 MiB vector deserialised into fresh memory, as a replacement does
//! after a migration (above glibc's largest mmap threshold, 32 MiB, every allocation is
//! new pages from the kernel, unmapped when freed): `checkpoint::bulk` (its vector
//! advised huge pages before the copy, `rankmig::huge_pages`) against the same zeroed
//! vector and copy without the advice, in the same run.
//!
//! Ends with the medians and their ratios to the baselines.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::Criterion;
use serde::{Deserialize, Serialize};

const VALUES: usize = (8 << 20) / 8;
const LARGE_VALUES: usize = (256 << 20) / 8;

#[derive(Serialize, Deserialize)]
struct ValueByValue {
    iter: u64,
    rows: Vec<f64>,
}

#[derive(Serialize, Deserialize)]
struct Block {
    iter: u64,
    #[serde(with = "rankmig::checkpoint::bulk")]
    rows: Vec<f64>,
}

/// Seconds per operation of each case, for the summary.
static SAMPLES: Mutex<BTreeMap<&'static str, Vec<f64>>> = Mutex::new(BTreeMap::new());

/// Times `iters` runs of `op` one by one, recording each.
fn timed(name: &'static str, iters: u64, mut op: impl FnMut()) -> Duration {
    let mut total = Duration::ZERO;
    let mut samples = Vec::with_capacity(iters as usize);
    for _ in 0..iters {
        let t = Instant::now();
        op();
        let d = t.elapsed();
        samples.push(d.as_secs_f64());
        total += d;
    }
    let mut all = SAMPLES.lock().unwrap_or_else(|e| e.into_inner());
    all.entry(name).or_default().extend(samples);
    total
}

fn median(name: &str) -> Option<f64> {
    let all = SAMPLES.lock().unwrap_or_else(|e| e.into_inner());
    let mut v = all.get(name)?.clone();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let rows: Vec<f64> = (0..VALUES).map(|i| i as f64 * 0.5).collect();
    let by_value = ValueByValue {
        iter: 1,
        rows: rows.clone(),
    };
    let block = Block { iter: 1, rows };
    let by_value_bytes = bincode::serialize(&by_value).expect("serialise");
    let block_bytes = bincode::serialize(&block).expect("serialise");
    let mut buffer = Vec::with_capacity(block_bytes.len().max(by_value_bytes.len()));

    let mut g = c.benchmark_group("state_8MiB");
    g.sample_size(30);
    g.bench_function("baseline_to_vec", |b| {
        b.iter_custom(|n| {
            timed("baseline to_vec", n, || {
                drop(black_box(block.rows.to_vec()))
            })
        })
    });
    g.bench_function("serialise_value_by_value", |b| {
        b.iter_custom(|n| {
            timed("serialise serde", n, || {
                buffer.clear();
                bincode::serialize_into(&mut buffer, &by_value).expect("serialise");
            })
        })
    });
    g.bench_function("serialise_bulk", |b| {
        b.iter_custom(|n| {
            timed("serialise bulk", n, || {
                buffer.clear();
                bincode::serialize_into(&mut buffer, &block).expect("serialise");
            })
        })
    });
    g.bench_function("deserialise_value_by_value", |b| {
        b.iter_custom(|n| {
            timed("deserialise serde", n, || {
                let s: ValueByValue = bincode::deserialize(&by_value_bytes).expect("read");
                drop(black_box(s));
            })
        })
    });
    g.bench_function("deserialise_bulk", |b| {
        b.iter_custom(|n| {
            timed("deserialise bulk", n, || {
                let s: Block = bincode::deserialize(&block_bytes).expect("read");
                drop(black_box(s));
            })
        })
    });
    g.finish();

    let large = Block {
        iter: 1,
        rows: (0..LARGE_VALUES).map(|i| i as f64 * 0.5).collect(),
    };
    let large_bytes = bincode::serialize(&large).expect("serialise");
    drop(large);
    // The block's bytes inside the message: after the iteration and the byte count.
    let values_bytes = &large_bytes[16..];
    let mut g = c.benchmark_group("state_256MiB_fresh_memory");
    g.sample_size(10);
    g.bench_function("baseline_zeroed_vec_and_copy", |b| {
        b.iter_custom(|n| {
            timed("fresh: zeroed vec + copy", n, || {
                let mut v: Vec<f64> = bytemuck::zeroed_vec(LARGE_VALUES);
                bytemuck::cast_slice_mut::<f64, u8>(&mut v).copy_from_slice(values_bytes);
                drop(black_box(v));
            })
        })
    });
    g.bench_function("deserialise_bulk", |b| {
        b.iter_custom(|n| {
            timed("fresh: deserialise bulk", n, || {
                let s: Block = bincode::deserialize(&large_bytes).expect("read");
                drop(black_box(s));
            })
        })
    });
    g.finish();
    c.final_summary();

    println!("\nbulk summary (8 MiB of f64, medians of this run):");
    let base = median("baseline to_vec");
    for name in [
        "baseline to_vec",
        "serialise serde",
        "serialise bulk",
        "deserialise serde",
        "deserialise bulk",
    ] {
        let Some(m) = median(name) else { continue };
        let ratio = base.map_or(String::new(), |b| format!("  {:>5.2}x the baseline", m / b));
        println!("  {name:<20} median {:>8.3} ms{ratio}", m * 1e3);
    }
    println!("\n256 MiB of f64 into fresh memory, medians of this run:");
    let base = median("fresh: zeroed vec + copy");
    for name in ["fresh: zeroed vec + copy", "fresh: deserialise bulk"] {
        let Some(m) = median(name) else { continue };
        let ratio = base.map_or(String::new(), |b| format!("  {:>5.2}x the baseline", m / b));
        println!("  {name:<26} median {:>8.3} ms{ratio}", m * 1e3);
    }
}
