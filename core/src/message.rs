//! Message values and their type-erased form.

use serde::de::DeserializeOwned;
use serde::Serialize;
use std::any::Any;

/// A value that can be sent to a chare: moved within a process, bincode-encoded across
/// processes, and cloned for broadcasts.
pub trait Message: Serialize + DeserializeOwned + Clone + Send + 'static {}

impl<T: Serialize + DeserializeOwned + Clone + Send + 'static> Message for T {}

/// A message whose type is known only to its receiver.
pub trait AnyMsg: Send {
    /// Copy for a broadcast to several receivers.
    fn clone_box(&self) -> Box<dyn AnyMsg>;
    /// Encode for a process boundary.
    fn encode(&self) -> Result<Vec<u8>, String>;
    /// Bytes `encode` would produce.
    fn encoded_len(&self) -> u64;
    /// Give up the erased box to downcast it.
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
    /// Look at the concrete value.
    fn as_any(&self) -> &dyn Any;
    /// Name of the concrete type, for error messages.
    fn type_name(&self) -> &'static str;
}

impl<T: Message> AnyMsg for T {
    fn clone_box(&self) -> Box<dyn AnyMsg> {
        Box::new(self.clone())
    }
    fn encode(&self) -> Result<Vec<u8>, String> {
        bincode::serialize(self).map_err(|e| e.to_string())
    }
    fn encoded_len(&self) -> u64 {
        // A value that cannot be encoded fails when it crosses a process boundary;
        // for sizing it counts as empty.
        bincode::serialized_size(self).unwrap_or(0)
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn type_name(&self) -> &'static str {
        std::any::type_name::<T>()
    }
}

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
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// A message body as it travels: a moved value inside one process, bytes across processes.
pub enum Payload {
    /// The value itself; never serialized.
    Local(Box<dyn AnyMsg>),
    /// The bincode encoding of the value.
    Bytes(Vec<u8>),
    /// Several values of one type, delivered in order.
    Run(Box<dyn AnyRun>),
}

impl Payload {
    /// Wrap a typed value.
    pub fn new<T: Message>(value: T) -> Self {
        Payload::Local(Box::new(value))
    }

    /// Copy the payload for another receiver.
    pub fn duplicate(&self) -> Self {
        match self {
            Payload::Local(b) => Payload::Local(b.clone_box()),
            Payload::Bytes(v) => Payload::Bytes(v.clone()),
            Payload::Run(r) => Payload::Run(r.clone_box()),
        }
    }

    /// Number of messages the payload carries.
    pub fn count(&self) -> usize {
        match self {
            Payload::Run(r) => r.len(),
            _ => 1,
        }
    }

    /// Append `value` if this payload holds messages of its type; give it back if not.
    pub(crate) fn absorb<T: Message>(&mut self, value: T) -> Result<(), T> {
        match self {
            Payload::Run(r) => match (&mut **r as &mut dyn Any).downcast_mut::<Vec<T>>() {
                Some(v) => {
                    v.push(value);
                    Ok(())
                }
                None => Err(value),
            },
            Payload::Local(b) if b.as_any().is::<T>() => {
                let Payload::Local(first) = std::mem::replace(self, Payload::Bytes(Vec::new()))
                else {
                    unreachable!("matched Local above")
                };
                match first.into_any().downcast::<T>() {
                    Ok(first) => {
                        *self = Payload::Run(Box::new(vec![*first, value]));
                        Ok(())
                    }
                    Err(_) => unreachable!("type checked above"),
                }
            }
            _ => Err(value),
        }
    }

    /// Size in bytes when it crosses a process boundary.
    pub fn wire_len(&self) -> u64 {
        match self {
            Payload::Local(b) => b.encoded_len(),
            Payload::Bytes(v) => v.len() as u64,
            Payload::Run(r) => r.encoded_len(),
        }
    }

    /// Recover the typed value, decoding if it arrived as bytes.
    pub fn take<T: Message>(self) -> Result<T, String> {
        match self {
            Payload::Local(b) => {
                let found = b.type_name();
                b.into_any()
                    .downcast::<T>()
                    .map(|b| *b)
                    .map_err(|_| format!("expected {}, found {found}", std::any::type_name::<T>()))
            }
            Payload::Bytes(v) => bincode::deserialize(&v).map_err(|e| {
                format!(
                    "{} bytes are not a valid {}: {e}",
                    v.len(),
                    std::any::type_name::<T>()
                )
            }),
            Payload::Run(r) => Err(format!(
                "expected one {}, found a run of {} messages",
                std::any::type_name::<T>(),
                r.len()
            )),
        }
    }
}

impl std::fmt::Debug for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Payload::Local(b) => write!(f, "Local({})", b.type_name()),
            Payload::Bytes(v) => write!(f, "Bytes({} B)", v.len()),
            Payload::Run(r) => write!(f, "Run({})", r.len()),
        }
    }
}
