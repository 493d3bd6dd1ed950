//! The entry a message stands for: the name of its enum variant, read through serde
//! without encoding anything (traces name entry methods `Chare::Variant`).

use serde::ser::{self, Impossible, Serialize};
use std::fmt;

/// The variant of `msg` if it is an enum value: (variant index, variant name).
pub(crate) fn variant_of<T: Serialize + ?Sized>(msg: &T) -> Option<(u32, &'static str)> {
    match msg.serialize(VariantProbe) {
        Err(Found::Variant(i, name)) => Some((i, name)),
        _ => None,
    }
}

/// Stops at the first thing serialized: the variant of an enum, or anything else.
struct VariantProbe;

/// Why the probe stopped (it always stops with an "error").
#[derive(Debug)]
enum Found {
    Variant(u32, &'static str),
    NotAnEnum,
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for Found {}

impl ser::Error for Found {
    fn custom<M: fmt::Display>(_: M) -> Self {
        Found::NotAnEnum
    }
}

type Never = Impossible<(), Found>;

macro_rules! not_an_enum {
    ($($f:ident($($t:ty),*)),*) => {$(
        fn $f(self, $(_: $t),*) -> Result<(), Found> {
            Err(Found::NotAnEnum)
        }
    )*};
}

/// Variants with fields serialized through a compound serializer: the variant is found.
macro_rules! found_variant {
    ($($f:ident),*) => {$(
        fn $f(self, _: &'static str, i: u32, v: &'static str, _: usize) -> Result<Never, Found> {
            Err(Found::Variant(i, v))
        }
    )*};
}

impl ser::Serializer for VariantProbe {
    type Ok = ();
    type Error = Found;
    type SerializeSeq = Never;
    type SerializeTuple = Never;
    type SerializeTupleStruct = Never;
    type SerializeTupleVariant = Never;
    type SerializeMap = Never;
    type SerializeStruct = Never;
    type SerializeStructVariant = Never;

    not_an_enum!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
        serialize_none(),
        serialize_unit(),
        serialize_unit_struct(&'static str)
    );

    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<(), Found> {
        Err(Found::NotAnEnum)
    }
    fn serialize_unit_variant(self, _: &'static str, i: u32, v: &'static str) -> Result<(), Found> {
        Err(Found::Variant(i, v))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        inner: &T,
    ) -> Result<(), Found> {
        inner.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        i: u32,
        v: &'static str,
        _: &T,
    ) -> Result<(), Found> {
        Err(Found::Variant(i, v))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Never, Found> {
        Err(Found::NotAnEnum)
    }
    fn serialize_tuple(self, _: usize) -> Result<Never, Found> {
        Err(Found::NotAnEnum)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Never, Found> {
        Err(Found::NotAnEnum)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Never, Found> {
        Err(Found::NotAnEnum)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Never, Found> {
        Err(Found::NotAnEnum)
    }
    found_variant!(serialize_tuple_variant, serialize_struct_variant);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    #[derive(Serialize)]
    enum Msg {
        Go,
        Value(u64),
        Pair(u8, u8),
        Named { x: i32 },
    }

    #[test]
    fn finds_every_kind_of_variant_and_nothing_else() {
        assert_eq!(variant_of(&Msg::Go), Some((0, "Go")));
        assert_eq!(variant_of(&Msg::Value(3)), Some((1, "Value")));
        assert_eq!(variant_of(&Msg::Pair(1, 2)), Some((2, "Pair")));
        assert_eq!(variant_of(&Msg::Named { x: 1 }), Some((3, "Named")));
        assert_eq!(variant_of(&7u64), None);
        assert_eq!(variant_of(&vec![1, 2]), None);
        assert_eq!(variant_of(&()), None);
    }
}
