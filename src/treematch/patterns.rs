//! Generated communication patterns (stencils, rings, all-to-all, ...) for benchmarks and tests.
//!
//! Every generator is deterministic: the same arguments (and seed) give the same matrix.
//! Volumes are whole numbers of bytes stored as `f64`. Process grids are laid out like
//! `MPI_Dims_create` + `MPI_Cart_create` would: dimensions in non-increasing order and
//! ranks numbered row-major (the last coordinate varies fastest). Stencil grids are **not
//! periodic** (open boundaries, as in a Jacobi solver); the ring is periodic by definition.
//!
//! [`Pattern`] lists every generator so that benchmarks and tests can iterate over them.
//!
//! ```
//! use rankmig::treematch::patterns::Pattern;
//! for pattern in Pattern::ALL {
//!     let m = pattern.generate(16, 42);
//!     assert_eq!(m.order(), 16, "{}", pattern.name());
//! }
//! ```

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::matrix::CommMatrix;

/// Bytes sent to each stencil neighbour (2D and 3D), in each direction.
pub const FACE_BYTES: f64 = 65_536.0;
/// Bytes sent to each ring neighbour, in each direction.
pub const RING_BYTES: f64 = 65_536.0;
/// Bytes sent from every rank to every other rank by [`all_to_all`].
pub const ALL_TO_ALL_BYTES: f64 = 4_096.0;
/// Bytes one rank sends in one FT transpose, split evenly over its group.
pub const FT_BYTES_PER_RANK: u64 = 1 << 20;
/// Messages each rank sends in [`power_law`].
pub const POWER_LAW_OUT_DEGREE: usize = 4;
/// Cluster size used by [`Pattern::ClusteredPermuted`].
pub const PATTERN_CLUSTER_SIZE: usize = 8;

/// Every generator, for benchmarks and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pattern {
    /// [`stencil_2d`].
    Stencil2d,
    /// [`stencil_3d`].
    Stencil3d,
    /// [`ring`].
    Ring,
    /// [`all_to_all`] (dense: n² entries).
    AllToAll,
    /// [`ft_transposes`].
    FtTransposes,
    /// [`power_law`].
    PowerLaw,
    /// [`clustered_permuted`] with clusters of [`PATTERN_CLUSTER_SIZE`] ranks.
    ClusteredPermuted,
}

impl Pattern {
    /// All patterns, in a fixed order.
    pub const ALL: [Pattern; 7] = [
        Pattern::Stencil2d,
        Pattern::Stencil3d,
        Pattern::Ring,
        Pattern::AllToAll,
        Pattern::FtTransposes,
        Pattern::PowerLaw,
        Pattern::ClusteredPermuted,
    ];

    /// Short name (the generator's function name).
    ///
    /// ```
    /// use rankmig::treematch::patterns::Pattern;
    /// assert_eq!(Pattern::FtTransposes.name(), "ft_transposes");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Stencil2d => "stencil_2d",
            Pattern::Stencil3d => "stencil_3d",
            Pattern::Ring => "ring",
            Pattern::AllToAll => "all_to_all",
            Pattern::FtTransposes => "ft_transposes",
            Pattern::PowerLaw => "power_law",
            Pattern::ClusteredPermuted => "clustered_permuted",
        }
    }

    /// True when the matrix has about n² entries (callers may skip large sizes).
    ///
    /// ```
    /// use rankmig::treematch::patterns::Pattern;
    /// assert!(Pattern::AllToAll.is_dense());
    /// assert!(!Pattern::Ring.is_dense());
    /// ```
    pub fn is_dense(self) -> bool {
        matches!(self, Pattern::AllToAll)
    }

    /// The matrix of this pattern for `n` ranks; `seed` is used by the random patterns
    /// only.
    ///
    /// ```
    /// use rankmig::treematch::patterns::Pattern;
    /// let a = Pattern::PowerLaw.generate(64, 7);
    /// assert_eq!(a, Pattern::PowerLaw.generate(64, 7));
    /// ```
    pub fn generate(self, n: usize, seed: u64) -> CommMatrix {
        match self {
            Pattern::Stencil2d => stencil_2d(n),
            Pattern::Stencil3d => stencil_3d(n),
            Pattern::Ring => ring(n),
            Pattern::AllToAll => all_to_all(n),
            Pattern::FtTransposes => ft_transposes(n),
            Pattern::PowerLaw => power_law(n, seed),
            Pattern::ClusteredPermuted => clustered_permuted(n, PATTERN_CLUSTER_SIZE, seed),
        }
    }
}

impl std::fmt::Display for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Near-square 2D process grid `[d0, d1]`, `d0 ≥ d1`, `d0 · d1 = n` (`d1` is the largest
/// divisor of `n` not above √n; a prime `n` gives `[n, 1]`).
///
/// ```
/// use rankmig::treematch::patterns::dims_2d;
/// assert_eq!(dims_2d(64), [8, 8]);
/// assert_eq!(dims_2d(32), [8, 4]);
/// assert_eq!(dims_2d(7), [7, 1]);
/// ```
pub fn dims_2d(n: usize) -> [usize; 2] {
    let small = (1..=n)
        .take_while(|d| d * d <= n)
        .filter(|d| n % d == 0)
        .last();
    match small {
        Some(d1) => [n / d1, d1],
        None => [n, 1], // n = 0
    }
}

/// Near-cubic 3D process grid `[d0, d1, d2]`, `d0 ≥ d1 ≥ d2`, product `n`: the
/// factorisation with the smallest halo surface `d0·d1 + d1·d2 + d0·d2`.
///
/// ```
/// use rankmig::treematch::patterns::dims_3d;
/// assert_eq!(dims_3d(64), [4, 4, 4]);
/// assert_eq!(dims_3d(256), [8, 8, 4]);
/// assert_eq!(dims_3d(12), [3, 2, 2]);
/// ```
pub fn dims_3d(n: usize) -> [usize; 3] {
    let mut best = [n, 1, 1];
    let surface = |d: [usize; 3]| d[0] * d[1] + d[1] * d[2] + d[0] * d[2];
    for d2 in (1..=n)
        .take_while(|d| d * d * d <= n)
        .filter(|d| n % d == 0)
    {
        let rest = n / d2;
        for d1 in (d2..=rest)
            .take_while(|d| d * d <= rest)
            .filter(|d| rest % d == 0)
        {
            let candidate = [rest / d1, d1, d2];
            if surface(candidate) < surface(best) {
                best = candidate;
            }
        }
    }
    best
}

/// Triples of a non-periodic nearest-neighbour stencil on a row-major grid `dims`.
fn stencil_triples(dims: &[usize]) -> Vec<(usize, usize, f64)> {
    let n: usize = dims.iter().product();
    let mut triples = Vec::with_capacity(2 * dims.len() * n);
    // stride of dimension k = product of the later dimensions
    let strides: Vec<usize> = (0..dims.len())
        .map(|k| dims[k + 1..].iter().product())
        .collect();
    for rank in 0..n {
        for (&dim, &stride) in dims.iter().zip(&strides) {
            let coord = (rank / stride) % dim;
            if coord + 1 < dim {
                let next = rank + stride;
                triples.push((rank, next, FACE_BYTES));
                triples.push((next, rank, FACE_BYTES));
            }
        }
    }
    triples
}

/// A tiled placement of the row-major grid `dims` (1 to 3 dimensions): recursive
/// coordinate bisection, halving the ranks along the grid's longest extent (the first
/// such dimension on ties) down to groups of at most `tile` ranks, leaves numbered in
/// that order. On 2 × 8-core nodes with `tile` = 8 it gives the 2 × 4 package and 4 × 4
/// node tiles of a 2D stencil: the known good placement that mappers are compared with.
///
/// ```
/// use rankmig::treematch::patterns::stencil_tiling;
/// // 4 x 4 grid in tiles of 4: the four 2 x 2 quadrants.
/// let leaf = stencil_tiling(&[4, 4], 4);
/// let tile = |rank: usize| leaf[rank] / 4;
/// assert_eq!([tile(0), tile(1), tile(4), tile(5)], [0; 4]); // top-left quadrant
/// assert_eq!([tile(2), tile(3), tile(6), tile(7)], [1; 4]); // top-right quadrant
/// assert_eq!(tile(10), tile(15)); // bottom-right quadrant
/// ```
pub fn stencil_tiling(dims: &[usize], tile: usize) -> Vec<usize> {
    let n: usize = dims.iter().product();
    let mut ranks: Vec<usize> = (0..n).collect();
    let mut leaf_of_rank = vec![0; n];
    bisect_coordinates(&mut ranks, dims, tile.max(1), 0, &mut leaf_of_rank);
    leaf_of_rank
}

/// Coordinates of `rank` in the row-major grid `dims`.
fn grid_coordinates(rank: usize, dims: &[usize]) -> [usize; 3] {
    let mut coordinates = [0; 3];
    let mut rest = rank;
    for (k, &d) in dims.iter().enumerate().rev().filter(|(k, _)| *k < 3) {
        coordinates[k] = rest % d.max(1);
        rest /= d.max(1);
    }
    coordinates
}

fn bisect_coordinates(
    ranks: &mut [usize],
    dims: &[usize],
    tile: usize,
    first_leaf: usize,
    leaf_of_rank: &mut [usize],
) {
    if ranks.len() <= tile {
        for (k, &r) in ranks.iter().enumerate() {
            leaf_of_rank[r] = first_leaf + k;
        }
        return;
    }
    let extent = |k: usize| {
        let values = ranks.iter().map(|&r| grid_coordinates(r, dims)[k]);
        values.clone().max().unwrap_or(0) - values.min().unwrap_or(0)
    };
    let axis = (0..dims.len().min(3))
        .max_by_key(|&k| (extent(k), usize::MAX - k))
        .unwrap_or(0);
    ranks.sort_by_key(|&r| (grid_coordinates(r, dims)[axis], r));
    let half = ranks.len() / 2;
    let (low, high) = ranks.split_at_mut(half);
    bisect_coordinates(low, dims, tile, first_leaf, leaf_of_rank);
    bisect_coordinates(high, dims, tile, first_leaf + half, leaf_of_rank);
}

/// 5-point stencil (halo exchange) on the near-square grid [`dims_2d`]`(n)`, **not
/// periodic**: every rank sends [`FACE_BYTES`] to each of its up to 4 grid neighbours.
/// Rank `r` sits at `(r / d1, r % d1)`. Symmetric.
///
/// ```
/// use rankmig::treematch::patterns::{stencil_2d, FACE_BYTES};
/// let m = stencil_2d(16); // 4 x 4 grid
/// assert_eq!(m.get(5, 6), FACE_BYTES); // right neighbour
/// assert_eq!(m.get(5, 9), FACE_BYTES); // neighbour below
/// assert_eq!(m.get(3, 4), 0.0); // end of a row: no wrap-around
/// assert_eq!(m.nonzeros(), 2 * 2 * 4 * 3); // 24 links, both ways
/// ```
pub fn stencil_2d(n: usize) -> CommMatrix {
    CommMatrix::from_triples(n, stencil_triples(&dims_2d(n)))
}

/// 7-point stencil (3D halo exchange) on the near-cubic grid [`dims_3d`]`(n)`, **not
/// periodic**: every rank sends [`FACE_BYTES`] to each of its up to 6 grid neighbours.
/// Rank `r` sits at `(r / (d1·d2), (r / d2) % d1, r % d2)`. Symmetric.
///
/// ```
/// use rankmig::treematch::patterns::{stencil_3d, FACE_BYTES};
/// let m = stencil_3d(64); // 4 x 4 x 4 grid
/// assert_eq!(m.get(0, 1), FACE_BYTES);
/// assert_eq!(m.get(0, 4), FACE_BYTES);
/// assert_eq!(m.get(0, 16), FACE_BYTES);
/// assert_eq!(m.get(0, 63), 0.0);
/// assert_eq!(m.nonzeros(), 2 * 3 * 16 * 3); // 144 links, both ways
/// ```
pub fn stencil_3d(n: usize) -> CommMatrix {
    CommMatrix::from_triples(n, stencil_triples(&dims_3d(n)))
}

/// Periodic ring: rank `i` sends [`RING_BYTES`] to `i + 1` and to `i - 1` (mod n).
/// Symmetric; with 2 ranks both messages go to the other rank.
///
/// ```
/// use rankmig::treematch::patterns::{ring, RING_BYTES};
/// let m = ring(8);
/// assert_eq!(m.get(7, 0), RING_BYTES);
/// assert_eq!(m.get(0, 7), RING_BYTES);
/// assert_eq!(m.nonzeros(), 16);
/// assert_eq!(ring(2).get(0, 1), 2.0 * RING_BYTES);
/// ```
pub fn ring(n: usize) -> CommMatrix {
    let triples = (0..n).flat_map(|i| {
        let next = (i + 1) % n.max(1);
        let prev = (i + n.max(1) - 1) % n.max(1);
        [(i, next, RING_BYTES), (i, prev, RING_BYTES)]
    });
    CommMatrix::from_triples(n, triples)
}

/// Dense uniform all-to-all: every rank sends [`ALL_TO_ALL_BYTES`] to every other rank
/// (n·(n−1) entries: keep `n` to a few thousand). Symmetric.
///
/// ```
/// use rankmig::treematch::patterns::{all_to_all, ALL_TO_ALL_BYTES};
/// let m = all_to_all(10);
/// assert_eq!(m.nonzeros(), 90);
/// assert_eq!(m.get(3, 8), ALL_TO_ALL_BYTES);
/// ```
pub fn all_to_all(n: usize) -> CommMatrix {
    let triples = (0..n).flat_map(|i| (0..n).map(move |j| (i, j, ALL_TO_ALL_BYTES)));
    CommMatrix::from_triples(n, triples)
}

/// NAS-FT-like transposes with the 2D decomposition: ranks form the grid
/// [`dims_2d`]`(n)` = `[rows, cols]` (rank `r` in row `r / cols`, column `r % cols`), and
/// each rank does one all-to-all inside its row and one inside its column, sending
/// [`FT_BYTES_PER_RANK`] per transpose split evenly over the other members of the
/// group (integer division, at least 1 byte). When `n` is prime the grid is `[n, 1]` and
/// this is the 1D decomposition: one all-to-all over all ranks. Symmetric.
///
/// ```
/// use rankmig::treematch::patterns::ft_transposes;
/// let m = ft_transposes(16); // 4 x 4 grid: 3 row partners + 3 column partners each
/// assert_eq!(m.nonzeros(), 16 * 6);
/// assert_eq!(m.get(0, 3), ((1 << 20) / 3) as f64); // same row
/// assert_eq!(m.get(0, 12), ((1 << 20) / 3) as f64); // same column
/// assert_eq!(m.get(0, 5), 0.0);
/// ```
pub fn ft_transposes(n: usize) -> CommMatrix {
    let [rows, cols] = dims_2d(n);
    let per_pair =
        |group: usize| (FT_BYTES_PER_RANK / group.saturating_sub(1).max(1) as u64).max(1);
    let (row_bytes, col_bytes) = (per_pair(cols) as f64, per_pair(rows) as f64);
    let triples = (0..n).flat_map(move |r| {
        let (row, col) = (r / cols, r % cols);
        let in_row = (0..cols).map(move |c| (r, row * cols + c, row_bytes));
        let in_col = (0..rows).map(move |w| (r, w * cols + col, col_bytes));
        in_row.chain(in_col)
    });
    CommMatrix::from_triples(n, triples)
}

/// Zipf-distributed cumulative popularity: the rank at position `k` of a seeded random
/// order gets popularity `1 / (k + 1)`.
fn zipf_cumulative(n: usize, rng: &mut ChaCha8Rng) -> (Vec<usize>, Vec<f64>) {
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(rng);
    let mut cumulative = Vec::with_capacity(n);
    let mut total = 0.0;
    for k in 0..n {
        total += 1.0 / (k + 1) as f64;
        cumulative.push(total);
    }
    (order, cumulative)
}

/// A destination drawn with Zipf popularity, different from `src` when possible.
fn zipf_destination(
    src: usize,
    order: &[usize],
    cumulative: &[f64],
    rng: &mut ChaCha8Rng,
) -> usize {
    let total = cumulative.last().copied().unwrap_or(0.0);
    for _ in 0..8 {
        let x = rng.gen_range(0.0..total);
        let k = cumulative.partition_point(|&c| c <= x).min(order.len() - 1);
        if order[k] != src {
            return order[k];
        }
    }
    (src + 1) % order.len()
}

/// Pareto-distributed message volume (shape 1.5, from 1 KiB, capped at 1 GiB), whole bytes.
fn pareto_bytes(rng: &mut ChaCha8Rng) -> f64 {
    let u: f64 = 1.0 - rng.gen_range(0.0..1.0); // (0, 1]
    (1024.0 / u.powf(1.0 / 1.5))
        .min((1u64 << 30) as f64)
        .floor()
}

/// Heavy-tailed traffic: every rank sends [`POWER_LAW_OUT_DEGREE`] messages to
/// destinations drawn with Zipf popularity (the `k`-th most popular rank, in a seeded
/// random order, is chosen with probability ∝ 1/k), each of a Pareto-distributed volume
/// (shape 1.5, at least 1 KiB). A few ranks are heavy hitters that many others talk to.
/// Repeated pairs add up. Not symmetric. Seeded ChaCha8: reproducible.
///
/// ```
/// use rankmig::treematch::patterns::power_law;
/// let m = power_law(256, 1);
/// assert_eq!(m, power_law(256, 1));
/// assert!(m.nonzeros() <= 4 * 256);
/// let in_degree = |j: usize| (0..256).filter(|&i| m.get(i, j) > 0.0).count();
/// let max_in = (0..256).map(in_degree).max().unwrap();
/// assert!(max_in >= 64, "a heavy hitter receives from many ranks: {max_in}");
/// ```
pub fn power_law(n: usize, seed: u64) -> CommMatrix {
    if n < 2 {
        return CommMatrix::from_triples(n, []);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (order, cumulative) = zipf_cumulative(n, &mut rng);
    let mut triples = Vec::with_capacity(n * POWER_LAW_OUT_DEGREE);
    for src in 0..n {
        for _ in 0..POWER_LAW_OUT_DEGREE {
            let dst = zipf_destination(src, &order, &cumulative, &mut rng);
            triples.push((src, dst, pareto_bytes(&mut rng)));
        }
    }
    CommMatrix::from_triples(n, triples)
}

/// The relabelling used by [`clustered_permuted`]: entry `p` is the rank that planted
/// position `p` became (planted cluster `c` = positions `c·size .. (c+1)·size`).
/// Placing rank `perm[p]` on leaf `p` recovers the planted, cluster-aligned placement.
///
/// ```
/// use rankmig::treematch::patterns::clustered_permutation;
/// let mut p = clustered_permutation(10, 3);
/// p.sort_unstable();
/// assert_eq!(p, (0..10).collect::<Vec<_>>());
/// ```
pub fn clustered_permutation(n: usize, seed: u64) -> Vec<usize> {
    // An RNG stream of its own, so that the permutation does not depend on the weights.
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(1);
    let mut perm: Vec<usize> = (0..n).collect();
    perm.shuffle(&mut rng);
    perm
}

/// Heavy volume inside a cluster (512 KiB to 1 MiB).
fn heavy_bytes(rng: &mut ChaCha8Rng) -> f64 {
    rng.gen_range(512 * 1024..=1024 * 1024u64) as f64
}

/// Clusters of heavy traffic hidden by a random numbering. Planted positions are cut
/// into clusters of `cluster_size` consecutive positions (the last may be smaller;
/// `cluster_size` is clamped to `1..=n`). Inside a cluster each pair talks with
/// probability 3/4, 512 KiB to 1 MiB each way (same volume both ways); besides, every
/// position sends 2 light messages (1 to 1024 bytes) to uniformly random other positions.
/// Position `p` is then renamed rank [`clustered_permutation`]`(n, seed)[p]`, so that
/// the identity numbering is a bad placement. Not symmetric (the noise is one-way).
///
/// ```
/// use rankmig::treematch::patterns::{clustered_permutation, clustered_permuted};
/// let m = clustered_permuted(64, 8, 5);
/// let perm = clustered_permutation(64, 5);
/// let heavy = |p: usize, q: usize| m.get(perm[p], perm[q]) >= 512.0 * 1024.0;
/// // planted position 0 is in cluster 0..8: heavy traffic there, none elsewhere
/// assert!((1..8).any(|q| heavy(0, q)));
/// assert!((8..64).all(|q| !heavy(0, q)));
/// ```
pub fn clustered_permuted(n: usize, cluster_size: usize, seed: u64) -> CommMatrix {
    if n < 2 {
        return CommMatrix::from_triples(n, []);
    }
    let size = cluster_size.clamp(1, n);
    let perm = clustered_permutation(n, seed);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut triples = Vec::new();
    for start in (0..n).step_by(size) {
        let end = (start + size).min(n);
        for i in start..end {
            for j in i + 1..end {
                if rng.gen_range(0..4) < 3 {
                    let w = heavy_bytes(&mut rng);
                    triples.push((perm[i], perm[j], w));
                    triples.push((perm[j], perm[i], w));
                }
            }
        }
    }
    for i in 0..n {
        for _ in 0..2 {
            let other = (i + rng.gen_range(1..n)) % n;
            let w = rng.gen_range(1..=1024u64) as f64;
            triples.push((perm[i], perm[other], w));
        }
    }
    CommMatrix::from_triples(n, triples)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_symmetric(m: &CommMatrix) -> bool {
        (0..m.order()).all(|i| m.row(i).all(|(j, w)| m.get(j, i) == w))
    }

    fn all_whole(m: &CommMatrix) -> bool {
        (0..m.order()).all(|i| m.row(i).all(|(_, w)| w > 0.0 && w.fract() == 0.0))
    }

    #[test]
    fn grids_are_balanced_factorisations() {
        for n in [1, 2, 7, 12, 16, 64, 100, 256, 1000, 1024, 4096, 16384] {
            let [a, b] = dims_2d(n);
            assert_eq!(a * b, n);
            assert!(a >= b);
            let [x, y, z] = dims_3d(n);
            assert_eq!(x * y * z, n);
            assert!(x >= y && y >= z, "{n}: {x} {y} {z}");
        }
        assert_eq!(dims_2d(4096), [64, 64]);
        assert_eq!(dims_3d(4096), [16, 16, 16]);
        assert_eq!(dims_3d(1024), [16, 8, 8]);
        assert_eq!(dims_2d(0), [0, 1]);
    }

    #[test]
    fn stencils_have_the_expected_links() {
        // 2D r x c open grid: r(c-1) + c(r-1) links, each stored both ways.
        for (n, r, c) in [(64, 8, 8), (256, 16, 16), (32, 8, 4), (7, 7, 1)] {
            let m = stencil_2d(n);
            assert_eq!(m.order(), n);
            assert_eq!(m.nonzeros(), 2 * (r * (c - 1) + c * (r - 1)), "n = {n}");
            assert!(is_symmetric(&m) && all_whole(&m));
        }
        // 3D: for each dimension, (d - 1) x product of the others links.
        for n in [64, 256, 1000] {
            let d = dims_3d(n);
            let links: usize = (0..3).map(|k| (d[k] - 1) * n / d[k]).sum();
            let m = stencil_3d(n);
            assert_eq!(m.nonzeros(), 2 * links, "n = {n}");
            assert!(is_symmetric(&m) && all_whole(&m));
        }
        assert_eq!(stencil_2d(1).nonzeros(), 0);
        assert_eq!(stencil_3d(0).order(), 0);
    }

    #[test]
    fn ring_and_all_to_all() {
        for n in [3, 16, 1000] {
            let m = ring(n);
            assert_eq!(m.nonzeros(), 2 * n);
            assert!(is_symmetric(&m) && all_whole(&m));
            assert_eq!(m.total(), 2.0 * n as f64 * RING_BYTES);
        }
        assert_eq!(ring(1).nonzeros(), 0);
        assert_eq!(ring(0).order(), 0);
        let m = all_to_all(33);
        assert_eq!(m.nonzeros(), 33 * 32);
        assert!(is_symmetric(&m) && all_whole(&m));
        assert_eq!(all_to_all(1).nonzeros(), 0);
    }

    #[test]
    fn ft_groups_are_rows_and_columns() {
        for n in [16, 64, 128, 256] {
            let [rows, cols] = dims_2d(n);
            let m = ft_transposes(n);
            assert_eq!(m.nonzeros(), n * (rows - 1 + cols - 1), "n = {n}");
            assert!(is_symmetric(&m) && all_whole(&m));
            for i in 0..n {
                for (j, _) in m.row(i) {
                    assert!(i / cols == j / cols || i % cols == j % cols);
                }
            }
        }
        // prime: the 1D decomposition, one all-to-all
        assert_eq!(ft_transposes(13).nonzeros(), 13 * 12);
        assert_eq!(ft_transposes(1).nonzeros(), 0);
    }

    #[test]
    fn power_law_is_seeded_and_heavy_tailed() {
        let n = 1024;
        let m = power_law(n, 9);
        assert_eq!(m, power_law(n, 9));
        assert_ne!(m, power_law(n, 10));
        assert_eq!(m.order(), n);
        assert!(all_whole(&m));
        assert!(m.nonzeros() <= n * POWER_LAW_OUT_DEGREE);
        assert!(m.nonzeros() >= n * 2, "{}", m.nonzeros());
        assert!((0..n).all(|i| m.get(i, i) == 0.0));
        let g = m.symmetric();
        let mut degrees: Vec<usize> = (0..n).map(|v| g.degree(v)).collect();
        degrees.sort_unstable();
        let median = degrees[n / 2];
        let max = degrees[n - 1];
        assert!(max >= 20 * median, "max degree {max}, median {median}");
        assert_eq!(power_law(1, 3).nonzeros(), 0);
        assert_eq!(power_law(2, 3).nonzeros(), 2);
    }

    #[test]
    fn clusters_are_heavy_and_hidden() {
        let (n, size, seed) = (256, 8, 4);
        let m = clustered_permuted(n, size, seed);
        assert_eq!(m, clustered_permuted(n, size, seed));
        assert!(all_whole(&m));
        let perm = clustered_permutation(n, seed);
        let mut position = vec![0; n];
        for (p, &r) in perm.iter().enumerate() {
            position[r] = p;
        }
        let (mut inside, mut outside) = (0.0, 0.0);
        for i in 0..n {
            for (j, w) in m.row(i) {
                if position[i] / size == position[j] / size {
                    inside += w;
                } else {
                    outside += w;
                    assert!(w <= 2.0 * 1024.0);
                }
            }
        }
        assert!(
            inside > 100.0 * outside,
            "inside {inside}, outside {outside}"
        );
        // intra-cluster pairs: about 3/4 of 28 per cluster, both ways, plus <= 2n noise
        let pairs = n / size * 28;
        assert!(m.nonzeros() >= pairs && m.nonzeros() <= 2 * pairs + 2 * n);
        // the identity numbering does not follow the clusters
        let aligned = (0..n)
            .filter(|&r| m.row(r).any(|(j, w)| w > 4096.0 && j / size == r / size))
            .count();
        assert!(aligned < n / 2, "{aligned}");
        // odd sizes and clamping
        assert_eq!(clustered_permuted(10, 0, 1).order(), 10);
        assert_eq!(clustered_permuted(10, 100, 1).order(), 10);
        assert_eq!(clustered_permuted(1, 8, 1).nonzeros(), 0);
    }

    #[test]
    fn every_pattern_generates_its_size() {
        for p in Pattern::ALL {
            for n in [0, 1, 2, 5, 64] {
                let m = p.generate(n, 11);
                assert_eq!(m.order(), n, "{p} n={n}");
                assert!((0..n).all(|i| m.get(i, i) == 0.0));
                assert_eq!(m, p.generate(n, 11));
            }
        }
        let names: std::collections::HashSet<_> = Pattern::ALL.iter().map(|p| p.name()).collect();
        assert_eq!(names.len(), Pattern::ALL.len());
    }
}
