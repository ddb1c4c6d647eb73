//! `rankmig simulate` as a user runs it.

use std::process::Command;

use crate::support::data;

#[test]
fn csv_keeps_its_columns_when_a_file_name_has_a_comma_or_a_quote() {
    let dir = tempfile::tempdir().unwrap();
    let names = ["lost,n1.avail", "the \"spare\".avail"];
    let mut steps = Vec::new();
    for (name, real) in names.iter().zip(["step1.avail", "step2.avail"]) {
        let path = dir.path().join(name);
        std::fs::copy(data("scenario").join(real), &path).unwrap();
        steps.push(path);
    }
    let out = Command::new(env!("CARGO_BIN_EXE_rankmig"))
        .arg("simulate")
        .arg("--matrix")
        .arg(data("matrices/cg.W.64.mat"))
        .arg("--placement")
        .arg(data("scenario/initial_placement.txt"))
        .args(["--node-topology", "synthetic:pack:2 core:8 pu:1"])
        .args(["--format", "csv"])
        .args(&steps)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut reader = csv::Reader::from_reader(&out.stdout[..]);
    let header = reader.headers().unwrap().clone();
    assert_eq!(header.len(), 9);
    assert_eq!(&header[1], "availability");
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 2);
    for (i, (row, name)) in rows.iter().zip(names).enumerate() {
        assert_eq!(row.len(), 9, "{row:?}");
        assert_eq!(&row[0], i.to_string());
        assert_eq!(&row[1], name);
        assert_eq!(&row[2], "16", "16 ranks move at steps 1 and 2");
    }
}
