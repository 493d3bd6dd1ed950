//! Reduce-scatter (`MPI_Reduce_scatter`): every member gives a vector of the same
//! length, read as blocks of `counts[j]` elements; rank j gets block j of the
//! element-wise reduction. It runs as a reduce to rank 0 and a scatter of the
//! result's blocks down the section's tree (one collective: the two phases chained),
//! so it runs on any section.

use super::error::CollectiveError;
use super::machine::Machine;
use super::reduce::{Delivery, Reduce};
use super::scatter::Scatter;
use super::tuned::Chain;
use super::value::Fold;
use chorus_core::{RedData, Reducer};

/// Check a member's start: one count per rank, adding up to its value's length, and a
/// reducer that combines element by element.
pub(crate) fn check(
    reducer: Reducer,
    value: &RedData,
    counts: &[u32],
    size: u32,
) -> Result<(), CollectiveError> {
    super::alltoall::check_blocks(counts.len(), size)?;
    if matches!(reducer, Reducer::Concat | Reducer::Gather) {
        return Err(CollectiveError::Value(format!(
            "a reduce-scatter needs an element-wise reducer, not {reducer:?}"
        )));
    }
    let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
    let len = match value {
        RedData::I64(v) => v.len(),
        RedData::U64(v) => v.len(),
        RedData::F64(v) => v.len(),
        RedData::Bool(v) => v.len(),
        _ => {
            return Err(CollectiveError::Value(
                "a reduce-scatter needs a vector of numbers or booleans".into(),
            ))
        }
    };
    if total != len as u64 {
        return Err(CollectiveError::Value(format!(
            "a reduce-scatter's counts add up to {total} elements, the value has {len}"
        )));
    }
    Ok(())
}

/// Member `rank`'s machine: reduce to rank 0, then scatter the blocks from it.
pub(crate) fn machine(fold: Fold, value: RedData, counts: Vec<u32>, rank: u32) -> Box<dyn Machine> {
    let reduce = Box::new(Reduce::new(fold, value, rank, Delivery::Root(0)));
    Box::new(Chain::new(reduce).then(move |v| {
        let blocks = v.map(|v| cut(v, &counts));
        Box::new(Scatter::new(0, blocks))
    }))
}

/// `v` cut into blocks of `counts` elements (a value `check` refuses gives no block,
/// which the scatter reports).
fn cut(v: RedData, counts: &[u32]) -> Vec<RedData> {
    fn blocks<T>(xs: Vec<T>, counts: &[u32], wrap: fn(Vec<T>) -> RedData) -> Vec<RedData> {
        let mut it = xs.into_iter();
        counts
            .iter()
            .map(|&c| wrap(it.by_ref().take(c as usize).collect()))
            .collect()
    }
    match v {
        RedData::I64(x) => blocks(x, counts, RedData::I64),
        RedData::U64(x) => blocks(x, counts, RedData::U64),
        RedData::F64(x) => blocks(x, counts, RedData::F64),
        RedData::Bool(x) => blocks(x, counts, RedData::Bool),
        _ => Vec::new(),
    }
}
