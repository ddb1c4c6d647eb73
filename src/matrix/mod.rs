//! Communication matrices: who sends how many bytes to whom.
//!
//! Three input formats (see [`MatrixFormat`]): TreeMatch's dense text format, a
//! directory of Open MPI monitoring dumps (`NAME.RANK.prof`) and a sparse edge list.
//! The mapper works on the symmetrised matrix M + Mᵀ ([`CommMatrix::symmetric`]), a
//! petgraph compressed-row graph ([`SymGraph`], [`CommGraph`]). A matrix comes from and
//! goes to `ndarray` arrays ([`CommMatrix::from_array`], [`CommMatrix::to_array`]).
//!
//! ```
//! use ndarray::array;
//! use rankmig::matrix::CommMatrix;
//! let m = CommMatrix::parse_dense("0 5\n3 0\n", "inline").unwrap();
//! assert_eq!(m.order(), 2);
//! assert_eq!(m.get(0, 1), 5.0);
//! assert_eq!(m.to_array(), array![[0.0, 5.0], [3.0, 0.0]]);
//! let g = m.symmetric();
//! assert_eq!(g.neighbors(0).next(), Some((1, 8.0)));
//! assert_eq!(g.as_csr().node_count(), 2);
//! ```

mod dense;
mod detect;
mod edges;
mod graph;
mod prof;
mod reader;
mod room;

use std::path::{Path, PathBuf};

use ndarray::{Array1, Array2, ArrayView2};

pub use graph::{CommGraph, GraphError, SymGraph};
pub use reader::MAX_LINE_BYTES;

/// Most ranks a matrix may have: a rank number in an edge list or a monitoring dump
/// is at most `MAX_RANKS - 1`, so a stray large number cannot make the reader
/// allocate per-rank storage for billions of ranks.
pub const MAX_RANKS: usize = 1 << 20;

/// Largest total volume a matrix may hold: the sum of all its values is at most 1e300,
/// so that the symmetrised weights and the hop-bytes (a volume times a hop count) stay
/// finite; a metric that still overflows (huge `--costs`) is refused when computed.
pub const MAX_TOTAL_VOLUME: f64 = 1e300;

/// The formats a matrix can be read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum MatrixFormat {
    /// Directory → `prof`; a file whose first four data lines are `INT INT NUMBER` →
    /// `edges`; a first line without 3 fields → `dense`. A file of at most three lines of
    /// 3 numbers reads both ways (a 3×3 matrix, possibly missing rows, or a short edge
    /// list) and is refused: give the format.
    #[default]
    Auto,
    /// TreeMatch's format: N lines of N non-negative numbers (`#` comments allowed).
    Dense,
    /// One `SRC DST BYTES` line per pair (repeated pairs add up).
    Edges,
    /// A directory of Open MPI monitoring dumps `NAME.RANK.prof`; `E` and `I` lines are
    /// added, `C` lines (summaries of the same traffic) are not.
    Prof,
}

impl MatrixFormat {
    /// Every format, in the order `--help` lists them.
    pub const ALL: [Self; 4] = [Self::Auto, Self::Dense, Self::Edges, Self::Prof];

    /// The name the command line and `RANKMIG_MATRIX_FORMAT` use.
    ///
    /// ```
    /// use rankmig::matrix::MatrixFormat;
    /// assert_eq!(MatrixFormat::Edges.name(), "edges");
    /// assert_eq!("Dense".parse::<MatrixFormat>(), Ok(MatrixFormat::Dense));
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Dense => "dense",
            Self::Edges => "edges",
            Self::Prof => "prof",
        }
    }
}

impl std::fmt::Display for MatrixFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for MatrixFormat {
    type Err = String;

    /// A format by name, ignoring ASCII case.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(text.trim()))
            .ok_or_else(|| format!("{text:?} is not a matrix format (auto, dense, edges, prof)"))
    }
}

/// A directed communication matrix, stored sparsely by rows: entry (i, j) is the volume
/// rank i sent to rank j. The diagonal is always 0.
///
/// The dense form is an `ndarray` [`Array2`] ([`CommMatrix::from_array`],
/// [`CommMatrix::to_array`]), but the matrix is not stored that way: the readers fill
/// compressed rows as they parse, which hold only the nonzeros (a 16384-rank stencil
/// takes 1 MiB instead of the 2 GiB of its n² dense array) and which the symmetrised
/// graph is built from in one pass.
#[derive(Debug, Clone, PartialEq)]
pub struct CommMatrix {
    order: usize,
    /// Row i holds `columns[row_start[i]..row_start[i+1]]`, sorted, and the volumes
    /// `values[..]` at the same positions (two arrays: 12 bytes per nonzero, not 16).
    row_start: Vec<usize>,
    columns: Vec<u32>,
    values: Vec<f64>,
}

impl CommMatrix {
    /// Builds a matrix of `order` ranks from `(src, dst, volume)` triples; repeated pairs
    /// add up, self-communication and zeros are dropped. Indices must be `< order`.
    pub fn from_triples(
        order: usize,
        triples: impl IntoIterator<Item = (usize, usize, f64)>,
    ) -> Self {
        let all: Vec<(u32, u32, f64)> = triples
            .into_iter()
            .filter(|&(i, j, w)| i != j && w != 0.0)
            .map(|(i, j, w)| (i as u32, j as u32, w))
            .collect();
        let (row_start, columns, values) = graph::compressed_rows(order, all);
        Self {
            order,
            row_start,
            columns,
            values,
        }
    }

    /// Builds a matrix from `(src, dst, volume)` triples already without self-loops or
    /// zeros, refusing a total volume above [`MAX_TOTAL_VOLUME`] (`origin` names the
    /// input in that error).
    pub(crate) fn from_u32_triples(
        order: usize,
        triples: Vec<(u32, u32, f64)>,
        origin: &str,
    ) -> Result<Self, MatrixError> {
        check_total(triples.iter().map(|t| t.2), origin)?;
        let (row_start, columns, values) = graph::compressed_rows(order, triples);
        Ok(Self {
            order,
            row_start,
            columns,
            values,
        })
    }

    /// Builds a matrix from compressed rows whose entries are sorted by column, without
    /// the diagonal or zeros, refusing a total volume above [`MAX_TOTAL_VOLUME`]:
    /// `total` is the sum of `values`, which the reader added up as it read them.
    fn from_sorted_rows(
        order: usize,
        row_start: Vec<usize>,
        columns: Vec<u32>,
        values: Vec<f64>,
        total: f64,
        origin: &str,
    ) -> Result<Self, MatrixError> {
        check_sum(total, origin)?;
        Ok(Self {
            order,
            row_start,
            columns,
            values,
        })
    }

    /// Builds a matrix from a dense `ndarray` (a view: nothing is copied but the
    /// nonzeros), `dense[[i, j]]` = volume i → j; the diagonal and zeros are dropped.
    /// The array must be square and its values finite and non-negative, adding up to
    /// at most [`MAX_TOTAL_VOLUME`].
    ///
    /// ```
    /// use ndarray::array;
    /// use rankmig::matrix::CommMatrix;
    /// let m = CommMatrix::from_array(array![[0.0, 2.0], [1.0, 9.0]].view()).unwrap();
    /// assert_eq!((m.get(0, 1), m.get(1, 1), m.nonzeros()), (2.0, 0.0, 2));
    /// assert!(CommMatrix::from_array(array![[0.0, -1.0], [0.0, 0.0]].view()).is_err());
    /// ```
    pub fn from_array(dense: ArrayView2<'_, f64>) -> Result<Self, MatrixError> {
        let (rows, columns) = dense.dim();
        if rows != columns {
            return Err(MatrixError::ArrayNotSquare { rows, columns });
        }
        if rows > MAX_RANKS {
            return Err(MatrixError::ArrayTooLarge { order: rows });
        }
        let mut triples = Vec::new();
        for ((i, j), &value) in dense.indexed_iter() {
            if !(value.is_finite() && value >= 0.0) {
                return Err(MatrixError::ArrayValue {
                    row: i,
                    column: j,
                    value,
                });
            }
            if value != 0.0 && i != j {
                triples.push((i as u32, j as u32, value));
            }
        }
        Self::from_u32_triples(rows, triples, "array")
    }

    /// The dense form: `to_array()[[i, j]]` = volume i → j (n² values: for the mapper,
    /// use [`CommMatrix::symmetric`], which keeps the nonzeros only).
    pub fn to_array(&self) -> Array2<f64> {
        let mut dense = Array2::zeros((self.order, self.order));
        for i in 0..self.order {
            for (j, w) in self.row(i) {
                dense[[i, j]] = w;
            }
        }
        dense
    }

    /// Reads a matrix from a file or directory. `format` may be [`MatrixFormat::Auto`].
    pub fn load(path: &Path, format: MatrixFormat) -> Result<Self, MatrixError> {
        let format = match format {
            MatrixFormat::Auto => detect::detect_format(path)?,
            f => f,
        };
        match format {
            MatrixFormat::Prof => prof::load_dir(path),
            MatrixFormat::Dense => dense::load(path),
            MatrixFormat::Edges => edges::load(path),
            MatrixFormat::Auto => unreachable!("format resolved above"),
        }
    }

    /// Parses TreeMatch's dense text format; `origin` names the input in errors.
    pub fn parse_dense(text: &str, origin: &str) -> Result<Self, MatrixError> {
        dense::parse(text, origin)
    }

    /// Parses a `SRC DST BYTES` edge list; `origin` names the input in errors.
    pub fn parse_edges(text: &str, origin: &str) -> Result<Self, MatrixError> {
        edges::parse(text, origin)
    }

    /// Number of ranks.
    pub fn order(&self) -> usize {
        self.order
    }

    /// Volume sent from `i` to `j`.
    pub fn get(&self, i: usize, j: usize) -> f64 {
        let range = self.row_start[i]..self.row_start[i + 1];
        let start = range.start;
        self.columns[range]
            .binary_search(&(j as u32))
            .map(|k| self.values[start + k])
            .unwrap_or(0.0)
    }

    /// Nonzero entries of row `i`: `(j, volume)`.
    pub fn row(&self, i: usize) -> impl Iterator<Item = (usize, f64)> + '_ {
        let range = self.row_start[i]..self.row_start[i + 1];
        self.columns[range.clone()]
            .iter()
            .zip(&self.values[range])
            .map(|(&j, &w)| (j as usize, w))
    }

    /// Number of nonzero entries.
    pub fn nonzeros(&self) -> usize {
        self.columns.len()
    }

    /// Sum of all entries.
    pub fn total(&self) -> f64 {
        self.values.iter().sum()
    }

    /// The symmetrised matrix M + Mᵀ as an undirected weighted graph.
    pub fn symmetric(&self) -> SymGraph {
        SymGraph::from_directed(self)
    }

    /// The sub-matrix of the given ranks, renumbered `0..ranks.len()` in that order.
    pub fn submatrix(&self, ranks: &[usize]) -> CommMatrix {
        let mut new_index = vec![u32::MAX; self.order];
        for (k, &r) in ranks.iter().enumerate() {
            new_index[r] = k as u32;
        }
        let triples = ranks.iter().enumerate().flat_map(|(k, &r)| {
            let new_index = &new_index;
            self.row(r).filter_map(move |(j, w)| {
                let nj = new_index[j];
                (nj != u32::MAX).then_some((k, nj as usize, w))
            })
        });
        CommMatrix::from_triples(ranks.len(), triples)
    }

    /// Writes the matrix in TreeMatch's dense format (integers when the values are whole).
    pub fn write_dense(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        let mut line = String::new();
        let mut dense = Array1::zeros(self.order);
        for i in 0..self.order {
            line.clear();
            dense.fill(0.0);
            for (j, w) in self.row(i) {
                dense[j] = w;
            }
            for (j, w) in dense.iter().enumerate() {
                if j > 0 {
                    line.push(' ');
                }
                line.push_str(&format_volume(*w));
            }
            line.push('\n');
            out.write_all(line.as_bytes())?;
        }
        Ok(())
    }

    /// Writes the matrix as a `SRC DST BYTES` edge list, one line per nonzero entry
    /// in row order. When no entry names the last rank, a last line `N-1 N-1 0` keeps
    /// the order (the reader takes the largest rank seen plus one and skips the line).
    ///
    /// ```
    /// use rankmig::matrix::CommMatrix;
    /// let m = CommMatrix::from_triples(3, [(0, 1, 8.0)]);
    /// let mut text = Vec::new();
    /// m.write_edges(&mut text).unwrap();
    /// assert_eq!(String::from_utf8(text).unwrap(), "0 1 8\n2 2 0\n");
    /// ```
    pub fn write_edges(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        let mut largest = None;
        for i in 0..self.order {
            for (j, w) in self.row(i) {
                writeln!(out, "{i} {j} {}", format_volume(w))?;
                largest = largest.max(Some(i.max(j)));
            }
        }
        let last = self.order.checked_sub(1);
        match last {
            Some(last) if largest != Some(last) => writeln!(out, "{last} {last} 0"),
            _ => Ok(()),
        }
    }

    /// The matrix as text in `format`: an edge list for [`MatrixFormat::Edges`], else
    /// TreeMatch's dense format (`prof`, Open MPI's per-rank dumps, is not a format
    /// rankmig writes).
    pub fn to_text(&self, format: MatrixFormat) -> Vec<u8> {
        let mut out = Vec::new();
        // Writing to a Vec does not fail.
        let _ = match format {
            MatrixFormat::Edges => self.write_edges(&mut out),
            _ => self.write_dense(&mut out),
        };
        out
    }
}

/// Refuses volumes adding up to more than [`MAX_TOTAL_VOLUME`] (`origin` names the
/// input in the error). The readers pass finite non-negative values, whose sum is at
/// worst infinite, never NaN.
fn check_total(volumes: impl Iterator<Item = f64>, origin: &str) -> Result<(), MatrixError> {
    // Four running sums, not one: a chain of dependent additions is the slow part of
    // summing millions of values, and only the bound depends on the exact rounding.
    let mut lanes = [0.0f64; 4];
    for (k, v) in volumes.enumerate() {
        lanes[k % 4] += v;
    }
    check_sum((lanes[0] + lanes[1]) + (lanes[2] + lanes[3]), origin)
}

/// Refuses a `total` volume above [`MAX_TOTAL_VOLUME`] (`origin` names the input in the
/// error).
fn check_sum(total: f64, origin: &str) -> Result<(), MatrixError> {
    if total > MAX_TOTAL_VOLUME {
        return Err(MatrixError::TotalTooLarge {
            origin: origin.to_owned(),
            total: format!("{total:e}"),
        });
    }
    Ok(())
}

/// Formats a volume as an integer when it is whole.
pub fn format_volume(w: f64) -> String {
    if w.fract() == 0.0 && w.abs() < 1e18 {
        format!("{}", w as i64)
    } else {
        format!("{w}")
    }
}

/// Why a matrix could not be read.
#[derive(Debug, thiserror::Error)]
pub enum MatrixError {
    /// The file or directory could not be read.
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// No data at all.
    #[error("{origin}: the matrix is empty")]
    Empty {
        /// The input.
        origin: String,
    },
    /// A value is not a finite non-negative number.
    #[error("{origin}:{line}: value '{value}' is not a non-negative number")]
    BadValue {
        /// The input.
        origin: String,
        /// 1-based line number.
        line: usize,
        /// The text found.
        value: String,
    },
    /// A rank index is not a valid integer.
    #[error("{origin}:{line}: '{value}' is not a rank number")]
    BadRank {
        /// The input.
        origin: String,
        /// 1-based line number.
        line: usize,
        /// The text found.
        value: String,
    },
    /// A rank number is at or above [`MAX_RANKS`].
    #[error("{origin}:{line}: rank {value} is above the limit of {} ranks (0 to {})", MAX_RANKS, MAX_RANKS - 1)]
    RankTooLarge {
        /// The input.
        origin: String,
        /// 1-based line number.
        line: usize,
        /// The text found.
        value: String,
    },
    /// The file holds fewer rows than its rows have values.
    #[error(
        "{origin}:{line}: rows have {order} values but there are {rows} rows (the matrix must be square)"
    )]
    MissingRows {
        /// The input.
        origin: String,
        /// 1-based line number of the first row.
        line: usize,
        /// Values per row.
        order: usize,
        /// Rows found.
        rows: usize,
    },
    /// A row past the N-th of an N-value-per-row matrix.
    #[error(
        "{origin}:{line}: one row too many: rows have {order} values (the matrix must be square)"
    )]
    ExtraRow {
        /// The input.
        origin: String,
        /// 1-based line number of the extra row.
        line: usize,
        /// Values per row.
        order: usize,
    },
    /// A dense row with more values than [`MAX_RANKS`].
    #[error(
        "{origin}:{line}: row has more than {} values (the limit of ranks)",
        MAX_RANKS
    )]
    TooWide {
        /// The input.
        origin: String,
        /// 1-based line number.
        line: usize,
    },
    /// A line longer than [`MAX_LINE_BYTES`].
    #[error("{origin}:{line}: line longer than {limit} bytes")]
    LineTooLong {
        /// The input.
        origin: String,
        /// 1-based line number.
        line: usize,
        /// The bound.
        limit: usize,
    },
    /// The volumes add up to more than [`MAX_TOTAL_VOLUME`].
    #[error(
        "{origin}: the volumes add up to {total}, above the limit of {:e}",
        MAX_TOTAL_VOLUME
    )]
    TotalTooLarge {
        /// The input.
        origin: String,
        /// The total, as text (may be `inf`).
        total: String,
    },
    /// `auto` cannot tell the format.
    #[error(
        "{}: {lines} line(s) of 3 numbers read both as a 3×3 dense matrix (or one missing rows) and as an edge list; give --matrix-format dense or --matrix-format edges",
        path.display()
    )]
    Ambiguous {
        /// The file.
        path: PathBuf,
        /// Its data lines.
        lines: usize,
    },
    /// The rows do not form an N×N matrix.
    #[error(
        "{origin}:{line}: row has {found} values, expected {expected} (the matrix must be square)"
    )]
    NotSquare {
        /// The input.
        origin: String,
        /// 1-based line number.
        line: usize,
        /// Values on that line.
        found: usize,
        /// Expected count.
        expected: usize,
    },
    /// An array given as a matrix is not square ([`CommMatrix::from_array`]).
    #[error("the array is {rows}×{columns}, not square")]
    ArrayNotSquare {
        /// Its rows.
        rows: usize,
        /// Its columns.
        columns: usize,
    },
    /// An array given as a matrix has more than [`MAX_RANKS`] rows.
    #[error("the array has {order} rows, above the limit of {} ranks", MAX_RANKS)]
    ArrayTooLarge {
        /// Its rows.
        order: usize,
    },
    /// An array given as a matrix holds a value that is not a finite non-negative number.
    #[error("array[{row}, {column}] = {value} is not a non-negative number")]
    ArrayValue {
        /// Row of the value.
        row: usize,
        /// Column of the value.
        column: usize,
        /// The value.
        value: f64,
    },
    /// A line does not have the expected fields.
    #[error("{origin}:{line}: expected {expected}, found '{found}'")]
    BadLine {
        /// The input.
        origin: String,
        /// 1-based line number.
        line: usize,
        /// What was expected.
        expected: &'static str,
        /// The line.
        found: String,
    },
    /// A monitoring-dump directory has no `NAME.RANK.prof` file or misses a rank.
    #[error("{}: {problem}", path.display())]
    BadDumpDir {
        /// The directory.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array2, array, s};

    #[test]
    fn a_matrix_read_from_a_file_round_trips_through_its_array() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/matrices/cg.S.16.mat");
        let read = CommMatrix::load(&path, MatrixFormat::Dense).unwrap();
        let dense = read.to_array();
        assert_eq!(dense.dim(), (16, 16));
        assert_eq!(dense.sum(), read.total());
        assert_eq!(CommMatrix::from_array(dense.view()).unwrap(), read);
    }

    #[test]
    fn a_matrix_written_in_either_format_reads_back_the_same() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/matrices/cg.S.16.mat");
        let read = CommMatrix::load(&path, MatrixFormat::Dense).unwrap();
        let dense = String::from_utf8(read.to_text(MatrixFormat::Dense)).unwrap();
        assert_eq!(CommMatrix::parse_dense(&dense, "dense").unwrap(), read);
        let edges = String::from_utf8(read.to_text(MatrixFormat::Edges)).unwrap();
        assert_eq!(CommMatrix::parse_edges(&edges, "edges").unwrap(), read);
        // The last rank silent: its order is kept all the same.
        let quiet_last = CommMatrix::from_triples(4, [(0, 1, 2.5), (1, 0, 3.0)]);
        let edges = String::from_utf8(quiet_last.to_text(MatrixFormat::Edges)).unwrap();
        assert_eq!(edges, "0 1 2.5\n1 0 3\n3 3 0\n");
        assert_eq!(CommMatrix::parse_edges(&edges, "e").unwrap(), quiet_last);
    }

    #[test]
    fn a_strided_view_is_read_without_a_copy_of_the_array() {
        // Every other row and column of a 4×4 array: a view with strides 8 and 2.
        let big = Array2::from_shape_fn((4, 4), |(i, j)| (4 * i + j) as f64);
        let m = CommMatrix::from_array(big.slice(s![..;2, ..;2])).unwrap();
        assert_eq!(m.to_array(), array![[0.0, 2.0], [8.0, 0.0]]);
    }

    #[test]
    fn an_array_that_is_not_a_matrix_is_refused() {
        let wide = Array2::<f64>::zeros((2, 3));
        assert!(matches!(
            CommMatrix::from_array(wide.view()),
            Err(MatrixError::ArrayNotSquare {
                rows: 2,
                columns: 3
            })
        ));
        let nan = array![[0.0, f64::NAN], [0.0, 0.0]];
        let e = CommMatrix::from_array(nan.view()).unwrap_err().to_string();
        assert_eq!(e, "array[0, 1] = NaN is not a non-negative number");
        let huge = array![[0.0, 1e300], [1e300, 0.0]];
        assert!(matches!(
            CommMatrix::from_array(huge.view()),
            Err(MatrixError::TotalTooLarge { .. })
        ));
    }
}
