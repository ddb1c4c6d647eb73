//! The run directory removed (or replaced) while the job runs.
//!
//! Everything `rankmig run --restart` and `rankmig report` need lives there (`run.json`,
//! the records, by default the checkpoints in `ckpt/`), and the ranks write into it as
//! they go. An operator who removes it by mistake otherwise learns of it only when the
//! job's next checkpoint fails ("No such file or directory"). The supervisor notices at
//! its next poll, says what was lost, and puts back what the job and a later restart
//! need: the directory, `run.json`, and the checkpoint directory when it lay inside.
//! The job keeps running; a checkpoint that was being written at that moment fails, and
//! the job then stops as its checkpoint error says.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use super::launch::{RunSpec, save_spec};
use crate::run_dir::record::RUN_SPEC;

/// Identity of a directory: device and inode.
type DirId = (u64, u64);

fn dir_id(path: &Path) -> Option<DirId> {
    std::fs::symlink_metadata(path)
        .ok()
        .filter(std::fs::Metadata::is_dir)
        .map(|m| (m.dev(), m.ino()))
}

/// Watches one launch's run directory.
#[derive(Debug)]
pub struct RunDirWatch {
    spec: RunSpec,
    seen: Option<DirId>,
}

impl RunDirWatch {
    /// Watches `spec.run_dir` as it is now.
    pub fn new(spec: &RunSpec) -> Self {
        Self {
            spec: spec.clone(),
            seen: dir_id(&spec.run_dir),
        }
    }

    /// When the directory is gone or another one stands in its place: what happened
    /// and what was done about it, for the log. The directory is then watched anew.
    pub fn check(&mut self) -> Option<String> {
        let now = dir_id(&self.spec.run_dir);
        // The ranks create it again as they append their records, and a new directory
        // may get the inode number of the old one: `run.json`, which only the
        // supervisor writes, tells whether this is still the directory it prepared.
        let spec_kept = self.spec.run_dir.join(RUN_SPEC).exists();
        if now.is_some() && now == self.seen && spec_kept {
            return None;
        }
        let what = if now.is_none() {
            "was removed"
        } else {
            "was removed or emptied (run.json is gone)"
        };
        let restored = self.restore();
        self.seen = dir_id(&self.spec.run_dir);
        Some(format!(
            "the run directory {} {what} while the job ran: the records and checkpoints it held are lost; {restored}",
            self.spec.run_dir.display()
        ))
    }

    /// Puts back the directory, `run.json` and an inner checkpoint directory; says
    /// what it did, or why it could not.
    fn restore(&self) -> String {
        let run_dir = &self.spec.run_dir;
        let mut done: Vec<String> = Vec::new();
        if let Err(e) = std::fs::create_dir_all(run_dir) {
            return format!(
                "it cannot be created again ({e}): the job can no longer be restarted from it"
            );
        }
        if save_spec(&self.spec).is_ok() {
            done.push(RUN_SPEC.into());
        }
        let ckpt = self.inner_checkpoint_dir();
        if let Some(ckpt) = &ckpt {
            let made = std::fs::DirBuilder::new().mode(0o700).create(ckpt);
            if made.is_ok() {
                done.push(format!("{}/", ckpt.display()));
            }
        }
        format!(
            "it was created again with {} (a checkpoint being written now fails, and the job stops as its error says; later ones go there again)",
            if done.is_empty() {
                "nothing in it".to_owned()
            } else {
                done.join(" and ")
            }
        )
    }

    /// The checkpoint directory, when it lies inside the run directory.
    fn inner_checkpoint_dir(&self) -> Option<PathBuf> {
        self.spec
            .ckpt_dir
            .starts_with(&self.spec.run_dir)
            .then(|| self.spec.ckpt_dir.clone())
    }
}
