//! hwloc's own explanation of a refused input.
//!
//! hwloc says why it refuses a synthetic description or an XML file only by printing to
//! the process's standard error, and only when `HWLOC_SYNTHETIC_VERBOSE` or
//! `HWLOC_XML_VERBOSE` is set (the `rankmig` binary sets the first; hwloc reads the
//! second once per process). [`capture`] runs a call with file descriptor 2 sent to a pipe
//! and returns what was written there, so the reason can go into our error message. It
//! is used only when one of those variables is set. Anything another thread prints
//! during that short window ends up in the returned text.

use std::sync::Mutex;

/// Captures are serialised: descriptor 2 is process-wide.
static LOCK: Mutex<()> = Mutex::new(());

/// Most bytes of hwloc's message kept.
const MAX_MESSAGE: usize = 4096;

/// Runs `call` with standard error redirected and returns its result and the non-empty
/// lines written to standard error meanwhile, trimmed. When the redirection cannot be
/// set up, `call` runs as it is and no line is returned.
pub(super) fn capture<T>(call: impl FnOnce() -> T) -> (T, Vec<String>) {
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let Some(redirect) = Redirect::start() else {
        return (call(), Vec::new());
    };
    let result = call();
    let text = redirect.finish();
    let lines = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    (result, lines)
}

/// Descriptor 2 pointing at a pipe, with the original kept aside.
struct Redirect {
    saved: libc::c_int,
    read_end: libc::c_int,
}

impl Redirect {
    fn start() -> Option<Self> {
        use std::io::Write;
        let _ = std::io::stderr().flush();
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` is a valid array of two descriptors for pipe2 to fill.
        // Non-blocking: a message longer than the pipe buffer is cut, never a hang.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return None;
        }
        let [read_end, write_end] = fds;
        // SAFETY: plain descriptor calls on descriptors this function owns or on 2.
        unsafe {
            let saved = libc::fcntl(2, libc::F_DUPFD_CLOEXEC, 0);
            if saved < 0 || libc::dup2(write_end, 2) < 0 {
                if saved >= 0 {
                    libc::close(saved);
                }
                libc::close(read_end);
                libc::close(write_end);
                return None;
            }
            libc::close(write_end);
            Some(Self { saved, read_end })
        }
    }

    /// Puts descriptor 2 back and returns what the pipe holds.
    fn finish(self) -> String {
        // SAFETY: `saved` is the original descriptor 2, duplicated in `start`; after the
        // dup2 no descriptor refers to the pipe's write end, so reads end at EOF.
        unsafe {
            libc::dup2(self.saved, 2);
            libc::close(self.saved);
        }
        let mut bytes = Vec::new();
        let mut buf = [0u8; 1024];
        while bytes.len() < MAX_MESSAGE {
            // SAFETY: `buf` is valid for `buf.len()` bytes.
            let n = unsafe { libc::read(self.read_end, buf.as_mut_ptr().cast(), buf.len()) };
            let Ok(n) = usize::try_from(n) else { break };
            if n == 0 {
                break;
            }
            bytes.extend_from_slice(&buf[..n]);
        }
        // SAFETY: the read end is owned here and closed once.
        unsafe { libc::close(self.read_end) };
        bytes.truncate(MAX_MESSAGE);
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_written_to_descriptor_2_is_returned_and_stderr_restored() {
        let (value, text) = capture(|| {
            let msg = b"first line\nsecond line\n";
            // SAFETY: writing a valid buffer to descriptor 2, as C code would.
            unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
            7
        });
        assert_eq!(value, 7);
        assert_eq!(text, ["first line", "second line"]);
        let (_, nothing) = capture(|| ());
        assert!(nothing.is_empty());
    }
}
