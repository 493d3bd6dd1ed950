//! Message values and their type-erased form.

pub use super::local::LocalMsg;
pub use super::message::{AnyMsg, Message};
use std::any::Any;
use std::io::Write;
use std::sync::Arc;

/// Consecutive messages of one type for one destination, sent together: a handler
/// that sends many messages to one chare pays for one envelope, not one each.
pub trait AnyRun: Any + Send {
    /// Number of messages in the run.
    fn len(&self) -> usize;
    /// True if the run holds no message.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Copy for a broadcast to several receivers.
    fn clone_box(&self) -> Box<dyn AnyRun>;
    /// Bytes the run's messages take when encoded one by one.
    fn encoded_len(&self) -> u64;
    /// Append the encoding of the whole run (a length, then each message) to `out`.
    fn encode_into(&self, out: &mut Vec<u8>) -> Result<(), String>;
    /// Write the encoding of the whole run to `out`.
    fn encode_to(&self, out: &mut dyn Write) -> Result<(), String>;
    /// Give up the erased box to downcast it.
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
}

impl<T: Message> AnyRun for Vec<T> {
    fn len(&self) -> usize {
        Vec::len(self)
    }
    fn clone_box(&self) -> Box<dyn AnyRun> {
        Box::new(self.clone())
    }
    fn encoded_len(&self) -> u64 {
        self.iter().map(AnyMsg::encoded_len).sum()
    }
    fn encode_into(&self, out: &mut Vec<u8>) -> Result<(), String> {
        bincode::serialize_into(out, self).map_err(|e| e.to_string())
    }
    fn encode_to(&self, out: &mut dyn Write) -> Result<(), String> {
        bincode::serialize_into(out, self).map_err(|e| e.to_string())
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// A message body as it travels: a moved value inside one process, bytes across processes.
pub enum Payload {
    /// The value itself; never serialized.
    Local(LocalMsg),
    /// The bincode encoding of one value, as it came from another process.
    Bytes(WireBytes),
    /// Several values of one type, delivered in order.
    Run(Box<dyn AnyRun>),
    /// The bincode encoding of a run (a `Vec` of values), from another process.
    RunBytes(WireBytes),
}

/// Encoded message bytes inside a received buffer: shared, so a broadcast does not
/// copy them per receiver, and kept in the buffer they arrived in, so receiving does
/// not copy them out of it.
#[derive(Clone, Default)]
pub struct WireBytes {
    buf: Arc<Vec<u8>>,
    start: usize,
}

impl std::ops::Deref for WireBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.buf.get(self.start..).unwrap_or_default()
    }
}

impl WireBytes {
    /// Decode the value these bytes hold; its `Bytes` fields keep views of the buffer.
    fn decode<T: serde::de::DeserializeOwned>(&self) -> bincode::Result<T> {
        crate::base::bytes::decoding_from(&self.buf, || bincode::deserialize(self))
    }
}

/// Bytes of messages one run may hold, counted as they lie in the run (`size_of`: the
/// heap data a message owns is not counted). A longer stream of sends becomes several runs,
/// so its buffers stay small enough to stay in cache and be reused: one run of
/// thousands of messages spent most of its time faulting in fresh pages.
const RUN_BYTES: usize = 16 << 10;

/// The most messages any run holds (a run of zero-sized messages): a run from the
/// wire that claims more is refused before its count reaches quiescence counting.
pub(crate) const MAX_RUN_MESSAGES: u64 = RUN_BYTES as u64;

/// Messages of type `T` one run may hold: `RUN_BYTES` worth, and at least 16.
#[inline(always)]
fn run_limit<T>() -> usize {
    (RUN_BYTES / std::mem::size_of::<T>().max(1)).max(16)
}

/// Messages a run makes room for when it starts.
const RUN_START: usize = 16;

/// Make room in a full run: for `RUN_START` messages, then at once for the limit. A
/// run that outgrows its start is a stream; growing it by doubling copied about one
/// message per message sent.
#[cold]
fn grow_run<T>(v: &mut Vec<T>) {
    let want = if v.len() < RUN_START {
        RUN_START
    } else {
        run_limit::<T>()
    };
    v.reserve_exact(want.saturating_sub(v.len()).max(1));
}

/// Bytes of the bincode length prefix of an encoded run.
const RUN_LEN_BYTES: usize = 8;

impl Payload {
    /// Wrap a typed value.
    pub fn new<T: Message>(value: T) -> Self {
        Payload::Local(LocalMsg::new(value))
    }

    /// An empty payload that allocates nothing: a slot `wire::decode` is about to fill.
    pub(crate) fn placeholder() -> Self {
        static EMPTY: std::sync::OnceLock<Arc<Vec<u8>>> = std::sync::OnceLock::new();
        let buf = EMPTY.get_or_init(|| Arc::new(Vec::new())).clone();
        Payload::Bytes(WireBytes { buf, start: 0 })
    }

    /// Copy the payload for another receiver.
    pub fn duplicate(&self) -> Self {
        match self {
            Payload::Local(b) => Payload::Local(b.clone()),
            Payload::Bytes(v) => Payload::Bytes(v.clone()),
            Payload::Run(r) => Payload::Run(r.clone_box()),
            Payload::RunBytes(v) => Payload::RunBytes(v.clone()),
        }
    }

    /// Number of messages the payload carries.
    pub fn count(&self) -> usize {
        match self {
            Payload::Run(r) => r.len(),
            Payload::RunBytes(v) => v
                .get(..RUN_LEN_BYTES)
                .and_then(|b| b.try_into().ok())
                .map_or(0, |b| u64::from_le_bytes(b) as usize),
            _ => 1,
        }
    }

    /// Append the payload's encoding to `out`; true if it is a run.
    pub(crate) fn encode_into(&self, out: &mut Vec<u8>) -> Result<bool, String> {
        match self {
            Payload::Local(b) => b.msg().encode_into(out).map(|()| false),
            Payload::Run(r) => r.encode_into(out).map(|()| true),
            Payload::Bytes(v) => {
                out.extend_from_slice(v);
                Ok(false)
            }
            Payload::RunBytes(v) => {
                out.extend_from_slice(v);
                Ok(true)
            }
        }
    }

    /// Write the payload's encoding to `out`; true if it is a run.
    pub(crate) fn encode_to(&self, out: &mut dyn Write) -> Result<bool, String> {
        match self {
            Payload::Local(b) => b.msg().encode_to(out).map(|()| false),
            Payload::Run(r) => r.encode_to(out).map(|()| true),
            Payload::Bytes(v) => out.write_all(v).map(|()| false).map_err(|e| e.to_string()),
            Payload::RunBytes(v) => out.write_all(v).map(|()| true).map_err(|e| e.to_string()),
        }
    }

    /// A payload received as the bytes of `buf` from `start` on: one message, or a
    /// run, whose claimed count of messages is checked here (`count` trusts it); a
    /// bad one is given back as the count found, or None if there is none.
    pub(crate) fn from_wire(
        buf: Arc<Vec<u8>>,
        start: usize,
        run: bool,
    ) -> Result<Self, Option<u64>> {
        let bytes = WireBytes { buf, start };
        if !run {
            return Ok(Payload::Bytes(bytes));
        }
        let claimed = bytes
            .get(..RUN_LEN_BYTES)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes);
        match claimed {
            Some(n) if (1..=MAX_RUN_MESSAGES).contains(&n) => Ok(Payload::RunBytes(bytes)),
            other => Err(other),
        }
    }

    /// True if the payload is a run of messages.
    pub(crate) fn is_run(&self) -> bool {
        matches!(self, Payload::Run(_) | Payload::RunBytes(_))
    }

    /// The messages of a run of `T`s, decoding them if they came as bytes.
    pub(crate) fn take_run<T: Message>(self) -> Result<Vec<T>, String> {
        match self {
            Payload::Run(r) => r
                .into_any()
                .downcast::<Vec<T>>()
                .map(|v| *v)
                .map_err(|_| format!("expected a run of {}", std::any::type_name::<T>())),
            Payload::RunBytes(v) => v.decode::<Vec<T>>().map_err(|e| {
                format!(
                    "{} bytes are not a valid run of {}: {e}",
                    v.len(),
                    std::any::type_name::<T>()
                )
            }),
            single => single.take::<T>().map(|m| vec![m]),
        }
    }

    /// Append `value` if this payload holds messages of its type; give it back if not.
    #[inline]
    pub(crate) fn absorb<T: Message>(&mut self, value: T) -> Result<(), T> {
        match self {
            Payload::Run(r) => match (&mut **r as &mut dyn Any).downcast_mut::<Vec<T>>() {
                Some(v) if v.len() < run_limit::<T>() => {
                    if v.len() == v.capacity() {
                        grow_run(v);
                    }
                    v.push(value);
                    Ok(())
                }
                _ => Err(value),
            },
            Payload::Local(b) if b.is::<T>() => {
                self.start_run(value);
                Ok(())
            }
            _ => Err(value),
        }
    }

    /// Turn a single local message of type `T` into a run of it and `value`; the
    /// caller has checked the type. Out of line: it happens once per run.
    #[inline(never)]
    fn start_run<T: Message>(&mut self, value: T) {
        let Payload::Local(first) = std::mem::replace(self, Payload::Bytes(WireBytes::default()))
        else {
            unreachable!("absorb matched Local")
        };
        match first.take::<T>() {
            Ok(first) => {
                let mut run = Vec::with_capacity(RUN_START);
                run.push(first);
                run.push(value);
                *self = Payload::Run(Box::new(run));
            }
            Err(_) => unreachable!("absorb checked the type"),
        }
    }

    /// Size in bytes when it crosses a process boundary.
    pub fn wire_len(&self) -> u64 {
        match self {
            Payload::Local(b) => b.msg().encoded_len(),
            Payload::Bytes(v) | Payload::RunBytes(v) => v.len() as u64,
            Payload::Run(r) => r.encoded_len(),
        }
    }

    /// Recover the typed value, decoding if it arrived as bytes.
    pub fn take<T: Message>(self) -> Result<T, String> {
        match self {
            Payload::Local(b) => b.take::<T>().map_err(|b| {
                format!(
                    "expected {}, found {}",
                    std::any::type_name::<T>(),
                    b.msg().type_name()
                )
            }),
            Payload::Bytes(v) => v.decode::<T>().map_err(|e| {
                format!(
                    "{} bytes are not a valid {}: {e}",
                    v.len(),
                    std::any::type_name::<T>()
                )
            }),
            Payload::Run(_) | Payload::RunBytes(_) => Err(format!(
                "expected one {}, found a run of {} messages",
                std::any::type_name::<T>(),
                self.count()
            )),
        }
    }
}

impl std::fmt::Debug for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Payload::Local(b) => write!(f, "Local({})", b.msg().type_name()),
            Payload::Bytes(v) => write!(f, "Bytes({} B)", v.len()),
            Payload::Run(r) => write!(f, "Run({})", r.len()),
            Payload::RunBytes(v) => write!(f, "RunBytes({} B)", v.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_holds_messages_of_one_type_up_to_its_limit() {
        let mut p = Payload::new(0u64);
        assert_eq!(p.absorb(1u32), Err(1u32), "another type starts its own run");
        let limit = run_limit::<u64>();
        assert_eq!(limit, RUN_BYTES / 8);
        for i in 1..limit as u64 {
            assert_eq!(p.absorb(i), Ok(()), "message {i} joins the run");
        }
        assert_eq!(p.count(), limit);
        assert_eq!(p.absorb(7u64), Err(7u64), "a full run takes no more");
        let run = p.take_run::<u64>().expect("a run of u64");
        assert_eq!(run, (0..limit as u64).collect::<Vec<_>>());
    }

    #[test]
    fn a_run_of_large_messages_still_holds_sixteen() {
        assert_eq!(run_limit::<[u8; 4096]>(), 16);
        assert_eq!(run_limit::<()>(), RUN_BYTES);
    }
}
