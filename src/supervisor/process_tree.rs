//! The processes below a launcher, read from `/proc`: found, and killed together.
//!
//! `rankmig run` stops a job whose launcher does not stop it by killing the launcher
//! and every process below it ([`kill_tree`]); the tests read where a job's processes
//! run from its [`descendants`].

/// Kills `pid` and every process below it (children first found, then killed
/// together, so none is re-parented away before it is seen).
pub fn kill_tree(pid: u32) {
    for p in std::iter::once(pid).chain(descendants(pid)) {
        // SAFETY: kill(2); a pid that has gone meanwhile only gives ESRCH.
        unsafe { libc::kill(p as i32, libc::SIGKILL) };
    }
}

/// Every process below `pid` (children, their children, ...), from `/proc`.
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut all = vec![pid];
    let mut i = 0;
    while i < all.len() {
        all.extend(children_of(all[i]));
        i += 1;
    }
    all.remove(0);
    all
}

/// Pids whose parent is `ppid`, from `/proc`.
pub fn children_of(ppid: u32) -> Vec<u32> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.filter_map(|e| {
        let pid: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let after = &stat[stat.rfind(')')? + 1..];
        let parent: u32 = after.split_whitespace().nth(1)?.parse().ok()?;
        (parent == ppid).then_some(pid)
    })
    .collect()
}
