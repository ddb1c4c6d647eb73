//! The line conventions shared by every plain-text input (matrices, edge lists,
//! availability files, placements, mappings): `#` starts a comment, blank lines are
//! skipped, CRLF is accepted, and errors name 1-based line numbers.

/// The data lines of `text`: `(line number, content)` with comments and surrounding
/// whitespace removed, blank lines skipped.
///
/// ```
/// let lines: Vec<_> = rankmig::lines::data_lines("# header\r\n\na 1 # note\r\nb 2\n").collect();
/// assert_eq!(lines, vec![(3, "a 1"), (4, "b 2")]);
/// ```
pub fn data_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().filter_map(|(i, raw)| {
        let data = raw.split('#').next().unwrap_or("").trim();
        (!data.is_empty()).then_some((i + 1, data))
    })
}
