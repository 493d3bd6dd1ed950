//! The measurements of `chorus-bench sections-vs-mpi`: MPI's communicator creation
//! and chorus's sections, side by side in one MPI session.

use super::VsMpi;
use crate::bench::error::BenchError;
use crate::bench::median;
use chorus_core::{
    Callback, Chare, Config, Ctx, Encoded, Entry, GroupProxy, Layer, MpiSession, Registry, Runtime,
};
use chorus_sections::collectives::{Collectives, PerMember, RangeMember, TreeMember};
use chorus_sections::host::{self, Builder, Membership, Parent, Request};
use chorus_sections::protocol::{Algorithm, Filler};
use chorus_sections::range::RangeSection;
use chorus_sections::section::Section;
use mpi::collective::SystemOperation;
use mpi::topology::{Color, SimpleCommunicator};
use mpi::traits::*;
use serde::{Deserialize, Serialize};

/// The value every broadcast carries: 8 bytes.
const PAYLOAD: u64 = 0x0123_4567_89AB_CDEF;

/// Max over ranks of each rank's `f()` seconds, median over `reps`, in microseconds.
fn mpi_timed(world: &SimpleCommunicator, reps: u32, mut f: impl FnMut() -> f64) -> f64 {
    let mut samples = Vec::with_capacity(reps as usize);
    for _ in 0..reps {
        world.barrier();
        let local = f();
        let mut max = 0.0f64;
        world.all_reduce_into(&local, &mut max, SystemOperation::max());
        samples.push(max * 1e6);
    }
    median(&samples)
}

fn bcast8(comm: &SimpleCommunicator) {
    let mut v = if comm.rank() == 0 { PAYLOAD } else { 0 };
    comm.process_at_rank(0).broadcast_into(&mut v);
    debug_assert_eq!(v, PAYLOAD);
}

fn split(world: &SimpleCommunicator, half: i32) -> Option<SimpleCommunicator> {
    let colour = if world.rank() < half {
        Color::with_value(0)
    } else {
        Color::undefined()
    };
    world.split_by_color(colour)
}

fn create_group(world: &SimpleCommunicator, half: i32) -> Option<SimpleCommunicator> {
    if world.rank() >= half {
        return None;
    }
    let ranks: Vec<i32> = (0..half).collect();
    let group = world.group().include(&ranks);
    world.split_by_subgroup(&group)
}

/// Which chorus measurement a job makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum Mode {
    ShrinkAndHash { bcast: bool },
    Range { bcast: bool },
}

#[derive(Clone, Serialize, Deserialize)]
struct ProbeInit {
    builder: GroupProxy<Builder>,
    collectives: Collectives,
    mode: Mode,
    reps: u32,
    half: u32,
    npes: u32,
    k: u32,
    on_section: Entry<Probe, Encoded<Section>>,
    on_value: Entry<Probe, u64>,
}

#[derive(Clone, Serialize, Deserialize)]
enum ProbeMsg {
    Go,
    Section(Encoded<Section>),
    Value(u64),
    /// A member is ready (at rank 0): its clock.
    Ready(f64),
}

/// One member per PE: PE 0 repeats the measurement, members report when ready.
struct Probe {
    init: ProbeInit,
    rep: u32,
    t0: f64,
    ready: u32,
    latest: f64,
    samples: Vec<f64>,
}

impl Chare for Probe {
    type Init = ProbeInit;
    type Msg = ProbeMsg;

    fn create(init: ProbeInit, _: &mut Ctx) -> Self {
        Probe {
            init,
            rep: 0,
            t0: 0.0,
            ready: 0,
            latest: 0.0,
            samples: Vec::new(),
        }
    }

    fn handle(&mut self, msg: ProbeMsg, ctx: &mut Ctx) {
        let me = ctx.this_group::<Probe>().expect("a group member");
        let ready = |ctx: &mut Ctx| {
            let t = ctx.now();
            me.send(ctx, 0, ProbeMsg::Ready(t));
        };
        match msg {
            ProbeMsg::Go => self.start(ctx, me),
            ProbeMsg::Section(Encoded(section)) => match self.init.mode {
                Mode::ShrinkAndHash { bcast: false } => ready(ctx),
                _ => {
                    let rank = section.rank;
                    let member = TreeMember::new(section, ctx.my_pe());
                    let cb = Callback::group_member(&me, ctx.my_pe(), self.init.on_value);
                    let value = (rank == 0).then_some(PAYLOAD);
                    if let Err(e) = self.init.collectives.broadcast(ctx, member, 0, value, cb) {
                        panic!("section broadcast: {e}");
                    }
                }
            },
            ProbeMsg::Value(v) => {
                assert_eq!(v, PAYLOAD, "the broadcast value");
                ready(ctx);
            }
            ProbeMsg::Ready(t) => {
                self.ready += 1;
                self.latest = self.latest.max(t);
                if self.ready == self.init.half {
                    self.samples.push((self.latest - self.t0) * 1e6);
                    self.rep += 1;
                    self.start(ctx, me);
                }
            }
        }
    }
}

impl Probe {
    /// Start the next repetition on PE 0, or publish and end.
    fn start(&mut self, ctx: &mut Ctx, me: GroupProxy<Probe>) {
        if self.rep == self.init.reps {
            ctx.publish("samples_us", &self.samples);
            ctx.exit_on_quiescence();
            return;
        }
        self.ready = 0;
        self.latest = 0.0;
        self.t0 = ctx.now();
        match self.init.mode {
            Mode::ShrinkAndHash { .. } => {
                let req = Request {
                    algorithm: Algorithm::ShrinkAndHash(Filler::None),
                    k: self.init.k,
                    parent: Parent::World,
                    membership: Membership::Pes((0..self.init.half).collect()),
                    on_member: Callback::group_all(&me, self.init.on_section),
                    on_report: Callback::Ignore,
                    tag: u64::from(self.rep),
                    // The broadcast runs on the member's own view.
                    keep: false,
                };
                Builder::create_section(&self.init.builder, ctx, req);
            }
            Mode::Range { bcast } => {
                let section = RangeSection::world(self.init.npes, self.init.k)
                    .and_then(|w| w.split(0, self.init.half - 1, 1))
                    .expect("a valid range");
                if !bcast {
                    // Made locally with no message: ready at once, everywhere.
                    let now = ctx.now();
                    self.samples.push((now - self.t0) * 1e6);
                    self.rep += 1;
                    return self.start(ctx, me);
                }
                let member = RangeMember::new(section, ctx.my_pe()).expect("rank 0 is a member");
                let target = PerMember::group(&me, self.init.on_value);
                if let Err(e) = self
                    .init
                    .collectives
                    .multicast(ctx, member, PAYLOAD, target)
                {
                    panic!("range multicast: {e}");
                }
            }
        }
    }
}

/// Median microseconds of one chorus measurement.
fn chorus_timed(
    config: &Config,
    mode: Mode,
    reps: u32,
    half: u32,
    k: u32,
) -> Result<f64, BenchError> {
    let mut reg = Registry::new();
    let builder_init = host::register(&mut reg);
    Collectives::register(&mut reg);
    reg.chare::<Probe>("sections_vs_mpi::Probe");
    let on_section = reg.entry::<Probe, Encoded<Section>>("Probe::section", ProbeMsg::Section);
    let on_value = reg.entry::<Probe, u64>("Probe::value", ProbeMsg::Value);
    let config = Config {
        layer: Layer::Mpi,
        ..config.clone()
    };
    let report = Runtime::new(reg, config).run(move |ctx| {
        let builder = ctx.create_group::<Builder>(builder_init);
        let collectives = Collectives::create(ctx);
        let init = ProbeInit {
            builder,
            collectives,
            mode,
            reps,
            half,
            npes: ctx.num_pes() as u32,
            k,
            on_section,
            on_value,
        };
        let probe = ctx.create_group::<Probe>(init);
        probe.send(ctx, 0, ProbeMsg::Go);
    })?;
    let samples: Vec<f64> = report.output("samples_us").ok_or(BenchError::Unpublished {
        what: "the probe's samples",
    })?;
    Ok(median(&samples))
}

/// Measure everything; rank 0 gets the figures. Needs at least two ranks.
pub fn run(
    session: &MpiSession,
    config: &Config,
    reps: u32,
    k: u32,
) -> Result<Option<VsMpi>, BenchError> {
    let world = session.world();
    let n = world.size();
    if n < 2 {
        return Err(BenchError::TooFewRanks {
            bench: "sections-vs-mpi",
            example: "mpirun -n 8 --oversubscribe chorus-bench sections-vs-mpi",
        });
    }
    let half = n / 2;
    let timed = |f: &dyn Fn() -> Option<SimpleCommunicator>, bcast: bool| {
        mpi_timed(&world, reps, || {
            let t0 = mpi::time();
            let comm = f();
            if let (true, Some(c)) = (bcast, &comm) {
                bcast8(c);
            }
            let t = mpi::time() - t0;
            drop(comm);
            t
        })
    };
    let split_us = timed(&|| split(&world, half), false);
    let split_bcast_us = timed(&|| split(&world, half), true);
    let create_us = timed(&|| create_group(&world, half), false);
    let create_bcast_us = timed(&|| create_group(&world, half), true);
    let half_u = half as u32;
    let sah_us = chorus_timed(
        config,
        Mode::ShrinkAndHash { bcast: false },
        reps,
        half_u,
        k,
    )?;
    let sah_bcast_us = chorus_timed(config, Mode::ShrinkAndHash { bcast: true }, reps, half_u, k)?;
    let range_us = chorus_timed(config, Mode::Range { bcast: false }, reps, half_u, k)?;
    let range_bcast_us = chorus_timed(config, Mode::Range { bcast: true }, reps, half_u, k)?;
    Ok((world.rank() == 0).then_some(VsMpi {
        ranks: n,
        members: half,
        reps,
        k,
        mpi_comm_split_us: split_us,
        mpi_comm_split_plus_bcast_us: split_bcast_us,
        mpi_comm_create_group_us: create_us,
        mpi_comm_create_group_plus_bcast_us: create_bcast_us,
        shrink_and_hash_us: sah_us,
        shrink_and_hash_plus_bcast_us: sah_bcast_us,
        range_us,
        range_plus_bcast_us: range_bcast_us,
    }))
}
