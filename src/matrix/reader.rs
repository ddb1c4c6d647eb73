//! Reading a matrix file line by line in fixed-size chunks, so that memory stays
//! bounded by the longest line (plus what the caller keeps), not by the file: a
//! 20 000-rank dense text of 800 MB is never held whole.
//!
//! The same line conventions as [`crate::lines`] apply, on bytes: `#` starts a comment,
//! `\r`, tabs and spaces separate fields, blank lines are skipped, lines are numbered
//! from 1.

use std::io::Read;
use std::path::Path;

use super::MatrixError;

/// Longest line accepted, in bytes: 64 MiB, room for a dense row of the largest
/// matrix ([`super::MAX_RANKS`] ranks) written with up to 63 characters per value. A
/// longer line (or a file without newlines, such as `/dev/zero`) is an error, not an
/// unbounded buffer.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// Bytes read from the file at a time.
const CHUNK: usize = 4 << 20;

/// What a line visitor tells the reader.
pub(super) enum Next {
    /// Go on with the next line.
    More,
    /// Enough has been read.
    Stop,
}

/// Calls `visit(line_number, data)` for every line of `path` that holds data (comment
/// removed, not blank). `data` is the line up to its comment, untrimmed.
pub(super) fn for_each_line(
    path: &Path,
    mut visit: impl FnMut(usize, &[u8]) -> Result<Next, MatrixError>,
) -> Result<(), MatrixError> {
    let read_error = |source| MatrixError::Read {
        path: path.to_owned(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(read_error)?;
    let mut buf: Vec<u8> = vec![0; CHUNK];
    let mut filled = 0usize;
    let mut line_no = 0usize;
    loop {
        if filled == buf.len() {
            // The pending line fills the buffer: grow it, up to the line bound.
            if buf.len() >= MAX_LINE_BYTES {
                return Err(MatrixError::LineTooLong {
                    origin: path.display().to_string(),
                    line: line_no + 1,
                    limit: MAX_LINE_BYTES,
                });
            }
            buf.resize((buf.len() * 2).min(MAX_LINE_BYTES), 0);
        }
        let n = match file.read(&mut buf[filled..]) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(read_error(e)),
        };
        let at_end = n == 0;
        filled += n;
        // Complete lines end at the last newline; at the end of the file the rest is a
        // line too.
        let complete = if at_end {
            filled
        } else {
            match buf[..filled].iter().rposition(|&b| b == b'\n') {
                Some(p) => p + 1,
                None => continue,
            }
        };
        if let Next::Stop = visit_lines(&buf[..complete], &mut line_no, &mut visit)? {
            return Ok(());
        }
        if at_end {
            return Ok(());
        }
        buf.copy_within(complete..filled, 0);
        filled -= complete;
    }
}

/// Calls `visit` for the data lines of an in-memory text.
pub(super) fn for_each_line_of(
    text: &[u8],
    mut visit: impl FnMut(usize, &[u8]) -> Result<Next, MatrixError>,
) -> Result<(), MatrixError> {
    let mut line_no = 0;
    visit_lines(text, &mut line_no, &mut visit).map(|_| ())
}

/// Visits the lines of `block` (whole lines; the last may lack its newline).
fn visit_lines(
    block: &[u8],
    line_no: &mut usize,
    visit: &mut impl FnMut(usize, &[u8]) -> Result<Next, MatrixError>,
) -> Result<Next, MatrixError> {
    let mut rest = block;
    while !rest.is_empty() {
        // One pass finds the end of the data: a newline or the start of a comment.
        let stop = find_either(rest, b'\n', b'#').unwrap_or(rest.len());
        let data = &rest[..stop];
        let end = if rest.get(stop) == Some(&b'#') {
            find_either(&rest[stop..], b'\n', b'\n').map_or(rest.len(), |p| stop + p)
        } else {
            stop
        };
        rest = rest.get(end + 1..).unwrap_or(&[]);
        *line_no += 1;
        if data.iter().all(|&b| is_space(b)) {
            continue;
        }
        if let Next::Stop = visit(*line_no, data)? {
            return Ok(Next::Stop);
        }
    }
    Ok(Next::More)
}

/// Position of the first `a` or `b` in `bytes`, eight bytes at a time.
fn find_either(bytes: &[u8], a: u8, b: u8) -> Option<usize> {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A word has a zero byte when (w - LOW) & !w & HIGH is not zero.
    let has_zero = |w: u64| w.wrapping_sub(LOW) & !w & HIGH != 0;
    let (pa, pb) = (LOW * u64::from(a), LOW * u64::from(b));
    let mut i = 0;
    while i + 8 <= bytes.len() {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[i..i + 8]);
        let w = u64::from_le_bytes(word);
        if has_zero(w ^ pa) || has_zero(w ^ pb) {
            break;
        }
        i += 8;
    }
    bytes[i..]
        .iter()
        .position(|&c| c == a || c == b)
        .map(|p| i + p)
}

/// Field separators: space, tab, `\r`, vertical tab, form feed.
#[inline]
pub(super) fn is_space(b: u8) -> bool {
    SPACE[usize::from(b)]
}

/// [`is_space`] as a table.
static SPACE: [bool; 256] = {
    let mut t = [false; 256];
    t[b' ' as usize] = true;
    t[b'\t' as usize] = true;
    t[b'\r' as usize] = true;
    t[0x0b] = true;
    t[0x0c] = true;
    t
};

/// The whitespace-separated fields of a line.
pub(super) fn fields(data: &[u8]) -> impl Iterator<Item = &[u8]> {
    data.split(|&b| is_space(b)).filter(|f| !f.is_empty())
}

/// A field as text for an error message.
pub(super) fn shown(field: &[u8]) -> String {
    String::from_utf8_lossy(field).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(path: &Path) -> Vec<(usize, String)> {
        let mut seen = Vec::new();
        for_each_line(path, |n, d| {
            seen.push((n, shown(d).trim().to_owned()));
            Ok(Next::More)
        })
        .unwrap();
        seen
    }

    #[test]
    fn lines_across_chunks_keep_their_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.txt");
        // Lines longer than one chunk, a comment, CRLF, a blank line, no final newline.
        let long = "7 ".repeat(CHUNK / 2 + 10);
        let text = format!("# c\r\n{long}\r\n\n1 2 # x\n{long}");
        std::fs::write(&path, &text).unwrap();
        let seen = lines_of(&path);
        assert_eq!(seen.len(), 3);
        assert_eq!((seen[0].0, seen[1].0, seen[2].0), (2, 4, 5));
        assert_eq!(seen[1].1, "1 2");
        assert_eq!(seen[2].1.len(), long.trim().len());
    }

    #[test]
    fn find_either_agrees_with_a_plain_search() {
        let text = b"0 1 2 3 4 5 6 7 8 9 # c\n1 2\n";
        for start in 0..text.len() {
            for (a, b) in [(b'\n', b'#'), (b'\n', b'\n'), (b'9', b'x')] {
                let expected = text[start..].iter().position(|&c| c == a || c == b);
                assert_eq!(find_either(&text[start..], a, b), expected, "{start}");
            }
        }
    }

    #[test]
    fn a_file_without_newlines_is_refused_at_the_line_bound() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("zeros");
        std::fs::write(&path, vec![b'0'; MAX_LINE_BYTES + 1]).unwrap();
        let e = for_each_line(&path, |_, _| Ok(Next::More))
            .unwrap_err()
            .to_string();
        assert!(e.contains("zeros:1") && e.contains("67108864"), "{e}");
    }
}
