//! rankmig's side of the anchor comparison (scripts/anchors/compare.sh): times the
//! mapping call alone, as scripts/anchors/tm_driver.c and scotch_driver.c time
//! TreeMatch's and Scotch's.
//!
//! ```text
//! map_timing MATRIX NODES REPS              # gmap on stdout, `time_ms MEDIAN` on stderr
//! map_timing --write-pattern NAME N FILE    # a generated pattern (seed 2024) as a dense file
//! map_timing --write-dense IN FILE          # any matrix rankmig reads (format auto) as a dense file
//! ```
//!
//! The tree is NODES × 2 packages × 8 cores (`Tree::cluster(Tree::from_arities(&[2, 8]),
//! NODES)`; one node is the node tree itself), the options those of `rankmig map`
//! (`MapOptions::default()`). One untimed warm-up call, then REPS timed calls of
//! `treematch::map` on the symmetrised matrix (loading and symmetrising are not timed);
//! the median is printed. The mapping is printed in Scotch's gmap format: the count, then
//! `rank leaf` lines, leaf = depth-first leaf index (node-major).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use rankmig::matrix::{CommMatrix, MatrixFormat};
use rankmig::topology::Tree;
use rankmig::treematch::patterns::Pattern;
use rankmig::treematch::{MapOptions, map};

const PATTERN_SEED: u64 = 2024;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("--write-pattern") if args.len() == 4 => write_pattern(&args[1], &args[2], &args[3]),
        Some("--write-dense") if args.len() == 3 => write_dense(&args[1], &args[2]),
        Some(first) if !first.starts_with("--") && args.len() == 3 => {
            time_map(&args[0], &args[1], &args[2])
        }
        _ => Err(
            "usage: map_timing MATRIX NODES REPS | --write-pattern NAME N FILE | \
                  --write-dense IN FILE"
                .to_owned(),
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("map_timing: {e}");
            ExitCode::from(2)
        }
    }
}

fn positive(value: &str, what: &str) -> Result<usize, String> {
    match value.parse::<usize>() {
        Ok(v) if v > 0 => Ok(v),
        _ => Err(format!(
            "{what}: expected a positive integer, got '{value}'"
        )),
    }
}

fn save(matrix: &CommMatrix, file: &str) -> Result<(), String> {
    let out = std::fs::File::create(file).map_err(|e| format!("{file}: {e}"))?;
    let mut out = std::io::BufWriter::new(out);
    matrix
        .write_dense(&mut out)
        .and_then(|()| out.flush())
        .map_err(|e| format!("{file}: {e}"))
}

fn write_pattern(name: &str, n: &str, file: &str) -> Result<(), String> {
    let n = positive(n, "N")?;
    let pattern = Pattern::ALL
        .into_iter()
        .find(|p| p.name() == name)
        .ok_or_else(|| {
            let names: Vec<_> = Pattern::ALL.iter().map(|p| p.name()).collect();
            format!("unknown pattern '{name}' (one of {})", names.join(", "))
        })?;
    save(&pattern.generate(n, PATTERN_SEED), file)
}

fn write_dense(input: &str, file: &str) -> Result<(), String> {
    let matrix =
        CommMatrix::load(Path::new(input), MatrixFormat::Auto).map_err(|e| e.to_string())?;
    save(&matrix, file)
}

fn time_map(matrix: &str, nodes: &str, reps: &str) -> Result<(), String> {
    let nodes = positive(nodes, "NODES")?;
    let reps = positive(reps, "REPS")?;
    let matrix =
        CommMatrix::load(Path::new(matrix), MatrixFormat::Auto).map_err(|e| e.to_string())?;
    let node = Tree::from_arities(&[2, 8]).map_err(|e| e.to_string())?;
    let tree = Tree::cluster(&node, nodes).map_err(|e| e.to_string())?;
    let graph = matrix.symmetric();
    let options = MapOptions::default();

    let first = map(&graph, &tree, &options).map_err(|e| e.to_string())?; // warm-up
    let mut times = Vec::with_capacity(reps);
    let mut differ = false;
    for _ in 0..reps {
        let start = Instant::now();
        let mapping = map(&graph, &tree, &options);
        let ms = start.elapsed().as_secs_f64() * 1e3;
        let mapping = mapping.map_err(|e| e.to_string())?;
        differ |= mapping != first;
        times.push(ms);
    }
    times.sort_by(f64::total_cmp);
    let median = if reps % 2 == 1 {
        times[reps / 2]
    } else {
        0.5 * (times[reps / 2 - 1] + times[reps / 2])
    };

    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let io = |e: std::io::Error| e.to_string();
    writeln!(out, "{}", first.len()).map_err(io)?;
    for (rank, leaf) in first.leaves().iter().enumerate() {
        writeln!(out, "{rank}\t{leaf}").map_err(io)?;
    }
    out.flush().map_err(io)?;
    if differ {
        eprintln!(
            "map_timing: warning: the calls did not all give the same mapping; the first is printed"
        );
    }
    eprintln!("time_ms {median:.4}");
    Ok(())
}
