//! Baselines chorus is measured against: raw crossbeam threads and actix actors.

use super::median;
use actix::prelude::*;
use crossbeam_channel::unbounded;
use std::time::Instant;

/// Median round trip in nanoseconds between two raw threads over crossbeam channels.
pub fn crossbeam_pingpong_rtt_ns(rounds: u64) -> f64 {
    let (to_b, b_rx) = unbounded::<u64>();
    let (to_a, a_rx) = unbounded::<u64>();
    let echo = std::thread::spawn(move || {
        while let Ok(x) = b_rx.recv() {
            if to_a.send(x).is_err() {
                break;
            }
        }
    });
    let mut rtts = Vec::with_capacity(rounds as usize);
    for i in 0..rounds {
        let t = Instant::now();
        if to_b.send(i).is_err() || a_rx.recv().is_err() {
            break;
        }
        rtts.push(t.elapsed().as_secs_f64());
    }
    drop(to_b);
    let _ = echo.join();
    median(&rtts) * 1e9
}

#[derive(Message)]
#[rtype(result = "()")]
struct Tell(u64);

#[derive(Message)]
#[rtype(result = "u64")]
struct Count;

struct Counter {
    got: u64,
}

impl Actor for Counter {
    type Context = Context<Self>;
}

impl Handler<Tell> for Counter {
    type Result = ();
    fn handle(&mut self, msg: Tell, _: &mut Context<Self>) {
        self.got += 1;
        std::hint::black_box(msg.0);
    }
}

impl Handler<Count> for Counter {
    type Result = u64;
    fn handle(&mut self, _: Count, _: &mut Context<Self>) -> u64 {
        self.got
    }
}

/// Tell messages per second sent round-robin to 100 actix actors (the common actor
/// benchmark); counted until every actor has handled its share.
pub fn actix_msgs_per_s(total: u64) -> f64 {
    let system = System::new();
    let rate = system.block_on(async move {
        let actors: Vec<Addr<Counter>> = (0..100).map(|_| Counter { got: 0 }.start()).collect();
        let start = Instant::now();
        for i in 0..total {
            actors[(i % 100) as usize].do_send(Tell(i));
        }
        let mut handled = 0;
        for a in &actors {
            handled += a.send(Count).await.unwrap_or(0);
        }
        let secs = start.elapsed().as_secs_f64();
        if handled == total {
            total as f64 / secs
        } else {
            f64::NAN
        }
    });
    System::current().stop();
    let _ = system.run();
    rate
}
