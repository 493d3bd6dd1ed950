//! marshall: entry methods whose arguments are every kind the original marshals,
//! each checked on arrival: the basic integer and float types, a flat struct, a
//! struct owning heap data, a value of a polymorphic type (Charm++'s PUP::able
//! subclasses; here an enum), arrays whose lengths are other arguments, arrays whose
//! lengths are read from other arrays, and a queue of messages. Each call is made by
//! main and again by an element for another (`reflect`), so element-to-element sends
//! are checked too. Values move within a process and are encoded between processes,
//! so on mpi this checks the encoding of each.

use super::{pe_counts, run_for};
use chorus_core::{chare, ArrayMap, ArrayProxy, Callback, Ctx, Layer, Reducer};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Elements of the array.
const N: usize = 7;
/// Checked calls each element takes: 8 from main, 8 reflected.
const CALLS: u64 = 16;

/// A struct of plain fields (Charm++'s `PUPbytes`).
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct Flat {
    x: i32,
    s: [u8; 10],
}

/// A struct owning heap data (Charm++'s struct with a `pup` routine).
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct Owning {
    name: String,
    values: Vec<f64>,
    table: BTreeMap<u32, String>,
    maybe: Option<Box<Owning>>,
}

/// A polymorphic value: the original's parent class and its subclass.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub enum Poly {
    /// The parent.
    Parent,
    /// The subclass, with a field of its own.
    Child(u64),
}

/// Every basic type, in one call.
pub type Basic = (u8, i8, i16, u16, i32, u32, i64, u64, f32, f64);

fn basic() -> Basic {
    (
        200,
        -100,
        -30000,
        60000,
        -2_000_000_000,
        4_000_000_000,
        -9_000_000_000_000,
        18_000_000_000_000_000_000,
        1.5e30,
        -2.25e-300,
    )
}

fn flat() -> Flat {
    let mut s = [0u8; 10];
    s[..3].copy_from_slice(b"foo");
    Flat { x: 1234, s }
}

fn owning() -> Owning {
    let inner = Owning {
        name: "inner".into(),
        values: vec![],
        table: BTreeMap::new(),
        maybe: None,
    };
    Owning {
        name: "outer é∑".into(),
        values: (0..17).map(|i| f64::from(i) / 3.0).collect(),
        table: (0..5).map(|i| (i * i, format!("v{i}"))).collect(),
        maybe: Some(Box::new(inner)),
    }
}

/// `n` values made from `try_no`, as the original's arrays.
fn make_arr(try_no: i32, n: usize) -> Vec<i32> {
    (0..n as i32).map(|i| try_no * 1000 + i).collect()
}

/// A queue of messages of different lengths.
fn queue() -> Vec<(u32, Vec<u8>)> {
    (0..6u32)
        .map(|k| (k, vec![k as u8; k as usize * 3]))
        .collect()
}

/// Every call, as a message for an element.
fn calls() -> Vec<MarshallEltMsg> {
    let (n, m) = (3usize, 4usize);
    let (mut arr1, mut arr2) = (make_arr(3, 3), make_arr(4, 5));
    (arr1[0], arr2[0]) = (3, 3);
    vec![
        MarshallEltMsg::Basic(basic()),
        MarshallEltMsg::FlatRef(flat()),
        MarshallEltMsg::Pupped(owning()),
        MarshallEltMsg::Polymorphic(vec![Poly::Parent, Poly::Child(77)]),
        MarshallEltMsg::SimpleArray(5, make_arr(1, 5)),
        MarshallEltMsg::FancyArray(make_arr(2, n * m), n, m),
        MarshallEltMsg::CrazyArray(arr1, arr2, 2),
        MarshallEltMsg::MsgQ(queue()),
    ]
}

/// An element: checks each call and counts it.
#[derive(Serialize, Deserialize)]
struct MarshallElt {
    done: Callback,
    checked: u64,
}

#[chare]
impl MarshallElt {
    #[init]
    fn new(done: Callback) -> Self {
        MarshallElt { done, checked: 0 }
    }
    #[entry]
    fn basic(&mut self, b: Basic, ctx: &mut Ctx) {
        assert_eq!(b, basic(), "basic types corrupted");
        self.checked(ctx);
    }
    #[entry]
    fn flat_ref(&mut self, s: Flat, ctx: &mut Ctx) {
        assert_eq!(s, flat(), "flat struct corrupted");
        self.checked(ctx);
    }
    #[entry]
    fn pupped(&mut self, s: Owning, ctx: &mut Ctx) {
        assert_eq!(s, owning(), "owning struct corrupted");
        self.checked(ctx);
    }
    #[entry]
    fn polymorphic(&mut self, p: Vec<Poly>, ctx: &mut Ctx) {
        assert_eq!(p, vec![Poly::Parent, Poly::Child(77)], "subclass lost");
        self.checked(ctx);
    }
    #[entry]
    fn simple_array(&mut self, n: usize, arr: Vec<i32>, ctx: &mut Ctx) {
        assert_eq!(arr, make_arr(1, n), "simple array corrupted");
        self.checked(ctx);
    }
    #[entry]
    fn fancy_array(&mut self, arr: Vec<i32>, n: usize, m: usize, ctx: &mut Ctx) {
        assert_eq!(arr, make_arr(2, n * m), "n*m array corrupted");
        self.checked(ctx);
    }
    /// `arr1` has `arr2[0]` values, `arr2` has `arr1[0] + n`.
    #[entry]
    fn crazy_array(&mut self, arr1: Vec<i32>, arr2: Vec<i32>, n: usize, ctx: &mut Ctx) {
        assert_eq!(arr1.len(), arr2[0] as usize, "first array's length");
        assert_eq!(arr2.len(), arr1[0] as usize + n, "second array's length");
        assert_eq!(arr1[1..], make_arr(3, 3)[1..], "first array corrupted");
        assert_eq!(arr2[1..], make_arr(4, 5)[1..], "second array corrupted");
        self.checked(ctx);
    }
    #[entry]
    fn msg_q(&mut self, q: Vec<(u32, Vec<u8>)>, ctx: &mut Ctx) {
        assert_eq!(q, queue(), "message queue corrupted");
        self.checked(ctx);
    }
    /// Make every call again, this element to element `to`.
    #[entry]
    fn reflect(&mut self, to: usize, ctx: &mut Ctx) {
        let array = ctx.this_array::<MarshallElt, usize>().expect("an array");
        for call in calls() {
            array.send(ctx, &to, call);
        }
    }
}

impl MarshallElt {
    /// One more call checked; with all in, contribute the count.
    fn checked(&mut self, ctx: &mut Ctx) {
        self.checked += 1;
        assert!(self.checked <= CALLS, "marshall: a call arrived twice");
        if self.checked == CALLS {
            ctx.contribute(self.checked, Reducer::Sum, self.done.clone());
        }
    }
}

/// Every call, from main and reflected, arrives intact at every element.
pub fn marshall(layer: Layer) {
    for pes in pe_counts(layer, 1) {
        let total: u64 = run_for(layer, pes, MarshallElt::register, |ctx, done| {
            let array: ArrayProxy<MarshallElt, usize> =
                ctx.create_array_1d::<MarshallElt>(N, done, ArrayMap::RoundRobin);
            for i in 0..N {
                for call in calls() {
                    array.send(ctx, &i, call);
                }
                array.at(i).reflect(ctx, (i + 1) % N);
            }
        });
        assert_eq!(total, CALLS * N as u64, "{pes} PEs");
    }
}
