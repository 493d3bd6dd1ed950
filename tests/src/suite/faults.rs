//! Faults end the way `--on-error` says on every layer, never in a hang: a message
//! damaged on the wire (`--fault-corrupt-every`) is dropped with an error under
//! `drop`, and counted as processed so quiescence still comes, or ends the job under
//! `abort`. The sim layer has no wire and refuses the flag.

use crate::{config, pes};
use chorus_core::{
    Bytes, Chare, Ctx, ErrorPolicy, GroupProxy, Layer, Registry, Runtime, RuntimeError,
};
use serde::{Deserialize, Serialize};

/// Messages each PE sends its right neighbour per burst; even, so that damaging every
/// second one damages half, whether a burst travels as one run (threads) or as
/// single messages (mpi).
const BURST: u64 = 10;
/// Bursts each PE sends.
const BURSTS: u64 = 2;

/// Sends bursts to the next PE's member and publishes each message that arrives.
struct Relay;

#[derive(Clone, Serialize, Deserialize)]
enum RelayMsg {
    Burst(GroupProxy<Relay>),
    Hit,
    Poison(Unencodable),
    Huge(Bytes),
}

/// A value whose encoding always fails: what a user type with a failing `Serialize`
/// does on a layer that encodes (mpi), where the send fails on the sending PE.
#[derive(Clone, Deserialize)]
struct Unencodable;

impl Serialize for Unencodable {
    fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        Err(serde::ser::Error::custom("deliberately unencodable"))
    }
}

impl Chare for Relay {
    type Init = ();
    type Msg = RelayMsg;
    fn create(_: (), _: &mut Ctx) -> Self {
        Relay
    }
    fn handle(&mut self, msg: RelayMsg, ctx: &mut Ctx) {
        match msg {
            RelayMsg::Burst(group) => {
                let next = (ctx.my_pe() + 1) % ctx.num_pes() as u32;
                for _ in 0..BURST {
                    group.send(ctx, next, RelayMsg::Hit);
                }
            }
            RelayMsg::Hit | RelayMsg::Poison(_) | RelayMsg::Huge(_) => ctx.publish("hit", &1u8),
        }
    }
}

fn run_damaged(
    layer: Layer,
    p: u32,
    every: u64,
    policy: ErrorPolicy,
) -> Result<chorus_core::RunReport, RuntimeError> {
    let mut reg = Registry::new();
    reg.chare::<Relay>("Relay");
    let mut cfg = config(layer, p, policy);
    cfg.fault_corrupt_every = Some(every);
    Runtime::new(reg, cfg).run(|ctx| {
        let group = ctx.create_group::<Relay>(());
        for _ in 0..BURSTS {
            group.broadcast(ctx, RelayMsg::Burst(group));
        }
        ctx.exit_on_quiescence();
    })
}

/// Under `drop`, damaged messages are reported and the job still reaches
/// quiescence, with exactly the undamaged half delivered; under `abort` the first
/// one ends the job with a decode error.
pub fn damaged_messages_are_dropped_with_an_error_and_quiescence_still_comes(layer: Layer) {
    let p = pes(layer, 3);
    if layer == Layer::Sim {
        let err = run_damaged(layer, p, 2, ErrorPolicy::Drop).expect_err("sim has no wire");
        assert!(
            err.to_string().contains("--fault-corrupt-every needs"),
            "{err}"
        );
        return;
    }
    let report = run_damaged(layer, p, 2, ErrorPolicy::Drop)
        .expect("drop policy reaches quiescence despite damaged messages");
    let got = report.outputs::<u8>("hit").len() as u64;
    let sent = u64::from(p) * BURSTS * BURST;
    assert_eq!(got, sent / 2, "every second message was damaged");
    let errors = report.errors();
    assert!(!errors.is_empty(), "damaged messages are reported");
    assert!(
        errors.iter().all(|e| e.to_string().contains("decode")),
        "{errors:?}"
    );

    let err = run_damaged(layer, p, 1, ErrorPolicy::Abort).expect_err("abort ends the job");
    assert!(err.to_string().contains("decode"), "{err}");
}

/// Send `make()` from PE 0 to PE 1 under `drop` and check the job still reaches
/// quiescence: on mpi the send fails on its sender with an error that `says` (and is
/// counted as processed); layers that pass envelopes within a process deliver it.
fn refused_on_the_wire_delivered_within_a_process(
    layer: Layer,
    make: fn() -> RelayMsg,
    says: &str,
) {
    let p = pes(layer, 2);
    let mut reg = Registry::new();
    reg.chare::<Relay>("Relay");
    let report = Runtime::new(reg, config(layer, p, ErrorPolicy::Drop))
        .run(move |ctx| {
            let group = ctx.create_group::<Relay>(());
            group.send(ctx, 1, make());
            ctx.exit_on_quiescence();
        })
        .expect("drop policy reaches quiescence");
    let errors = report.errors();
    let delivered = report.outputs::<u8>("hit").len();
    if layer == Layer::Mpi && !errors.is_empty() {
        assert_eq!(delivered, 0, "the message was refused");
        assert!(
            errors.iter().all(|e| e.to_string().contains(says)),
            "{errors:?}"
        );
    } else {
        // Also on mpi when PE 1 shares PE 0's rank (several PEs per rank).
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(delivered, 1);
    }
}

/// A message that cannot be encoded is dropped on its sender with an error under
/// `drop` and counted as processed, so quiescence still comes (layers that pass
/// envelopes within a process never encode it, and deliver it).
pub fn an_unencodable_message_is_dropped_and_quiescence_still_comes(layer: Layer) {
    refused_on_the_wire_delivered_within_a_process(
        layer,
        || RelayMsg::Poison(Unencodable),
        "deliberately unencodable",
    );
}

/// A payload of 2^31 bytes, one more than an MPI message carries: on mpi the send
/// is refused on its sender with an error saying so, before any part of it leaves
/// (it panicked after sending its notice), and quiescence still comes; layers that
/// pass envelopes within a process deliver it. The bytes are never written, so the
/// allocation stays virtual.
pub fn a_message_longer_than_mpi_carries_is_refused_and_quiescence_still_comes(layer: Layer) {
    refused_on_the_wire_delivered_within_a_process(
        layer,
        || RelayMsg::Huge(Bytes::from(vec![0u8; 1 << 31])),
        "more than one MPI message carries",
    );
}

/// Waits for a message nobody sends.
struct Waiter;

impl Chare for Waiter {
    type Init = ();
    type Msg = ();
    fn create(_: (), _: &mut Ctx) -> Self {
        Waiter
    }
    fn handle(&mut self, _: (), _: &mut Ctx) {}
}

/// A job in which nothing will ever run again and nobody exits ends with
/// `RuntimeError::Stalled` saying how to end a program, whatever the policy.
pub fn a_job_that_never_exits_is_reported_stalled_under_either_policy(layer: Layer) {
    for policy in [ErrorPolicy::Abort, ErrorPolicy::Drop] {
        let mut reg = Registry::new();
        reg.chare::<Waiter>("Waiter");
        let err = Runtime::new(reg, config(layer, pes(layer, 4), policy))
            .run(|ctx| {
                let group = ctx.create_group::<Waiter>(());
                group.broadcast(ctx, ());
            })
            .expect_err("a job with no exit stalls");
        let stalled = matches!(&err, RuntimeError::Stalled(_))
            || (layer == Layer::Mpi && matches!(&err, RuntimeError::Remote(_)));
        assert!(
            stalled && err.to_string().contains("ctx.exit()"),
            "{layer:?} {policy:?}: {err:?}"
        );
    }
}

/// This module's tests, by name.
pub const TESTS: &[super::Test] = &[
    (
        "damaged_messages_are_dropped_with_an_error_and_quiescence_still_comes",
        damaged_messages_are_dropped_with_an_error_and_quiescence_still_comes,
    ),
    (
        "an_unencodable_message_is_dropped_and_quiescence_still_comes",
        an_unencodable_message_is_dropped_and_quiescence_still_comes,
    ),
    (
        "a_message_longer_than_mpi_carries_is_refused_and_quiescence_still_comes",
        a_message_longer_than_mpi_carries_is_refused_and_quiescence_still_comes,
    ),
    (
        "a_job_that_never_exits_is_reported_stalled_under_either_policy",
        a_job_that_never_exits_is_reported_stalled_under_either_policy,
    ),
];
