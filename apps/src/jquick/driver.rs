//! The driver: creates the collectives and the sorter group, checks the PEs'
//! records and publishes the outcome.

use super::layout::Layout;
use super::sorter::{Sorter, SorterEntries, SorterInit};
use super::spec::{SectionMode, SortSpec};
use super::verify;
use chorus_core::{Callback, Chare, Ctx, Entry};
use chorus_sections::collectives::Collectives;
use chorus_sections::host::{Builder, BuilderInit};
use serde::{Deserialize, Serialize};

/// What the driver starts from.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DriverInit {
    /// The run.
    pub spec: SortSpec,
    /// The sorter's entries.
    pub sorter: SorterEntries,
    /// The driver's entry for the PEs' records.
    pub records: Entry<Driver, Vec<u64>>,
    /// The section builder's init (used with Shrink-and-Hash sections).
    pub builder: BuilderInit,
}

/// Messages of the driver.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum DriverMsg {
    /// Every PE's record, concatenated.
    Records(Vec<u64>),
}

/// The driver chare, on PE 0.
pub struct Driver {
    spec: SortSpec,
}

impl Chare for Driver {
    type Init = DriverInit;
    type Msg = DriverMsg;

    fn create(init: DriverInit, ctx: &mut Ctx) -> Self {
        let me = ctx
            .this_chare::<Driver>()
            .expect("the driver is a singleton chare");
        let collectives = Collectives::create(ctx);
        let builder = (init.spec.sections == SectionMode::ShrinkAndHash)
            .then(|| ctx.create_group::<Builder>(init.builder));
        ctx.create_group::<Sorter>(SorterInit {
            spec: init.spec.clone(),
            collectives,
            builder,
            entries: init.sorter,
            records: Callback::chare(&me, init.records),
        });
        Driver { spec: init.spec }
    }

    fn handle(&mut self, msg: DriverMsg, ctx: &mut Ctx) {
        let DriverMsg::Records(words) = msg;
        let layout = Layout::new(self.spec.n, ctx.num_pes() as u32);
        match verify::check(&layout, &words) {
            Ok(outcome) => ctx.publish("outcome", &outcome),
            Err(e) => ctx.publish("error", &e),
        }
        ctx.exit();
    }
}
