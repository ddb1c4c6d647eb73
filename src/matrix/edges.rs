//! Sparse edge lists: `SRC DST BYTES` per line.

use super::dense::parse_volume;
use super::{CommMatrix, MAX_RANKS, MatrixError};

/// Parses an edge list. The order is the largest rank seen plus one.
pub(super) fn parse(text: &str, origin: &str) -> Result<CommMatrix, MatrixError> {
    let mut triples = Vec::new();
    let mut order = 0usize;
    for (line, data) in crate::lines::data_lines(text) {
        let fields: Vec<&str> = data.split_whitespace().collect();
        let [src, dst, bytes] = fields[..] else {
            return Err(MatrixError::BadLine {
                origin: origin.to_owned(),
                line,
                expected: "'SRC DST BYTES'",
                found: data.to_owned(),
            });
        };
        let src = parse_rank(src, origin, line)?;
        let dst = parse_rank(dst, origin, line)?;
        let bytes = parse_volume(bytes, origin, line)?;
        order = order.max(src + 1).max(dst + 1);
        triples.push((src, dst, bytes));
    }
    if order == 0 {
        return Err(MatrixError::Empty {
            origin: origin.to_owned(),
        });
    }
    Ok(CommMatrix::from_triples(order, triples))
}

/// Parses a rank number, at most [`MAX_RANKS`]` - 1`.
pub(super) fn parse_rank(field: &str, origin: &str, line: usize) -> Result<usize, MatrixError> {
    let rank = field.parse::<u64>().map_err(|_| MatrixError::BadRank {
        origin: origin.to_owned(),
        line,
        value: field.to_owned(),
    })?;
    usize::try_from(rank)
        .ok()
        .filter(|&r| r < MAX_RANKS)
        .ok_or_else(|| MatrixError::RankTooLarge {
            origin: origin.to_owned(),
            line,
            value: field.to_owned(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_pairs_add_and_order_is_max_rank() {
        let m = parse("0 1 10\n# c\n0 1 5\n4 2 1\n", "e").unwrap();
        assert_eq!(m.order(), 5);
        assert_eq!(m.get(0, 1), 15.0);
        assert_eq!(m.get(4, 2), 1.0);
    }

    #[test]
    fn a_rank_above_the_bound_is_an_error_not_an_allocation() {
        for big in ["4294967295", "1048576", "99999999999"] {
            let e = parse(&format!("0 1 5\n{big} 0 1\n"), "e.txt")
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("e.txt:2: "), "{e}");
            assert!(e.contains(big) && e.contains("1048575"), "{e}");
        }
        assert_eq!(parse("1048575 0 1\n", "e").unwrap().order(), 1 << 20);
    }

    #[test]
    fn bad_lines_are_named() {
        let e = parse("0 1\n", "e.txt").unwrap_err().to_string();
        assert_eq!(e, "e.txt:1: expected 'SRC DST BYTES', found '0 1'");
        let e = parse("0 -1 3\n", "e.txt").unwrap_err().to_string();
        assert_eq!(e, "e.txt:1: '-1' is not a rank number");
    }
}
