//! TreeMatch's dense text format: N lines of N non-negative numbers.
//!
//! Rows are parsed straight into compressed sparse rows as they are read: nothing is
//! allocated per number, zeros and the diagonal are not stored, and the text is never
//! held whole (see [`super::reader`]). The number of values on the first row is the
//! order; every other row must have as many, and there must be as many rows.

use std::path::Path;

use super::reader::{self, Next, is_space};
use super::{CommMatrix, MAX_RANKS, MatrixError};

/// Parses the dense format from text. Blank lines and `#` comments are ignored, CRLF is
/// accepted.
pub(super) fn parse(text: &str, origin: &str) -> Result<CommMatrix, MatrixError> {
    let mut rows = Rows::new(origin);
    reader::for_each_line_of(text.as_bytes(), |n, data| rows.push(n, data))?;
    rows.finish()
}

/// Reads the dense format from a file, chunk by chunk.
pub(super) fn load(path: &Path) -> Result<CommMatrix, MatrixError> {
    let origin = path.display().to_string();
    let mut rows = Rows::new(&origin);
    reader::for_each_line(path, |n, data| rows.push(n, data))?;
    rows.finish()
}

/// Four zero values, each followed by a space.
const ZEROS: &[u8; 8] = b"0 0 0 0 ";

/// The rows read so far, as compressed sparse rows.
struct Rows<'a> {
    origin: &'a str,
    /// Values per row: the count of the first row.
    order: Option<usize>,
    row_start: Vec<usize>,
    entries: Vec<(u32, f64)>,
    /// Line of the first row, for the row-count error.
    first_line: usize,
}

impl<'a> Rows<'a> {
    fn new(origin: &'a str) -> Self {
        Self {
            origin,
            order: None,
            row_start: vec![0],
            entries: Vec::new(),
            first_line: 0,
        }
    }

    /// Adds one data line as the next row.
    fn push(&mut self, line: usize, data: &[u8]) -> Result<Next, MatrixError> {
        let row = self.row_start.len() - 1;
        if let Some(order) = self.order
            && row == order
        {
            return Err(MatrixError::ExtraRow {
                origin: self.origin.to_owned(),
                line,
                order,
            });
        }
        let mut column = 0usize;
        let mut i = 0usize;
        let n = data.len();
        while i < n {
            while i < n && is_space(data[i]) {
                i += 1;
            }
            // Runs of "0 0 0 0 " (most of a dense text) eight bytes at a time.
            while i + 8 <= n && data[i..i + 8] == *ZEROS {
                column += 4;
                i += 8;
            }
            if i == n {
                break;
            }
            if column >= MAX_RANKS {
                return Err(MatrixError::TooWide {
                    origin: self.origin.to_owned(),
                    line,
                });
            }
            let start = i;
            // Fast path: a plain integer of at most 15 digits is exact in an f64.
            let mut integer = 0u64;
            while i < n {
                let d = data[i].wrapping_sub(b'0');
                if d >= 10 {
                    break;
                }
                integer = integer.wrapping_mul(10).wrapping_add(u64::from(d));
                i += 1;
            }
            if (i == n || is_space(data[i])) && i - start <= 15 {
                // Below 10^15: exact as an i64 and as an f64. Zeros (most of a dense
                // text) are skipped without touching floating point.
                if integer != 0 && column != row {
                    self.entries.push((column as u32, integer as i64 as f64));
                }
            } else {
                while i < n && !is_space(data[i]) {
                    i += 1;
                }
                let value = parse_volume(&data[start..i], self.origin, line)?;
                if value != 0.0 && column != row {
                    self.entries.push((column as u32, value));
                }
            }
            column += 1;
        }
        if column > MAX_RANKS {
            return Err(MatrixError::TooWide {
                origin: self.origin.to_owned(),
                line,
            });
        }
        match self.order {
            None => {
                self.order = Some(column);
                self.first_line = line;
            }
            Some(order) if order != column => {
                return Err(MatrixError::NotSquare {
                    origin: self.origin.to_owned(),
                    line,
                    found: column,
                    expected: order,
                });
            }
            Some(_) => {}
        }
        self.row_start.push(self.entries.len());
        Ok(Next::More)
    }

    fn finish(self) -> Result<CommMatrix, MatrixError> {
        let Some(order) = self.order else {
            return Err(MatrixError::Empty {
                origin: self.origin.to_owned(),
            });
        };
        let rows = self.row_start.len() - 1;
        if rows != order {
            return Err(MatrixError::MissingRows {
                origin: self.origin.to_owned(),
                line: self.first_line,
                order,
                rows,
            });
        }
        CommMatrix::from_sorted_rows(order, self.row_start, self.entries, self.origin)
    }
}

/// Parses one volume: a finite non-negative number.
pub(super) fn parse_volume(field: &[u8], origin: &str, line: usize) -> Result<f64, MatrixError> {
    let parsed = std::str::from_utf8(field)
        .ok()
        .and_then(|s| s.parse::<f64>().ok());
    match parsed {
        Some(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(MatrixError::BadValue {
            origin: origin.to_owned(),
            line,
            value: reader::shown(field),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_crlf_and_blank_lines() {
        let m = parse("# header\r\n0 1 2\r\n\r\n3 0 4 # tail\r\n5 6 0\r\n", "t").unwrap();
        assert_eq!(m.order(), 3);
        assert_eq!(m.get(1, 2), 4.0);
        assert_eq!(m.get(2, 0), 5.0);
    }

    #[test]
    fn integers_and_decimals_parse_alike() {
        let m = parse(
            "0 1.5 1e3 000000000000000000000007\n\t2\t0 0.0 123456789012345678\n0 0 0 0\n9 0 0 0\n",
            "t",
        )
        .unwrap();
        assert_eq!(m.get(0, 1), 1.5);
        assert_eq!(m.get(0, 2), 1000.0);
        assert_eq!(m.get(0, 3), 7.0);
        assert_eq!(m.get(1, 0), 2.0);
        assert_eq!(m.get(1, 3), 123456789012345678.0);
        assert_eq!(m.get(3, 0), 9.0);
        assert_eq!(m.nonzeros(), 6);
    }

    #[test]
    fn errors_name_line_and_value() {
        let e = parse("0 1\n1 x\n", "f.mat").unwrap_err().to_string();
        assert_eq!(e, "f.mat:2: value 'x' is not a non-negative number");
        let e = parse("0 1\n-1 0\n", "f.mat").unwrap_err().to_string();
        assert!(e.contains("'-1'"), "{e}");
        let e = parse("0 1\nNaN 0\n", "f.mat").unwrap_err().to_string();
        assert!(e.contains("'NaN'"), "{e}");
        let e = parse("0 1 2\n1 0\n", "f.mat").unwrap_err().to_string();
        assert_eq!(
            e,
            "f.mat:2: row has 2 values, expected 3 (the matrix must be square)"
        );
        let e = parse("# nothing\n\n", "f.mat").unwrap_err().to_string();
        assert_eq!(e, "f.mat: the matrix is empty");
    }

    #[test]
    fn a_missing_or_extra_row_is_an_error() {
        let e = parse("# c\n0 1 2\n1 0 3\n", "f.mat")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "f.mat:2: rows have 3 values but there are 2 rows (the matrix must be square)"
        );
        let e = parse("0 1\n1 0\n0 0\n", "f.mat").unwrap_err().to_string();
        assert_eq!(
            e,
            "f.mat:3: one row too many: rows have 2 values (the matrix must be square)"
        );
    }

    #[test]
    fn runs_of_zeros_count_their_columns() {
        for order in [1usize, 3, 4, 5, 8, 9, 13] {
            let mut text = String::new();
            for i in 0..order {
                let row: Vec<String> = (0..order)
                    .map(|j| {
                        if j == (i + 1) % order {
                            "7".into()
                        } else {
                            "0".into()
                        }
                    })
                    .collect();
                text.push_str(&row.join(" "));
                text.push_str(if i % 2 == 0 { " \n" } else { "\n" });
            }
            let m = parse(&text, "t").unwrap();
            assert_eq!(m.order(), order);
            for i in 0..order {
                let expected = if order > 1 { 7.0 } else { 0.0 };
                assert_eq!(m.get(i, (i + 1) % order), expected, "{order} {i}");
            }
        }
    }

    #[test]
    fn a_row_wider_than_the_rank_limit_is_refused() {
        let row = "0 ".repeat(MAX_RANKS + 1);
        let e = parse(&row, "w.mat").unwrap_err().to_string();
        assert!(e.starts_with("w.mat:1: ") && e.contains("1048576"), "{e}");
    }

    #[test]
    fn diagonal_is_dropped() {
        let m = parse("7 1\n1 7\n", "t").unwrap();
        assert_eq!(m.get(0, 0), 0.0);
        assert_eq!(m.nonzeros(), 2);
    }
}
