//! Values the collectives move and combine: core's neutral `RedData`, folded in rank
//! order so results equal a sequential computation exactly.
//!
//! Integer, boolean and bitwise reducers are associative and commutative, so partial
//! results combine anywhere in the tree ("value" mode). Floating-point data, `Concat`
//! and `Gather` are order-sensitive: members pass `(rank, value)` lists up and the
//! result is a left fold in rank order ("ranked" mode; O(size) data near the root).

use super::error::CollectiveError;
use chorus_core::reduction::{self, check_value, combine_values};
use chorus_core::{RedData, Reducer};
use serde::{Deserialize, Serialize};

/// Data carried by one message of a collective.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Piece {
    /// One combined or broadcast value.
    Value(RedData),
    /// Values of several ranks, sorted by rank.
    Ranked(Vec<(u32, RedData)>),
}

impl Piece {
    /// The value of a `Value` piece; a `Ranked` piece is a `Protocol` error (the
    /// sender ran another collective, or took `f64` values where this member did not).
    pub(crate) fn value(self) -> Result<RedData, CollectiveError> {
        match self {
            Piece::Value(v) => Ok(v),
            Piece::Ranked(_) => Err(CollectiveError::Protocol(
                "expected one combined value, got a list of ranks' values".into(),
            )),
        }
    }

    /// The list of a `Ranked` piece; a `Value` piece is a `Protocol` error.
    pub(crate) fn ranked(self) -> Result<Vec<(u32, RedData)>, CollectiveError> {
        match self {
            Piece::Ranked(r) => Ok(r),
            Piece::Value(_) => Err(CollectiveError::Protocol(
                "expected a list of ranks' values, got one combined value".into(),
            )),
        }
    }
}

/// Merge two rank-sorted lists into one.
pub(crate) fn merge_ranked(a: Vec<(u32, RedData)>, b: Vec<(u32, RedData)>) -> Vec<(u32, RedData)> {
    reduction::merge_keyed(a, b)
}

/// `b`'s items after `a`'s, as core's `Concat` appends them.
fn append(a: RedData, b: RedData) -> Result<RedData, CollectiveError> {
    reduction::append(a, b).map_err(|e| CollectiveError::Mismatch(e.to_string()))
}

/// The same kind of data as `v`, with nothing in it.
fn empty_like(v: &RedData) -> RedData {
    match v {
        RedData::I64(_) => RedData::I64(Vec::new()),
        RedData::U64(_) => RedData::U64(Vec::new()),
        RedData::F64(_) => RedData::F64(Vec::new()),
        RedData::Bool(_) => RedData::Bool(Vec::new()),
        RedData::Bytes(_) | RedData::List(_) => RedData::List(Vec::new()),
    }
}

/// How a collective combines values: a built-in reducer of chorus-core.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fold {
    reducer: Reducer,
    ranked: bool,
}

impl Fold {
    /// The fold for `reducer` over values shaped like `sample` (this member's value).
    pub(crate) fn new(reducer: Reducer, sample: &RedData) -> Result<Self, CollectiveError> {
        if let Reducer::Custom(id) = reducer {
            return Err(CollectiveError::CustomReducer(id));
        }
        check_value(reducer, sample).map_err(CollectiveError::Value)?;
        let ranked = matches!(reducer, Reducer::Concat | Reducer::Gather)
            || matches!(sample, RedData::F64(_));
        Ok(Fold { reducer, ranked })
    }

    /// True if values travel as rank lists and fold only at the end.
    pub(crate) fn is_ranked(&self) -> bool {
        self.ranked
    }

    /// True if members with other kinds of value may fold this reducer another way
    /// (`f64`s as rank lists, integers as values), so may run another algorithm.
    pub(crate) fn kind_decides_shape(&self) -> bool {
        !matches!(self.reducer, Reducer::Concat | Reducer::Gather)
    }

    /// The error of members whose values are `f64` at some and integers at others.
    pub(crate) fn mixed_kinds(&self) -> CollectiveError {
        CollectiveError::Mismatch(format!(
            "reducer {:?} cannot combine f64 values with integer ones",
            self.reducer
        ))
    }

    /// A member's own contribution as a piece.
    pub(crate) fn piece(&self, rank: u32, v: RedData) -> Piece {
        if self.ranked {
            Piece::Ranked(vec![(rank, v)])
        } else {
            Piece::Value(v)
        }
    }

    /// Combine two partial results (of disjoint rank sets).
    pub(crate) fn merge(&self, a: Piece, b: Piece) -> Result<Piece, CollectiveError> {
        match (a, b) {
            (Piece::Value(a), Piece::Value(b)) => self.combine(a, b).map(Piece::Value),
            (Piece::Ranked(a), Piece::Ranked(b)) => Ok(Piece::Ranked(merge_ranked(a, b))),
            // Only f64 values travel as rank lists under an element-wise reducer.
            _ => Err(self.mixed_kinds()),
        }
    }

    /// `a ⊕ b` by the element-wise reducer.
    fn combine(&self, a: RedData, b: RedData) -> Result<RedData, CollectiveError> {
        combine_values(self.reducer, a, b, &|_| None)
            .map_err(|e| CollectiveError::Mismatch(e.to_string()))
    }

    /// The reducer this fold applies.
    pub(crate) fn reducer(&self) -> Reducer {
        self.reducer
    }

    /// One value as the first term of a fold.
    pub(crate) fn lift(&self, v: RedData) -> RedData {
        match self.reducer {
            Reducer::Gather => RedData::List(vec![v]),
            _ => v,
        }
    }

    /// `acc ⊕ v`, v a single member's value.
    pub(crate) fn step(&self, acc: RedData, v: RedData) -> Result<RedData, CollectiveError> {
        match self.reducer {
            Reducer::Concat => append(acc, v),
            Reducer::Gather => append(acc, RedData::List(vec![v])),
            _ => self.combine(acc, v),
        }
    }

    /// The fold of nothing for values shaped like `v`: the reducer's identity, used as
    /// rank 0's exclusive prefix.
    pub(crate) fn identity_like(&self, v: &RedData) -> RedData {
        use RedData::*;
        use Reducer::*;
        let n = |v: &RedData| match v {
            I64(x) => x.len(),
            U64(x) => x.len(),
            F64(x) => x.len(),
            Bool(x) => x.len(),
            Bytes(_) | List(_) => 0,
        };
        let len = n(v);
        match (self.reducer, v) {
            (Concat, v) => empty_like(v),
            (Gather, _) => List(Vec::new()),
            (Sum | BitOr | BitXor, I64(_)) => I64(vec![0; len]),
            (Sum | BitOr | BitXor, U64(_)) => U64(vec![0; len]),
            (Sum, F64(_)) => F64(vec![0.0; len]),
            (Product, I64(_)) => I64(vec![1; len]),
            (Product, U64(_)) => U64(vec![1; len]),
            (Product, F64(_)) => F64(vec![1.0; len]),
            (Min, I64(_)) => I64(vec![i64::MAX; len]),
            (Min, U64(_)) => U64(vec![u64::MAX; len]),
            (Min, F64(_)) => F64(vec![f64::INFINITY; len]),
            (Max, I64(_)) => I64(vec![i64::MIN; len]),
            (Max, U64(_)) => U64(vec![u64::MIN; len]),
            (Max, F64(_)) => F64(vec![f64::NEG_INFINITY; len]),
            (BitAnd, I64(_)) => I64(vec![-1; len]),
            (BitAnd, U64(_)) => U64(vec![u64::MAX; len]),
            (And, _) => Bool(vec![true; len]),
            (Or, _) => Bool(vec![false; len]),
            (_, v) => empty_like(v),
        }
    }

    /// The final value of a complete partial: a left fold in rank order.
    pub(crate) fn finish(&self, p: Piece) -> Result<RedData, CollectiveError> {
        match p {
            Piece::Value(v) => Ok(v),
            Piece::Ranked(items) => {
                let mut it = items.into_iter().map(|(_, v)| v);
                let Some(first) = it.next() else {
                    return Ok(RedData::List(Vec::new()));
                };
                let first = self.lift(first);
                it.try_fold(first, |acc, v| self.step(acc, v))
            }
        }
    }

    /// Inclusive (or, with `exclusive`, exclusive) prefixes of rank-sorted values,
    /// each a left fold in rank order.
    pub(crate) fn prefixes(
        &self,
        items: Vec<(u32, RedData)>,
        exclusive: bool,
    ) -> Result<Vec<(u32, RedData)>, CollectiveError> {
        let mut out = Vec::with_capacity(items.len());
        let mut acc: Option<RedData> = None;
        for (rank, v) in items {
            let prev = acc.take();
            let next = match &prev {
                None => self.lift(v.clone()),
                Some(a) => self.step(a.clone(), v.clone())?,
            };
            let mine = if exclusive {
                prev.unwrap_or_else(|| self.identity_like(&v))
            } else {
                next.clone()
            };
            out.push((rank, mine));
            acc = Some(next);
        }
        Ok(out)
    }
}

/// The concatenation of rank-sorted values (an allgather's result).
pub(crate) fn concat(items: Vec<(u32, RedData)>) -> Result<RedData, CollectiveError> {
    let mut it = items.into_iter().map(|(_, v)| v);
    let Some(first) = it.next() else {
        return Ok(RedData::List(Vec::new()));
    };
    it.try_fold(first, append)
}

/// A rough byte size of a value, for choosing an algorithm.
pub(crate) fn approx_bytes(v: &RedData) -> usize {
    match v {
        RedData::I64(x) => 8 * x.len(),
        RedData::U64(x) => 8 * x.len(),
        RedData::F64(x) => 8 * x.len(),
        RedData::Bool(x) => x.len(),
        RedData::Bytes(x) => x.len(),
        RedData::List(x) => x.iter().map(approx_bytes).sum::<usize>() + 8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chorus_core::Reducible;

    #[test]
    fn float_sums_are_left_folds_in_rank_order() {
        let vals = [1e16f64, 1.0, -1e16, 1.0];
        let f = Fold::new(Reducer::Sum, &1.0f64.into_data()).unwrap();
        assert!(matches!(f.piece(0, 1.0f64.into_data()), Piece::Ranked(_)));
        let a = f.merge(
            f.piece(2, vals[2].into_data()),
            f.piece(0, vals[0].into_data()),
        );
        let b = f.merge(
            f.piece(3, vals[3].into_data()),
            f.piece(1, vals[1].into_data()),
        );
        let all = f.merge(a.unwrap(), b.unwrap()).unwrap();
        let want = vals.iter().fold(0.0, |a, x| a + x);
        assert_eq!(f.finish(all).unwrap(), want.into_data());
    }

    #[test]
    fn exclusive_prefixes_start_at_the_identity() {
        let f = Fold::new(Reducer::Min, &vec![5i64, 6].into_data()).unwrap();
        assert!(matches!(
            f.piece(0, vec![1i64].into_data()),
            Piece::Value(_)
        ));
        let items = vec![
            (0, vec![5i64, 6].into_data()),
            (1, vec![3i64, 9].into_data()),
        ];
        let ex = f.prefixes(items.clone(), true).unwrap();
        assert_eq!(ex[0].1, vec![i64::MAX, i64::MAX].into_data());
        assert_eq!(ex[1].1, vec![5i64, 6].into_data());
        let inc = f.prefixes(items, false).unwrap();
        assert_eq!(inc[1].1, vec![3i64, 6].into_data());
    }

    #[test]
    fn custom_reducers_and_bad_kinds_are_refused() {
        assert_eq!(
            Fold::new(Reducer::Custom(3), &1u64.into_data()),
            Err(CollectiveError::CustomReducer(3))
        );
        assert!(Fold::new(Reducer::And, &1u64.into_data()).is_err());
    }

    #[test]
    fn gather_keeps_one_item_per_rank() {
        let f = Fold::new(Reducer::Gather, &vec![1u64].into_data()).unwrap();
        let p = f.merge(
            f.piece(1, vec![2u64, 3].into_data()),
            f.piece(0, vec![1u64].into_data()),
        );
        assert_eq!(
            f.finish(p.unwrap()).unwrap(),
            RedData::List(vec![vec![1u64].into_data(), vec![2u64, 3].into_data()])
        );
    }
}
