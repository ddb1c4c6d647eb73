//! Reading a matrix file line by line in fixed-size chunks, so that memory stays
//! bounded by the longest line (plus what the caller keeps), not by the file: a
//! 20 000-rank dense text of 800 MB is never held whole.
//!
//! The same line conventions as [`crate::lines`] apply, on bytes: `#` starts a comment,
//! `\r`, tabs and spaces separate fields, blank lines are skipped, lines are numbered
//! from 1.

use std::io::Read;
use std::path::Path;

use super::{CommMatrix, MatrixError};

/// Longest line accepted, in bytes: 64 MiB, room for a dense row of the largest
/// matrix ([`super::MAX_RANKS`] ranks) written with up to 63 characters per value. A
/// longer line (or a file without newlines, such as `/dev/zero`) is an error, not an
/// unbounded buffer.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// Bytes read from the file at a time.
const CHUNK: usize = 4 << 20;

/// Smallest read buffer, for short files and files of unknown length.
const MIN_CHUNK: usize = 64 << 10;

/// What a line visitor tells the reader.
pub(super) enum Next {
    /// Go on with the next line.
    More,
    /// Enough has been read.
    Stop,
}

/// A text format read line by line: the state between lines of [`parse_text`] and
/// [`load_file`].
pub(super) trait LineFormat: Sized {
    /// A reader for the input named `origin` (in error messages).
    fn start(origin: String) -> Self;
    /// The length in bytes of the whole input, when known, before its first line: a
    /// bound on how many entries can come.
    fn input_length(&mut self, _bytes: u64) {}
    /// Takes one data line (numbered from 1, comment removed).
    fn line(&mut self, line: usize, data: &[u8]) -> Result<Next, MatrixError>;
    /// The matrix, once every line was taken.
    fn finish(self) -> Result<CommMatrix, MatrixError>;
}

/// Reads an in-memory text in format `F`; `origin` names it in errors.
pub(super) fn parse_text<F: LineFormat>(
    text: &str,
    origin: &str,
) -> Result<CommMatrix, MatrixError> {
    let mut format = F::start(origin.to_owned());
    format.input_length(text.len() as u64);
    for_each_line_of(text.as_bytes(), |n, data| format.line(n, data))?;
    format.finish()
}

/// Reads the file `path` in format `F`, chunk by chunk.
pub(super) fn load_file<F: LineFormat>(path: &Path) -> Result<CommMatrix, MatrixError> {
    let mut format = F::start(path.display().to_string());
    if let Ok(meta) = std::fs::metadata(path) {
        format.input_length(meta.len());
    }
    for_each_line(path, |n, data| format.line(n, data))?;
    format.finish()
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
    let mut buf: Vec<u8> = vec![0; first_buffer_len(&file)];
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
            match memchr::memrchr(b'\n', &buf[..filled]) {
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

/// Size of the first read buffer: the file's length plus one byte (to see its end in
/// the same read), at least [`MIN_CHUNK`] and at most [`CHUNK`]. A small matrix does
/// not pay for zeroing a whole chunk; a file whose length is unknown (a pipe) starts at
/// the minimum and the buffer grows only for a line that does not fit.
fn first_buffer_len(file: &std::fs::File) -> usize {
    let len = file.metadata().map_or(0, |m| m.len());
    usize::try_from(len.saturating_add(1))
        .unwrap_or(CHUNK)
        .clamp(MIN_CHUNK, CHUNK)
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
        let stop = memchr::memchr2(b'\n', b'#', rest).unwrap_or(rest.len());
        let data = &rest[..stop];
        let end = if rest.get(stop) == Some(&b'#') {
            memchr::memchr(b'\n', &rest[stop..]).map_or(rest.len(), |p| stop + p)
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

/// Index of the first byte of `data` at or after `i` that is not a separator
/// (`data.len()` if none).
#[inline]
pub(super) fn skip_spaces(data: &[u8], mut i: usize) -> usize {
    while i < data.len() && is_space(data[i]) {
        i += 1;
    }
    i
}

/// Start of the field after the one ending at `end` (at a separator or the end of
/// `data`, as [`scan_field`] returns it): one separator is the common case, a run of
/// them is skipped.
#[inline]
pub(super) fn next_field(data: &[u8], end: usize) -> usize {
    match data.get(end + 1) {
        Some(&b) if !is_space(b) => end + 1,
        _ => skip_spaces(data, end),
    }
}

/// Most digits of an integer field read without floating point: below 10^15 the value
/// is exact as a `u64` and as an `f64`.
pub(super) const MAX_FAST_DIGITS: usize = 15;

/// Scans the field starting at `data[start]`: returns where it ends (the next separator
/// or the end of the line) and, when it is a plain integer of 1 to
/// [`MAX_FAST_DIGITS`] digits, its value. Anything else (a decimal, a sign, a letter, a
/// longer integer) gives `None`, for the caller's exact parser and error.
///
/// Eight bytes at a time are classified and converted at once (SWAR): a number of up
/// to 15 digits followed by a separator costs a handful of word operations, not a loop
/// per digit.
#[inline]
pub(super) fn scan_field(data: &[u8], start: usize) -> (usize, Option<u64>) {
    let mut value = 0u64;
    let mut i = start;
    if let Some(word) = data.get(start..).and_then(<[u8]>::first_chunk::<8>) {
        let (digits, leading) = leading_digits(u64::from_le_bytes(*word));
        // The common case: 1 to 7 digits, then a separator inside the same word.
        if digits > 0 && digits < 8 && is_space(word[digits]) {
            return (start + digits, Some(leading));
        }
        i += digits;
        value = leading;
        // 8 to 15 digits: the second word, the same way.
        if digits == 8
            && let Some(next) = data.get(start + 8..).and_then(<[u8]>::first_chunk::<8>)
        {
            let (more, t) = digit_run(u64::from_le_bytes(*next));
            if more < 8 && is_space(next[more]) {
                // Nine digits (a byte count in the hundreds of megabytes) is common
                // enough to skip the word conversion for its last digit.
                let low = if more <= 1 {
                    (t & 0xff) * more as u64
                } else {
                    digits_value(t, more)
                };
                return (start + 8 + more, Some(leading * POWERS_OF_TEN[more] + low));
            }
        }
    }
    scan_rest(data, start, i, value)
}

/// `10^k` for `k` in `0..8`.
const POWERS_OF_TEN: [u64; 8] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000];

/// [`scan_field`] past the first word: `data[start..i]` are digits worth `value`.
fn scan_rest(data: &[u8], start: usize, mut i: usize, mut value: u64) -> (usize, Option<u64>) {
    let n = data.len();
    while i < n {
        let d = data[i].wrapping_sub(b'0');
        if d >= 10 {
            break;
        }
        value = value.wrapping_mul(10).wrapping_add(u64::from(d));
        i += 1;
    }
    let digits = i - start;
    if i < n && !is_space(data[i]) {
        // Not a plain integer: the field goes on to the next separator.
        while i < n && !is_space(data[i]) {
            i += 1;
        }
        return (i, None);
    }
    (i, (1..=MAX_FAST_DIGITS).contains(&digits).then_some(value))
}

/// How many of the eight bytes of `word` (first byte lowest) are ASCII digits before
/// the first other byte, and the value of those digits.
#[inline]
fn leading_digits(word: u64) -> (usize, u64) {
    let (digits, t) = digit_run(word);
    if digits == 0 {
        return (0, 0);
    }
    (digits, digits_value(t, digits))
}

/// How many of the eight bytes of `word` (first byte lowest) are ASCII digits before
/// the first other byte, and the word with `'0'` taken from every byte (the digits'
/// values in the bytes that were digits).
#[inline]
fn digit_run(word: u64) -> (usize, u64) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Per byte t = b - '0'; b is a digit when t < 10, i.e. neither t nor t + 0x76 has
    // its high bit set. Borrows and carries only move upwards, from bytes that are
    // digits (which cause none), so the lowest non-digit byte is found exactly.
    let t = word.wrapping_sub(ONES * u64::from(b'0'));
    let not_digit = (t | t.wrapping_add(ONES * 0x76)) & HIGH;
    ((not_digit.trailing_zeros() / 8) as usize, t)
}

/// The value of the first `digits` (1 to 8) digit values in the bytes of `t`, first
/// byte most significant.
#[inline]
fn digits_value(t: u64, digits: usize) -> u64 {
    // Keep the digits in the top bytes, zeros (leading zero digits) below them.
    let mut v = t << (8 * (8 - digits));
    v = (v.wrapping_mul(10) + (v >> 8)) & 0x00ff_00ff_00ff_00ff;
    v = (v.wrapping_mul(100) + (v >> 16)) & 0x0000_ffff_0000_ffff;
    v = (v.wrapping_mul(10_000) + (v >> 32)) & 0x0000_0000_ffff_ffff;
    v
}

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

    /// `scan_field` as a plain loop.
    fn scan_field_plainly(data: &[u8], start: usize) -> (usize, Option<u64>) {
        let end = data[start..]
            .iter()
            .position(|&b| is_space(b))
            .map_or(data.len(), |p| start + p);
        let field = &data[start..end];
        let plain = !field.is_empty()
            && field.len() <= MAX_FAST_DIGITS
            && field.iter().all(u8::is_ascii_digit);
        (
            end,
            plain.then(|| std::str::from_utf8(field).unwrap().parse().unwrap()),
        )
    }

    #[test]
    fn scan_field_agrees_with_a_plain_loop() {
        use rand::{Rng, SeedableRng};
        let alphabet = b"0123456789 \t\r.e-+x/:\x80\xff";
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut cases: Vec<Vec<u8>> = vec![
            b"0".to_vec(),
            b"12345678".to_vec(),
            b"123456789 1".to_vec(),
            b"12345678 1".to_vec(),
            b"12345678\t9".to_vec(),
            b"123456789012345 2".to_vec(),
            b"1234567890123456 2".to_vec(),
            b"00000000000000012 2".to_vec(),
            b"123456789.5 2".to_vec(),
            b"12345678e3 2".to_vec(),
            b"999999999999999".to_vec(),
            b"9999999999999999".to_vec(),
            b"000000000000000000007".to_vec(),
            b"18446744073709551616 ".to_vec(),
            b"1234/678".to_vec(),
            b"1234:678".to_vec(),
        ];
        for _ in 0..20_000 {
            let len = rng.gen_range(0..24);
            cases.push(
                (0..len)
                    .map(|_| alphabet[rng.gen_range(0..alphabet.len())])
                    .collect(),
            );
        }
        // Long digit runs (8 to 20 digits, the two-word path) between other bytes.
        for _ in 0..20_000 {
            let mut case = Vec::new();
            for _ in 0..rng.gen_range(1..4) {
                for _ in 0..rng.gen_range(6..21) {
                    case.push(b'0' + rng.gen_range(0..10u8));
                }
                case.push(alphabet[rng.gen_range(10..alphabet.len())]);
            }
            cases.push(case);
        }
        for data in &cases {
            for start in 0..data.len() {
                if is_space(data[start]) {
                    continue;
                }
                assert_eq!(
                    scan_field(data, start),
                    scan_field_plainly(data, start),
                    "{:?} from {start}",
                    shown(data)
                );
            }
        }
    }

    #[test]
    fn leading_digits_of_every_byte_after_a_digit_run() {
        for digits in 0..8 {
            for other in 0..=255u8 {
                let mut word = *b"98765432";
                word[digits] = other;
                let expected = if other.is_ascii_digit() {
                    digits
                        + 1
                        + word[digits + 1..]
                            .iter()
                            .take_while(|b| b.is_ascii_digit())
                            .count()
                } else {
                    digits
                };
                let value = std::str::from_utf8(&word[..expected])
                    .unwrap()
                    .parse()
                    .unwrap_or(0);
                assert_eq!(
                    leading_digits(u64::from_le_bytes(word)),
                    (expected, value),
                    "{word:?}"
                );
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
