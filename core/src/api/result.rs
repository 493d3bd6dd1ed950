//! Results returned to the program's `main`: a chare on PE 0 that keeps every value
//! delivered to its callback, for `Runtime::run_for` and `Runtime::run_for_all` to
//! hand back once the job has ended.

use crate::api::chare::Chare;
use crate::api::ctx::Ctx;
use crate::api::registry::{Entry, Registry};
use crate::api::report::RunReport;
use crate::base::error::RuntimeError;
use crate::msg::callback::Callback;
use crate::msg::reduction::{RedData, Reducible};

/// The key the values are published under in PE 0's report.
const KEY: &str = "chorus::result";

/// Keeps the values delivered to `main`'s result callback.
pub(crate) struct ResultSink {
    /// End the job at the first value (`run_for`) instead of at quiescence.
    first_ends: bool,
}

impl Chare for ResultSink {
    type Init = bool;
    type Msg = RedData;

    fn create(first_ends: bool, _: &mut Ctx) -> Self {
        ResultSink { first_ends }
    }

    fn handle(&mut self, value: RedData, ctx: &mut Ctx) {
        // Kept in PE 0's report: one entry per value the program delivers, which
        // its own code bounds (a value per colour, per member, ...).
        ctx.publish(KEY, &value);
        if self.first_ends {
            ctx.exit();
        }
    }
}

/// Register the sink and its entry (every process, after the program's own types).
pub(crate) fn register(reg: &mut Registry) -> Entry<ResultSink, RedData> {
    reg.chare::<ResultSink>("chorus::ResultSink");
    reg.entry::<ResultSink, RedData>("chorus::ResultSink::value", |v| v)
}

/// Create the sink on this PE (PE 0, from `main`) and return its callback.
pub(crate) fn start(
    ctx: &mut Ctx,
    entry: Entry<ResultSink, RedData>,
    first_ends: bool,
) -> Callback {
    let me = ctx.my_pe();
    let sink = ctx.create_chare::<ResultSink>(first_ends, me);
    Callback::chare(&sink, entry)
}

/// The values the sink kept, in arrival order, as `T`s.
pub(crate) fn values<T: Reducible>(report: &RunReport) -> Result<Vec<T>, RuntimeError> {
    report
        .outputs::<RedData>(KEY)
        .into_iter()
        .map(|(pe, data)| {
            T::from_data(data).map_err(|reason| RuntimeError::Decode {
                pe,
                what: "a value at the result callback".into(),
                reason,
            })
        })
        .collect()
}
