//! Baselines chorus is measured against: raw crossbeam threads and actix actors.

use super::median;
use actix::prelude::*;
use crossbeam_channel::unbounded;
use std::time::Instant;

/// Median round trip in nanoseconds between two raw threads over crossbeam channels.
pub fn crossbeam_pingpong_rtt_ns(rounds: u64) -> f64 {
    pingpong(rounds, |i| i, |x| x)
}

/// A message as large as a chorus envelope whose payload is boxed, as a chorus
/// message's is.
struct EnvelopeSized {
    header: [u64; ENVELOPE_WORDS - 1],
    payload: Box<u64>,
}

/// Words that cover a chorus envelope.
const ENVELOPE_WORDS: usize =
    std::mem::size_of::<chorus_core::msg::envelope::Envelope>().div_ceil(8);

/// The same ping-pong carrying an envelope-sized message with a boxed payload: the
/// moves and the cross-thread allocation any runtime passing chorus's envelopes pays.
pub fn crossbeam_envelope_pingpong_rtt_ns(rounds: u64) -> f64 {
    pingpong(
        rounds,
        |i| EnvelopeSized {
            header: [i; ENVELOPE_WORDS - 1],
            payload: Box::new(i),
        },
        |m| m.header[0] ^ *m.payload,
    )
}

/// Median round trip in nanoseconds of `make(i)` sent to an echo thread that reads it
/// (`read`) and answers with a fresh `make`.
fn pingpong<T: Send + 'static>(rounds: u64, make: fn(u64) -> T, read: fn(T) -> u64) -> f64 {
    let (to_b, b_rx) = unbounded::<T>();
    let (to_a, a_rx) = unbounded::<T>();
    let echo = std::thread::spawn(move || {
        while let Ok(x) = b_rx.recv() {
            if to_a.send(make(read(x))).is_err() {
                break;
            }
        }
    });
    let mut rtts = Vec::with_capacity(rounds as usize);
    for i in 0..rounds {
        let t = Instant::now();
        if to_b.send(make(i)).is_err() {
            break;
        }
        let Ok(back) = a_rx.recv() else { break };
        std::hint::black_box(read(back));
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
