//! The radix sort's driver chare and the function that runs one sort as a job.

use super::key::{rounds, Key};
use super::params::RadixParams;
use super::report::SortReport;
use super::row::{PeRow, ROW_LEN};
use super::sorter::{Sorter, SorterInit, SorterMsg};
use chorus_core::{
    Callback, Chare, Config, Ctx, Entry, GroupProxy, Registry, Runtime, RuntimeError,
};
use chorus_sections::collectives::Collectives;
use serde::{Deserialize, Serialize};
use std::marker::PhantomData;
use thiserror::Error;

/// Why a sort did not produce a report.
#[derive(Debug, Error)]
pub enum RadixError {
    /// The runtime failed.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// The parameters cannot run.
    #[error("{0}")]
    Params(String),
    /// The job ended without publishing a result.
    #[error("the run published no {0}")]
    Missing(&'static str),
}

/// What the driver starts from.
#[derive(Serialize, Deserialize)]
#[serde(bound = "")]
pub struct DriverInit<K> {
    params: RadixParams,
    histograms: Entry<Sorter<K>, Vec<u64>>,
    ready: Entry<Driver<K>, u64>,
    done: Entry<Driver<K>, Vec<u64>>,
}

impl<K> Clone for DriverInit<K> {
    fn clone(&self) -> Self {
        DriverInit {
            params: self.params,
            histograms: self.histograms,
            ready: self.ready,
            done: self.done,
        }
    }
}

/// Messages of the driver.
#[derive(Clone, Serialize, Deserialize)]
pub enum DriverMsg {
    /// Every sorter's input is ready.
    Ready(u64),
    /// Every PE's [`PeRow`], concatenated in PE order.
    Done(Vec<u64>),
}

/// The driver chare, on PE 0: starts the sorters, times the sort, publishes the rows.
pub struct Driver<K> {
    sorters: GroupProxy<Sorter<K>>,
    go_at: f64,
}

impl<K: Key> Chare for Driver<K> {
    type Init = DriverInit<K>;
    type Msg = DriverMsg;

    fn create(init: DriverInit<K>, ctx: &mut Ctx) -> Self {
        let me = ctx
            .this_chare::<Driver<K>>()
            .expect("the driver is a singleton chare");
        let collectives = Collectives::create(ctx);
        let sorters = ctx.create_group::<Sorter<K>>(SorterInit {
            params: init.params,
            collectives,
            histograms: init.histograms,
            ready: Callback::chare(&me, init.ready),
            done: Callback::chare(&me, init.done),
            key: PhantomData,
        });
        Driver {
            sorters,
            go_at: 0.0,
        }
    }

    fn handle(&mut self, msg: DriverMsg, ctx: &mut Ctx) {
        match msg {
            DriverMsg::Ready(_) => {
                self.go_at = ctx.now();
                self.sorters.broadcast(ctx, SorterMsg::Go);
            }
            DriverMsg::Done(rows) => {
                ctx.publish("go_s", &self.go_at);
                ctx.publish("rows", &rows);
                ctx.exit();
            }
        }
    }
}

/// Run one radix sort of `K` keys under `config`.
pub fn run<K: Key>(config: &Config, params: RadixParams) -> Result<SortReport, RadixError> {
    params.validate().map_err(RadixError::Params)?;
    let mut reg = Registry::new();
    Collectives::register(&mut reg);
    reg.chare::<Driver<K>>(&format!("chorus_apps::radix::Driver<{}>", K::NAME))
        .chare::<Sorter<K>>(&format!("chorus_apps::radix::Sorter<{}>", K::NAME));
    let init = DriverInit::<K> {
        params,
        histograms: reg.entry::<Sorter<K>, Vec<u64>>("Sorter::histograms", SorterMsg::Histograms),
        ready: reg.entry::<Driver<K>, u64>("Driver::ready", DriverMsg::Ready),
        done: reg.entry::<Driver<K>, Vec<u64>>("Driver::done", DriverMsg::Done),
    };
    let report = Runtime::new(reg, config.clone()).run(move |ctx| {
        ctx.create_chare::<Driver<K>>(init, 0);
    })?;
    let go_s: f64 = report
        .output("go_s")
        .ok_or(RadixError::Missing("start time"))?;
    let flat: Vec<u64> = report
        .output("rows")
        .ok_or(RadixError::Missing("PE rows"))?;
    let rows: Vec<PeRow> = flat.chunks_exact(ROW_LEN).map(PeRow::from_slice).collect();
    let mut sort = SortReport::of(
        K::NAME,
        &params,
        rounds::<K>(params.radix_bits),
        go_s,
        &rows,
        report.trace.map(|t| t.file),
    );
    sort.sim = report.sim.map(Box::new);
    Ok(sort)
}
