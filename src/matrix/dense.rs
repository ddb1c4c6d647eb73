//! TreeMatch's dense text format: N lines of N non-negative numbers.
//!
//! Rows are parsed straight into compressed sparse rows as they are read: nothing is
//! allocated per number, zeros and the diagonal are not stored, and the text is never
//! held whole (see [`super::reader`]). The number of values on the first row is the
//! order; every other row must have as many, and there must be as many rows.

use std::path::Path;

use super::reader::{self, LineFormat, Next, next_field, scan_field, skip_spaces};
use super::{CommMatrix, MAX_RANKS, MatrixError, room};

/// Parses the dense format from text. Blank lines and `#` comments are ignored, CRLF is
/// accepted.
pub(super) fn parse(text: &str, origin: &str) -> Result<CommMatrix, MatrixError> {
    reader::parse_text::<Rows>(text, origin)
}

/// Reads the dense format from a file, chunk by chunk.
pub(super) fn load(path: &Path) -> Result<CommMatrix, MatrixError> {
    reader::load_file::<Rows>(path)
}

/// Four zero values, each followed by a space.
const ZEROS: &[u8; 8] = b"0 0 0 0 ";

/// The rows read so far, as compressed sparse rows.
struct Rows {
    /// Faults in the room reserved for `columns` and `values`; first, so that it is
    /// dropped (its thread joined) before them.
    prefault: Option<room::Prefault>,
    origin: String,
    /// Values per row: the count of the first row.
    order: Option<usize>,
    row_start: Vec<usize>,
    columns: Vec<u32>,
    values: Vec<f64>,
    /// Line of the first row, for the row-count error.
    first_line: usize,
    /// Length of the whole input (0 = unknown).
    input_bytes: u64,
    /// Sum of the rows read so far.
    total: f64,
}

impl LineFormat for Rows {
    fn start(origin: String) -> Self {
        Self {
            prefault: None,
            origin,
            order: None,
            row_start: vec![0],
            columns: Vec::new(),
            values: Vec::new(),
            first_line: 0,
            input_bytes: 0,
            total: 0.0,
        }
    }

    fn input_length(&mut self, bytes: u64) {
        self.input_bytes = bytes;
    }

    /// Adds one data line as the next row.
    fn line(&mut self, line: usize, data: &[u8]) -> Result<Next, MatrixError> {
        let row = self.row_start.len() - 1;
        if let Some(order) = self.order
            && row == order
        {
            return Err(MatrixError::ExtraRow {
                origin: self.origin.clone(),
                line,
                order,
            });
        }
        let columns = self.values(row, line, data)?;
        self.end_row(line, columns)
    }

    fn finish(self) -> Result<CommMatrix, MatrixError> {
        let Some(order) = self.order else {
            return Err(MatrixError::Empty {
                origin: self.origin,
            });
        };
        let rows = self.row_start.len() - 1;
        if rows != order {
            return Err(MatrixError::MissingRows {
                origin: self.origin,
                line: self.first_line,
                order,
                rows,
            });
        }
        drop(self.prefault);
        let (mut columns, mut values) = (self.columns, self.values);
        room::trim(&mut columns);
        room::trim(&mut values);
        CommMatrix::from_sorted_rows(
            order,
            self.row_start,
            columns,
            values,
            self.total,
            &self.origin,
        )
    }
}

impl Rows {
    /// Stores the nonzero off-diagonal values of row `row` (line `line`); returns how
    /// many values the line has.
    fn values(&mut self, row: usize, line: usize, data: &[u8]) -> Result<usize, MatrixError> {
        let too_wide = || MatrixError::TooWide {
            origin: self.origin.clone(),
            line,
        };
        let mut column = 0usize;
        let mut sum = 0.0;
        let mut i = skip_spaces(data, 0);
        while i < data.len() {
            // Runs of "0 0 0 0 " (most of a sparse dense text) eight bytes at a time.
            while data.get(i..i + 8) == Some(&ZEROS[..]) {
                column += 4;
                i += 8;
            }
            if i == data.len() {
                break;
            }
            if column >= MAX_RANKS {
                return Err(too_wide());
            }
            let (end, integer) = scan_field(data, i);
            let value = match integer {
                // Below 10^15: exact as an i64 and as an f64 (the signed conversion is
                // the cheaper one).
                Some(v) => v as i64 as f64,
                None => parse_volume(&data[i..end], &self.origin, line)?,
            };
            if value != 0.0 && column != row {
                self.columns.push(column as u32);
                self.values.push(value);
                sum += value;
            }
            column += 1;
            i = next_field(data, end);
        }
        if column > MAX_RANKS {
            return Err(too_wide());
        }
        self.total += sum;
        Ok(column)
    }

    /// Reserves room for every nonzero an `order`-rank text of the input's length can
    /// hold: at most `order × (order − 1)`, and at most one per two bytes (a digit and
    /// a separator).
    fn reserve_for(&mut self, order: usize) {
        let by_order = order.saturating_mul(order.saturating_sub(1));
        let by_length = usize::try_from(self.input_bytes / 2).unwrap_or(usize::MAX);
        let bound = by_order.min(by_length);
        room::reserve(&mut self.columns, bound);
        room::reserve(&mut self.values, bound);
        self.prefault = room::Prefault::start(&self.columns, &self.values);
    }

    /// Closes the row of `columns` values read from line `line`: the first row sets the
    /// order (and the room reserved), every other must match it.
    fn end_row(&mut self, line: usize, columns: usize) -> Result<Next, MatrixError> {
        match self.order {
            None => {
                self.order = Some(columns);
                self.first_line = line;
                self.reserve_for(columns);
            }
            Some(order) if order != columns => {
                return Err(MatrixError::NotSquare {
                    origin: self.origin.clone(),
                    line,
                    found: columns,
                    expected: order,
                });
            }
            Some(_) => {}
        }
        self.row_start.push(self.columns.len());
        if let Some(prefault) = &self.prefault {
            prefault.advance(self.columns.len());
        }
        Ok(Next::More)
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
