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
    processes_where(|p| p.parent == ppid)
}

/// What `/proc/PID/stat` says of a process, in part.
struct ProcessStat {
    /// Its state letter (`R`, `S`, `T`, `Z`, ...).
    state: char,
    parent: u32,
    group: u32,
}

/// The pids of `/proc` whose stat satisfies `keep`.
fn processes_where(keep: impl Fn(&ProcessStat) -> bool) -> Vec<u32> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.filter_map(|e| {
        let pid: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // After the command name (in parentheses, which may hold spaces): state, parent,
        // process group.
        let mut after = stat[stat.rfind(')')? + 1..].split_whitespace();
        let fields = ProcessStat {
            state: after.next()?.chars().next()?,
            parent: after.next()?.parse().ok()?,
            group: after.next()?.parse().ok()?,
        };
        keep(&fields).then_some(pid)
    })
    .collect()
}

/// Kills every process left in the process group `pgid` (the group `rankmig run` starts
/// each launcher in) and waits, at most `patience`, until each of them has ended
/// (gone, or a zombie). Returns the pids still running after that, none as a rule.
///
/// A launcher that exits after a rank failed does not always wait for the processes it
/// started: a replacement stopped by a signal, or one whose proxy died first, stays.
/// The group outlives the launcher, so what is left of the job is found by it.
pub fn end_group(pgid: u32, patience: std::time::Duration) -> Vec<u32> {
    let start = std::time::Instant::now();
    loop {
        let running = running_in_group(pgid);
        if running.is_empty() || start.elapsed() >= patience {
            return running;
        }
        for &p in &running {
            // SAFETY: kill(2); a pid that has gone meanwhile only gives ESRCH.
            unsafe { libc::kill(p as i32, libc::SIGKILL) };
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Pids of the process group `pgid` that are not zombies, from `/proc`.
pub fn running_in_group(pgid: u32) -> Vec<u32> {
    processes_where(|p| p.group == pgid && !matches!(p.state, 'Z' | 'X'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stopped_process_left_in_a_group_is_ended() {
        use std::os::unix::process::CommandExt;
        let mut leader = std::process::Command::new("sh")
            .args(["-c", "sleep 60 & kill -STOP $!; wait"])
            .process_group(0)
            .spawn()
            .expect("sh runs");
        let pgid = leader.id();
        let start = std::time::Instant::now();
        while running_in_group(pgid).len() < 2 && start.elapsed().as_secs() < 30 {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(running_in_group(pgid).len(), 2, "sh and its sleep");
        let left = end_group(pgid, std::time::Duration::from_secs(30));
        let _ = leader.wait();
        assert!(left.is_empty(), "left running: {left:?}");
        assert!(running_in_group(pgid).is_empty());
    }
}
