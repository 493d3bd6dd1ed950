//! Point-to-point messaging: creation from any PE, priorities, the expedited path,
//! and long byte payloads (the 10^6-message stress test is `ledger.rs`).

use crate::{config, pes, splitmix64};
use chorus_core::{
    ArrayMap, ArrayProxy, Bytes, Chare, ChareProxy, Ctx, ErrorPolicy, GroupProxy, Layer, Registry,
    Runtime, SendOpts,
};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Records the order in which its messages run.
struct Recorder {
    seen: Vec<i64>,
}

#[derive(Clone, Serialize, Deserialize)]
enum RecorderMsg {
    Burst,
    Tag(i64),
    Done,
}

impl Chare for Recorder {
    type Init = ();
    type Msg = RecorderMsg;
    fn create(_: (), _: &mut Ctx) -> Self {
        Recorder { seen: Vec::new() }
    }
    fn handle(&mut self, msg: RecorderMsg, ctx: &mut Ctx) {
        let me: ChareProxy<Recorder> = ctx.this_chare().expect("singleton");
        match msg {
            RecorderMsg::Burst => {
                // All queued before any runs: the queue alone decides the order.
                for (tag, prio) in [(1, 0), (2, 5), (3, -5), (4, 0), (5, -5), (6, 10)] {
                    me.send_with(ctx, RecorderMsg::Tag(tag), SendOpts::prio(prio));
                }
                me.send_with(ctx, RecorderMsg::Tag(99), SendOpts::expedited());
                me.send_with(ctx, RecorderMsg::Done, SendOpts::prio(100));
            }
            RecorderMsg::Tag(t) => self.seen.push(t),
            RecorderMsg::Done => {
                ctx.publish("order", &self.seen);
                ctx.exit();
            }
        }
    }
}

/// Priorities run smallest first, FIFO within a priority, and expedited messages
/// before all.
pub fn priorities_run_smallest_first_fifo_within_a_priority_and_expedited_before_all(layer: Layer) {
    let p = pes(layer, 2);
    let mut reg = Registry::new();
    reg.chare::<Recorder>("Recorder");
    let report = Runtime::new(reg, config(layer, p, ErrorPolicy::Abort))
        .run(move |ctx| {
            let r = ctx.create_chare::<Recorder>((), 1 % p);
            r.send(ctx, RecorderMsg::Burst);
        })
        .expect("run");
    assert_eq!(
        report.output::<Vec<i64>>("order"),
        Some(vec![99, 3, 5, 1, 4, 2, 6])
    );
}

/// Sends itself a run of messages; one of them sends an expedited message, another panics.
struct Runner {
    seen: Vec<i64>,
}

#[derive(Clone, Serialize, Deserialize)]
enum RunnerMsg {
    Burst,
    Tag(i64),
    Done,
}

impl Chare for Runner {
    type Init = ();
    type Msg = RunnerMsg;
    fn create(_: (), _: &mut Ctx) -> Self {
        Runner { seen: Vec::new() }
    }
    fn handle(&mut self, msg: RunnerMsg, ctx: &mut Ctx) {
        let me: ChareProxy<Runner> = ctx.this_chare().expect("singleton");
        match msg {
            RunnerMsg::Burst => {
                for tag in 1..=6 {
                    me.send(ctx, RunnerMsg::Tag(tag));
                }
                me.send(ctx, RunnerMsg::Done);
            }
            RunnerMsg::Tag(t) => {
                if t == 3 {
                    me.send_with(ctx, RunnerMsg::Tag(100), SendOpts::expedited());
                }
                if t == 5 {
                    panic!("message 5 fails");
                }
                self.seen.push(t);
            }
            RunnerMsg::Done => {
                ctx.publish("order", &self.seen);
                ctx.exit();
            }
        }
    }
}

/// A run of messages yields to expedited ones and survives a failing member.
pub fn a_run_of_messages_yields_to_expedited_ones_and_survives_a_failing_member(layer: Layer) {
    let p = pes(layer, 2);
    let mut reg = Registry::new();
    reg.chare::<Runner>("Runner");
    let report = Runtime::new(reg, config(layer, p, ErrorPolicy::Drop))
        .run(move |ctx| {
            let r = ctx.create_chare::<Runner>((), 1 % p);
            r.send(ctx, RunnerMsg::Burst);
        })
        .expect("run");
    assert_eq!(
        report.output::<Vec<i64>>("order"),
        Some(vec![1, 2, 3, 100, 4, 6])
    );
    let errors = report.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].to_string().contains("message 5 fails"));
}

/// An array element that gets a run of messages from another PE; one of them sends it
/// an expedited message, which interrupts the run.
struct RunElement {
    seen: Vec<i64>,
}

impl Chare for RunElement {
    type Init = ();
    type Msg = RunnerMsg;
    fn create(_: (), _: &mut Ctx) -> Self {
        RunElement { seen: Vec::new() }
    }
    fn handle(&mut self, msg: RunnerMsg, ctx: &mut Ctx) {
        match msg {
            RunnerMsg::Burst => {}
            RunnerMsg::Tag(t) => {
                if t == 3 {
                    let me: ArrayProxy<RunElement, usize> = ctx.this_array().expect("an element");
                    let i: usize = ctx.this_index().expect("an element");
                    me.send_with(ctx, &i, RunnerMsg::Tag(100), SendOpts::expedited());
                }
                self.seen.push(t);
            }
            RunnerMsg::Done => {
                ctx.publish("order", &self.seen);
                ctx.exit();
            }
        }
    }
}

/// Messages sent to an array element on another PE right after the array's creation
/// (they may arrive before it and wait) run in the order sent, and a run of them (bytes,
/// across processes) that an expedited message interrupts goes on after it: none is
/// lost.
pub fn a_run_to_an_element_on_another_pe_resumes_after_an_expedited_message(layer: Layer) {
    let p = pes(layer, 2);
    let mut reg = Registry::new();
    reg.chare::<RunElement>("RunElement");
    let report = Runtime::new(reg, config(layer, p, ErrorPolicy::Abort))
        .run(move |ctx| {
            let a = ctx.create_array_1d::<RunElement>(p as usize, (), ArrayMap::RoundRobin);
            // Round-robin puts element `p - 1` on the last PE, away from main on PE 0.
            let last = (p - 1) as usize;
            for tag in 1..=6 {
                a.send(ctx, &last, RunnerMsg::Tag(tag));
            }
            a.send(ctx, &last, RunnerMsg::Done);
        })
        .expect("run");
    assert_eq!(
        report.output::<Vec<i64>>("order"),
        Some(vec![1, 2, 3, 100, 4, 5, 6])
    );
}

/// A chare that creates another chare on a different PE and talks to it at once.
struct Spawner;

#[derive(Clone, Serialize, Deserialize)]
enum SpawnerMsg {
    Go { depth: u32 },
}

impl Chare for Spawner {
    type Init = ();
    type Msg = SpawnerMsg;
    fn create(_: (), _: &mut Ctx) -> Self {
        Spawner
    }
    fn handle(&mut self, msg: SpawnerMsg, ctx: &mut Ctx) {
        let SpawnerMsg::Go { depth } = msg;
        ctx.publish("visited", &ctx.my_pe());
        if depth == 0 {
            return ctx.exit_on_quiescence();
        }
        let next = (ctx.my_pe() + 1) % ctx.num_pes() as u32;
        let child = ctx.create_chare::<Spawner>((), next);
        child.send(ctx, SpawnerMsg::Go { depth: depth - 1 });
    }
}

/// Chares created from any PE receive messages sent right after creation.
pub fn chares_created_from_any_pe_receive_messages_sent_right_after_creation(layer: Layer) {
    let p = pes(layer, 5);
    let mut reg = Registry::new();
    reg.chare::<Spawner>("Spawner");
    let report = Runtime::new(reg, config(layer, p, ErrorPolicy::Abort))
        .run(move |ctx| {
            let s = ctx.create_chare::<Spawner>((), 2 % p);
            s.send(ctx, SpawnerMsg::Go { depth: 12 });
        })
        .expect("run");
    let visited: Vec<u32> = report
        .outputs::<u32>("visited")
        .into_iter()
        .map(|(_, pe)| pe)
        .collect();
    assert_eq!(visited.len(), 13);
    let mut by_pe = vec![0; p as usize];
    for pe in visited {
        by_pe[pe as usize] += 1;
    }
    // Visit k runs on PE (2 + k) mod P.
    let mut want = vec![0; p as usize];
    for k in 0..13 {
        want[((2 + k) % p) as usize] += 1;
    }
    if p == 5 {
        assert_eq!(want, [2, 2, 3, 3, 3]);
    }
    assert_eq!(by_pe, want);
}

/// One member per PE: PE 0 computes while PE 1 answers it.
struct Duo {
    seen: Vec<String>,
}

#[derive(Clone, Serialize, Deserialize)]
enum DuoMsg {
    Start,
    Ping,
    Pong,
    Late,
}

impl Chare for Duo {
    type Init = ();
    type Msg = DuoMsg;
    fn create(_: (), _: &mut Ctx) -> Self {
        Duo { seen: Vec::new() }
    }
    fn handle(&mut self, msg: DuoMsg, ctx: &mut Ctx) {
        let me: GroupProxy<Duo> = ctx.this_group().expect("group member");
        match msg {
            DuoMsg::Start => {
                me.send(ctx, 1, DuoMsg::Ping);
                // PE 1's answer arrives during this compute, before the local send below.
                ctx.work(Duration::from_millis(100));
                me.send_with(ctx, 0, DuoMsg::Late, SendOpts::prio(1));
            }
            DuoMsg::Ping => me.send(ctx, 0, DuoMsg::Pong),
            DuoMsg::Pong | DuoMsg::Late => {
                let name = if matches!(msg, DuoMsg::Pong) {
                    "pong"
                } else {
                    "late"
                };
                self.seen.push(name.into());
                if self.seen.len() == 2 {
                    ctx.publish("order", &self.seen);
                    ctx.exit();
                }
            }
        }
    }
}

/// A message that arrived while a handler computed competes by priority with what
/// that handler queued locally afterwards (the layer looks at its inbox first).
pub fn a_message_arriving_during_compute_outranks_a_later_local_send(layer: Layer) {
    let p = pes(layer, 2);
    let mut reg = Registry::new();
    reg.chare::<Duo>("Duo");
    let report = Runtime::new(reg, config(layer, p, ErrorPolicy::Abort))
        .run(move |ctx| {
            let duo = ctx.create_group::<Duo>(());
            duo.send(ctx, 0, DuoMsg::Start);
        })
        .expect("run");
    assert_eq!(
        report.output::<Vec<String>>("order"),
        Some(vec!["pong".to_string(), "late".to_string()])
    );
}

/// Blobs each PE gets from PE 0.
const BLOBS: u32 = 4;

/// The contents of blob `seq` for PE `pe`: long enough that the mpi layer sends it
/// as a segment, and different for every blob.
fn blob(seq: u32, pe: u32) -> Vec<u8> {
    let mut state = u64::from(seq) << 32 | u64::from(pe);
    (0..100_000 + 1_000 * seq as usize)
        .map(|_| splitmix64(&mut state) as u8)
        .collect()
}

/// A note sent with blob `seq`: from 3 values up to ones that make the envelope
/// longer than the mpi layer's posted receives, so it travels announced, on its own.
fn note(seq: u32) -> Vec<u16> {
    (0..3 + 7_000 * seq).map(|i| (i ^ seq) as u16).collect()
}

/// One member per PE: PE 0 sends long blobs and notes of many lengths to the others, which
/// check them and echo the blobs back.
struct Blobs {
    /// Blobs and notes seen (on the receivers).
    seen: Vec<String>,
    /// Echoes counted (on PE 0).
    echoes: u32,
}

#[derive(Clone, Serialize, Deserialize)]
enum BlobMsg {
    Start,
    Blob {
        seq: u32,
        data: Bytes,
        note: Vec<u16>,
        tail: Bytes,
    },
    Note(u32, Vec<u16>),
    Echo {
        seq: u32,
        from: u32,
        data: Bytes,
    },
}

impl Chare for Blobs {
    type Init = ();
    type Msg = BlobMsg;
    fn create(_: (), _: &mut Ctx) -> Self {
        Blobs {
            seen: Vec::new(),
            echoes: 0,
        }
    }
    fn handle(&mut self, msg: BlobMsg, ctx: &mut Ctx) {
        let me: GroupProxy<Blobs> = ctx.this_group().expect("group member");
        let pe = ctx.my_pe();
        match msg {
            BlobMsg::Start => {
                for q in 1..ctx.num_pes() as u32 {
                    for seq in 0..BLOBS {
                        let tail = Bytes::from(vec![seq as u8; 70_000]);
                        let blob = BlobMsg::Blob {
                            seq,
                            data: Bytes::from(blob(seq, q)),
                            note: note(seq),
                            tail,
                        };
                        me.send(ctx, q, blob);
                        me.send(ctx, q, BlobMsg::Note(seq, note(seq + 1)));
                    }
                }
            }
            BlobMsg::Blob {
                seq,
                data,
                note,
                tail,
            } => {
                let whole = data[..] == blob(seq, pe)[..]
                    && note == self::note(seq)
                    && tail.len() == 70_000
                    && tail.iter().all(|&b| b == seq as u8);
                self.seen.push(format!("blob {seq} {whole}"));
                me.send(
                    ctx,
                    0,
                    BlobMsg::Echo {
                        seq,
                        from: pe,
                        data,
                    },
                );
                self.publish_when_all_came(ctx);
            }
            BlobMsg::Note(seq, note) => {
                self.seen
                    .push(format!("note {seq} {}", note == self::note(seq + 1)));
                self.publish_when_all_came(ctx);
            }
            BlobMsg::Echo { seq, from, data } => {
                assert!(data[..] == blob(seq, from)[..], "echo {seq} from {from}");
                self.echoes += 1;
                if self.echoes == BLOBS * (ctx.num_pes() as u32 - 1) {
                    ctx.publish("echoes", &self.echoes);
                    ctx.exit_on_quiescence();
                }
            }
        }
    }
}

impl Blobs {
    fn publish_when_all_came(&mut self, ctx: &mut Ctx) {
        if self.seen.len() == 2 * BLOBS as usize {
            self.seen.sort();
            ctx.publish("seen", &self.seen);
        }
    }
}

/// Messages with long byte fields arrive whole, as do the long and short ones sent
/// between them (not necessarily in order: a long message may take longer, as on sim), and
/// a received `Bytes` can be sent on.
pub fn long_byte_payloads_arrive_whole(layer: Layer) {
    let p = pes(layer, 3);
    let mut reg = Registry::new();
    reg.chare::<Blobs>("Blobs");
    let report = Runtime::new(reg, config(layer, p, ErrorPolicy::Abort))
        .run(move |ctx| {
            let blobs = ctx.create_group::<Blobs>(());
            blobs.send(ctx, 0, BlobMsg::Start);
        })
        .expect("run");
    assert_eq!(report.output::<u32>("echoes"), Some(BLOBS * (p - 1)));
    let mut want: Vec<String> = (0..BLOBS)
        .flat_map(|s| [format!("blob {s} true"), format!("note {s} true")])
        .collect();
    want.sort();
    let seen = report.outputs::<Vec<String>>("seen");
    assert_eq!(seen.len(), p as usize - 1);
    for (pe, got) in seen {
        assert_eq!(got, want, "PE {pe}");
    }
}

/// Items the sizes test sends: every other one long, at payload lengths that put
/// envelopes just under, at and just over the mpi layer's 16 KiB posted receives
/// (which take an envelope as one message; a longer one goes as a notice and a body
/// of its own), and short ones between them.
const SIZED_ITEMS: u32 = 120;

/// The contents of sized item `seq`.
fn sized_item(seq: u32) -> Vec<u8> {
    let len = if seq.is_multiple_of(2) {
        16_300 + seq as usize / 2
    } else {
        3
    };
    (0..len).map(|i| (i + seq as usize) as u8).collect()
}

/// One member per PE: PE 0 sends the sized items to the last PE, one envelope each.
struct Sizes {
    /// (item, arrived whole), on the last PE.
    seen: Vec<(u32, bool)>,
}

#[derive(Clone, Serialize, Deserialize)]
enum SizeMsg {
    /// Send item `seq` to the last PE, then come back for the next: one handler per
    /// item, so no two items share an envelope.
    Next(u32),
    Item {
        seq: u32,
        data: Vec<u8>,
    },
}

impl Chare for Sizes {
    type Init = ();
    type Msg = SizeMsg;
    fn create(_: (), _: &mut Ctx) -> Self {
        Sizes { seen: Vec::new() }
    }
    fn handle(&mut self, msg: SizeMsg, ctx: &mut Ctx) {
        let me: GroupProxy<Sizes> = ctx.this_group().expect("group member");
        match msg {
            SizeMsg::Next(seq) if seq < SIZED_ITEMS => {
                let last = ctx.num_pes() as u32 - 1;
                let data = sized_item(seq);
                me.send(ctx, last, SizeMsg::Item { seq, data });
                me.send(ctx, ctx.my_pe(), SizeMsg::Next(seq + 1));
            }
            SizeMsg::Next(_) => {}
            SizeMsg::Item { seq, data } => {
                self.seen.push((seq, data == sized_item(seq)));
                if self.seen.len() == SIZED_ITEMS as usize {
                    ctx.publish("seen", &self.seen);
                    ctx.exit_on_quiescence();
                }
            }
        }
    }
}

/// Envelopes around the mpi layer's posted-receive size, and short ones between them,
/// arrive whole, and in the order they were sent wherever the layer keeps order
/// between two PEs (sim's network model lets a shorter message overtake a longer one).
pub fn envelopes_around_the_posted_receive_size_arrive_whole_and_in_order(layer: Layer) {
    let p = pes(layer, 2);
    let mut reg = Registry::new();
    reg.chare::<Sizes>("Sizes");
    let report = Runtime::new(reg, config(layer, p, ErrorPolicy::Abort))
        .run(move |ctx| {
            let sizes = ctx.create_group::<Sizes>(());
            sizes.send(ctx, 0, SizeMsg::Next(0));
        })
        .expect("run");
    let mut seen: Vec<(u32, bool)> = report.output("seen").expect("the last PE saw them all");
    if layer == Layer::Sim {
        seen.sort();
    }
    let want: Vec<(u32, bool)> = (0..SIZED_ITEMS).map(|s| (s, true)).collect();
    assert_eq!(seen, want);
}

/// This module's tests, by name.
pub const TESTS: &[super::Test] = &[
    (
        "priorities_run_smallest_first_fifo_within_a_priority_and_expedited_before_all",
        priorities_run_smallest_first_fifo_within_a_priority_and_expedited_before_all,
    ),
    (
        "a_run_of_messages_yields_to_expedited_ones_and_survives_a_failing_member",
        a_run_of_messages_yields_to_expedited_ones_and_survives_a_failing_member,
    ),
    (
        "a_run_to_an_element_on_another_pe_resumes_after_an_expedited_message",
        a_run_to_an_element_on_another_pe_resumes_after_an_expedited_message,
    ),
    (
        "chares_created_from_any_pe_receive_messages_sent_right_after_creation",
        chares_created_from_any_pe_receive_messages_sent_right_after_creation,
    ),
    (
        "a_message_arriving_during_compute_outranks_a_later_local_send",
        a_message_arriving_during_compute_outranks_a_later_local_send,
    ),
    (
        "long_byte_payloads_arrive_whole",
        long_byte_payloads_arrive_whole,
    ),
    (
        "envelopes_around_the_posted_receive_size_arrive_whole_and_in_order",
        envelopes_around_the_posted_receive_size_arrive_whole_and_in_order,
    ),
];
