//! `rankmig report RUN_DIR`: the table of a run directory, where its communication
//! matrix is, and the chart written beside it.

use std::path::Path;

use rankmig::matrix::MatrixFormat;

use crate::cli::ReportArgs;
use crate::cli_error::CliError;

/// The `--matrix-format` the run of `run_dir` was given (its `run.json`, read by the
/// supervisor's [`rankmig::supervisor::launch::load_spec`]), which the ranks write
/// `matrix.mat` in; `auto` when it cannot be read.
fn run_matrix_format(run_dir: &Path) -> MatrixFormat {
    rankmig::supervisor::launch::load_spec(run_dir)
        .map(|spec| spec.matrix_format)
        .unwrap_or_default()
}

/// `rankmig report`: prints the table of the run directory and the line naming its
/// matrix, writes the chart (`RUN_DIR/report.svg` unless `--svg`) and names it.
pub fn run_report(args: &ReportArgs) -> Result<(), CliError> {
    use rankmig::report::{read_run, svg, table};
    let report = read_run(&args.run_dir)?;
    let chart = svg(&report)?;
    print!("{}", table(&report));
    let matrix = args.run_dir.join(rankmig::run_dir::record::MATRIX);
    if matrix.is_file() {
        let (format, option) = match run_matrix_format(&args.run_dir) {
            MatrixFormat::Edges => ("an edge list", " --matrix-format edges"),
            _ => ("TreeMatch's format", ""),
        };
        println!(
            "communication matrix: {} (bytes between ranks since the launch, written while the job runs and at its end; {format}: rankmig run --matrix {}{option})",
            matrix.display(),
            matrix.display()
        );
    }
    let path = args
        .svg
        .clone()
        .unwrap_or_else(|| args.run_dir.join("report.svg"));
    std::fs::write(&path, chart).map_err(|source| CliError::Write {
        path: path.clone(),
        source,
    })?;
    println!("chart: {}", path.display());
    Ok(())
}
