//! A probe of the checkpoint exchange in the background (`Collective::start_exchange`
//! over MPI), as a node-local save sends its partner copy: with 2 ranks, rank 0 starts
//! its exchange with rank 1 while rank 1 has not started its own (it waits at a
//! barrier rank 0 enters only afterwards). An exchange that blocked until its partner
//! took part would never return there; this one returns at once, is not yet done, and
//! ends once rank 1 has started its own. Then each rank checks the bytes it received.
//!
//! ```text
//! mpirun -np 2 target/release/examples/partner_exchange --mib 8
//! ```
//!
//! Prints `exchange started before the partner's: ok` and `received N bytes: ok` on each
//! rank; exits non-zero on any mismatch.

use std::process::ExitCode;

use mpi::traits::Communicator;
use rankmig::checkpoint::{Collective, ExchangeInProgress, MpiCollective};

fn main() -> ExitCode {
    let Some(universe) = mpi::initialize() else {
        eprintln!("partner_exchange: MPI could not be initialised");
        return ExitCode::FAILURE;
    };
    let mib: usize = match std::env::args().skip_while(|a| a != "--mib").nth(1) {
        None => 8,
        Some(v) => match v.parse() {
            Ok(n) => n,
            Err(_) => {
                eprintln!("partner_exchange: --mib wants a whole number, not {v:?}");
                return ExitCode::FAILURE;
            }
        },
    };
    let world = universe.world();
    if world.size() != 2 {
        eprintln!(
            "partner_exchange: run it with 2 ranks, not {}",
            world.size()
        );
        return ExitCode::FAILURE;
    }
    match run(&MpiCollective::new(&world), mib << 20) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("partner_exchange: rank {}: {e}", world.rank());
            ExitCode::FAILURE
        }
    }
}

/// The byte at `i` of the message of rank `from`.
fn pattern(from: u32, i: usize) -> u8 {
    (i as u32).wrapping_mul(31).wrapping_add(from * 7) as u8
}

fn run(coll: &MpiCollective, bytes: usize) -> Result<(), String> {
    let me = coll.rank();
    let other = 1 - me;
    let message: Vec<u8> = (0..bytes).map(|i| pattern(me, i)).collect();
    let reserve = 16;
    let done = if me == 0 {
        let mut exchange = coll.start_exchange(vec![(other, message)], &[other], reserve);
        if exchange.test() {
            return Err("the exchange ended before the partner started its own".into());
        }
        println!("exchange started before the partner's: ok");
        coll.barrier();
        exchange.finish()
    } else {
        coll.barrier();
        println!("exchange started before the partner's: ok");
        coll.start_exchange(vec![(other, message)], &[other], reserve)
            .finish()
    };
    let [received] = done.received.as_slice() else {
        return Err(format!("{} messages received, not 1", done.received.len()));
    };
    if received.len() != reserve + bytes || received[..reserve].iter().any(|&b| b != 0) {
        return Err(format!(
            "received {} bytes, not {reserve} zero bytes and {bytes}",
            received.len()
        ));
    }
    if let Some(i) = (0..bytes).find(|&i| received[reserve + i] != pattern(other, i)) {
        return Err(format!("byte {i} from rank {other} differs"));
    }
    if done.sent.len() != 1 || done.sent[0].len() != bytes {
        return Err("the sent buffer is not given back whole".into());
    }
    println!("received {bytes} bytes: ok");
    Ok(())
}
