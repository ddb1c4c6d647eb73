//! Mapping files: the leaf of every rank, as `rankmig cost --mapping` reads them, from
//! this tool or another one (Scotch's `scotch_gmap`).
//!
//! Three forms, with the line conventions of [`crate::lines`]:
//! - one `LEAF` per line, line order = rank order;
//! - `RANK LEAF` lines (ranks in any order; a `LEAF` line after one is the next rank);
//! - Scotch's mapping output: a vertex count line, then `VERTEX PART` lines, vertex
//!   labels from 0, or from 1 when no label is 0.
//!
//! Leaves are depth-first leaf indexes over the whole tree (those `rankmig map` prints).
//!
//! ```
//! use rankmig::treematch::mapping_file::parse_mapping;
//! let leaves = parse_mapping("# rank leaf\n1 3\n0 2\n", "m.map", 2, 4).unwrap();
//! assert_eq!(leaves, [2, 3]);
//! let err = parse_mapping("1 2\n0 1\n0 3\n", "m.map", 2, 4).unwrap_err();
//! assert_eq!(err.to_string(), "m.map:3: rank 0 is mapped twice");
//! ```

use std::path::Path;

/// A mapping file refused: where, and why.
#[derive(Debug, thiserror::Error)]
#[error("{origin}:{line}: {problem}")]
pub struct MappingFileError {
    /// The file (its path as given) or another name of the text.
    pub origin: String,
    /// The 1-based line of the problem; 0 for the whole file.
    pub line: usize,
    /// What is wrong there.
    pub problem: MappingProblem,
}

/// What is wrong in a mapping file.
#[derive(Debug, thiserror::Error)]
pub enum MappingProblem {
    /// The file could not be read.
    #[error("cannot read: {0}")]
    Read(std::io::Error),
    /// A field that must be a rank, a leaf or a count is not a number.
    #[error("'{0}' is not a non-negative integer")]
    NotANumber(String),
    /// A Scotch header whose vertex count is not the number of lines after it.
    #[error("Scotch mapping header says {header} vertices but {lines} lines follow")]
    ScotchCount {
        /// The count the header gives.
        header: usize,
        /// The `VERTEX PART` lines that follow.
        lines: usize,
    },
    /// A line with neither one nor two fields.
    #[error("expected 'LEAF' or 'RANK LEAF', found '{0}'")]
    Fields(String),
    /// A rank the matrix does not have.
    #[error("rank {rank} is out of range (the matrix has {ranks} ranks)")]
    RankOutOfRange {
        /// The rank named.
        rank: usize,
        /// How many ranks the matrix has.
        ranks: usize,
    },
    /// A leaf the tree does not have.
    #[error("leaf {leaf} is out of range (the tree has {leaves} leaves)")]
    LeafOutOfRange {
        /// The leaf named.
        leaf: usize,
        /// How many leaves the tree has.
        leaves: usize,
    },
    /// A rank given a leaf on two lines.
    #[error("rank {0} is mapped twice")]
    MappedTwice(usize),
    /// A rank of the matrix that no line maps (line 0).
    #[error("rank {0} has no leaf")]
    Unmapped(usize),
}

/// Reads the mapping file `path` for a matrix of `ranks` ranks and a tree of `leaves`
/// leaves: the leaf of every rank, rank order.
pub fn read_mapping(
    path: &Path,
    ranks: usize,
    leaves: usize,
) -> Result<Vec<usize>, MappingFileError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| MappingFileError {
        origin: origin.clone(),
        line: 0,
        problem: MappingProblem::Read(e),
    })?;
    parse_mapping(&text, &origin, ranks, leaves)
}

/// [`read_mapping`] on a text; `origin` names it in errors.
pub fn parse_mapping(
    text: &str,
    origin: &str,
    ranks: usize,
    leaves: usize,
) -> Result<Vec<usize>, MappingFileError> {
    parse_lines(text, ranks, leaves).map_err(|(line, problem)| MappingFileError {
        origin: origin.to_owned(),
        line,
        problem,
    })
}

/// A problem and its line.
type LineProblem = (usize, MappingProblem);

fn number(line: usize, field: &str) -> Result<usize, LineProblem> {
    field
        .parse::<usize>()
        .map_err(|_| (line, MappingProblem::NotANumber(field.to_owned())))
}

fn parse_lines(text: &str, ranks: usize, leaves: usize) -> Result<Vec<usize>, LineProblem> {
    let lines: Vec<(usize, Vec<&str>)> = crate::lines::data_lines(text)
        .map(|(line, data)| (line, data.split_whitespace().collect()))
        .collect();
    let (body, base) = scotch_body(&lines)?.unwrap_or((&lines[..], 0));
    let mut mapping: Vec<Option<usize>> = vec![None; ranks];
    let mut next_rank = 0usize;
    for (line, fields) in body {
        let line = *line;
        let (rank, leaf) = match fields[..] {
            [leaf] => (next_rank, number(line, leaf)?),
            // `base` is 1 only when no label is 0.
            [rank, leaf] => (number(line, rank)? - base, number(line, leaf)?),
            _ => return Err((line, MappingProblem::Fields(fields.join(" ")))),
        };
        if rank >= ranks {
            return Err((line, MappingProblem::RankOutOfRange { rank, ranks }));
        }
        next_rank = rank + 1;
        if leaf >= leaves {
            return Err((line, MappingProblem::LeafOutOfRange { leaf, leaves }));
        }
        if mapping[rank].replace(leaf).is_some() {
            return Err((line, MappingProblem::MappedTwice(rank)));
        }
    }
    mapping
        .iter()
        .enumerate()
        .map(|(rank, leaf)| leaf.ok_or((0, MappingProblem::Unmapped(rank))))
        .collect()
}

/// Fields of each data line, with its line number.
type Lines<'a> = [(usize, Vec<&'a str>)];

/// When `lines` are Scotch's output (a lone count, then only pairs): the pairs and the
/// first vertex label (1 when no label is 0, "00" included); `None` otherwise.
fn scotch_body<'l, 'a>(
    lines: &'l Lines<'a>,
) -> Result<Option<(&'l Lines<'a>, usize)>, LineProblem> {
    let [(line, header), body @ ..] = lines else {
        return Ok(None);
    };
    if body.is_empty() || header.len() != 1 || body.iter().any(|(_, f)| f.len() != 2) {
        return Ok(None);
    }
    let count = number(*line, header[0])?;
    if count != body.len() {
        return Err((
            *line,
            MappingProblem::ScotchCount {
                header: count,
                lines: body.len(),
            },
        ));
    }
    let from_one = body.iter().all(|(_, f)| f[0].parse::<usize>() != Ok(0));
    Ok(Some((body, usize::from(from_one))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(text: &str, ranks: usize, leaves: usize) -> String {
        parse_mapping(text, "m", ranks, leaves)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn the_three_forms_read_as_the_same_mapping() {
        let plain = parse_mapping("2\n0\n1\n", "m", 3, 4).unwrap();
        let pairs = parse_mapping("2 1\n0 2\n1 0\n", "m", 3, 4).unwrap();
        let scotch_from_one = parse_mapping("3\n1 2\n2 0\n3 1\n", "m", 3, 4).unwrap();
        let scotch_from_zero = parse_mapping("3\n0 2\n1 0\n2 1\n", "m", 3, 4).unwrap();
        assert_eq!(plain, [2, 0, 1]);
        assert_eq!(pairs, plain);
        assert_eq!(scotch_from_one, plain);
        assert_eq!(scotch_from_zero, plain);
    }

    #[test]
    fn each_refusal_names_the_line_and_the_value() {
        assert_eq!(
            problem("0\nx\n", 2, 4),
            "m:2: 'x' is not a non-negative integer"
        );
        assert_eq!(
            problem("3\n1 0\n2 1\n", 2, 4),
            "m:1: Scotch mapping header says 3 vertices but 2 lines follow"
        );
        assert_eq!(
            problem("0 1 2\n", 1, 4),
            "m:1: expected 'LEAF' or 'RANK LEAF', found '0 1 2'"
        );
        assert_eq!(
            problem("5 0\n", 2, 4),
            "m:1: rank 5 is out of range (the matrix has 2 ranks)"
        );
        assert_eq!(
            problem("0\n# c\n9\n", 2, 4),
            "m:3: leaf 9 is out of range (the tree has 4 leaves)"
        );
        assert_eq!(problem("1\n", 2, 4), "m:0: rank 1 has no leaf");
    }

    #[test]
    fn an_unreadable_file_is_named() {
        let err = read_mapping(Path::new("/nonexistent/m.map"), 1, 1).unwrap_err();
        assert!(matches!(err.problem, MappingProblem::Read(_)), "{err:?}");
        assert!(
            err.to_string()
                .starts_with("/nonexistent/m.map:0: cannot read: "),
            "{err}"
        );
    }
}
