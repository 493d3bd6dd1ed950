//! Reducers and the values they combine.

use crate::msg::payload::Message;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// How contributions to a reduction are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Reducer {
    /// Element-wise sum of numbers.
    Sum,
    /// Element-wise product of numbers.
    Product,
    /// Element-wise minimum of numbers.
    Min,
    /// Element-wise maximum of numbers.
    Max,
    /// Element-wise logical and of booleans.
    And,
    /// Element-wise logical or of booleans.
    Or,
    /// Element-wise bitwise and of integers.
    BitAnd,
    /// Element-wise bitwise or of integers.
    BitOr,
    /// Element-wise bitwise xor of integers.
    BitXor,
    /// Concatenation of every contributor's vector, in contributor order.
    Concat,
    /// One entry per contributor, in contributor order.
    Gather,
    /// A reducer registered with `Registry::reducer`.
    Custom(u32),
}

/// A reduction value in the runtime's neutral form, so reductions combine across
/// processes without knowing user types. Decoding refuses lists nested deeper than
/// [`MAX_LIST_DEPTH`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum RedData {
    /// Signed integers (a scalar is a vector of one).
    I64(#[serde(with = "crate::base::packed")] Vec<i64>),
    /// Unsigned integers.
    U64(#[serde(with = "crate::base::packed")] Vec<u64>),
    /// Floating-point numbers.
    F64(#[serde(with = "crate::base::packed")] Vec<f64>),
    /// Booleans.
    Bool(Vec<bool>),
    /// A bincode-encoded user value (for `Gather` and custom reducers); one byte
    /// string on a wire, not a sequence of bytes.
    Bytes(
        #[serde(serialize_with = "crate::base::packed::serialize_bytes")]
        #[serde(deserialize_with = "crate::base::packed::deserialize_bytes")]
        Vec<u8>,
    ),
    /// One item per contributor (the result of `Gather`).
    List(#[serde(deserialize_with = "nested_list")] Vec<RedData>),
}

/// Deepest nesting of `RedData::List` a decoded value may have: a gather of gathers
/// of ... 64 deep. Bytes from the wire nesting lists a million deep (12 bytes a
/// level) once overflowed the stack decoding them.
pub const MAX_LIST_DEPTH: u32 = 64;

std::thread_local! {
    /// Lists being decoded on this thread, outermost first.
    static DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Leaves one level of `DEPTH` when dropped, also when decoding fails.
struct Level;

impl Drop for Level {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get() - 1));
    }
}

/// The items of a `RedData::List`, refused past `MAX_LIST_DEPTH` lists deep.
fn nested_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<RedData>, D::Error> {
    let depth = DEPTH.with(|c| {
        c.set(c.get() + 1);
        c.get()
    });
    let _level = Level;
    if depth > MAX_LIST_DEPTH {
        return Err(serde::de::Error::custom(format!(
            "reduction lists nested deeper than {MAX_LIST_DEPTH}"
        )));
    }
    Vec::deserialize(d)
}

impl RedData {
    /// Short name of the variant, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            RedData::I64(_) => "i64",
            RedData::U64(_) => "u64",
            RedData::F64(_) => "f64",
            RedData::Bool(_) => "bool",
            RedData::Bytes(_) => "bytes",
            RedData::List(_) => "list",
        }
    }
}

/// A user-registered reducer: associative combination of two values.
pub type CustomReducer = fn(RedData, RedData) -> Result<RedData, String>;

/// Contributions to one reduction combined so far, keyed by contributor order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Partial {
    /// Combined value of an element-wise or custom reducer.
    Value(RedData),
    /// `(contributor key, value)` pairs of a Concat or Gather, sorted by key.
    Keyed(Vec<(u64, RedData)>),
}

/// Why two reduction values do not combine.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum ReduceError {
    /// The reducer does not apply to these kinds of value, or they differ.
    #[error("reducer {reducer:?} cannot combine {a} with {b}")]
    Kinds {
        /// The reducer.
        reducer: Reducer,
        /// The kind of the first value (`RedData::kind`).
        a: &'static str,
        /// The kind of the second value.
        b: &'static str,
    },
    /// An element-wise reducer over vectors of different lengths.
    #[error("contributions have different lengths ({a} and {b})")]
    Lengths {
        /// Length of the first vector.
        a: usize,
        /// Length of the second vector.
        b: usize,
    },
    /// `Concat` over values of different kinds, or of a kind it cannot extend.
    #[error("reducer Concat cannot concatenate {a} with {b}")]
    Concat {
        /// The kind of the first value.
        a: &'static str,
        /// The kind of the second value.
        b: &'static str,
    },
    /// A custom reducer id that no `Registry::reducer` registered.
    #[error("custom reducer {0} is not registered")]
    Unregistered(u32),
    /// A custom reducer panicked.
    #[error("custom reducer {id} panicked: {message}")]
    Panicked {
        /// The reducer's id.
        id: u32,
        /// The panic's message.
        message: String,
    },
    /// A custom reducer refused the values, in its own words.
    #[error("{message}")]
    Custom {
        /// The reducer's id.
        id: u32,
        /// What it said.
        message: String,
    },
}

fn zip_num<T: Copy>(a: Vec<T>, b: Vec<T>, f: impl Fn(T, T) -> T) -> Result<Vec<T>, ReduceError> {
    if a.len() != b.len() {
        return Err(ReduceError::Lengths {
            a: a.len(),
            b: b.len(),
        });
    }
    Ok(a.into_iter().zip(b).map(|(x, y)| f(x, y)).collect())
}

/// Apply custom reducer `id` under `catch_unwind`: partial results meet outside any
/// handler's guard, where a panic would unwind the PE and leave the tree waiting.
fn apply_custom(
    id: u32,
    a: RedData,
    b: RedData,
    custom: &dyn Fn(u32) -> Option<CustomReducer>,
) -> Result<RedData, ReduceError> {
    let f = custom(id).ok_or(ReduceError::Unregistered(id))?;
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(a, b)))
        .map_err(|p| ReduceError::Panicked {
            id,
            message: crate::base::error::panic_message(p),
        })?
        .map_err(|message| ReduceError::Custom { id, message })
}

/// Combine two values with an element-wise built-in reducer or a custom one.
pub fn combine_values(
    reducer: Reducer,
    a: RedData,
    b: RedData,
    custom: &dyn Fn(u32) -> Option<CustomReducer>,
) -> Result<RedData, ReduceError> {
    use RedData::*;
    use Reducer::*;
    let (ka, kb) = (a.kind(), b.kind());
    Ok(match (reducer, a, b) {
        (Custom(id), a, b) => apply_custom(id, a, b, custom)?,
        (Sum, I64(a), I64(b)) => I64(zip_num(a, b, i64::wrapping_add)?),
        (Sum, U64(a), U64(b)) => U64(zip_num(a, b, u64::wrapping_add)?),
        (Sum, F64(a), F64(b)) => F64(zip_num(a, b, |x, y| x + y)?),
        (Product, I64(a), I64(b)) => I64(zip_num(a, b, i64::wrapping_mul)?),
        (Product, U64(a), U64(b)) => U64(zip_num(a, b, u64::wrapping_mul)?),
        (Product, F64(a), F64(b)) => F64(zip_num(a, b, |x, y| x * y)?),
        (Min, I64(a), I64(b)) => I64(zip_num(a, b, i64::min)?),
        (Min, U64(a), U64(b)) => U64(zip_num(a, b, u64::min)?),
        (Min, F64(a), F64(b)) => F64(zip_num(a, b, f64::min)?),
        (Max, I64(a), I64(b)) => I64(zip_num(a, b, i64::max)?),
        (Max, U64(a), U64(b)) => U64(zip_num(a, b, u64::max)?),
        (Max, F64(a), F64(b)) => F64(zip_num(a, b, f64::max)?),
        (And, Bool(a), Bool(b)) => Bool(zip_num(a, b, |x, y| x && y)?),
        (Or, Bool(a), Bool(b)) => Bool(zip_num(a, b, |x, y| x || y)?),
        (BitAnd, I64(a), I64(b)) => I64(zip_num(a, b, |x, y| x & y)?),
        (BitAnd, U64(a), U64(b)) => U64(zip_num(a, b, |x, y| x & y)?),
        (BitOr, I64(a), I64(b)) => I64(zip_num(a, b, |x, y| x | y)?),
        (BitOr, U64(a), U64(b)) => U64(zip_num(a, b, |x, y| x | y)?),
        (BitXor, I64(a), I64(b)) => I64(zip_num(a, b, |x, y| x ^ y)?),
        (BitXor, U64(a), U64(b)) => U64(zip_num(a, b, |x, y| x ^ y)?),
        _ => {
            return Err(ReduceError::Kinds {
                reducer,
                a: ka,
                b: kb,
            })
        }
    })
}

/// Check that a single contribution suits the reducer, before any combining.
pub fn check_value(reducer: Reducer, v: &RedData) -> Result<(), String> {
    use Reducer::*;
    let ok = match reducer {
        Sum | Product | Min | Max => {
            matches!(v, RedData::I64(_) | RedData::U64(_) | RedData::F64(_))
        }
        And | Or => matches!(v, RedData::Bool(_)),
        BitAnd | BitOr | BitXor => matches!(v, RedData::I64(_) | RedData::U64(_)),
        Concat => !matches!(v, RedData::Bytes(_)),
        Gather | Custom(_) => true,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "reducer {reducer:?} does not apply to {} values",
            v.kind()
        ))
    }
}

/// Start a partial from one contributor's value.
pub fn partial_of(reducer: Reducer, key: u64, v: RedData) -> Partial {
    match reducer {
        Reducer::Concat | Reducer::Gather => Partial::Keyed(vec![(key, v)]),
        _ => Partial::Value(v),
    }
}

/// Merge two partials of the same reduction.
pub fn merge_partials(
    reducer: Reducer,
    a: Partial,
    b: Partial,
    custom: &dyn Fn(u32) -> Option<CustomReducer>,
) -> Result<Partial, String> {
    match (a, b) {
        (Partial::Value(a), Partial::Value(b)) => combine_values(reducer, a, b, custom)
            .map(Partial::Value)
            .map_err(|e| e.to_string()),
        (Partial::Keyed(a), Partial::Keyed(b)) => Ok(Partial::Keyed(merge_keyed(a, b))),
        _ => Err(format!(
            "reducer {reducer:?}: contributions mix keyed and plain partials"
        )),
    }
}

/// Two lists sorted by key merged into one, `a`'s items first among equal keys.
pub fn merge_keyed<K: Ord, V>(a: Vec<(K, V)>, b: Vec<(K, V)>) -> Vec<(K, V)> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut ia, mut ib) = (a.into_iter().peekable(), b.into_iter().peekable());
    loop {
        let take_a = match (ia.peek(), ib.peek()) {
            (Some(x), Some(y)) => x.0 <= y.0,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        out.extend(if take_a { ia.next() } else { ib.next() });
    }
    out
}

/// Turn the root's partial into the final value.
pub fn finish(reducer: Reducer, p: Partial) -> Result<RedData, String> {
    match p {
        Partial::Value(v) => Ok(v),
        Partial::Keyed(items) => {
            let values = items.into_iter().map(|(_, v)| v);
            if reducer == Reducer::Gather {
                return Ok(RedData::List(values.collect()));
            }
            let mut it = values;
            let Some(first) = it.next() else {
                return Ok(RedData::List(Vec::new()));
            };
            it.try_fold(first, append).map_err(|e| e.to_string())
        }
    }
}

/// `b`'s items after `a`'s, for `Concat`: both must be vectors of one kind, or lists.
pub fn append(a: RedData, b: RedData) -> Result<RedData, ReduceError> {
    use RedData::*;
    Ok(match (a, b) {
        (I64(mut a), I64(b)) => {
            a.extend(b);
            I64(a)
        }
        (U64(mut a), U64(b)) => {
            a.extend(b);
            U64(a)
        }
        (F64(mut a), F64(b)) => {
            a.extend(b);
            F64(a)
        }
        (Bool(mut a), Bool(b)) => {
            a.extend(b);
            Bool(a)
        }
        (List(mut a), List(b)) => {
            a.extend(b);
            List(a)
        }
        (a, b) => {
            return Err(ReduceError::Concat {
                a: a.kind(),
                b: b.kind(),
            })
        }
    })
}

/// A Rust value that can be contributed to a reduction and received from one.
pub trait Reducible: Sized + Send + 'static {
    /// Convert to the neutral form.
    fn into_data(self) -> RedData;
    /// Convert back; fails with a description when the data has another shape.
    fn from_data(d: RedData) -> Result<Self, String>;
}

fn wrong<T>(d: &RedData) -> String {
    format!(
        "reduction result is {} data, not a {}",
        d.kind(),
        std::any::type_name::<T>()
    )
}

macro_rules! scalar_reducible {
    ($variant:ident, $wide:ty, $($t:ty),*) => {$(
        impl Reducible for $t {
            fn into_data(self) -> RedData {
                RedData::$variant(vec![self as $wide])
            }
            fn from_data(d: RedData) -> Result<Self, String> {
                match d {
                    RedData::$variant(v) if v.len() == 1 => <$t>::try_from(v[0]).map_err(|_| {
                        format!("reduction result {} does not fit in {}", v[0], stringify!($t))
                    }),
                    d => Err(wrong::<$t>(&d)),
                }
            }
        }
        impl Reducible for Vec<$t> {
            fn into_data(self) -> RedData {
                RedData::$variant(self.into_iter().map(|x| x as $wide).collect())
            }
            fn from_data(d: RedData) -> Result<Self, String> {
                match d {
                    RedData::$variant(v) => v
                        .into_iter()
                        .map(|x| <$t>::try_from(x).map_err(|_| {
                            format!("reduction result {x} does not fit in {}", stringify!($t))
                        }))
                        .collect(),
                    RedData::List(items) => items.into_iter().map(<$t>::from_data).collect(),
                    d => Err(wrong::<Vec<$t>>(&d)),
                }
            }
        }
    )*};
}

scalar_reducible!(I64, i64, i8, i16, i32, i64);
scalar_reducible!(U64, u64, u8, u16, u32, u64, usize);

macro_rules! float_reducible {
    ($($t:ty),*) => {$(
        impl Reducible for $t {
            fn into_data(self) -> RedData {
                RedData::F64(vec![self as f64])
            }
            fn from_data(d: RedData) -> Result<Self, String> {
                match d {
                    RedData::F64(v) if v.len() == 1 => Ok(v[0] as $t),
                    d => Err(wrong::<$t>(&d)),
                }
            }
        }
        impl Reducible for Vec<$t> {
            fn into_data(self) -> RedData {
                RedData::F64(self.into_iter().map(|x| x as f64).collect())
            }
            fn from_data(d: RedData) -> Result<Self, String> {
                match d {
                    RedData::F64(v) => Ok(v.into_iter().map(|x| x as $t).collect()),
                    RedData::List(items) => items.into_iter().map(<$t>::from_data).collect(),
                    d => Err(wrong::<Vec<$t>>(&d)),
                }
            }
        }
    )*};
}

float_reducible!(f32, f64);

impl Reducible for bool {
    fn into_data(self) -> RedData {
        RedData::Bool(vec![self])
    }
    fn from_data(d: RedData) -> Result<Self, String> {
        match d {
            RedData::Bool(v) if v.len() == 1 => Ok(v[0]),
            d => Err(wrong::<bool>(&d)),
        }
    }
}

impl Reducible for Vec<bool> {
    fn into_data(self) -> RedData {
        RedData::Bool(self)
    }
    fn from_data(d: RedData) -> Result<Self, String> {
        match d {
            RedData::Bool(v) => Ok(v),
            RedData::List(items) => items.into_iter().map(bool::from_data).collect(),
            d => Err(wrong::<Vec<bool>>(&d)),
        }
    }
}

impl Reducible for () {
    fn into_data(self) -> RedData {
        RedData::List(Vec::new())
    }
    fn from_data(_: RedData) -> Result<Self, String> {
        Ok(())
    }
}

impl Reducible for RedData {
    fn into_data(self) -> RedData {
        self
    }
    fn from_data(d: RedData) -> Result<Self, String> {
        Ok(d)
    }
}

/// Any serde value, carried as bytes: contribute it with `Gather` or a custom reducer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Encoded<T>(pub T);

impl<T: Message> Reducible for Encoded<T> {
    fn into_data(self) -> RedData {
        // A value bincode cannot encode becomes empty bytes, which fail to decode at
        // the callback with an error naming the type instead of panicking here.
        RedData::Bytes(bincode::serialize(&self.0).unwrap_or_default())
    }
    fn from_data(d: RedData) -> Result<Self, String> {
        match d {
            RedData::Bytes(b) => bincode::deserialize(&b).map(Encoded).map_err(|e| {
                format!(
                    "reduction bytes are not a {}: {e}",
                    std::any::type_name::<T>()
                )
            }),
            d => Err(wrong::<T>(&d)),
        }
    }
}

impl<T: Message> Reducible for Vec<Encoded<T>> {
    fn into_data(self) -> RedData {
        RedData::List(self.into_iter().map(Reducible::into_data).collect())
    }
    fn from_data(d: RedData) -> Result<Self, String> {
        match d {
            RedData::List(items) => items.into_iter().map(Encoded::from_data).collect(),
            d => Err(wrong::<Vec<T>>(&d)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: u32) -> Option<CustomReducer> {
        None
    }

    #[test]
    fn sum_of_vectors_is_elementwise() {
        let r = combine_values(
            Reducer::Sum,
            vec![1i64, 2].into_data(),
            vec![3i64, 4].into_data(),
            &none,
        );
        assert_eq!(r.unwrap(), RedData::I64(vec![4, 6]));
    }

    #[test]
    fn mismatched_kinds_are_an_error() {
        let e =
            combine_values(Reducer::Sum, 1i64.into_data(), 1.0f64.into_data(), &none).unwrap_err();
        assert_eq!(
            e,
            ReduceError::Kinds {
                reducer: Reducer::Sum,
                a: "i64",
                b: "f64"
            }
        );
        assert!(e.to_string().contains("cannot combine i64 with f64"), "{e}");
        let e = combine_values(
            Reducer::Max,
            vec![1u64].into_data(),
            vec![1u64, 2].into_data(),
            &none,
        );
        assert_eq!(e, Err(ReduceError::Lengths { a: 1, b: 2 }));
        let e = combine_values(
            Reducer::Custom(7),
            1u64.into_data(),
            1u64.into_data(),
            &none,
        );
        assert_eq!(e, Err(ReduceError::Unregistered(7)));
        assert!(check_value(Reducer::And, &1.0f64.into_data()).is_err());
    }

    #[test]
    fn gather_orders_by_key() {
        let a = partial_of(Reducer::Gather, 5, 50i64.into_data());
        let b = partial_of(Reducer::Gather, 1, 10i64.into_data());
        let m = merge_partials(Reducer::Gather, a, b, &none).unwrap();
        let v: Vec<i64> = Vec::from_data(finish(Reducer::Gather, m).unwrap()).unwrap();
        assert_eq!(v, vec![10, 50]);
    }

    #[test]
    fn concat_flattens_in_key_order() {
        let a = partial_of(Reducer::Concat, 2, vec![3u32, 4].into_data());
        let b = partial_of(Reducer::Concat, 0, vec![1u32, 2].into_data());
        let m = merge_partials(Reducer::Concat, a, b, &none).unwrap();
        let v: Vec<u32> = Vec::from_data(finish(Reducer::Concat, m).unwrap()).unwrap();
        assert_eq!(v, vec![1, 2, 3, 4]);
    }

    #[test]
    fn result_type_mismatch_is_described() {
        let e = f64::from_data(RedData::I64(vec![1])).unwrap_err();
        assert!(e.contains("i64"), "{e}");
    }

    #[test]
    fn lists_nested_past_the_limit_do_not_decode() {
        // bincode: a List is variant 5 (u32) and a length (u64); U64(vec![]) ends it.
        let nested = |depth: usize| {
            let mut bytes = Vec::with_capacity(depth * 12 + 12);
            for _ in 0..depth {
                bytes.extend_from_slice(&5u32.to_le_bytes());
                bytes.extend_from_slice(&1u64.to_le_bytes());
            }
            bytes.extend_from_slice(&1u32.to_le_bytes());
            bytes.extend_from_slice(&0u64.to_le_bytes());
            bytes
        };
        let ok: RedData =
            bincode::deserialize(&nested(MAX_LIST_DEPTH as usize)).expect("at the limit");
        assert_eq!(ok.kind(), "list");
        // A million levels once overflowed the stack (an abort, not even a panic).
        let err = bincode::deserialize::<RedData>(&nested(1_000_000)).expect_err("too deep");
        assert!(err.to_string().contains("nested deeper"), "{err}");
        let again: RedData = bincode::deserialize(&nested(3)).expect("the depth count recovers");
        assert_eq!(again.kind(), "list");
    }

    #[test]
    fn every_kind_of_value_round_trips_and_numbers_travel_as_one_byte_string() {
        let values = [
            RedData::I64(vec![i64::MIN, -1, 0, i64::MAX]),
            RedData::U64(vec![0, u64::MAX]),
            RedData::F64(vec![0.5, -0.0, f64::INFINITY]),
            RedData::Bool(vec![true, false]),
            RedData::Bytes(vec![0, 1, 255]),
            RedData::List(vec![RedData::F64(vec![1.0]), RedData::Bytes(vec![])]),
        ];
        for v in values {
            let b = bincode::serialize(&v).unwrap();
            assert_eq!(bincode::deserialize::<RedData>(&b).unwrap(), v);
        }
        // Variant 2 (u32), the length in bytes (u64), the numbers little-endian.
        let b = bincode::serialize(&RedData::F64(vec![1.0, 2.0])).unwrap();
        assert_eq!(&b[..12], &[2, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(
            &b[12..],
            [1.0f64.to_le_bytes(), 2.0f64.to_le_bytes()].concat()
        );
    }
}
