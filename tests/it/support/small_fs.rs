//! A small tmpfs for tests of a full disk. Shared by the integration tests (`support`)
//! and the library's own tests (`src/checkpoint/levels_tests.rs` includes this file).

use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs mounted on a directory until dropped (then unmounted lazily).
pub struct SmallFs(pub PathBuf);

impl SmallFs {
    /// Mounts a tmpfs of `size` (as `mount -o size=` reads it, e.g. `4m`) on `dir`,
    /// created if missing; `None` where this process may not mount one (not root).
    pub fn mount(dir: &Path, size: &str) -> Option<Self> {
        std::fs::create_dir_all(dir).expect("mount point");
        let ok = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Self(dir.to_owned()))
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}
