//! Telling the matrix formats apart (`--matrix-format auto`), refusing what reads both
//! ways.
//!
//! A file of lines of 3 numbers is an edge list when its first two fields are integers,
//! but a file of three such lines is also a 3×3 dense matrix, and one or two such lines
//! are a 3×3 matrix missing rows. Auto-detection therefore says `edges` only when the
//! first four data lines all look like `INT INT NUMBER`; a file with fewer data lines
//! of that kind is refused with [`MatrixError::Ambiguous`].

use std::path::Path;

use super::reader::{self, Next};
use super::{MatrixError, MatrixFormat};

/// Data lines looked at: one more than a 3×3 matrix has.
const LINES_LOOKED_AT: usize = 4;

/// The format of `path`: `prof` for a directory, else from its first data lines.
pub(super) fn detect_format(path: &Path) -> Result<MatrixFormat, MatrixError> {
    if path.is_dir() {
        return Ok(MatrixFormat::Prof);
    }
    let mut edge_like = 0usize;
    let mut seen = 0usize;
    reader::for_each_line(path, |_, data| {
        seen += 1;
        if looks_like_edge(data) {
            edge_like += 1;
        }
        Ok(if seen < LINES_LOOKED_AT {
            Next::More
        } else {
            Next::Stop
        })
    })?;
    Ok(match classify(seen, edge_like) {
        Some(format) => format,
        None => {
            return Err(MatrixError::Ambiguous {
                path: path.to_owned(),
                lines: seen,
            });
        }
    })
}

/// The format from the first (up to four) data lines: `seen` of them, `edge_like` of
/// which are `INT INT NUMBER`. `None` when both readings are possible.
fn classify(seen: usize, edge_like: usize) -> Option<MatrixFormat> {
    if seen == 0 || edge_like < seen {
        // Empty (the dense reader says so), or some line is not an edge.
        Some(MatrixFormat::Dense)
    } else if seen >= LINES_LOOKED_AT {
        Some(MatrixFormat::Edges)
    } else {
        None
    }
}

/// `INT INT X`: three fields, the first two made of digits.
fn looks_like_edge(data: &[u8]) -> bool {
    let mut fields = reader::fields(data);
    let digits = |f: &[u8]| !f.is_empty() && f.iter().all(u8::is_ascii_digit);
    matches!(
        (fields.next(), fields.next(), fields.next(), fields.next()),
        (Some(a), Some(b), Some(_), None) if digits(a) && digits(b)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detect(text: &str) -> Result<MatrixFormat, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.txt");
        std::fs::write(&path, text).unwrap();
        detect_format(&path).map_err(|e| e.to_string())
    }

    #[test]
    fn clear_cases() {
        assert_eq!(
            detect("0 1 5\n1 2 5\n2 3 5\n3 0 5\n"),
            Ok(MatrixFormat::Edges)
        );
        assert_eq!(detect("0 1\n1 0\n"), Ok(MatrixFormat::Dense));
        assert_eq!(detect("0 1 2 3\n1 0 2 3\n"), Ok(MatrixFormat::Dense));
        // Three values per line, but not rank numbers: a (broken) dense matrix.
        assert_eq!(detect("0 1.5 2\n1 0 2\n"), Ok(MatrixFormat::Dense));
        assert_eq!(detect("# nothing\n"), Ok(MatrixFormat::Dense));
    }

    #[test]
    fn three_lines_or_fewer_of_three_numbers_are_refused() {
        for text in ["0 1 2\n3 0 4\n5 6 0\n", "0 1 2\n3 0 4\n", "0 1 5\n"] {
            let e = detect(text).unwrap_err();
            assert!(e.contains("m.txt") && e.contains("--matrix-format"), "{e}");
        }
    }
}
