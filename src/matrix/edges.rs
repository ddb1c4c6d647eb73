//! Sparse edge lists: `SRC DST BYTES` per line, read line by line (see
//! [`super::reader`]): memory is the edges kept, not the text.

use std::path::Path;

use super::dense::parse_volume;
use super::reader::{self, LineFormat, Next, scan_field, skip_spaces};
use super::{CommMatrix, MAX_RANKS, MatrixError};

/// Parses an edge list from text. The order is the largest rank seen plus one.
pub(super) fn parse(text: &str, origin: &str) -> Result<CommMatrix, MatrixError> {
    reader::parse_text::<Edges>(text, origin)
}

/// Reads an edge list from a file.
pub(super) fn load(path: &Path) -> Result<CommMatrix, MatrixError> {
    reader::load_file::<Edges>(path)
}

/// The edges read so far.
struct Edges {
    origin: String,
    order: usize,
    triples: Vec<(u32, u32, f64)>,
}

impl LineFormat for Edges {
    fn start(origin: String) -> Self {
        Self {
            origin,
            order: 0,
            triples: Vec::new(),
        }
    }

    fn line(&mut self, line: usize, data: &[u8]) -> Result<Next, MatrixError> {
        let (src, dst, bytes) = match plain_edge(data) {
            Some(edge) => edge,
            None => self.exact_edge(line, data)?,
        };
        self.order = self.order.max(src + 1).max(dst + 1);
        if src != dst && bytes != 0.0 {
            self.triples.push((src as u32, dst as u32, bytes));
        }
        Ok(Next::More)
    }

    fn finish(self) -> Result<CommMatrix, MatrixError> {
        if self.order == 0 {
            return Err(MatrixError::Empty {
                origin: self.origin,
            });
        }
        CommMatrix::from_u32_triples(self.order, self.triples, &self.origin)
    }
}

impl Edges {
    /// Any `SRC DST BYTES` line, or the error naming what is wrong with it.
    fn exact_edge(&self, line: usize, data: &[u8]) -> Result<(usize, usize, f64), MatrixError> {
        let mut fields = reader::fields(data);
        let (Some(src), Some(dst), Some(bytes), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return Err(MatrixError::BadLine {
                origin: self.origin.clone(),
                line,
                expected: "'SRC DST BYTES'",
                found: reader::shown(data).trim().to_owned(),
            });
        };
        Ok((
            parse_rank(src, &self.origin, line)?,
            parse_rank(dst, &self.origin, line)?,
            parse_volume(bytes, &self.origin, line)?,
        ))
    }
}

/// The common line, three plain integers (ranks below [`MAX_RANKS`], a volume of at
/// most 15 digits), read without allocating or parsing text twice. `None` for any
/// other line, which [`Edges::exact_edge`] then reads or refuses.
#[inline]
fn plain_edge(data: &[u8]) -> Option<(usize, usize, f64)> {
    let rank = |v: u64| usize::try_from(v).ok().filter(|&r| r < MAX_RANKS);
    let (end, src) = scan_field(data, skip_spaces(data, 0));
    let (end, dst) = scan_field(data, skip_spaces(data, end));
    let (end, bytes) = scan_field(data, skip_spaces(data, end));
    if skip_spaces(data, end) != data.len() {
        return None;
    }
    // Below 10^15: exact as an i64 and as an f64.
    Some((rank(src?)?, rank(dst?)?, bytes? as i64 as f64))
}

/// Parses a rank number, at most [`MAX_RANKS`]` - 1`.
pub(super) fn parse_rank(field: &[u8], origin: &str, line: usize) -> Result<usize, MatrixError> {
    let rank = std::str::from_utf8(field)
        .ok()
        .filter(|s| s.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|s| s.parse::<u64>().ok());
    let Some(rank) = rank else {
        // Digits only but too large for a u64 is still a rank above the bound.
        let digits = !field.is_empty() && field.iter().all(u8::is_ascii_digit);
        return Err(if digits {
            MatrixError::RankTooLarge {
                origin: origin.to_owned(),
                line,
                value: reader::shown(field),
            }
        } else {
            MatrixError::BadRank {
                origin: origin.to_owned(),
                line,
                value: reader::shown(field),
            }
        });
    };
    usize::try_from(rank)
        .ok()
        .filter(|&r| r < MAX_RANKS)
        .ok_or_else(|| MatrixError::RankTooLarge {
            origin: origin.to_owned(),
            line,
            value: reader::shown(field),
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
        for big in [
            "4294967295",
            "1048576",
            "99999999999",
            "99999999999999999999999",
        ] {
            let e = parse(&format!("0 1 5\n{big} 0 1\n"), "e.txt")
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("e.txt:2: "), "{e}");
            assert!(e.contains(big) && e.contains("1048575"), "{e}");
        }
        assert_eq!(parse("1048575 0 1\n", "e").unwrap().order(), 1 << 20);
    }

    #[test]
    fn the_plain_path_reads_what_the_exact_path_reads() {
        let edges = Edges::start("e".into());
        let plain = [
            "0 1 5",
            " 0\t1  5 \r",
            "123456 1 123456789",
            "1048575 0 999999999999999",
            "00000001 0000002 000000000000003",
        ];
        for line in plain {
            let exact = edges.exact_edge(1, line.as_bytes()).ok();
            assert!(exact.is_some(), "{line:?}");
            assert_eq!(plain_edge(line.as_bytes()), exact, "{line:?}");
        }
        // Declined: a decimal, 16 digits, a rank past the bound, wrong field counts, a
        // letter; the exact path reads or refuses them.
        for line in [
            "0 1 1.5",
            "0 1 9999999999999999",
            "1048576 0 1",
            "0 1 5 6",
            "0 1",
            "0 x 5",
        ] {
            assert_eq!(plain_edge(line.as_bytes()), None, "{line:?}");
        }
    }

    #[test]
    fn bad_lines_are_named() {
        let e = parse("0 1\n", "e.txt").unwrap_err().to_string();
        assert_eq!(e, "e.txt:1: expected 'SRC DST BYTES', found '0 1'");
        let e = parse("0 -1 3\n", "e.txt").unwrap_err().to_string();
        assert_eq!(e, "e.txt:1: '-1' is not a rank number");
        let e = parse("0 +1 3\n", "e.txt").unwrap_err().to_string();
        assert_eq!(e, "e.txt:1: '+1' is not a rank number");
        let e = parse("0 1 3 4\n", "e.txt").unwrap_err().to_string();
        assert_eq!(e, "e.txt:1: expected 'SRC DST BYTES', found '0 1 3 4'");
    }
}
