//! Communication matrices: who sends how many bytes to whom.
//!
//! Three input formats (see [`MatrixFormat`]): TreeMatch's dense text format, a
//! directory of Open MPI monitoring dumps (`NAME.RANK.prof`) and a sparse edge list.
//! The mapper works on the symmetrised matrix M + Mᵀ ([`CommMatrix::symmetric`]).
//!
//! ```
//! use rankmig::matrix::CommMatrix;
//! let m = CommMatrix::parse_dense("0 5\n3 0\n", "inline").unwrap();
//! assert_eq!(m.order(), 2);
//! assert_eq!(m.get(0, 1), 5.0);
//! let g = m.symmetric();
//! assert_eq!(g.neighbors(0).next(), Some((1, 8.0)));
//! ```

mod dense;
mod edges;
mod graph;
mod prof;

use std::path::{Path, PathBuf};

pub use graph::SymGraph;

/// Most ranks a matrix may have: a rank number in an edge list or a monitoring dump
/// is at most `MAX_RANKS - 1`, so a stray large number cannot make the reader
/// allocate per-rank storage for billions of ranks.
pub const MAX_RANKS: usize = 1 << 20;

/// The formats a matrix can be read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum MatrixFormat {
    /// Directory → `prof`; a file whose lines have 3 fields (and which is not 3×3) →
    /// `edges`; otherwise `dense`.
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

/// A directed communication matrix, stored sparsely by rows: entry (i, j) is the volume
/// rank i sent to rank j. The diagonal is always 0.
#[derive(Debug, Clone, PartialEq)]
pub struct CommMatrix {
    order: usize,
    /// Row i holds `entries[row_start[i]..row_start[i+1]]`, sorted by column.
    row_start: Vec<usize>,
    entries: Vec<(u32, f64)>,
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
        let entries = columns.into_iter().zip(values).collect();
        Self {
            order,
            row_start,
            entries,
        }
    }

    /// Builds a matrix from dense rows (`rows[i][j]` = volume i → j).
    pub fn from_dense(rows: &[Vec<f64>]) -> Self {
        let order = rows.len();
        Self::from_triples(
            order,
            rows.iter()
                .enumerate()
                .flat_map(|(i, r)| r.iter().enumerate().map(move |(j, &w)| (i, j, w))),
        )
    }

    /// Reads a matrix from a file or directory. `format` may be [`MatrixFormat::Auto`].
    pub fn load(path: &Path, format: MatrixFormat) -> Result<Self, MatrixError> {
        let format = match format {
            MatrixFormat::Auto => detect_format(path)?,
            f => f,
        };
        match format {
            MatrixFormat::Prof => prof::load_dir(path),
            MatrixFormat::Dense => dense::parse(&read(path)?, &path.display().to_string()),
            MatrixFormat::Edges => edges::parse(&read(path)?, &path.display().to_string()),
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
        let row = &self.entries[self.row_start[i]..self.row_start[i + 1]];
        row.binary_search_by_key(&(j as u32), |e| e.0)
            .map(|k| row[k].1)
            .unwrap_or(0.0)
    }

    /// Nonzero entries of row `i`: `(j, volume)`.
    pub fn row(&self, i: usize) -> impl Iterator<Item = (usize, f64)> + '_ {
        self.entries[self.row_start[i]..self.row_start[i + 1]]
            .iter()
            .map(|&(j, w)| (j as usize, w))
    }

    /// Number of nonzero entries.
    pub fn nonzeros(&self) -> usize {
        self.entries.len()
    }

    /// Sum of all entries.
    pub fn total(&self) -> f64 {
        self.entries.iter().map(|e| e.1).sum()
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
        for i in 0..self.order {
            line.clear();
            let mut dense = vec![0.0; self.order];
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
}

/// Formats a volume as an integer when it is whole.
pub fn format_volume(w: f64) -> String {
    if w.fract() == 0.0 && w.abs() < 1e18 {
        format!("{}", w as i64)
    } else {
        format!("{w}")
    }
}

fn read(path: &Path) -> Result<String, MatrixError> {
    std::fs::read_to_string(path).map_err(|source| MatrixError::Read {
        path: path.to_owned(),
        source,
    })
}

fn detect_format(path: &Path) -> Result<MatrixFormat, MatrixError> {
    if path.is_dir() {
        return Ok(MatrixFormat::Prof);
    }
    let text = read(path)?;
    let data_lines: Vec<&str> = crate::lines::data_lines(&text).map(|(_, l)| l).collect();
    let three_fields = data_lines
        .first()
        .is_some_and(|l| l.split_whitespace().count() == 3);
    if three_fields && data_lines.len() != 3 {
        Ok(MatrixFormat::Edges)
    } else {
        Ok(MatrixFormat::Dense)
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
