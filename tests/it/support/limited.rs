//! Running the `rankmig` binary under limits: an address-space cap (`ulimit -v`) and a
//! wall-time cap, so that a regression to an unbounded allocation or a quadratic loop
//! fails a test instead of exhausting the machine.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `rankmig ARGS` with at most `mib` MiB of address space, killed after `seconds`.
pub fn rankmig_within(mib: u64, seconds: u64, args: &[&str]) -> Output {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("ulimit -v {}; exec \"$@\"", mib * 1024))
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_rankmig"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn rankmig");
    let start = Instant::now();
    // Drain the pipes in threads: a large stdout must not block the child.
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let out_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut buf).map(|_| buf)
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut stderr, &mut buf).map(|_| buf)
    });
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > Duration::from_secs(seconds) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("rankmig {args:?} did not finish in {seconds} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out_reader.join().expect("stdout thread").expect("stdout"),
        stderr: err_reader.join().expect("stderr thread").expect("stderr"),
    }
}

/// `rankmig ARGS` under a 2 GiB address-space limit, killed after 30 s.
pub fn rankmig_limited(args: &[&str]) -> Output {
    rankmig_within(2048, 30, args)
}
