//! varsizetest: a message of two arrays whose lengths are chosen at run time (100
//! ints, 300 floats) is the creation message of a chare on PE 1, which checks every
//! value and answers main with a message of the other shape (300 ints, 100 floats),
//! which main checks in turn. `varsizetest2` and `varraystest` reuse the exchange
//! with their own shapes.

use super::{pe_counts, run_for};
use chorus_core::{chare, Callback, ChareProxy, Ctx, Layer, Pe, Registry};
use serde::{Deserialize, Serialize};

/// A message with arrays of run-time lengths, filled from its sequence number.
#[derive(Clone, Serialize, Deserialize)]
pub(super) struct VarMsg {
    seq: i32,
    ints: Vec<i32>,
    floats: Vec<f32>,
    bytes: Vec<u8>,
}

/// The lengths of a `VarMsg`'s arrays: ints, floats, bytes.
pub(super) type Shape = (usize, usize, usize);

impl VarMsg {
    fn new(seq: i32, (ni, nf, nb): Shape) -> Self {
        VarMsg {
            seq,
            ints: (0..ni as i32).map(|i| i * i * seq).collect(),
            floats: (0..nf).map(|i| 2.0 * (i * i) as f32 * seq as f32).collect(),
            bytes: (0..nb).map(|i| (i % 251) as u8).collect(),
        }
    }
    /// Whether the message has `shape` and every value its sequence number gives.
    fn check(&self, shape: Shape) -> bool {
        let want = VarMsg::new(self.seq, shape);
        self.ints == want.ints && self.floats == want.floats && self.bytes == want.bytes
    }
}

/// What the test chare is created with.
#[derive(Clone, Serialize, Deserialize)]
pub(super) struct Job {
    msg: VarMsg,
    shapes: (Shape, Shape),
    main: ChareProxy<VarMain>,
}

/// Main's side: sends the first message, checks the answer.
#[derive(Serialize, Deserialize)]
pub(super) struct VarMain {
    back: Shape,
    done: Callback,
}

#[chare]
impl VarMain {
    /// Create the test chare on `pe` with a message of shape `out`.
    #[init]
    fn new(pe: Pe, out: Shape, back: Shape, done: Callback, ctx: &mut Ctx) -> Self {
        let main = ctx.this_chare::<VarMain>().expect("a chare");
        let job = Job {
            msg: VarMsg::new(7, out),
            shapes: (out, back),
            main,
        };
        ctx.create_chare::<VarTest>(job, pe);
        VarMain { back, done }
    }
    /// Check the answer's shape and values.
    #[entry]
    fn exit(&mut self, msg: VarMsg, ctx: &mut Ctx) {
        assert!(msg.check(self.back), "variable-size answer corrupted");
        ctx.send_to_callback(&self.done, msg.seq);
    }
}

/// The chare created with the message: checks it and answers.
#[derive(Default)]
pub(super) struct VarTest;

#[chare]
impl VarTest {
    #[init]
    fn new(job: Job, ctx: &mut Ctx) -> Self {
        let (out, back) = job.shapes;
        assert!(
            job.msg.check(out),
            "variable-size creation message corrupted"
        );
        job.main.exit(ctx, VarMsg::new(job.msg.seq, back));
        VarTest
    }
}

fn register(reg: &mut Registry) -> &mut Registry {
    VarMain::register(reg);
    VarTest::register(reg)
}

/// Send `out` to a chare created on PE `pe(pes)`, get `back` in return, on every PE
/// count of at least `min`.
pub(super) fn exchange(layer: Layer, min: u32, pe: fn(u32) -> Pe, out: Shape, back: Shape) {
    for pes in pe_counts(layer, min) {
        let seq: i32 = run_for(layer, pes, register, move |ctx, done| {
            ctx.create_chare::<VarMain>((pe(pes), out, back, done), 0);
        });
        assert_eq!(seq, 7, "{pes} PEs");
    }
}

/// 100 ints and 300 floats to PE 1, 300 ints and 100 floats back (2 PEs at least,
/// as the original).
pub fn varsizetest(layer: Layer) {
    exchange(layer, 2, |_| 1, (100, 300, 0), (300, 100, 0));
}
