//! templates: generic chares, instantiated twice (i64 and f64; the original
//! instantiates its templates once, for int). On every PE a collector chare submits
//! PE + 1 to its PE's member of a generic group, which forwards it to member 0; member
//! 0 adds the P values and sends the sum to the collector on PE 0, which must get
//! P(P+1)/2.

use super::{pe_counts, run_for};
use chorus_core::{Callback, Chare, ChareProxy, Ctx, GroupProxy, Layer, Reducible, Registry};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// What the generic chares are instantiated with.
pub trait Num:
    Copy + PartialEq + std::fmt::Debug + Send + Serialize + DeserializeOwned + Reducible + 'static
{
    /// The value PE `pe` submits.
    fn of(pe: u32) -> Self;
    /// `self + other`.
    fn plus(self, other: Self) -> Self;
    /// The name each instantiation is registered under.
    const NAME: &'static str;
}

impl Num for i64 {
    fn of(pe: u32) -> Self {
        i64::from(pe)
    }
    fn plus(self, other: Self) -> Self {
        self + other
    }
    const NAME: &'static str = "i64";
}

impl Num for f64 {
    fn of(pe: u32) -> Self {
        f64::from(pe)
    }
    fn plus(self, other: Self) -> Self {
        self + other
    }
    const NAME: &'static str = "f64";
}

/// The generic group: members forward what they are submitted to member 0.
pub struct Reduction<T> {
    client: Option<ChareProxy<Collector<T>>>,
    data: Option<T>,
    reported: u32,
}

/// The generic group's messages.
#[derive(Clone, Serialize, Deserialize)]
pub enum ReductionMsg<T> {
    /// A local value to forward to member 0.
    Submit(T),
    /// Member 0: the collector to send the sum to.
    Register(ChareProxy<Collector<T>>),
    /// Member 0: one PE's value.
    RemoteRecv(T),
}

impl<T: Num> Reduction<T> {
    /// Member 0: with every value in and the collector known, send the sum.
    fn maybe_send(&mut self, ctx: &mut Ctx) {
        if self.reported == ctx.num_pes() as u32 {
            if let (Some(client), Some(sum)) = (&self.client, self.data) {
                client.send(ctx, CollectorMsg::Collect(sum));
            }
        }
    }
}

impl<T: Num> Chare for Reduction<T> {
    type Init = ();
    type Msg = ReductionMsg<T>;
    fn create(_: (), _: &mut Ctx) -> Self {
        Reduction {
            client: None,
            data: None,
            reported: 0,
        }
    }
    fn handle(&mut self, msg: ReductionMsg<T>, ctx: &mut Ctx) {
        match msg {
            ReductionMsg::Submit(v) => {
                let group = ctx.this_group::<Reduction<T>>().expect("a group");
                group.send(ctx, 0, ReductionMsg::RemoteRecv(v));
            }
            ReductionMsg::Register(c) => {
                self.client = Some(c);
                self.maybe_send(ctx);
            }
            ReductionMsg::RemoteRecv(v) => {
                self.data = Some(self.data.map_or(v, |d| d.plus(v)));
                self.reported += 1;
                self.maybe_send(ctx);
            }
        }
    }
}

/// The generic chare: one per PE submits its value; the one on PE 0 checks the sum.
pub struct Collector<T> {
    done: Callback,
    _of: std::marker::PhantomData<T>,
}

/// The generic chare's messages.
#[derive(Clone, Serialize, Deserialize)]
pub enum CollectorMsg<T> {
    /// The sum of every PE's value.
    Collect(T),
}

impl<T: Num> Chare for Collector<T> {
    type Init = (GroupProxy<Reduction<T>>, Callback);
    type Msg = CollectorMsg<T>;
    fn create((red, done): Self::Init, ctx: &mut Ctx) -> Self {
        let me = ctx.my_pe();
        if me == 0 {
            let this = ctx.this_chare::<Collector<T>>().expect("a chare");
            red.send(ctx, 0, ReductionMsg::Register(this));
        }
        red.send(ctx, me, ReductionMsg::Submit(T::of(me + 1)));
        Collector {
            done,
            _of: std::marker::PhantomData,
        }
    }
    fn handle(&mut self, CollectorMsg::Collect(sum): CollectorMsg<T>, ctx: &mut Ctx) {
        let p = ctx.num_pes() as u32;
        assert_eq!(sum, T::of(p * (p + 1) / 2), "templates: wrong sum");
        ctx.send_to_callback(&self.done, sum);
    }
}

fn register<T: Num>(reg: &mut Registry) -> &mut Registry {
    reg.chare::<Reduction<T>>(&format!("templates::Reduction<{}>", T::NAME))
        .chare::<Collector<T>>(&format!("templates::Collector<{}>", T::NAME))
}

/// One instantiation's run on `pes` PEs: the sum P(P+1)/2.
fn run<T: Num>(layer: Layer, pes: u32) -> T {
    run_for(layer, pes, register::<T>, move |ctx, done| {
        let red = ctx.create_group::<Reduction<T>>(());
        for pe in 0..pes {
            ctx.create_chare::<Collector<T>>((red, done.clone()), pe);
        }
    })
}

/// Both instantiations give P(P+1)/2 on every PE count.
pub fn templates(layer: Layer) {
    for pes in pe_counts(layer, 1) {
        let want = u64::from(pes * (pes + 1) / 2);
        assert_eq!(run::<i64>(layer, pes), want as i64, "i64, {pes} PEs");
        assert_eq!(run::<f64>(layer, pes), want as f64, "f64, {pes} PEs");
    }
}
