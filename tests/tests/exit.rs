//! Exits from several PEs at once end the job on every PE: each PE stops at the first
//! exit it hears of, so one exit's broadcast can stop at a PE that already left on
//! another's; every PE also passes its exit down PE 0's tree, which always starts.

use chorus_core::{Chare, Config, Ctx, ErrorPolicy, Registry, Runtime};
use serde::{Deserialize, Serialize};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::time::Duration;

/// Holds the chosen PEs back until all of them are ready, so they exit at once.
static START: Mutex<Option<Arc<Barrier>>> = Mutex::new(None);

/// A group member that exits (or fails, which exits under `abort`) when told, if its
/// PE is one of the chosen.
struct Quitter;

#[derive(Clone, Serialize, Deserialize)]
enum QuitMsg {
    Go { block: bool, fail: bool },
}

impl Chare for Quitter {
    type Init = ();
    type Msg = QuitMsg;
    fn create(_: (), _: &mut Ctx) -> Self {
        Quitter
    }
    fn handle(&mut self, QuitMsg::Go { block, fail }: QuitMsg, ctx: &mut Ctx) {
        if chosen(ctx.my_pe(), block) {
            let barrier = START.lock().ok().and_then(|b| b.clone());
            if let Some(b) = barrier {
                b.wait();
            }
            if fail {
                ctx.fail("quitter", "every chosen PE fails at once");
            } else {
                ctx.exit();
            }
        }
    }
}

/// The PEs that exit: the first half (a block, as when one group's members all fail),
/// or every other one.
fn chosen(pe: u32, block: bool) -> bool {
    if block {
        pe < 8
    } else {
        pe % 2 == 1
    }
}

/// Run 16 PEs whose chosen PEs exit at once; the run's outcome, or None if it did not
/// end within a minute.
fn run(block: bool, fail: bool) -> Option<Result<(), String>> {
    let n = (0..16).filter(|&pe| chosen(pe, block)).count();
    if let Ok(mut b) = START.lock() {
        *b = Some(Arc::new(Barrier::new(n)));
    }
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reg = Registry::new();
        reg.chare::<Quitter>("Quitter");
        let config = Config {
            on_error: ErrorPolicy::Abort,
            ..Config::with_pes(16)
        };
        let result = Runtime::new(reg, config).run(move |ctx| {
            let g = ctx.create_group::<Quitter>(());
            // Straight from PE 0 to each member: a broadcast would pass through
            // members that wait at the barrier before their sends leave.
            for pe in 0..16 {
                g.send(ctx, pe, QuitMsg::Go { block, fail });
            }
        });
        let _ = tx.send(result.map(|_| ()).map_err(|e| e.to_string()));
    });
    rx.recv_timeout(Duration::from_secs(60)).ok()
}

/// One test, because the runs share `START`: plain exits end the job, failures under
/// `abort` end it with the error.
#[test]
fn exits_and_failures_on_several_pes_at_once_end_the_job_everywhere() {
    for round in 0..20 {
        for block in [true, false] {
            for fail in [false, true] {
                let case = format!("round {round}, block {block}, fail {fail}");
                match run(block, fail) {
                    None => panic!("{case}: the job did not end"),
                    Some(Ok(())) => assert!(!fail, "{case}: a failure ended the job without error"),
                    Some(Err(e)) => assert!(
                        fail && e.contains("every chosen PE fails at once"),
                        "{case}: {e}"
                    ),
                }
            }
        }
    }
}
