//! `rankmig inspect` on a real checkpoint directory written by the library.

use std::process::Command;

use rankmig::checkpoint::{CheckpointConfig, CheckpointContext, LocalCollective};

fn write_checkpoints(dir: &std::path::Path) {
    let config = CheckpointConfig::new(dir)
        .every(1)
        .keep(2)
        .job("inspect-test");
    let mut ctx = CheckpointContext::new(config, LocalCollective).unwrap();
    let mut state: Vec<u64> = (0..1000).collect();
    for _ in 0..3 {
        state.iter_mut().for_each(|x| *x += 1);
        ctx.checkpoint(&state).unwrap();
    }
    ctx.finalize().unwrap();
}

fn inspect(dir: &std::path::Path, verify: bool) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rankmig"));
    cmd.arg("inspect").arg(dir);
    if verify {
        cmd.arg("--verify");
    }
    cmd.output().unwrap()
}

#[test]
fn verify_passes_then_fails_on_a_flipped_byte() {
    let dir = tempfile::tempdir().unwrap();
    write_checkpoints(dir.path());
    let out = inspect(dir.path(), true);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("complete"), "{text}");

    let rank_file = walk(dir.path())
        .into_iter()
        .find(|p| {
            let in_epoch = p
                .parent()
                .and_then(|d| d.file_name())
                .is_some_and(|n| n.to_string_lossy().starts_with("epoch-"));
            in_epoch && p.extension().is_some_and(|e| e == "ckpt")
        })
        .expect("a rank file");
    let mut bytes = std::fs::read(&rank_file).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x55;
    std::fs::write(&rank_file, bytes).unwrap();

    let out = inspect(dir.path(), true);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("CORRUPT"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("corrupt or missing"));
    // Without --verify only headers are read: the payload damage is not seen.
    assert!(inspect(dir.path(), false).status.success());
}

#[test]
fn a_missing_directory_is_a_clean_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = inspect(&dir.path().join("nope"), false);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope"));
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let p = entry.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
