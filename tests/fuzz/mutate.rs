//! Inputs for the fuzz targets: seeded, reproducible one by one (input `i` of a target
//! depends only on the base seed, the target's name and `i`), made by mutating a seed
//! input, by stringing tokens of the format together, or as random bytes. Inputs stay
//! below [`MAX_INPUT`] bytes, so any memory or time beyond a small multiple of that is
//! the parser's doing.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Largest input generated, in bytes.
pub const MAX_INPUT: usize = 4096;

/// Values that find edges: bounds, overflows, signs, special floats, separators.
pub const COMMON_TOKENS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "7",
    "15",
    "16",
    "64",
    "255",
    "256",
    "1023",
    "65535",
    "65536",
    "65537",
    "1048575",
    "1048576",
    "2147483647",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999",
    "-1",
    "-0",
    "+1",
    "0.5",
    "1e3",
    "1e308",
    "1.8e308",
    "1e-320",
    "1e300",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "0x10",
    "1_000",
    " ",
    "  ",
    "\t",
    "\n",
    "\r\n",
    "\r",
    "\n\n",
    "#",
    "# c\n",
    "=",
    ":",
    ",",
    "-",
    ".",
    "..",
    "\0",
    "\u{feff}",
    "é",
    "\u{a0}",
    "\u{2028}",
    "a",
    "n1",
    "node-01",
];

/// Input `index` of a target.
pub fn input(
    base_seed: u64,
    target: &str,
    index: u64,
    seeds: &[Vec<u8>],
    tokens: &[&str],
) -> Vec<u8> {
    let mut rng = ChaCha8Rng::seed_from_u64(mix(base_seed, target, index));
    let mut out = match rng.gen_range(0..10) {
        0..=5 if !seeds.is_empty() => {
            let mut data = seeds[rng.gen_range(0..seeds.len())].clone();
            for _ in 0..rng.gen_range(1..=8) {
                mutate_once(&mut rng, &mut data, tokens);
            }
            data
        }
        0..=8 => tokens_line(&mut rng, tokens),
        _ => (0..rng.gen_range(0..256))
            .map(|_| rng.r#gen::<u8>())
            .collect(),
    };
    out.truncate(MAX_INPUT);
    out
}

/// Lines made of tokens, with separators between them.
fn tokens_line(rng: &mut ChaCha8Rng, tokens: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..rng.gen_range(1..12) {
        for k in 0..rng.gen_range(1..6) {
            if k > 0 {
                out.push(b' ');
            }
            out.extend_from_slice(pick(rng, tokens).as_bytes());
        }
        out.push(b'\n');
    }
    out
}

fn pick<'a>(rng: &mut ChaCha8Rng, tokens: &[&'a str]) -> &'a str {
    if tokens.is_empty() || rng.gen_bool(0.3) {
        COMMON_TOKENS[rng.gen_range(0..COMMON_TOKENS.len())]
    } else {
        tokens[rng.gen_range(0..tokens.len())]
    }
}

/// One mutation of `data`.
fn mutate_once(rng: &mut ChaCha8Rng, data: &mut Vec<u8>, tokens: &[&str]) {
    let len = data.len();
    let at = if len == 0 { 0 } else { rng.gen_range(0..=len) };
    match rng.gen_range(0..9) {
        0 if len > 0 => {
            let i = rng.gen_range(0..len);
            data[i] ^= 1 << rng.gen_range(0..8);
        }
        1 if len > 0 => {
            let i = rng.gen_range(0..len);
            data[i] = rng.r#gen();
        }
        2 | 3 => {
            let token = pick(rng, tokens);
            data.splice(at..at, token.bytes());
        }
        4 if len > 0 => {
            // Delete a range.
            let end = (at + rng.gen_range(1..16)).min(len);
            data.drain(at.min(end)..end);
        }
        5 if len > 0 => {
            // Duplicate a range (a repeated line, a repeated key).
            let start = rng.gen_range(0..len);
            let end = (start + rng.gen_range(1..64)).min(len);
            let copy: Vec<u8> = data[start..end].to_vec();
            data.splice(at..at, copy);
        }
        6 if len > 0 => {
            // Replace a number-looking run with a token.
            let start = rng.gen_range(0..len);
            let end = data[start..]
                .iter()
                .position(|b| !b.is_ascii_alphanumeric())
                .map_or(len, |p| start + p);
            let token = pick(rng, tokens);
            data.splice(start..end, token.bytes());
        }
        7 if len > 0 => data.truncate(rng.gen_range(0..len)),
        _ => {
            // Repeat a token many times (long fields, long lines).
            let token = pick(rng, tokens).repeat(rng.gen_range(2..200));
            data.splice(at..at, token.bytes());
        }
    }
    data.truncate(MAX_INPUT);
}

/// A 64-bit seed from the base seed, the target name and the input index.
fn mix(base: u64, target: &str, index: u64) -> u64 {
    let mut h = base ^ 0x9e37_79b9_7f4a_7c15;
    for b in target.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h ^ index.wrapping_mul(0xbf58_476d_1ce4_e5b9)
}
