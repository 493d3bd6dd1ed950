//! arrayring: a message travels round a 50-element array ten times, element by
//! element; it must arrive intact at every hop, and the number of hops when it stops
//! must be exactly what ten rings take.

use super::{pe_counts, run_for};
use chorus_core::{chare, ArrayMap, Callback, Ctx, Layer};
use serde::{Deserialize, Serialize};

/// Elements of the ring.
const N: usize = 50;
/// Times the message passes element 0 before it stops.
const RINGS: u32 = 10;

/// The travelling message: a fixed pattern to check, the rings begun and hops made.
#[derive(Clone, Serialize, Deserialize)]
pub struct Token {
    pattern: Vec<u32>,
    rings: u32,
    hops: u64,
    done: Callback,
}

impl Token {
    fn new(done: Callback) -> Self {
        Token {
            pattern: (0..10).map(|i| i * i).collect(),
            rings: 0,
            hops: 0,
            done,
        }
    }
    fn intact(&self) -> bool {
        self.pattern.len() == 10 && self.pattern.iter().zip(0u32..).all(|(&v, i)| v == i * i)
    }
}

/// One element of the ring.
#[derive(Default)]
struct RingElt;

#[chare]
impl RingElt {
    /// Check the token, count the hop and pass it on, or stop after the last ring.
    #[entry]
    fn start(&mut self, mut token: Token, ctx: &mut Ctx) {
        assert!(token.intact(), "arrayring: message corrupted");
        let i = ctx.this_index::<usize>().expect("an element");
        token.hops += 1;
        if i == 0 {
            token.rings += 1;
        }
        if token.rings < RINGS {
            let ring = ctx.this_array::<RingElt, usize>().expect("an array");
            ring.at((i + 1) % N).start(ctx, token);
        } else {
            ctx.send_to_callback(&token.done, token.hops);
        }
    }
}

/// Ten rings round 50 elements: 9 whole rings and the first hop of the tenth.
pub fn arrayring(layer: Layer) {
    for pes in pe_counts(layer, 1) {
        let hops: u64 = run_for(layer, pes, RingElt::register, |ctx, done| {
            let ring = ctx.create_array_1d::<RingElt>(N, (), ArrayMap::RoundRobin);
            ring.at(0).start(ctx, Token::new(done));
        });
        assert_eq!(hops, u64::from(RINGS - 1) * N as u64 + 1, "{pes} PEs");
    }
}
