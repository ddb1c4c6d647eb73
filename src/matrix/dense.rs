//! TreeMatch's dense text format: N lines of N non-negative numbers.

use super::{CommMatrix, MatrixError};

/// Parses the dense format. Blank lines and `#` comments are ignored, CRLF is accepted.
pub(super) fn parse(text: &str, origin: &str) -> Result<CommMatrix, MatrixError> {
    let mut rows: Vec<(usize, Vec<f64>)> = Vec::new();
    for (line_no, data) in crate::lines::data_lines(text) {
        let values = data
            .split_whitespace()
            .map(|field| parse_volume(field, origin, line_no))
            .collect::<Result<Vec<f64>, _>>()?;
        rows.push((line_no, values));
    }
    let order = rows.len();
    if order == 0 {
        return Err(MatrixError::Empty {
            origin: origin.to_owned(),
        });
    }
    for (line, values) in &rows {
        if values.len() != order {
            return Err(MatrixError::NotSquare {
                origin: origin.to_owned(),
                line: *line,
                found: values.len(),
                expected: order,
            });
        }
    }
    let dense: Vec<Vec<f64>> = rows.into_iter().map(|(_, v)| v).collect();
    Ok(CommMatrix::from_dense(&dense))
}

/// Parses one volume: a finite non-negative number.
pub(super) fn parse_volume(field: &str, origin: &str, line: usize) -> Result<f64, MatrixError> {
    match field.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(MatrixError::BadValue {
            origin: origin.to_owned(),
            line,
            value: field.to_owned(),
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
            "f.mat:1: row has 3 values, expected 2 (the matrix must be square)"
        );
        let e = parse("# nothing\n\n", "f.mat").unwrap_err().to_string();
        assert_eq!(e, "f.mat: the matrix is empty");
    }

    #[test]
    fn diagonal_is_dropped() {
        let m = parse("7 1\n1 7\n", "t").unwrap();
        assert_eq!(m.get(0, 0), 0.0);
        assert_eq!(m.nonzeros(), 2);
    }
}
