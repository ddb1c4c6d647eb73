//! Open MPI monitoring dumps (`--mca pml_monitoring_enable 2`): a directory holding one
//! `NAME.RANK.prof` file per rank. `E` (user messages) and `I` (messages inside
//! collectives) lines are added; `C` lines summarise traffic already counted by `I` and
//! are ignored, as are the one-sided and summary lines.

use std::path::Path;

use super::edges::parse_rank;
use super::reader::{Next, for_each_line};
use super::{CommMatrix, MAX_RANKS, MatrixError};

/// Loads every `*.RANK.prof` file of `dir`. The order is the number of rank files; every
/// rank from 0 to order−1 must have its file.
pub(super) fn load_dir(dir: &Path) -> Result<CommMatrix, MatrixError> {
    let files = rank_files(dir)?;
    let order = files.len();
    let mut triples = Vec::new();
    for path in &files {
        // Line by line through the bounded reader: a dump linked to /dev/zero or a huge
        // file costs one bounded line buffer, not its whole length.
        let origin = path.display().to_string();
        for_each_line(path, |line_no, data| {
            let line = String::from_utf8_lossy(data);
            parse_dump_line(
                line.trim_end_matches('\r'),
                line_no,
                &origin,
                order,
                &mut triples,
            )?;
            Ok(Next::More)
        })?;
    }
    CommMatrix::from_u32_triples(order, triples, &dir.display().to_string())
}

/// The dump files of a directory, indexed by rank.
fn rank_files(dir: &Path) -> Result<Vec<std::path::PathBuf>, MatrixError> {
    let entries = std::fs::read_dir(dir).map_err(|source| MatrixError::Read {
        path: dir.to_owned(),
        source,
    })?;
    let mut by_rank: Vec<(usize, std::path::PathBuf)> = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(stem) = name.strip_suffix(".prof") else {
            continue;
        };
        if let Some(rank) = stem
            .rsplit('.')
            .next()
            .and_then(|r| r.parse::<usize>().ok())
        {
            by_rank.push((rank, path.clone()));
        }
    }
    by_rank.sort();
    if by_rank.len() > MAX_RANKS {
        return Err(MatrixError::BadDumpDir {
            path: dir.to_owned(),
            problem: format!(
                "{} dump files, above the limit of {MAX_RANKS} ranks",
                by_rank.len()
            ),
        });
    }
    if by_rank.is_empty() {
        return Err(MatrixError::BadDumpDir {
            path: dir.to_owned(),
            problem: "no NAME.RANK.prof file in this directory".into(),
        });
    }
    for (expected, (rank, path)) in by_rank.iter().enumerate() {
        if *rank != expected {
            return Err(MatrixError::BadDumpDir {
                path: dir.to_owned(),
                problem: format!(
                    "rank {expected} has no dump file (next file is {})",
                    path.display()
                ),
            });
        }
    }
    Ok(by_rank.into_iter().map(|(_, p)| p).collect())
}

/// Adds line `line_no` of a dump to `triples` if it is an `E` or `I` line.
fn parse_dump_line(
    line: &str,
    line_no: usize,
    origin: &str,
    order: usize,
    triples: &mut Vec<(u32, u32, f64)>,
) -> Result<(), MatrixError> {
    let mut fields = line.split('\t');
    let kind = fields.next().unwrap_or("");
    if kind != "E" && kind != "I" {
        return Ok(());
    }
    let bad = || MatrixError::BadLine {
        origin: origin.to_owned(),
        line: line_no,
        expected: "'E|I<TAB>SRC<TAB>DST<TAB>N bytes<TAB>...'",
        found: line.to_owned(),
    };
    let src = parse_rank(fields.next().ok_or_else(bad)?.as_bytes(), origin, line_no)?;
    let dst = parse_rank(fields.next().ok_or_else(bad)?.as_bytes(), origin, line_no)?;
    let bytes_field = fields.next().ok_or_else(bad)?;
    let bytes: u64 = bytes_field
        .strip_suffix(" bytes")
        .and_then(|b| b.parse().ok())
        .ok_or_else(bad)?;
    if src >= order || dst >= order {
        return Err(MatrixError::BadRank {
            origin: origin.to_owned(),
            line: line_no,
            value: format!("{src}->{dst} (only {order} dump files)"),
        });
    }
    if src != dst && bytes != 0 {
        triples.push((src as u32, dst as u32, bytes as f64));
    }
    Ok(())
}
