//! packtest: a message with its own packing code (Charm++'s `pack`/`unpack`: here a
//! hand-written `Serialize`/`Deserialize` that flattens it into one int buffer) goes
//! round the group from PE 0 and back; PE 0 checks its random value and its list.
//! Values move within a process and are encoded between processes, so on mpi every
//! hop runs the packing code.

use super::{pe_counts, run_for};
use crate::splitmix64;
use chorus_core::{chare, Callback, Ctx, Layer};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The message: a value, a hop count and a list, packed by hand.
#[derive(Clone, Debug, PartialEq)]
pub struct PackMsg {
    value: i32,
    hop: i32,
    list: Vec<i32>,
}

impl Serialize for PackMsg {
    /// One buffer: value, hop, the list's length, then the list.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut buf = vec![self.value, self.hop, self.list.len() as i32];
        buf.extend_from_slice(&self.list);
        buf.serialize(s)
    }
}

impl<'de> Deserialize<'de> for PackMsg {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let buf = Vec::<i32>::deserialize(d)?;
        let len = *buf
            .get(2)
            .ok_or_else(|| D::Error::custom("packed header cut"))?;
        if buf.len() != 3 + len.max(0) as usize {
            return Err(D::Error::custom("packed list length does not match"));
        }
        Ok(PackMsg {
            value: buf[0],
            hop: buf[1],
            list: buf[3..].to_vec(),
        })
    }
}

/// A group member: PE 0 starts and checks, the others pass the message on.
#[derive(Serialize, Deserialize)]
struct Btest {
    sent: i32,
    done: Callback,
}

#[chare]
impl Btest {
    #[init]
    fn new(seed: u64, done: Callback, ctx: &mut Ctx) -> Self {
        let mut state = seed;
        let sent = splitmix64(&mut state) as i32;
        if ctx.my_pe() == 0 {
            let msg = PackMsg {
                value: sent,
                hop: 1,
                list: (0..10).collect(),
            };
            Self::pass(msg, ctx);
        }
        Btest { sent, done }
    }
    #[entry]
    fn recv_msg(&mut self, mut msg: PackMsg, ctx: &mut Ctx) {
        if ctx.my_pe() == 0 {
            assert_eq!(
                msg.list,
                (0..10).collect::<Vec<_>>(),
                "packtest: list corrupted"
            );
            assert_eq!(msg.value, self.sent, "packtest: value corrupted");
            ctx.send_to_callback(&self.done, msg.hop);
        } else {
            msg.hop += 1;
            Self::pass(msg, ctx);
        }
    }
}

impl Btest {
    fn pass(msg: PackMsg, ctx: &mut Ctx) {
        let group = ctx.this_group::<Btest>().expect("a group");
        let next = (ctx.my_pe() + 1) % ctx.num_pes() as u32;
        group.at(next).recv_msg(ctx, msg);
    }
}

/// The message goes round every PE and returns intact, with one hop per PE.
pub fn packtest(layer: Layer) {
    for pes in pe_counts(layer, 1) {
        let hops: i32 = run_for(layer, pes, Btest::register, |ctx, done| {
            ctx.create_group::<Btest>((0x5eed, done));
        });
        assert_eq!(hops, pes as i32, "{pes} PEs");
    }
}
